// The Llama-family Hub presets: valid repository ids (checked as a lookup checks them), each once, each of a
// model_type the config reader takes.
import { describe, expect, it } from 'vitest';
import { LLAMA_FLAVOURS } from '../model/llama-config';
import { checkRepoId, HUB_PRESETS, LLAMA_HUB_PRESETS } from './hub';

describe('Llama-family Hub presets', () => {
  it('are valid, distinct repository ids of flavours the config reader takes, apart from the Pythia list', () => {
    const repos = LLAMA_HUB_PRESETS.map((p) => p.repo);
    expect(new Set(repos).size).toBe(repos.length);
    expect(repos).toContain('HuggingFaceTB/SmolLM2-135M');
    for (const p of LLAMA_HUB_PRESETS) {
      expect(checkRepoId(p.repo)).toBe(p.repo);
      expect(LLAMA_FLAVOURS).toContain(p.flavour);
      expect(HUB_PRESETS.some((h) => h.repo === p.repo || h.id === p.id)).toBe(false);
    }
  });
});
