#!/usr/bin/env python3
"""Run-file fixtures (src/model/testdata/runs/): two seeded small GPT-NeoX models and runs of one prompt each,
clean (CUDA, CPU) and with faults planted in PyTorch at one known layer, dumped with tools/dump_run.py.

Needs a CUDA GPU, torch and transformers 5.x (made with torch 2.11, transformers 5.17 on an H100).
Writes, for each model <m>: <m>/config.json, <m>/model.safetensors (F32), <m>/<run>.run.safetensors; and
manifest.json (each run: file, model, label, device, dtype, kind, taps, fault {id, layer, op, description}
or null, and for each faulty run its measured effect against the clean CUDA run).

Size: every fixture together stays under 4 MB, so the models are small (3 layers, d 32, 2 heads of 16,
ff 64, vocab 260, T 16) and only the clean CUDA run hooks every module; the others hook the op modules
(op_modules(): embed_in, each layer and its LayerNorms, linears and act, final_layer_norm; no dropouts, no
attention/mlp containers, no rotary_emb, no gpt_neox, no lm_head: lm_head:out == logits).

Usage: python3 tools/run_fixtures.py [--out src/model/testdata/runs]
"""

import argparse
import json
import math
import os
import shutil
import sys

import torch
import transformers
from safetensors import safe_open
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dump_run import dump_run  # noqa: E402
from hf_fixtures import build_config, init_every_op, save_pretrained  # noqa: E402
import run_faults as rf  # noqa: E402

ARCH = dict(vocab_size=260, hidden_size=32, num_hidden_layers=3, num_attention_heads=2, intermediate_size=64,
            max_position_embeddings=64, layer_norm_eps=1e-5, hidden_act="gelu", tie_word_embeddings=False,
            attention_dropout=0.0, hidden_dropout=0.0, bos_token_id=None, eos_token_id=None, pad_token_id=None)
T = 16
MODELS = {
    "parallel-classic": dict(seed=411, parallel=True, keys="classic", rotary_pct=0.5, rotary_base=10000.0),
    "seq-ropeparams": dict(seed=522, parallel=False, keys="rope_parameters", rotary_pct=0.5, rotary_base=500.0),
}
# (run id, plant function, layer, op, description); layers per model (parallel, sequential)
FAULTS = [
    ("residual-bf16", rf.plant_residual_bf16, (1, 1), "residual",
     "the layer's residual sums are rounded to bf16 (a fused add that stores in bf16)"),
    ("gptj-rotary", rf.plant_gptj_rotary, (1, 2), "attention",
     "rotary applied to interleaved pairs (GPT-J layout) instead of GPT-NeoX's halves"),
    ("unscaled-softmax", rf.plant_unscaled_softmax, (2, 1), "attention",
     "attention scores not scaled by 1/sqrt(head_dim) before the softmax"),
    ("tanh-gelu", rf.plant_tanh_gelu, (2, 1), "act", "the MLP's GELU is the tanh approximation"),
    ("ln-eps-outside", None, (1, 2), None, "LayerNorm computes (x-mean)/(sqrt(var)+eps), eps outside the root"),
    ("tf32", rf.plant_tf32, (0, 0), "qkv",
     "global: torch.backends.cuda.matmul.allow_tf32 = True; every fp32 matmul may round its inputs to TF32, "
     "born at the first matmul (layer 0's query_key_value)"),
]
LN_FAULT = {"parallel-classic": ("input_layernorm", "ln1"), "seq-ropeparams": ("post_attention_layernorm", "ln2")}
HS_FAULT = {"parallel-classic": "gptj-rotary", "seq-ropeparams": "residual-bf16"}  # the hidden-states-only faulty run


def op_modules(L):
    per = ["", ".input_layernorm", ".attention.query_key_value", ".attention.dense", ".post_attention_layernorm",
           ".mlp.dense_h_to_4h", ".mlp.act", ".mlp.dense_4h_to_h"]
    return ["gpt_neox.embed_in"] + [f"gpt_neox.layers.{i}{s}" for i in range(L) for s in per] + [
        "gpt_neox.final_layer_norm"]


def names_of_ops(L):
    """Every tensor name an OP_MODULES run has."""
    return [m + s for m in op_modules(L) for s in (":in", ":out") if m != "gpt_neox.embed_in" or s == ":out"] + [
        f"hidden_states.{i}" for i in range(L + 1)] + ["logits"]


def tl_names(run, L, parallel):
    """TransformerLens cache names (HookedTransformer with fold_ln=False) from a module-hook run."""
    m = {"hook_embed": "gpt_neox.embed_in:out", "ln_final.hook_normalized": "gpt_neox.final_layer_norm:out",
         "logits": "logits"}
    for i in range(L):
        p, b = f"gpt_neox.layers.{i}", f"blocks.{i}."
        m.update({b + "hook_resid_pre": p + ":in", b + "hook_resid_post": p + ":out",
                  b + "hook_attn_out": p + ".attention.dense:out", b + "hook_mlp_out": p + ".mlp.dense_4h_to_h:out",
                  b + "ln1.hook_normalized": p + ".input_layernorm:out",
                  b + "ln2.hook_normalized": p + ".post_attention_layernorm:out"})
        if not parallel:
            m[b + "hook_resid_mid"] = p + ".post_attention_layernorm:in"
    return {k: run[v] for k, v in m.items()}


def rel(a, b):
    a, b = a.double(), b.double()
    return float(f"{(torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b)).item():.4g}")


def make_model(name, spec, out_dir):
    cfg = build_config(spec["keys"], spec["rotary_pct"], spec["rotary_base"], use_parallel_residual=spec["parallel"],
                       **ARCH)
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
    if spec["keys"] == "classic":
        cj.update(rotary_pct=spec["rotary_pct"], rotary_emb_base=spec["rotary_base"])
    else:
        cj["rope_parameters"] = {"rope_type": "default", "rope_theta": spec["rotary_base"],
                                 "partial_rotary_factor": spec["rotary_pct"]}
    with open(path, "w") as f:
        json.dump(cj, f, indent=2, sort_keys=True)
        f.write("\n")
    return cj


def load(out_dir, device):
    m = transformers.GPTNeoXForCausalLM.from_pretrained(out_dir, dtype=torch.float32).eval().to(device)
    return m


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="src/model/testdata/runs")
    args = ap.parse_args()
    assert torch.cuda.is_available(), "run_fixtures.py needs a CUDA GPU"
    torch.backends.cuda.matmul.allow_tf32 = False  # clean runs: fp32 matmuls in fp32
    torch.backends.cudnn.allow_tf32 = False
    problems = []
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    gpu = torch.cuda.get_device_name(0)
    manifest = {"about": "Run files (docs/RUNS.md) made by tools/run_fixtures.py", "torch": torch.__version__,
                "transformers": transformers.__version__, "gpu": gpu, "tokens_per_run": T,
                "attn_implementation": None,
                "op_modules": [n.replace("layers.0", "layers.{i}") for n in op_modules(1)],
                "models": {}, "runs": []}
    # the GPT-J patch must leave HF's own layout bit-identical when off
    q, k, c, s = torch.randn(1, 2, 5, 16), torch.randn(1, 2, 5, 16), torch.randn(1, 5, 8), torch.randn(1, 5, 8)
    for x, y in zip(rf._rope(q, k, c, s), rf.mg.apply_rotary_pos_emb(q, k, c, s)):
        if not torch.equal(x, y):
            problems.append("run_faults._rope (neox) differs from HF's apply_rotary_pos_emb")

    for mi, (name, spec) in enumerate(MODELS.items()):
        mdir = os.path.join(args.out, name)
        os.makedirs(mdir)
        cj = make_model(name, spec, mdir)
        L = cj["num_hidden_layers"]
        g = torch.Generator().manual_seed(spec["seed"] + 7)
        ids = torch.randint(0, cj["vocab_size"], (T,), generator=g)
        model = load(mdir, "cuda")
        manifest["attn_implementation"] = model.config._attn_implementation
        manifest["models"][name] = {"dir": name, "use_parallel_residual": spec["parallel"],
                                    "config_keys": spec["keys"], "tokens": ids.tolist()}
        sd = {k: v.double().cpu() for k, v in model.state_dict().items()}
        ops = op_modules(L)
        runs = {}

        def dump(run_id, kind, taps, fault=None, device="cuda", m=None):
            file = f"{name}/{run_id}.run.safetensors"
            mods = None if taps == "all" else ops if taps == "ops" else []
            t = dump_run(m or model, ids, os.path.join(args.out, file), label=f"{name} {run_id}", modules=mods)
            runs[run_id] = t
            dev = f"cuda:0 {gpu}" if device == "cuda" else "cpu"
            entry = {"file": file, "model": name, "label": f"{name} {run_id}", "device": dev, "dtype": "float32",
                     "kind": kind, "taps": taps, "fault": fault}
            manifest["runs"].append(entry)
            return entry

        dump("clean-cuda", "modules", "all")
        dump("clean-cpu", "modules", "ops", device="cpu", m=load(mdir, "cpu"))
        dump("clean-hs", "hidden-states", "none")
        clean = runs["clean-cuda"]
        for fid, plant, layers, op, desc in FAULTS:
            layer = layers[mi]
            if fid == "ln-eps-outside":
                which, op = LN_FAULT[name]
                undo = rf.plant_ln_eps_outside(model, layer, which)
                desc = f"{desc} ({which})"
            else:
                undo = plant(model, layer)
            fault = {"id": fid, "layer": layer, "op": op, "description": desc}
            if fid == "tf32":
                fault["global"] = True
            try:
                e = dump(fid, "modules", "ops", fault)
                if fid == HS_FAULT[name]:
                    dump(f"{fid}-hs", "hidden-states", "none", dict(fault))
            finally:
                undo()
            r = runs[fid]
            e["effect"] = {"logits_rel_l2": rel(r["logits"], clean["logits"]),
                           "hidden_states_rel_l2": [rel(r[f"hidden_states.{i}"], clean[f"hidden_states.{i}"])
                                                    for i in range(L + 1)]}
            if e["effect"]["logits_rel_l2"] < 1e-6:
                problems.append(f"{name} {fid}: logits moved by {e['effect']['logits_rel_l2']} only")
            first = next((i for i, v in enumerate(e["effect"]["hidden_states_rel_l2"]) if v > 0), None)
            if first != layer + 1:
                problems.append(f"{name} {fid}: first hidden state that differs is {first}, expected {layer + 1}")
        # the hidden-states-only faulty run must equal the module run of the same fault
        hs_id = HS_FAULT[name]
        for k2, v in runs[hs_id + "-hs"].items():
            if not torch.equal(v, runs[hs_id][k2]):
                problems.append(f"{name} {hs_id}-hs: {k2} differs from the module run")
        tl = tl_names(runs["residual-bf16"], L, spec["parallel"])
        tl_file = f"{name}/residual-bf16-tl.run.safetensors"
        meta = {"tokens": json.dumps(ids.tolist()), "label": f"{name} residual-bf16 (TransformerLens names)",
                "device": f"cuda:0 {gpu}", "dtype": "float32"}
        save_file(tl, os.path.join(args.out, tl_file), metadata=meta)
        tl_fault = dict(next(x["fault"] for x in manifest["runs"] if x["file"] == f"{name}/residual-bf16.run.safetensors"))
        manifest["runs"].append({"file": tl_file, "model": name, "label": meta["label"], "device": meta["device"],
                                 "dtype": "float32", "kind": "transformer-lens", "taps": "transformer-lens",
                                 "fault": tl_fault, "effect": None,
                                 "note": "TransformerLens is not installed on the machine that made it: its tensors "
                                         "are the residual-bf16 module run's, renamed as HookedTransformer "
                                         "(fold_ln=False) names them; hook_resid_mid only for sequential models"})
        # effects and local (born-at) checks, in fp64 from each run's own taps
        local_clean = rf.local_errors(clean, sd, cj)
        for e in manifest["runs"]:
            if e["model"] != name:
                continue
            rid = e["file"].split("/")[1].replace(".run.safetensors", "")
            if e["kind"] == "transformer-lens":
                e["effect"] = derived_effect(manifest, f"{name}/residual-bf16.run.safetensors")
                continue
            if e["fault"] is None:
                if rid != "clean-cuda":
                    e["vs_clean_cuda_logits_rel_l2"] = rel(runs[rid]["logits"], clean["logits"])
                if e["kind"] == "modules":
                    loc = rf.local_errors(runs[rid], sd, cj)
                    e["local_rel_l2_max"] = float(f"{max(loc.values()):.3g}")
                continue
            if e["kind"] == "hidden-states":
                e["effect"] = derived_effect(manifest, f"{name}/{hs_id}.run.safetensors")
                continue
            loc = rf.local_errors(runs[rid], sd, cj)
            f = e["fault"]
            at = (f["layer"], f["op"])
            e["effect"]["local_rel_l2_at_fault"] = float(f"{loc[at]:.3g}")
            e["effect"]["clean_local_rel_l2_at_fault"] = float(f"{local_clean[at]:.3g}")
            worst = max(loc, key=lambda k: loc[k] / max(local_clean[k], 1e-12))
            e["effect"]["local_worst_vs_clean"] = {"layer": worst[0], "op": worst[1],
                                                   "ratio": float(f"{loc[worst] / max(local_clean[worst], 1e-12):.3g}")}
            if not f.get("global") and worst != at:
                print(f"  note {name} {rid}: largest local change at {worst}, planted at {at}")
        print(f"{name}: local errors of the clean CUDA run (max {max(local_clean.values()):.3g})")

    for dp, _, fs in os.walk(args.out):
        for f in fs:
            os.chmod(os.path.join(dp, f), 0o644)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    problems += verify(args.out, manifest)
    for e in manifest["runs"]:
        print(json.dumps({k: e[k] for k in ("file", "fault", "effect", "vs_clean_cuda_logits_rel_l2",
                                           "local_rel_l2_max") if k in e}))
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(args.out) for f in fs)
    print(f"total {total} bytes")
    if total > 3.9e6:
        problems.append(f"fixtures take {total} bytes, over 3.9 MB")
    for p in problems:
        print("PROBLEM:", p)
    return 1 if problems else 0


def derived_effect(manifest, source):
    """The effect of a run whose tensors equal (a subset of) the module run `source`'s."""
    eff = next(x["effect"] for x in manifest["runs"] if x["file"] == source)
    return {"logits_rel_l2": eff["logits_rel_l2"], "hidden_states_rel_l2": eff["hidden_states_rel_l2"],
            "same_tensors_as": source}


def verify(root, manifest):
    """Reload every file: names, shapes, dtypes, metadata, no NaN/Inf."""
    problems = []
    for e in manifest["runs"]:
        with open(os.path.join(root, e["model"], "config.json")) as f:
            cj = json.load(f)
        with safe_open(os.path.join(root, e["file"]), "pt") as f:
            meta = f.metadata()
            names = list(f.keys())
            toks = json.loads(meta["tokens"])
            if len(toks) != T or set(meta) - {"tokens", "label", "device", "dtype"}:
                problems.append(f"{e['file']}: metadata {meta}")
            for n in names:
                t = f.get_tensor(n)
                if t.dtype != torch.float32 or t.dim() != 2 or t.shape[0] != T or not torch.isfinite(t).all():
                    problems.append(f"{e['file']}: {n} {t.dtype} {tuple(t.shape)}")
            L = cj["num_hidden_layers"]
            want_hs = {f"hidden_states.{i}" for i in range(L + 1)} | {"logits"}
            if e["kind"] != "transformer-lens" and not want_hs <= set(names):
                problems.append(f"{e['file']}: missing {want_hs - set(names)}")
            if e["taps"] == "all" and not set(names_of_ops(L)) <= set(names):
                problems.append(f"{e['file']}: lacks {sorted(set(names_of_ops(L)) - set(names))}")
            if e["taps"] == "ops" and set(names) != set(names_of_ops(L)):
                problems.append(f"{e['file']}: names {sorted(set(names) ^ set(names_of_ops(L)))} differ from the op taps")
            if e["kind"] == "hidden-states" and set(names) != want_hs:
                problems.append(f"{e['file']}: extra {set(names) - want_hs}")
            if e["kind"] == "transformer-lens":
                parallel = cj.get("use_parallel_residual", True)
                want_tl = set(tl_names({n: None for n in names_of_ops(L)}, L, parallel))
                if set(names) != want_tl:
                    problems.append(f"{e['file']}: names {sorted(set(names) ^ want_tl)} differ from TransformerLens'")
        print(f"  ok {e['file']}: {len(names)} tensors, {os.path.getsize(os.path.join(root, e['file']))} bytes")
    return problems


if __name__ == "__main__":
    sys.exit(main())
