// The headline matches what the text does for every classroom scenario and variant on the embedded model, and is
// the verdict the scenario expects (agree, diverged, or generation diverged for "fine on the prompt, wrong in the
// generated text", whose decode check starts by itself and names its step and layer).
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readModelDir } from '../cli/model-dir';
import { Engine } from '../engine/engine';
import { nodeGpu } from '../gpu/node';
import { nodeShaderSource } from '../kernels/shaders-node';
import { SCENARIOS } from '../run/scenarios';
import { checkExpectation } from '../state/scenario';
import { analyze } from './analyze';
import { decodeChecker } from './decode-runs';
import { expectHeadlineMatchesText, SKIP } from './headline.testdata';

describe('every classroom scenario: the headline is the one it expects and matches the text', () => {
  let kjv: Engine;
  beforeAll(async () => {
    kjv = await Engine.create(nodeGpu(), nodeShaderSource());
    await kjv.loadModel(readModelDir(resolve('public/models/neox-kjv-bytes')));
  });
  afterAll(() => kjv?.dispose());

  const runs = SCENARIOS.flatMap((s) => [
    { name: s.id, spec: s.spec, expect: s.expect },
    ...(s.variants ?? []).map((v, i) => ({ name: `${s.id}/${i + 1}`, spec: v.spec, expect: v.expect })),
  ]);
  it.each(runs.map((x) => [x.name, x] as const))('%s', async (name, x) => {
    const text = 'text' in x.spec.prompt ? x.spec.prompt.text : '';
    const tokens = [...new TextEncoder().encode(text)];
    // Two generated tokens: enough for the decode-only scenario's parting (the second token), quick on 2 cores. A
    // scenario whose prompt diverges has the headline 'diverged' whatever its text does (the prompt's verdict comes
    // first): its text is left out here (the page's scenarios.spec.ts runs it whole).
    const generate = x.expect.verdict === 'diverged' ? 0 : Math.min(x.spec.generate, 2);
    const r = await analyze(kjv, { ...x.spec, generate }, tokens, {
      skip: { ...SKIP, local: true },
      decodeChecker: decodeChecker(kjv),
    });
    expectHeadlineMatchesText(r, name);
    const check = checkExpectation(x.expect, { ...r, bisection: null });
    expect(check.verdict, `${name}: ${r.verdict}; ${r.generation?.words}`).toBe(true);
    expect(check.firstLayer, name).toBe(true);
    if (check.decode !== null) expect(check.decode, `${name}: ${r.generation?.words}`).toBe(true);
  });
});
