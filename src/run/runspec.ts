// RunSpec: the single, versioned input of a comparison (the permalink carries it). Validation is strict:
// every field is checked and anything malformed is rejected with a message naming the field.
import { FUSED_KERNELS, type FusedKernelId, isFusedKernelId } from '../engine/fused-kernels';
import { type CustomSlotId, customSlot, isCustomSlotId } from '../kernels/custom/slots';
import { LLAMA_FLAVOURS } from '../model/llama-config';
import { MAX_SHARDS, manifestSha256 } from '../model/shard-index';
import { PRECISIONS, type Precision } from '../numeric/precision';
import type { LlamaFlavour } from '../numeric/types';
import { type FaultId, faultInfo, isFaultId } from './faults';

export const RUNSPEC_VERSION = 1;

/**
 * A model. `sha256` is that of model.safetensors, or for sharded weights that of the manifest of its shards
 * (src/model/shard-index.ts); `files` then names every shard's sha256 (each is checked as it arrives).
 */
/** A model from a URL or a file; `flavour` names a Llama-family model's (absent: GPT-NeoX, as in older links). */
export type ModelRef =
  | { kind: 'embedded'; id: string }
  | { kind: 'url'; url: string; sha256: string; files?: Record<string, string>; flavour?: LlamaFlavour }
  | { kind: 'file'; sha256: string; name?: string; files?: Record<string, string>; flavour?: LlamaFlavour };

export type Metric = 'relL2' | 'maxAbs' | 'meanAbs' | 'cosineDistance' | 'sqnrDb' | 'maxUlp';
export const METRICS: readonly Metric[] = [
  'relL2',
  'maxAbs',
  'meanAbs',
  'cosineDistance',
  'sqnrDb',
  'maxUlp',
];

export interface RunSpec {
  version: 1;
  model: ModelRef;
  /** Text (encoded by the model's tokenizer) or token ids. */
  prompt: { text: string } | { tokens: number[] };
  /** Greedy tokens to generate on both paths (0 = none). */
  generate: number;
  precision: Precision;
  /** Fused kernels switched on in the fused path. */
  fused: FusedKernelId[];
  faults: { id: FaultId; fromLayer?: number }[];
  /** Seeds fault placement (a fault without fromLayer starts at a seeded layer). */
  seed: number;
  /** A layer diverges when the fused path's error exceeds k × the noise floor. */
  k: number;
  /** The metric the verdict and the charts use. */
  metric: Metric;
  /**
   * A kernel written in the page: `source` replaces the WGSL file of fused-kernel slot `slot` in the fused
   * path (src/kernels/custom/). Absent for the shipped kernels. Builds before it refuse a spec carrying it
   * (unknown key), so it is never silently dropped.
   */
  custom?: CustomKernelSpec;
  /**
   * Check every decode step op by op as a run (generation.decode; src/compare/decode-runs.ts). Present only when
   * true, so links without it read as before; builds before it refuse a spec carrying it (unknown key).
   */
  checkDecode?: true;
}

export interface CustomKernelSpec {
  slot: CustomSlotId;
  source: string;
}

/**
 * Default tolerance factor. Two correct fp32 paths that sum in different orders (tiled GEMMs, an online
 * softmax) differ by about √2 × the noise floor, and on some layers up to ~3× (measured on the embedded
 * model, docs/DESIGN-NOTES.md); 10 clears that with margin, while every real fault measured is ≥ 100×.
 */
export const DEFAULT_K = 10;

export const LIMITS = {
  promptChars: 4000,
  tokens: 2048,
  generate: 256,
  faults: 12,
  k: [1, 1e6] as const,
  /** Characters of a custom kernel's WGSL (the shipped fused files are 1–14 KiB). */
  customSourceChars: 64 * 1024,
};

export function defaultRunSpec(): RunSpec {
  return {
    version: 1,
    model: { kind: 'embedded', id: 'neox-kjv-bytes' },
    prompt: { text: 'And God said unto Moses, ' },
    // Enough tokens to see both continuations (they stream in together, one of each path per step) without
    // making a room wait: on SwiftShader a step of both paths costs about 0.3 s.
    generate: 8,
    precision: 'fp32',
    fused: FUSED_KERNELS.map((k) => k.id),
    faults: [],
    seed: 1,
    k: DEFAULT_K,
    metric: 'relL2',
  };
}

export class RunSpecError extends Error {
  override name = 'RunSpecError';
  constructor(
    readonly field: string,
    detail: string,
  ) {
    super(`RunSpec ${field}: ${detail}`);
  }
}

const isObj = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function onlyKeys(o: Record<string, unknown>, allowed: string[], field: string) {
  for (const k of Object.keys(o))
    if (!allowed.includes(k)) throw new RunSpecError(field, `unknown key '${k.slice(0, 40)}'`);
}

function int(v: unknown, field: string, lo: number, hi: number): number {
  if (typeof v !== 'number' || !Number.isInteger(v) || v < lo || v > hi) {
    throw new RunSpecError(
      field,
      `expected an integer in [${lo}, ${hi}], got ${JSON.stringify(v)?.slice(0, 40)}`,
    );
  }
  return v;
}

function str(v: unknown, field: string, max: number, pattern?: RegExp): string {
  if (typeof v !== 'string') throw new RunSpecError(field, `expected a string, got ${typeof v}`);
  if (v.length > max) throw new RunSpecError(field, `longer than ${max} characters`);
  if (pattern && !pattern.test(v))
    throw new RunSpecError(field, `malformed: ${JSON.stringify(v.slice(0, 60))}`);
  return v;
}

const SHA256 = /^[0-9a-f]{64}$/;
const MODEL_ID = /^[a-z0-9][a-z0-9._-]{0,63}$/;

const SHARD = /^[A-Za-z0-9][A-Za-z0-9._+-]{0,198}\.safetensors$/;

/** A sharded model's `files` (shard -> sha256): well-formed, and the manifest they make hashes to `sha256`. */
function parseShardShas(v: unknown, sha256: string): Record<string, string> {
  if (!isObj(v)) throw new RunSpecError('model.files', 'expected an object of shard file -> sha256');
  const entries = Object.entries(v);
  if (entries.length === 0 || entries.length > MAX_SHARDS)
    throw new RunSpecError('model.files', `expected 1 to ${MAX_SHARDS} shards, got ${entries.length}`);
  const out: Record<string, string> = {};
  for (const [file, sha] of entries) {
    if (!SHARD.test(file))
      throw new RunSpecError('model.files', `not a shard file name: ${JSON.stringify(file.slice(0, 60))}`);
    out[file] = str(sha, `model.files[${file}]`, 64, SHA256);
  }
  if (manifestSha256(new Map(Object.entries(out))) !== sha256)
    throw new RunSpecError('model.files', "the shards' sha256 do not make the model's sha256");
  return out;
}

function parseFlavour(v: unknown): LlamaFlavour {
  if (typeof v !== 'string' || !(LLAMA_FLAVOURS as readonly string[]).includes(v))
    throw new RunSpecError('model.flavour', `expected one of ${LLAMA_FLAVOURS.join(', ')}`);
  return v as LlamaFlavour;
}

export function parseModel(v: unknown): ModelRef {
  if (!isObj(v)) throw new RunSpecError('model', 'expected an object');
  switch (v.kind) {
    case 'embedded':
      onlyKeys(v, ['kind', 'id'], 'model');
      return { kind: 'embedded', id: str(v.id, 'model.id', 64, MODEL_ID) };
    case 'url': {
      onlyKeys(v, ['kind', 'url', 'sha256', 'files', 'flavour'], 'model');
      const url = str(v.url, 'model.url', 2000);
      let parsed: URL;
      try {
        parsed = new URL(url);
      } catch {
        throw new RunSpecError('model.url', 'not a URL');
      }
      if (parsed.protocol !== 'https:' && parsed.protocol !== 'http:') {
        throw new RunSpecError('model.url', `only http(s) URLs, got ${parsed.protocol}`);
      }
      if (parsed.username || parsed.password)
        throw new RunSpecError('model.url', 'a URL holding a user name or password');
      const ref: ModelRef = { kind: 'url', url, sha256: str(v.sha256, 'model.sha256', 64, SHA256) };
      if (v.files !== undefined) ref.files = parseShardShas(v.files, ref.sha256);
      if (v.flavour !== undefined) ref.flavour = parseFlavour(v.flavour);
      return ref;
    }
    case 'file': {
      onlyKeys(v, ['kind', 'sha256', 'name', 'files', 'flavour'], 'model');
      const ref: ModelRef = { kind: 'file', sha256: str(v.sha256, 'model.sha256', 64, SHA256) };
      if (v.name !== undefined) ref.name = str(v.name, 'model.name', 200);
      if (v.files !== undefined) ref.files = parseShardShas(v.files, ref.sha256);
      if (v.flavour !== undefined) ref.flavour = parseFlavour(v.flavour);
      return ref;
    }
    default:
      throw new RunSpecError(
        'model.kind',
        `expected embedded, url or file, got ${JSON.stringify(v.kind)?.slice(0, 40)}`,
      );
  }
}

function parsePrompt(v: unknown): RunSpec['prompt'] {
  if (!isObj(v)) throw new RunSpecError('prompt', 'expected an object');
  if ('text' in v) {
    onlyKeys(v, ['text'], 'prompt');
    const text = str(v.text, 'prompt.text', LIMITS.promptChars);
    if (text.length === 0) throw new RunSpecError('prompt.text', 'is empty');
    return { text };
  }
  if ('tokens' in v) {
    onlyKeys(v, ['tokens'], 'prompt');
    if (!Array.isArray(v.tokens) || v.tokens.length === 0 || v.tokens.length > LIMITS.tokens) {
      throw new RunSpecError('prompt.tokens', `expected 1..${LIMITS.tokens} token ids`);
    }
    return { tokens: v.tokens.map((t, i) => int(t, `prompt.tokens[${i}]`, 0, 10_000_000)) };
  }
  throw new RunSpecError('prompt', 'expected { text } or { tokens }');
}

/** Validates an untrusted value (a decoded link, a file) as a RunSpec. Throws RunSpecError. */
export function parseRunSpec(v: unknown): RunSpec {
  if (!isObj(v)) throw new RunSpecError('(root)', 'expected an object');
  if (v.version !== RUNSPEC_VERSION) {
    throw new RunSpecError(
      'version',
      `unsupported version ${JSON.stringify(v.version)?.slice(0, 20)} (this build reads ${RUNSPEC_VERSION})`,
    );
  }
  onlyKeys(
    v,
    [
      'version',
      'model',
      'prompt',
      'generate',
      'precision',
      'fused',
      'faults',
      'seed',
      'k',
      'metric',
      'custom',
      'checkDecode',
    ],
    '(root)',
  );
  const precision = str(v.precision, 'precision', 16);
  if (!(PRECISIONS as readonly string[]).includes(precision))
    throw new RunSpecError('precision', `unknown '${precision}'`);
  if (!Array.isArray(v.fused) || v.fused.length > FUSED_KERNELS.length)
    throw new RunSpecError('fused', 'expected a list of fused kernels');
  const fused = v.fused.map((f, i) => {
    const s = str(f, `fused[${i}]`, 40);
    if (!isFusedKernelId(s)) throw new RunSpecError(`fused[${i}]`, `unknown fused kernel '${s}'`);
    return s;
  });
  if (new Set(fused).size !== fused.length) throw new RunSpecError('fused', 'lists a kernel twice');
  if (!Array.isArray(v.faults) || v.faults.length > LIMITS.faults)
    throw new RunSpecError('faults', `expected at most ${LIMITS.faults} faults`);
  const faults = v.faults.map((f, i) => {
    const field = `faults[${i}]`;
    if (!isObj(f)) throw new RunSpecError(field, 'expected an object');
    onlyKeys(f, ['id', 'fromLayer'], field);
    const id = str(f.id, `${field}.id`, 40);
    if (!isFaultId(id)) throw new RunSpecError(`${field}.id`, `unknown fault '${id}'`);
    const kernel = faultInfo(id).kernel;
    if (!fused.includes(kernel))
      throw new RunSpecError(
        `${field}.id`,
        `fault '${id}' lives in fused kernel '${kernel}', which is not switched on`,
      );
    const out: { id: FaultId; fromLayer?: number } = { id };
    if (f.fromLayer !== undefined) out.fromLayer = int(f.fromLayer, `${field}.fromLayer`, 0, 1023);
    return out;
  });
  if (new Set(faults.map((f) => f.id)).size !== faults.length)
    throw new RunSpecError('faults', 'lists a fault twice');
  const k = v.k;
  if (typeof k !== 'number' || !Number.isFinite(k) || k < LIMITS.k[0] || k > LIMITS.k[1]) {
    throw new RunSpecError('k', `expected a number in [${LIMITS.k[0]}, ${LIMITS.k[1]}]`);
  }
  const metric = str(v.metric, 'metric', 20);
  if (!(METRICS as readonly string[]).includes(metric))
    throw new RunSpecError('metric', `unknown '${metric}'`);
  const spec: RunSpec = {
    version: 1,
    model: parseModel(v.model),
    prompt: parsePrompt(v.prompt),
    generate: int(v.generate, 'generate', 0, LIMITS.generate),
    precision: precision as Precision,
    fused,
    faults,
    seed: int(v.seed, 'seed', 0, 2 ** 31 - 1),
    k,
    metric: metric as Metric,
  };
  if (v.custom !== undefined) spec.custom = parseCustom(v.custom, fused);
  if (v.checkDecode !== undefined) {
    if (typeof v.checkDecode !== 'boolean') throw new RunSpecError('checkDecode', 'expected true or false');
    if (v.checkDecode) spec.checkDecode = true;
  }
  return spec;
}

function parseCustom(v: unknown, fused: readonly FusedKernelId[]): CustomKernelSpec {
  if (!isObj(v)) throw new RunSpecError('custom', 'expected an object');
  onlyKeys(v, ['slot', 'source'], 'custom');
  const slot = str(v.slot, 'custom.slot', 40);
  if (!isCustomSlotId(slot)) throw new RunSpecError('custom.slot', `unknown kernel slot '${slot}'`);
  const kernel = customSlot(slot).fused;
  if (!fused.includes(kernel))
    throw new RunSpecError(
      'custom.slot',
      `'${slot}' is a file of fused kernel '${kernel}', which is not switched on`,
    );
  const source = str(v.source, 'custom.source', LIMITS.customSourceChars);
  if (source.trim().length === 0) throw new RunSpecError('custom.source', 'is empty');
  return { slot, source };
}
