#!/usr/bin/env python3
"""HF reference fixtures for the engine's parity tests (src/model/testdata/hf/<name>/hf_outputs.json).

For each model, runs Hugging Face transformers' own GPTNeoXForCausalLM forward (eager attention, CPU)
in fp64 (weights upcast from the on-disk dtype) and fp32 and writes:
  tokens; fp64 {embeddings [T][d], layers [L][T][d] (residual after each layer, before the final LN),
  final_norm [T][d], logits [T][V]}; fp32_vs_fp64_rel_l2; greedy {prompt, new_ids} (HF generate, fp32).
It also checks HF's fp64 run against an independent fp64 re-implementation written here from the
safetensors file alone (hf_fp64_vs_independent_fp64_rel_l2), which tells how much of HF's "fp64"
forward really runs in fp64.

Models:
  neox-kjv-bytes         the trained byte model (tools/train_embedded.py), read from public/models/neox-kjv-bytes
  rand-parallel-classic  random, F32 on disk, parallel residual, classic rotary_pct/rotary_emb_base config keys
  rand-seq-ropeparams    random, BF16 on disk, sequential residual, rope_parameters config keys
  rand-parallel-f16-t1   random, F16 on disk, a single input token (T=1)

Usage: python3 tools/hf_fixtures.py [--only name[,name]] [--trained-dir public/models/neox-kjv-bytes]
"""

import argparse
import datetime
import inspect
import json
import math
import os
import platform
import sys

import torch
import torch.nn.functional as F
import transformers
from safetensors import safe_open
from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from fixture_common import (  # noqa: E402
    greedy_generate,
    greedy_json,
    greedy_manual,
    outputs_json,
    outputs_rel_l2,
    write_json,
)

OUT_ROOT = "src/model/testdata/hf"
PROBLEMS = []

RANDOM_MODELS = {
    "rand-parallel-classic": dict(
        seed=101,
        arch=dict(vocab_size=300, hidden_size=96, num_hidden_layers=3, num_attention_heads=4,
                  intermediate_size=200, max_position_embeddings=256, layer_norm_eps=1e-5,
                  use_parallel_residual=True),
        rotary_pct=0.25, rotary_base=10000.0, keys="classic", dtype=torch.float32,
        n_tokens=24, prompt_len=5, new_tokens=10,
    ),
    "rand-seq-ropeparams": dict(
        seed=202,
        arch=dict(vocab_size=300, hidden_size=96, num_hidden_layers=2, num_attention_heads=3,
                  intermediate_size=160, max_position_embeddings=256, layer_norm_eps=1e-6,
                  use_parallel_residual=False),
        rotary_pct=0.5, rotary_base=500.0, keys="rope_parameters", dtype=torch.bfloat16,
        n_tokens=24, prompt_len=5, new_tokens=10,
    ),
    "rand-parallel-f16-t1": dict(
        seed=303,
        arch=dict(vocab_size=257, hidden_size=64, num_hidden_layers=2, num_attention_heads=2,
                  intermediate_size=130, max_position_embeddings=256, layer_norm_eps=1e-5,
                  use_parallel_residual=True),
        rotary_pct=0.25, rotary_base=10000.0, keys="classic", dtype=torch.float16,
        n_tokens=1, prompt_len=1, new_tokens=10,
    ),
}

COMMON = dict(hidden_act="gelu", tie_word_embeddings=False, attention_dropout=0.0, hidden_dropout=0.0,
              bos_token_id=None, eos_token_id=None, pad_token_id=None)


# ---------------------------------------------------------------- helpers

def load_pretrained(path, dtype):
    kw = dict(attn_implementation="eager")
    try:
        return GPTNeoXForCausalLM.from_pretrained(path, dtype=dtype, **kw)
    except TypeError:
        return GPTNeoXForCausalLM.from_pretrained(path, torch_dtype=dtype, **kw)


def save_pretrained(model, path):
    try:
        model.save_pretrained(path, safe_serialization=True)
    except TypeError:
        model.save_pretrained(path)


def build_config(keys, rotary_pct, rotary_base, **kw):
    if keys == "classic":
        return GPTNeoXConfig(rotary_pct=rotary_pct, rotary_emb_base=rotary_base, **kw)
    return GPTNeoXConfig(
        rope_parameters={"rope_type": "default", "rope_theta": float(rotary_base),
                         "partial_rotary_factor": float(rotary_pct)},
        **kw,
    )


def rope_settings(cfg_json):
    """(rotary_pct, rotary_base) from a config.json dict, either key style."""
    rp = cfg_json.get("rope_parameters") or {}
    pct = cfg_json.get("rotary_pct", rp.get("partial_rotary_factor", 0.25))
    base = cfg_json.get("rotary_emb_base", rp.get("rope_theta", 10000.0))
    return float(pct), float(base)


def check_rope(model, head_dim, rotary_pct, rotary_base):
    rd = int(head_dim * rotary_pct)
    want = 1.0 / (rotary_base ** (torch.arange(0, rd, 2, dtype=torch.float64) / rd))
    for name, buf in model.named_buffers():
        if name.endswith("inv_freq"):
            got = buf.detach().double().cpu()
            if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-6, atol=0):
                raise RuntimeError(f"rotary mismatch: {name} {got.tolist()} vs {want.tolist()}")
            return rd
    raise RuntimeError("no inv_freq buffer found")


@torch.no_grad()
def init_every_op(model, seed):
    """Seeded init where every op matters (not HF's default near-zero init)."""
    g = torch.Generator().manual_seed(seed)

    def normal_(t, std, mean=0.0):
        t.copy_(torch.randn(t.shape, generator=g, dtype=torch.float64) * std + mean)

    for name, mod in model.named_modules():
        if isinstance(mod, torch.nn.Linear):
            normal_(mod.weight, 1.0 / math.sqrt(mod.in_features))  # LM head: fan_in = d -> 1/sqrt(d)
            if mod.bias is not None:
                normal_(mod.bias, 0.1)
        elif isinstance(mod, torch.nn.LayerNorm):
            normal_(mod.weight, 0.1, 1.0)
            normal_(mod.bias, 0.1)
        elif isinstance(mod, torch.nn.Embedding):
            normal_(mod.weight, 1.0)


# ---------------------------------------------------------------- HF forward with captures

@torch.no_grad()
def hf_capture(model, ids):
    inner = model.gpt_neox
    L = len(inner.layers)
    got = {"layers": [None] * L}
    hooks = []

    def first(o):
        return o[0] if isinstance(o, (tuple, list)) else o

    hooks.append(inner.embed_in.register_forward_hook(lambda m, i, o: got.__setitem__("emb", o)))
    for li, layer in enumerate(inner.layers):
        hooks.append(layer.register_forward_hook(
            lambda m, i, o, li=li: got["layers"].__setitem__(li, first(o))))
    hooks.append(inner.final_layer_norm.register_forward_hook(lambda m, i, o: got.__setitem__("fn", o)))
    try:
        out = model(input_ids=torch.tensor([ids]), output_hidden_states=True, use_cache=False)
    finally:
        for h in hooks:
            h.remove()
    hs = out.hidden_states
    layers = [t[0] for t in got["layers"]]
    res = {"embeddings": hs[0][0], "layers": layers, "final_norm": hs[L][0], "logits": out.logits[0]}
    checks = {
        "n_hidden_states": len(hs),
        "hs0_vs_embed_in_max_abs": (hs[0][0] - got["emb"][0]).abs().max().item(),
        "hs_i_vs_layer_hook_max_abs": max([0.0] + [(hs[i][0] - layers[i - 1]).abs().max().item() for i in range(1, L)]),
        "hsL_vs_final_ln_hook_max_abs": (hs[L][0] - got["fn"][0]).abs().max().item(),
        "hsL_vs_final_ln_of_last_layer_max_abs": (hs[L][0] - inner.final_layer_norm(layers[-1])).abs().max().item(),
    }
    assert len(hs) == L + 1, f"expected {L + 1} hidden states, got {len(hs)}"
    return res, checks


# ---------------------------------------------------------------- independent fp64 reference

@torch.no_grad()
def independent_fp64(st_path, cfg_json, ids):
    sd = {}
    with safe_open(st_path, "pt") as f:
        for k in f.keys():
            sd[k] = f.get_tensor(k).double()
    d = cfg_json["hidden_size"]
    H = cfg_json["num_attention_heads"]
    L = cfg_json["num_hidden_layers"]
    hd = d // H
    pct, base = rope_settings(cfg_json)
    rd = int(hd * pct)
    eps = cfg_json["layer_norm_eps"]
    parallel = cfg_json.get("use_parallel_residual", True)
    T = len(ids)
    x = sd["gpt_neox.embed_in.weight"][torch.tensor(ids)]
    emb = x.clone()
    inv = 1.0 / (base ** (torch.arange(0, rd, 2, dtype=torch.float64) / rd))
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[:, None, :]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[:, None, :]

    def ln(v, p):
        return F.layer_norm(v, (d,), sd[p + ".weight"], sd[p + ".bias"], eps)

    def lin(v, p):
        return v @ sd[p + ".weight"].T + (sd[p + ".bias"] if p + ".bias" in sd else 0.0)

    def rope(t):
        tr, tp = t[..., :rd], t[..., rd:]
        rot = torch.cat([-tr[..., rd // 2:], tr[..., : rd // 2]], -1)
        return torch.cat([tr * cos + rot * sin, tp], -1)

    mask = torch.ones(T, T, dtype=torch.bool).tril()
    layers = []
    for li in range(L):
        p = f"gpt_neox.layers.{li}."
        qkv = lin(ln(x, p + "input_layernorm"), p + "attention.query_key_value").view(T, H, 3 * hd)
        q, k, v = rope(qkv[..., :hd]), rope(qkv[..., hd: 2 * hd]), qkv[..., 2 * hd:]
        s = torch.einsum("thd,shd->hts", q, k) / math.sqrt(hd)
        s = s.masked_fill(~mask, float("-inf"))
        a = torch.einsum("hts,shd->thd", s.softmax(-1), v).reshape(T, d)
        attn = lin(a, p + "attention.dense")

        def mlp(v_):
            return lin(F.gelu(lin(v_, p + "mlp.dense_h_to_4h")), p + "mlp.dense_4h_to_h")

        if parallel:
            x = x + attn + mlp(ln(x, p + "post_attention_layernorm"))
        else:
            x = x + attn
            x = x + mlp(ln(x, p + "post_attention_layernorm"))
        layers.append(x)
    fn = F.layer_norm(x, (d,), sd["gpt_neox.final_layer_norm.weight"], sd["gpt_neox.final_layer_norm.bias"], eps)
    head = sd.get("embed_out.weight", sd.get("lm_head.weight"))
    if head is None:
        head = sd["gpt_neox.embed_in.weight"]
    return {"embeddings": emb, "layers": layers, "final_norm": fn, "logits": fn @ head.T}


# ---------------------------------------------------------------- per model

def make_fixture(name, model_dir, ids, prompt, n_new, out_dir, env):
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg_json = json.load(f)
    st_path = os.path.join(model_dir, "model.safetensors")
    with safe_open(st_path, "pt") as f:
        disk_dtype = str(f.get_tensor(next(iter(f.keys()))).dtype).replace("torch.", "")
    pct, base = rope_settings(cfg_json)
    hd = cfg_json["hidden_size"] // cfg_json["num_attention_heads"]

    m64 = load_pretrained(model_dir, torch.float64).eval()
    m32 = load_pretrained(model_dir, torch.float32).eval()
    rd = check_rope(m64, hd, pct, base)
    check_rope(m32, hd, pct, base)
    r64, checks = hf_capture(m64, ids)
    r32, checks32 = hf_capture(m32, ids)
    ref = independent_fp64(st_path, cfg_json, ids)

    gen_ids = greedy_generate(m32, prompt, n_new)
    man32, _ = greedy_manual(m32, prompt, n_new)
    man64, gaps64 = greedy_manual(m64, prompt, n_new)
    if gen_ids != man32 or gen_ids != man64:
        print(f"  WARNING {name}: greedy differs: generate {gen_ids} manual fp32 {man32} manual fp64 {man64}")

    res = {
        "model": name,
        "transformers": transformers.__version__,
        "torch": torch.__version__,
        "device": "cpu",
        "host_gpu": env["gpu"],
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "weights_dtype_on_disk": disk_dtype,
        "attn_implementation": "eager",
        "config": {"vocab_size": cfg_json["vocab_size"], "hidden_size": cfg_json["hidden_size"],
                   "num_hidden_layers": cfg_json["num_hidden_layers"],
                   "num_attention_heads": cfg_json["num_attention_heads"],
                   "intermediate_size": cfg_json["intermediate_size"], "rotary_ndims": rd,
                   "rotary_base": base, "layer_norm_eps": cfg_json["layer_norm_eps"],
                   "use_parallel_residual": cfg_json.get("use_parallel_residual", True)},
        "tokens": list(ids),
        "fp64": outputs_json(r64),
        "fp32_vs_fp64_rel_l2": outputs_rel_l2(r32, r64),
        "hf_fp64_vs_independent_fp64_rel_l2": outputs_rel_l2(r64, ref),
        "checks_fp64": checks,
        "checks_fp32": checks32,
        "greedy": greedy_json(prompt, gen_ids, man32, man64, gaps64),
    }
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "hf_outputs.json")
    write_json(path, res)
    print(f"  {path}: {os.path.getsize(path)} bytes; T={len(ids)} rotary_ndims={rd} disk={disk_dtype}")
    print(f"  checks fp64: {checks}")
    print(f"  fp32 vs fp64: {res['fp32_vs_fp64_rel_l2']}")
    print(f"  hf fp64 vs independent fp64: {res['hf_fp64_vs_independent_fp64_rel_l2']}")
    print(f"  greedy {prompt} -> {gen_ids}  (min gap {res['greedy']['min_top1_top2_logit_gap_fp64']})")
    for k, v in checks.items():
        if k.endswith("max_abs") and v > 1e-9:
            PROBLEMS.append(f"{name}: check {k} = {v}")
    worst = max(res["hf_fp64_vs_independent_fp64_rel_l2"]["layers"] + [res["hf_fp64_vs_independent_fp64_rel_l2"]["logits"]])
    if worst > 1e-5:
        PROBLEMS.append(f"{name}: HF fp64 disagrees with the independent fp64 reference: {worst}")
    if len(gen_ids) != n_new or gen_ids != man32:
        PROBLEMS.append(f"{name}: generate {gen_ids} vs manual fp32 argmax {man32}")
    return res


def make_random(name, spec, env):
    out_dir = os.path.join(OUT_ROOT, name)
    os.makedirs(out_dir, exist_ok=True)
    for f in ("config.json", "model.safetensors", "generation_config.json", "hf_outputs.json"):
        if os.path.exists(os.path.join(out_dir, f)):
            os.remove(os.path.join(out_dir, f))
    cfg = build_config(spec["keys"], spec["rotary_pct"], spec["rotary_base"], **spec["arch"], **COMMON)
    torch.manual_seed(spec["seed"])
    model = GPTNeoXForCausalLM(cfg).float().eval()
    init_every_op(model, spec["seed"])
    model.to(spec["dtype"])
    save_pretrained(model, out_dir)
    gc_path = os.path.join(out_dir, "generation_config.json")
    if os.path.exists(gc_path):
        os.remove(gc_path)
    cpath = os.path.join(out_dir, "config.json")
    with open(cpath) as f:
        cj = json.load(f)
    print(f"  as written by transformers: rope keys "
          f"{ {k: cj[k] for k in ('rope_parameters', 'rotary_pct', 'rotary_emb_base', 'rope_scaling', 'rope_theta', 'partial_rotary_factor') if k in cj} }")
    for k in ("rope_parameters", "rotary_pct", "rotary_emb_base", "rope_scaling", "rope_theta", "partial_rotary_factor"):
        cj.pop(k, None)
    if spec["keys"] == "classic":
        cj["rotary_pct"] = spec["rotary_pct"]
        cj["rotary_emb_base"] = spec["rotary_base"]
    else:
        cj["rope_parameters"] = {"rope_type": "default", "rope_theta": spec["rotary_base"],
                                 "partial_rotary_factor": spec["rotary_pct"]}
    with open(cpath, "w") as f:
        json.dump(cj, f, indent=2, sort_keys=True)
        f.write("\n")
    g = torch.Generator().manual_seed(spec["seed"] + 7)
    ids = torch.randint(0, spec["arch"]["vocab_size"], (spec["n_tokens"],), generator=g).tolist()
    prompt = ids[: spec["prompt_len"]]
    return make_fixture(name, out_dir, ids, prompt, spec["new_tokens"], out_dir, env)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--only", default="")
    ap.add_argument("--trained-dir", default="public/models/neox-kjv-bytes")
    ap.add_argument("--prompt", default="And God said unto Moses, Go")
    args = ap.parse_args()
    torch.set_num_threads(min(8, os.cpu_count() or 1))
    env = {"gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else None}
    only = set(filter(None, args.only.split(",")))
    print(f"transformers {transformers.__version__}, torch {torch.__version__}, python {platform.python_version()}")
    try:  # where HF's GPT-NeoX code leaves the model dtype (documents the "fp64" reference)
        import transformers.models.gpt_neox.modeling_gpt_neox as mg

        for i, line in enumerate(inspect.getsource(mg).splitlines()):
            if any(k in line for k in ("float32", ".float()", "softmax(", "autocast")):
                print(f"  modeling_gpt_neox.py:{i + 1}: {line.strip()}")
    except Exception as e:  # noqa: BLE001
        print("  (could not read modeling source)", e)
    summary = {}
    if not only or "neox-kjv-bytes" in only:
        print("neox-kjv-bytes")
        if os.path.exists(os.path.join(args.trained_dir, "model.safetensors")):
            ids = list(args.prompt.encode("utf-8"))
            res = make_fixture("neox-kjv-bytes", args.trained_dir, ids, ids, 40,
                               os.path.join(OUT_ROOT, "neox-kjv-bytes"), env)
            summary["neox-kjv-bytes"] = bytes(res["greedy"]["new_ids"]).decode("utf-8", "replace")
        else:
            print(f"  skipped: no {args.trained_dir}/model.safetensors")
    for name, spec in RANDOM_MODELS.items():
        if only and name not in only:
            continue
        print(name)
        try:
            res = make_random(name, spec, env)
            summary[name] = res["greedy"]["new_ids"]
        except Exception as e:  # noqa: BLE001 - keep going with the other models
            import traceback

            traceback.print_exc()
            PROBLEMS.append(f"{name}: {e!r}")
    print("summary:", json.dumps(summary))
    for p in PROBLEMS:
        print("PROBLEM:", p)
    return 1 if PROBLEMS else 0


if __name__ == "__main__":
    sys.exit(main())
