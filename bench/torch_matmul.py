"""torch.matmul fp32 (TF32 off) GPU time, the peer of bench/gemm.ts and bench/gemm-sweep.ts in the same device
call: y = x @ W.T as nn.Linear computes it, x [M, K], W [N, K]. GPU time from CUDA events around `reps`
back-to-back matmuls (as our timings are GPU time of repeated dispatches), median of 5 such batches after a
warm-up. Usage: python3 bench/torch_matmul.py OUT.json [MxNxK ...] (default 2048x2048x2048 4096x4096x4096)."""
import json
import sys

import torch


def gpu_ms(fn, reps):
    for _ in range(5):
        fn()
    torch.cuda.synchronize()
    batches = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        for _ in range(reps):
            fn()
        b.record()
        torch.cuda.synchronize()
        batches.append(a.elapsed_time(b) / reps)
    batches.sort()
    return batches[2]


def main():
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    shapes = [tuple(map(int, s.split("x"))) for s in sys.argv[2:]] or [(2048, 2048, 2048), (4096, 4096, 4096)]
    out = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0), "tf32": False, "rows": []}
    for M, N, K in shapes:
        x = torch.randn(M, K, device="cuda")
        w = torch.randn(N, K, device="cuda")
        flop = 2 * M * N * K
        reps = max(5, min(200, int(2e11 / flop)))
        ms = gpu_ms(lambda: torch.matmul(x, w.T), reps)
        row = {"M": M, "N": N, "K": K, "ms": ms, "tflops": flop / (ms * 1e-3) / 1e12, "reps": reps}
        out["rows"].append(row)
        print(f"torch.matmul {M}x{N}x{K}: {ms:.4f} ms {row['tflops']:.1f} TFLOP/s")
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=2)


if __name__ == "__main__":
    main()
