#!/usr/bin/env python3
"""The PyTorch peer measured in the same run as the WebGPU benchmark (bench/run.ts): Hugging Face
GPTNeoXForCausalLM fp32 forward on the same seeded-shape models and sequence lengths, three ways -- eager
attention, SDPA attention, and SDPA replayed from a CUDA graph (captured on a side stream after 3 warm-ups,
so launch overhead disappears) -- and torch.matmul fp32 with TF32 off at 2048^3, 4096^3 and at every GEMM
shape the models use at T = 128 and 512 (M = T). With --generate: HF `generate` of 8 greedy tokens after a
128-token prompt (KV cache, eager and SDPA) as well. Flags: --no-matmul (2048^3 and 4096^3 only),
--generate-models=pythia-70m,... (default: 70m, 410m, 1.4b), --generate-only. Prints one JSON object."""
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
    "pythia-1.4b": dict(vocab_size=50304, hidden_size=2048, num_hidden_layers=24, num_attention_heads=16, intermediate_size=8192),
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


def gemm_shapes(name, T):
    """(op, M, N, K) of every linear in one forward of `name` at T tokens (batch 1: M = T)."""
    d, ff, V = SHAPES[name]["hidden_size"], SHAPES[name]["intermediate_size"], SHAPES[name]["vocab_size"]
    return [("qkv", T, 3 * d, d), ("attn_out", T, d, d), ("dense_h_to_4h", T, ff, d), ("dense_4h_to_h", T, d, ff), ("logits", T, V, d)]


def graph_forward(model, ids):
    """Capture model(ids, use_cache=False) in a CUDA graph after 3 warm-ups on a side stream; returns replay."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s), torch.no_grad():
        for _ in range(3):
            model(ids, use_cache=False)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g), torch.no_grad():
        model(ids, use_cache=False)
    return g.replay


def make_model(name, dev, attn):
    cfg = GPTNeoXConfig(**SHAPES[name], max_position_embeddings=4096, use_parallel_residual=True, hidden_act="gelu")
    try:
        cfg._attn_implementation = attn
    except Exception:
        pass
    torch.manual_seed(0)
    return GPTNeoXForCausalLM(cfg).to(dev, torch.float32).eval(), cfg._attn_implementation


def generate_times(names, dev, reps=10):
    """HF generate, 8 greedy tokens after 128 tokens (KV cache), eager and SDPA: median and best wall ms."""
    rows = []
    for name in names:
        for attn in ("eager", "sdpa"):
            cfg = GPTNeoXConfig(**SHAPES[name], max_position_embeddings=4096, use_parallel_residual=True, hidden_act="gelu")
            cfg._attn_implementation = attn
            torch.manual_seed(0)
            with torch.device(dev):
                model = GPTNeoXForCausalLM(cfg).to(torch.float32).eval()
            ids = (torch.arange(128, device=dev) * 7919 % 50304).unsqueeze(0)
            gen = lambda: model.generate(ids, max_new_tokens=8, min_new_tokens=8, do_sample=False, pad_token_id=0)
            with torch.no_grad():
                med, best = cuda_time(gen, reps)
            rows.append({"model": name, "attn": cfg._attn_implementation, "new_tokens": 8, "prompt": 128, "median_ms": med, "min_ms": best})
            print(f"torch generate {name} {attn}: {med:.1f} ms (best {best:.1f})", file=sys.stderr)
            del model
            torch.cuda.empty_cache()
    return rows


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
    flags = [a for a in sys.argv[1:] if a.startswith("--")]
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    gen_models = ["pythia-70m", "pythia-410m", "pythia-1.4b"]
    for a in flags:
        if a.startswith("--generate-models="):
            gen_models = a.split("=", 1)[1].split(",")
    models = args or ["pythia-70m", "pythia-160m", "pythia-410m"]
    if "--generate" in flags or "--generate-only" in flags:
        out["generate"] = generate_times(gen_models, dev)
    if "--generate-only" in flags:
        print(json.dumps(out))
        return
    seen = set() if "--no-matmul" not in flags else {tuple(x) for name in models for T in (128, 512) for x in [(M, N, K) for _, M, N, K in gemm_shapes(name, T)]}
    for name in models:
        for T in (128, 512):
            for op, M, N, K in gemm_shapes(name, T):
                if (M, N, K) in seen:
                    continue
                seen.add((M, N, K))
                a = torch.randn(M, K, device=dev)
                b = torch.randn(K, N, device=dev)
                med, best = cuda_time(lambda: torch.matmul(a, b), 50)
                out["matmul"].append({"model": name, "op": op, "M": M, "N": N, "K": K, "median_ms": med, "min_ms": best, "tflops": 2 * M * N * K / (med * 1e-3) / 1e12})
                del a, b
    for name in models:
        for attn in ("eager", "sdpa"):
            model, used = make_model(name, dev, attn)
            for T in (128, 512):
                ids = (torch.arange(T, device=dev) * 7919 % 50304).unsqueeze(0)
                with torch.no_grad():
                    med, best = cuda_time(lambda: model(ids, use_cache=False), 20)
                out["forward"].append({"model": name, "T": T, "median_ms": med, "min_ms": best, "attn": used, "graph": False})
                print(f"torch {name} {used} T={T}: {med:.3f} ms", file=sys.stderr)
                if attn == "sdpa":
                    try:
                        replay = graph_forward(model, ids)
                        med, best = cuda_time(replay, 20)
                        out["forward"].append({"model": name, "T": T, "median_ms": med, "min_ms": best, "attn": used, "graph": True})
                        print(f"torch {name} {used}+graph T={T}: {med:.3f} ms", file=sys.stderr)
                    except Exception as e:  # a failed capture is reported, never silently dropped
                        out["forward"].append({"model": name, "T": T, "attn": used, "graph": True, "error": repr(e)})
                        print(f"torch {name} graph capture failed: {e!r}", file=sys.stderr)
            del model
            torch.cuda.empty_cache()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
