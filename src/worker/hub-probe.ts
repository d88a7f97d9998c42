// A Hub repository at a revision, as the page shows it before any download: the commit, the weights' sizes
// and sha256 from the Hub's listing, the parameters and GPU memory from config.json, and the refusal when the
// adapter cannot hold it (src/run/hub-api.ts does the asking, every read bounded; the signal stops a lookup the
// user moved on from).

import { manifestSha256 } from '../model/shard-index';
import type { ModelConfig } from '../numeric/types';
import { resolveHubModel } from '../run/hub-api';
import type { NetOptions } from '../run/hub-fetch';
import type { HubProbe } from './api';
import { minWeightBytes, paramsOf } from './url-model';

export async function probeHub(
  repo: string,
  revision: string,
  hubUrl: string,
  budgetBytes: number | null,
  refusalFor: (cfg: ModelConfig) => Promise<string | null>,
  net: NetOptions = {},
): Promise<HubProbe> {
  const s = await resolveHubModel(repo, revision, { hubUrl, ...net });
  const sharded = s.index !== null;
  return {
    repo: s.repo,
    revision: s.revision,
    commit: s.commit,
    url: s.url,
    family: s.cfg.family,
    flavour: s.cfg.family === 'llama' ? s.cfg.flavour : null,
    weights: s.weights,
    configBytes: s.configFile.size,
    tokenizerBytes: s.tokenizer?.size ?? null,
    sharded,
    sha256: sharded ? manifestSha256(new Map(s.weights.map((w) => [w.path, w.sha256]))) : s.weights[0].sha256,
    totalBytes: s.totalBytes,
    params: paramsOf(s.cfg),
    minGpuBytes: minWeightBytes(s.cfg),
    budgetBytes,
    refusal: await refusalFor(s.cfg),
  };
}
