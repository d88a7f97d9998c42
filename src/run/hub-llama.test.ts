// The Llama-family Hub presets: valid repository ids (checked as a lookup checks them), each once, each of a
// model_type the config reader takes; and the Hub client reading a Llama-family repository of the stand-in Hub
// (e2e/hub-server.ts; each preset there is a committed HF fixture) with its family's config and sizes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LLAMA_FIXTURE_OF } from '../../e2e/hub-repos';
import { type StandIn, startHubServer } from '../../e2e/hub-server';
import { LLAMA_FLAVOURS } from '../model/llama-config';
import { llamaModelSummary } from '../model/llama-weights';
import { checkRepoId, HUB_PRESETS, LLAMA_HUB_PRESETS } from './hub';
import { resolveHubModel } from './hub-api';

let hub: StandIn;
beforeAll(async () => {
  hub = await startHubServer();
});
afterAll(async () => {
  await hub?.close();
});

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

  it.each(LLAMA_HUB_PRESETS.map((p) => [p.repo, p] as const))(
    '%s resolves with its family, flavour and sizes from the listing',
    async (repo, p) => {
      const s = await resolveHubModel(repo, 'main', { hubUrl: hub.origin });
      expect(s.cfg.family).toBe('llama');
      if (s.cfg.family !== 'llama') return;
      // the stand-in's fixture, whose model_type is not the real repository's where they differ
      expect(LLAMA_FIXTURE_OF[p.id]).toBeTruthy();
      expect(LLAMA_FLAVOURS).toContain(s.cfg.flavour);
      const w = hub.file(repo, 'model.safetensors');
      expect(s.weights).toEqual([{ path: 'model.safetensors', size: w.body.length, sha256: w.sha256 }]);
      expect(s.tokenizer).toBeNull();
      expect(llamaModelSummary(s.cfg).params).toBeGreaterThan(0);
    },
  );
});
