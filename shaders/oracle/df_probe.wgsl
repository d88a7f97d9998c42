// Evaluates one double-float library operation per element, for tests and the adapter self-test:
// y[i] = OP[op[i]](a[i], b[i]). Ops (codes as in src/kernels/oracle/df-test-kernel.ts):
//   0 two_sum(a.hi, b.hi)   1 two_prod(a.hi, b.hi)   2 df_add   3 df_sub   4 df_mul   5 df_div
//   6 df_sqrt(a)   7 df_rsqrt(a)   8 df_exp(a)   9 df_erf(a)   10 df_erfc(a)   11 df_gelu(a)
//   12 df_add_f(a, b.hi)   13 df_mul_f(a, b.hi)   14 fast_two_sum(a.hi, b.hi)
// The op is read per element (not an override) so one pipeline runs every op of the self-test in one dispatch.
// op, a, b, y: [n]; a, b, y are df (vec2: hi, lo). An unknown op writes NaN.

struct Params { n: u32, _pad0: u32, _pad1: u32, _pad2: u32 }

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> op: array<u32>;             // [n]
@group(0) @binding(2) var<storage, read> a: array<vec2<f32>>;        // [n] df
@group(0) @binding(3) var<storage, read> b: array<vec2<f32>>;        // [n] df
@group(0) @binding(4) var<storage, read_write> y: array<vec2<f32>>;  // [n] df

override DF_FMA: bool = false;
override WG: u32 = 64;
// false: only the error-free transforms (codes 0, 1, 14) are compiled, the rest write NaN — a pipeline that
// compiles in milliseconds, for choosing DF_FMA before the whole library is compiled.
override PROBE_ALL: bool = true;

fn probe(code: u32, x: vec2<f32>, z: vec2<f32>) -> vec2<f32> {
  if (PROBE_ALL) {
    return probe_all(code, x, z);
  }
  switch code {
    case 0u: { return two_sum(x.x, z.x); }
    case 1u: { return two_prod(x.x, z.x); }
    case 14u: { return fast_two_sum(x.x, z.x); }
    default: { return probe_nan(code); }
  }
}

fn probe_all(code: u32, x: vec2<f32>, z: vec2<f32>) -> vec2<f32> {
  switch code {
    case 0u: { return two_sum(x.x, z.x); }
    case 1u: { return two_prod(x.x, z.x); }
    case 2u: { return df_add(x, z); }
    case 3u: { return df_sub(x, z); }
    case 4u: { return df_mul(x, z); }
    case 5u: { return df_div(x, z); }
    case 6u: { return df_sqrt(x); }
    case 7u: { return df_rsqrt(x); }
    case 8u: { return df_exp(x); }
    case 9u, 10u, 11u: { return df_erf_family(x, code - 9u); } // erf, erfc, gelu: one inlined copy
    case 12u: { return df_add_f(x, z.x); }
    case 13u: { return df_mul_f(x, z.x); }
    case 14u: { return fast_two_sum(x.x, z.x); }
    default: { return probe_nan(code); }
  }
}

fn probe_nan(code: u32) -> vec2<f32> {
  let nan = bitcast<f32>(0x7fc00000u + min(code, 0u)); // a NaN built at run time
  return vec2<f32>(nan, nan);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WG;
  if (i >= params.n) { return; }
  y[i] = probe(op[i], a[i], b[i]);
}
