// Which dropped or picked file is which: config.json, the weights (model.safetensors, or
// model.safetensors.index.json and its shards), tokenizer.json; and the model's name from what the files say. Pure.

export interface NamedFile {
  name: string;
  /** The folder path when a whole folder was picked or dropped (webkitRelativePath), else ''. */
  relativePath?: string;
}

const INDEX = 'model.safetensors.index.json';

export type ClassifiedFiles<F extends NamedFile> =
  | ({
      ok: true;
      config: F;
      tokenizer: F | null;
      /** The folder's name, or the weights file's where it is not the generic one; null: the config names it. */
      name: string | null;
    } & (
      | { weights: F; index?: undefined; shards?: undefined }
      | { weights?: undefined; index: F; shards: F[] }
    ))
  | { ok: false; message: string };

const base = (f: NamedFile) => f.name.toLowerCase();

/** The folder a file came from (its relative path's folder), or the fallback. */
function folderName(f: NamedFile, fallback: string | null): string | null {
  const folder = (f.relativePath ?? '').split('/').filter(Boolean);
  return folder.length >= 2 ? folder[folder.length - 2] : fallback;
}

/** A repository id or a model's own name ("HuggingFaceTB/SmolLM2-135M", "pythia-70m"), not a path on a disk. */
const PLAIN_NAME = /^[A-Za-z0-9][\w.-]{0,95}(\/[A-Za-z0-9][\w.-]{0,95})?$/;

/**
 * A model picked as files (no folder, a generic weights name) named by its config.json: its `_name_or_path` where
 * that is a plain name (a Hub repository id; a path on the saver's disk is not), else its architecture and size
 * ("LlamaForCausalLM 12 × 576": layers × hidden width), else null (a config that is not JSON: its load says why).
 */
export function nameFromConfig(text: string): string | null {
  let c: unknown;
  try {
    c = JSON.parse(text);
  } catch {
    return null;
  }
  if (!c || typeof c !== 'object') return null;
  const o = c as Record<string, unknown>;
  const path = typeof o._name_or_path === 'string' ? o._name_or_path.trim() : '';
  if (PLAIN_NAME.test(path) && !/\.\.|\/\./.test(path)) return path;
  const arch =
    Array.isArray(o.architectures) && typeof o.architectures[0] === 'string' ? o.architectures[0] : null;
  const kind = arch ?? (typeof o.model_type === 'string' ? o.model_type : null);
  if (!kind) return null;
  const layers = o.num_hidden_layers;
  const width = o.hidden_size;
  return Number.isInteger(layers) && Number.isInteger(width) ? `${kind} ${layers} × ${width}` : kind;
}

/** Whether a model's name is one nameFromConfig made of its architecture and size (no folder's: "Qwen2ForCausalLM 2 × 72"). */
export function namedBySize(name: string): boolean {
  return /^[\w.-]+ \d+ × \d+$/.test(name);
}

/** The generic weights names, which say nothing of the model (model.safetensors, a shard's). */
const GENERIC_WEIGHTS = /^(model|pytorch_model|weights)(-\d+-of-\d+)?$/i;

/**
 * Picks the model files out of a selection: a config (config.json, or the only *.json whose name has "config"),
 * optionally tokenizer.json, and the weights: model.safetensors (or the only *.safetensors), else
 * model.safetensors.index.json with every other *.safetensors as its shards (which ones the index needs is
 * checked when it loads). The model's name is its folder (when known) or the weights file's name where that is not
 * the generic one; else null, and the config names it (nameFromConfig).
 */
export function classifyModelFiles<F extends NamedFile>(files: readonly F[]): ClassifiedFiles<F> {
  const weights = files.filter((f) => base(f).endsWith('.safetensors'));
  const index = files.find((f) => base(f) === INDEX) ?? null;
  const jsons = files.filter((f) => base(f).endsWith('.json') && f !== index);
  const configLike = jsons.filter((f) => base(f).includes('config') && !base(f).includes('tokenizer'));
  const config =
    jsons.find((f) => base(f) === 'config.json') ?? (configLike.length === 1 ? configLike[0] : undefined);
  const tokenizer = jsons.find((f) => base(f) === 'tokenizer.json') ?? null;
  const single =
    weights.find((f) => base(f) === 'model.safetensors') ??
    (weights.length === 1 && !index ? weights[0] : null);
  if (weights.length === 0) return { ok: false, message: 'No model.safetensors among the files.' };
  if (!single && !index)
    return {
      ok: false,
      message: `${weights.length} .safetensors files and no ${INDEX}: choose one model, or add its index to load it sharded.`,
    };
  if (!config) return { ok: false, message: 'No config.json among the files.' };
  if (single) {
    const stem = single.name.replace(/\.safetensors$/i, '');
    const name = folderName(single, stem && !GENERIC_WEIGHTS.test(stem) ? stem : null);
    return { ok: true, config, weights: single, tokenizer, name };
  }
  return { ok: true, config, index: index!, shards: weights, tokenizer, name: folderName(index!, null) };
}
