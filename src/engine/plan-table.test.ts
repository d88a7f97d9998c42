// The fused-kernel table is what the plan is built from: for each kernel switched on alone, the reference ops
// missing from the plan are exactly the entry's `replaces` (those the model has), its fusions write exactly the
// taps of those ops minus `fusedAway`, run where the first replaced op would, and every other op is the
// reference plan's own dispatch (label, kernel, constants, buffers) — a swapped entry changes nothing else.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { acquireGpu, type GpuContext } from '../gpu/device';
import { nodeGpu } from '../gpu/node';
import { BufferPool } from '../gpu/pool';
import { customSlot } from '../kernels/custom/slots';
import { freshSeed } from '../kernels/testing';
import { parseConfigText } from '../model/config';
import { randomModelFiles } from '../model/random-model';
import { loadWeights } from '../model/weights';
import { FUSED_KERNELS, type FusedKernelId, HEAD_OPS, layerOpsOf } from './fused-kernels';
import { type GpuModel, uploadModel } from './gpu-model';
import { buildPlan, type Plan } from './plan';

let ctx: GpuContext;
beforeAll(async () => {
  ctx = await acquireGpu(nodeGpu());
});
afterAll(() => ctx?.device.destroy());

const T = 5;
/** The taps a reference op writes ('rotary' writes q, k, v). */
const tapsOf = (op: string) => (op === 'rotary' ? ['q', 'k', 'v'] : [op]);

function plan(m: GpuModel, fused: FusedKernelId[]): Plan {
  return buildPlan(ctx.device, new BufferPool(ctx.device), m, [1, 2, 3, 4, 5].slice(0, T), {
    fused: new Set(fused),
    precision: 'fp32',
    maxBindingBytes: 1 << 30,
  });
}

/** An op as the GPU sees it: label, kernel, constants and which buffer (by its label) each binding gets. */
function opKey(o: Plan['ops'][number]): string {
  const buf = (b: unknown) => ((b as { buffer?: GPUBuffer }).buffer ?? (b as GPUBuffer)).label;
  return JSON.stringify([
    o.spec.label,
    o.spec.kernel.name,
    Object.entries(o.spec.constants ?? {}).sort(),
    Object.entries(o.spec.buffers)
      .map(([k, v]) => [k, buf(v)])
      .sort(),
  ]);
}

describe.each([true, false])('the plan is built from FUSED_KERNELS (parallel residual %s)', (parallel) => {
  let m: GpuModel;
  beforeAll(() => {
    const files = randomModelFiles(
      { vocab: 200, d: 40, layers: 2, heads: 2, ff: 60, rotaryPct: 0.5, parallel },
      freshSeed(),
    );
    const cfg = parseConfigText(files.config);
    m = uploadModel(ctx.device, cfg, loadWeights(cfg, files.weights), 1 << 30);
  });
  afterAll(() => m?.destroy());

  it('the reference plan runs LAYER_OPS in order, then the head', () => {
    const ref = plan(m, []);
    const labels = ref.ops.map((o) => o.spec.label);
    const layer0 = labels.filter((l) => l.startsWith('layers.0.')).map((l) => l.slice('layers.0.'.length));
    expect(layer0).toEqual(layerOpsOf(parallel));
    expect(labels.slice(-2)).toEqual([...HEAD_OPS]);
    expect(ref.ops.every((o) => o.fused === null)).toBe(true);
    ref.release();
  });

  it.each(FUSED_KERNELS.map((k) => k.id))(
    '%s alone swaps exactly its `replaces`, and nothing else changes',
    (id) => {
      const entry = FUSED_KERNELS.find((k) => k.id === id)!;
      const ref = plan(m, []);
      const one = plan(m, [id]);
      const ops = [...layerOpsOf(parallel), ...HEAD_OPS];
      const short = (label: string) => label.replace(/^layers\.\d+\./, '').replace(/\[\d+\]$/, '');
      const refOps = new Set(ref.ops.map((o) => short(o.spec.label)));
      const kept = new Set(one.ops.filter((o) => o.fused === null).map((o) => short(o.spec.label)));
      const swapped = ops.filter((op) => refOps.has(op) && !kept.has(op));
      expect(swapped.sort()).toEqual(entry.replaces.filter((op) => ops.includes(op as never)).sort());
      // Its fusions write the replaced ops' taps, except the fused-away ones.
      const written = one.ops
        .filter((o) => o.fused === id)
        .flatMap((o) => o.writes.map((w) => w.name.replace(/^layers\.\d+\./, '')));
      const want = swapped.flatMap(tapsOf).filter((t) => !entry.fusedAway.includes(t));
      expect([...new Set(written)].sort()).toEqual([...new Set(want)].sort());
      // Each fused dispatch runs the WGSL file of one of the entry's slots (its binding interface and isolated
      // test recipe live with the slot).
      const files = entry.fusions.map((f) => customSlot(f.slot).kernel.file);
      for (const o of one.ops.filter((x) => x.fused === id))
        expect(files, o.spec.label).toContain(o.spec.kernel.file);
      // Every other op is the reference plan's own, in the same order.
      const refKept = ref.ops.filter((o) => !swapped.includes(short(o.spec.label) as never)).map(opKey);
      expect(one.ops.filter((o) => o.fused === null).map(opKey)).toEqual(refKept);
      // The fusion sits where the first op it replaces sat: the ops before it are the reference's.
      const firstFused = one.ops.findIndex((o) => o.fused === id);
      const firstSwapped = ref.ops.findIndex((o) => swapped.includes(short(o.spec.label) as never));
      expect(one.ops.slice(0, firstFused).map(opKey)).toEqual(ref.ops.slice(0, firstSwapped).map(opKey));
      ref.release();
      one.release();
    },
  );
});
