// Seeded model weights: element i of a tensor is a pure function of (key, i) — the counter-based generator of
// src/model/seeded-weights.ts, which computes the same bits on the CPU (see there for the definition and the
// distribution per tensor kind). Integer arithmetic only, plus one exact product and one exact sum, so every
// adapter writes the same values.
//
// OUT 0: f32 values; 1: f32 holding the value rounded to f16; 2: packed f16, two per u32 (element 2j in the
// low half of word j). Word j of this dispatch is element (or pair) `first + j` of the whole tensor, so a
// tensor split over several buffers is the same tensor.
override WG: u32 = 256u;
override OUT: u32 = 0u;

struct Params {
  key: u32,
  first: u32, // the tensor's element index of this buffer's element 0
  count: u32, // elements in this buffer
  scale: f32, // a power of two
  offset: f32, // 0 or 1
};

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read_write> out: array<u32>; // [count] (OUT 0, 1) or [ceil(count / 2)] (OUT 2)

fn pcg(v: u32) -> u32 {
  let st = v * 747796405u + 2891336453u;
  let w = ((st >> ((st >> 28u) + 4u)) ^ st) * 277803737u;
  return (w >> 22u) ^ w;
}

fn value(i: u32) -> f32 {
  let h1 = pcg(i ^ params.key);
  let h2 = pcg(h1 + 0x9e3779b9u);
  let n = i32((h1 & 0xffffu) + (h1 >> 16u) + (h2 & 0xffffu) + (h2 >> 16u)) - 131070;
  return f32(n) * params.scale + params.offset;
}

// f32 bits -> f16 bits, round to nearest, ties to even (finite inputs; as f32BitsToF16Bits in safetensors.ts).
fn f16_bits(b: u32) -> u32 {
  let sign = (b >> 16u) & 0x8000u;
  let e = (b >> 23u) & 0xffu;
  let mant = b & 0x7fffffu;
  if (e > 142u) {
    return sign | 0x7c00u;
  }
  if (e >= 113u) {
    var h = ((e - 112u) << 10u) | (mant >> 13u);
    let rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u) == 1u)) {
      h = h + 1u;
    }
    return sign | h;
  }
  if (e < 102u) {
    return sign;
  }
  let m = mant | 0x800000u;
  let shift = 126u - e; // 14..24
  var h = m >> shift;
  let rest = m - (h << shift);
  let half = 1u << (shift - 1u);
  if (rest > half || (rest == half && (h & 1u) == 1u)) {
    h = h + 1u;
  }
  return sign | h;
}

// f16 bits -> f32 bits, exact (as f16BitsToF32Bits; no inf or NaN arise here).
fn f32_bits_of_f16(h: u32) -> u32 {
  let sign = (h & 0x8000u) << 16u;
  let e = (h >> 10u) & 0x1fu;
  var mant = h & 0x3ffu;
  if (e != 0u) {
    return sign | ((e + 112u) << 23u) | (mant << 13u);
  }
  if (mant == 0u) {
    return sign;
  }
  var ex = 113u;
  loop {
    if ((mant & 0x400u) != 0u) {
      break;
    }
    mant = mant << 1u;
    ex = ex - 1u;
  }
  return sign | (ex << 23u) | ((mant & 0x3ffu) << 13u);
}

@compute @workgroup_size(WG)
fn main(@builtin(global_invocation_id) gid: vec3<u32>, @builtin(num_workgroups) groups: vec3<u32>) {
  let j = gid.x + gid.y * groups.x * WG;
  if (OUT == 2u) {
    let i0 = 2u * j;
    if (i0 >= params.count) {
      return;
    }
    let lo = f16_bits(bitcast<u32>(value(params.first + i0)));
    var hi = 0u;
    if (i0 + 1u < params.count) {
      hi = f16_bits(bitcast<u32>(value(params.first + i0 + 1u)));
    }
    out[j] = lo | (hi << 16u);
    return;
  }
  if (j >= params.count) {
    return;
  }
  let b = bitcast<u32>(value(params.first + j));
  if (OUT == 1u) {
    out[j] = f32_bits_of_f16(f16_bits(b));
  } else {
    out[j] = b;
  }
}
