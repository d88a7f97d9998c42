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

interface Built {
  pipeline: GPUComputePipeline;
  layout: GPUBindGroupLayout;
}

export class PipelineCache {
  private modules = new Map<string, GPUShaderModule>();
  private pipelines = new Map<string, Built>();
  private layouts = new Map<string, GPUBindGroupLayout>();

  constructor(
    private readonly device: GPUDevice,
    private readonly source: ShaderSource,
  ) {}

  get size(): number {
    return this.pipelines.size;
  }

  /** The pipeline for a kernel with these override constants (keyed by kernel + sorted constants). */
  get(def: KernelDef, constants: OverrideConstants = {}): Built {
    const consts = Object.keys(constants)
      .sort()
      .map((k) => `${k}=${Number(constants[k])}`)
      .join(',');
    const key = `${def.name}|${consts}`;
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
    let mod = this.modules.get(def.name);
    if (!mod) {
      mod = this.device.createShaderModule({ label: def.name, code: kernelCode(def, this.source) });
      this.modules.set(def.name, mod);
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
