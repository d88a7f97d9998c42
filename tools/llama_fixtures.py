#!/usr/bin/env python3
"""HF reference fixtures of the Llama family (src/model/testdata/llama/<name>/): config.json, model.safetensors and
hf_outputs.json for tiny random models of each flavour (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM,
MistralForCausalLM), at odd sizes.

For each model, runs Hugging Face transformers' own forward (eager attention, CPU) in fp64 (weights upcast from the
on-disk dtype) and fp32 and writes:
  tokens; fp64 {embeddings [T][d], layers [L][T][d] (residual after each decoder layer, before the final norm),
  final_norm [T][d], logits [T][V]}; fp32_vs_fp64_rel_l2; greedy {prompt, new_ids} (HF generate, fp32, KV cache).
It also runs an independent fp64 re-implementation written here from config.json and the safetensors file alone
(docs/FAMILIES.md's semantics, every op in float64): hf_fp64_vs_independent_fp64_rel_l2 says how far HF's "fp64"
forward is from fp64 (HF computes RMSNorm, the softmax and the RoPE tables in fp32 whatever the model's dtype).

Models (see MODELS below): llama-gqa-llama3, llama-mqa-linear-tied, qwen2-bias, qwen3-qknorm, mistral-window.

Usage: python3 tools/llama_fixtures.py [--only name[,name]] [--sources DIR (copy HF's modeling files there)]
       [--runs (also a dump_run of qwen3-qknorm, fp32: run.safetensors beside it)]
       [--rope (also HF's fp32 RoPE tables of each fixture: hf_rope.json beside it)]
"""

import argparse
import datetime
import json
import math
import os
import platform
import shutil
import sys

import torch
import transformers
from safetensors import safe_open
from transformers import AutoModelForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_common import (  # noqa: E402
    greedy_generate,
    greedy_json,
    greedy_manual,
    outputs_json,
    outputs_rel_l2,
    write_json,
)

OUT_ROOT = "src/model/testdata/llama"
PROBLEMS = []

MODELS = {
    # GQA 6 q heads / 2 KV heads, llama3 frequency scaling (all three bands at head_dim 12 with theta 5e5 and
    # original_max_position_embeddings 64), q/k/v/o and MLP biases, classic rope_theta + rope_scaling keys, F32
    # (vocabulary 131: the F32 fixture is the largest; all five stay under 2 MB).
    "llama-gqa-llama3": dict(
        seed=11, model_type="llama", dtype=torch.float32, keys="classic",
        arch=dict(vocab_size=131, hidden_size=72, num_hidden_layers=2, num_attention_heads=6,
                  num_key_value_heads=2, intermediate_size=100, max_position_embeddings=256,
                  rms_norm_eps=1e-5, attention_bias=True, mlp_bias=True, tie_word_embeddings=False),
        rope=dict(rope_type="llama3", rope_theta=500000.0, factor=8.0, low_freq_factor=1.0,
                  high_freq_factor=4.0, original_max_position_embeddings=64),
        n_tokens=13, prompt_len=5, new_tokens=8,
    ),
    # MQA (one KV head for 4 query heads, head_dim 18), linear scaling, tied embeddings, BF16, 5.x keys.
    "llama-mqa-linear-tied": dict(
        seed=22, model_type="llama", dtype=torch.bfloat16, keys="v5",
        arch=dict(vocab_size=257, hidden_size=72, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=1, intermediate_size=96, max_position_embeddings=256,
                  rms_norm_eps=1e-6, tie_word_embeddings=True),
        rope=dict(rope_type="linear", rope_theta=10000.0, factor=2.5),
        n_tokens=13, prompt_len=4, new_tokens=8,
    ),
    # Qwen2: q/k/v biases (always), GQA 6/3, theta 1e6, F16, sliding window 6 on layers >= max_window_layers 1.
    "qwen2-bias": dict(
        seed=33, model_type="qwen2", dtype=torch.float16, keys="v5",
        arch=dict(vocab_size=271, hidden_size=72, num_hidden_layers=2, num_attention_heads=6,
                  num_key_value_heads=3, intermediate_size=88, max_position_embeddings=512,
                  rms_norm_eps=1e-6, tie_word_embeddings=False, use_sliding_window=True, sliding_window=6,
                  max_window_layers=1),
        rope=dict(rope_type="default", rope_theta=1000000.0),
        n_tokens=13, prompt_len=5, new_tokens=8,
    ),
    # Qwen3: per-head q/k RMSNorm before the rotary, explicit head_dim 32 != 72 / 4, GQA 4/2, BF16.
    "qwen3-qknorm": dict(
        seed=44, model_type="qwen3", dtype=torch.bfloat16, keys="v5",
        arch=dict(vocab_size=261, hidden_size=72, num_hidden_layers=2, num_attention_heads=4,
                  num_key_value_heads=2, head_dim=32, intermediate_size=96, max_position_embeddings=512,
                  rms_norm_eps=1e-6, tie_word_embeddings=False, attention_bias=False, use_sliding_window=False),
        rope=dict(rope_type="default", rope_theta=1000000.0),
        n_tokens=13, prompt_len=5, new_tokens=8,
    ),
    # Mistral: a sliding window of 5 on every layer (T = 13), GQA 6/2, F16, classic keys.
    "mistral-window": dict(
        seed=55, model_type="mistral", dtype=torch.float16, keys="classic",
        arch=dict(vocab_size=259, hidden_size=72, num_hidden_layers=2, num_attention_heads=6,
                  num_key_value_heads=2, intermediate_size=96, max_position_embeddings=512,
                  rms_norm_eps=1e-5, tie_word_embeddings=False, sliding_window=5),
        rope=dict(rope_type="default", rope_theta=10000.0),
        n_tokens=13, prompt_len=5, new_tokens=8,
    ),
}

COMMON = dict(hidden_act="silu", attention_dropout=0.0, bos_token_id=None, eos_token_id=None, pad_token_id=None)


def config_class(model_type):
    return transformers.AutoConfig.for_model(model_type).__class__


@torch.no_grad()
def init_every_op(model, seed):
    """Seeded init where every op matters: linear weights N(0, 1/fan_in), biases N(0, 0.1), RMSNorm weights
    1 + N(0, 0.1) (the q/k norms too), embeddings N(0, 1) (a tied LM head with them)."""
    g = torch.Generator().manual_seed(seed)

    def normal_(t, std, mean=0.0):
        t.copy_(torch.randn(t.shape, generator=g, dtype=torch.float64) * std + mean)

    tied = model.get_input_embeddings().weight
    for _, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear) and mod.weight is tied:
            continue  # a tied LM head is the embedding: initialised as one (N(0, 1)), not as a linear
        if isinstance(mod, torch.nn.Linear):
            normal_(mod.weight, 1.0 / math.sqrt(mod.in_features))
            if mod.bias is not None:
                normal_(mod.bias, 0.1)
        elif type(mod).__name__.endswith("RMSNorm"):
            normal_(mod.weight, 0.1, 1.0)
        elif isinstance(mod, torch.nn.Embedding):
            normal_(mod.weight, 1.0)


# ---------------------------------------------------------------- config.json -> semantics (docs/FAMILIES.md)

def rope_of(cj):
    """(theta, scaling dict with rope_type) from config.json, either key style."""
    rp = cj.get("rope_parameters") or cj.get("rope_scaling") or {}
    theta = rp.get("rope_theta", cj.get("rope_theta", 10000.0))
    kind = rp.get("rope_type", rp.get("type", "default"))
    sc = dict(rp, rope_type=kind)
    if kind == "llama3":
        sc["original_max_position_embeddings"] = cj.get(
            "original_max_position_embeddings",
            rp.get("original_max_position_embeddings", cj["max_position_embeddings"]))
    return float(theta), sc


def windows_of(cj):
    L = cj["num_hidden_layers"]
    mt = cj["model_type"]
    if mt == "llama":
        return [None] * L
    if mt == "mistral":
        return [cj.get("sliding_window", 4096)] * L
    w = cj.get("sliding_window", 4096) if cj.get("use_sliding_window", False) else None
    lt = cj.get("layer_types")
    if lt is None:
        lt = ["sliding_attention" if w is not None and i >= cj.get("max_window_layers", 28) else "full_attention"
              for i in range(L)]
    return [w if t == "sliding_attention" else None for t in lt]


def inv_freq_f64(cj, hd):
    theta, sc = rope_of(cj)
    inv = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    if sc["rope_type"] == "linear":
        inv = inv / sc["factor"]
    elif sc["rope_type"] == "llama3":
        f, lo, hi = sc["factor"], sc["low_freq_factor"], sc["high_freq_factor"]
        omp = sc["original_max_position_embeddings"]
        wl = 2 * math.pi / inv
        out = []
        for w_, i_ in zip(wl.tolist(), inv.tolist()):
            if w_ < omp / hi:
                out.append(i_)
            elif w_ > omp / lo:
                out.append(i_ / f)
            else:
                s = (omp / w_ - lo) / (hi - lo)
                out.append((1 - s) * i_ / f + s * i_)
        inv = torch.tensor(out, dtype=torch.float64)
    return inv


@torch.no_grad()
def independent_fp64(st_path, cj, ids):
    sd = {}
    with safe_open(st_path, "pt") as f:
        for k in f.keys():
            sd[k] = f.get_tensor(k).double()
    mt = cj["model_type"]
    d, H, L = cj["hidden_size"], cj["num_attention_heads"], cj["num_hidden_layers"]
    KV = cj.get("num_key_value_heads") or H
    hd = cj.get("head_dim") or d // H
    g = H // KV
    eps = cj.get("rms_norm_eps", 1e-6)
    T = len(ids)
    inv = inv_freq_f64(cj, hd)
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[None]  # [1, T, hd]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[None]
    wins = windows_of(cj)

    def rms(v, w):
        return sd[w] * (v * torch.rsqrt((v * v).mean(-1, keepdim=True) + eps))

    def lin(v, p):
        return v @ sd[p + ".weight"].T + (sd[p + ".bias"] if p + ".bias" in sd else 0.0)

    def rope(t):  # [heads, T, hd], rotate-half over the whole head
        rot = torch.cat([-t[..., hd // 2:], t[..., : hd // 2]], -1)
        return t * cos + rot * sin

    x = sd["model.embed_tokens.weight"][torch.tensor(ids)]
    emb = x.clone()
    layers = []
    i_ = torch.arange(T)[:, None]
    j_ = torch.arange(T)[None, :]
    for li in range(L):
        p = f"model.layers.{li}."
        h = rms(x, p + "input_layernorm.weight")
        q = lin(h, p + "self_attn.q_proj").view(T, H, hd).transpose(0, 1)
        k = lin(h, p + "self_attn.k_proj").view(T, KV, hd).transpose(0, 1)
        v = lin(h, p + "self_attn.v_proj").view(T, KV, hd).transpose(0, 1)
        if mt == "qwen3":
            q = rms(q, p + "self_attn.q_norm.weight")
            k = rms(k, p + "self_attn.k_norm.weight")
        q, k = rope(q), rope(k)
        k = k.repeat_interleave(g, 0)  # KV head j serves query heads j*g .. j*g+g-1 (repeat_kv)
        v = v.repeat_interleave(g, 0)
        s = q @ k.transpose(1, 2) * hd ** -0.5
        allowed = j_ <= i_
        if wins[li] is not None:
            allowed = allowed & (j_ > i_ - wins[li])
        s = s.masked_fill(~allowed, float("-inf"))
        a = (s.softmax(-1) @ v).transpose(0, 1).reshape(T, H * hd)
        x = x + lin(a, p + "self_attn.o_proj")
        h = rms(x, p + "post_attention_layernorm.weight")
        gate = lin(h, p + "mlp.gate_proj")
        x = x + lin(torch.nn.functional.silu(gate) * lin(h, p + "mlp.up_proj"), p + "mlp.down_proj")
        layers.append(x)
    fn = rms(x, "model.norm.weight")
    head = sd.get("lm_head.weight", sd["model.embed_tokens.weight"])
    return {"embeddings": emb, "layers": layers, "final_norm": fn, "logits": fn @ head.T}


# ---------------------------------------------------------------- HF forward with captures

def load(path, dtype):
    return AutoModelForCausalLM.from_pretrained(path, dtype=dtype, attn_implementation="eager").eval()


@torch.no_grad()
def hf_capture(model, ids):
    inner = model.model
    L = len(inner.layers)
    got = {"layers": [None] * L}
    hooks = []

    def first(o):
        return o[0] if isinstance(o, (tuple, list)) else o

    for li, layer in enumerate(inner.layers):
        hooks.append(layer.register_forward_hook(lambda m, i, o, li=li: got["layers"].__setitem__(li, first(o))))
    hooks.append(inner.norm.register_forward_hook(lambda m, i, o: got.__setitem__("fn", o)))
    try:
        out = model(input_ids=torch.tensor([ids]), output_hidden_states=True, use_cache=False)
    finally:
        for h in hooks:
            h.remove()
    hs = out.hidden_states
    layers = [t[0] for t in got["layers"]]
    assert len(hs) == L + 1, f"expected {L + 1} hidden states, got {len(hs)}"
    checks = {
        "hs_i_vs_layer_hook_max_abs": max([0.0] + [(hs[i][0] - layers[i - 1]).abs().max().item() for i in range(1, L)]),
        "hsL_vs_norm_hook_max_abs": (hs[L][0] - got["fn"][0]).abs().max().item(),
    }
    emb = inner.embed_tokens(torch.tensor([ids]))[0]
    checks["hs0_vs_embed_max_abs"] = (hs[0][0] - emb).abs().max().item()
    return {"embeddings": hs[0][0], "layers": layers, "final_norm": got["fn"][0], "logits": out.logits[0]}, checks


def write_config(out_dir, spec):
    """Rewrites the saved config.json's RoPE keys in the spec's style (classic: rope_theta + rope_scaling)."""
    cpath = os.path.join(out_dir, "config.json")
    with open(cpath) as f:
        cj = json.load(f)
    print(f"  as written by transformers: { {k: cj.get(k) for k in ('rope_parameters', 'rope_scaling', 'rope_theta', 'layer_types', 'sliding_window', 'use_sliding_window', 'head_dim')} }")
    rope = dict(spec["rope"])
    for k in ("rope_parameters", "rope_scaling", "rope_theta"):
        cj.pop(k, None)
    if spec["keys"] == "classic":
        cj["rope_theta"] = rope.pop("rope_theta")
        cj["rope_scaling"] = None if rope["rope_type"] == "default" else rope
    else:
        cj["rope_parameters"] = rope
    with open(cpath, "w") as f:
        json.dump(cj, f, indent=2, sort_keys=True)
        f.write("\n")
    return cj


def make(name, spec, env):
    out_dir = os.path.join(OUT_ROOT, name)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    os.makedirs(out_dir)
    cls = config_class(spec["model_type"])
    rope = dict(spec["rope"])
    cfg = cls(**spec["arch"], **COMMON, rope_parameters=rope)
    torch.manual_seed(spec["seed"])
    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).eval()
    init_every_op(model, spec["seed"])
    if spec["arch"].get("tie_word_embeddings"):
        model.tie_weights()
    model.to(spec["dtype"])
    model.save_pretrained(out_dir)
    for f in ("generation_config.json",):
        if os.path.exists(os.path.join(out_dir, f)):
            os.remove(os.path.join(out_dir, f))
    cj = write_config(out_dir, spec)
    st_path = os.path.join(out_dir, "model.safetensors")
    with safe_open(st_path, "pt") as f:
        names = sorted(f.keys())
        disk_dtype = str(f.get_tensor(names[0]).dtype).replace("torch.", "")
    g = torch.Generator().manual_seed(spec["seed"] + 7)
    ids = torch.randint(0, spec["arch"]["vocab_size"], (spec["n_tokens"],), generator=g).tolist()
    prompt = ids[: spec["prompt_len"]]

    m64 = load(out_dir, torch.float64)
    m32 = load(out_dir, torch.float32)
    print(f"  loaded: rope_parameters {m64.config.rope_parameters}; layer_types {getattr(m64.config, 'layer_types', None)};"
          f" sliding_window {getattr(m64.config, 'sliding_window', None)}; tensors {names}")
    r64, checks = hf_capture(m64, ids)
    r32, checks32 = hf_capture(m32, ids)
    ref = independent_fp64(st_path, cj, ids)
    gen_ids = greedy_generate(m32, prompt, spec["new_tokens"])
    man32, _ = greedy_manual(m32, prompt, spec["new_tokens"])
    man64, gaps64 = greedy_manual(m64, prompt, spec["new_tokens"])

    res = {
        "model": name,
        "model_type": spec["model_type"],
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "device": "cpu",
        "host_gpu": env["gpu"],
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "weights_dtype_on_disk": disk_dtype,
        "attn_implementation": "eager",
        "tokens": list(ids),
        "fp64": outputs_json(r64),
        "fp32_vs_fp64_rel_l2": outputs_rel_l2(r32, r64),
        "hf_fp64_vs_independent_fp64_rel_l2": outputs_rel_l2(r64, ref),
        "checks_fp64": checks,
        "greedy": greedy_json(prompt, gen_ids, man32, man64, gaps64),
    }
    path = os.path.join(out_dir, "hf_outputs.json")
    write_json(path, res)
    print(f"  {path}: {os.path.getsize(path)} bytes; model.safetensors {os.path.getsize(st_path)} bytes; disk={disk_dtype}")
    print(f"  checks fp64: {checks}")
    print(f"  fp32 vs fp64: {res['fp32_vs_fp64_rel_l2']}")
    print(f"  hf fp64 vs independent fp64: {res['hf_fp64_vs_independent_fp64_rel_l2']}")
    print(f"  greedy {prompt} -> {gen_ids} (min gap {res['greedy']['min_top1_top2_logit_gap_fp64']})")
    for k, v in checks.items():
        if v > 1e-9:
            PROBLEMS.append(f"{name}: check {k} = {v}")
    ind = res["hf_fp64_vs_independent_fp64_rel_l2"]
    worst = max(ind["layers"] + [ind["logits"], ind["final_norm"], ind["embeddings"]])
    if worst > 1e-5:
        PROBLEMS.append(f"{name}: HF fp64 disagrees with the independent fp64 reference: {worst}")
    if gen_ids != man32 or gen_ids != man64:
        PROBLEMS.append(f"{name}: generate {gen_ids} vs manual fp32 {man32} / fp64 {man64}")
    return res


RUN_MODELS = ("qwen3-qknorm",)


def dump_runs():
    """A dump_run (tools/dump_run.py) of each RUN_MODELS fixture, loaded in fp32, on its fixture tokens: layer 1's
    modules and the model-level ones (run.safetensors beside the fixture): HF's own module names and values, for the
    Llama family's run names (src/model/run-names.ts) and taps."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from dump_run import dump_run

    for name in RUN_MODELS:
        d = os.path.join(OUT_ROOT, name)
        with open(os.path.join(d, "hf_outputs.json")) as f:
            ids = json.load(f)["tokens"]
        m = load(d, torch.float32)
        names = [n for n, _ in m.named_modules() if n and (n.startswith("model.layers.1") or "." not in n
                 or n in ("model.embed_tokens", "model.norm", "model.rotary_emb"))]
        path = os.path.join(d, "run.safetensors")
        out = dump_run(m, torch.tensor(ids), path, label="hf fp32", modules=names)
        print(f"  {path}: {os.path.getsize(path)} bytes, {len(out)} tensors: {sorted(out)}")


@torch.no_grad()
def dump_rope():
    """HF's own RoPE tables of each fixture, loaded in fp32 (hf_rope.json beside it): the inv_freq buffer (after
    the linear or llama3 scaling) and cos/sin at positions 0..T-1, all fp32 values written exactly."""
    for name in MODELS:
        d = os.path.join(OUT_ROOT, name)
        if not os.path.exists(os.path.join(d, "hf_outputs.json")):
            continue
        with open(os.path.join(d, "hf_outputs.json")) as f:
            T = len(json.load(f)["tokens"])
        m = load(d, torch.float32)
        rot = m.model.rotary_emb
        inv = rot.inv_freq.detach().float().cpu()
        x = torch.zeros(1, T, m.config.hidden_size, dtype=torch.float32)
        cos, sin = rot(x, torch.arange(T)[None, :])
        res = {"model": name, "transformers": transformers.__version__, "torch": torch.__version__,
               "rope_type": rot.rope_type, "attention_scaling": float(rot.attention_scaling),
               "inv_freq": [float(v) for v in inv.tolist()],
               "cos": [[float(v) for v in row] for row in cos[0].float().tolist()],
               "sin": [[float(v) for v in row] for row in sin[0].float().tolist()]}
        path = os.path.join(d, "hf_rope.json")
        write_json(path, res)
        print(f"  {path}: {os.path.getsize(path)} bytes; {rot.rope_type}, inv_freq {inv.tolist()[:3]}…")


def copy_sources(dest):
    """HF's own modeling files of the family, for reading (docs/FAMILIES.md was checked against them)."""
    import transformers.masking_utils as mu
    import transformers.modeling_rope_utils as ru

    os.makedirs(dest, exist_ok=True)
    root = os.path.dirname(transformers.__file__)
    for mt in ("llama", "qwen2", "qwen3", "mistral"):
        for kind in ("modeling", "configuration"):
            src = os.path.join(root, "models", mt, f"{kind}_{mt}.py")
            if os.path.exists(src):
                shutil.copy(src, dest)
    for m in (mu, ru):
        shutil.copy(m.__file__, dest)
    for extra in ("integrations/sdpa_attention.py", "configuration_utils.py"):
        src = os.path.join(root, extra)
        if os.path.exists(src):
            shutil.copy(src, dest)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--sources", default="")
    ap.add_argument("--runs", action="store_true", help="also dump_run the RUN_MODELS fixtures (run.safetensors)")
    ap.add_argument("--rope", action="store_true", help="also write each fixture's HF RoPE tables (hf_rope.json)")
    args = ap.parse_args()
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    env = {"gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, python {platform.python_version()}")
    if args.sources:
        copy_sources(args.sources)
    only = set(filter(None, args.only.split(",")))
    summary = {}
    for name, spec in MODELS.items():
        if only and name not in only:
            continue
        print(name)
        try:
            summary[name] = make(name, spec, env)["greedy"]["new_ids"]
        except Exception as e:  # noqa: BLE001 - keep going with the other models
            import traceback

            traceback.print_exc()
            PROBLEMS.append(f"{name}: {e!r}")
    if args.rope:
        try:
            dump_rope()
        except Exception as e:  # noqa: BLE001
            import traceback

            traceback.print_exc()
            PROBLEMS.append(f"rope: {e!r}")
    if args.runs:
        try:
            dump_runs()
        except Exception as e:  # noqa: BLE001
            import traceback

            traceback.print_exc()
            PROBLEMS.append(f"runs: {e!r}")
    print("summary:", json.dumps(summary))
    for p in PROBLEMS:
        print("PROBLEM:", p)
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main())
