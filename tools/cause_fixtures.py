#!/usr/bin/env python3
"""Cause fixtures (src/model/testdata/causes/): PyTorch runs of three small seeded GPT-NeoX models, each faulty run
with ONE fault planted at one op of one layer, one per cause the explorer's cause library names (several causes
twice, in other models, layers and ops), plus benign runs that must name no cause.

Models (F32 on disk, the every-op-matters init of hf_fixtures.py):
  parallel-classic, seq-ropeparams  copied from src/model/testdata/runs/ (3 layers, d 32, 2 heads of 16, rotary
                                    on 8 of 16 dims, ff 64, vocab 260, eps 1e-5, T 16, the same tokens)
  seq-fullrot                       new: sequential residual, 2 layers, d 64, 4 heads of 16, rotary on all 16 dims
                                    (rotary_pct 1.0, base 10000, classic keys), ff 128, vocab 256, eps 1e-3, T 24

Runs (CUDA, fp32 with TF32 off, transformers' default attention (sdpa) unless said), dumped by dump_run.py:
  faulty: the fault layer's op modules hooked (taps "layer"), or embed_in + layer 0 for an embedding fault, or
          final_layer_norm for a final-norm or LM-head fault; hidden_states.* and logits always. Three faults are
          planted in parallel-classic loaded whole in bf16 (storage dtype BF16).
  benign: clean-cuda (every op module: the reference of the faulty runs), clean-cpu, clean-eager (eager attention),
          clean-cuda-bf16 / -fp16 (the model loaded in half precision), clean-compiled (torch.compile on every op
          module of parallel-classic; --compile-only, a second invocation, since a compile failure must not cost
          the rest).
manifest.json: the models, and per run: file, model, dtype, taps, fault {id, layer, op, module, cause (accepted
cause ids), params, description} or null, and for a faulty run its effect: the op's local error (its recorded
output against the op re-run in fp64 from its recorded input) against the clean run's at the same op, the first
op in forward order whose local error is >= 10x the clean run's (must be the fault's op), the logits and hidden
states against the clean run, and the same patch with its fault switched off against the clean run (<= 1e-6).

Needs a CUDA GPU, torch and transformers 5.x. Usage:
  python3 tools/cause_fixtures.py [--runs src/model/testdata/runs] [--out src/model/testdata/causes]
  python3 tools/cause_fixtures.py --compile-only [--runs ...] [--out ...]
"""

import argparse
import datetime
import json
import os
import shutil
import sys
import time
import traceback

import torch
import transformers
from safetensors import safe_open
from safetensors.torch import load_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dump_run import dump_run  # noqa: E402
from hf_fixtures import build_config, init_every_op, save_pretrained  # noqa: E402
from run_fixtures import op_modules, rel  # noqa: E402
import cause_faults as cf  # noqa: E402

A, B, C = "parallel-classic", "seq-ropeparams", "seq-fullrot"
NEW = {C: dict(seed=633, parallel=False, keys="classic", rotary_pct=1.0, rotary_base=10000.0, T=24,
               arch=dict(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                         intermediate_size=128, max_position_embeddings=64, layer_norm_eps=1e-3, hidden_act="gelu",
                         tie_word_embeddings=False, attention_dropout=0.0, hidden_dropout=0.0, bos_token_id=None,
                         eos_token_id=None, pad_token_id=None, use_parallel_residual=False))}
COPIED = (A, B)
THRESHOLD = {"float32": 1000.0, "bfloat16": 10.0}  # local error at the fault / the clean run's, at least
BORN = 10.0  # an op is "born" where its local error is >= BORN x the clean run's (the explorer's default k)

# (model, dtype, layer, op, cause, params, accepted causes or None = [cause], note)
FAULTS = [
    # narrower arithmetic
    (A, "float32", 1, "fc1", "output-bf16", {}, None, None),
    (B, "float32", 2, "dense", "output-bf16", {}, None, None),
    (B, "float32", 2, "act", "output-fp16", {}, None, None),
    (A, "float32", 0, "qkv", "input-bf16", {}, None, None),
    (B, "float32", 1, "dense", "input-fp16", {}, None, None),
    (B, "float32", 0, "qkv", "weight-bf16", {}, None, None),
    (B, "float32", 2, "fc1", "weight-fp16", {}, None, None),
    (A, "float32", 2, "fc2", "tf32", {}, None, None),
    (A, "float32", 0, "fc1", "autocast-bf16", {}, None, None),
    (A, "float32", None, "lm_head", "autocast-fp16", {}, None, None),
    # operands
    (B, "float32", 1, "fc1", "bias-dropped", {}, None, None),
    (A, "float32", 1, "qkv", "bias-doubled", {}, None, None),
    (A, "float32", 1, "ln2", "ln-weight-dropped", {}, None, None),
    (B, "float32", 2, "ln2", "ln-bias-dropped", {}, None, None),
    (A, "float32", 2, "residual", "residual-term-dropped", {"term": "attn"}, None, None),
    (B, "float32", 1, "residual", "residual-term-doubled", {"term": "mlp"}, None, None),
    (A, "float32", 1, "residual", "residual-wrong-tensor", {"term": "input", "from": "ln2"}, None,
     "parallel layer: out = mlp + attn + ln2(x) instead of + x"),
    (B, "float32", 2, "residual", "residual-wrong-tensor", {"term": "input", "from": "ln1"}, None,
     "sequential layer: mid = attn + ln1(x) instead of attn + x"),
    (B, "float32", 2, "fc2", "row-broadcast", {"row": 7}, None, None),
    # constants
    (A, "float32", 0, "ln1", "ln-eps", {"eps": 1e-3}, None, "config eps 1e-5"),
    (B, "float32", None, "final_norm", "ln-eps", {"eps": 1e-2}, None, "config eps 1e-5"),
    (C, "float32", 0, "ln1", "ln-eps-outside", {}, None, "config eps 1e-3"),
    (B, "float32", 1, "ln1", "ln-unbiased-var", {}, None, None),
    (A, "float32", 1, "attention", "softmax-scale", {"scale": 1.0}, None,
     "HF's own attention path (sdpa) with GPTNeoXAttention.scaling = 1"),
    (B, "float32", 0, "attention", "softmax-scale", {"scale": 1.0 / 16}, None, "1/head_dim instead of 1/sqrt(head_dim)"),
    (B, "float32", 1, "attention", "rotary-base", {"base": 10000.0}, None, "config base (rope_theta) 500"),
    (A, "float32", 1, "attention", "rotary-width", {"ndims": 16}, None, "all 16 dims; config rotary_ndims 8"),
    (C, "float32", 1, "attention", "rotary-width", {"ndims": 8}, None, "half the dims; config rotary_ndims 16"),
    # indexing and layout
    (A, "float32", 2, "fc1", "rows-shifted", {"shift": 1, "from": 5}, None, None),
    (B, "float32", 1, "attention", "rows-shifted", {"shift": 2, "from": 9}, None, None),
    (B, "float32", None, "embed", "rows-shifted", {"shift": 1, "from": 4}, None, None),
    (B, "float32", 1, "dense", "elements-shifted", {"shift": 2}, None, None),
    (A, "float32", 2, "dense", "weight-transposed", {}, None, None),
    (B, "float32", 0, "attention", "qkv-layout", {}, None, None),
    (C, "float32", 1, "attention", "heads-permuted", {"order": [3, 2, 1, 0]}, None, "heads reversed"),
    (A, "float32", 2, "attention", "causal-missing", {}, None, None),
    (A, "float32", 0, "attention", "causal-off-by-one", {"offset": 1}, None, None),
    (B, "float32", 2, "attention", "rotary-gptj", {}, None, None),
    (C, "float32", 1, "attention", "rotary-offset", {"offset": -12, "from": 12}, None,
     "positions restart at 0 on row 12 (two packed sequences); a constant offset from row 0 would change "
     "nothing, rotary scores depending on position differences only"),
    (A, "float32", 0, "attention", "rotary-offset", {"offset": 3, "from": 8}, None, "positions jump by 3 at row 8"),
    # function variants
    (B, "float32", 1, "act", "gelu-tanh", {}, None, None),
    (A, "float32", 2, "act", "gelu-sigmoid", {}, None, None),
    (A, "float32", 0, "act", "relu", {}, None, None),
    (B, "float32", 0, "act", "silu", {}, None, None),
    (C, "float32", 1, "attention", "softmax-fp16", {}, None, None),
    (B, "float32", 2, "attention", "softmax-bf16", {}, None, None),
    (C, "float32", 0, "attention", "softmax-no-rescale", {"block": 8}, None, "T 24: three key blocks"),
    # randomness
    (A, "float32", 1, "fc2", "dropout", {"p": 0.1}, None, None),
    # the whole model in bf16
    (A, "bfloat16", 1, "act", "relu", {}, None, "GELU's tanh approximation is below bf16's rounding here"),
    (A, "bfloat16", 0, "ln1", "ln-eps", {"eps": 0.5}, None,
     "config eps 1e-5; a smaller eps changes the output less than bf16's rounding"),
    (A, "bfloat16", 2, "fc1", "bias-dropped", {}, None, None),
]
HALF_MODELS = (("bf16", torch.bfloat16), ("fp16", torch.float16))  # the clean half-precision runs
HALF_OPS_TAPS = {A}  # models whose bf16 clean run hooks every op module (the bf16 faults' reference)


def layer_modules(i):
    per = ["", ".input_layernorm", ".attention.query_key_value", ".attention.dense", ".post_attention_layernorm",
           ".mlp.dense_h_to_4h", ".mlp.act", ".mlp.dense_4h_to_h"]
    return [f"gpt_neox.layers.{i}{s}" for s in per]


def fault_modules(op, layer):
    if op == "embed":
        return ["gpt_neox.embed_in"] + layer_modules(0)
    if op in ("final_norm", "lm_head"):
        return ["gpt_neox.final_layer_norm"]
    return layer_modules(layer)


def run_id(dtype, layer, op, cause):
    where = op if layer is None else f"L{layer}.{op}"
    return ("bf16-model." if dtype == "bfloat16" else "") + f"{cause}.{where}"


def module_path(op, layer):
    if op == "embed":
        return "gpt_neox.embed_in"
    if op == "final_norm":
        return "gpt_neox.final_layer_norm"
    if op == "lm_head":
        return "lm_head"
    if op == "attention":
        return f"gpt_neox.layers.{layer}.attention (core: query_key_value:out -> dense:in)"
    if op == "residual":
        return f"gpt_neox.layers.{layer} (residual adds)"
    return f"gpt_neox.layers.{layer}.{cf.LAYER_OPS[op]}"


def make_new_model(name, spec, out_dir):
    cfg = build_config(spec["keys"], spec["rotary_pct"], spec["rotary_base"], **spec["arch"])
    torch.manual_seed(spec["seed"])
    model = transformers.GPTNeoXForCausalLM(cfg).float().eval()
    init_every_op(model, spec["seed"])
    save_pretrained(model, out_dir)
    for f in os.listdir(out_dir):
        if f not in ("config.json", "model.safetensors"):
            os.remove(os.path.join(out_dir, f))
    path = os.path.join(out_dir, "config.json")
    with open(path) as f:
        cj = json.load(f)
    for k in ("rope_parameters", "rotary_pct", "rotary_emb_base", "rope_scaling", "rope_theta",
              "partial_rotary_factor"):
        cj.pop(k, None)
    cj.update(rotary_pct=spec["rotary_pct"], rotary_emb_base=spec["rotary_base"])
    with open(path, "w") as f:
        json.dump(cj, f, indent=2, sort_keys=True)
        f.write("\n")


def load(mdir, device="cuda", dtype=torch.float32, attn=None):
    kw = {"attn_implementation": attn} if attn else {}
    return transformers.GPTNeoXForCausalLM.from_pretrained(mdir, dtype=dtype, **kw).eval().to(device)


def fmt(x):
    return float(f"{x:.4g}")


class Maker:
    def __init__(self, args):
        self.args = args
        self.out = args.out
        self.gpu = torch.cuda.get_device_name(0)
        self.problems = []
        self.notes = []

    def dev(self, device):
        return f"cuda:0 {self.gpu}" if device == "cuda" else "cpu"

    def dump(self, ctx, rid, model, modules, taps, dtype, device="cuda"):
        file = f"{ctx['name']}/{rid}.run.safetensors"
        t = dump_run(model, ctx["ids"], os.path.join(self.out, file), label=f"{ctx['name']} {rid}", modules=modules)
        entry = {"file": file, "model": ctx["name"], "label": f"{ctx['name']} {rid}", "device": self.dev(device),
                 "dtype": dtype, "kind": "modules" if modules != [] else "hidden-states", "taps": taps}
        if taps not in ("ops", "hidden-states"):
            entry["tap_modules"] = list(modules)
        return t, entry


def setup_models(mk, existing):
    """Model dirs in OUT (copied or made) and their context: config, tokens, fp64 weights per dtype."""
    ctxs = {}
    for name in (A, B, C):
        mdir = os.path.join(mk.out, name)
        os.makedirs(mdir, exist_ok=True)
        if name in COPIED:
            for f in ("config.json", "model.safetensors"):
                shutil.copyfile(os.path.join(mk.args.runs, name, f), os.path.join(mdir, f))
            ids = torch.tensor(existing["models"][name]["tokens"])
            info = {"dir": name, "use_parallel_residual": existing["models"][name]["use_parallel_residual"],
                    "config_keys": existing["models"][name]["config_keys"],
                    "source": f"copied from src/model/testdata/runs/{name} (the same tokens as there)"}
        else:
            spec = NEW[name]
            if not os.path.exists(os.path.join(mdir, "model.safetensors")):
                make_new_model(name, spec, mdir)
            g = torch.Generator().manual_seed(spec["seed"] + 7)
            ids = torch.randint(0, spec["arch"]["vocab_size"], (spec["T"],), generator=g)
            info = {"dir": name, "use_parallel_residual": spec["parallel"], "config_keys": spec["keys"],
                    "source": f"new: seeded init of tools/hf_fixtures.py, seed {spec['seed']}"}
        with open(os.path.join(mdir, "config.json")) as f:
            cj = json.load(f)
        info.update(tokens=ids.tolist(), T=len(ids))
        ctxs[name] = {"name": name, "dir": mdir, "cj": cj, "ids": ids, "info": info, "L": cj["num_hidden_layers"]}
    return ctxs


def effect_of(ctx, run, clean, sd, inv_freq, layer, op):
    L = ctx["L"]
    loc = cf.local_errors(run, sd, ctx["cj"], ctx["ids"], inv_freq)
    locc = cf.local_errors(clean, sd, ctx["cj"], ctx["ids"], inv_freq)
    at = (layer, op)
    first = None
    for k in cf.forward_order(L):
        if k in loc and k in locc and loc[k] > 1e-9 and loc[k] >= BORN * max(locc[k], 1e-12):
            first = k
            break
    hs = [rel(run[f"hidden_states.{i}"], clean[f"hidden_states.{i}"]) for i in range(L + 1)]
    eff = {"logits_rel_l2": rel(run["logits"], clean["logits"]), "hidden_states_rel_l2": hs,
           "local_rel_l2_at_fault": fmt(loc.get(at, float("nan"))),
           "clean_local_rel_l2_at_fault": fmt(locc.get(at, float("nan"))),
           "local_ratio": fmt(loc.get(at, float("nan")) / max(locc.get(at, float("nan")), 1e-12)),
           "first_born": None if first is None else {"layer": first[0], "op": first[1]}}
    return eff, loc


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--runs", default=os.path.join(here, "..", "src", "model", "testdata", "runs"))
    ap.add_argument("--out", default=os.path.join(here, "..", "src", "model", "testdata", "causes"))
    ap.add_argument("--compile-only", action="store_true")
    args = ap.parse_args()
    assert torch.cuda.is_available(), "cause_fixtures.py needs a CUDA GPU"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    if args.compile_only:
        return compile_run(args)
    t0 = time.time()
    mk = Maker(args)
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    with open(os.path.join(args.runs, "manifest.json")) as f:
        existing = json.load(f)
    ctxs = setup_models(mk, existing)
    mk.notes += [
        "rotary-offset: a constant offset of every position leaves the scores unchanged (rotary scores depend on "
        "position differences only), so each planted offset starts mid-sequence (params.from)",
        "ln-eps-outside is planted in seq-fullrot, whose config eps is 1e-3: with eps 1e-5 the change is about "
        "5e-6 relative (the runs/ fixtures: ~80x the clean floor), under the 1000x bar",
        "bf16-model faults: GELU's tanh approximation changes the act output by ~1e-4 relative, under bf16's "
        "rounding, so ReLU is the function variant planted there; local errors of bf16/fp16 runs are taken "
        "against the weights the run used (rounded to its dtype)",
        "the attention-core patch (query_key_value -> cause_faults.attention_core -> dense) replaces HF's sdpa "
        "for the fault layer only; with the fault off it reproduces the clean run (patch_off_logits_rel_l2)",
    ]
    manifest = {
        "about": "Cause fixtures: PyTorch runs with one planted fault each, labelled with the causes that explain "
                 "it, and benign runs that must name none (tools/cause_fixtures.py; tools/README.md)",
        "torch": torch.__version__, "transformers": transformers.__version__, "gpu": mk.gpu,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d"),
        "attn_implementation": None,
        "op_modules": [n.replace("layers.0", "layers.{i}") for n in op_modules(1)],
        "taps": {"ops": "every op module (op_modules) + hidden_states.* + logits",
                 "layer": "tap_modules (the fault layer's op modules; embed_in + layer 0; or final_layer_norm) "
                          "+ hidden_states.* + logits",
                 "hidden-states": "hidden_states.* + logits only"},
        "thresholds": {"local_ratio_min": THRESHOLD, "born_k": BORN,
                       "note": "local_ratio = the run's local rel L2 at the fault op / the clean run's there (same "
                               "dtype); bf16-model runs are measured against the clean bf16 run, whose floor is bf16 "
                               "rounding, hence the lower bar"},
        "causes": cf.CAUSES, "models": {n: c["info"] for n, c in ctxs.items()}, "notes": mk.notes, "checks": {},
        "runs": []}
    # the attention-core patch: HF's rotary and ours bit-identical where they should be
    q, k, c, s = torch.randn(1, 2, 5, 16), torch.randn(1, 2, 5, 16), torch.randn(1, 5, 8), torch.randn(1, 5, 8)
    for x, y in zip(cf.rf._rope(q, k, c, s), cf.rf.mg.apply_rotary_pos_emb(q, k, c, s)):
        if not torch.equal(x, y):
            mk.problems.append("run_faults._rope (neox) differs from HF's apply_rotary_pos_emb")

    table = []
    for name, ctx in ctxs.items():
        L, T = ctx["L"], len(ctx["ids"])
        models = {"float32": load(ctx["dir"])}
        manifest["attn_implementation"] = models["float32"].config._attn_implementation
        rot = getattr(models["float32"].gpt_neox, "rotary_emb", None)
        inv_freq = None if rot is None else rot.inv_freq.detach().float().cpu()
        ctx["inv_freq"] = inv_freq
        if inv_freq is not None:
            hd, rd, base = cf.rope_config(ctx["cj"])
            ours = cf.inv_freq_of(rd, base)
            manifest["checks"][f"{name}: inv_freq ours vs the model's, max abs"] = fmt(
                (ours - inv_freq).abs().max().item())
        sds = {"float32": {k: v.double().cpu() for k, v in models["float32"].state_dict().items()}}
        runs = {}
        ops_mods = op_modules(L)
        l1 = layer_modules(min(1, L - 1))

        def add(rid, t, entry):
            runs[rid] = t
            manifest["runs"].append(entry)
            return entry

        # benign
        t, e = mk.dump(ctx, "clean-cuda", models["float32"], ops_mods, "ops", "float32")
        add("clean-cuda", t, dict(e, fault=None, benign="the reference: CUDA fp32, sdpa"))
        clean = t
        if name in COPIED:
            old = load_file(os.path.join(args.runs, name, "clean-cuda.run.safetensors"))
            common = [n for n in t if n in old]
            worst = max(rel(t[n], old[n]) for n in common)
            manifest["checks"][f"{name}: clean-cuda vs runs/{name}/clean-cuda, max rel L2 over {len(common)} "
                               f"tensors"] = fmt(worst)
            if worst > 1e-6:
                mk.problems.append(f"{name}: clean-cuda differs from runs/ clean-cuda by {worst}")
        small = [] if name == C else l1  # seq-fullrot's runs are 2.6x larger: its other benign runs hidden states
        t, e = mk.dump(ctx, "clean-cpu", load(ctx["dir"], "cpu"), small, "layer" if small else "hidden-states",
                       "float32", device="cpu")
        add("clean-cpu", t, dict(e, fault=None, benign="CPU fp32"))
        t, e = mk.dump(ctx, "clean-eager", load(ctx["dir"], attn="eager"), l1, "layer", "float32")
        add("clean-eager", t, dict(e, fault=None, benign="CUDA fp32, eager attention"))
        for tag, dt in HALF_MODELS:
            m = load(ctx["dir"], dtype=dt)
            dts = str(dt).replace("torch.", "")
            mods = ops_mods if (name in HALF_OPS_TAPS and tag == "bf16") else small
            taps = "ops" if mods is ops_mods else "layer" if mods else "hidden-states"
            t, e = mk.dump(ctx, f"clean-cuda-{tag}", m, mods, taps, dts)
            add(f"clean-cuda-{tag}", t, dict(e, fault=None, benign=f"the model loaded in {tag} on CUDA"))
            sds[dts] = {k: v.double().cpu() for k, v in m.state_dict().items()}
            if tag == "bf16":
                models["bfloat16"] = m
        cleans = {"float32": clean, "bfloat16": runs["clean-cuda-bf16"]}
        for e in manifest["runs"]:
            if e["model"] != name or e["fault"] is not None:
                continue
            rid = e["file"].split("/")[1].replace(".run.safetensors", "")
            if rid != "clean-cuda":
                e["vs_clean_cuda_logits_rel_l2"] = rel(runs[rid]["logits"], clean["logits"])
            if e["kind"] == "modules":
                sd = sds[e["dtype"]]
                loc = cf.local_errors(runs[rid], sd, ctx["cj"], ctx["ids"], inv_freq)
                e["local_rel_l2_max"] = fmt(max(loc.values()))
                if e["dtype"] == "float32" and rid != "clean-cuda":
                    locc = cf.local_errors(clean, sd, ctx["cj"], ctx["ids"], inv_freq)
                    r = {k: loc[k] / max(locc[k], 1e-12) for k in loc if k in locc and loc[k] > 1e-9}
                    if r:
                        w = max(r, key=r.get)
                        e["local_max_ratio_vs_clean"] = {"layer": w[0], "op": w[1], "ratio": fmt(r[w])}

        # faulty
        for (mname, dtype, layer, op, cause, params, accept, note) in FAULTS:
            if mname != name:
                continue
            rid = run_id(dtype, layer, op, cause)
            model, sd, cl = models[dtype], sds[dtype], cleans[dtype]
            desc = cf.CAUSES[cause] + f", at {module_path(op, layer)}" + (f" ({note})" if note else "")
            fault = {"id": cause, "layer": layer, "op": op, "module": module_path(op, layer),
                     "cause": accept or [cause], "params": params, "description": desc}
            try:
                undo = cf.plant(model, ctx["cj"], op, layer, cause, params, off=True)
                try:
                    off = model(input_ids=ctx["ids"][None].cuda(), use_cache=False).logits[0].detach().cpu()
                finally:
                    undo()
                off_rel = rel(off, cl["logits"])
                undo = cf.plant(model, ctx["cj"], op, layer, cause, params)
                try:
                    mods = fault_modules(op, layer)
                    t, e = mk.dump(ctx, rid, model, mods, "layer", dtype)
                finally:
                    undo()
            except Exception as ex:  # noqa: BLE001 - keep going with the other faults
                traceback.print_exc()
                mk.problems.append(f"{name} {rid}: {ex!r}")
                continue
            eff, _ = effect_of(ctx, t, cl, sd, inv_freq, layer, op)
            eff["patch_off_logits_rel_l2"] = off_rel
            add(rid, t, dict(e, fault=fault, effect=eff))
            exp_hs = {"embed": 0, "final_norm": L, "lm_head": None}.get(op, None if layer is None else layer + 1)
            first_hs = next((i for i, v in enumerate(eff["hidden_states_rel_l2"]) if v > 0), None)
            bad = []
            if not eff["local_ratio"] >= THRESHOLD[dtype]:
                bad.append(f"local ratio {eff['local_ratio']} < {THRESHOLD[dtype]}")
            if eff["first_born"] != {"layer": layer, "op": op}:
                bad.append(f"first born op {eff['first_born']}, planted at {(layer, op)}")
            if off_rel > 1e-6:
                bad.append(f"the patch with its fault off moves the logits by {off_rel}")
            if first_hs != exp_hs:
                bad.append(f"first differing hidden state {first_hs}, expected {exp_hs}")
            if eff["logits_rel_l2"] <= 0:
                bad.append("logits unchanged")
            for b in bad:
                mk.problems.append(f"{name} {rid}: {b}")
            table.append((name, rid, op, layer, ",".join(fault["cause"]), eff["local_rel_l2_at_fault"],
                          eff["clean_local_rel_l2_at_fault"], eff["local_ratio"], off_rel, eff["logits_rel_l2"],
                          "OK" if not bad else "PROBLEM"))
        del models
        torch.cuda.empty_cache()
        print(f"{name}: done ({time.time() - t0:.1f} s)", flush=True)

    finish(args.out, manifest, mk)
    print(f"\n{'model':17} {'run':44} {'op':10} {'L':>2} {'local':>9} {'clean':>9} {'ratio':>9} {'off':>8} "
          f"{'logits':>9}")
    for r in table:
        print(f"{r[0]:17} {r[1]:44} {r[2]:10} {'-' if r[3] is None else r[3]:>2} {r[5]:9.3g} {r[6]:9.3g} "
              f"{r[7]:9.3g} {r[8]:8.2g} {r[9]:9.3g} {r[10]}")
    for e in manifest["runs"]:
        if e["fault"] is None:
            print(json.dumps({k: e[k] for k in ("file", "dtype", "taps", "vs_clean_cuda_logits_rel_l2",
                                               "local_rel_l2_max", "local_max_ratio_vs_clean") if k in e}))
    print(json.dumps(manifest["checks"], indent=1))
    for p in mk.problems:
        print("PROBLEM:", p)
    print(f"{len(table)} faulty runs, {sum(1 for e in manifest['runs'] if e['fault'] is None)} benign, "
          f"{len(mk.problems)} problems, {time.time() - t0:.1f} s")
    return 1 if mk.problems else 0


def finish(out, manifest, mk):
    for dp, _, fs in os.walk(out):
        for f in fs:
            os.chmod(os.path.join(dp, f), 0o644)
    mk.problems += verify(out, manifest)
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(out) for f in fs)
    manifest["total_bytes"] = total
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    print(f"total {total} bytes")
    if total > 7e6:
        mk.problems.append(f"fixtures take {total} bytes, over 7 MB")


def verify(root, manifest):
    """Reload every file: metadata, names, shapes, dtypes, no NaN/Inf."""
    problems = []
    want_dt = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
    for e in manifest["runs"]:
        minfo = manifest["models"][e["model"]]
        with open(os.path.join(root, minfo["dir"], "config.json")) as f:
            cj = json.load(f)
        L, T = cj["num_hidden_layers"], minfo["T"]
        with safe_open(os.path.join(root, e["file"]), "pt") as f:
            meta = f.metadata()
            names = list(f.keys())
            if json.loads(meta["tokens"]) != minfo["tokens"] or set(meta) - {"tokens", "label", "device", "dtype"}:
                problems.append(f"{e['file']}: metadata {meta}")
            for n in names:
                t = f.get_tensor(n)
                if t.dtype != want_dt[e["dtype"]] or t.dim() != 2 or t.shape[0] != T or not torch.isfinite(t).all():
                    problems.append(f"{e['file']}: {n} {t.dtype} {tuple(t.shape)}")
        want_hs = {f"hidden_states.{i}" for i in range(L + 1)} | {"logits"}
        if not want_hs <= set(names):
            problems.append(f"{e['file']}: missing {want_hs - set(names)}")
        if e["taps"] == "hidden-states" and set(names) != want_hs:
            problems.append(f"{e['file']}: extra {set(names) - want_hs}")
        if e.get("tap_modules"):
            for m in e["tap_modules"]:
                if m + ":out" not in names:
                    problems.append(f"{e['file']}: no {m}:out")
    print(f"  verified {len(manifest['runs'])} run files")
    return problems


def compile_run(args):
    """clean-compiled: parallel-classic with torch.compile on each op module's forward (hooks stay outside)."""
    path = os.path.join(args.out, "manifest.json")
    with open(path) as f:
        manifest = json.load(f)
    name = A
    info = manifest["models"][name]
    mdir = os.path.join(args.out, info["dir"])
    with open(os.path.join(mdir, "config.json")) as f:
        cj = json.load(f)
    ids = torch.tensor(info["tokens"])
    ctx = {"name": name, "ids": ids, "cj": cj, "L": cj["num_hidden_layers"]}
    mk = Maker(args)
    rid = "clean-compiled"
    t0 = time.time()
    try:
        import torch._dynamo as dynamo

        for k in ("cache_size_limit", "recompile_limit", "accumulated_cache_size_limit",
                  "accumulated_recompile_limit"):
            if hasattr(dynamo.config, k):
                setattr(dynamo.config, k, 1024)
        model = load(mdir)
        n = 0
        for mname, mod in model.named_modules():
            if mname in op_modules(ctx["L"]) and not mname.endswith(tuple(str(i) for i in range(10))) \
                    and mname != "gpt_neox.embed_in":
                mod.forward = torch.compile(mod.forward, dynamic=False)
                n += 1
        l1 = layer_modules(1)
        t, e = mk.dump(ctx, rid, model, l1, "layer", "float32")
        clean = load_file(os.path.join(args.out, name, "clean-cuda.run.safetensors"))
        sd = {k: v.double().cpu() for k, v in load(mdir).state_dict().items()}
        loc = cf.local_errors(t, sd, cj, ids)
        locc = cf.local_errors(clean, sd, cj, ids)
        r = {k: loc[k] / max(locc[k], 1e-12) for k in loc if k in locc and loc[k] > 1e-9}
        e.update(fault=None, benign=f"torch.compile (inductor) on the forward of {n} op modules (LayerNorms, "
                                    f"linears, act); the hooks stay outside the compiled code",
                 vs_clean_cuda_logits_rel_l2=rel(t["logits"], clean["logits"]),
                 local_rel_l2_max=fmt(max(loc.values())))
        if r:
            w = max(r, key=r.get)
            e["local_max_ratio_vs_clean"] = {"layer": w[0], "op": w[1], "ratio": fmt(r[w])}
        manifest["runs"] = [x for x in manifest["runs"] if x["file"] != e["file"]] + [e]
        print(json.dumps(e), f"({time.time() - t0:.1f} s)")
    except Exception as ex:  # noqa: BLE001
        traceback.print_exc()
        note = f"torch.compile failed on {torch.cuda.get_device_name(0)}: {ex!r}"[:500]
        manifest["notes"].append(note)
        print("NOTE:", note)
        p = os.path.join(args.out, name, f"{rid}.run.safetensors")
        if os.path.exists(p):
            os.remove(p)
    finish(args.out, manifest, mk)
    for p in mk.problems:
        print("PROBLEM:", p)
    return 1 if mk.problems else 0


if __name__ == "__main__":
    sys.exit(main())
