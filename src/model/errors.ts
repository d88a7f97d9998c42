// The one error type for everything wrong with a model file (config.json, model.safetensors, tokenizer.json).

/**
 * A model file was refused. The message is one line: `<file>: <what is wrong>`, naming the tensor or config
 * key when there is one, e.g.
 * `model.safetensors: tensor 'gpt_neox.layers.0.mlp.dense_h_to_4h.weight' has shape [96,200], expected [200,96]`.
 */
export class ModelLoadError extends Error {
  /** The file at fault, e.g. 'config.json' or 'model.safetensors'. */
  readonly file: string;
  /** The tensor name or config key at fault, when there is one. */
  readonly key?: string;

  constructor(file: string, detail: string, key?: string) {
    // One line, always: parser messages (V8's JSON errors quote the source) may carry newlines.
    super(`${file}: ${detail.replace(/\s+/g, ' ')}`);
    this.name = 'ModelLoadError';
    this.file = file;
    if (key !== undefined) this.key = key;
  }
}

/** A short, bounded description of a JSON value for error messages: `string 'abc'`, `array`, `null`. */
export function describeJson(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'string') return `string ${quoteName(v.length > 40 ? `${v.slice(0, 40)}…` : v)}`;
  if (typeof v === 'number') return `number ${v}`;
  if (typeof v === 'boolean') return `boolean ${v}`;
  if (typeof v === 'object') return 'an object';
  return typeof v;
}

/** A name quoted for a one-line message: `'name'`, or JSON-escaped and cut short when it is odd or long. */
export function quoteName(name: string): string {
  if (name.length <= 160 && /^[\x20-\x7e]*$/.test(name)) return `'${name}'`;
  const cut = name.length > 160 ? `${name.slice(0, 160)}…` : name;
  return JSON.stringify(cut).replace(
    /[^\x20-\x7e]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`,
  );
}
