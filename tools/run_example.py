#!/usr/bin/env python3
"""Example: dump a clean run and a run with "your kernel" swapped in, then open both in the explorer.

Your kernel here is a hand-written fused residual add (attn + mlp + x in one call) that stores its result in
bf16, patched into one layer of Hugging Face's GPTNeoXForCausalLM (transformers 5.x) by replacing that layer's
forward. Swap in your own function or module the same way: whatever the model computes, the hooks record.

Usage:
  python3 tools/run_example.py [MODEL_DIR] [--layer 1] [--out runs/] [--device cuda|cpu] [--prompt TEXT]
MODEL_DIR: a local Hugging Face GPT-NeoX directory (config.json + model.safetensors, e.g. a Pythia snapshot).
Without it, a small seeded GPT-NeoX is made in OUT/model. Needs torch, transformers and safetensors.
"""

import argparse
import math
import os
import sys

import torch
from transformers import AutoTokenizer, GPTNeoXConfig, GPTNeoXForCausalLM

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from dump_run import dump_run  # noqa: E402


def fused_add_bf16(a, b, c):
    """'Your kernel': a + b + c in one pass, stored in bf16 (returned as the input dtype)."""
    return (a + b + c).to(torch.bfloat16).to(a.dtype)


def patch_layer(layer):
    """Replace one GPTNeoXLayer's forward by a copy that calls fused_add_bf16 for its residual adds."""

    def forward(hidden_states, attention_mask=None, position_ids=None, use_cache=False, layer_past=None,
                position_embeddings=None, **kwargs):
        attn, _ = layer.attention(layer.input_layernorm(hidden_states), attention_mask=attention_mask,
                                  position_ids=position_ids, layer_past=layer_past, use_cache=use_cache,
                                  position_embeddings=position_embeddings, **kwargs)
        attn = layer.post_attention_dropout(attn)
        if layer.use_parallel_residual:
            mlp = layer.post_mlp_dropout(layer.mlp(layer.post_attention_layernorm(hidden_states)))
            return fused_add_bf16(mlp, attn, hidden_states)
        mid = fused_add_bf16(attn, hidden_states, torch.zeros_like(attn))
        mlp = layer.post_mlp_dropout(layer.mlp(layer.post_attention_layernorm(mid)))
        return fused_add_bf16(mlp, mid, torch.zeros_like(mid))

    layer.forward = forward
    return lambda: delattr(layer, "forward")  # undo


@torch.no_grad()
def make_small_model(path, seed=0):
    """A seeded 4-layer GPT-NeoX where every op matters (HF's default init leaves most of it near zero)."""
    cfg = GPTNeoXConfig(vocab_size=300, hidden_size=48, num_hidden_layers=4, num_attention_heads=3,
                        intermediate_size=192, rotary_pct=0.5, max_position_embeddings=128, tie_word_embeddings=False)
    model = GPTNeoXForCausalLM(cfg).float()
    g = torch.Generator().manual_seed(seed)
    for mod in model.modules():
        if isinstance(mod, torch.nn.Linear):
            mod.weight.copy_(torch.randn(mod.weight.shape, generator=g) / math.sqrt(mod.in_features))
            if mod.bias is not None:
                mod.bias.copy_(torch.randn(mod.bias.shape, generator=g) * 0.1)
        elif isinstance(mod, torch.nn.LayerNorm):
            mod.weight.copy_(1 + torch.randn(mod.weight.shape, generator=g) * 0.1)
            mod.bias.copy_(torch.randn(mod.bias.shape, generator=g) * 0.1)
        elif isinstance(mod, torch.nn.Embedding):
            mod.weight.copy_(torch.randn(mod.weight.shape, generator=g))
    model.save_pretrained(path)
    return path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model_dir", nargs="?")
    ap.add_argument("--out", default="runs")
    ap.add_argument("--layer", type=int, default=1, help="the layer that gets your kernel")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--prompt", default="In the beginning God created the heaven and the earth.")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    model_dir = args.model_dir or make_small_model(os.path.join(args.out, "model"))
    model = GPTNeoXForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval().to(args.device)
    if any(os.path.exists(os.path.join(model_dir, f)) for f in ("tokenizer.json", "tokenizer_config.json")):
        ids = AutoTokenizer.from_pretrained(model_dir)(args.prompt, return_tensors="pt").input_ids
    else:  # no tokenizer in the directory: seeded token ids
        ids = torch.randint(0, model.config.vocab_size, (1, 20), generator=torch.Generator().manual_seed(1))

    torch.backends.cuda.matmul.allow_tf32 = False  # fp32 matmuls in fp32, for both runs
    a = os.path.join(args.out, "clean.safetensors")
    b = os.path.join(args.out, "your-kernel.safetensors")
    dump_run(model, ids, a, label="clean")
    undo = patch_layer(model.gpt_neox.layers[args.layer])
    try:
        tensors = dump_run(model, ids, b, label=f"fused_add_bf16 at layer {args.layer}")
    finally:
        undo()
    print(f"wrote {a} and {b} ({len(tensors)} tensors, T = {ids.shape[1]})")
    print("open both in the explorer:")
    print(f"  npm run cli -- compare-runs --model {model_dir} --a {a} --b {b}")


if __name__ == "__main__":
    main()
