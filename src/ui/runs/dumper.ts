// The four lines a person pastes into Python to dump a run of the model loaded in the page with
// tools/dump_run.py (served by the site as ./dump_run.py). Pure: the page shows them, a test reads them.
import { parseResolveUrl } from '../../run/hub';

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

/**
 * The lines: imports, the model (from the Hub at the revision the page loaded, else a local folder to fill in),
 * and one dump_run call on the page's prompt: its token ids as given, or its text through the model's own
 * tokenizer (the same tokenizer.json the page encodes with).
 */
export function dumperLines(
  model: DumperModel | null,
  prompt: { text: string } | { tokens: readonly number[] },
): string[] {
  const hub = model?.url ? parseResolveUrl(model.url) : null;
  const from = hub
    ? `${py(hub.repo)}, revision=${py(hub.revision)}`
    : py(`path/to/${model?.name ?? 'model'}`);
  const ids =
    'tokens' in prompt
      ? `torch.tensor([${prompt.tokens.join(', ')}])`
      : `AutoTokenizer.from_pretrained(${from})(${py(prompt.text)}, return_tensors="pt").input_ids`;
  return [
    'import torch; from transformers import AutoModelForCausalLM, AutoTokenizer',
    'from dump_run import dump_run  # dump_run.py saved beside your script',
    `model = AutoModelForCausalLM.from_pretrained(${from}).eval()`,
    `dump_run(model, ${ids}, "run.safetensors", label="mine")`,
  ];
}
