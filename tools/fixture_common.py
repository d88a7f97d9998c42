"""What the fixture scripts share (hf_fixtures.py for GPT-NeoX, llama_fixtures.py for the Llama family,
llama_run_faults.py): numbers rounded to 10 significant digits for JSON, the relative L2 distance, and greedy decoding
both by hand (full forwards, with each step's top-2 logit gap) and by Hugging Face's `generate` (its KV cache).

Imported by the scripts beside it (this folder on sys.path); needs torch.
"""

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
