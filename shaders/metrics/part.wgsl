// A partial summary of the comparison of a stretch of elements (a tile, a row, a whole job), and its record
// in the records buffer (u32 words; floats as their bits, exponents as i32 bits). Layout, REC = 28 words:
//   0 seen        elements summarised          7 maxUlp      max ulp distance (storage precision)
//   1 nan         NaN in a                      8..10 max     largest |a − b| as a Diff (e, h, l)
//   2 inf         ±Inf in a                    11..13 ops     its operands: a, baseline hi, baseline lo bits
//   3 baseNF      non-finite baseline          14..16 sumAbs  Σ|a − b|         (Acc: v.x, v.y, e)
//   4 mismatched  non-finite mismatches        17..19 ssqA    Σa²
//   5 finite      both finite                  20..22 ssqB    Σb²
//   6 zeros       both finite and equal        23..25 ssqE    Σ(a − b)²
//  26 hist        word offset of the record's histogram (HIST_BINS words), 0xffffffff when none
//  27 unused
// Sums, max and counts are taken over the both-finite positions (the conventions of src/compare/metrics.ts).

const REC: u32 = 28u;
const HIST_BINS: u32 = 40u;
const NO_HIST: u32 = 0xffffffffu;

struct Part {
  key: Diff,
  ops: vec3<u32>,
  sum_abs: Acc,
  ssq_a: Acc,
  ssq_b: Acc,
  ssq_e: Acc,
}

fn part_zero() -> Part {
  return Part(Diff(ZE, 0.0, 0.0), vec3<u32>(0u), acc_zero(), acc_zero(), acc_zero(), acc_zero());
}

fn part_merge(p: Part, q: Part) -> Part {
  var r = p;
  if (q.key.e != ZE && (r.key.e == ZE || !diff_ge(r.key, q.key))) {
    r.key = q.key;
    r.ops = q.ops;
  }
  r.sum_abs = acc_merge(r.sum_abs, q.sum_abs);
  r.ssq_a = acc_merge(r.ssq_a, q.ssq_a);
  r.ssq_b = acc_merge(r.ssq_b, q.ssq_b);
  r.ssq_e = acc_merge(r.ssq_e, q.ssq_e);
  return r;
}

fn acc_load(w: u32) -> Acc {
  return Acc(vec2<f32>(bitcast<f32>(rec[w]), bitcast<f32>(rec[w + 1u])), bitcast<i32>(rec[w + 2u]));
}

fn acc_store(w: u32, a: Acc) {
  rec[w] = bitcast<u32>(a.v.x);
  rec[w + 1u] = bitcast<u32>(a.v.y);
  rec[w + 2u] = bitcast<u32>(a.e);
}

fn part_load(w: u32) -> Part {
  let key = Diff(bitcast<i32>(rec[w + 8u]), bitcast<f32>(rec[w + 9u]), bitcast<f32>(rec[w + 10u]));
  let ops = vec3<u32>(rec[w + 11u], rec[w + 12u], rec[w + 13u]);
  return Part(key, ops, acc_load(w + 14u), acc_load(w + 17u), acc_load(w + 20u), acc_load(w + 23u));
}

fn part_store(w: u32, p: Part) {
  rec[w + 8u] = bitcast<u32>(p.key.e);
  rec[w + 9u] = bitcast<u32>(p.key.h);
  rec[w + 10u] = bitcast<u32>(p.key.l);
  rec[w + 11u] = p.ops.x;
  rec[w + 12u] = p.ops.y;
  rec[w + 13u] = p.ops.z;
  acc_store(w + 14u, p.sum_abs);
  acc_store(w + 17u, p.ssq_a);
  acc_store(w + 20u, p.ssq_b);
  acc_store(w + 23u, p.ssq_e);
}

// Workgroup reduction of the parts (tree; a fixed order, so results are deterministic).
override WG: u32 = 128;
var<workgroup> parts: array<Part, WG>;

fn reduce_parts(lid: u32, mine: Part) -> Part {
  parts[lid] = mine;
  workgroupBarrier();
  for (var st = WG / 2u; st > 0u; st = st / 2u) {
    if (lid < st) { parts[lid] = part_merge(parts[lid], parts[lid + st]); }
    workgroupBarrier();
  }
  return parts[0];
}

// Counters shared by the workgroup: the integer fields 0 … 7 (maxUlp by atomicMax).
var<workgroup> counts: array<atomic<u32>, 8>;
