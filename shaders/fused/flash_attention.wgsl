// Flash attention: causal scaled dot-product attention in one pass, no T×T matrix in global memory.
//   ctx[i, h*hd + e] = Σ_{j<=i} softmax_j(q[h,i]·k[h,j] · scale) · v[h, j, e]
// q, k, v: [H, T, hd] (rotary applied), ctx: [T, H*hd] (heads merged, like reference/attn_values).
//
// One workgroup per (head, query tile of BQ rows): workgroup x = head, y = query tile, the last (longest)
// tiles first. One query row per thread column: thread (r, g), r < BQ (workgroup_size x), g < G = BK / KC
// (y). Row i = q0 + r keeps its q row and its output accumulators in registers (vec4s; wide heads below). The keys are cut into
// chunks of KC = 8 (chunk n = keys 8n .. 8n + 7); the G threads of a row split them, thread g taking the
// chunks n ≡ g (mod G), each in increasing order. For each tile of BK = G·KC keys up to the diagonal (tiles
// wholly above it are never visited):
//   1. the K and V tiles are staged in `kv` (vec4 rows; keys past T and dims past hd are zeros);
//                                                                         barrier (FAULT_NO_BARRIER drops it)
//   2. thread (r, g) takes chunk g of the tile, if row i sees any of its keys: the KC scores
//      s = q_i·k_j · scale (j > i masked), one online-softmax step for the chunk: m_new = max(m, chunk max);
//      when the max grows, l and the accumulators are rescaled by exp(m − m_new); p_j = exp(s_j − m_new);
//      l += Σ p_j, o += Σ p_j v_j;                                                                   barrier
// Then the G partial states (m, l, o) of a row are merged into thread g = 0 in order g = 1 .. G−1, through
// `kv`, as one more online-softmax step each (the running state is rescaled when a partial's max is larger;
// the partial is scaled by exp(m_g − m_new)). At the end ctx[i, h*hd + e] = st(o / l).
//
// Every row's arithmetic (which chunks, in which order, merged in which order) depends only on i and G, never
// on BQ or on where the row falls in its tile: results are bit-identical for any BQ (the analysis re-runs with
// another BQ to expose races). FAULT_NO_RESCALE skips the rescales of the running state, so it is exact while
// a row has one chunk (T <= KC = 8) and wrong once a later chunk raises the running max.
//
// Positions (KV-cache decoding): the T query rows of a dispatch are the tokens at positions p0 .. p0 + T − 1
// (row i above is a position), q is [H, T, hd], k and v are [H, KT, hd] (the cache) of which keys
// 0 .. p0 + T − 1 are read, ctx is [T, H*hd]. A whole forward is p0 = 0, KT = T. Query tiles start at p0; since
// a row's arithmetic depends only on its position, a decoded row is bit-identical to that row of a whole
// forward (masked keys past the row contribute exact zeros either way; they are future tokens there and zeros
// here, so only a non-finite future value could tell them apart).
//
// Wide heads (hd > 128): the output accumulators of a row stay in registers only up to HD4_CAP = 32 vec4s
// (128 dims). Above that the row's output dims are cut into NPASS passes of OC4 = ceil(HD4 / NPASS) vec4s:
// pass n recomputes the scores and the online softmax of the row from scratch (the same arithmetic in every
// pass) and accumulates only the output dims 4·OC4·n .. 4·OC4·(n + 1) − 1, so each output element gets exactly
// the arithmetic a single pass would give it. The K tile is staged whole ([BK, HD4]), the V tile only for the
// pass's dims ([BK, OC4]). With Q_REGS false the q row is read from global memory (cached) for every score
// instead of being held in registers (needed when HD4 > HD4_CAP). The launcher sets NPASS = ceil(HD4 / 32) and
// Q_REGS = HD4 <= 32: hd <= 128 is one pass with q in registers (the arithmetic and the bits of before), hd
// 129..256 two passes with q read from memory, BK = 8 (G = 1: K + V tiles of 8·(64 + 32) vec4s = 12 KiB).
//
// The Llama family: KV_GROUP > 1 is grouped-query attention (k and v are [H / KV_GROUP, KT, hd]; query head h
// reads KV head h / KV_GROUP, HF's repeat_kv); WINDOW > 0 a sliding window (key j visible to the row at position
// i iff j <= i and i - j < WINDOW: a chunk wholly before the window adds p = 0 and leaves the state as it was).
// The defaults (1, 0) are GPT-NeoX's kernel, bit for bit. Teaching fault: FAULT_KV_INTERLEAVED maps query head h
// to KV head h % (H / KV_GROUP) — repeat_interleave's order instead of repeat_kv's — which is right for MHA and
// MQA and wrong for every other grouping.
//
// Limits: hd <= MAX_HD <= 256 (the launcher sets MAX_HD = hd; HD4 = ceil(MAX_HD / 4) vec4s per row, OC4 <= 32 in
// registers). Workgroup storage: 16·max(BK·(HD4 + OC4), G > 1 ? BQ·(OC4 + 1) : 0) bytes (16 KiB with BQ = BK =
// 32, hd = 64; default limit 16 KiB); BQ·G invocations (limit 256). The launcher checks both.
//
// Measured (H200, Dawn/Vulkan, hd 64, defaults BQ = BK = 32): H=8 T=512 0.039–0.043 ms (the three reference
// kernels 0.131–0.134 ms; the previous 8-key-tile kernel 0.354 ms), H=16 T=512 0.056 ms (0.243), H=8 T=128
// 0.020 ms (0.023). The register prefetch is worth ~40% at T=512.
//
// Precision (common/precision.wgsl): acc() after every accumulate step (each product added to a score, l, the
// output accumulators, every rescale and merge), st() on what is written to ctx.

struct Params { T: u32, hd: u32, H: u32, scale: f32, p0: u32, KT: u32, _pad0: u32, _pad1: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> q: array<f32>;         // [H, T, hd]
@group(0) @binding(2) var<storage, read> k: array<f32>;         // [H / KV_GROUP, KT, hd]
@group(0) @binding(3) var<storage, read> v: array<f32>;         // [H / KV_GROUP, KT, hd]
@group(0) @binding(4) var<storage, read_write> ctx: array<f32>; // [T, H*hd]

override BQ: u32 = 32u; // query rows per workgroup (workgroup_size x), one per thread column
override BK: u32 = 32u; // keys per staged tile: a multiple of KC; G = BK / KC threads per row (workgroup_size y)
// Register prefetch of the next K/V tile during the current one (when it fits PF_CAP vec4s per thread).
override PREFETCH: bool = true;
// Fault switches (for the divergence explorer's demos; both off in normal runs).
override FAULT_NO_RESCALE: bool = false; // skip rescaling l and the accumulators when the max grows
override FAULT_NO_BARRIER: bool = false; // drop the barrier between staging a K/V tile and reading it
override FAULT_KV_INTERLEAVED: bool = false; // query head h reads KV head h % KV heads instead of h / KV_GROUP
override KV_GROUP: u32 = 1u; // query heads per KV head (grouped-query attention)
override WINDOW: u32 = 0u;   // sliding window (0: none)

override MAX_HD: u32 = 128u; // widest row: the launcher sets head_dim (<= 256)
override NPASS: u32 = 1u;     // passes over the output dims (ceil(HD4 / NPASS) <= HD4_CAP each)
override Q_REGS: bool = true; // the q row in registers (HD4 <= HD4_CAP), else read from memory per score

const KC: u32 = 8u;       // keys per online-softmax step (chunk)
const HD4_CAP: u32 = 32u; // vec4s of a row in registers: 128 dims
const PF_CAP: u32 = 8u;   // prefetched vec4s per thread and operand
const NEG: f32 = -1.0e30; // running max before any key (finite: exp(NEG - m) is never evaluated)

override HD4: u32 = (MAX_HD + 3u) / 4u; // vec4s per staged K row (dims past hd are zeros)
override OC4: u32 = (HD4 + NPASS - 1u) / NPASS; // output vec4s per pass (and per staged V row)
override G: u32 = BK / KC;              // threads per query row
override NTHREADS: u32 = BQ * G;
override PF_N: u32 = (BK * HD4 + NTHREADS - 1u) / NTHREADS; // staged vec4s per thread and operand
override USE_PF: bool = PREFETCH && NPASS == 1u && PF_N <= PF_CAP;
override KV_LEN: u32 = max(BK * (HD4 + OC4), select(0u, BQ * (OC4 + 1u), G > 1u));

// [BK, HD4] K tile then [BK, OC4] V tile; for the merge: [BQ] (m, l, -, -) then [OC4, BQ] accumulators.
var<workgroup> kv: array<vec4f, KV_LEN>;

fn acc4(x: vec4f) -> vec4f {
  return vec4f(acc(x.x), acc(x.y), acc(x.z), acc(x.w));
}

/** q[off + e .. off + e + 3], zeros from hd on (k4 and v4 likewise, beside the fetches that use them). */
fn q4(off: u32, e: u32, hd: u32) -> vec4f {
  var x = vec4f(0.0);
  for (var c = 0u; c < 4u; c++) { if (e + c < hd) { x[c] = q[off + e + c]; } }
  return x;
}

/** Whether key j is visible to the row at position i (causal, and inside the window when there is one). */
fn visible(j: u32, i: u32) -> bool {
  return j <= i && (WINDOW == 0u || i - j < WINDOW);
}

/** Keys this dispatch may read: 0 .. p0 + T − 1. */
fn key_count() -> u32 {
  return params.p0 + params.T;
}

fn k4(off: u32, e: u32, hd: u32) -> vec4f {
  var x = vec4f(0.0);
  for (var c = 0u; c < 4u; c++) { if (e + c < hd) { x[c] = k[off + e + c]; } }
  return x;
}

/** Staged element x of the tile at key j0: vec4 x % HD4 of key j0 + x / HD4 (zeros past the last key). */
fn fetch_k(base: u32, j0: u32, x: u32) -> vec4f {
  let j = j0 + x / HD4;
  if (j >= key_count()) { return vec4f(0.0); }
  return k4(base + j * params.hd, (x % HD4) * 4u, params.hd);
}

fn v4(off: u32, e: u32, hd: u32) -> vec4f {
  var x = vec4f(0.0);
  for (var c = 0u; c < 4u; c++) { if (e + c < hd) { x[c] = v[off + e + c]; } }
  return x;
}

/** Staged V element x of the tile at key j0 for the pass whose first vec4 is c0: vec4 c0 + x % OC4 of key
 *  j0 + x / OC4 (zeros past the last key and past hd). */
fn fetch_v(base: u32, j0: u32, x: u32, c0: u32) -> vec4f {
  let j = j0 + x / OC4;
  if (j >= key_count()) { return vec4f(0.0); }
  return v4(base + j * params.hd, (c0 + x % OC4) * 4u, params.hd);
}

@compute @workgroup_size(BQ, G)
fn main(@builtin(local_invocation_id) lid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let Tk = key_count(); // keys 0 .. Tk - 1: the last query row's position + 1
  let hd = params.hd;
  let H = params.H;
  let h = wid.x;
  let tiles = (params.T + BQ - 1u) / BQ;
  if (h >= H || wid.y >= tiles) { return; } // uniform per workgroup
  let r = lid.x; // query row in the tile
  let g = lid.y; // this thread takes the chunks n ≡ g (mod G)
  let tid = g * BQ + r;
  let q0 = params.p0 + (tiles - 1u - wid.y) * BQ; // longest tiles first
  let i = q0 + r; // this thread's query row: its position
  let live = i < Tk;
  let kvh = select(h / KV_GROUP, h % (H / KV_GROUP), FAULT_KV_INTERLEAVED); // its KV head
  let base = kvh * params.KT * hd; // KV head kvh in k, v
  let qrow = (h * params.T + i - params.p0) * hd; // q[h, i - p0, :]

  var qr: array<vec4f, HD4_CAP>; // q[h, i - p0, :] (Q_REGS; zeros past hd and for rows past the last)
  var o: array<vec4f, HD4_CAP>;  // running Σ exp(s - m) · v[j, c0 .. c0 + OC4) (zero-initialised per pass)
  if (Q_REGS && live) {
    for (var e4 = 0u; e4 < HD4; e4++) { qr[e4] = q4(qrow, e4 * 4u, hd); }
  }

  for (var ps = 0u; ps < NPASS; ps++) { // each pass: the whole key loop for output vec4s c0 .. c0 + OC4 - 1
    let c0 = ps * OC4; // this pass's first output vec4
    if (ps > 0u) {
      for (var e4 = 0u; e4 < OC4; e4++) { o[e4] = vec4f(0.0); }
    }
    var m = NEG; // running max of this thread's scores of row i
    var l = 0.0; // running Σ exp(s - m)

    var kp: array<vec4f, PF_CAP>; // prefetched K/V tile elements (USE_PF: one pass, OC4 = HD4)
    var vp: array<vec4f, PF_CAP>;
    if (USE_PF) {
      for (var n = 0u; n < PF_N; n++) {
        let x = tid + n * NTHREADS;
        if (x < BK * HD4) {
          kp[n] = fetch_k(base, 0u, x);
          vp[n] = fetch_v(base, 0u, x, 0u);
        }
      }
    }

    let kEnd = min(Tk, q0 + BQ); // causal: the tile's last row sees keys < kEnd; later tiles are skipped
    for (var j0 = 0u; j0 < kEnd; j0 += BK) {
      // 1. K and V tiles (every read of the previous tile happened before the barrier that ended it).
      if (USE_PF) {
        for (var n = 0u; n < PF_N; n++) {
          let x = tid + n * NTHREADS;
          if (x < BK * HD4) {
            kv[x] = kp[n];
            kv[BK * HD4 + x] = vp[n];
          }
        }
      } else {
        for (var x = tid; x < BK * HD4; x += NTHREADS) { kv[x] = fetch_k(base, j0, x); }
        for (var x = tid; x < BK * OC4; x += NTHREADS) { kv[BK * HD4 + x] = fetch_v(base, j0, x, c0); }
      }
      if (!FAULT_NO_BARRIER) { workgroupBarrier(); } // an override condition: uniform
      if (USE_PF && j0 + BK < kEnd) {
        for (var n = 0u; n < PF_N; n++) {
          let x = tid + n * NTHREADS;
          if (x < BK * HD4) {
            kp[n] = fetch_k(base, j0 + BK, x);
            vp[n] = fetch_v(base, j0 + BK, x, 0u);
          }
        }
      }

      // 2. This thread's chunk: keys jc .. jc + KC - 1 (all < Tk when jc <= i < Tk).
      let jc = j0 + g * KC;
      if (live && jc <= i) {
        let kb = g * KC * HD4;          // the chunk's first K row in kv
        let vb = BK * HD4 + g * KC * OC4; // and V row
        // Explicitly zeroed: Dawn's SPIR-V zero-initialises a declaration inside a loop only once.
        var s = array<f32, KC>(0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0); // scores, then probabilities
        for (var e4 = 0u; e4 < HD4; e4++) {
          var a: vec4f;
          if (Q_REGS) { a = qr[e4]; } else { a = q4(qrow, e4 * 4u, hd); }
          for (var c = 0u; c < KC; c++) {
            let b = kv[kb + c * HD4 + e4];
            var d = s[c];
            d = acc(d + a.x * b.x);
            d = acc(d + a.y * b.y);
            d = acc(d + a.z * b.z);
            d = acc(d + a.w * b.w);
            s[c] = d;
          }
        }
        var mTile = NEG;
        for (var c = 0u; c < KC; c++) {
          s[c] = s[c] * params.scale;
          if (visible(jc + c, i)) { mTile = max(mTile, s[c]); }
        }
        let mNew = max(m, mTile);
        // l > 0 once this thread has seen a key: nothing to rescale before.
        if (!FAULT_NO_RESCALE && mNew > m && l > 0.0) {
          let alpha = exp(m - mNew);
          l = acc(l * alpha);
          for (var e4 = 0u; e4 < OC4; e4++) { o[e4] = acc4(o[e4] * alpha); }
        }
        m = mNew;
        for (var c = 0u; c < KC; c++) {
          var p = 0.0;
          if (visible(jc + c, i)) { p = exp(s[c] - mNew); }
          s[c] = p;
          l = acc(l + p);
        }
        for (var e4 = 0u; e4 < OC4; e4++) {
          var a = o[e4];
          for (var c = 0u; c < KC; c++) { a = acc4(a + s[c] * kv[vb + c * OC4 + e4]); }
          o[e4] = a;
        }
      }
      workgroupBarrier(); // before the next tile overwrites kv
    }

    // Merge the G partial states of each row into thread g = 0, in order g = 1 .. G-1.
    for (var gg = 1u; gg < G; gg++) {
      if (g == gg) {
        kv[r] = vec4f(m, l, 0.0, 0.0);
        for (var e4 = 0u; e4 < OC4; e4++) { kv[BQ + e4 * BQ + r] = o[e4]; }
      }
      workgroupBarrier();
      if (g == 0u) {
        let ml = kv[r];
        // An empty partial (l = 0: the row has no key in that thread's chunks) changes nothing.
        if (ml.y > 0.0) {
          let mNew = max(m, ml.x);
          if (!FAULT_NO_RESCALE && mNew > m) {
            let alpha = exp(m - mNew);
            l = acc(l * alpha);
            for (var e4 = 0u; e4 < OC4; e4++) { o[e4] = acc4(o[e4] * alpha); }
          }
          let beta = exp(ml.x - mNew);
          l = acc(l + acc(ml.y * beta));
          for (var e4 = 0u; e4 < OC4; e4++) { o[e4] = acc4(o[e4] + acc4(kv[BQ + e4 * BQ + r] * beta)); }
          m = mNew;
        }
      }
      workgroupBarrier(); // before the next partial overwrites kv
    }

    if (g == 0u && live) {
      let out = (i - params.p0) * H * hd + h * hd;
      for (var e4 = 0u; e4 < OC4; e4++) {
        let x = o[e4];
        let e = (c0 + e4) * 4u;
        if (e < hd) { ctx[out + e] = st(x.x / l); }
        if (e + 1u < hd) { ctx[out + e + 1u] = st(x.y / l); }
        if (e + 2u < hd) { ctx[out + e + 2u] = st(x.z / l); }
        if (e + 3u < hd) { ctx[out + e + 3u] = st(x.w / l); }
      }
    }
  }
}
