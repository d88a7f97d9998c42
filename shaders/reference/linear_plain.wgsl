// Linear layer, PyTorch layout: y[M, N] = x[M, K] · W[N, K]^T + b[N] — the same arithmetic as
// reference/linear.wgsl with nothing shared: one thread owns each output, starts from 0.0 and adds x[m, k]·W[n, k]
// for k = 0, 1, … in order through acc(), then adds the bias and rounds once with st(). The 16 × 16 tile's padding
// of K adds 0·0 = +0 to a sum that is never −0 (it starts at +0, and a sum that cancels to zero rounds to +0), so
// skipping it changes no bit: y is bit-identical to the other three kernels'. No workgroup memory and no barrier:
// made for CPU adapters (SwiftShader), where a barrier makes every invocation of a workgroup yield in turn.
// A workgroup is WG threads along N of one row (workgroup y = m).
// x: [M, K], W: [N, K], b: [N] (ignored when has_bias = 0), y: [M, N].

// Params and bindings: reference/linear_io.wgsl (included before this file).

override WG: u32 = 64;

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let n = gid.x;
  let m = wid.y;
  if (m >= params.M || n >= params.N) { return; }
  let K = params.K;
  var sum = 0.0;
  for (var k = 0u; k < K; k++) {
    sum = acc(sum + x[m * K + k] * load_w(n * K + k));
  }
  var out = sum;
  if (params.has_bias != 0u) { out += b[n]; }
  y[m * params.N + n] = st(out);
}
