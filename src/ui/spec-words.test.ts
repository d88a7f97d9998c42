import { describe, expect, it } from 'vitest';
import { defaultRunSpec, type RunSpec } from '../run/runspec';
import { describeSpec, faultWords, fusedWords, modelWords, promptWords } from './spec-words';

describe('a RunSpec in words', () => {
  it('names the model, the prompt as it is, the kernels and the faults', () => {
    const spec: RunSpec = {
      ...defaultRunSpec(),
      prompt: { text: '<script>alert(1)</script>' },
      fused: ['gemm', 'linear_gelu'],
      faults: [{ id: 'gelu_relu', fromLayer: 2 }, { id: 'tile_offset' }],
      seed: 7,
    };
    const lines = Object.fromEntries(describeSpec(spec).map((l) => [l.label, l.value]));
    expect(lines.Model).toBe('neox-kjv-bytes (embedded with this site)');
    expect(lines.Prompt).toBe('<script>alert(1)</script>');
    expect(lines['Fused kernels']).toBe('Tiled GEMM (dense, LM head), Linear + bias + GELU');
    expect(faultWords(spec)).toMatch(/from layer 2; .*\(layer drawn from seed 7\)$/);
    expect(fusedWords(defaultRunSpec())).toBe('all 6');
    expect(fusedWords({ ...spec, fused: [], faults: [] })).toMatch(/^none/);
  });

  it('shortens token prompts and hashes', () => {
    const spec: RunSpec = {
      ...defaultRunSpec(),
      prompt: { tokens: Array.from({ length: 20 }, (_, i) => i) },
    };
    expect(promptWords(spec)).toBe('20 token ids: 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, …');
    expect(modelWords({ kind: 'url', url: 'https://x.org/m/', sha256: 'ab'.repeat(32) })).toBe(
      'https://x.org/m/ (sha256 abababababab…)',
    );
    expect(modelWords({ kind: 'file', sha256: 'cd'.repeat(32) })).toBe(
      "a model from the sharer's disk (sha256 cdcdcdcdcdcd…)",
    );
  });

  it("names a Llama-family model's family and its kernels as the family's", () => {
    const model = { kind: 'file' as const, sha256: 'cd'.repeat(32), name: 'qwen', flavour: 'qwen2' as const };
    expect(modelWords(model)).toBe(
      "qwen (Llama family, qwen2) from the sharer's disk (sha256 cdcdcdcdcdcd…)",
    );
    const spec: RunSpec = { ...defaultRunSpec(), model, fused: ['layernorm', 'linear_gelu'] };
    expect(fusedWords(spec)).toBe('Residual add + RMSNorm, Gate/up GEMM + SwiGLU');
    expect(fusedWords({ ...defaultRunSpec(), model })).toBe(
      "all 6 switches (the Llama family's five kernels; the residual epilogue has none)",
    );
  });
});
