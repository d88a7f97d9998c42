#!/usr/bin/env python3
"""Unseen Llama-family runs: does the family's runs analysis generalise past its fixtures (llama_run_faults.py)?

Five seeded models unlike the fixtures' (llama_fixtures.py's every-op-matters init, other seeds, sizes and flavours):
  u-llama3-gqa5   llama, d 105, 5 layers, 15 q heads / 3 KV (GQA 5), head_dim 10 (d/H is 7), ff 222, llama3
                  scaling (theta 2e5, factor 16, low 1, high 2, original 32), q/k/v/o biases, F32, T 37
  u-qwen2-gqa4    qwen2, d 96, 3 layers, 8 / 2 (GQA 4), head_dim 12, ff 190, theta 1e5, q/k/v biases, a sliding
                  window of 17 on layers >= 1, BF16 checkpoint, T 51 (also loaded whole in bf16)
  u-qwen3-mqa     qwen3, d 75, 4 layers, 5 / 1 (MQA), head_dim 18 (d/H is 15), ff 150, theta 5e4, q/k norms,
                  F16 checkpoint, T 23 (also loaded whole in fp16)
  u-mistral-win   mistral, d 90, 3 layers, 6 / 3 (GQA 2), head_dim 16 (d/H is 15), ff 160, theta 3e4, window 11,
                  F32, T 60
  u-llama-linear  llama, d 99, 4 layers, 9 / 3 (GQA 3), head_dim 14 (d/H is 11), ff 130, linear scaling 3.5, tied
                  embeddings, MLP biases, BF16 checkpoint, T 29 (also loaded whole in bf16)
Every fault is planted in one layer drawn at random from the layers other than 1 (the fixtures' layer): every cause
of the family (RMSNorm in half, its cast order, eps in and outside the root, the mean subtracted, no weight; q/k
norms skipped or whole; SwiGLU swapped, GELU, GELU-tanh, ReLU; KV heads interleaved; the window ignored or off by
one; rope theta off, llama3 / linear scaling skipped, GPT-J pairs; an output in half) and the cause library's where
their op exists (a linear's running sum in half at chunks 1, 16, 64; a bias dropped; the softmax scale; the
attention core in half; a residual term dropped from either add; in a generation: the decode's rotary positions off,
a cached position dropped), with parameter values the fixtures do not use (eps and theta between the grids' values:
solved, not enumerated). Benign runs: each model's clean SDPA run (fp32, and in its half dtype where it has one),
eager attention, greedy generations.

The plants are llama_run_faults.py's (`plant(..., at=layer)`), and here those it has not: the RMSNorm without its
weight or with its cast order in either half format, SwiGLU with GELU or ReLU, an op's output in half, a running sum
in half by chunks, a residual term dropped from either add. Each run taps every layer's op modules. Runs go to --out
(/tmp on the device), never into the repo (they are held out by nature).

Usage (CUDA, torch + transformers 5.x; the CLI bundled from src/cli/main.ts with esbuild; bench/device-unseen.sh):
  python3 tools/llama_unseen.py make --out /tmp/lunseen          # models, runs, manifest.json
  python3 tools/llama_unseen.py cli --out /tmp/lunseen --node /tmp/node --cli PACK/cli.mjs --results R.jsonl
  python3 tools/llama_unseen.py list                             # the runs the set makes (no torch needed)
  python3 tools/llama_unseen.py table --results R.jsonl [--neox N.jsonl --before N0.jsonl]   # markdown tables
A faulty run is analysed as `compare-runs --a <its clean SDPA run> --b <it>`, a benign run alone (`--a <it>`), and
classed (verdict()): found, or the class of the miss. Every plant sits in a try/except: one failing run is logged in
the manifest's problems, the rest go on. Past 400 lines as cause_unseen.py is: the set's table, its plants, the maker,
the CLI driver and the results table belong to one held-out set and change together.
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

UA, UB, UC, UD, UE = "u-llama3-gqa5", "u-qwen2-gqa4", "u-qwen3-mqa", "u-mistral-win", "u-llama-linear"
F32, BF, FP = "float32", "bfloat16", "float16"

MODELS = {
    UA: dict(seed=7101, model_type="llama", dtype=F32, keys="classic", T=37,
             arch=dict(vocab_size=311, hidden_size=105, num_hidden_layers=5, num_attention_heads=15,
                       num_key_value_heads=3, head_dim=10, intermediate_size=222, max_position_embeddings=256,
                       rms_norm_eps=1e-5, attention_bias=True, mlp_bias=False, tie_word_embeddings=False),
             rope=dict(rope_type="llama3", rope_theta=200000.0, factor=16.0, low_freq_factor=1.0,
                       high_freq_factor=2.0, original_max_position_embeddings=32)),
    UB: dict(seed=7202, model_type="qwen2", dtype=BF, keys="v5", T=51,
             arch=dict(vocab_size=283, hidden_size=96, num_hidden_layers=3, num_attention_heads=8,
                       num_key_value_heads=2, intermediate_size=190, max_position_embeddings=512,
                       rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=True, sliding_window=17,
                       max_window_layers=1),
             rope=dict(rope_type="default", rope_theta=100000.0)),
    UC: dict(seed=7303, model_type="qwen3", dtype=FP, keys="v5", T=23,
             arch=dict(vocab_size=263, hidden_size=75, num_hidden_layers=4, num_attention_heads=5,
                       num_key_value_heads=1, head_dim=18, intermediate_size=150, max_position_embeddings=512,
                       rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False,
                       use_sliding_window=False),
             rope=dict(rope_type="default", rope_theta=50000.0)),
    UD: dict(seed=7404, model_type="mistral", dtype=F32, keys="classic", T=60,
             arch=dict(vocab_size=277, hidden_size=90, num_hidden_layers=3, num_attention_heads=6,
                       num_key_value_heads=3, head_dim=16, intermediate_size=160, max_position_embeddings=512,
                       rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=11),
             rope=dict(rope_type="default", rope_theta=30000.0)),
    UE: dict(seed=7505, model_type="llama", dtype=BF, keys="v5", T=29,
             arch=dict(vocab_size=269, hidden_size=99, num_hidden_layers=4, num_attention_heads=9,
                       num_key_value_heads=3, head_dim=14, intermediate_size=130, max_position_embeddings=256,
                       rms_norm_eps=1e-6, attention_bias=False, mlp_bias=True, tie_word_embeddings=True),
             rope=dict(rope_type="linear", rope_theta=10000.0, factor=3.5)),
}
GEN_PROMPT, GEN_NEW = 9, 7  # a generation: 9 prompt tokens, 7 new (rows 9 + 7 - 1 = 15)

# The registry's slot each module's fault is checked at (src/ops/families.ts LLAMA_FAMILY).
SLOT = {"input_layernorm": "ln1", "post_attention_layernorm": "ln2", "self_attn.q_norm": "q_norm",
        "self_attn.k_norm": "k_norm", "self_attn.q_proj": "q", "self_attn.k_proj": "k", "self_attn.v_proj": "v",
        "self_attn.o_proj": "attn_out", "mlp.gate_proj": "gate", "mlp.up_proj": "up", "mlp.down_proj": "mlp_out",
        "mlp": "swiglu", "self_attn": "ctx"}

# (model, dtype, kind, module ('' = the residual adds), cause, params, note). The layer is drawn below.
FAULTS = [
    # RMSNorm (the family's own)
    (UA, F32, "prompt", "input_layernorm", "rms-bf16", {}, None),
    (UD, F32, "prompt", "post_attention_layernorm", "rms-fp16", {}, None),
    (UB, F32, "prompt", "input_layernorm", "rms-cast-order", {"format": "bf16"}, "a bf16 kernel in an fp32 model"),
    (UD, F32, "prompt", "post_attention_layernorm", "rms-cast-order", {"format": "fp16"}, "an fp16 kernel"),
    (UE, F32, "prompt", "post_attention_layernorm", "rms-eps", {"factor": 37.0}, "between the grid's 10 and 100"),
    (UC, F32, "prompt", "self_attn.q_norm", "rms-eps", {"factor": 1000.0}, "the q norm alone"),
    (UA, F32, "prompt", "post_attention_layernorm", "rms-eps-outside", {"factor": 1.0}, None),
    (UB, F32, "prompt", "input_layernorm", "rms-eps-outside", {"factor": 3000.0}, "between the grid's values"),
    (UD, F32, "prompt", "input_layernorm", "rms-mean-subtracted", {}, None),
    (UC, F32, "prompt", "self_attn.k_norm", "rms-mean-subtracted", {}, "the k norm alone"),
    (UE, F32, "prompt", "input_layernorm", "rms-no-weight", {}, None),
    (UB, BF, "prompt", "post_attention_layernorm", "rms-mean-subtracted", {}, "bf16 model"),
    (UC, FP, "prompt", "input_layernorm", "rms-no-weight", {}, "fp16 model"),
    # q/k norms
    (UC, F32, "prompt", "self_attn.q_norm", "qk-norm-skipped", {}, "both norms"),
    (UC, F32, "prompt", "self_attn.q_norm", "qk-norm-whole", {}, "both norms; MQA: k has one head"),
    # SwiGLU
    (UB, F32, "prompt", "mlp", "swiglu-swapped", {}, None),
    (UA, F32, "prompt", "mlp", "swiglu-gelu", {}, None),
    (UD, F32, "prompt", "mlp", "swiglu-gelu-tanh", {}, None),
    (UE, F32, "prompt", "mlp", "swiglu-relu", {}, None),
    (UE, BF, "prompt", "mlp", "swiglu-swapped", {}, "bf16 model"),
    # attention: KV heads, window
    (UA, F32, "prompt", "self_attn", "kv-interleaved", {}, "GQA 15/3"),
    (UB, F32, "prompt", "self_attn", "kv-interleaved", {}, "GQA 8/2"),
    (UE, BF, "prompt", "self_attn", "kv-interleaved", {}, "GQA 9/3, bf16 model"),
    (UD, F32, "prompt", "self_attn", "window-ignored", {}, "window 11, T 60"),
    (UD, F32, "prompt", "self_attn", "window-off", {"window": 12}, "window 11 + 1"),
    (UB, F32, "prompt", "self_attn", "window-off", {"window": 16}, "window 17 - 1 (layers >= 1 only)"),
    # rotary
    (UC, F32, "prompt", "self_attn", "rotary-theta", {"factor": 10.0}, None),
    (UD, F32, "prompt", "self_attn", "rotary-theta", {"factor": 3.0}, "between the grid's 2 and 10"),
    (UB, F32, "prompt", "self_attn", "rotary-theta", {"factor": 0.25}, "between the grid's 0.1 and 0.5"),
    (UA, F32, "prompt", "self_attn", "rotary-scaling-skipped", {}, "llama3"),
    (UE, F32, "prompt", "self_attn", "rotary-scaling-skipped", {}, "linear 3.5"),
    (UB, F32, "prompt", "self_attn", "rotary-gptj", {}, None),
    (UC, FP, "prompt", "self_attn", "rotary-gptj", {}, "fp16 model"),
    # an output in half
    (UA, F32, "prompt", "self_attn.v_proj", "output-bf16", {}, None),
    (UD, F32, "prompt", "mlp.down_proj", "output-fp16", {}, None),
    # the library's causes
    (UC, F32, "prompt", "mlp.down_proj", "acc-fp16", {"chunk": 1}, None),
    (UA, F32, "prompt", "self_attn.o_proj", "acc-bf16", {"chunk": 16}, "K 150"),
    (UB, F32, "prompt", "mlp.up_proj", "acc-fp16", {"chunk": 64}, "K 96"),
    (UA, F32, "prompt", "self_attn.q_proj", "bias-dropped", {}, None),
    (UB, F32, "prompt", "self_attn.v_proj", "bias-dropped", {}, None),
    (UE, F32, "prompt", "mlp.up_proj", "bias-dropped", {}, "mlp_bias"),
    (UE, F32, "prompt", "self_attn", "softmax-scale", {"scale": 1.0}, None),
    (UD, F32, "prompt", "self_attn", "softmax-scale", {"scale": 1.0 / 16}, "1/head_dim"),
    (UA, F32, "prompt", "self_attn", "softmax-scale", {"scale": 2.0 / 10 ** 0.5}, "2 x head_dim^-0.5"),
    (UB, F32, "prompt", "self_attn", "attention-fp16", {}, None),
    (UC, F32, "prompt", "self_attn", "attention-bf16", {}, "MQA"),
    (UB, F32, "prompt", "", "residual-term-dropped", {"term": "attn_out"}, "ln2_in = x"),
    (UD, F32, "prompt", "", "residual-term-dropped", {"term": "ln2_in"}, "out = mlp_out"),
    (UA, F32, "prompt", "", "residual-term-dropped", {"term": "mlp_out"}, "out = ln2_in"),
    (UE, BF, "prompt", "", "residual-term-dropped", {"term": "in"}, "ln2_in = attn_out, bf16 model"),
    # decode-only, in greedy generations with HF's KV cache
    (UB, F32, "generation", "self_attn", "rotary-offset", {"offset": 2}, None),
    (UD, F32, "generation", "self_attn", "rotary-offset", {"offset": -3}, None),
    (UC, F32, "generation", "self_attn", "kv-positions-dropped", {"position": 4}, None),
    (UE, F32, "generation", "self_attn", "kv-positions-dropped", {"position": 0}, "the sink"),
]

# (model, dtype, attention, kind): nothing planted; each must agree. The SDPA prompt runs are the faulty runs' A.
BENIGN = ([(m, F32, "sdpa", "prompt") for m in MODELS]
          + [(UB, BF, "sdpa", "prompt"), (UC, FP, "sdpa", "prompt"), (UE, BF, "sdpa", "prompt")]
          + [(UA, F32, "eager", "prompt"), (UD, F32, "eager", "prompt"), (UC, F32, "eager", "prompt")]
          + [(UA, F32, "sdpa", "generation"), (UB, F32, "sdpa", "generation"), (UC, F32, "sdpa", "generation"),
             (UD, F32, "sdpa", "generation"), (UE, F32, "sdpa", "generation")])


def layers_drawn(seed=2711):
    """Each fault's layer: drawn from the model's layers other than 1."""
    rng = random.Random(seed)
    out = []
    for f in FAULTS:
        arch = MODELS[f[0]]["arch"]
        # a window's cause where the layer has a window (Qwen2: layers >= max_window_layers)
        first = arch.get("max_window_layers", 0) if f[4].startswith("window") else 0
        out.append(rng.choice([i for i in range(first, arch["num_hidden_layers"]) if i != 1]))
    return out


def slot_of(module, cause, params):
    if cause == "residual-term-dropped":
        return "ln2_in" if params["term"] in ("attn_out", "in") else "out"
    return SLOT[module]


def fault_id(f, layer):
    m, dtype, kind, module, cause, params = f[:6]
    tag = "".join(f".{k}{v:g}" if isinstance(v, float) else f".{k}{v}" for k, v in params.items())
    pre = {F32: "", BF: "bf16-model.", FP: "fp16-model."}[dtype] + ("gen." if kind == "generation" else "")
    return f"{pre}{cause}{tag}.L{layer}.{slot_of(module, cause, params)}"


def benign_id(b):
    m, dtype, attn, kind = b
    return "clean" + {F32: "", BF: "-bf16", FP: "-fp16"}[dtype] + ("-eager" if attn == "eager" else "") + \
        ("-generation" if kind == "generation" else "")


# ---------------------------------------------------------------- plants not in llama_run_faults.py

def plant(torch, lrf, model, layer_idx, module, cause, params, off=False):
    """Patch layer `layer_idx` for `cause`: this file's plants, else llama_run_faults.plant. Returns the undo."""
    F = torch.nn.functional
    layer = model.model.layers[layer_idx]
    HALF = {"bf16": torch.bfloat16, "fp16": torch.float16}
    patched, hooks = [], []

    def put(mod, fn):
        mod.forward = fn
        patched.append(mod)

    def undo():
        for m in patched:
            del m.forward
        for h in hooks:
            h.remove()

    if cause in ("rms-no-weight", "rms-cast-order"):
        mod = layer.get_submodule(module)
        w, eps = mod.weight, mod.variance_epsilon

        def norm(x):
            if off:
                return lrf.rms_hf(x, w, eps)
            if cause == "rms-no-weight":
                xf = x.to(torch.float32)
                return (xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)).to(x.dtype)
            h = HALF[params["format"]]  # a half kernel: input and weight in h, the weight applied before one cast
            xf = x.to(h).to(torch.float32)
            xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
            return (w.to(h).to(torch.float32) * xf).to(h).to(x.dtype)

        put(mod, norm)
        return undo
    if cause in ("swiglu-gelu", "swiglu-relu"):
        mlp = layer.mlp

        def mlp_f(x):
            g, u = mlp.gate_proj(x), mlp.up_proj(x)
            a = F.silu(g) if off else (F.gelu(g) if cause == "swiglu-gelu" else F.relu(g))
            return mlp.down_proj(a * u)

        put(mlp, mlp_f)
        return undo
    if cause in ("output-bf16", "output-fp16"):
        mod = layer.get_submodule(module)
        h = HALF[cause.split("-")[1]]
        if not off:
            hooks.append(mod.register_forward_hook(lambda m, a, o: o.to(h).to(o.dtype)))
        return undo
    if cause in ("acc-fp16", "acc-bf16"):
        mod = layer.get_submodule(module)
        W, b, h, c = mod.weight, mod.bias, HALF[cause.split("-")[1]], params["chunk"]

        def lin(x):
            if off:
                return F.linear(x, W, b)
            xf, Wf = x.to(torch.float32), W.to(torch.float32)
            acc = torch.zeros(*x.shape[:-1], W.shape[0], dtype=torch.float32, device=x.device)
            for k0 in range(0, W.shape[1], c):
                if c == 1:  # each product rounded to fp32, then the running sum to h
                    part = xf[..., k0:k0 + 1] * Wf[:, k0]
                else:  # an fp32 sum over the chunk, added in h
                    part = F.linear(xf[..., k0:k0 + c], Wf[:, k0:k0 + c])
                acc = (acc + part).to(h).to(torch.float32)
            return (acc if b is None else acc + b.to(torch.float32)).to(x.dtype)

        put(mod, lin)
        return undo
    if cause == "residual-term-dropped":
        term = params["term"]

        def fwd(hidden_states, attention_mask=None, position_ids=None, past_key_values=None, use_cache=False,
                position_embeddings=None, **kwargs):
            x = hidden_states
            h, _ = layer.self_attn(hidden_states=layer.input_layernorm(x), attention_mask=attention_mask,
                                   position_ids=position_ids, past_key_values=past_key_values, use_cache=use_cache,
                                   position_embeddings=position_embeddings, **kwargs)
            mid = x + h if off else (x if term == "attn_out" else h if term == "in" else x + h)
            m = layer.mlp(layer.post_attention_layernorm(mid))
            return mid + m if off else (mid if term == "mlp_out" else m if term == "ln2_in" else mid + m)

        put(layer, fwd)
        return undo
    return lrf.plant(model, cause, module, params, off=off, at=layer_idx)


def rms_params(cause, params, cfg_eps, cfg_theta):
    """The parameters the named cause should carry (the config's values scaled as the plant says)."""
    if cause in ("rms-eps", "rms-eps-outside"):
        return {"eps": cfg_eps * params["factor"]}
    if cause == "rotary-theta":
        return {"theta": cfg_theta * params["factor"]}
    if cause in ("rms-bf16", "rms-fp16"):
        return {"format": cause[4:]}
    if cause in ("acc-fp16", "acc-bf16"):
        return {"format": cause[4:], "chunk": params["chunk"]}
    if cause in ("output-bf16", "output-fp16"):
        return {"format": cause[7:]}
    if cause == "qk-norm-skipped" or cause == "qk-norm-whole":
        return {}
    return dict(params)


# ---------------------------------------------------------------- make

def make(args):
    import torch
    from transformers import AutoModelForCausalLM

    import llama_fixtures as lf
    import llama_run_faults as lrf
    from dump_run import dump_generation, dump_run

    assert torch.cuda.is_available(), "needs a CUDA GPU"
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    os.makedirs(args.out, exist_ok=True)
    t0 = time.time()
    manifest = {"made_by": "tools/llama_unseen.py", "torch": torch.__version__, "gpu": torch.cuda.get_device_name(0),
                "models": {}, "runs": [], "problems": []}
    try:
        import transformers
        manifest["transformers"] = transformers.__version__
    except Exception:  # noqa: BLE001
        pass
    dt = {F32: torch.float32, BF: torch.bfloat16, FP: torch.float16}
    drawn = layers_drawn()

    def taps(model, L):
        have = dict(model.named_modules())
        subs = ("", ".input_layernorm", ".self_attn.q_proj", ".self_attn.k_proj", ".self_attn.v_proj",
                ".self_attn.q_norm", ".self_attn.k_norm", ".self_attn.o_proj", ".post_attention_layernorm",
                ".mlp.gate_proj", ".mlp.up_proj", ".mlp.down_proj")
        names = [f"model.layers.{i}{s}" for i in range(L) for s in subs]
        return [n for n in names if n in have]

    def load(mdir, dtype, attn):
        m = AutoModelForCausalLM.from_pretrained(mdir, dtype=dt[dtype], attn_implementation=attn)
        return m.eval().to("cuda")

    def dump(model, kind, ids, path, label, L):
        mods = taps(model, L)
        if kind == "generation":
            return dump_generation(model, torch.tensor(ids[:GEN_PROMPT]), GEN_NEW, path, label=label, modules=mods)
        return dump_run(model, torch.tensor(ids), path, label=label, modules=mods)

    keep = None  # --only: the faults whose id holds it, their models' clean SDPA runs
    if args.only:
        keep = {j for j, f in enumerate(FAULTS) if args.only in fault_id(f, drawn[j])}
    need = None if keep is None else {FAULTS[j][0] for j in keep}
    info = {}
    for name, spec in MODELS.items():
        if need is not None and name not in need:
            continue
        try:
            mdir = os.path.join(args.out, name)
            os.makedirs(mdir, exist_ok=True)
            cfg = lf.config_class(spec["model_type"])(**spec["arch"], **lf.COMMON, rope_parameters=dict(spec["rope"]))
            torch.manual_seed(spec["seed"])
            model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
            lf.init_every_op(model, spec["seed"])
            if spec["arch"].get("tie_word_embeddings"):
                model.tie_weights()
            model.to(dt[spec["dtype"]])
            model.save_pretrained(mdir)
            gc = os.path.join(mdir, "generation_config.json")
            if os.path.exists(gc):
                os.remove(gc)
            cj = lf.write_config(mdir, spec)
            g = torch.Generator().manual_seed(spec["seed"] + 7)
            ids = torch.randint(0, spec["arch"]["vocab_size"], (spec["T"],), generator=g).tolist()
            info[name] = {"dir": mdir, "ids": ids, "L": cj["num_hidden_layers"], "eps": cj["rms_norm_eps"],
                          "theta": spec["rope"]["rope_theta"]}
            manifest["models"][name] = {"dir": mdir, "tokens": ids, "T": len(ids), "seed": spec["seed"],
                                        "model_type": spec["model_type"], "checkpoint_dtype": spec["dtype"],
                                        "arch": spec["arch"], "rope": spec["rope"]}
            del model
            print(f"{name}: made ({time.time() - t0:.1f} s)", flush=True)
        except Exception as ex:  # noqa: BLE001
            traceback.print_exc()
            manifest["problems"].append(f"{name}: model failed: {ex!r}"[:400])

    clean = {}  # (model, dtype, kind) -> (file, tensors) of the clean SDPA run
    for b in BENIGN:
        name, dtype, attn, kind = b
        if name not in info or (keep is not None and not (attn == "sdpa" and any(
                FAULTS[j][:3] == (name, dtype, kind) for j in keep))):
            continue
        m = info[name]
        rid = benign_id(b)
        path = os.path.join(m["dir"], f"{rid}.run.safetensors")
        entry = {"run": f"{name}/{rid}", "model": name, "model_dir": m["dir"], "dtype": dtype, "attention": attn,
                 "kind": kind, "file": path, "fault": None}
        try:
            model = load(m["dir"], dtype, attn)
            t = dump(model, kind, m["ids"], path, f"{name} {rid}", m["L"])
            if attn == "sdpa":
                clean[(name, dtype, kind)] = (path, t)
            ref = clean.get((name, dtype, kind))
            if ref is not None:
                entry["effect"] = lrf.effect(t, ref[1])
            del model
        except Exception as ex:  # noqa: BLE001
            traceback.print_exc()
            entry["error"] = repr(ex)[:400]
            manifest["problems"].append(f"{name} {rid}: {ex!r}"[:400])
        manifest["runs"].append(entry)
        print(f"  {entry['run']}: {json.dumps(entry.get('effect', entry.get('error')))[:200]}", flush=True)

    loaded = {}
    order = sorted(range(len(FAULTS)), key=lambda j: (FAULTS[j][0], FAULTS[j][1]))  # one load per model and dtype
    for f, layer in ((FAULTS[j], drawn[j]) for j in order if keep is None or j in keep):
        name, dtype, kind, module, cause, params, note = f
        if name not in info:
            continue
        m = info[name]
        rid = fault_id(f, layer)
        path = os.path.join(m["dir"], f"{rid}.run.safetensors")
        full = f"model.layers.{layer}" + (f".{module}" if module else "")
        ref = clean.get((name, dtype, kind))
        entry = {"run": f"{name}/{rid}", "model": name, "model_dir": m["dir"], "dtype": dtype, "attention": "sdpa",
                 "kind": kind, "file": path, "clean": ref[0] if ref else None,
                 "fault": {"cause": cause, "layer": layer, "slot": slot_of(module, cause, params), "module": full,
                           "params": params, "expect_params": rms_params(cause, params, m["eps"], m["theta"]),
                           "note": note}}
        try:
            if ref is None:
                raise RuntimeError(f"no clean SDPA run of {name} ({dtype}, {kind})")
            key = (name, dtype)
            if key not in loaded:
                loaded.clear()
                torch.cuda.empty_cache()
                loaded[key] = load(m["dir"], dtype, "sdpa")
            model = loaded[key]
            undo = plant(torch, lrf, model, layer, module, cause, params, off=True)
            try:
                t_off = dump(model, kind, m["ids"], "/tmp/lunseen-off.safetensors", "off", m["L"])
            finally:
                undo()
            undo = plant(torch, lrf, model, layer, module, cause, params)
            try:
                t = dump(model, kind, m["ids"], path, f"{name} {cause} at layer {layer} ({full})", m["L"])
            finally:
                undo()
            eff = lrf.effect(t, ref[1])
            eff["off_logits_vs_clean"] = lrf.rel(t_off["logits"], ref[1]["logits"])
            entry["effect"] = eff
            if kind == "prompt" and eff["hidden_states_vs_clean"][layer] > 1e-6:
                manifest["problems"].append(f"{rid}: layer {layer}'s input moved")
        except Exception as ex:  # noqa: BLE001 - one fault must not stop the rest
            traceback.print_exc()
            entry["error"] = repr(ex)[:400]
            manifest["problems"].append(f"{name} {rid}: {ex!r}"[:400])
        manifest["runs"].append(entry)
        print(f"  {entry['run']}: {json.dumps(entry.get('effect', entry.get('error')))[:200]}", flush=True)
    with open(os.path.join(args.out, "manifest.json"), "w") as fh:
        json.dump(manifest, fh, indent=1)
    n_f = sum(1 for r in manifest["runs"] if r["fault"])
    print(f"{n_f} faulty and {len(manifest['runs']) - n_f} benign runs, {len(manifest['problems'])} problems, "
          f"{time.time() - t0:.1f} s")


# ---------------------------------------------------------------- the CLI on each run

def summarize(report, which):
    """One run's finding (A or B): layer, check, module, ratio, the causes named, the runner-up, the best tested."""
    fs = report.get("findings") or []
    f = next((x for x in fs if x.get("run") == which), {})
    chk = next((c for c in report.get("checks", []) if c.get("run") == which and c.get("id") == f.get("check")), {})
    c = f.get("cause") or {}
    if not isinstance(c, dict):
        c = {}
    pick = ("id", "params", "residual")
    return {"verdict": report.get("verdict"), "oracle": (report.get("oracle") or {}).get("route")
            if isinstance(report.get("oracle"), dict) else None,
            "diverged": f.get("diverged"), "layer": f.get("layer"), "check": f.get("check"), "op": chk.get("op"),
            "module": f.get("module"), "ratio": chk.get("ratio"), "sentence": f.get("sentence"),
            "named": [{k: n.get(k) for k in pick} for n in (c.get("named") or [])],
            "runnerUp": {k: (c.get("runnerUp") or {}).get(k) for k in pick} if c.get("runnerUp") else None,
            "tested": [{k: n.get(k) for k in pick} for n in (c.get("tested") or [])[:5]],
            "sampled": c.get("sampled"), "ms": c.get("ms")}


def cli(args):
    with open(os.path.join(args.out, "manifest.json")) as fh:
        manifest = json.load(fh)
    rep_dir = os.path.join(args.out, "reports")
    os.makedirs(rep_dir, exist_ok=True)

    def one(e):
        res = {k: e.get(k) for k in ("run", "model", "dtype", "attention", "kind", "fault", "effect", "error")}
        if e.get("error"):
            return res
        rep = os.path.join(rep_dir, e["run"].replace("/", "__") + ".json")
        faulty = e["fault"] is not None
        cmd = [args.node, args.cli, "compare-runs", "--model", e["model_dir"]]
        cmd += ["--a", e["clean"], "--b", e["file"]] if faulty else ["--a", e["file"]]
        cmd += ["--out", rep]
        t = time.time()
        try:
            p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout)
            res["rc"] = p.returncode
            res["line"] = p.stdout.strip()[-1500:]
            if p.returncode not in (0, 1):
                res["stderr_tail"] = p.stderr[-1500:]
        except subprocess.TimeoutExpired:
            res["rc"] = "timeout"
        except Exception as ex:  # noqa: BLE001
            res["rc"] = repr(ex)[:300]
        res["cli_s"] = round(time.time() - t, 2)
        try:
            with open(rep) as fh:
                r = json.load(fh)
            res["finding"] = summarize(r, "B" if faulty else "A")
            if faulty:
                res["clean_finding"] = {k: summarize(r, "A")[k] for k in ("diverged", "check", "ratio")}
        except Exception as ex:  # noqa: BLE001
            res["finding_error"] = repr(ex)[:200]
        res["verdict"] = verdict(res)
        return res

    runs = [e for e in manifest["runs"] if not args.only or args.only in e["run"]]
    with ThreadPoolExecutor(args.jobs) as ex, open(args.results, "w") as out:
        for res in ex.map(one, runs):
            out.write(json.dumps(res) + "\n")
            out.flush()
            print(res["run"], "|", res.get("rc"), "|", res.get("verdict"), flush=True)


def verdict(res):
    """found (born at the planted layer and slot, the planted cause named first with its parameters), or the class
    of the miss: benign-agrees / benign-diverged, no-finding, wrong-place, cause-unnamed, cause-wrong,
    params-off, error; found-range where a solved parameter is off by more than 0.1 % but its named range holds
    the planted value."""
    f = res.get("finding")
    if res.get("error") or f is None:
        return "error"
    fault = res.get("fault")
    if fault is None:
        return "benign-agrees" if not f.get("diverged") else "benign-diverged"
    if not f.get("diverged"):
        return "no-finding"
    chk = (f.get("check") or "").split("+")[-1]
    if f.get("layer") != fault["layer"] or chk.split(".")[-1] != fault["slot"]:
        # q/k norm faults planted on both norms may be born at either; the rotary is checked with the attention
        if not (fault["slot"] in ("q_norm", "k_norm") and chk.split(".")[-1] in ("q_norm", "k_norm")
                and f.get("layer") == fault["layer"]):
            return "wrong-place"
    named = f.get("named") or []
    if not named:
        return "cause-unnamed"
    if named[0]["id"] != fault["cause"]:
        return "cause-wrong"
    in_range = False
    params = named[0].get("params") or {}
    for k, v in (fault.get("expect_params") or {}).items():
        got = params.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            if not isinstance(got, (int, float)):
                return "params-off"
            if abs(got - v) > 1e-3 * abs(v):
                # A parameter solved from the run is named with the range the run allows (k + Low / High): the
                # planted value inside it is named, said apart from a value within 0.1 %.
                lo, hi = params.get(k + "Low"), params.get(k + "High")
                if not (isinstance(lo, (int, float)) and isinstance(hi, (int, float)) and lo <= v <= hi):
                    return "params-off"
                in_range = True
        elif got != v:
            return "params-off"
    if in_range:
        return "found-range" if len(named) == 1 else "found-among-range"
    return "found" if len(named) == 1 else "found-among"


def fmt_params(p):
    def v(x):
        return f"{x:.4g}" if isinstance(x, float) else str(x)
    return ", ".join(f"{k} {v(x)}" for k, x in (p or {}).items() if k != "from")


def table(args):
    """Markdown rows from a results JSONL: the Llama set's (cli), and with --neox GPT-NeoX's (cause_unseen.py cli),
    each NeoX run compared with --before (an earlier JSONL of the same set) where given."""
    rows = [json.loads(x) for x in open(args.results)]
    print("| run | planted (layer, op, cause, params) | op found | cause named (params) | residual | ratio | class |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        f, fa = r.get("finding") or {}, r.get("fault")
        named = f.get("named") or []
        nm = "; ".join(f"{n['id']} ({fmt_params(n.get('params'))})" for n in named) or "—"
        res = "; ".join(f"{n['residual']:.2g}" for n in named if n.get("residual") is not None) or "—"
        found = f"L{f.get('layer')} {f.get('check')}" if f.get("diverged") else "agrees"
        plant = "—" if fa is None else f"L{fa['layer']} {fa['slot']} {fa['cause']} ({fmt_params(fa['params'])})"
        ratio = f"{f['ratio']:.3g}" if isinstance(f.get("ratio"), (int, float)) else "—"
        print(f"| {r['run']} | {plant} | {found} | {nm} | {res} | {ratio} | {r.get('verdict')} |")
    if args.neox:
        before = {}
        if args.before:
            before = {json.loads(x)["run"]: json.loads(x) for x in open(args.before)}
        print("\n| NeoX run | planted (layer, op, cause) | op found | cause named first | class | before |")
        print("|---|---|---|---|---|---|")
        for r in (json.loads(x) for x in open(args.neox)):
            cls = neox_class(r)
            b = before.get(r["run"])
            f, fa = r.get("finding") or {}, r["fault"]
            named = [n["id"] for n in f.get("named") or []]
            print(f"| {r['run']} | L{fa['layer']} {fa['op']} {fa['cause']} | "
                  f"{('L' + str(f.get('layer')) + ' ' + str(f.get('op'))) if f.get('diverged') else 'agrees'} | "
                  f"{named[0] if named else '—'} | {cls} | {neox_class(b) if b else '—'} |")


def neox_class(r):
    """A GPT-NeoX unseen run: found (born at its layer and op, its cause named first), else the class of the miss."""
    f, fa = r.get("finding") or {}, r["fault"]
    if r.get("error") or not r.get("finding"):
        return "error"
    if not f.get("diverged"):
        return "no-finding"
    if f.get("layer") != fa["layer"] or f.get("op") != ("residual" if fa["op"] == "residual" else fa["op"]):
        return "wrong-place"
    named = [n["id"] for n in f.get("named") or []]
    if not named:
        return "cause-unnamed"
    return "found" if named[0] == fa["cause"] else "cause-wrong"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("what", choices=["make", "cli", "list", "table"])
    ap.add_argument("--neox", default=None)
    ap.add_argument("--before", default=None)
    ap.add_argument("--out", default="/tmp/lunseen")
    ap.add_argument("--node", default="/tmp/node")
    ap.add_argument("--cli", default=".devpack/cli.mjs")
    ap.add_argument("--results", default="results.jsonl")
    ap.add_argument("--jobs", type=int, default=8)
    ap.add_argument("--timeout", type=float, default=120)
    ap.add_argument("--only", default=None)
    args = ap.parse_args()
    if args.what == "make":
        make(args)
    elif args.what == "cli":
        cli(args)
    elif args.what == "table":
        table(args)
    else:
        for b in BENIGN:
            print(b[0], benign_id(b))
        for f, layer in zip(FAULTS, layers_drawn()):
            print(f[0], fault_id(f, layer), f[6] or "")
        print(f"{len(FAULTS)} faulty, {len(BENIGN)} benign")


if __name__ == "__main__":
    main()
