// The exact output of one check of a run outside the GPU oracle's batch of the runs analysis (analyze-runs.ts): on
// the CPU oracle (its checked rows, uploaded for the comparisons), or over every row for the why phase where the
// analysis checked only some rows (the anatomy and the causes read the whole op, as without a row range).

import type { GpuBatch } from '../engine/batch';
import type { Engine } from '../engine/engine';
import { type DfBuffer, readDf, uploadDf } from '../engine/oracle-df';
import type { GpuOracle } from '../engine/oracle-gpu';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import type { RunFile } from '../model/run-file';
import type { OpCheck } from './run-checks';
import { exactOnCpu } from './run-checks-cpu';

/** The exact output of one check over every row of a run file (on the GPU oracle when there is one). */
export async function exactWhole(
  engine: Engine,
  gpuOracle: GpuOracle | null,
  file: RunFile,
  c: OpCheck,
  label: string,
  angles: RotaryAngles,
): Promise<Float64Array> {
  const get = (s: string) => file.slots.get(s)!.data;
  if (!gpuOracle) return exactOnCpu(c, engine.modelInfo!.config, engine.weights!, file.tokens, get, angles);
  const batch = engine.batch();
  try {
    const inputs = c.inputs.map((s) => {
      const data = get(s);
      const buffer = batch.buffer(data.byteLength, `run:${s}`);
      batch.device.queue.writeBuffer(buffer, 0, data.buffer, data.byteOffset, data.byteLength);
      return { buffer, n: data.length };
    });
    const one = gpuOracle.opOn(batch.encoder, { op: c.op, layer: c.layer, inputs, label }, file.tokens);
    batch.onRelease(() => one.release());
    await batch.submit();
    return await readDf(batch.device, one.taps.get('out')!, file.tokens.length);
  } finally {
    batch.release();
  }
}

/** The CPU oracle's exact output of one check (its rows from..T−1 only), uploaded as double-float pairs. */
export function cpuExact(
  engine: Engine,
  batch: GpuBatch,
  c: OpCheck,
  tokens: number[],
  get: (slot: string) => Float32Array,
  from: number,
  angles: RotaryAngles,
): DfBuffer {
  const cfg = engine.modelInfo!.config;
  const v = exactOnCpu(c, cfg, engine.weights!, tokens, get, angles, from);
  const buffer = uploadDf(batch.device, v);
  batch.onRelease(() => buffer.destroy());
  return { buffer, n: v.length };
}
