#!/usr/bin/env python3
"""The PyTorch peer of bench/llama.ts, measured in the same device call: Hugging Face LlamaForCausalLM
(SmolLM2-135M's shape) and Qwen2ForCausalLM (Qwen2.5-0.5B's shape), random init, fp32, TF32 off, one forward
of T = 128 and 512 tokens (use_cache=False) three ways: eager attention, SDPA, and SDPA replayed from a CUDA graph
(captured on a side stream after 3 warm-ups). Median and best wall ms of 20 (after 3 warm-ups). One JSON object."""
import json
import sys

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM, Qwen2Config, Qwen2ForCausalLM

sys.path.insert(0, "bench")
from torch_peer import cuda_time, graph_forward  # noqa: E402

SHAPES = {
    "smollm2-135m": (LlamaConfig, LlamaForCausalLM, dict(
        vocab_size=49152, hidden_size=576, num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
        intermediate_size=1536, rope_theta=100000.0, rms_norm_eps=1e-5, tie_word_embeddings=True,
        max_position_embeddings=8192)),
    "qwen2.5-0.5b": (Qwen2Config, Qwen2ForCausalLM, dict(
        vocab_size=151936, hidden_size=896, num_hidden_layers=24, num_attention_heads=14, num_key_value_heads=2,
        intermediate_size=4864, rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True,
        max_position_embeddings=32768)),
}


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.device("cuda")
    out = {"torch": torch.__version__, "transformers": transformers.__version__, "gpu": torch.cuda.get_device_name(0), "forward": []}
    for name, (Cfg, Model, kw) in SHAPES.items():
        for attn in ("eager", "sdpa"):
            cfg = Cfg(**kw)
            cfg._attn_implementation = attn
            torch.manual_seed(0)
            with torch.device(dev):
                model = Model(cfg).to(torch.float32).eval()
            for T in (128, 512):
                ids = (torch.arange(T, device=dev) * 7919 % kw["vocab_size"]).unsqueeze(0)
                with torch.no_grad():
                    med, best = cuda_time(lambda: model(ids, use_cache=False), 20)
                out["forward"].append({"model": name, "T": T, "attn": attn, "graph": False, "median_ms": med, "min_ms": best})
                print(f"torch {name} {attn} T={T}: {med:.3f} ms", file=sys.stderr)
                if attn == "sdpa":
                    try:
                        replay = graph_forward(model, ids)
                        med, best = cuda_time(replay, 20)
                        out["forward"].append({"model": name, "T": T, "attn": attn, "graph": True, "median_ms": med, "min_ms": best})
                        print(f"torch {name} sdpa+graph T={T}: {med:.3f} ms", file=sys.stderr)
                    except Exception as e:  # a failed capture is reported, never dropped
                        out["forward"].append({"model": name, "T": T, "attn": attn, "graph": True, "error": str(e)})
            del model
            torch.cuda.empty_cache()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
