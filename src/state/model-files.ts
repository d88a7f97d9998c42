// Which dropped or picked file is which: config.json, model.safetensors, tokenizer.json. Pure.

export interface NamedFile {
  name: string;
  /** The folder path when a whole folder was picked or dropped (webkitRelativePath), else ''. */
  relativePath?: string;
}

export type ClassifiedFiles<F extends NamedFile> =
  | { ok: true; config: F; weights: F; tokenizer: F | null; name: string }
  | { ok: false; message: string };

const base = (f: NamedFile) => f.name.toLowerCase();

/**
 * Picks the three model files out of a selection: exactly one *.safetensors, a config (config.json, or the
 * only *.json whose name has "config"), and optionally tokenizer.json. The model's name is its folder (when
 * known) or the weights file's name without the extension.
 */
export function classifyModelFiles<F extends NamedFile>(files: readonly F[]): ClassifiedFiles<F> {
  const weights = files.filter((f) => base(f).endsWith('.safetensors'));
  if (weights.length === 0) return { ok: false, message: 'No model.safetensors among the files.' };
  if (weights.length > 1)
    return {
      ok: false,
      message: `${weights.length} .safetensors files: choose one model (sharded weights are not supported).`,
    };
  const jsons = files.filter((f) => base(f).endsWith('.json'));
  const config =
    jsons.find((f) => base(f) === 'config.json') ??
    (jsons.filter((f) => base(f).includes('config') && !base(f).includes('tokenizer')).length === 1
      ? jsons.find((f) => base(f).includes('config') && !base(f).includes('tokenizer'))
      : undefined);
  if (!config) return { ok: false, message: 'No config.json among the files.' };
  const tokenizer = jsons.find((f) => base(f) === 'tokenizer.json') ?? null;
  const w = weights[0];
  const folder = (w.relativePath ?? '').split('/').filter(Boolean);
  const name =
    folder.length >= 2 ? folder[folder.length - 2] : w.name.replace(/\.safetensors$/i, '') || 'model';
  return { ok: true, config, weights: w, tokenizer, name };
}
