// Comparison metrics, pass 2: one workgroup per range of consecutive tile records (compare_tiles.wgsl),
// folded into one job record (same layout, with the job's histogram) or one row summary
// (ROW_WORDS = 8: ssqE as Acc, ssqB as Acc, mismatched, seen). Fixed order: deterministic.

@group(0) @binding(0) var<storage, read> ranges: array<u32>;     // [ranges][RANGE_WORDS], see below
@group(0) @binding(1) var<storage, read_write> rec: array<u32>;  // records (part.wgsl)

// Range: 0 word offset of its first record, 1 records (stride REC), 2 destination word offset,
// 3 mode (0 job record, 1 row summary), 4 destination histogram word offset (NO_HIST: none).
const RANGE_WORDS: u32 = 8u;

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let lid = lid3.x;
  let r = wid.x * RANGE_WORDS;
  let src = ranges[r];
  let n = ranges[r + 1u];
  let dst = ranges[r + 2u];
  let mode = ranges[r + 3u];
  let hdst = ranges[r + 4u];

  var c = array<u32, 7>(0u, 0u, 0u, 0u, 0u, 0u, 0u);
  var max_ulp = 0u;
  var p = part_zero();
  for (var i = lid; i < n; i += WG) {
    let w = src + i * REC;
    for (var k = 0u; k < 7u; k++) { c[k] += rec[w + k]; }
    max_ulp = max(max_ulp, rec[w + 7u]);
    p = part_merge(p, part_load(w));
  }
  for (var k = 0u; k < 7u; k++) { atomicAdd(&counts[k], c[k]); }
  atomicMax(&counts[7], max_ulp);
  let total = reduce_parts(lid, p);
  if (mode == 1u) {
    if (lid == 0u) {
      acc_store(dst, total.ssq_e);
      acc_store(dst + 3u, total.ssq_b);
      rec[dst + 6u] = atomicLoad(&counts[4]);
      rec[dst + 7u] = atomicLoad(&counts[0]);
    }
    return;
  }
  if (lid < 8u) { rec[dst + lid] = atomicLoad(&counts[lid]); }
  if (lid == 0u) {
    part_store(dst, total);
    rec[dst + 26u] = hdst;
    rec[dst + 27u] = 0u;
  }
  if (hdst != NO_HIST) {
    // Bin k summed over the range's records in order (each tile of a histogram job has a histogram).
    for (var k = lid; k < HIST_BINS; k += WG) {
      var s = 0u;
      for (var i = 0u; i < n; i++) {
        let hw = rec[src + i * REC + 26u];
        if (hw != NO_HIST) { s += rec[hw + k]; }
      }
      rec[hdst + k] = s;
    }
  }
}
