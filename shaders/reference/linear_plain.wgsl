// Linear layer, PyTorch layout: y[M, N] = x[M, K] · W[N, K]^T + b[N] — the same arithmetic as
// reference/linear.wgsl with nothing shared: each output is one accumulator, started at +0 and advanced by
// acc(sum + x[m, k]·W[n, k]) for k = 0, 1, … in order, then the bias is added and st() rounds once. A thread owns a
// 4 × 4 block (rows m0 .. m0 + 3, columns n0 .. n0 + 3) as four vec4 accumulators, one per row, so each k reads 4
// values of x and 4 of W for 16 products; lane j of row i's vec4 is output (m0 + i, n0 + j), and its steps are
// exactly the scalar ones. The 16 × 16 tile pads K to a multiple of 16 with 0·0: adding +0 changes nothing but a
// −0 sum into +0, which is done once at the end here (select: no compiler may drop it as an addition of zero). So
// y is bit-identical to the other kernels'. No workgroup memory and no barrier: made for CPU adapters
// (SwiftShader, where a barrier makes every invocation of a workgroup yield in turn), with every index a constant
// so the accumulators stay in registers. Rows and columns past the edge read the last row or column (valid
// memory) and are not written.
// Grid: (ceil(ceil(N / 4) / WG), ceil(M / 4)) workgroups of WG threads.
// x: [M, K], W: [N, K], b: [N] (ignored when has_bias = 0), y: [M, N].

// Params and bindings: reference/linear_io.wgsl (included before this file).

override WG: u32 = 64;

/** One accumulate step of 4 outputs: s + a·b, each through acc(). */
fn plain_step(s: vec4f, a: f32, b: vec4f) -> vec4f {
  let t = s + a * b;
  return vec4f(acc(t.x), acc(t.y), acc(t.z), acc(t.w));
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let M = params.M;
  let N = params.N;
  let K = params.K;
  let n0 = gid.x * 4u;
  let m0 = wid.y * 4u;
  if (m0 >= M || n0 >= N) { return; }
  let x1 = min(m0 + 1u, M - 1u) * K;
  let x2 = min(m0 + 2u, M - 1u) * K;
  let x3 = min(m0 + 3u, M - 1u) * K;
  let x0 = m0 * K;
  let w0 = n0 * K;
  let w1 = min(n0 + 1u, N - 1u) * K;
  let w2 = min(n0 + 2u, N - 1u) * K;
  let w3 = min(n0 + 3u, N - 1u) * K;
  var s0 = vec4f();
  var s1 = vec4f();
  var s2 = vec4f();
  var s3 = vec4f();
  for (var k = 0u; k < K; k++) {
    let wv = vec4f(load_w(w0 + k), load_w(w1 + k), load_w(w2 + k), load_w(w3 + k));
    s0 = plain_step(s0, x[x0 + k], wv);
    s1 = plain_step(s1, x[x1 + k], wv);
    s2 = plain_step(s2, x[x2 + k], wv);
    s3 = plain_step(s3, x[x3 + k], wv);
  }
  if (K % 16u != 0u) {
    s0 = select(s0, vec4f(), s0 == vec4f());
    s1 = select(s1, vec4f(), s1 == vec4f());
    s2 = select(s2, vec4f(), s2 == vec4f());
    s3 = select(s3, vec4f(), s3 == vec4f());
  }
  let rows = array<vec4f, 4>(s0, s1, s2, s3);
  for (var i = 0u; i < 4u; i++) {
    let m = m0 + i;
    for (var j = 0u; j < 4u; j++) {
      let n = n0 + j;
      if (m < M && n < N) {
        var out = rows[i][j];
        if (params.has_bias != 0u) { out += b[n]; }
        y[m * N + n] = st(out);
      }
    }
  }
}
