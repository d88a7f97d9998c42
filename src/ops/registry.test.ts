import { readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { GROUP_PRODUCT, stepOfOp } from '../compare/causes/types';
import { libraryCandidates } from '../compare/family-causes-library';
import { runChecks } from '../compare/run-checks';
import type { LayerOp } from '../engine/fused-kernels';
import { WGSL_FORMS } from '../engine/llama-wgsl-forms';
import { REFERENCE_OPS, TOP_REFERENCE_OPS } from '../engine/plan-ops';
import { neoxReferenceLaunch, neoxTopLaunch, WGSL_OP_FORMS, wgslStepForm } from '../engine/wgsl-forms';
import { attentionScoresF64, attentionValuesF64, softmaxCausalF64 } from '../kernels/cpu/attention';
import { embeddingF64 } from '../kernels/cpu/embedding';
import { oracleForward } from '../kernels/cpu/forward';
import { geluF64 } from '../kernels/cpu/gelu';
import { layerNormF64 } from '../kernels/cpu/layernorm';
import { linearF64 } from '../kernels/cpu/linear';
import { opForward } from '../kernels/cpu/op-forward';
import { FP64_FORMS } from '../kernels/cpu/op-fp64';
import { ropeHeadsF64, splitHeadsRotaryF64 } from '../kernels/cpu/rotary';
import type { RotaryAngles } from '../kernels/cpu/rotary-angles';
import { OP_MODULES, withOpModules } from '../kernels/ops/index';
import { rmsNormF64 } from '../kernels/ops/rmsnorm';
import { llamaInvFreq } from '../kernels/ops/rotary';
import { DF_FORMS } from '../kernels/oracle/df-forms';
import { parseConfigText } from '../model/config';
import { smallLlamaConfig } from '../model/llama-config';
import { randomLlamaTensors } from '../model/llama-random';
import { loadLlamaWeights } from '../model/llama-weights';
import { randomModelFiles } from '../model/random-model';
import { LAYER_SLOTS } from '../model/run-names';
import { writeSafetensors } from '../model/safetensors-write';
import { loadWeights } from '../model/weights';
import { mulberry32 } from '../numeric/random';
import type { LinearWeights, LlamaConfig, ModelWeights, NeoXConfig } from '../numeric/types';
import { OP_KINDS, OPS } from './descriptors';
import {
  anatomyOpOf,
  LLAMA_FAMILY,
  layerSteps,
  libraryOpOf,
  NEOX_PARALLEL,
  NEOX_SEQUENTIAL,
  neoxSlotOfTap,
  neoxTapHasSlot,
  planOpsOf,
  usesOf,
} from './families';
import { fillSlot, formOf, hasForm, missingForms } from './slots';
import { type CauseVariant, CHECK_OPS, type FamilySpec, FORM_KINDS, type OpKind, type OpStep } from './types';

/** The bytes of an fp64 array (NaN payloads and -0 included), for bit-for-bit comparisons. */
const bits = (v: Float64Array) => new Uint8Array(v.buffer, v.byteOffset, v.byteLength);

/**
 * HF's GPTNeoXForCausalLM forward written out op by op from the single-op oracles, with the engine's tap names: the
 * hand-written oracle the registry's forward replaced (kernels/cpu/forward.ts is now a name for opForward), kept here
 * as what the registry's steps must reproduce bit for bit.
 */
function neoxByHand(
  cfg: NeoXConfig,
  w: ModelWeights,
  tokens: number[],
  taps: Map<string, Float64Array>,
  r: (v: Float64Array) => Float64Array,
  angles: RotaryAngles | undefined,
): Float64Array {
  const { hiddenSize: d, numHeads: H, headDim: hd, intermediateSize: ff, layerNormEps: eps } = cfg;
  const T = tokens.length;
  const lin = (x: Float64Array, K: number, lw: LinearWeights, N: number) =>
    r(linearF64(x, T, K, lw.weight.data, lw.bias ? lw.bias.data : null, N));
  const add = (...xs: Float64Array[]) =>
    r(xs.slice(1).reduce((acc, x) => acc.map((v, j) => v + x[j]), xs[0]));
  let x = r(embeddingF64(w.embedIn.data, d, tokens));
  taps.set('embed', x);
  w.layers.forEach((lw, i) => {
    const tap = (name: string, v: Float64Array) => taps.set(`layers.${i}.${name}`, v);
    const ln1 = r(layerNormF64(x, T, d, lw.inputLayernorm.weight.data, lw.inputLayernorm.bias.data, eps));
    const qkv = lin(ln1, d, lw.qkv, 3 * d);
    const split = splitHeadsRotaryF64(qkv, T, H, hd, cfg.rotaryNdims, cfg.rotaryBase, angles);
    const [q, k, v] = [r(split.q), r(split.k), r(split.v)];
    const scores = r(attentionScoresF64(q, k, H, T, hd));
    const probs = r(softmaxCausalF64(scores, H, T));
    const ctx = r(attentionValuesF64(probs, v, H, T, hd));
    const attnOut = lin(ctx, d, lw.dense, d);
    for (const [name, t] of Object.entries({ ln1, qkv, q, k, v, probs, ctx, attn_out: attnOut }))
      tap(name, t);
    tap(
      'scores',
      scores.map((s, j) => (j % T > Math.floor(j / T) % T ? 0 : s)),
    );
    const mid = cfg.useParallelResidual ? null : add(attnOut, x);
    const pn = lw.postAttentionLayernorm;
    const ln2 = r(layerNormF64(mid ?? x, T, d, pn.weight.data, pn.bias.data, eps));
    const fc1 = lin(ln2, d, lw.fc1, ff);
    const gelu = r(geluF64(fc1));
    const mlpOut = lin(gelu, ff, lw.fc2, d);
    x = mid ? add(mlpOut, mid) : add(mlpOut, attnOut, x);
    for (const [name, t] of Object.entries({ ln2, fc1, gelu, mlp_out: mlpOut, out: x })) tap(name, t);
    if (mid) tap('resid_mid', mid);
  });
  const fl = w.finalLayerNorm;
  const finalNorm = r(layerNormF64(x, T, d, fl.weight.data, fl.bias.data, eps));
  taps.set('final_norm', finalNorm);
  const logits = r(linearF64(finalNorm, T, d, w.lmHead.data, null, cfg.vocabSize));
  taps.set('logits', logits);
  return logits;
}

const FAMILIES: [string, FamilySpec][] = [
  ['llama', LLAMA_FAMILY],
  ['gpt_neox parallel', NEOX_PARALLEL],
  ['gpt_neox sequential', NEOX_SEQUENTIAL],
];

/**
 * Forms the descriptors need that no part fills yet (`op:form`). Every op kind's fp64, wgsl and df forms are in
 * their slots (kernels/cpu/op-fp64.ts, engine/wgsl-forms.ts, kernels/oracle/df-forms.ts, all imported here, each its
 * table's and the op modules' of kernels/ops/); an op kind added without one — in a module or a table — fails below,
 * and an entry here for a form since filled fails too: take it out.
 */
const NOT_YET_FILLED: string[] = [];

/** The literals of each `switch` of a module's code (comments removed): its line and its `case '…':` values. */
function switchCases(text: string): { line: number; cases: string[] }[] {
  const code = text.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
  const out: { line: number; cases: string[] }[] = [];
  for (const m of code.matchAll(/\bswitch\s*\(/g)) {
    const open = code.indexOf('{', m.index);
    let depth = 0;
    let end = open;
    for (; end < code.length; end++) {
      if (code[end] === '{') depth++;
      else if (code[end] === '}' && --depth === 0) break;
    }
    const cases = [...code.slice(open, end).matchAll(/\bcase\s+['"]([^'"]+)['"]\s*:/g)].map((c) => c[1]);
    out.push({ line: code.slice(0, m.index).split('\n').length, cases });
  }
  return out;
}

function* sources(dir: string): Generator<string> {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) yield* sources(path);
    else if (/\.tsx?$/.test(name)) yield path;
  }
}

/** Every name an op kind goes by: the registry's kinds, the run checks' ops, the plan's ops, the fused groups. */
const OP_NAMES = new Set<string>([
  ...OP_KINDS,
  ...CHECK_OPS,
  ...planOpsOf(NEOX_SEQUENTIAL),
  NEOX_SEQUENTIAL.finalNorm.slot,
  NEOX_SEQUENTIAL.lmHead.slot,
  ...Object.keys(GROUP_PRODUCT),
]);

/** A switch over op kinds: two or more of its cases are op names. */
const overOps = (text: string) =>
  switchCases(text).filter((s) => s.cases.filter((c) => OP_NAMES.has(c)).length >= 2);

/**
 * What a Llama-family checkpoint's tensors are read off (model/llama-weights.ts llamaStepWeights): every step with a
 * weight its HF module, every layer linear with a weight the config flag of its bias (and no other step one), each
 * layer step with a weight once in the family's module order and nothing else there. One line per fault.
 */
function llamaWeightFaults(spec: FamilySpec): string[] {
  const out: string[] = [];
  for (const s of [spec.embed, ...spec.layer, spec.finalNorm, spec.lmHead]) {
    if (s.weight && s.module === undefined) out.push(`${s.slot}: a weight with no module`);
    if (s.bias && !(s.weight && OPS[s.op].linear)) out.push(`${s.slot}: a bias flag on no linear`);
  }
  for (const s of spec.layer)
    if (s.weight && OPS[s.op].linear && !s.bias) out.push(`${s.slot}: a linear with no bias flag`);
  const order = spec.moduleOrder ?? [];
  for (const s of spec.layer)
    if (s.weight && order.filter((o) => o === s.slot).length !== 1)
      out.push(`${s.slot}: not in the module order once`);
  for (const o of order)
    if (!spec.layer.some((s) => s.slot === o && s.weight))
      out.push(`${o}: in the module order with no weight`);
  return out;
}

/**
 * What a Llama-family runs analysis and why read off each step (ops/types.ts OpStep): every step its library op,
 * every layer step its column words (distinct), a container only where the step has no module of its own and one of
 * the family's containers whose span holds it, a fused group only on a step with inputs, per-head recording only on
 * a module. One line per fault.
 */
function llamaStepFaults(spec: FamilySpec): string[] {
  const out: string[] = [];
  const layer = spec.layer;
  const at = (slot: string | null) => layer.findIndex((s) => s.slot === slot);
  for (const s of [spec.embed, ...layer, spec.finalNorm, spec.lmHead]) {
    if (!s.library || !(CHECK_OPS as readonly string[]).includes(s.library))
      out.push(`${s.slot}: no library op`);
    if (s.libraryFused && !(s.libraryFused in GROUP_PRODUCT))
      out.push(`${s.slot}: no library group ${s.libraryFused}`);
    if (s.libraryFused && s.inputs.length === 0) out.push(`${s.slot}: a fused group with no inputs`);
    if (s.recordedAs && s.module === undefined) out.push(`${s.slot}: recorded per head with no module`);
  }
  const words = new Set<string>();
  for (const [i, s] of layer.entries()) {
    if (!s.words) out.push(`${s.slot}: no column words`);
    else if (words.has(s.words)) out.push(`${s.slot}: column words '${s.words}' twice`);
    else words.add(s.words);
    if (s.container === undefined) continue;
    const span = spec.containers[s.container];
    if (s.module !== undefined) out.push(`${s.slot}: a module and a container`);
    else if (!span || !(at(span[0]) < i && i <= at(span[1])))
      out.push(`${s.slot}: '${s.container}' is no container holding it`);
  }
  return out;
}

describe('the op registry', () => {
  it('has no switch over op kinds outside src/ops/ (forms in its slots, or a descriptor field, instead)', () => {
    const src = join(dirname(fileURLToPath(import.meta.url)), '..');
    const found: string[] = [];
    for (const path of sources(src)) {
      const rel = relative(src, path);
      // Tests and their support modules build one fixture per op on purpose; the registry itself may switch.
      if (rel.startsWith('ops/') || /\.(test|testdata|bench)\.tsx?$|(^|\/)testing\.ts$/.test(rel)) continue;
      for (const s of overOps(readFileSync(path, 'utf8')))
        found.push(`${rel}:${s.line} (${s.cases.join(' ')})`);
    }
    expect(found).toEqual([]);
    // The scan finds a planted one, past a comment and a nested block, and not a switch over something else.
    const planted =
      "// switch (x) { case 'qkv': case 'dense': }\nfunction f(k: string) {\n  switch (k) {\n    case 'ln1': {\n" +
      "      if (k) { return 1; }\n      return 2;\n    }\n    case 'dense':\n      return 3;\n  }\n  switch (k) {\n" +
      "    case 'two_sum':\n    case 'add':\n      return 4;\n  }\n}\n";
    expect(overOps(planted).map((s) => s.line)).toEqual([3]);
  });

  it('has one descriptor per op kind, under its own kind', () => {
    expect(Object.keys(OPS).sort()).toEqual([...OP_KINDS].sort());
    for (const k of OP_KINDS) {
      expect(OPS[k].kind).toBe(k);
      expect(OPS[k].needs).toContain('fp64');
      for (const f of OPS[k].needs) expect(FORM_KINDS).toContain(f);
    }
  });

  it('fails on a descriptor missing a form it must have (only the listed, not-yet-filled ones are missing)', () => {
    expect(Object.keys(FP64_FORMS).sort()).toEqual([...OP_KINDS].sort());
    expect(missingForms().sort()).toEqual([...NOT_YET_FILLED].sort());
    expect(missingForms().filter((m) => m.endsWith(':fp64'))).toEqual([]);
  });

  it("takes each op module's forms into the slots, whole, and refuses a form defined twice", () => {
    // An op module (kernels/ops/<op>.ts) is one op kind's forms from one file: every form its descriptor needs is
    // there (none left in a table), and its slots hold exactly those.
    expect(OP_MODULES.length).toBeGreaterThan(0);
    for (const m of OP_MODULES) {
      for (const f of OPS[m.kind].needs)
        expect(m[f as 'fp64' | 'wgsl' | 'df'], `${m.kind}:${f}`).toBeDefined();
      expect(FP64_FORMS[m.kind]).toBe(m.fp64);
      expect(formOf('fp64', m.kind)).toBe(m.fp64);
      expect(DF_FORMS[m.kind]).toBe(m.df);
      expect(formOf('df', m.kind)).toBe(m.df);
      expect(WGSL_FORMS[m.kind]).toBe(m.wgsl);
      expect(wgslStepForm(m.kind)).toBe(m.wgsl);
      // Its fused kernels' launchers, under the registry's switch ids: the Llama kernels the descriptor lists.
      const fused = formOf('fused', m.kind) as Record<string, unknown>;
      expect(Object.keys(fused).sort(), m.kind).toEqual([...OPS[m.kind].fused.llama].sort());
    }
    const m = OP_MODULES[0];
    expect(() => withOpModules('fp64', { [m.kind]: FP64_FORMS.gelu })).toThrow(
      `op registry: the fp64 form of '${m.kind}' is in its module and in the table`,
    );
    // A module's form left out stays out of the table it would fill: the missing-forms check below names it.
    const table = withOpModules('df', {});
    expect(Object.keys(table).sort()).toEqual(OP_MODULES.map((x) => x.kind).sort());
  });

  it("reaches each family's WGSL reference forms through the wgsl slots, for every step it runs", () => {
    // The Llama reference forward runs every step of the family (any flavour's) by its op's step form.
    const llamaSteps = [
      LLAMA_FAMILY.embed,
      ...LLAMA_FAMILY.layer,
      LLAMA_FAMILY.finalNorm,
      LLAMA_FAMILY.lmHead,
    ];
    for (const step of llamaSteps) expect(wgslStepForm(step.op), `${step.slot}: ${step.op}`).not.toBeNull();
    // GPT-NeoX's plan runs each layer op by the launcher in the slot of its step's op kind: the launchers of
    // engine/plan-ops.ts, each under the one op kind whose step computes it.
    const planOps = planOpsOf(NEOX_SEQUENTIAL);
    for (const name of planOps)
      expect(neoxReferenceLaunch(name as LayerOp), name).toBe(REFERENCE_OPS[name as LayerOp]);
    const placed = OP_KINDS.flatMap((k) => Object.keys(WGSL_OP_FORMS[k].plan));
    expect(placed.sort()).toEqual([...planOps].sort());
    // Its embedding, final norm and LM head (launched a binding-sized chunk at a time) by their top steps' slots.
    for (const name of ['embed', 'final_norm', 'logits'] as const)
      expect(neoxTopLaunch(name), name).toBe(TOP_REFERENCE_OPS[name]);
    // Every op kind is run by some family's reference path.
    for (const k of OP_KINDS) {
      const f = WGSL_OP_FORMS[k];
      expect(f.step !== null || f.top !== null || Object.keys(f.plan).length > 0, k).toBe(true);
    }
    expect(() => neoxReferenceLaunch('final_norm' as LayerOp)).toThrow(
      "GPT-NeoX plan: op 'final_norm' has no WGSL reference launcher in the op registry",
    );
  });

  it('has the causes form of every op a GPT-NeoX run is checked at (the why computes each from it)', async () => {
    await import('../compare/causes/exact-op');
    for (const op of CHECK_OPS) {
      const step = stepOfOp(op);
      if (op === 'layer') expect(step, op).toBeNull();
      else expect(step !== null && hasForm('causes', step.op), `${op}: ${step?.op}`).toBe(true);
    }
  });

  it('refuses a slot filled twice, and names the op and form nobody filled', () => {
    expect(() => formOf('causes', 'swiglu')).toThrow("op registry: 'swiglu' has no causes form");
    fillSlot('causes', 'swiglu', ['gate-up-swapped']);
    expect(hasForm('causes', 'swiglu')).toBe(true);
    expect(() => fillSlot('causes', 'swiglu', [])).toThrow("the causes form of 'swiglu' is filled twice");
  });

  it.each(FAMILIES)(
    '%s: every step reads slots computed before it, once each, and ends in `out`',
    (_n, spec) => {
      const seen = new Set(['in']);
      for (const step of spec.layer) {
        expect(OP_KINDS).toContain(step.op);
        for (const i of step.inputs)
          expect(
            seen.has(i) || spec.layer.some((s) => s.slot === i && s.only),
            `${step.slot} reads ${i}`,
          ).toBe(true);
        expect(seen.has(step.slot), `${step.slot} twice`).toBe(false);
        seen.add(step.slot);
        if (step.weight !== undefined) expect(OPS[step.op].weights.length).toBeGreaterThan(0);
      }
      expect(spec.layer.at(-1)?.slot).toBe('out');
      expect(spec.layer.at(-1)?.module).toBe('');
    },
  );

  it('names GPT-NeoX slots as the runs of today do (model/run-names.ts)', () => {
    const withModule = (spec: FamilySpec) => spec.layer.map((s) => s.slot);
    for (const slot of LAYER_SLOTS.filter((s) => s !== 'ln2_in'))
      expect(withModule(NEOX_PARALLEL)).toContain(slot);
    for (const slot of LAYER_SLOTS) expect(withModule(NEOX_SEQUENTIAL)).toContain(slot);
  });

  it("derives GPT-NeoX's plan ops, checks and names from its steps, as reports and links have them", () => {
    // The engine's tap names and the run checks' ids, ops and modules are the report's words and JSON values
    // (docs/REPORT.md, docs/RUNS.md): a change to the steps that renames one fails here.
    expect(planOpsOf(NEOX_SEQUENTIAL)).toEqual(
      'ln1 qkv rotary scores probs ctx attn_out resid_mid ln2 fc1 gelu mlp_out out'.split(' '),
    );
    expect(planOpsOf(NEOX_PARALLEL)).toEqual(planOpsOf(NEOX_SEQUENTIAL).filter((o) => o !== 'resid_mid'));
    expect(LAYER_SLOTS).toEqual('ln1 qkv ctx attn_out ln2_in ln2 fc1 gelu mlp_out out'.split(' '));
    const cfg = (parallel: boolean) => ({ numLayers: 2, useParallelResidual: parallel }) as NeoXConfig;
    const held = () => true;
    const seq = runChecks(cfg(false), held).checks.filter((c) => c.layer === 1);
    expect(seq.map((c) => `${c.id}:${c.op}:${c.module}`)).toEqual([
      'layers.1.ln1:ln1:gpt_neox.layers.1.input_layernorm',
      'layers.1.qkv:qkv:gpt_neox.layers.1.attention.query_key_value',
      'layers.1.attention:attention:gpt_neox.layers.1.attention',
      'layers.1.dense:dense:gpt_neox.layers.1.attention.dense',
      'layers.1.residual_attn:residual:gpt_neox.layers.1',
      'layers.1.ln2:ln2:gpt_neox.layers.1.post_attention_layernorm',
      'layers.1.fc1:fc1:gpt_neox.layers.1.mlp.dense_h_to_4h',
      'layers.1.act:act:gpt_neox.layers.1.mlp.act',
      'layers.1.fc2:fc2:gpt_neox.layers.1.mlp.dense_4h_to_h',
      'layers.1.residual_mlp:residual:gpt_neox.layers.1',
    ]);
    expect(seq.find((c) => c.op === 'attention')?.inputs).toEqual(['layers.1.qkv']);
    const par = runChecks(cfg(true), held).checks;
    expect(par.map((c) => c.id).filter((id) => !id.startsWith('layers.'))).toEqual([
      'embed',
      'final_norm',
      'lm_head',
    ]);
    expect(par.find((c) => c.id === 'layers.0.residual')?.inputs).toEqual([
      'layers.0.mlp_out',
      'layers.0.attn_out',
      'embed',
    ]);
    // The parallel layer's post_attention_layernorm reads its own recorded input where the run holds it.
    expect(par.find((c) => c.id === 'layers.1.ln2')?.inputs).toEqual(['layers.1.ln2_in']);
    const noMid = runChecks(cfg(true), (s) => !s.endsWith('ln2_in')).checks;
    expect(noMid.find((c) => c.id === 'layers.1.ln2')?.inputs).toEqual(['layers.0.out']);
    // Every check op is a step's, or the whole layer's.
    const ops = new Set(
      [NEOX_PARALLEL, NEOX_SEQUENTIAL].flatMap((f) =>
        [f.embed, ...f.layer, f.finalNorm, f.lmHead].flatMap((st) => (st.check ? [st.check.op] : [])),
      ),
    );
    expect([...ops, 'layer'].sort()).toEqual([...CHECK_OPS].sort());
  });

  it("names GPT-NeoX's engine taps by their run slots in one place (resid_mid is a run's ln2_in)", () => {
    expect(neoxSlotOfTap('layers.3.resid_mid')).toBe('layers.3.ln2_in');
    for (const name of ['layers.0.ln1', 'layers.12.ctx', 'layers.1.q', 'embed', 'logits', 'resid_mid'])
      expect(neoxSlotOfTap(name)).toBe(name);
    // The taps a run has slots for: every run slot's tap, and none of the rotary's or the attention core's inside.
    const taps = planOpsOf(NEOX_SEQUENTIAL).map((op) => `layers.2.${op}`);
    const slots = taps.filter(neoxTapHasSlot).map(neoxSlotOfTap);
    expect(slots).toEqual(LAYER_SLOTS.map((s) => `layers.2.${s}`));
    for (const name of [
      'layers.0.q',
      'layers.0.k',
      'layers.0.v',
      'layers.0.scores',
      'layers.0.probs',
      'ln2_in',
    ])
      expect(neoxTapHasSlot(name), name).toBe(false);
    for (const name of ['embed', 'final_norm', 'logits']) expect(neoxTapHasSlot(name), name).toBe(true);
  });

  it('says where each op kind is used, with its slots and HF modules per family', () => {
    expect(usesOf('rmsnorm')).toEqual([
      { family: 'llama', slot: 'layers.{i}.ln1', module: 'model.layers.{i}.input_layernorm' },
      { family: 'llama', slot: 'layers.{i}.ln2', module: 'model.layers.{i}.post_attention_layernorm' },
    ]);
    expect(usesOf('final_norm').map((u) => u.module)).toEqual([
      'model.norm',
      'gpt_neox.final_layer_norm',
      'gpt_neox.final_layer_norm',
    ]);
    expect(usesOf('attention').every((u) => u.module === null)).toBe(true);
    // Every op kind is used by some family: no descriptor is dead.
    for (const k of OP_KINDS) expect(usesOf(k).length, k).toBeGreaterThan(0);
  });

  it('leaves out Qwen3 q/k norms elsewhere, the rotary then reading q and k', () => {
    const plain = layerSteps(LLAMA_FAMILY, smallLlamaConfig());
    expect(plain.map((s) => s.slot)).not.toContain('q_norm');
    expect(plain.find((s) => s.slot === 'q_rot')?.inputs).toEqual(['q']);
    expect(plain.find((s) => s.slot === 'k_rot')?.inputs).toEqual(['k']);
    const qwen3 = layerSteps(LLAMA_FAMILY, smallLlamaConfig({ flavour: 'qwen3', qkNorm: true }));
    expect(qwen3.find((s) => s.slot === 'q_rot')?.inputs).toEqual(['q_norm']);
  });

  it('gives every Llama step the library op, column words and container its runs and why read (a step without fails)', () => {
    expect(llamaStepFaults(LLAMA_FAMILY)).toEqual([]);
    // The check fails on a step stripped of each field, and on a container that does not hold the step.
    const strip = (slot: string, field: 'library' | 'words' | 'container', to?: string) => ({
      ...LLAMA_FAMILY,
      layer: LLAMA_FAMILY.layer.map((s) => (s.slot === slot ? { ...s, [field]: to } : s)),
    });
    expect(llamaStepFaults(strip('swiglu', 'library'))).toEqual(['swiglu: no library op']);
    expect(llamaStepFaults(strip('q_norm', 'words'))).toEqual(['q_norm: no column words']);
    expect(llamaStepFaults(strip('k', 'words', 'q'))).toEqual(["k: column words 'q' twice"]);
    expect(llamaStepFaults(strip('ctx', 'container', 'mlp'))).toEqual([
      "ctx: 'mlp' is no container holding it",
    ]);
    expect(llamaStepFaults(strip('ln1', 'container', 'self_attn'))).toEqual([
      'ln1: a module and a container',
    ]);
    // The groups the runs and the why check as one: SwiGLU on its GEMM is the library's activation on its up
    // projection; the q/k/v steps are the library's QKV, their anatomy a layer's rows.
    const steps = layerSteps(LLAMA_FAMILY, smallLlamaConfig({ flavour: 'qwen3', qkNorm: true }));
    const of = (...slots: string[]) => steps.filter((s) => slots.includes(s.slot));
    expect(libraryOpOf(of('gate', 'up', 'swiglu'))).toBe('mlp_up');
    expect(libraryOpOf(of('swiglu'))).toBe('act');
    expect(libraryOpOf(of('q_rot', 'k_rot', 'ctx'))).toBe('attention');
    expect(anatomyOpOf(of('k', 'k_norm'), libraryOpOf(of('k', 'k_norm')))).toBe('layer');
    expect(() => libraryOpOf([{ ...steps[0], library: undefined }])).toThrow(/ln1.*no library op/);
  });

  it('gives every Llama step with a weight its module, every layer linear its bias flag, each in the module order', () => {
    expect(llamaWeightFaults(LLAMA_FAMILY)).toEqual([]);
    const edit = (slot: string, more: Partial<OpStep>) => ({
      ...LLAMA_FAMILY,
      layer: LLAMA_FAMILY.layer.map((s) => (s.slot === slot ? { ...s, ...more } : s)),
    });
    expect(llamaWeightFaults(edit('up', { bias: undefined }))).toEqual(['up: a linear with no bias flag']);
    expect(llamaWeightFaults(edit('ln2', { bias: 'mlpBias' }))).toEqual(['ln2: a bias flag on no linear']);
    expect(llamaWeightFaults(edit('q_norm', { module: undefined }))).toEqual([
      'q_norm: a weight with no module',
    ]);
    expect(
      llamaWeightFaults({ ...LLAMA_FAMILY, lmHead: { ...LLAMA_FAMILY.lmHead, module: undefined } }),
    ).toEqual(['logits: a weight with no module']);
    const order = LLAMA_FAMILY.moduleOrder ?? [];
    expect(llamaWeightFaults({ ...LLAMA_FAMILY, moduleOrder: order.filter((s) => s !== 'k_norm') })).toEqual([
      'k_norm: not in the module order once',
    ]);
    expect(llamaWeightFaults({ ...LLAMA_FAMILY, moduleOrder: [...order, 'ctx'] })).toEqual([
      'ctx: in the module order with no weight',
    ]);
  });

  // The registry's forward of GPT-NeoX is HF's, value for value: the same ops in the same order. Random models of both residual styles, odd sizes, over seeds.
  it("runs GPT-NeoX to the same bits as HF's forward written out op by op, every tap, 60 seeds", () => {
    for (let seed = 1; seed <= 60; seed++) {
      const r = mulberry32(seed);
      const heads = 2 + Math.floor(r() * 3);
      const spec = {
        vocab: 37 + Math.floor(r() * 40),
        d: heads * 4 * (1 + Math.floor(r() * 3)),
        layers: 1 + Math.floor(r() * 3),
        heads,
        ff: 20 + Math.floor(r() * 30),
        rotaryPct: r() < 0.5 ? 0.5 : 1,
        parallel: seed % 2 === 0,
      };
      const files = randomModelFiles(spec, seed);
      const cfg = parseConfigText(files.config);
      const w = loadWeights(cfg, files.weights);
      const tokens = Array.from({ length: 3 + Math.floor(r() * 9) }, () => Math.floor(r() * spec.vocab));
      // Some seeds also round every op's output to fp32, as a precision mode's oracle does; some take HF's fp32
      // rotary angles, as runs from PyTorch do.
      const round = seed % 3 !== 0 ? (v: Float64Array) => v.map(Math.fround) : undefined;
      const angles = seed % 4 === 1 ? ('hf-fp32' as const) : undefined;
      const wantTaps = new Map<string, Float64Array>();
      const gotTaps = new Map<string, Float64Array>();
      neoxByHand(cfg, w, tokens, wantTaps, round ?? ((v) => v), angles);
      const got = opForward(cfg, w, tokens, gotTaps, { round, angles, planNames: true });
      const msg = `seed ${seed} ${JSON.stringify(spec)}`;
      expect(got.embeddings, msg).toEqual(wantTaps.get('embed'));
      expect(got.layers, msg).toEqual(got.layers.map((_, i) => wantTaps.get(`layers.${i}.out`)));
      expect(got.finalNorm, msg).toEqual(wantTaps.get('final_norm'));
      expect(got.logits, msg).toEqual(wantTaps.get('logits'));
      // GPT-NeoX's oracle (kernels/cpu/forward.ts) is this forward under its own name.
      const named = new Map<string, Float64Array>();
      expect(oracleForward(cfg, w, tokens, named, { round, angles }).logits, msg).toEqual(got.logits);
      expect([...named.keys()], msg).toEqual([...gotTaps.keys()]);
      // Every tap under the engine's names, bit for bit: q, k, v, the finite scores, probs, resid_mid.
      expect([...gotTaps.keys()].sort(), msg).toEqual([...wantTaps.keys()].sort());
      for (const [name, v] of wantTaps) expect(bits(gotTaps.get(name)!), `${msg} ${name}`).toEqual(bits(v));
    }
  });

  it("passes a cause's variant to the one step it names, as that op's oracle takes it", () => {
    const cfg = smallLlamaConfig({ numKvHeads: 1, numHeads: 5 });
    const w = loadLlamaWeights(cfg, writeSafetensors(randomLlamaTensors(cfg, 9)));
    const tokens = [3, 1, 4, 1, 5, 9, 2];
    const T = tokens.length;
    const base = new Map<string, Float64Array>();
    opForward(cfg, w, tokens, base);
    const taps = new Map<string, Float64Array>();
    const variants = new Map([
      ['layers.1.ln2', { epsOutside: true }],
      ['layers.0.q_rot', { gptj: true }],
    ]);
    opForward(cfg, w, tokens, taps, { variants });
    const l1 = w.layers[1];
    expect(taps.get('layers.1.ln2')).toEqual(
      rmsNormF64(
        taps.get('layers.1.ln2_in')!,
        T,
        cfg.hiddenSize,
        l1.postAttentionLayernorm.data,
        cfg.rmsNormEps,
        {
          epsOutside: true,
        },
      ),
    );
    expect(taps.get('layers.0.q_rot')).toEqual(
      ropeHeadsF64(taps.get('layers.0.q')!, T, 5, cfg.headDim, llamaInvFreq(cfg), 'exact', { gptj: true }),
    );
    // Steps before the first variant are untouched; the ones it names differ from the model's.
    expect(taps.get('layers.0.k_rot')).toEqual(base.get('layers.0.k_rot'));
    expect(taps.get('layers.0.q_rot')).not.toEqual(base.get('layers.0.q_rot'));
  });

  it("keeps each op kind's causes its own: ids no other cause takes, none twice, each changing its own op", () => {
    // Every feature a cause needs (GQA, q/k norms, a window shorter than the rows, rotary scaling, biases); the
    // causes of each op kind (its module's, or the table's beside its fp64 form) on the layer's steps of that kind.
    for (const m of OP_MODULES) if (m.causes) expect(formOf('variants', m.kind)).toBe(m.causes);
    const seeds = 3;
    for (let seed = 1; seed <= seeds; seed++) {
      const r = mulberry32(seed * 104729);
      const KV = 2 + Math.floor(r() * 2);
      const cfg: LlamaConfig = smallLlamaConfig({
        numKvHeads: KV,
        numHeads: KV * (2 + Math.floor(r() * 2)),
        qkNorm: true,
        slidingWindow: [3 + Math.floor(r() * 3), null],
        ropeScaling: { type: 'linear', factor: 2 + r() },
        attentionBias: true,
        oProjBias: true,
        mlpBias: true,
      });
      const T = 9 + Math.floor(r() * 4);
      const layer = loadLlamaWeights(cfg, writeSafetensors(randomLlamaTensors(cfg, seed))).layers[0];
      const weights = layer as unknown as Record<string, unknown>;
      const steps = layerSteps(LLAMA_FAMILY, cfg);
      // The layer's exact outputs (the model), step by step from a random input.
      const values = new Map<string, Float64Array>([
        ['in', Float64Array.from({ length: T * cfg.hiddenSize }, () => 2 * r() - 1)],
      ]);
      const run = (s: OpStep, v: CauseVariant | null) =>
        (v?.form ?? FP64_FORMS[s.op])({
          cfg: v?.cfg ? { ...cfg, ...v.cfg } : cfg,
          T,
          layer: 0,
          step: s,
          inputs: s.inputs.map((n) => values.get(n) as Float64Array),
          weights: s.weight ? weights[s.weight] : null,
          tokens: [],
          angles: 'exact',
          round: (u) => u,
          variant: v?.variant,
        });
      for (const s of steps) values.set(s.slot, run(s, null));
      // The causes any op or a library cause gives: an op kind's cause id must be none of them.
      const opts = { rows: T, decodeFrom: 3 };
      const others = new Set(libraryCandidates({ steps }, cfg, 0, opts).map((c) => c.id));
      const familyOf = new Map<string, string>();
      for (const op of new Set(steps.map((s) => s.op))) {
        if (!hasForm('variants', op)) continue;
        const own = steps.filter((s) => s.op === op);
        const causes = formOf('variants', op as OpKind)({ cfg, layer: 0, steps: own, ...opts });
        expect(causes.length, op).toBeGreaterThan(0);
        const seen = new Set<string>();
        for (const c of causes) {
          const where = `seed ${seed}, ${op}: ${c.id} ${JSON.stringify(c.params)}`;
          expect(others.has(c.id) || c.id.startsWith('output-'), where).toBe(false);
          // An id two op kinds both give (a norm's causes: RMSNorm's and the q/k norm's) is one cause: one family.
          expect(familyOf.get(c.id) ?? c.family, where).toBe(c.family);
          familyOf.set(c.id, c.family);
          const key = `${c.id} ${JSON.stringify(c.params)}`;
          expect(seen.has(key), `${where} twice`).toBe(false);
          seen.add(key);
          // It changes its own op's output on every step of its kind (a cause read by another op's form does not).
          const tuned = c.tune ? [c.tune.make(c.tune.value * 1.5)] : [];
          for (const v of [c, ...tuned]) {
            expect(v.id, where).toBe(c.id);
            for (const s of own)
              expect(bits(run(s, v)), `${where} at ${s.slot}`).not.toEqual(
                bits(values.get(s.slot) as Float64Array),
              );
          }
        }
      }
    }
  });
});
