import { describe, expect, it } from 'vitest';
import { WGSL_FORMS } from '../../engine/llama-wgsl-forms';
import { wgslStepForm } from '../../engine/wgsl-forms';
import { formOf } from '../../ops/slots';
import { FP64_FORMS } from '../cpu/op-fp64';
import { DF_FORMS } from '../oracle/df-forms';
import { ROTARY } from './rotary';

// The rotary's forms live in its module and the three form tables take them by name (it is no OP_MODULES entry, so
// withOpModules' one-definition check does not cover it): each table and slot holds the module's form itself.
describe("the rotary's module (kernels/ops/rotary.ts)", () => {
  it('is the one definition of the rotary fp64, WGSL step and df forms the registry holds', () => {
    expect(FP64_FORMS.rotary).toBe(ROTARY.fp64);
    expect(formOf('fp64', 'rotary')).toBe(ROTARY.fp64);
    expect(WGSL_FORMS.rotary).toBe(ROTARY.wgsl);
    expect(wgslStepForm('rotary')).toBe(ROTARY.wgsl);
    expect(DF_FORMS.rotary).toBe(ROTARY.df);
    expect(formOf('df', 'rotary')).toBe(ROTARY.df);
  });
});
