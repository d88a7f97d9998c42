import { describe, expect, it } from 'vitest';
import { FUSED_KERNELS } from '../../state/kernel-catalog';
import { aboveFloor, bandOf, carrierOf, kernelOfOp, kernelOfTap, timeGroups } from './kernels';

const ALL = FUSED_KERNELS.map((k) => k.id);

describe('which fused kernel replaced an op', () => {
  it('follows the kernels’ declarations, only for kernels switched on', () => {
    expect(kernelOfOp('attn_out', ALL)?.id).toBe('gemm');
    expect(kernelOfOp('gelu', ALL)?.id).toBe('linear_gelu');
    expect(kernelOfOp('fc1', ALL)?.id).toBe('linear_gelu');
    expect(kernelOfOp('gelu', ['gemm'])).toBeNull();
    expect(kernelOfOp('embed', ALL)).toBeNull();
  });
  it('q, k and v belong to the QKV + rotary kernel', () => {
    expect(kernelOfTap('q', ALL)?.id).toBe('qkv_rotary');
    expect(kernelOfTap('v', ALL)?.id).toBe('qkv_rotary');
    expect(kernelOfTap('q', ['gemm'])).toBeNull();
  });
  it('a fused-away op’s error shows in the next op written out', () => {
    const c = (op: string) => ({ op, status: 'compared' as const });
    const a = (op: string) => ({ op, status: 'fused-away' as const });
    const taps = [
      c('ln1'),
      a('qkv'),
      c('q'),
      a('scores'),
      a('probs'),
      c('ctx'),
      a('fc1'),
      c('gelu'),
      a('mlp_out'),
    ];
    expect(carrierOf(taps, 1)).toBe('q');
    expect(carrierOf(taps, 3)).toBe('ctx');
    expect(carrierOf(taps, 4)).toBe('ctx');
    expect(carrierOf(taps, 6)).toBe('gelu');
    expect(carrierOf(taps, 8)).toBeNull();
  });
});

describe('how far above its own floor', () => {
  it('ratio and band', () => {
    expect(aboveFloor(2e-6, 1e-7)).toBeCloseTo(20);
    expect(aboveFloor(0, 0)).toBe(0);
    expect(aboveFloor(1e-9, 0)).toBe(Number.POSITIVE_INFINITY);
    expect(aboveFloor(Number.NaN, 1)).toBeNaN();
    expect(bandOf(0.5, 10)).toBe('floor');
    expect(bandOf(1, 10)).toBe('floor');
    expect(bandOf(3, 10)).toBe('above');
    expect(bandOf(1e7, 10)).toBe('far');
    expect(bandOf(Number.POSITIVE_INFINITY, 10)).toBe('far');
    expect(bandOf(Number.NaN, 10)).toBe('nonfinite');
  });
});

describe('time groups', () => {
  const reference = {
    embed: 5,
    ln1: 10,
    ln2: 10,
    qkv: 40,
    rotary: 6,
    scores: 20,
    probs: 8,
    ctx: 20,
    attn_out: 30,
    logits: 50,
  };
  it('each fused kernel beside the reference ops it replaced; GEMM dispatches keep op names', () => {
    const fused = { embed: 5, layernorm: 12, qkv_rotary: 30, flash_attention: 25, attn_out: 15, logits: 20 };
    const g = timeGroups(reference, fused, ['layernorm', 'qkv_rotary', 'flash_attention', 'gemm']);
    const by = Object.fromEntries(g.map((x) => [x.kernel?.id ?? 'shared', x]));
    expect(by.flash_attention.fusedNs).toBe(25);
    expect(by.flash_attention.replaced.map((r) => r.op)).toEqual(['scores', 'probs', 'ctx']);
    expect(by.flash_attention.referenceNs).toBe(48);
    expect(by.gemm.fusedNs).toBe(35);
    expect(by.gemm.referenceNs).toBe(80);
    expect(by.layernorm.replaced.map((r) => r.op)).toEqual(['ln1', 'ln2']);
    expect(by.shared.replaced).toEqual([{ op: 'embed', ns: 5 }]);
    expect(by.shared.fusedNs).toBe(5);
    // Nothing counted twice, nothing lost.
    const refSum = g.reduce((a, x) => a + x.referenceNs, 0);
    const fusedSum = g.reduce((a, x) => a + x.fusedNs, 0);
    expect(refSum).toBe(Object.values(reference).reduce((a, b) => a + b, 0));
    expect(fusedSum).toBe(Object.values(fused).reduce((a, b) => a + b, 0));
  });
  it('with no fused kernels everything is shared', () => {
    const g = timeGroups(reference, reference, []);
    expect(g).toHaveLength(1);
    expect(g[0].kernel).toBeNull();
  });
});
