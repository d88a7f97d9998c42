// A Llama-family forward whose slots stay on the GPU (llama-reference.ts, llama-fused.ts with `keep`): recorded and
// submitted, not waited for, nothing read back. The two-path compare (compare/family-compare.ts) hands these buffers
// to the exact side, the local re-runs and the GPU metrics as they lie, and reads back only what its report needs
// (read). The buffers are the run's until release().
import { recordReadbackPacked } from '../gpu/readback';
import type { HiddenDump } from '../numeric/types';

/** One slot of a kept forward: its buffer and how many f32 values of it are the slot's. */
export interface KeptSlot {
  buf: GPUBuffer;
  floats: number;
}

export class KeptRun {
  private released = false;

  constructor(
    private readonly device: GPUDevice,
    readonly T: number,
    readonly d: number,
    readonly V: number,
    readonly numLayers: number,
    /** Every slot kept, under the registry's names (`embed`, `layers.{i}.{slot}`, `final_norm`, `logits`). */
    readonly slots: ReadonlyMap<string, KeptSlot>,
    private readonly owned: readonly GPUBuffer[],
  ) {}

  /** A slot by name, or null where the forward did not keep it. */
  get(name: string): KeptSlot | null {
    return this.slots.get(name) ?? null;
  }

  /** The slot by name; a missing one is one line. */
  need(name: string): KeptSlot {
    const s = this.slots.get(name);
    if (!s) throw new Error(`kept forward: no slot '${name}'`);
    return s;
  }

  /** The dump's names in its order: `embed`, each layer's `out`, `final_norm`, `logits`. */
  dumpNames(): string[] {
    return [
      'embed',
      ...Array.from({ length: this.numLayers }, (_, i) => `layers.${i}.out`),
      'final_norm',
      'logits',
    ];
  }

  /** Layer i's input, the residual stream before it: the embeddings for layer 0, else layer i − 1's output. */
  layerInput(i: number): KeptSlot {
    return this.need(i === 0 ? 'embed' : `layers.${i - 1}.out`);
  }

  /** The named slots read back in one submit and one map (after every submit before it). */
  async read(names: readonly string[]): Promise<Map<string, Float32Array>> {
    if (this.released) throw new Error('kept forward: read after release');
    const reqs = names.map((n) => this.need(n));
    const enc = this.device.createCommandEncoder({ label: 'kept forward read' });
    const finish = recordReadbackPacked(
      this.device,
      enc,
      reqs.map((r) => ({ src: r.buf, bytes: r.floats * 4 })),
    );
    this.device.queue.submit([enc.finish()]);
    const got = await finish();
    return new Map(names.map((n, i) => [n, got[i]] as const));
  }

  /** The dump read back (bisection's baseline, the CPU oracle's layer inputs). */
  async readDump(): Promise<HiddenDump<Float32Array>> {
    const names = this.dumpNames();
    const m = await this.read(names);
    const get = (n: string) => m.get(n) as Float32Array;
    return {
      T: this.T,
      d: this.d,
      V: this.V,
      embeddings: get('embed'),
      layers: names.slice(1, 1 + this.numLayers).map(get),
      finalNorm: get('final_norm'),
      logits: get('logits'),
    };
  }

  /** Frees the run's buffers (any number of times; work already submitted that reads them still completes). */
  release(): void {
    if (this.released) return;
    this.released = true;
    for (const b of this.owned) b.destroy();
  }
}
