#!/usr/bin/env python3
"""Runs of the Llama family with ONE planted fault each (src/model/testdata/llama-runs/), and benign runs.

The models are the five fixtures of src/model/testdata/llama/ (tools/llama_fixtures.py), reused as they are. Each
faulty run patches one op of layer 1 of a Hugging Face model the way a buggy kernel would (an instance attribute:
the module's `forward`, or the attention's `forward` replaced by HF's own code with the core written here, every
variant a parameter), then writes it with tools/dump_run.py's `dump_run` (the prompt) or `dump_generation` (greedy
`generate` with its KV cache; the fault only in the decode steps). Taps: layer 1's op modules, `hidden_states.*`
and `logits`.

Every run: CUDA, TF32 off, the model loaded in fp32 from its checkpoint (unless the row says a half dtype: then the
whole model in that dtype), transformers' default attention (SDPA) unless the row says eager; the attention of a
patched layer is this file's core (eager arithmetic in fp32: scores, mask, softmax in fp32, values).

manifest.json: per run its file, model, dtype, attention, kind (prompt / generation), tokens, and fault {id, layer,
slot (the op registry's slot where the fault's op is checked), module, op, cause (the expected cause id), params,
description} or null; its effect: hidden states and logits against the clean run of the same model and dtype, and
the same patch with its fault switched off against the clean run (the patch's own arithmetic is HF's).

Needs a CUDA GPU, torch and transformers 5.x. Usage: python3 tools/llama_run_faults.py [--out DIR] [--only id,...]
"""

import argparse
import datetime
import json
import math
import os
import sys
import traceback

import torch
import transformers
from safetensors.torch import load_file
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dump_run import dump_generation, dump_run  # noqa: E402
from fixture_common import rel_l2 as rel  # noqa: E402

MODELS_ROOT = "src/model/testdata/llama"
OUT_ROOT = "src/model/testdata/llama-runs"
T_PROMPT = 11  # the first 11 of each fixture's 13 tokens: the runs stay small
GEN_PROMPT, GEN_NEW = 5, 6  # a generation: 5 prompt tokens, 6 new (rows 5 + 6 - 1 = 10)
LAYER = 1
DT = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
HALF = {"bf16": torch.bfloat16, "fp16": torch.float16}

A, B, C, D, E = "llama-gqa-llama3", "llama-mqa-linear-tied", "qwen2-bias", "qwen3-qknorm", "mistral-window"

# (run id, model, dtype, attention, kind, slot, module (in layer 1), cause id, params, description)
FAULTS = [
    # the family's own causes
    ("rms-bf16", A, "float32", "sdpa", "prompt", "ln1", "input_layernorm", "rms-bf16", {},
     "the input RMSNorm computed as HF computes it in a bf16 model: input and weight in bf16, the normalised value "
     "cast back to bf16, then times the weight (a bf16 product)"),
    ("rms-fp16", E, "float32", "sdpa", "prompt", "ln2", "post_attention_layernorm", "rms-fp16", {},
     "the post-attention RMSNorm computed as in an fp16 model (HF's cast order, in fp16)"),
    ("rms-cast-order", B, "bfloat16", "sdpa", "prompt", "ln2", "post_attention_layernorm", "rms-cast-order", {},
     "bf16 checkpoint: the weight applied in fp32 before the cast back to bf16 (one rounding, not two)"),
    ("rms-cast-order-f32", A, "float32", "sdpa", "prompt", "ln2", "post_attention_layernorm", "rms-cast-order",
     {"format": "bf16"}, "fp32 model, a bf16 RMSNorm kernel: input and weight in bf16, the weight applied in fp32 "
     "before the one cast back to bf16, returned as fp32"),
    ("rms-eps", A, "float32", "sdpa", "prompt", "ln2", "post_attention_layernorm", "rms-eps", {"factor": 100.0},
     "the RMSNorm's eps inside the root 100 x the config's"),
    ("rms-eps-outside", A, "float32", "sdpa", "prompt", "ln1", "input_layernorm", "rms-eps-outside",
     {"factor": 1.0}, "x / (sqrt(mean(x^2)) + eps): the config's eps outside the root"),
    ("rms-mean-subtracted", C, "float32", "sdpa", "prompt", "ln1", "input_layernorm", "rms-mean-subtracted", {},
     "the input norm subtracts the row mean: a LayerNorm without bias"),
    ("swiglu-swapped", A, "float32", "sdpa", "prompt", "swiglu", "mlp", "swiglu-swapped", {},
     "silu(up) * gate instead of silu(gate) * up"),
    ("swiglu-gelu-tanh", C, "float32", "sdpa", "prompt", "swiglu", "mlp", "swiglu-gelu-tanh", {},
     "GELU's tanh approximation in SiLU's place on the gate"),
    ("kv-interleaved", A, "float32", "sdpa", "prompt", "ctx", "self_attn", "kv-interleaved", {},
     "GQA 6/2 with the KV heads repeated in repeat()'s order: query head h reads KV head h mod 2, not h // 3"),
    ("window-ignored", E, "float32", "sdpa", "prompt", "ctx", "self_attn", "window-ignored", {},
     "Mistral's sliding window (5) ignored in layer 1: every earlier key seen"),
    ("rotary-theta", E, "float32", "sdpa", "prompt", "ctx", "self_attn", "rotary-theta", {"factor": 10.0},
     "the rotary tables from theta 10 x the config's"),
    ("rotary-scaling-skipped", A, "float32", "sdpa", "prompt", "ctx", "self_attn", "rotary-scaling-skipped", {},
     "the llama3 frequency scaling skipped: the default tables of the config's theta"),
    ("rotary-gptj", C, "float32", "sdpa", "prompt", "ctx", "self_attn", "rotary-gptj", {},
     "GPT-J's interleaved pairs (2i, 2i + 1) rotated instead of rotate-half"),
    ("qk-norm-skipped", D, "float32", "sdpa", "prompt", "q_norm", "self_attn.q_norm", "qk-norm-skipped", {},
     "Qwen3's q and k norms left out (both identities)"),
    ("qk-norm-whole", D, "float32", "sdpa", "prompt", "q_norm", "self_attn.q_norm", "qk-norm-whole", {},
     "Qwen3's q and k norms over the whole projection (all heads of a row at once), not per head"),
    # the library's causes on the family's ops
    ("acc-fp16", A, "float32", "sdpa", "prompt", "mlp_out", "mlp.down_proj", "acc-fp16", {},
     "down_proj's running sum kept in fp16: products in fp32, each partial sum rounded to fp16, the bias added in "
     "fp32 at the end"),
    ("acc-bf16", C, "float32", "sdpa", "prompt", "attn_out", "self_attn.o_proj", "acc-bf16", {},
     "o_proj's running sum kept in bf16"),
    ("bias-dropped", C, "float32", "sdpa", "prompt", "k", "self_attn.k_proj", "bias-dropped", {},
     "Qwen2's k_proj computed without its bias"),
    ("softmax-scale", B, "float32", "sdpa", "prompt", "ctx", "self_attn", "softmax-scale", {"scale": 1.0},
     "the scores not scaled (scale 1, not head_dim^-0.5)"),
    ("attention-fp16", B, "float32", "sdpa", "prompt", "ctx", "self_attn", "attention-fp16", {},
     "the attention core in fp16: q, k, v rounded, scores and their scaling in fp16, the softmax in fp32 rounded to "
     "fp16, the value product in fp16"),
    ("residual-term-dropped", E, "float32", "sdpa", "prompt", "ln2_in", "", "residual-term-dropped",
     {"term": "attn_out"}, "the first residual add drops the attention output: ln2_in = x"),
    # decode-only faults in a greedy generation with HF's KV cache
    ("decode-rotary-offset", A, "float32", "sdpa", "generation", "ctx", "self_attn", "rotary-offset",
     {"offset": 3}, "each decode step rotates its query and key at position p + 3 (the prompt's rows exact)"),
    ("decode-kv-dropped", D, "float32", "sdpa", "generation", "ctx", "self_attn", "kv-positions-dropped",
     {"position": 2}, "each decode step leaves cached position 2 out of its softmax (the prompt's rows exact)"),
]

# (run id, model, dtype, attention, kind): no fault; each must agree
BENIGN = [
    ("clean-" + m, m, "float32", "sdpa", "prompt") for m in (A, B, C, D, E)
] + [
    ("clean-eager-" + A, A, "float32", "eager", "prompt"),
    ("clean-eager-" + C, C, "float32", "eager", "prompt"),
    ("clean-bf16-" + B, B, "bfloat16", "sdpa", "prompt"),
    ("clean-generation-" + A, A, "float32", "sdpa", "generation"),
    ("clean-generation-" + D, D, "float32", "sdpa", "generation"),
]


def load(name, dtype, attn):
    m = AutoModelForCausalLM.from_pretrained(os.path.join(MODELS_ROOT, name), dtype=DT[dtype],
                                             attn_implementation=attn)
    return m.eval().to("cuda")


def tokens_of(name):
    with open(os.path.join(MODELS_ROOT, name, "hf_outputs.json")) as f:
        return json.load(f)["tokens"]


def tap_modules(model):
    p = f"model.layers.{LAYER}"
    names = [p] + [f"{p}.{m}" for m in ("input_layernorm", "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                                        "self_attn.q_norm", "self_attn.k_norm", "self_attn.o_proj",
                                        "post_attention_layernorm", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj")]
    have = dict(model.named_modules())
    return [n for n in names if n in have]


# ---------------------------------------------------------------- RMSNorm variants

def rms_hf(x, w, eps):
    """LlamaRMSNorm.forward: fp32 statistics, cast back to x's dtype, then times the weight."""
    xf = x.to(torch.float32)
    xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return w * xf.to(x.dtype)


def norm_fn(mod, cause, params, off):
    w, eps = mod.weight, mod.variance_epsilon

    def f(x):
        if off:
            return rms_hf(x, w, eps)
        if cause in ("rms-bf16", "rms-fp16"):
            h = HALF[cause.split("-")[1]]
            return rms_hf(x.to(h), w.to(h), eps).to(x.dtype)
        if cause == "rms-cast-order" and x.dtype == torch.float32:  # a bf16 kernel in an fp32 model
            xf = x.to(torch.bfloat16).to(torch.float32)
            xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
            return (w.to(torch.bfloat16).to(torch.float32) * xf).to(torch.bfloat16).to(x.dtype)
        if cause == "rms-cast-order":
            xf = x.to(torch.float32)
            xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
            return (w.to(torch.float32) * xf).to(x.dtype)
        if cause == "rms-eps":
            return rms_hf(x, w, eps * params["factor"])
        if cause == "rms-eps-outside":
            xf = x.to(torch.float32)
            xf = xf / (xf.pow(2).mean(-1, keepdim=True).sqrt() + eps * params["factor"])
            return w * xf.to(x.dtype)
        if cause == "rms-mean-subtracted":
            xf = x.to(torch.float32)
            xf = xf - xf.mean(-1, keepdim=True)
            xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
            return w * xf.to(x.dtype)
        if cause == "qk-norm-skipped":
            return x
        if cause == "qk-norm-whole":  # x [1, T, heads, hd]: one RMS over the row's heads·hd values
            xf = x.to(torch.float32)
            flat = xf.reshape(*xf.shape[:-2], -1)
            flat = flat * torch.rsqrt(flat.pow(2).mean(-1, keepdim=True) + eps)
            return w * flat.view_as(xf).to(x.dtype)
        raise ValueError(cause)

    return f


# ---------------------------------------------------------------- SwiGLU and linear variants

def mlp_fn(mlp, cause, off):
    def f(x):
        g, u = mlp.gate_proj(x), mlp.up_proj(x)
        if off:
            a = torch.nn.functional.silu(g) * u
        elif cause == "swiglu-swapped":
            a = torch.nn.functional.silu(u) * g
        elif cause == "swiglu-gelu-tanh":
            a = torch.nn.functional.gelu(g, approximate="tanh") * u
        else:
            raise ValueError(cause)
        return mlp.down_proj(a)

    return f


def acc_half_fn(mod, fmt, off):
    """x · W^T with the running sum over K kept in `fmt`: products and each add in fp32, the sum rounded after each
    add (k in order 0 … K-1), the bias added in fp32 at the end."""
    W, b, h = mod.weight, mod.bias, HALF[fmt]

    def f(x):
        if off:
            return torch.nn.functional.linear(x, W, b)
        acc = torch.zeros(*x.shape[:-1], W.shape[0], dtype=torch.float32, device=x.device)
        for j in range(W.shape[1]):
            acc = (acc + x[..., j:j + 1] * W[:, j]).to(h).to(torch.float32)
        return acc if b is None else acc + b

    return f


def bias_dropped_fn(mod, off):
    return lambda x: torch.nn.functional.linear(x, mod.weight, mod.bias if off else None)


# ---------------------------------------------------------------- the attention core

def rotate_half(x):
    return torch.cat((-x[..., x.shape[-1] // 2:], x[..., : x.shape[-1] // 2]), dim=-1)


def rotate_pairs(x):  # GPT-J: pairs (2i, 2i + 1)
    return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)


def inv_freq_default(theta, hd, device):
    """HF's compute_default_rope_parameters (fp32)."""
    return (1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).to(torch.float) / hd))).to(device)


def tables(inv_freq, positions, dtype):
    """HF's LlamaRotaryEmbedding.forward for the given positions: [1, n, hd] cos and sin."""
    freqs = positions[:, None].to(torch.float32) * inv_freq[None, :].to(torch.float32)
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos()[None].to(dtype), emb.sin()[None].to(dtype)


def attention_forward(model, attn, cause, params, off):
    """HF's attention forward (q/k/v projections, Qwen3's q/k norms, HF's rotary tables, the cache update, o_proj)
    with the core written here: eager arithmetic, GQA by repeat_interleave, the causal mask and the layer's window."""
    cfg = model.config
    H, KV, hd = cfg.num_attention_heads, cfg.num_key_value_heads, attn.head_dim
    g = H // KV
    window = getattr(attn, "sliding_window", None)
    if cfg.model_type == "mistral":
        window = getattr(cfg, "sliding_window", None)
    if not off and cause == "window-ignored":
        window = None
    if not off and cause == "window-off":  # a window of another width (tools/llama_unseen.py)
        window = params["window"]
    rot = model.model.rotary_emb

    def forward(hidden_states, position_embeddings=None, attention_mask=None, past_key_values=None, **kwargs):
        shape = hidden_states.shape[:-1]
        hs = (*shape, -1, hd)
        q = attn.q_proj(hidden_states).view(hs)
        k = attn.k_proj(hidden_states).view(hs)
        if hasattr(attn, "q_norm"):
            q, k = attn.q_norm(q), attn.k_norm(k)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = attn.v_proj(hidden_states).view(hs).transpose(1, 2)
        Tq = q.shape[2]
        past = past_key_values.get_seq_length(attn.layer_idx) if past_key_values is not None else 0
        cp = kwargs.get("cache_position")  # the rows' positions (a sliding-window cache's length is not them)
        pos = cp.to(q.device) if cp is not None else torch.arange(past, past + Tq, device=q.device)
        decode = int(pos[0]) > 0
        cos, sin = position_embeddings
        turn = rotate_half
        if not off:
            if cause == "rotary-theta":
                cos, sin = tables(inv_freq_default(cfg.rope_parameters["rope_theta"] * params["factor"], hd, q.device),
                                  pos, q.dtype)
            elif cause == "rotary-scaling-skipped":
                cos, sin = tables(inv_freq_default(cfg.rope_parameters["rope_theta"], hd, q.device), pos, q.dtype)
            elif cause == "rotary-gptj":
                cos = cos[..., : hd // 2].repeat_interleave(2, dim=-1)
                sin = sin[..., : hd // 2].repeat_interleave(2, dim=-1)
                turn = rotate_pairs
            elif cause == "rotary-offset" and decode:
                cos, sin = tables(rot.inv_freq, pos + params["offset"], q.dtype)
        c, s = cos.unsqueeze(1), sin.unsqueeze(1)
        q = q * c + turn(q) * s
        k = k * c + turn(k) * s
        if past_key_values is not None:
            k, v = past_key_values.update(k, v, attn.layer_idx)
        S = k.shape[2]  # a sliding-window cache (Mistral) returns the last keys only: they end at past + Tq
        if not off and cause == "kv-interleaved":
            k, v = k.repeat(1, g, 1, 1), v.repeat(1, g, 1, 1)  # head h reads KV head h mod KV
        else:
            k, v = k.repeat_interleave(g, dim=1), v.repeat_interleave(g, dim=1)  # HF's repeat_kv
        kpos = torch.arange(int(pos[-1]) + 1 - S, int(pos[-1]) + 1, device=q.device)
        allowed = kpos[None, :] <= pos[:, None]
        if window is not None:
            allowed = allowed & (kpos[None, :] > pos[:, None] - window)
        if not off and cause == "kv-positions-dropped" and decode:
            allowed = allowed & (kpos[None, :] != params["position"])
        scale = attn.scaling
        if not off and cause == "softmax-scale":
            scale = params["scale"]
        if not off and cause in ("attention-fp16", "attention-bf16"):
            h = HALF[cause.split("-")[1][:4]]
            sc = torch.matmul(q.to(h), k.to(h).transpose(2, 3)) * scale
            sc = sc.masked_fill(~allowed, float("-inf"))
            p = torch.softmax(sc, dim=-1, dtype=torch.float32).to(h)
            o = torch.matmul(p, v.to(h)).to(q.dtype)
        else:
            sc = torch.matmul(q, k.transpose(2, 3)) * scale
            sc = sc.masked_fill(~allowed, float("-inf"))
            p = torch.softmax(sc, dim=-1, dtype=torch.float32).to(q.dtype)
            o = torch.matmul(p, v)
        o = o.transpose(1, 2).reshape(*shape, -1).contiguous()
        return attn.o_proj(o), None

    return forward


def residual_forward(layer, params, off):
    """LlamaDecoderLayer.forward with the first residual add's attention term droppable."""

    def forward(hidden_states, attention_mask=None, position_ids=None, past_key_values=None, use_cache=False,
                position_embeddings=None, **kwargs):
        residual = hidden_states
        h = layer.input_layernorm(hidden_states)
        h, _ = layer.self_attn(hidden_states=h, attention_mask=attention_mask, position_ids=position_ids,
                               past_key_values=past_key_values, use_cache=use_cache,
                               position_embeddings=position_embeddings, **kwargs)
        h = residual if (not off and params["term"] == "attn_out") else residual + h
        residual = h
        h = layer.mlp(layer.post_attention_layernorm(h))
        return residual + h

    return forward


def plant(model, cause, module, params, off=False, at=LAYER):
    """Patch layer `at` (LAYER unless said) for `cause`; returns the undo."""
    layer = model.model.layers[at]
    attn = layer.self_attn
    patched = []

    def put(mod, fn):
        mod.forward = fn
        patched.append(mod)

    if cause.startswith("rms-"):
        mod = layer.get_submodule(module)
        put(mod, norm_fn(mod, cause, params, off))
    elif cause.startswith("qk-norm-"):
        for mod in (attn.q_norm, attn.k_norm):
            put(mod, norm_fn(mod, cause, params, off))
    elif cause.startswith("swiglu-"):
        put(layer.mlp, mlp_fn(layer.mlp, cause, off))
    elif cause in ("acc-fp16", "acc-bf16"):
        mod = layer.get_submodule(module)
        put(mod, acc_half_fn(mod, cause.split("-")[1], off))
    elif cause == "bias-dropped":
        mod = layer.get_submodule(module)
        put(mod, bias_dropped_fn(mod, off))
    elif cause == "residual-term-dropped":
        put(layer, residual_forward(layer, params, off))
    else:
        put(attn, attention_forward(model, attn, cause, params, off))

    def undo():
        for mod in patched:
            del mod.forward

    return undo


# ---------------------------------------------------------------- runs

def dump(model, kind, ids, path, label):
    mods = tap_modules(model)
    if kind == "generation":
        return dump_generation(model, torch.tensor(ids[:GEN_PROMPT]), GEN_NEW, path, label=label, modules=mods)
    return dump_run(model, torch.tensor(ids[:T_PROMPT]), path, label=label, modules=mods)


def effect(run, clean):
    out = {"logits_vs_clean": rel(run["logits"], clean["logits"])}
    hs = sorted((k for k in run if k.startswith("hidden_states.")), key=lambda k: int(k.split(".")[1]))
    out["hidden_states_vs_clean"] = [rel(run[k], clean[k]) for k in hs]
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=OUT_ROOT)
    ap.add_argument("--only", default="")
    a = ap.parse_args()
    only = set(x for x in a.only.split(",") if x)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = False  # fp16 products accumulate in fp32
    torch.backends.cuda.matmul.allow_bf16_reduced_precision_reduction = False
    os.makedirs(a.out, exist_ok=True)
    runs, problems = [], []
    clean = {}  # (model, dtype, kind) -> tensors of the clean SDPA run

    def reference(name, dtype, kind):
        key = (name, dtype, kind)
        if key not in clean:
            m = load(name, dtype, "sdpa")
            path = os.path.join("/tmp", f"ref-{name}-{dtype}-{kind}.safetensors")
            clean[key] = {k: v for k, v in dump(m, kind, tokens_of(name), path, "ref").items()}
        return clean[key]

    for rid, name, dtype, attn, kind in BENIGN:
        if only and rid not in only:
            continue
        try:
            m = load(name, dtype, attn)
            path = os.path.join(a.out, rid + ".safetensors")
            t = dump(m, kind, tokens_of(name), path, f"clean, {attn}, {dtype}")
            runs.append(dict(file=rid + ".safetensors", model=name, dtype=dtype, attention=attn, kind=kind,
                             fault=None, effect=effect(t, reference(name, dtype, kind)),
                             bytes=os.path.getsize(path)))
            print(f"{rid}: {runs[-1]['effect']}", flush=True)
        except Exception:
            problems.append(rid)
            traceback.print_exc()

    for rid, name, dtype, attn, kind, slot, module, cause, params, words in FAULTS:
        if only and rid not in only:
            continue
        try:
            ref = reference(name, dtype, kind)
            m = load(name, dtype, attn)
            ids = tokens_of(name)
            undo = plant(m, cause, module, params, off=True)
            t_off = dump(m, kind, ids, "/tmp/off.safetensors", "off")
            undo()
            undo = plant(m, cause, module, params)
            path = os.path.join(a.out, rid + ".safetensors")
            t = dump(m, kind, ids, path, f"{cause} at layer {LAYER} ({module or 'the residual add'})")
            undo()
            eff = effect(t, ref)
            eff["off_logits_vs_clean"] = rel(t_off["logits"], ref["logits"])
            full = f"model.layers.{LAYER}" + (f".{module}" if module else "")
            runs.append(dict(file=rid + ".safetensors", model=name, dtype=dtype, attention=attn, kind=kind,
                             fault=dict(id=rid, layer=LAYER, slot=slot, module=full, cause=cause, params=params,
                                        description=words),
                             effect=eff, bytes=os.path.getsize(path)))
            print(f"{rid}: {eff}", flush=True)
            if eff["off_logits_vs_clean"] > 1e-5:
                print(f"PROBLEM {rid}: the patch with its fault off is {eff['off_logits_vs_clean']} from clean")
            # a generation's fault changes the tokens it generates, and so every later row: prompts only
            if kind == "prompt" and eff["hidden_states_vs_clean"][LAYER] > 1e-6:
                print(f"PROBLEM {rid}: layer {LAYER}'s input moved ({eff['hidden_states_vs_clean'][LAYER]})")
        except Exception:
            problems.append(rid)
            traceback.print_exc()

    man_path = os.path.join(a.out, "manifest.json")
    old = []
    if only and os.path.exists(man_path):
        with open(man_path) as f:
            old = [r for r in json.load(f)["runs"] if r["file"] not in {x["file"] for x in runs}]
    manifest = dict(
        about="PyTorch runs of the Llama-family fixture models (src/model/testdata/llama/) with one planted fault "
              "each at layer 1, and benign runs (tools/llama_run_faults.py; docs/FAMILIES.md)",
        torch=torch.__version__, transformers=transformers.__version__, gpu=torch.cuda.get_device_name(0),
        date=datetime.date.today().isoformat(), tf32=False, layer=LAYER,
        prompt_tokens=T_PROMPT, generation=dict(prompt=GEN_PROMPT, new=GEN_NEW),
        runs=old + runs)
    with open(man_path, "w") as f:
        json.dump(manifest, f, indent=1)
    total = sum(os.path.getsize(os.path.join(a.out, r["file"])) for r in manifest["runs"])
    print(f"{len(runs)} runs written, {total} bytes; problems: {problems or 'none'}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
