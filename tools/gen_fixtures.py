#!/usr/bin/env python3
"""Generation run fixtures (src/model/testdata/gen/): greedy `generate` of the two small run-fixture models
(src/model/testdata/runs/<model>/config.json + model.safetensors), dumped with tools/dump_run.py's
dump_generation — clean pairs that must agree, and faults of the decode path planted in PyTorch at a known
decode step and layer:

  cache-off-by-one  layer l's attention reads the KV cache one position off (slot j holds position j-1's keys and
                    values) from decode step s on; the cache itself stays right
  rotary-restart    the rotary position restarts at decode: decode step s on is rotated as position (p - prompt)
                    (every layer: born at layer 0's attention)
  stale-cache       the cache write of decode step s in layer l is lost: that slot reads zeros from step s on
  decode-fp16       one linear of layer l runs in fp16 (inputs, weights, output) in decode steps s on only

Clean: clean-cuda (every module hooked), clean-nocache (generate without a KV cache on CUDA), clean-cpu, and
clean-cuda-fp16 (the model in fp16, every module: its own tokens).

Needs a CUDA GPU, torch and transformers 5.x (made with torch 2.11, transformers 5.17).
Writes <out>/<model>/<run>.run.safetensors and <out>/manifest.json: each run's file, model, label, device,
tokens, prefill, generated ids, and for a fault {id, layer, op, check, module, step, position, description}
plus `first_differing_row` (vs the clean CUDA run, which must equal `position`).

Usage: python3 tools/gen_fixtures.py [--runs src/model/testdata/runs] [--out src/model/testdata/gen]
"""

import argparse
import json
import os
import shutil
import sys
import traceback

import torch
import torch.nn.functional as F
import transformers

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dump_run import dump_generation  # noqa: E402

P = 12  # prompt tokens (the first P of the run fixtures' tokens)
N = 10  # new tokens: the prefill and 9 decode steps
# model -> fault id -> (layer, decode step it starts at, op, module under the layer)
FAULTS = {
    "parallel-classic": {
        "cache-off-by-one": (1, 3, "attention", "attention"),
        "rotary-restart": (0, 1, "attention", "attention"),
        "stale-cache": (2, 4, "attention", "attention"),
        "decode-fp16": (1, 2, "fc1", "mlp.dense_h_to_4h"),
    },
    "seq-ropeparams": {
        "cache-off-by-one": (2, 5, "attention", "attention"),
        "rotary-restart": (0, 2, "attention", "attention"),
        "stale-cache": (0, 3, "attention", "attention"),
        "decode-fp16": (2, 6, "dense", "attention.dense"),
    },
}
DESCRIPTIONS = {
    "cache-off-by-one": "the attention reads the KV cache one position off (slot j holds position j-1's keys and "
                        "values; position 0 twice, the new token's own key and value never) from this decode step on",
    "rotary-restart": "the rotary position restarts at decode: from this decode step on, position p is rotated as "
                      "p - prompt length (all layers)",
    "stale-cache": "the KV-cache write of this decode step is lost in this layer: its slot reads zeros from this "
                   "step on",
    "decode-fp16": "this linear runs in fp16 (inputs, weights, bias, output rounded) in decode steps only, from "
                   "this one on",
}
PROBLEMS = []


def op_modules(L):
    per = ["", ".input_layernorm", ".attention.query_key_value", ".attention.dense", ".post_attention_layernorm",
           ".mlp.dense_h_to_4h", ".mlp.act", ".mlp.dense_4h_to_h"]
    return ["gpt_neox.embed_in"] + [f"gpt_neox.layers.{i}{s}" for i in range(L) for s in per] + [
        "gpt_neox.final_layer_norm"]


class Steps:
    """Counts the model's forwards within one generate: 0 is the prefill, s the decode step s."""

    def __init__(self, model):
        self.forward = -1
        self.hits = 0  # how often a planted fault changed something
        self.handle = model.register_forward_pre_hook(self._pre)

    def _pre(self, mod, args):
        self.forward += 1

    def remove(self):
        self.handle.remove()


def new_cache(model):
    from transformers import DynamicCache
    try:
        return DynamicCache(config=model.config)
    except TypeError:
        return DynamicCache()


def cache_reading(model, fix):
    """A DynamicCache whose update (write, then the read the attention uses) goes through fix(K, V, layer, q_len)."""
    cache = new_cache(model)
    orig = cache.update

    def update(key_states, value_states, layer_idx, *args, **kwargs):
        K, V = orig(key_states, value_states, layer_idx, *args, **kwargs)
        return fix(K, V, layer_idx, key_states.shape[-2])

    cache.update = update
    return cache


def plant(model, fid, layer, step, module, steps):
    """Plants fault fid; returns (undo, past_key_values or None)."""
    if fid == "cache-off-by-one":
        def fix(K, V, li, q):
            if li != layer or q != 1 or steps.forward < step:
                return K, V
            steps.hits += 1
            return (torch.cat([K[:, :, :1], K[:, :, :-1]], dim=2), torch.cat([V[:, :, :1], V[:, :, :-1]], dim=2))

        return (lambda: None), cache_reading(model, fix)
    if fid == "stale-cache":
        slot = P + step - 1

        def fix(K, V, li, q):
            if li != layer or q != 1 or steps.forward < step:
                return K, V
            steps.hits += 1
            K, V = K.clone(), V.clone()
            K[:, :, slot] = 0
            V[:, :, slot] = 0
            return K, V

        return (lambda: None), cache_reading(model, fix)
    if fid == "rotary-restart":
        rots = [m for m in model.modules() if "Rotary" in type(m).__name__]
        if not rots:
            raise RuntimeError("no rotary embedding module to patch")
        for rot in rots:
            orig = rot.forward

            def fwd(x, position_ids=None, *args, _orig=orig, **kwargs):
                if position_ids is not None and steps.forward >= step and position_ids.shape[-1] == 1:
                    steps.hits += 1
                    position_ids = position_ids - P
                return _orig(x, position_ids, *args, **kwargs)

            rot.forward = fwd

        def undo():
            for rot in rots:
                del rot.forward

        return undo, None
    if fid == "decode-fp16":
        lin = model.gpt_neox.layers[layer].get_submodule(module)

        def fwd(x):
            if steps.forward >= step and x.shape[-2] == 1:
                steps.hits += 1
                b = None if lin.bias is None else lin.bias.half()
                return F.linear(x.half(), lin.weight.half(), b).to(x.dtype)
            return F.linear(x, lin.weight, lin.bias)

        lin.forward = fwd
        return (lambda: delattr(lin, "forward")), None
    raise ValueError(fid)


def first_differing_row(a, b):
    """The first row (position) where any tensor both runs hold differs in bits, or None."""
    first = None
    for name, x in a.items():
        y = b.get(name)
        if y is None or y.shape != x.shape:
            continue
        diff = (x != y).reshape(x.shape[0], -1).any(dim=1).nonzero()
        if len(diff) and (first is None or int(diff[0]) < first):
            first = int(diff[0])
    return first


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", default="src/model/testdata/runs")
    ap.add_argument("--out", default="src/model/testdata/gen")
    args = ap.parse_args()
    assert torch.cuda.is_available(), "gen_fixtures.py needs a CUDA GPU"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with open(os.path.join(args.runs, "manifest.json")) as f:
        runs_manifest = json.load(f)
    if os.path.isdir(args.out):
        shutil.rmtree(args.out)
    os.makedirs(args.out)
    gpu = torch.cuda.get_device_name(0)
    manifest = {"about": "Generation runs (docs/RUNS.md) made by tools/gen_fixtures.py with dump_generation",
                "torch": torch.__version__, "transformers": transformers.__version__, "gpu": gpu,
                "prefill": P, "new_tokens": N, "models": {}, "runs": []}
    for name, faults in FAULTS.items():
        mdir = os.path.join(args.runs, name)
        os.makedirs(os.path.join(args.out, name))
        prompt = runs_manifest["models"][name]["tokens"][:P]

        def load(device):
            m = transformers.GPTNeoXForCausalLM.from_pretrained(mdir, dtype=torch.float32).eval().to(device)
            gc = m.generation_config
            gc.eos_token_id = None
            gc.bos_token_id = None
            gc.pad_token_id = 0
            return m

        model = load("cuda")
        L = model.config.num_hidden_layers
        manifest["models"][name] = {"dir": f"../runs/{name}", "prompt": prompt,
                                    "attn_implementation": model.config._attn_implementation}
        got = {}

        def dump(run_id, m, device, modules, fault=None, **kw):
            file = f"{name}/{run_id}.run.safetensors"
            path = os.path.join(args.out, file)
            t = dump_generation(m, torch.tensor(prompt), N, path, label=f"{name} {run_id}", modules=modules, **kw)
            from safetensors import safe_open
            with safe_open(path, "pt") as f:
                meta = f.metadata()
            got[run_id] = t
            entry = {"file": file, "model": name, "label": f"{name} {run_id}", "device": device,
                     "tokens": json.loads(meta["tokens"]), "prefill": int(meta["prefill"]),
                     "generated": json.loads(meta["generated"]), "tensors": len(t), "fault": fault}
            rows = {v.shape[0] for v in t.values()}
            if rows != {P + N - 1}:
                PROBLEMS.append(f"{file}: rows {rows}, expected {P + N - 1}")
            manifest["runs"].append(entry)
            print(f"  {file}: {len(t)} tensors, generated {entry['generated']}", flush=True)
            return entry

        def attempt(what, f):
            try:
                return f()
            except Exception:
                PROBLEMS.append(f"{name} {what}: {traceback.format_exc(limit=4)}")
                print(f"  FAILED {name} {what}", flush=True)
                return None

        clean = attempt("clean-cuda", lambda: dump("clean-cuda", model, f"cuda:0 {gpu}", None))
        attempt("clean-nocache", lambda: dump("clean-nocache", model, f"cuda:0 {gpu}", op_modules(L),
                                              use_cache=False))
        attempt("clean-cpu", lambda: dump("clean-cpu", load("cpu"), "cpu", op_modules(L)))
        # fp16 weights and activations, every module: the dumper on F16 tensors (its own tokens, compared to none)
        attempt("clean-cuda-fp16", lambda: dump("clean-cuda-fp16", load("cuda").half(), f"cuda:0 {gpu}", None))
        for rid in ("clean-nocache", "clean-cpu"):
            e = next((x for x in manifest["runs"] if x["file"] == f"{name}/{rid}.run.safetensors"), None)
            if clean and e and e["tokens"] != clean["tokens"]:
                PROBLEMS.append(f"{name} {rid}: tokens {e['tokens']} differ from clean-cuda's {clean['tokens']}")
        for fid, (layer, step, op, module) in faults.items():
            fault = {"id": fid, "layer": layer, "op": op, "check": f"layers.{layer}.{op}",
                     "module": f"gpt_neox.layers.{layer}.{module}", "step": step, "position": P + step - 1,
                     "description": DESCRIPTIONS[fid]}

            def run_fault():
                steps = Steps(model)
                undo, cache = plant(model, fid, layer, step, module, steps)
                try:
                    kw = {"past_key_values": cache} if cache is not None else {}
                    e = dump(fid, model, f"cuda:0 {gpu}", op_modules(L), fault, **kw)
                finally:
                    undo()
                    steps.remove()
                e["hits"] = steps.hits
                if steps.hits == 0:
                    PROBLEMS.append(f"{name} {fid}: the planted fault never fired")
                if "clean-cuda" in got:
                    first = first_differing_row(got[fid], got["clean-cuda"])
                    e["first_differing_row"] = first
                    if first != fault["position"]:
                        PROBLEMS.append(f"{name} {fid}: first differing row {first}, expected {fault['position']}")
                return e

            attempt(fid, run_fault)
    for dp, _, fs in os.walk(args.out):
        for f in fs:
            os.chmod(os.path.join(dp, f), 0o644)
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=2)
        f.write("\n")
    total = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(args.out) for f in fs)
    print(f"total {total} bytes")
    for p in PROBLEMS:
        print("PROBLEM:", p)
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main())
