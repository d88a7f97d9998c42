// Causal softmax over each row of the scores, in f32: p[h, i, j] = exp(s[h,i,j] - max) / sum for j <= i,
// 0 for j > i. s, p: [H, T, T]. One workgroup per (h, i) row; max and sum are tree reductions.
// Positions (KV-cache decoding): row i is the query at position p0 + i, rows are Tk = p0 + T long and cover
// columns j <= p0 + i. A whole forward is p0 = 0. A row's arithmetic depends only on its position.
// WINDOW > 0 (a sliding window, the Llama family's Mistral): row i covers columns p0 + i + 1 - WINDOW .. p0 + i
// only (the others 0); the default 0 is GPT-NeoX's kernel, bit for bit.

struct Params { T: u32, rows: u32, p0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> s: array<f32>;       // [H, T, Tk], Tk = p0 + T
@group(0) @binding(2) var<storage, read_write> p: array<f32>; // [H, T, Tk]

override WG: u32 = 128;
override WINDOW: u32 = 0u;

/** The first column a row of n causal columns covers. */
fn first_col(n: u32) -> u32 {
  return select(0u, n - WINDOW, WINDOW > 0u && n > WINDOW);
}
var<workgroup> red: array<f32, WG>;

// CPU adapters (SwiftShader): PLAIN gives each thread a whole row (row = its global index; the launcher sizes the
// grid) and no barrier. It keeps the workgroup's arithmetic exactly: PLAIN_LANES lanes (the workgroup's WG, 128)
// each reduce columns lane, lane + 128, … in order, then the lanes are combined in the same tree, so the max, the
// sum and every output are the tiled kernel's bits.
override PLAIN: bool = false;
const PLAIN_LANES: u32 = 128u;

/** Row `row` of the causal softmax by one thread, in the workgroup's order of operations. */
fn plain_row(row: u32) {
  let T = params.T;
  let Tk = params.p0 + T;
  let i = row % T;
  let base = row * Tk;
  let n = params.p0 + i + 1u;
  let j0 = first_col(n);
  var lanes: array<f32, PLAIN_LANES>;
  for (var l = 0u; l < PLAIN_LANES; l++) {
    var m = bitcast<f32>(0xff7fffffu); // -FLT_MAX
    for (var j = j0 + l; j < n; j += PLAIN_LANES) { m = max(m, s[base + j]); }
    lanes[l] = m;
  }
  for (var st = PLAIN_LANES / 2u; st > 0u; st = st / 2u) {
    for (var l = 0u; l < st; l++) { lanes[l] = max(lanes[l], lanes[l + st]); }
  }
  let rowmax = lanes[0];
  for (var l = 0u; l < PLAIN_LANES; l++) {
    var sum = 0.0;
    for (var j = j0 + l; j < n; j += PLAIN_LANES) { sum += exp(s[base + j] - rowmax); }
    lanes[l] = sum;
  }
  for (var st = PLAIN_LANES / 2u; st > 0u; st = st / 2u) {
    for (var l = 0u; l < st; l++) { lanes[l] = lanes[l] + lanes[l + st]; }
  }
  let inv = 1.0 / lanes[0];
  for (var j = 0u; j < Tk; j++) {
    var out = 0.0;
    if (j >= j0 && j < n) { out = exp(s[base + j] - rowmax) * inv; }
    p[base + j] = st(out);
  }
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u,
        @builtin(num_workgroups) nwg: vec3u) {
  if (PLAIN) {
    let r = (wid.x + wid.y * nwg.x) * WG + lid3.x;
    if (r < params.rows) { plain_row(r); }
    return;
  }
  let row = wid.x + wid.y * nwg.x; // h * T + i
  if (row >= params.rows) { return; } // uniform per workgroup
  let lid = lid3.x;
  let T = params.T;
  let Tk = params.p0 + T;
  let i = row % T;
  let base = row * Tk;
  let n = params.p0 + i + 1u; // causal: columns 0 .. p0 + i
  let j0 = first_col(n); // a window: columns j0 .. p0 + i
  var m = bitcast<f32>(0xff7fffffu); // -FLT_MAX
  for (var j = j0 + lid; j < n; j += WG) { m = max(m, s[base + j]); }
  red[lid] = m;
  workgroupBarrier();
  for (var st = WG / 2u; st > 0u; st = st / 2u) {
    if (lid < st) { red[lid] = max(red[lid], red[lid + st]); }
    workgroupBarrier();
  }
  let rowmax = red[0];
  workgroupBarrier();
  var sum = 0.0;
  for (var j = j0 + lid; j < n; j += WG) { sum += exp(s[base + j] - rowmax); }
  red[lid] = sum;
  workgroupBarrier();
  for (var st = WG / 2u; st > 0u; st = st / 2u) {
    if (lid < st) { red[lid] = red[lid] + red[lid + st]; }
    workgroupBarrier();
  }
  let inv = 1.0 / red[0];
  for (var j = lid; j < Tk; j += WG) {
    var out = 0.0;
    if (j >= j0 && j < n) { out = exp(s[base + j] - rowmax) * inv; }
    p[base + j] = st(out);
  }
}
