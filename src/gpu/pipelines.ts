// Kernel descriptors and the pipeline cache. A kernel is its WGSL file plus one typed descriptor of its
// bindings; the bind-group layout and every bind group are derived from that descriptor.

export type BindingKind = 'uniform' | 'read' | 'rw';

export interface BindingDesc {
  name: string;
  kind: BindingKind;
}

export interface KernelDef {
  /** Stable kernel name, e.g. 'reference/layernorm'. */
  name: string;
  /** WGSL file under shaders/, e.g. 'reference/layernorm.wgsl'. */
  file: string;
  /** Shared snippets under shaders/ prepended to the file, e.g. ['common/gelu.wgsl']. */
  includes?: readonly string[];
  /** Bindings of @group(0), in @binding order. */
  bindings: readonly BindingDesc[];
}

/** Returns the WGSL text of a file under shaders/ (Vite ?raw in the browser, fs in Node). */
export type ShaderSource = (file: string) => string;

export type OverrideConstants = Record<string, number | boolean>;

/** A whole buffer, or a range of one (offsets must be multiples of minStorageBufferOffsetAlignment, 256). */
export type BufferRef = GPUBuffer | GPUBufferBinding;

function isBinding(ref: BufferRef): ref is GPUBufferBinding {
  return 'buffer' in ref;
}

export function kernelCode(def: KernelDef, source: ShaderSource): string {
  return [...(def.includes ?? []), def.file].map((f) => source(f)).join('\n');
}

/** The characters kernelCode puts before the kernel's own file (its includes, joined): maps offsets back. */
export function includesPrefix(def: KernelDef, source: ShaderSource): string {
  const inc = (def.includes ?? []).map((f) => source(f));
  return inc.length ? `${inc.join('\n')}\n` : '';
}

/** cyrb53: a 53-bit string hash as 14 hex digits (cache keys for WGSL written in the page, not security). */
export function textHash(text: string): string {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ c, 2654435761);
    h2 = Math.imul(h2 ^ c, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, '0');
}

interface Built {
  pipeline: GPUComputePipeline;
  layout: GPUBindGroupLayout;
}

export class PipelineCache {
  private modules = new Map<string, GPUShaderModule>();
  private pipelines = new Map<string, Built>();
  private layouts = new Map<string, GPUBindGroupLayout>();
  /** WGSL text that replaces a file's (a kernel written in the page), with its hash: file -> override. */
  private overrides = new Map<string, { text: string; hash: string }>();
  private readonly source: ShaderSource;

  constructor(
    private readonly device: GPUDevice,
    base: ShaderSource,
  ) {
    this.source = (file) => this.overrides.get(file)?.text ?? base(file);
  }

  get size(): number {
    return this.pipelines.size;
  }

  /**
   * Replaces the WGSL text of one file under shaders/ (null restores the shipped file). Modules and pipelines
   * are keyed by a hash of the replaced text too, so a kernel never runs a pipeline built from other text.
   */
  setOverride(file: string, text: string | null): void {
    if (text === null) this.overrides.delete(file);
    else this.overrides.set(file, { text, hash: textHash(text) });
  }

  /** The kernel's name, plus the hash of each of its files whose text is replaced. */
  private sourceKey(def: KernelDef): string {
    if (this.overrides.size === 0) return def.name;
    let key = def.name;
    for (const f of [...(def.includes ?? []), def.file]) {
      const o = this.overrides.get(f);
      if (o) key += `#${o.hash}`;
    }
    return key;
  }

  /** The pipeline for a kernel with these override constants (keyed by kernel + source hash + constants). */
  get(def: KernelDef, constants: OverrideConstants = {}): Built {
    const consts = Object.keys(constants)
      .sort()
      .map((k) => `${k}=${Number(constants[k])}`)
      .join(',');
    const key = `${this.sourceKey(def)}|${consts}`;
    let built = this.pipelines.get(key);
    if (built) return built;
    const layout = this.layoutFor(def);
    const constantValues: Record<string, number> = {};
    for (const [k, v] of Object.entries(constants)) constantValues[k] = Number(v);
    const pipeline = this.device.createComputePipeline({
      label: key,
      layout: this.device.createPipelineLayout({ bindGroupLayouts: [layout] }),
      compute: { module: this.moduleFor(def), entryPoint: 'main', constants: constantValues },
    });
    built = { pipeline, layout };
    this.pipelines.set(key, built);
    return built;
  }

  bindGroup(def: KernelDef, layout: GPUBindGroupLayout, buffers: Record<string, BufferRef>, label: string) {
    return this.device.createBindGroup({
      label,
      layout,
      entries: def.bindings.map((b, i) => {
        const buffer = buffers[b.name];
        if (!buffer) throw new Error(`${def.name}: binding '${b.name}' has no buffer (${label})`);
        return { binding: i, resource: isBinding(buffer) ? buffer : { buffer } };
      }),
    });
  }

  private moduleFor(def: KernelDef): GPUShaderModule {
    const key = this.sourceKey(def);
    let mod = this.modules.get(key);
    if (!mod) {
      mod = this.device.createShaderModule({ label: key, code: kernelCode(def, this.source) });
      this.modules.set(key, mod);
    }
    return mod;
  }

  private layoutFor(def: KernelDef): GPUBindGroupLayout {
    let layout = this.layouts.get(def.name);
    if (!layout) {
      layout = this.device.createBindGroupLayout({
        label: def.name,
        entries: def.bindings.map((b, i) => ({
          binding: i,
          visibility: GPUShaderStage.COMPUTE,
          buffer: {
            type: b.kind === 'uniform' ? 'uniform' : b.kind === 'read' ? 'read-only-storage' : 'storage',
          },
        })),
      });
      this.layouts.set(def.name, layout);
    }
    return layout;
  }
}
