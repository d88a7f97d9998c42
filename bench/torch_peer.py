#!/usr/bin/env python3
"""The PyTorch peer measured in the same run as the WebGPU benchmark (bench/run.ts): Hugging Face
GPTNeoXForCausalLM eager fp32 forward on the same seeded-shape models and sequence lengths, and torch.matmul
fp32 with TF32 off at 2048^3. Prints one JSON object."""
import json
import sys
import time

import torch
import transformers
from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

SHAPES = {
    "pythia-70m": dict(vocab_size=50304, hidden_size=512, num_hidden_layers=6, num_attention_heads=8, intermediate_size=2048),
    "pythia-160m": dict(vocab_size=50304, hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072),
    "pythia-410m": dict(vocab_size=50304, hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096),
}


def cuda_time(fn, reps):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2], times[0]


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.device("cuda")
    out = {"torch": torch.__version__, "transformers": transformers.__version__, "gpu": torch.cuda.get_device_name(0), "forward": [], "matmul": []}
    for n in (2048, 4096):
        a = torch.randn(n, n, device=dev)
        b = torch.randn(n, n, device=dev)
        med, best = cuda_time(lambda: torch.matmul(a, b), 20)
        out["matmul"].append({"n": n, "median_ms": med, "tflops": 2 * n**3 / (med * 1e-3) / 1e12})
    models = sys.argv[1:] or list(SHAPES)
    for name in models:
        cfg = GPTNeoXConfig(**SHAPES[name], max_position_embeddings=4096, use_parallel_residual=True, hidden_act="gelu")
        try:
            cfg._attn_implementation = "eager"
        except Exception:
            pass
        torch.manual_seed(0)
        model = GPTNeoXForCausalLM(cfg).to(dev, torch.float32).eval()
        for T in (128, 512):
            ids = (torch.arange(T, device=dev) * 7919 % 50304).unsqueeze(0)
            with torch.no_grad():
                med, best = cuda_time(lambda: model(ids, use_cache=False), 20)
            out["forward"].append({"model": name, "T": T, "median_ms": med, "min_ms": best, "attn": cfg._attn_implementation})
            print(f"torch {name} T={T}: {med:.3f} ms", file=sys.stderr)
        del model
        torch.cuda.empty_cache()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
