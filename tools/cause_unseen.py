#!/usr/bin/env python3
"""Unseen cause runs: does the cause library generalise past its fixtures (tools/cause_fixtures.py)?

Seeded GPT-NeoX models unlike the fixtures' (the every-op-matters init of hf_fixtures.py):
  unseen-par   parallel residual, 4 layers, d 96, 6 heads of 16, rotary_pct 0.25 (4 dims), base 10000, ff 384,
               vocab 300, eps 1e-5, T 40
  unseen-seq   sequential residual, 3 layers, d 128, 8 heads of 16, rotary_pct 0.5 (8 dims), base 20000, ff 512,
               vocab 280, eps 1e-6, T 33 (also loaded whole in bf16 in set 2)
  unseen-wide  (set 2) parallel, 2 layers, d 512, 8 heads of 64 (pythia-70m's head_dim), rotary 16 of 64, ff 2048,
               vocab 512, eps 1e-5, T 128: large enough that the cause search samples its columns
a clean every-op run per model and dtype (CUDA, TF32 off, sdpa), and one faulty run per FAULTS / FAULTS2 entry (every
op module tapped): every cause family of cause_faults.py with other parameter values, layers and ops than the
fixtures use, causes the fixtures never plant (input-shifted, input-wrong-tensor, acc-fp16, negative row / element
shifts: planted here, plant_custom), and "probes" whose parameter lies outside the cause's enumerated grid (probe:
true; a miss there is a grid limit, not a bug). Runs go to --out (/tmp on the device), never into the repo.

Usage (on a CUDA machine with torch + transformers 5.x; bench/device-setup.sh sourced, .devpack/cli.mjs bundled
from src/cli/main.ts with esbuild):
  python3 tools/cause_unseen.py make --set 1 --out /tmp/unseen     # models, runs, manifest.json (run -> expectation)
  python3 tools/cause_unseen.py cli --out /tmp/unseen --node /tmp/node --cli .devpack/cli.mjs \
      --results $OUT/results.jsonl [--jobs 8]                       # compare-runs --a clean --b faulty, per run
  python3 tools/cause_unseen.py list --set 2                       # the runs a set makes
Every fault is planted in a try/except: one failing fault is logged in the manifest's problems, the rest go on.
Results of 2026-11-26 (H200, both sets): bench/results/2026-11-26-unseen-causes.jsonl.
"""

import argparse
import json
import os
import random
import subprocess
import sys
import time
import traceback
from concurrent.futures import ThreadPoolExecutor

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

P, S, W = "unseen-par", "unseen-seq", "unseen-wide"
ARCH = dict(max_position_embeddings=64, hidden_act="gelu", tie_word_embeddings=False, attention_dropout=0.0,
            hidden_dropout=0.0, bos_token_id=None, eos_token_id=None, pad_token_id=None)
MODELS = {
    P: dict(seed=9101, parallel=True, keys="classic", rotary_pct=0.25, rotary_base=10000.0, T=40,
            arch=dict(ARCH, vocab_size=300, hidden_size=96, num_hidden_layers=4, num_attention_heads=6,
                      intermediate_size=384, layer_norm_eps=1e-5, use_parallel_residual=True)),
    S: dict(seed=9202, parallel=False, keys="rope_parameters", rotary_pct=0.5, rotary_base=20000.0, T=33,
            arch=dict(ARCH, vocab_size=280, hidden_size=128, num_hidden_layers=3, num_attention_heads=8,
                      intermediate_size=512, layer_norm_eps=1e-6, use_parallel_residual=False)),
    # set 2: pythia-70m-like head_dim 64 and a long sequence (the cause search's sampling at work)
    W: dict(seed=9303, parallel=True, keys="classic", rotary_pct=0.25, rotary_base=10000.0, T=128,
            arch=dict(ARCH, vocab_size=512, hidden_size=512, num_hidden_layers=2, num_attention_heads=8,
                      intermediate_size=2048, layer_norm_eps=1e-5, use_parallel_residual=True,
                      max_position_embeddings=256)),
}


def _perm(n, seed):
    r = random.Random(seed)
    while True:
        p = list(range(n))
        r.shuffle(p)
        if p != list(range(n)):
            return p


# (model, layer, op, cause, params, probe, note). Custom causes (not in cause_faults.plant): input-shifted,
# input-wrong-tensor (planted here).
FAULTS = [
    # ---------------- unseen-par (parallel, L 4, d 96, H 6, rotary 4 of 16, eps 1e-5, T 40)
    (P, None, "lm_head", "output-bf16", {}, False, None),
    (P, 0, "qkv", "output-fp16", {}, False, None),
    (P, None, "lm_head", "input-bf16", {}, False, None),
    (P, 2, "fc2", "input-fp16", {}, False, None),
    (P, 0, "fc2", "weight-bf16", {}, False, None),
    (P, 3, "qkv", "weight-fp16", {}, False, None),
    (P, 1, "fc1", "tf32", {}, False, None),
    (P, 3, "dense", "autocast-bf16", {}, False, None),
    (P, 3, "qkv", "bias-dropped", {}, False, None),
    (P, 2, "fc2", "bias-doubled", {}, False, None),
    (P, None, "final_norm", "ln-weight-dropped", {}, False, None),
    (P, 3, "ln1", "ln-bias-dropped", {}, False, None),
    (P, 0, "residual", "residual-term-dropped", {"term": "mlp"}, False, None),
    (P, 3, "residual", "residual-term-doubled", {"term": "input"}, False, None),
    (P, 2, "residual", "residual-wrong-tensor", {"term": "attn", "from": "ln1"}, False,
     "parallel: out = mlp + ln1(x) + x"),
    (P, 1, "ln1", "row-broadcast", {"row": 23}, False, None),
    (P, 2, "ln2", "ln-eps", {"eps": 3e-3}, False, "config eps 1e-5"),
    (P, 1, "ln2", "ln-eps-outside", {}, False, "config eps 1e-5 (small effect)"),
    (P, 3, "attention", "softmax-scale", {"scale": 0.2, "core": True}, False, "nominal 0.25"),
    (P, 1, "attention", "rotary-base", {"base": 5000.0}, False, "config base 10000"),
    (P, 2, "attention", "rotary-width", {"ndims": 10}, False, "config rotary_ndims 4"),
    (P, 3, "fc2", "rows-shifted", {"shift": 3, "from": 17}, False, None),
    (P, 1, "qkv", "elements-shifted", {"shift": 5}, False, None),
    (P, 2, "fc1", "input-shifted", {"shift": 3}, False, "custom plant"),
    (P, 1, "dense", "weight-transposed", {}, False, None),
    (P, 2, "attention", "qkv-layout", {}, False, None),
    (P, 1, "attention", "heads-permuted", {"order": _perm(6, 61)}, False, "a random permutation"),
    (P, 3, "attention", "causal-off-by-one", {"offset": 1}, False, None),
    (P, 0, "attention", "rotary-gptj", {}, False, "rotary on 4 dims"),
    (P, 0, "attention", "softmax-fp16", {}, False, None),
    (P, 2, "attention", "softmax-no-rescale", {"block": 16}, False, "T 40: blocks 16, 16, 8"),
    (P, 3, "act", "gelu-tanh", {}, False, None),
    (P, 2, "act", "relu", {}, False, None),
    (P, 2, "ln1", "dropout", {"p": 0.3, "seed": 77}, False, None),
    (P, 1, "attention", "rotary-offset", {"offset": 5, "from": 20}, False, None),
    (P, 1, "fc1", "input-wrong-tensor", {"from": "ln1"}, False, "custom plant: fc1 reads ln1's output"),
    # probes: parameters outside the enumerated grids
    (P, 0, "dense", "rows-shifted", {"shift": 6, "from": 10}, True, "grid: shifts up to 4"),
    (P, 3, "fc1", "input-shifted", {"shift": 6}, True, "grid: 1,2,3,4,-1,-2"),
    (P, 1, "attention", "softmax-no-rescale", {"block": 10}, True, "grid: powers of two"),
    # ---------------- unseen-seq (sequential, L 3, d 128, H 8, rotary 8 of 16, base 20000, eps 1e-6, T 33)
    (S, 1, "ln2", "output-bf16", {}, False, None),
    (S, None, "lm_head", "output-fp16", {}, False, None),
    (S, 2, "fc2", "input-bf16", {}, False, None),
    (S, 0, "qkv", "input-fp16", {}, False, None),
    (S, None, "lm_head", "weight-bf16", {}, False, None),
    (S, 1, "dense", "weight-fp16", {}, False, None),
    (S, 0, "qkv", "tf32", {}, False, None),
    (S, 2, "fc1", "autocast-fp16", {}, False, None),
    (S, None, "lm_head", "autocast-bf16", {}, False, None),
    (S, 1, "fc2", "bias-dropped", {}, False, None),
    (S, 0, "dense", "bias-doubled", {}, False, None),
    (S, 0, "ln1", "ln-weight-dropped", {}, False, None),
    (S, None, "final_norm", "ln-bias-dropped", {}, False, None),
    (S, 1, "residual", "residual-term-dropped", {"term": "input"}, False, "mid = attn"),
    (S, 2, "residual", "residual-term-doubled", {"term": "attn"}, False, "mid = 2 attn + x"),
    (S, 0, "residual", "residual-wrong-tensor", {"term": "mlp", "from": "attn"}, False, "out = attn + mid"),
    (S, 2, "fc1", "row-broadcast", {"row": 30}, False, None),
    (S, None, "final_norm", "ln-eps", {"eps": 0.05}, False, "config eps 1e-6"),
    (S, 2, "ln1", "ln-eps-outside", {}, False, "config eps 1e-6 (small effect)"),
    (S, 0, "ln2", "ln-unbiased-var", {}, False, "d 128"),
    (S, 2, "attention", "softmax-scale", {"scale": 0.125, "core": True}, False, "1/sqrt(hd)/2"),
    (S, 1, "attention", "rotary-base", {"base": 5000.0}, False, "config base 20000"),
    (S, 0, "attention", "rotary-width", {"ndims": 4}, False, "config rotary_ndims 8"),
    (S, 0, "dense", "rows-shifted", {"shift": 3, "from": 17}, False, None),
    (S, 2, "fc2", "elements-shifted", {"shift": 5}, False, None),
    (S, 1, "qkv", "input-shifted", {"shift": -2}, False, "custom plant"),
    (S, 2, "dense", "weight-transposed", {}, False, None),
    (S, 1, "attention", "qkv-layout", {}, False, None),
    (S, 0, "attention", "heads-permuted", {"order": _perm(8, 62)}, False, "a random permutation"),
    (S, 1, "attention", "causal-missing", {}, False, None),
    (S, 0, "attention", "rotary-gptj", {}, False, None),
    (S, 1, "attention", "softmax-bf16", {}, False, None),
    (S, 2, "attention", "softmax-fp16", {}, False, None),
    (S, 1, "attention", "softmax-no-rescale", {"block": 4}, False, "T 33"),
    (S, 1, "act", "gelu-sigmoid", {}, False, None),
    (S, 2, "act", "silu", {}, False, None),
    (S, 1, "qkv", "dropout", {"p": 0.3, "seed": 78}, False, None),
    (S, 2, "attention", "rotary-offset", {"offset": -16, "from": 16}, False, "positions restart at row 16"),
    (S, 2, "ln2", "input-wrong-tensor", {"from": "ln1"}, False, "custom plant: ln2 reads ln1's output"),
    # probes
    (S, 1, "fc1", "elements-shifted", {"shift": 16}, True, "grid: shifts up to 8"),
    (S, 1, "ln1", "ln-eps", {"eps": 1e-4}, True, "config 1e-6: a small eps change"),
]


BF = "bfloat16"
# Set 2 (the second device call): model W (head_dim 64, T 128: sampled scoring), causes the fixtures never plant
# (acc-fp16, negative row / element shifts), other parameter values on P and S, and faults in S loaded whole in bf16
# (measured against S's clean bf16 run). Entries: (model, layer, op, cause, params, probe, note[, dtype]).
FAULTS2 = [
    (W, 1, "fc2", "output-bf16", {}, False, None),
    (W, 0, "attention", "output-fp16", {}, False, None),
    (W, 0, "fc1", "input-bf16", {}, False, None),
    (W, None, "lm_head", "input-fp16", {}, False, None),
    (W, 1, "qkv", "weight-bf16", {}, False, None),
    (W, 0, "fc2", "weight-fp16", {}, False, None),
    (W, 1, "dense", "tf32", {}, False, None),
    (W, 0, "qkv", "autocast-bf16", {}, False, None),
    (W, 1, "fc1", "autocast-fp16", {}, False, None),
    (W, 0, "dense", "bias-dropped", {}, False, None),
    (W, 1, "fc1", "bias-doubled", {}, False, None),
    (W, 1, "ln1", "ln-weight-dropped", {}, False, None),
    (W, 0, "ln2", "ln-bias-dropped", {}, False, None),
    (W, 1, "residual", "residual-term-dropped", {"term": "attn"}, False, None),
    (W, 0, "residual", "residual-term-doubled", {"term": "mlp"}, False, None),
    (W, 1, "residual", "residual-wrong-tensor", {"term": "input", "from": "ln2"}, False, None),
    (W, 0, "act", "row-broadcast", {"row": 77}, False, None),
    (W, 1, "ln1", "ln-eps", {"eps": 2e-2}, False, "config 1e-5"),
    (W, 1, "ln2", "ln-unbiased-var", {}, False, "d 512"),
    (W, 1, "attention", "softmax-scale", {"scale": 0.1, "core": True}, False, "nominal 0.125"),
    (W, 0, "attention", "softmax-scale", {"scale": 1.0}, False, "HF's sdpa with scaling 1"),
    (W, 0, "attention", "rotary-base", {"base": 1e6}, False, "config 10000"),
    (W, 1, "attention", "rotary-width", {"ndims": 64}, False, "config 16 of 64"),
    (W, 1, "qkv", "rows-shifted", {"shift": -2, "from": 40}, False, "negative shift (custom plant)"),
    (W, 1, "attention", "rows-shifted", {"shift": 1, "from": 100}, False, None),
    (W, 0, "fc1", "elements-shifted", {"shift": 7}, False, None),
    (W, 1, "fc2", "input-shifted", {"shift": 4}, False, "custom plant"),
    (W, 1, "dense", "weight-transposed", {}, False, None),
    (W, 0, "attention", "qkv-layout", {}, False, None),
    (W, 1, "attention", "heads-permuted", {"order": [0, 1, 2, 5, 4, 3, 6, 7]}, False, "two heads swapped"),
    (W, 0, "attention", "causal-missing", {}, False, None),
    (W, 1, "attention", "causal-off-by-one", {"offset": 1}, False, None),
    (W, 1, "attention", "rotary-gptj", {}, False, None),
    (W, 0, "attention", "rotary-offset", {"offset": -64, "from": 64}, False, "two packed sequences of 64"),
    (W, 1, "attention", "softmax-fp16", {}, False, None),
    (W, 0, "attention", "softmax-bf16", {}, False, None),
    (W, 1, "attention", "softmax-no-rescale", {"block": 32}, False, None),
    (W, 0, "act", "gelu-tanh", {}, False, None),
    (W, 1, "act", "relu", {}, False, None),
    (W, 1, "fc2", "dropout", {"p": 0.05, "seed": 79}, False, None),
    (W, 0, "fc2", "acc-fp16", {"chunk": 2048, "fused": False}, False, "custom plant: K 2048 summed in fp16"),
    (P, 1, "fc2", "acc-fp16", {"chunk": 384, "fused": False}, False, "custom plant"),
    (P, 2, "fc1", "elements-shifted", {"shift": -3}, False, "negative shift (custom plant)"),
    (P, 0, "ln2", "rows-shifted", {"shift": -2, "from": 0}, False, "negative shift (custom plant)"),
    (P, 3, "fc1", "dropout", {"p": 0.05, "seed": 80}, False, None),
    (P, 2, "attention", "softmax-scale", {"scale": 1.0}, False, "HF's sdpa with scaling 1"),
    (P, 3, "attention", "rotary-base", {"base": 1e6}, False, "config 10000, rotary on 4 dims"),
    (P, 1, "attention", "rotary-offset", {"offset": -3, "from": 10}, False, "positions step back 3 at row 10"),
    (P, 0, "attention", "heads-permuted", {"order": [1, 0, 2, 3, 4, 5]}, False, "two heads swapped"),
    (S, 0, "qkv", "acc-fp16", {"chunk": 32, "fused": True}, False, "custom plant: split-K 32, fused steps"),
    (S, 2, "act", "dropout", {"p": 0.6, "seed": 81}, False, None),
    (S, 0, "attention", "rotary-base", {"base": 100.0}, False, "config 20000"),
    (S, 0, "ln1", "row-broadcast", {"row": 0}, False, None),
    (S, None, "embed", "rows-shifted", {"shift": 1, "from": 1}, False, None),
    (S, 1, "attention", "softmax-scale", {"scale": 2.0, "core": True}, False, "8x the nominal 0.25"),
    (S, 1, "act", "relu", {}, False, None, BF),
    (S, 2, "ln2", "ln-eps", {"eps": 0.1}, False, "config 1e-6", BF),
    (S, 0, "qkv", "bias-dropped", {}, False, None, BF),
    (S, 1, "fc2", "rows-shifted", {"shift": 2, "from": 9}, False, None, BF),
    (S, 1, "attention", "softmax-scale", {"scale": 0.5, "core": True}, False, None, BF),
    (S, 2, "attention", "heads-permuted", {"order": _perm(8, 63)}, False, None, BF),
    (S, 0, "act", "gelu-sigmoid", {}, False, None, BF),
    (S, 2, "dense", "row-broadcast", {"row": 5}, False, None, BF),
    (S, 0, "fc1", "dropout", {"p": 0.2, "seed": 82}, False, None, BF),
    (S, 1, "dense", "weight-transposed", {}, False, None, BF),
    (S, 0, "attention", "causal-missing", {}, False, None, BF),
    (S, 2, "attention", "qkv-layout", {}, False, None, BF),
    (S, 1, "attention", "rotary-gptj", {}, False, None, BF),
    (S, 0, "dense", "elements-shifted", {"shift": 3}, False, None, BF),
    (S, 1, "residual", "residual-term-dropped", {"term": "attn"}, False, None, BF),
    (S, 2, "attention", "rotary-base", {"base": 1000.0}, False, "config 20000", BF),
    (S, 1, "ln1", "ln-weight-dropped", {}, False, None, BF),
]
SETS = {"1": FAULTS, "2": FAULTS2}


def run_id(layer, op, cause, params, probe, dtype="float32", neg=False):
    where = op if layer is None else f"L{layer}.{op}"
    tag = ""
    if neg:
        tag = f".shift{params['shift']}"
    if probe:
        tag = "." + "-".join(f"{k}{v}" for k, v in params.items() if k != "seed")
    return ("bf16-model." if dtype == "bfloat16" else "") + f"{cause}.{where}{tag}"


# ---------------------------------------------------------------- custom plants

def plant_custom(torch, F, cf, model, layer, op, cause, params):
    """input-shifted (a linear's input rows read s elements along, zero-filled) and input-wrong-tensor (an op
    reading another module's output)."""
    mod = cf.op_module(model, op, layer)
    if cause == "input-shifted":
        s = params["shift"]

        def shifted(x):
            z = torch.zeros_like(x)
            if s > 0:
                z[..., : x.shape[-1] - s] = x[..., s:]
            else:
                z[..., -s:] = x[..., : x.shape[-1] + s]
            return z

        mod.forward = lambda x: F.linear(shifted(x), mod.weight, mod.bias)
        return lambda: delattr(mod, "forward")
    if cause == "input-wrong-tensor":
        src = cf.op_module(model, params["from"], layer)
        store = {}
        h = src.register_forward_hook(lambda m, a, o: store.__setitem__("y", o))
        orig = type(mod).forward.__get__(mod)
        mod.forward = lambda x: orig(store["y"])

        def undo():
            h.remove()
            delattr(mod, "forward")

        return undo
    if cause in ("rows-shifted", "elements-shifted"):  # negative shifts (cause_faults.post_transform: positive)
        s = params["shift"]

        def post(y):
            if cause == "elements-shifted":
                flat = y.reshape(y.shape[0], -1)
                z = torch.zeros_like(flat)
                z[:, : flat.shape[1] + s] = flat[:, -s:]
                return z.view_as(y)
            z = y.clone()
            T = y.shape[1]
            for t in range(params["from"], T):
                src = t - s
                z[:, t] = y[:, src] if 0 <= src < T else 0
            return z

        orig = type(mod).forward.__get__(mod)
        mod.forward = lambda *a, **k: post(orig(*a, **k))
        return lambda: delattr(mod, "forward")
    if cause == "acc-fp16":  # the running sums rounded to fp16 after every step along K (chunks, partials summed)
        chunk, fused = params["chunk"], params["fused"]
        W64 = mod.weight.detach().double()
        b = mod.bias

        def f(x):
            xs = x.detach().double().reshape(-1, x.shape[-1])
            K = xs.shape[1]
            total = None
            for k0 in range(0, K, chunk):
                acc = torch.zeros(xs.shape[0], W64.shape[0], dtype=torch.float64, device=xs.device)
                for k in range(k0, min(K, k0 + chunk)):
                    prod = xs[:, k: k + 1] * W64[None, :, k]
                    if not fused:
                        prod = prod.float().double()
                    acc = (acc + prod).float().half().double()
                total = acc if total is None else (total + acc).float().half().double()
            y = total.float() + (b if b is not None else 0.0)
            return y.reshape(*x.shape[:-1], W64.shape[0]).to(x.dtype)

        mod.forward = f
        return lambda: delattr(mod, "forward")
    raise ValueError(cause)


CUSTOM = {"input-shifted", "input-wrong-tensor", "acc-fp16"}


def is_custom(cause, params):
    return cause in CUSTOM or (cause in ("rows-shifted", "elements-shifted") and params.get("shift", 1) < 0)


# ---------------------------------------------------------------- make

def make(args):
    import torch
    import torch.nn.functional as F
    import cause_faults as cf
    import cause_fixtures as cfx
    from dump_run import dump_run
    from run_fixtures import op_modules, rel

    assert torch.cuda.is_available(), "needs a CUDA GPU"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    manifest = {"made_by": "tools/cause_unseen.py", "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
                "models": {}, "runs": [], "problems": []}
    try:
        import transformers
        manifest["transformers"] = transformers.__version__
    except Exception:  # noqa: BLE001
        pass
    faults = [tuple(f) + (("float32",) if len(f) == 7 else ()) for f in SETS[args.set]]
    for name, spec in MODELS.items():
        mine = [f for f in faults if f[0] == name]
        if not mine:
            continue
        try:
            mdir = os.path.join(args.out, name)
            os.makedirs(mdir, exist_ok=True)
            cfx.make_new_model(name, spec, mdir)
            with open(os.path.join(mdir, "config.json")) as f:
                cj = json.load(f)
            g = torch.Generator().manual_seed(spec["seed"] + 7)
            ids = torch.randint(0, spec["arch"]["vocab_size"], (spec["T"],), generator=g)
            L = cj["num_hidden_layers"]
            ctx = {"name": name, "dir": mdir, "cj": cj, "ids": ids, "L": L}
            mods = op_modules(L)
            manifest["models"][name] = {"dir": mdir, "tokens": ids.tolist(), "T": len(ids),
                                        "spec": {k: v for k, v in spec.items() if k != "arch"},
                                        "arch": spec["arch"]}
        except Exception as ex:  # noqa: BLE001
            traceback.print_exc()
            manifest["problems"].append(f"{name}: model failed: {ex!r}")
            continue
        for dtype in ("float32", "bfloat16"):
            todo = [f for f in mine if f[7] == dtype]
            if not todo:
                continue
            try:
                model = cfx.load(mdir, dtype={"float32": torch.float32, "bfloat16": torch.bfloat16}[dtype])
                rot = getattr(model.gpt_neox, "rotary_emb", None)
                inv_freq = None if rot is None else rot.inv_freq.detach().float().cpu()
                sd = {k: v.double().cpu() for k, v in model.state_dict().items()}
                tag = "" if dtype == "float32" else "-bf16"
                clean_file = os.path.join(mdir, f"clean-cuda{tag}.run.safetensors")
                clean = dump_run(model, ids, clean_file, label=f"{name} clean-cuda{tag}", modules=mods)
                manifest["models"][name]["clean" + tag] = clean_file
                print(f"{name} {dtype}: model + clean ({time.time() - t0:.1f} s)", flush=True)
            except Exception as ex:  # noqa: BLE001
                traceback.print_exc()
                manifest["problems"].append(f"{name} {dtype}: model/clean failed: {ex!r}")
                continue
            for (mname, layer, op, cause, params, probe, note, _dt) in todo:
                custom = is_custom(cause, params)
                neg = cause in ("rows-shifted", "elements-shifted") and params.get("shift", 1) < 0
                rid = run_id(layer, op, cause, params, probe, dtype, neg)
                entry = {"run": f"{name}/{rid}", "model": name, "dtype": dtype,
                         "file": os.path.join(mdir, f"{rid}.run.safetensors"), "clean": clean_file, "model_dir": mdir,
                         "fault": {"cause": cause, "layer": layer, "op": op, "params": params, "probe": probe,
                                   "note": note, "custom_plant": custom, "module": cfx.module_path(op, layer)}}
                try:
                    if custom:
                        off_rel = None
                        undo = plant_custom(torch, F, cf, model, layer, op, cause, params)
                    else:
                        undo = cf.plant(model, cj, op, layer, cause, params, off=True)
                        try:
                            with torch.no_grad():
                                off = model(input_ids=ids[None].cuda(), use_cache=False).logits[0].detach().cpu()
                        finally:
                            undo()
                        off_rel = rel(off, clean["logits"])
                        undo = cf.plant(model, cj, op, layer, cause, params)
                    try:
                        t = dump_run(model, ids, entry["file"], label=f"{name} {rid}", modules=mods)
                    finally:
                        undo()
                    eff, _ = cfx.effect_of(ctx, t, clean, sd, inv_freq, layer, op)
                    eff["patch_off_logits_rel_l2"] = off_rel
                    eff.pop("hidden_states_rel_l2", None)
                    entry["effect"] = eff
                except Exception as ex:  # noqa: BLE001 - one fault must not stop the rest
                    traceback.print_exc()
                    entry["error"] = repr(ex)[:400]
                    manifest["problems"].append(f"{name} {rid}: {ex!r}"[:400])
                manifest["runs"].append(entry)
                print(f"  {rid}: {json.dumps(entry.get('effect', entry.get('error')))[:200]}", flush=True)
            del model
            torch.cuda.empty_cache()
    with open(os.path.join(args.out, "manifest.json"), "w") as f:
        json.dump(manifest, f, indent=1)
    print(f"{len(manifest['runs'])} faulty runs, {len(manifest['problems'])} problems, {time.time() - t0:.1f} s")


# ---------------------------------------------------------------- the CLI on each faulty run

def cli(args):
    with open(os.path.join(args.out, "manifest.json")) as f:
        manifest = json.load(f)
    rep_dir = os.path.join(args.out, "reports")
    os.makedirs(rep_dir, exist_ok=True)

    def one(e):
        res = {"run": e["run"], "expected": e["fault"]["cause"], "fault": e["fault"], "effect": e.get("effect"),
               "error": e.get("error")}
        if e.get("error"):
            return res
        rep = os.path.join(rep_dir, e["run"].replace("/", "__") + ".json")
        cmd = [args.node, args.cli, "compare-runs", "--model", e["model_dir"], "--a", e["clean"], "--b", e["file"],
               "--out", rep]
        t = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            res["rc"] = p.returncode
            lines = [x for x in p.stdout.splitlines() if x.strip()]
            res["line"] = next((x for x in reversed(lines) if "run B" in x), lines[-1] if lines else "")
            if p.returncode != 0:
                res["stderr_tail"] = p.stderr[-1500:]
        except subprocess.TimeoutExpired:
            res["rc"] = "timeout"
        except Exception as ex:  # noqa: BLE001
            res["rc"] = repr(ex)[:300]
        res["cli_s"] = round(time.time() - t, 2)
        try:
            with open(rep) as f:
                r = json.load(f)
            res["finding"] = summarize(r)
        except Exception as ex:  # noqa: BLE001
            res["finding_error"] = repr(ex)[:200]
        return res

    runs = [e for e in manifest["runs"] if not args.only or args.only in e["run"]]
    with ThreadPoolExecutor(args.jobs) as ex, open(args.results, "w") as out:
        for res in ex.map(one, runs):
            out.write(json.dumps(res) + "\n")
            out.flush()
            print(res["run"], "|", res.get("rc"), "|", (res.get("line") or "")[-300:], flush=True)


def summarize(report):
    """Run B's finding: layer, check, module, the check's ratio to its floor, the causes named, the runner-up and the
    best few tested."""
    fs = report.get("findings") or []
    f = next((x for x in fs if x.get("run") == "B"), fs[-1] if fs else {})
    chk = next((c for c in report.get("checks", []) if c.get("run") == f.get("run") and c.get("id") == f.get("check")),
               {})
    c = f.get("cause") or {}
    if not isinstance(c, dict):
        c = {}
    pick = ("id", "params", "residual")
    out = {"diverged": f.get("diverged"), "layer": f.get("layer"), "check": f.get("check"), "op": chk.get("op"),
           "module": f.get("module"), "ratio": chk.get("ratio"),
           "named": [{k: n.get(k) for k in pick} for n in (c.get("named") or [])],
           "runnerUp": {k: (c.get("runnerUp") or {}).get(k) for k in pick} if c.get("runnerUp") else None,
           "tested": [{k: n.get(k) for k in pick} for n in (c.get("tested") or [])[:5]],
           "sampled": c.get("sampled"), "ms": c.get("ms")}
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["make", "cli", "list"])
    ap.add_argument("--out", default="/tmp/unseen")
    ap.add_argument("--node", default="/tmp/node")
    ap.add_argument("--cli", default=".devpack/cli.mjs")
    ap.add_argument("--results", default="results.jsonl")
    ap.add_argument("--jobs", type=int, default=4)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--only", default=None)
    ap.add_argument("--set", default="1", choices=sorted(SETS))
    args = ap.parse_args()
    if args.what == "make":
        make(args)
    elif args.what == "cli":
        cli(args)
    else:
        for f in SETS[args.set]:
            m, layer, op, cause, params, probe, note = f[:7]
            dt = f[7] if len(f) > 7 else "float32"
            neg = cause in ("rows-shifted", "elements-shifted") and params.get("shift", 1) < 0
            print(m, run_id(layer, op, cause, params, probe, dt, neg), params, note or "")


if __name__ == "__main__":
    main()
