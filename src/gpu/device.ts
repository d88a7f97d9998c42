// Adapter and device acquisition: asks for the limits the engine needs (up to what the adapter offers),
// enables the optional features it can use, and turns device loss into a clear error.

export interface GpuFeatures {
  shaderF16: boolean;
  subgroups: boolean;
  timestampQuery: boolean;
}

export interface AdapterSummary {
  vendor: string;
  architecture: string;
  device: string;
  description: string;
  /** Every feature the adapter offers (sorted). */
  features: string[];
  /** The limits that matter to this engine, as granted on the device. */
  limits: Record<string, number>;
}

/** Limits the engine raises to the adapter's maximum (or to a cap the caller sets). */
export const LIMITS_WE_USE = [
  'maxStorageBufferBindingSize',
  'maxBufferSize',
  'maxComputeWorkgroupStorageSize',
  'maxComputeInvocationsPerWorkgroup',
  'maxComputeWorkgroupSizeX',
  'maxComputeWorkgroupSizeY',
  'maxComputeWorkgroupsPerDimension',
  'maxStorageBuffersPerShaderStage',
] as const;
export type LimitName = (typeof LIMITS_WE_USE)[number];

export interface AcquireOptions {
  powerPreference?: GPUPowerPreference;
  /** Cap requested limits below the adapter's (tests use this to force splitting). */
  limitCaps?: Partial<Record<LimitName, number>>;
  /** Features to leave off even when the adapter has them (e.g. to test the emulated f16 path). */
  disableFeatures?: GPUFeatureName[];
}

export class GpuUnavailableError extends Error {
  override name = 'GpuUnavailableError';
}

export class DeviceLostError extends Error {
  override name = 'DeviceLostError';
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(`GPU device lost (${reason}): ${message || 'no message'}`);
  }
}

export interface GpuContext {
  device: GPUDevice;
  adapter: AdapterSummary;
  features: GpuFeatures;
  /**
   * Lanes per subgroup where the device has the `subgroups` feature and the adapter reports one fixed size
   * (GPUAdapterInfo's subgroupMinSize = subgroupMaxSize: 32 on NVIDIA, 4 on SwiftShader), else null.
   */
  subgroupSize: number | null;
  /** Resolves when the device is lost (also after destroy()). */
  lost: Promise<DeviceLostError>;
  /** The loss, once it happened. */
  lostError(): DeviceLostError | null;
}

export async function acquireGpu(
  gpu: GPU | undefined | null,
  opts: AcquireOptions = {},
): Promise<GpuContext> {
  if (!gpu) throw new GpuUnavailableError('WebGPU is not available (navigator.gpu is missing).');
  const adapter = await gpu.requestAdapter({ powerPreference: opts.powerPreference ?? 'high-performance' });
  if (!adapter) throw new GpuUnavailableError('WebGPU is present but no GPU adapter was found.');
  const requiredLimits: Record<string, number> = {};
  for (const name of LIMITS_WE_USE) {
    const offered = adapter.limits[name] as number;
    const cap = opts.limitCaps?.[name];
    requiredLimits[name] = cap === undefined ? offered : Math.min(offered, cap);
  }
  // maxBufferSize must not be below the binding size we ask for.
  requiredLimits.maxBufferSize = Math.max(
    Math.min(adapter.limits.maxBufferSize, requiredLimits.maxBufferSize),
    Math.min(requiredLimits.maxStorageBufferBindingSize, adapter.limits.maxBufferSize),
  );
  const off = new Set(opts.disableFeatures ?? []);
  const want: GPUFeatureName[] = ['shader-f16', 'timestamp-query', 'subgroups'];
  const requiredFeatures = want.filter((f) => adapter.features.has(f) && !off.has(f));
  const device = await adapter.requestDevice({ requiredLimits, requiredFeatures });
  let lostErr: DeviceLostError | null = null;
  const lost = device.lost.then((info) => {
    lostErr = new DeviceLostError(info.reason, info.message);
    return lostErr;
  });
  const info = adapter.info;
  const limits: Record<string, number> = {};
  for (const name of LIMITS_WE_USE) limits[name] = device.limits[name] as number;
  return {
    device,
    adapter: {
      vendor: info?.vendor ?? '',
      architecture: info?.architecture ?? '',
      device: info?.device ?? '',
      description: info?.description ?? '',
      features: [...adapter.features].map(String).sort(),
      limits,
    },
    features: {
      shaderF16: device.features.has('shader-f16'),
      subgroups: device.features.has('subgroups'),
      timestampQuery: device.features.has('timestamp-query'),
    },
    subgroupSize: fixedSubgroupSize(device, info),
    lost,
    lostError: () => lostErr,
  };
}

/** The device's subgroup size when it has subgroups of one fixed size (see GpuContext.subgroupSize). */
function fixedSubgroupSize(device: GPUDevice, info: GPUAdapterInfo | undefined): number | null {
  const min = info?.subgroupMinSize;
  const max = info?.subgroupMaxSize;
  if (!device.features.has('subgroups') || !min || min !== max) return null;
  return min;
}
