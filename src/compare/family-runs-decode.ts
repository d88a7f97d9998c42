// The Llama family's decode checked op by op: a greedy generation on each path with its KV cache, every forward's
// taps kept (the prefill, then each decode step's one row: LlamaModel.generate's onTaps), each slot's rows
// concatenated into a run of a generation over all positions (row p is position p), and that run checked by the
// runs analysis of the family (family-runs.ts) — each op of each step re-run exactly from its recorded inputs, the
// attention core of a decode row over the keys and values of the rows the run recorded, which is what the cache
// should have held. A finding is named by decode step and position; the two-path report's summary of it is
// GPT-NeoX's (decode-run-file.ts decodeCheckOf), with the cached decode's logits against the path's own whole
// forward over the same tokens (vsFull). Slots in a head layout (the rotated q and k; the keys' slot is the
// cache itself) are left out: the rotary is checked with the attention core, as in a run from PyTorch.
import type { Engine, ForwardOptions } from '../engine/engine';
import type { RunFile, RunTensor } from '../model/run-file';
import { PRECISION_FORMATS } from '../numeric/precision';
import type { LlamaConfig } from '../numeric/types';
import { LLAMA_FAMILY, layerSteps } from '../ops/families';
import { slotWidth } from '../ops/widths';
import { type DecodeCheck, decodeCheckOf, vsFullOf } from './decode-run-file';
import { analyzeFamilyRuns, type FamilyRunsOptions, familyRunsModel } from './family-runs';
import type { RunsReport } from './runs-report';

/** One path of a generation: its name in the report ('reference', 'fused') and its forward options. */
export interface FamilyDecodePath {
  name: string;
  opts: ForwardOptions;
}

/** Each slot a run of the family holds as rows ([T, width]) and its width, for a config. */
function rowSlots(cfg: LlamaConfig): Map<string, number> {
  const out = new Map<string, number>([
    ['embed', cfg.hiddenSize],
    ['final_norm', cfg.hiddenSize],
    ['logits', cfg.vocabSize],
  ]);
  for (let i = 0; i < cfg.numLayers; i++)
    for (const s of layerSteps(LLAMA_FAMILY, cfg))
      if (s.width === 'hidden' || s.width === 'q' || s.width === 'kv' || s.width === 'ff')
        out.set(`layers.${i}.${s.slot}`, slotWidth(cfg, s.width));
  return out;
}

/**
 * One path's forwards of a generation ([first position, taps] in order: the prefill's P rows, then one row a
 * step) as a run file of a generation: each row slot every forward wrote, its rows concatenated.
 */
export function familyDecodeRunFile(
  cfg: LlamaConfig,
  steps: readonly [number, Map<string, Float32Array>][],
  prompt: readonly number[],
  generated: readonly number[],
  label: string,
  precision: ForwardOptions['precision'] = 'fp32',
): RunFile {
  const P = prompt.length;
  const tokens = [...prompt, ...generated.slice(0, -1)];
  const T = tokens.length;
  if (steps.length !== T - P + 1)
    throw new Error(
      `${label}: ${steps.length} forwards recorded for a generation of ${generated.length} tokens`,
    );
  const storage = PRECISION_FORMATS[precision ?? 'fp32'].dtype;
  const slots = new Map<string, RunTensor>();
  let bytes = 0;
  for (const [slot, width] of rowSlots(cfg)) {
    const rowsOf = (j: number) => (j === 0 ? P : 1);
    if (!steps.every(([, taps], j) => taps.get(slot)?.length === rowsOf(j) * width)) continue;
    const data = new Float32Array(T * width);
    for (const [p0, taps] of steps) data.set(taps.get(slot)!, p0 * width);
    slots.set(slot, { name: slot, dtype: storage, data });
    bytes += data.byteLength;
  }
  return {
    file: label,
    tokens,
    label,
    device: 'this adapter (our decode path)',
    dtype: precision ?? 'fp32',
    slots,
    ignored: [],
    handoffs: [],
    storage,
    bytes,
    generation: { prefill: P, generated: [...generated] },
  };
}

export interface FamilyDecodeResult {
  ids: number[][];
  reports: RunsReport[];
  /** The two-path report's summary of each path's decode (report.generation.decode). */
  checks: DecodeCheck[];
}

/**
 * Generates `n` ids after `prompt` on each path with its KV cache, every forward's taps kept, and checks each
 * path's decode as a run of a generation (each against the exact forward of its own tokens: the texts may part).
 */
export async function checkFamilyDecode(
  engine: Engine,
  prompt: readonly number[],
  n: number,
  paths: readonly FamilyDecodePath[],
  opts: FamilyRunsOptions = {},
): Promise<FamilyDecodeResult> {
  const model = engine.llamaModel;
  if (!model) throw new Error('no Llama-family model is loaded');
  const steps: [number, Map<string, Float32Array>][][] = paths.map(() => []);
  const ids = await model.generate(
    prompt,
    n,
    paths.map((p) => p.opts),
    undefined,
    opts.signal,
    (j, p0, taps) => steps[j].push([p0, taps]),
  );
  const reports: RunsReport[] = [];
  const checks: DecodeCheck[] = [];
  for (const [j, p] of paths.entries()) {
    const label = `${p.name} path decode`;
    const file = familyDecodeRunFile(model.cfg, steps[j], prompt, ids[j], label, p.opts.precision);
    const report = await analyzeFamilyRuns(familyRunsModel(engine), { file, sha256: null }, null, opts);
    reports.push(report);
    // The cached decode against the same path's whole forward over the same tokens, on the decode steps' logits
    // rows (a correct cached path: bit for bit, ratio 0).
    const from = prompt.length;
    const V = model.cfg.vocabSize;
    const decoded = file.slots.get('logits')?.data.subarray(from * V) ?? new Float32Array(0);
    const vsFull =
      file.tokens.length > from
        ? vsFullOf(
            decoded,
            (await engine.forward(file.tokens, p.opts)).dump.logits.subarray(from * V),
            report.curves.find((x) => x.slot === 'logits')?.floorValue ?? 0,
            report.k,
          )
        : null;
    checks.push({ ...decodeCheckOf(p.name, report, from), ...(vsFull ? { vsFull } : {}) });
  }
  return { ids, reports, checks };
}
