// Custom kernels in RunSpecs and links: validated strictly, carried compressed, refused (not truncated) past
// the link limit, never autorun; the diff against the shipped file; the consent key changes with the source.
import Ajv2020 from 'ajv/dist/2020';
import { describe, expect, it } from 'vitest';
import schema from '../../docs/report.schema.json';
import { nodeShaderSource } from '../kernels/shaders-node';
import { mulberry32 } from '../numeric/random';
import { reportToJson } from '../ui/export';
import { fixtureReport } from '../ui/report-fixture';
import { consentKey, kernelDiff, runLink } from './custom-kernel';
import { autorunAllowed, decodeLink, encodeLink, LINK_LIMITS } from './permalink';
import { defaultRunSpec, parseRunSpec, type RunSpec } from './runspec';

const shaders = nodeShaderSource();
const shipped = shaders('fused/layernorm2.wgsl');

function withCustom(source: string, slot = 'layernorm2'): RunSpec {
  return { ...defaultRunSpec(), custom: { slot: slot as 'layernorm2', source } };
}

describe('custom kernels in RunSpecs and links', () => {
  it('parses a custom kernel and refuses a malformed one naming the field', () => {
    expect(parseRunSpec(withCustom(shipped)).custom).toEqual({ slot: 'layernorm2', source: shipped });
    expect(() => parseRunSpec(withCustom(shipped, 'softmax'))).toThrow(
      /custom\.slot: unknown kernel slot 'softmax'/,
    );
    expect(() => parseRunSpec({ ...withCustom(shipped), fused: ['gemm'] })).toThrow(
      /custom\.slot: 'layernorm2' is a file of fused kernel 'layernorm', which is not switched on/,
    );
    expect(() => parseRunSpec(withCustom('  \n'))).toThrow(/custom\.source: is empty/);
    expect(() => parseRunSpec(withCustom('x'.repeat(64 * 1024 + 1)))).toThrow(/custom\.source: longer than/);
    expect(() =>
      parseRunSpec({ ...withCustom(shipped), custom: { slot: 'layernorm2', source: shipped, run: true } }),
    ).toThrow(/unknown key 'run'/);
  });

  it('round-trips through a link, every shipped file fits, and autorun is never honoured', () => {
    for (const [slot, file] of [
      ['layernorm2', 'fused/layernorm2.wgsl'],
      ['flash_attention', 'fused/flash_attention.wgsl'],
      ['qkv_rotary', 'fused/qkv_rotary.wgsl'],
    ] as const) {
      const spec = withCustom(shaders(file), slot);
      const link = runLink({ v: 1, spec, autorun: true });
      expect(link.ok, slot).toBe(true);
      if (!link.ok) continue;
      expect(link.link.length).toBeLessThanOrEqual(LINK_LIMITS.fragmentChars);
      const back = decodeLink(link.link);
      expect(back.spec.custom).toEqual(spec.custom);
      expect(autorunAllowed(back)).toBe(false);
    }
    // The same run without the kernel autoruns as before.
    expect(autorunAllowed(decodeLink(encodeLink({ v: 1, spec: defaultRunSpec(), autorun: true })))).toBe(
      true,
    );
  });

  it('a kernel too large for a link gives no link and says so, with the length', () => {
    // Random hex does not compress: ~30,000 characters of it make a fragment well past 16 KiB.
    const rng = mulberry32(7);
    const noise = Array.from({ length: 30_000 }, () => Math.floor(rng() * 16).toString(16)).join('');
    const r = runLink({ v: 1, spec: withCustom(`${shipped}\n// ${noise}\n`) });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.chars).toBeGreaterThan(LINK_LIMITS.fragmentChars);
    expect(r.message).toMatch(/no link: the kernel is not dropped/);
  });

  it('the diff shows exactly the changed lines, with their line numbers', () => {
    const edited = shipped.replace('let r = wid.x;', 'let r = min(wid.x, 40u);');
    const d = kernelDiff(shipped, { slot: 'layernorm2', source: edited });
    expect(d).toMatchObject({ file: 'fused/layernorm2.wgsl', added: 1, removed: 1 });
    const del = d.lines.find((l) => l.kind === 'del')!;
    const add = d.lines.find((l) => l.kind === 'add')!;
    expect(del.text.trim()).toBe('let r = wid.x;');
    expect(add.text.trim()).toBe('let r = min(wid.x, 40u);');
    expect(shipped.split('\n')[del.line! - 1]).toBe(del.text);
    expect(edited.split('\n')[add.line! - 1]).toBe(add.text);
    expect(kernelDiff(shipped, { slot: 'layernorm2', source: shipped }).lines).toEqual([]);
    expect(consentKey({ slot: 'layernorm2', source: edited })).not.toBe(
      consentKey({ slot: 'layernorm2', source: shipped }),
    );
  });

  it('a report whose run used a custom kernel validates against docs/report.schema.json; a bad slot does not', () => {
    const validate = new Ajv2020({ allErrors: true, strict: true }).compile(schema);
    const r = fixtureReport();
    const json = JSON.parse(
      reportToJson({
        ...r,
        spec: { ...r.spec, fused: ['layernorm'], custom: { slot: 'layernorm2', source: shipped } },
      }),
    );
    expect(validate(json), JSON.stringify(validate.errors)).toBe(true);
    json.spec.custom.slot = 'softmax';
    expect(validate(json)).toBe(false);
  });
});
