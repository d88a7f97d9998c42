// What a URL or Hub model of the Llama family costs before its download (url-model.ts): its parameters and the GPU
// memory both paths take (fp32 weights for each), and the budget's one line, from config.json alone.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { llamaModelSummary } from '../model/llama-weights';
import { parseModelConfigText } from '../model/model-config';
import { budgetRefusal, minWeightBytes, paramsOf } from './url-model';

const cfg = parseModelConfigText(readFileSync('src/model/testdata/llama/qwen2-bias/config.json', 'utf8'));

describe('a Llama-family model before its download', () => {
  it("counts its own parameters and both paths' fp32 weights, and says the budget in one line", () => {
    if (cfg.family !== 'llama') throw new Error('the fixture is not of the Llama family');
    const { params, bytesF32 } = llamaModelSummary(cfg);
    expect(paramsOf(cfg)).toBe(params);
    expect(minWeightBytes(cfg)).toBe(2 * bytesF32);
    expect(budgetRefusal(cfg, 2 * bytesF32)).toBeNull();
    const line = budgetRefusal(cfg, 2 * bytesF32 - 1);
    expect(line).toMatch(/^the model needs at least .* \(fp32, both paths\), more than the .* budget/);
    expect(line).not.toContain('\n');
  });
});
