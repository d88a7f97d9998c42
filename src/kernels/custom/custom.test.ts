// The custom-kernel slots on Dawn (SwiftShader): every shipped kernel passes its isolated test (fresh seed,
// printed), the same test fails a planted bug, the binding interface read from the WGSL matches each
// launcher's descriptor, and a source whose interface differs is refused naming the binding.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kernelCode } from '../../gpu/pipelines';
import { nodeShaderSource } from '../shaders-node';
import { createHarness, freshSeed, type Harness } from '../testing';
import { checkCustomKernel } from './check';
import { EXERCISES } from './exercises';
import { checkCustomInterface, reflectInterface } from './interface';
import { runIsolatedTest } from './isolated';
import { RECIPES } from './recipes';
import { CUSTOM_SLOTS } from './slots';

const shaders = nodeShaderSource();
let h: Harness;
beforeAll(async () => {
  h = await createHarness();
});
afterAll(() => h?.destroy());

describe('custom kernel slots', () => {
  it('every slot has a recipe, and the WGSL interface matches the launcher descriptor binding for binding', () => {
    expect(RECIPES.map((r) => r.slot).sort()).toEqual(CUSTOM_SLOTS.map((s) => s.id).sort());
    for (const slot of CUSTOM_SLOTS) {
      const i = reflectInterface(kernelCode(slot.kernel, shaders));
      expect(i.entryPoints).toContain('main');
      const g0 = i.bindings.filter((b) => b.group === 0).sort((a, b) => a.binding - b.binding);
      expect(
        g0.map((b) => b.binding),
        slot.id,
      ).toEqual(slot.kernel.bindings.map((_, n) => n));
      g0.forEach((b, n) => {
        const want = slot.kernel.bindings[n].kind;
        const space =
          want === 'uniform' ? 'uniform' : want === 'read' ? 'storage, read' : 'storage, read_write';
        expect(b.space, `${slot.id} binding ${n}`).toBe(space);
      });
      expect(checkCustomInterface(slot.id, shaders(slot.kernel.file), shaders), slot.id).toEqual([]);
    }
  });

  it.each(CUSTOM_SLOTS.map((s) => s.id))('shipped %s passes its isolated test', async (id) => {
    const seed = freshSeed();
    const r = await runIsolatedTest(h.device, shaders, id, null, seed);
    const lines = r.rows.map(
      (x) => `${x.shape} ${x.output}: worst err/tol ${x.worstRatio.toFixed(3)} (seed ${x.seed})`,
    );
    console.log(`${id}:\n  ${lines.join('\n  ')}`);
    expect(r.rows.length).toBeGreaterThan(0);
    expect(r.pass, r.rows.map((x) => x.report).join('\n')).toBe(true);
  });

  it('a planted bug fails the isolated test, and so does a write past the end', async () => {
    const seed = freshSeed();
    const shipped = shaders('fused/layernorm2.wgsl');
    // The biased variance divided by d - 1 (unbiased): a wrong LayerNorm by ~1/(2d) relative.
    const unbiased = shipped.replace(
      'let stats = row_stats(lid, params.d, params.eps);',
      'let stats0 = row_stats(lid, params.d, params.eps);\n  let stats = vec2f(stats0.x, stats0.y * sqrt(f32(params.d - 1u) / f32(params.d)));',
    );
    expect(unbiased).not.toBe(shipped);
    const r = await runIsolatedTest(h.device, shaders, 'layernorm2', unbiased, seed);
    expect(r.pass, `seed ${seed}`).toBe(false);
    // Writes one element past each row (the last row's lands past the end): the guard tail after y1 catches it.
    const past = shipped.replace(
      'c < params.d; c += WG) {\n    let xhat',
      'c <= params.d; c += WG) {\n    let xhat',
    );
    expect(past).not.toBe(shipped);
    const r2 = await runIsolatedTest(h.device, shaders, 'layernorm2', past, seed);
    expect(r2.pass, `seed ${seed}`).toBe(false);
    expect(r2.rows.some((x) => /wrote past its end/.test(x.report))).toBe(true);
  });

  it('compile errors land at their line and column in the edited file; a changed binding is named', async () => {
    const shipped = shaders('fused/layernorm2.wgsl');
    const lines = shipped.split('\n');
    const at = lines.findIndex((l) => l.includes('let base = r * params.d;'));
    lines[at] = lines[at].replace('let base = r * params.d;', 'let base = r * params.d');
    const broken = await checkCustomKernel(h.device, 'layernorm2', lines.join('\n'), shaders);
    expect(broken.ok).toBe(false);
    const err = broken.diagnostics.find((d) => d.severity === 'error');
    expect(err, JSON.stringify(broken.diagnostics)).toBeDefined();
    // The missing ';' is reported at the end of that line or the start of the next statement.
    expect([at + 1, at + 2]).toContain(err!.line);
    const renamed = shipped.replace(
      'var<storage, read> w1: array<f32>;',
      'var<storage, read_write> w1: array<f32>;',
    );
    const iface = await checkCustomKernel(h.device, 'layernorm2', renamed, shaders);
    expect(iface.diagnostics.filter((d) => d.severity === 'error')).toEqual([]);
    expect(iface.ok).toBe(false);
    expect(iface.problems.join('\n')).toMatch(/binding 2 'w1'/);
    const dropped = shipped.replace('override DUAL: bool = true;', '');
    expect(checkCustomInterface('layernorm2', dropped, shaders).join('\n')).toMatch(/override DUAL/);
    const clean = await checkCustomKernel(h.device, 'layernorm2', shipped, shaders);
    expect(clean).toMatchObject({ ok: true, problems: [] });
  });

  /** Each exercise's fix, as a student would write it. */
  const FIXES: Record<string, (src: string) => string> = {
    'layernorm-barrier': (src) =>
      src.replace(
        'for (var c = lid; c < params.d; c += WG) { row[c] = x[base + c]; }\n',
        'for (var c = lid; c < params.d; c += WG) { row[c] = x[base + c]; }\n  workgroupBarrier();\n',
      ),
    'gelu-tanh': (src) => src.replace('select(gelu_tanh(z),', 'select(gelu_exact(z),'),
  };

  it.each(EXERCISES.map((e) => e.id))(
    'exercise %s: fits its slot, fails its isolated test, and its fix passes',
    async (id) => {
      const ex = EXERCISES.find((e) => e.id === id)!;
      const seed = freshSeed();
      const buggy = shaders(ex.file);
      const check = await checkCustomKernel(h.device, ex.slot, buggy, shaders);
      expect(
        check.diagnostics.filter((d) => d.severity === 'error'),
        ex.id,
      ).toEqual([]);
      expect(check.problems, ex.id).toEqual([]);
      const bad = await runIsolatedTest(h.device, shaders, ex.slot, buggy, seed);
      expect(bad.pass, `${ex.id} buggy (seed ${seed})`).toBe(false);
      const fixed = FIXES[id](buggy);
      expect(fixed).not.toBe(buggy);
      const good = await runIsolatedTest(h.device, shaders, ex.slot, fixed, seed);
      expect(good.pass, good.rows.map((r) => r.report).join('\n')).toBe(true);
    },
  );
});
