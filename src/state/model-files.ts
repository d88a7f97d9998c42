// Which dropped or picked file is which: config.json, the weights (model.safetensors, or
// model.safetensors.index.json and its shards), tokenizer.json. Pure.

export interface NamedFile {
  name: string;
  /** The folder path when a whole folder was picked or dropped (webkitRelativePath), else ''. */
  relativePath?: string;
}

const INDEX = 'model.safetensors.index.json';

export type ClassifiedFiles<F extends NamedFile> =
  | ({ ok: true; config: F; tokenizer: F | null; name: string } & (
      | { weights: F; index?: undefined; shards?: undefined }
      | { weights?: undefined; index: F; shards: F[] }
    ))
  | { ok: false; message: string };

const base = (f: NamedFile) => f.name.toLowerCase();

/** The folder a file came from (its relative path's folder), or the fallback. */
function folderName(f: NamedFile, fallback: string): string {
  const folder = (f.relativePath ?? '').split('/').filter(Boolean);
  return folder.length >= 2 ? folder[folder.length - 2] : fallback;
}

/**
 * Picks the model files out of a selection: a config (config.json, or the only *.json whose name has "config"),
 * optionally tokenizer.json, and the weights: model.safetensors (or the only *.safetensors), else
 * model.safetensors.index.json with every other *.safetensors as its shards (which ones the index needs is
 * checked when it loads). The model's name is its folder (when known) or the weights file's name.
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
    const name = folderName(single, single.name.replace(/\.safetensors$/i, '') || 'model');
    return { ok: true, config, weights: single, tokenizer, name };
  }
  return { ok: true, config, index: index!, shards: weights, tokenizer, name: folderName(index!, 'model') };
}
