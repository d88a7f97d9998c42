#!/usr/bin/env python3
"""Makes the inputs of bench/runs.ts on the GPU machine: a seeded Pythia-410m-shaped GPT-NeoX (24 layers, d 1024,
16 heads, ff 4096, vocab 50304, fp32 weights, HF layout) and two per-module runs of it at T = 128 made by
tools/dump_run.py on CUDA (fp32, TF32 off): a clean one and one whose layer 7 stores its residual add in bf16
(tools/run_faults.py). Usage: python3 tools/bench_runs.py OUT_DIR [--layers 24]"""
import argparse
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from dump_run import dump_run  # noqa: E402
from run_faults import plant_residual_bf16  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--layers", type=int, default=24)
    ap.add_argument("--T", type=int, default=128)
    ap.add_argument("--fault-layer", type=int, default=7)
    ap.add_argument("--fault", choices=["residual-bf16", "fc1-bf16"], default="residual-bf16",
                    help="run B's fault: the layer's residual add stored in bf16, or dense_h_to_4h's output rounded "
                         "to bf16 (a born op with a product: the costlier cause search)")
    a = ap.parse_args()
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    torch.manual_seed(0)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    cfg = GPTNeoXConfig(vocab_size=50304, hidden_size=1024, num_hidden_layers=a.layers, num_attention_heads=16,
                        intermediate_size=4096, rotary_pct=0.25, rotary_emb_base=10000, max_position_embeddings=2048,
                        use_parallel_residual=True, layer_norm_eps=1e-5, tie_word_embeddings=False)
    model = GPTNeoXForCausalLM(cfg).eval()
    with torch.no_grad():  # the default init leaves LayerNorms at (1, 0) and biases at 0: make every op matter
        for n, p in model.named_parameters():
            if "layernorm" in n or "layer_norm" in n:
                p.add_(torch.randn_like(p) * 0.1)
            elif n.endswith(".bias"):
                p.copy_(torch.randn_like(p) * 0.02)
    os.makedirs(a.out, exist_ok=True)
    model.save_pretrained(a.out, safe_serialization=True)
    model = model.cuda()
    ids = torch.randint(0, cfg.vocab_size, (a.T,), generator=torch.Generator().manual_seed(1))
    dump_run(model, ids, os.path.join(a.out, "a.safetensors"), label="clean")
    if a.fault == "residual-bf16":
        plant_residual_bf16(model, a.fault_layer)
        label = f"bf16 residual at layer {a.fault_layer}"
    else:
        model.gpt_neox.layers[a.fault_layer].mlp.dense_h_to_4h.register_forward_hook(
            lambda _m, _i, y: y.to(torch.bfloat16).to(y.dtype))
        label = f"dense_h_to_4h output in bf16 at layer {a.fault_layer}"
    dump_run(model, ids, os.path.join(a.out, "b.safetensors"), label=label)
    sizes = {f: os.path.getsize(os.path.join(a.out, f)) for f in ("model.safetensors", "a.safetensors", "b.safetensors")}
    print(json.dumps({"made": sizes, "fault_layer": a.fault_layer}))


if __name__ == "__main__":
    main()
