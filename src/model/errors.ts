// The one error type for everything wrong with a model file (config.json, model.safetensors, tokenizer.json).

/**
 * A model file was refused. The message is one line: `<file>: <what is wrong>`, naming the tensor or config
 * key when there is one, e.g.
 * `model.safetensors: tensor 'gpt_neox.layers.0.mlp.dense_h_to_4h.weight' has shape [96,200], expected [200,96]`.
 */
export class ModelLoadError extends Error {
  /** What went wrong, for code that decides (exit status, the worker's error kind): a model file was bad. */
  readonly kind = 'model' as const;
  /** The file at fault, e.g. 'config.json' or 'model.safetensors'. */
  readonly file: string;
  /** The tensor name or config key at fault, when there is one. */
  readonly key?: string;

  constructor(file: string, detail: string, key?: string) {
    // One line, always: parser messages (V8's JSON errors quote the source) may carry newlines.
    super(oneLine(`${file}: ${detail.replace(/\s+/g, ' ')}`));
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

/**
 * The request does not fit the model or the limits known before any work starts (prompt plus generated tokens
 * past max_position_embeddings, a fault layer past the model's layers, a token id past the vocabulary). The
 * message is one line; user text in it is quoted by quoteName.
 */
export class InputError extends Error {
  readonly kind = 'input' as const;
  override name = 'InputError';
  constructor(message: string) {
    super(oneLine(message));
  }
}

/** A message forced onto one line: every control character left in it (newlines included) is escaped. */
export function oneLine(message: string): string {
  let out = '';
  for (const c of message) {
    const code = c.charCodeAt(0);
    const control = code < 0x20 || (code >= 0x7f && code <= 0x9f) || code === 0x2028 || code === 0x2029;
    out += control ? `\\u${code.toString(16).padStart(4, '0')}` : c;
  }
  return out;
}
