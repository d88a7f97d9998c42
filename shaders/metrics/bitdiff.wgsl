// Bitwise difference of two buffers, u32 by u32 (determinism checks: any differing bit is a finding).
// One workgroup per tile; each job's slot holds (count of differing words, 0xffffffff − first differing
// index, 0 when none), reduced with atomics (the slots start at 0).

@group(0) @binding(0) var<storage, read> a: array<u32>;                    // [*] (the group's range)
@group(0) @binding(1) var<storage, read> b: array<u32>;                    // [*]
@group(0) @binding(2) var<storage, read> tiles: array<u32>;                // [tiles][TILE_WORDS]
@group(0) @binding(3) var<storage, read_write> slots: array<atomic<u32>>;  // [*][2] (the records buffer)

// Tile: 0 a word offset, 1 b word offset, 2 words, 3 index of the tile's first word in its job,
// 4 word offset of the job's slot.
const TILE_WORDS: u32 = 8u;

override WG: u32 = 128;
var<workgroup> found: atomic<u32>;
var<workgroup> first: atomic<u32>;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let lid = lid3.x;
  let t = wid.x * TILE_WORDS;
  let a0 = tiles[t];
  let b0 = tiles[t + 1u];
  let count = tiles[t + 2u];
  let base = tiles[t + 3u];
  let slot = tiles[t + 4u];
  var n = 0u;
  var lowest = 0xffffffffu;
  for (var i = lid; i < count; i += WG) {
    if (a[a0 + i] != b[b0 + i]) {
      n += 1u;
      lowest = min(lowest, i);
    }
  }
  if (n > 0u) {
    atomicAdd(&found, n);
    atomicMax(&first, 0xffffffffu - (base + lowest));
  }
  workgroupBarrier();
  if (lid == 0u) {
    let f = atomicLoad(&found);
    if (f > 0u) {
      atomicAdd(&slots[slot], f);
      atomicMax(&slots[slot + 1u], atomicLoad(&first));
    }
  }
}
