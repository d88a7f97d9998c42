// The GPU double-float oracle's one loop (oracle-gpu.ts records through it): a family's steps off the op registry
// (ops/families.ts layerSteps), each run by its op's df form (kernels/oracle/df-forms.ts, the registry's `df` slots)
// into its own buffer or a scratch buffer shared across layers; the embedding and the LM head over the weight
// matrix's row chunks and pieces (one binding each); a layer on the rows from..T−1 only (a run check's or a decode's
// rows): every slot that a whole-sequence op reads (the rotary, the attention core: the keys and values of all
// positions) over every row, the rest on those rows, and a decode's earlier rows of the slots before the first
// whole-sequence op copied in from its prompt's forward (`prefix`). Taps go under the slots' names, or the engine's
// plan names (GPT-NeoX: a step's last plan op, the rotary's q, k, v, the attention core's scores and probs).
import type { OverrideConstants } from '../gpu/pipelines';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import { rotaryInvFreq } from '../kernels/cpu/rotary-angles';
import { llamaInvFreq, ropeTablesF64 } from '../kernels/ops/rotary';
import { DF_FORMS } from '../kernels/oracle/df-forms';
import { toDfPairs } from '../numeric/double-float';
import { OPS } from '../ops/descriptors';
import { familyOf, layerSteps } from '../ops/families';
import type { OpStep } from '../ops/types';
import { slotWidth } from '../ops/widths';
import { DF_BYTES, type DfBuffer, OracleError, type OracleTaps, type Recording } from './oracle-df';
import type { OracleWeightSource } from './oracle-weights';

/** What every recording of one oracle shares: its weights, the df constants, the largest binding, the tap names. */
export interface OracleCore {
  src: OracleWeightSource;
  /** DF_FMA; with W_F16 for the kernels that read the matrices. */
  df: OverrideConstants;
  dfW: OverrideConstants;
  maxBindingBytes: number;
  /** Taps under the engine's plan names (GPT-NeoX's reports) rather than the steps' slots. */
  planNames: boolean;
  angles?: RotaryAngles;
}

/** One recording's shared inputs: T positions, the ids of the rows computed, the rotary tables, scratch. */
export interface Env {
  core: OracleCore;
  rec: Recording;
  T: number;
  ids: () => GPUBuffer;
  rope: () => { cos: GPUBuffer; sin: GPUBuffer };
  dummy: GPUBuffer;
  scratch: (name: string, n: number) => GPUBuffer;
}

/** `ids`: the token ids of the rows the embedding computes (null: none is computed). Uploads happen on first use. */
export function oracleEnv(core: OracleCore, rec: Recording, T: number, ids: readonly number[] | null): Env {
  const once = <V>(make: () => V) => {
    let v: V | undefined;
    return () => {
      v ??= make();
      return v;
    };
  };
  const scratch = new Map<string, { buffer: GPUBuffer; n: number }>();
  const c = core.src.cfg;
  return {
    core,
    rec,
    T,
    ids: once(() => {
      if (!ids) throw new OracleError('oracle: no token ids were given');
      return rec.upload(new Uint32Array(ids), 'ids');
    }),
    rope: once(() => {
      const a = core.angles;
      const inv = c.family === 'llama' ? llamaInvFreq(c, a) : rotaryInvFreq(c.rotaryNdims, c.rotaryBase, a);
      const t = ropeTablesF64(T, inv, a);
      return { cos: rec.upload(toDfPairs(t.cos), 'cos'), sin: rec.upload(toDfPairs(t.sin), 'sin') };
    }),
    dummy: core.src.dummy ?? rec.upload(new Float32Array(4), 'dummy'),
    scratch: (name, n) => {
      const s = scratch.get(name);
      if (s && s.n >= n) return s.buffer;
      const buffer = rec.df(n, `scratch.${name}`);
      scratch.set(name, { buffer, n });
      return buffer;
    },
  };
}

/** A step's tap name: its slot, or its last plan op under the engine's names (`resid_mid` for `ln2_in`). */
function tapName(core: OracleCore, s: OpStep): string {
  return core.planNames ? (s.plan?.at(-1) ?? s.slot) : s.slot;
}

/**
 * Records step `s` by its op's df form from `inputs` into `out` (rows from..T−1); returns the label of its last
 * dispatch. `own(name)`: whether an intermediate of the form's is the layer's tap `name` (else scratch).
 */
export function recordStep(
  env: Env,
  s: OpStep,
  layer: number,
  label: string,
  inputs: readonly GPUBuffer[],
  out: GPUBuffer,
  from: number,
  own: (name: string) => string | null = () => null,
  weights?: { weight: GPUBuffer; weightRows: { row0: number; rows: number; offset?: number; size?: number } },
): string {
  const { core, rec } = env;
  const specs = DF_FORMS[s.op]({
    cfg: core.src.cfg,
    T: env.T,
    from,
    layer,
    step: s,
    label,
    inputs,
    out,
    ...(weights ? { ...weights, bias: null } : core.src.of(s, layer)),
    ids: s.op === 'embedding' ? env.ids() : env.dummy,
    rope: s.op === 'rotary' || s.op === 'attention' ? env.rope() : { cos: env.dummy, sin: env.dummy },
    scratch: (name, n) => {
      const tap = own(name);
      if (!tap) return env.scratch(name, n);
      const b = rec.df(n, tap);
      rec.taps.set(tap, { buffer: b, n });
      return b;
    },
    dummy: env.dummy,
    df: core.df,
    dfW: core.dfW,
  });
  for (const d of specs) rec.program.add(d);
  const last = specs.at(-1);
  if (!last) throw new OracleError(`oracle ${label}: '${s.op}' recorded no dispatch`);
  return last.label;
}

/** A slot's buffers: over every row (`all`, [T, width]) and over the rows from..T−1 (`tail`); the same at from 0. */
export interface SlotRows {
  all?: GPUBuffer;
  tail?: GPUBuffer;
}

/** How a layer is recorded: its rows, its input, the earlier rows of the slots a decode carries, its taps. */
export interface LayerCall {
  /** The first row of the layer's output (0: every row). */
  from: number;
  /** The layer's input [T, d] df (`all`) and/or its rows from..T−1 (`tail`). */
  x: SlotRows;
  /**
   * The rows before `from` of each slot a whole-sequence op reads first (GPT-NeoX: the QKV projection; [≥ from,
   * width] df, from a forward over the rows before): those slots are computed on the rows from..T−1 only and these
   * rows copied in before them (a decode's new rows after its prompt's forward).
   */
  prefix?: (layer: number, slot: string) => DfBuffer;
  /** 'dump': the layer's output alone is kept (every other step into scratch shared across layers); 'all': every
   * step's output is a tap of its own. */
  taps: OracleTaps;
}

/** The slots of a layer that a whole-sequence op reads first: what a decode's prompt gives for its earlier rows. */
export function prefixSlots(steps: readonly OpStep[]): string[] {
  const whole = new Set(steps.filter((s) => OPS[s.op].wholeSequence).map((s) => s.slot));
  const out: string[] = [];
  for (const s of steps) {
    if (!whole.has(s.slot)) continue;
    for (const n of s.inputs) if (!whole.has(n) && !out.includes(n)) out.push(n);
  }
  return out;
}

/**
 * One layer of the family on its input: every step in order. Returns its output's rows from..T−1 (the slot `out`,
 * always tapped as `layers.{i}.out`).
 */
export function recordLayer(env: Env, i: number, call: LayerCall): GPUBuffer {
  const { core, rec, T } = env;
  const cfg = core.src.cfg;
  const { from, taps } = call;
  const steps = layerSteps(familyOf(cfg), cfg);
  const p = `layers.${i}`;
  const prefix = new Set(call.prefix ? prefixSlots(steps) : []);
  const whole = (s: OpStep) => OPS[s.op].wholeSequence;
  // Which slots are wanted over every row: read by a whole-sequence op, or by a step whose output is (but a prefix
  // slot is computed on the new rows alone and completed by the prefix).
  const needAll = new Set<string>();
  if (from > 0)
    for (let j = steps.length - 1; j >= 0; j--) {
      const s = steps[j];
      if (whole(s) || (needAll.has(s.slot) && !prefix.has(s.slot))) for (const n of s.inputs) needAll.add(n);
    }
  const slots = new Map<string, SlotRows>([
    ['in', from === 0 ? { all: call.x.all, tail: call.x.all } : call.x],
  ]);
  const buffer = (name: string, n: number, kept: boolean, scratch: string) => {
    if (!kept) return env.scratch(scratch, n);
    const b = rec.df(n, `${p}.${name}`);
    rec.taps.set(`${p}.${name}`, { buffer: b, n });
    return b;
  };
  for (const s of steps) {
    const outAll = from === 0 || needAll.has(s.slot);
    const pre = from > 0 && prefix.has(s.slot);
    const readsAll = from === 0 || whole(s) || (outAll && !pre);
    const stepFrom = outAll && !pre ? 0 : from;
    const inputs = s.inputs.map((n) => {
      const b = readsAll ? slots.get(n)?.all : slots.get(n)?.tail;
      if (!b)
        throw new OracleError(
          `oracle layer ${i} ${s.slot}: reads '${n}' ${readsAll ? 'over every row' : `from row ${from}`}, which it is not given`,
        );
      return b;
    });
    const width = slotWidth(cfg, s.width);
    const n = (T - stepFrom) * width;
    const name = tapName(core, s);
    const split = core.planNames && s.taps ? s.taps : null; // the rotary's q, k, v
    const kept = s.slot === 'out' || (taps === 'all' && !split && !pre);
    const out = buffer(pre ? `${name}.rows` : name, n, kept, pre ? `slot.${s.slot}.rows` : `slot.${s.slot}`);
    const own = (x: string) =>
      taps === 'all' && core.planNames && (s.plan as readonly string[] | undefined)?.includes(x)
        ? `${p}.${x}`
        : null;
    const last = recordStep(env, s, i, `${p}.${name}`, inputs, out, stepFrom, own);
    if (split) {
      // The packed [taps, …] output copied out into a tap each (the engine's q, k, v).
      const part = n / split.length;
      if (taps === 'all')
        split.forEach((t, j) => {
          const dst = buffer(t, part, true, '');
          rec.program.copyAfter({
            after: last,
            src: out,
            srcOffset: j * part * DF_BYTES,
            dst,
            dstOffset: 0,
            bytes: part * DF_BYTES,
          });
        });
    }
    if (pre) {
      // The earlier rows from the prefix, the new rows after them: [T, width].
      const given = call.prefix!(i, s.slot);
      if (given.n < from * width)
        throw new OracleError(
          `oracle forward: layer ${i}'s prefix holds ${given.n} values, not ${from} rows`,
        );
      const all = buffer(name, T * width, taps === 'all', `slot.${s.slot}`);
      const row = width * DF_BYTES;
      rec.program.copyAfter({
        after: last,
        src: given.buffer,
        srcOffset: 0,
        dst: all,
        dstOffset: 0,
        bytes: from * row,
      });
      rec.program.copyAfter({
        after: last,
        src: out,
        srcOffset: 0,
        dst: all,
        dstOffset: from * row,
        bytes: (T - from) * row,
      });
      slots.set(s.slot, { all, tail: out });
    } else
      slots.set(
        s.slot,
        outAll ? (stepFrom === from ? { all: out, tail: out } : { all: out }) : { tail: out },
      );
  }
  const out = slots.get('out')?.tail;
  if (!out) throw new OracleError(`oracle layer ${i}: the family's steps compute no 'out'`);
  return out;
}

/** The embedding of the rows from..T−1 (the env's ids), a launch per chunk of the table; tapped as `embed`. */
export function recordEmbedding(env: Env, from: number): GPUBuffer {
  const { core, rec, T } = env;
  const s = familyOf(core.src.cfg).embed;
  const d = core.src.cfg.hiddenSize;
  const chunks = core.src.chunks(s);
  const out = rec.df((T - from) * d, 'embed');
  chunks.forEach((c, k) => {
    const label = chunks.length === 1 ? 'embed' : `embed[${k}]`;
    recordStep(env, s, -1, label, [], out, from, undefined, { weight: c.buffer, weightRows: c });
  });
  rec.taps.set('embed', { buffer: out, n: (T - from) * d });
  return out;
}

/** The final norm of x's rows from..T−1; tapped as `final_norm`. */
export function recordFinalNorm(env: Env, x: GPUBuffer, from: number): GPUBuffer {
  const { core, rec, T } = env;
  const s = familyOf(core.src.cfg).finalNorm;
  const n = (T - from) * core.src.cfg.hiddenSize;
  const out = rec.df(n, 'final_norm');
  recordStep(env, s, -1, 'final_norm', [x], out, from);
  rec.taps.set('final_norm', { buffer: out, n });
  return out;
}

/**
 * The LM head on x (rows from..T−1) in pieces that each fit one binding, as the reference plan splits it: the
 * weight's row chunks, split again by rows so that each piece's [T, rows] df output fits too (cut for all T rows,
 * so that a row range's pieces pair up with the whole forward's). A DfBuffer with parts where there are several.
 */
export function recordLmHead(env: Env, x: GPUBuffer, from: number): DfBuffer {
  const { core, rec, T } = env;
  const cfg = core.src.cfg;
  const s = familyOf(cfg).lmHead;
  const R = T - from;
  const d = cfg.hiddenSize;
  const wBytes = core.src.f16 ? 2 : 4;
  const G = core.src.rowGranule;
  const actRows = Math.max(G, Math.floor(core.maxBindingBytes / (DF_BYTES * T) / G) * G);
  const pieces: { buffer: GPUBuffer; chunkRows: number; row0: number; r0: number; rows: number }[] = [];
  for (const c of core.src.chunks(s))
    for (let r0 = 0; r0 < c.rows; r0 += actRows)
      pieces.push({
        buffer: c.buffer,
        chunkRows: c.rows,
        row0: c.row0,
        r0,
        rows: Math.min(actRows, c.rows - r0),
      });
  const parts = pieces.map((piece, k) => {
    const label = pieces.length === 1 ? 'logits' : `logits[${k}]`;
    const y = rec.df(R * piece.rows, label);
    const whole = piece.rows === piece.chunkRows;
    const weightRows = {
      row0: piece.row0 + piece.r0,
      rows: piece.rows,
      ...(whole ? {} : { offset: piece.r0 * d * wBytes, size: piece.rows * d * wBytes }),
    };
    recordStep(env, s, -1, label, [x], y, from, undefined, { weight: piece.buffer, weightRows });
    return { buffer: y, col0: piece.row0 + piece.r0, cols: piece.rows };
  });
  const out: DfBuffer =
    parts.length === 1
      ? { buffer: parts[0].buffer, n: R * cfg.vocabSize }
      : { buffer: parts[0].buffer, n: R * cfg.vocabSize, parts };
  rec.taps.set('logits', out);
  return out;
}
