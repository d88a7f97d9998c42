// The four lines a person pastes into Python to dump a run of the model loaded in the page with
// tools/dump_run.py (served by the site as ./dump_run.py). Pure: the page shows them, a test reads them.

import { parseResolveUrl } from '../../run/hub';
import { namedBySize } from '../../state/model-files';

/** Where the site serves its copy of tools/dump_run.py (public/dump_run.py, checked equal in a test). */
export const DUMPER_PATH = 'dump_run.py';

export interface DumperModel {
  /** The model's name in the page (a folder or repo name). */
  name: string;
  /** The folder URL a URL model was loaded from (a Hub `…/resolve/<revision>/` gives repo and revision). */
  url?: string;
}

/** A Python string literal of `s` (JSON's escaping is valid Python for any text). */
const py = (s: string) => JSON.stringify(s);

/** Where the four lines want token ids the page does not have: Python names it (a NameError), never `tensor([])`. */
export const NO_IDS = 'YOUR_TOKEN_IDS';

/**
 * The lines: imports (AutoTokenizer only where a text prompt needs it), the model (from the Hub at the revision the
 * page loaded, else a local folder to fill in), and one dump_run call on the page's prompt: its token ids as given,
 * or its text through the model's own tokenizer (the same tokenizer.json the page encodes with). Empty ids are
 * never written as an empty tensor: the ids are left to fill in, by name (NO_IDS).
 */
export function dumperLines(
  model: DumperModel | null,
  prompt: { text: string } | { tokens: readonly number[] },
): string[] {
  const hub = model?.url ? parseResolveUrl(model.url) : null;
  const from = hub
    ? `${py(hub.repo)}, revision=${py(hub.revision)}`
    : // a name made of the architecture and size is no folder's: the folder is left to fill in
      py(`path/to/${model && !namedBySize(model.name) ? model.name : 'model'}`);
  const text = 'text' in prompt;
  const ids = text
    ? `AutoTokenizer.from_pretrained(${from})(${py(prompt.text)}, return_tensors="pt").input_ids`
    : `torch.tensor(${prompt.tokens.length > 0 ? `[${prompt.tokens.join(', ')}]` : NO_IDS})`;
  return [
    `import torch; from transformers import AutoModelForCausalLM${text ? ', AutoTokenizer' : ''}`,
    'from dump_run import dump_run  # dump_run.py saved beside your script',
    `model = AutoModelForCausalLM.from_pretrained(${from}).eval()`,
    `dump_run(model, ${ids}, "run.safetensors", label="mine")`,
  ];
}

/**
 * The prompt as the page holds it: text, or ids typed as "3, 14, 15". A byte-level tokenizer (the embedded model's)
 * has no Hugging Face tokenizer to load: its ids are the text's UTF-8 bytes. A model without a tokenizer, or ids that
 * do not parse, take the ids of the last run of this model (`lastIds`), else none (the lines then name them as a
 * blank to fill, never an empty tensor).
 */
export function promptOf(
  prompt: string,
  mode: 'text' | 'ids',
  tokenizer: string | null,
  lastIds: readonly number[] | null,
): { text: string } | { tokens: readonly number[] } {
  if (mode === 'text' && tokenizer === 'bytes')
    return { tokens: Array.from(new TextEncoder().encode(prompt)) };
  if (mode === 'text' && tokenizer !== 'token ids only') return { text: prompt };
  const ids = prompt
    .split(/[\s,]+/)
    .filter((x) => x !== '')
    .map(Number);
  if (mode === 'ids' && ids.length > 0 && ids.every((n) => Number.isSafeInteger(n) && n >= 0))
    return { tokens: ids };
  return { tokens: lastIds ?? [] };
}
