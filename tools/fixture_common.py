"""What the fixture scripts share (hf_fixtures.py for GPT-NeoX, llama_fixtures.py for the Llama family,
llama_run_faults.py): numbers rounded to 10 significant digits for JSON, the relative L2 distance, greedy decoding
both by hand (full forwards, with each step's top-2 logit gap) and by Hugging Face's `generate` (its KV cache), and
the parts of hf_outputs.json both fixture scripts write alike (a forward's outputs, their distances, `greedy`).

Imported by the scripts beside it (this folder on sys.path); needs torch.
"""

import json

import torch


def r10(x):
    return float(f"{x:.10g}")


def to_list(t):
    """A tensor as nested lists of floats, rounded to 10 significant digits."""
    t = t.detach().double().cpu()
    if t.dim() == 1:
        return [r10(v) for v in t.tolist()]
    return [to_list(s) for s in t]


def rel_l2(a, b):
    """||a - b|| / ||b|| in fp64 on the CPU (||a - b|| where b is 0), to 4 significant digits."""
    a = a.detach().double().cpu()
    b = b.detach().double().cpu()
    nb = torch.linalg.vector_norm(b).item()
    return float(f"{torch.linalg.vector_norm(a - b).item() / (nb if nb > 0 else 1.0):.4g}")


@torch.no_grad()
def greedy_manual(model, prompt, n):
    """n greedy tokens by full forwards without a cache, and each step's gap between its two largest logits."""
    ids = list(prompt)
    gaps = []
    for _ in range(n):
        logits = model(input_ids=torch.tensor([ids]), use_cache=False).logits[0, -1].double()
        top2 = torch.topk(logits, 2).values
        gaps.append((top2[0] - top2[1]).item())
        ids.append(int(logits.argmax()))
    return ids[len(prompt):], gaps


@torch.no_grad()
def greedy_generate(model, prompt, n):
    """n greedy tokens by HF's generate (its KV cache), no end-of-sequence token."""
    gc = model.generation_config
    gc.eos_token_id = None
    gc.bos_token_id = None
    gc.pad_token_id = 0
    out = model.generate(torch.tensor([prompt]), do_sample=False, max_new_tokens=n,
                         attention_mask=torch.ones(1, len(prompt), dtype=torch.long))
    return out[0, len(prompt):].tolist()


def outputs_rel_l2(a, b):
    """rel_l2 of each output of two forwards ({embeddings, layers, final_norm, logits}), layer by layer."""
    return {
        "embeddings": rel_l2(a["embeddings"], b["embeddings"]),
        "layers": [rel_l2(x, y) for x, y in zip(a["layers"], b["layers"])],
        "final_norm": rel_l2(a["final_norm"], b["final_norm"]),
        "logits": rel_l2(a["logits"], b["logits"]),
    }


def outputs_json(r):
    """A forward's outputs ({embeddings, layers, final_norm, logits}) as nested lists (to_list)."""
    return {
        "embeddings": to_list(r["embeddings"]),
        "layers": [to_list(t) for t in r["layers"]],
        "final_norm": to_list(r["final_norm"]),
        "logits": to_list(r["logits"]),
    }


def greedy_json(prompt, gen_ids, man32, man64, gaps64):
    """hf_outputs.json's `greedy`: HF generate's tokens, whether the argmax loops agree, the smallest logit gap."""
    return {
        "prompt": list(prompt),
        "new_ids": gen_ids,
        "source": "HF generate(do_sample=False), fp32 weights, KV cache, CPU",
        "manual_argmax_fp32_agrees": gen_ids == man32,
        "manual_argmax_fp64_agrees": gen_ids == man64,
        "min_top1_top2_logit_gap_fp64": float(f"{min(gaps64):.4g}"),
    }


def write_json(path, res):
    """JSON without spaces, one line and a newline (the fixtures' hf_outputs.json)."""
    with open(path, "w") as f:
        json.dump(res, f, separators=(",", ":"))
        f.write("\n")
