// Readback: copy GPU buffers into mappable staging buffers and return their contents as Float32Arrays.

export interface ReadRequest {
  src: GPUBuffer;
  offset?: number;
  bytes: number;
}

/**
 * Records copies of every request into `encoder` and returns a function that, after the encoder's command
 * buffer was submitted, maps the staging buffers and returns fresh Float32Arrays (one per request).
 */
export function recordReadback(
  device: GPUDevice,
  encoder: GPUCommandEncoder,
  requests: ReadRequest[],
): () => Promise<Float32Array[]> {
  const staging = requests.map((r) => {
    const size = Math.ceil(r.bytes / 4) * 4;
    const buf = device.createBuffer({
      size: Math.max(4, size),
      usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
      label: 'readback',
    });
    if (size > 0) encoder.copyBufferToBuffer(r.src, r.offset ?? 0, buf, 0, size);
    return { buf, size };
  });
  return async () => {
    try {
      await Promise.all(staging.map((s) => s.buf.mapAsync(GPUMapMode.READ)));
      return staging.map(
        (s) => new Float32Array(s.buf.getMappedRange(0, Math.max(4, s.size)).slice(0, s.size)),
      );
    } finally {
      for (const s of staging) s.buf.destroy();
    }
  };
}

/**
 * recordReadback into ONE staging buffer (each request copied at its own offset): one map for all of them, where a
 * map apiece would cost a wait apiece (Dawn resolves maps as it polls). Same contract and result as recordReadback.
 */
export function recordReadbackPacked(
  device: GPUDevice,
  encoder: GPUCommandEncoder,
  requests: ReadRequest[],
): () => Promise<Float32Array[]> {
  const at: { offset: number; size: number }[] = [];
  let total = 0;
  for (const r of requests) {
    const size = Math.ceil(r.bytes / 4) * 4;
    at.push({ offset: total, size });
    total += size;
  }
  const buf = device.createBuffer({
    size: Math.max(4, total),
    usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST,
    label: 'readback',
  });
  requests.forEach((r, i) => {
    if (at[i].size > 0) encoder.copyBufferToBuffer(r.src, r.offset ?? 0, buf, at[i].offset, at[i].size);
  });
  return async () => {
    try {
      await buf.mapAsync(GPUMapMode.READ);
      const all = buf.getMappedRange(0, Math.max(4, total));
      return at.map((a) => new Float32Array(all.slice(a.offset, a.offset + a.size)));
    } finally {
      buf.destroy();
    }
  };
}

/** Reads one buffer range now (submits its own copy). */
export async function readBuffer(device: GPUDevice, src: GPUBuffer, bytes: number, offset = 0) {
  const encoder = device.createCommandEncoder({ label: 'readBuffer' });
  const finish = recordReadback(device, encoder, [{ src, bytes, offset }]);
  device.queue.submit([encoder.finish()]);
  const [out] = await finish();
  return out;
}

/** Creates a storage buffer holding `data` (size rounded up to 4 bytes). */
export function uploadBuffer(
  device: GPUDevice,
  data: Float32Array | Uint32Array | Int32Array,
  label: string,
  extraUsage: GPUBufferUsageFlags = 0,
): GPUBuffer {
  const size = Math.max(16, Math.ceil(data.byteLength / 16) * 16);
  const buf = device.createBuffer({
    size,
    usage: GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC | extraUsage,
    label,
  });
  device.queue.writeBuffer(buf, 0, data.buffer, data.byteOffset, data.byteLength);
  return buf;
}
