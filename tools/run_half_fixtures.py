#!/usr/bin/env python3
"""Clean half-precision runs of the run fixtures' two models (src/model/testdata/runs/): each model loaded in bf16
and in fp16 on CUDA (transformers' default attention), one forward on the manifest's tokens, dumped by dump_run.
They test that a run stored in fp16/bf16 whose ops are right agrees: its floor is its own dtype's rounding.
Made on the GPU machine (2026-11-25, H100, torch 2.11, transformers 5.17):
    python3 tools/run_half_fixtures.py OUT_DIR   # writes <model>-<bfloat16|float16>.safetensors
then copied to src/model/testdata/runs/<model>/clean-cuda-{bf16,fp16}.run.safetensors."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from dump_run import dump_run  # noqa: E402


def main():
    from transformers import GPTNeoXForCausalLM

    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    root = os.path.join(os.path.dirname(__file__), "..", "src", "model", "testdata", "runs")
    manifest = json.load(open(os.path.join(root, "manifest.json")))
    for name, spec in manifest["models"].items():
        tokens = torch.tensor(spec["tokens"])
        for dtype in (torch.bfloat16, torch.float16):
            model = GPTNeoXForCausalLM.from_pretrained(os.path.join(root, spec["dir"]), dtype=dtype).cuda().eval()
            tag = str(dtype).split(".")[-1]
            dump_run(model, tokens, os.path.join(out, f"{name}-{tag}.safetensors"), label=f"{name} clean {tag}")


if __name__ == "__main__":
    main()
