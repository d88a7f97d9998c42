// Writes a checkpoint as `save_pretrained` does past its shard size: tensors in their order, a new shard
// whenever the next tensor would take the current one past `shardBytes`, shards named
// `model-0000i-of-0000n.safetensors`, and `model.safetensors.index.json` with metadata.total_size and the
// weight map. For tests, the e2e stand-in Hub and fixtures.
import { BYTES_PER_ELEMENT, numElements } from './safetensors';
import { type TensorToWrite, writeSafetensors } from './safetensors-write';

export interface ShardedFiles {
  /** The index's JSON text. */
  index: string;
  /** Shard file name -> its bytes, in order. */
  shards: Map<string, Uint8Array>;
}

const pad5 = (n: number) => String(n).padStart(5, '0');

/** Splits `tensors` into shards of at most `shardBytes` of data each (a larger tensor gets a shard of its own). */
export function writeSharded(
  tensors: readonly TensorToWrite[],
  shardBytes: number,
  metadata: Record<string, string> = { format: 'pt' },
): ShardedFiles {
  const groups: TensorToWrite[][] = [];
  let size = 0;
  for (const t of tensors) {
    const bytes = numElements(t.shape) * BYTES_PER_ELEMENT[t.dtype];
    if (groups.length === 0 || (size > 0 && size + bytes > shardBytes)) {
      groups.push([]);
      size = 0;
    }
    groups[groups.length - 1].push(t);
    size += bytes;
  }
  const n = groups.length;
  const shards = new Map<string, Uint8Array>();
  const weightMap: Record<string, string> = {};
  let total = 0;
  groups.forEach((g, i) => {
    const name = `model-${pad5(i + 1)}-of-${pad5(n)}.safetensors`;
    shards.set(name, writeSafetensors(g, metadata));
    for (const t of g) {
      weightMap[t.name] = name;
      total += numElements(t.shape) * BYTES_PER_ELEMENT[t.dtype];
    }
  });
  const index = JSON.stringify({ metadata: { total_size: total }, weight_map: weightMap }, null, 2);
  return { index, shards };
}
