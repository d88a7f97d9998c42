#!/usr/bin/env python3
"""dump_run: write one forward pass of a Hugging Face GPT-NeoX model as a run file for the explorer.

A run file is one safetensors file (docs/RUNS.md):
  <module path>:in    the module's first tensor input (positional args first, then keyword args in call order)
  <module path>:out   the module's first tensor output (the tensor, or the first tensor of a tuple/list/ModelOutput)
  hidden_states.{i}   HF's output_hidden_states, i = 0..L
  logits              the model's logits
Batch dimension dropped (batch must be 1), floating tensors only, each in the dtype it had, on the CPU.
__metadata__ (all strings): tokens (JSON list of ints), label, device, dtype.

Paste this file anywhere: it needs torch and safetensors only.

    from dump_run import dump_run
    dump_run(model, input_ids, "clean.safetensors", label="clean")            # every module
    dump_run(model, input_ids, "hs.safetensors", modules=[])                  # hidden states + logits only
"""

import json
import sys
import warnings

import torch
from safetensors.torch import save_file


def _first_tensor(x):
    """The first tensor in x: x itself, or the first one found in a tuple/list/dict/ModelOutput (depth first)."""
    if torch.is_tensor(x):
        return x
    if isinstance(x, dict):  # ModelOutput is an OrderedDict of its non-None fields, in field order
        x = list(x.values())
    if isinstance(x, (tuple, list)):
        for v in x:
            t = _first_tensor(v)
            if t is not None:
                return t
    return None


def _device_name(device):
    if device.type == "cuda":
        return f"{device} {torch.cuda.get_device_name(device)}"
    return str(device)


@torch.no_grad()
def dump_run(model, input_ids, path, label=None, modules=None):
    """Run model(input_ids) once and write every hooked module's first tensor input and output to `path`.

    model: a transformers GPTNeoXForCausalLM (any model taking input_ids and output_hidden_states works).
    input_ids: LongTensor [T] or [1, T] (batch 1 only).
    modules: None = every module of model.named_modules(); else a list of module names to hook ([] = none:
             only hidden_states.* and logits are written).
    Returns the dict of tensors written.
    """
    ids = torch.as_tensor(input_ids)
    if ids.dim() == 1:
        ids = ids[None]
    if ids.dim() != 2 or ids.shape[0] != 1 or ids.shape[1] == 0:
        raise ValueError(f"dump_run: input_ids must be [T] or [1, T] (batch 1, T > 0), got shape {tuple(ids.shape)}")
    param = next(model.parameters())
    ids = ids.to(param.device)

    named = dict(model.named_modules())
    if modules is None:
        wanted = [n for n in named if n]  # "" is the model itself: its input is input_ids, its output the logits
    else:
        missing = [n for n in modules if n not in named]
        if missing:
            raise ValueError(f"dump_run: no module named {missing[0]!r} in the model")
        wanted = list(modules)

    tensors = {}
    calls = {}

    def keep(name, t):
        if t is None or not t.is_floating_point():
            return
        if t.dim() == 0 or t.shape[0] != 1:
            warnings.warn(f"dump_run: {name} has shape {tuple(t.shape)}, no batch dimension of 1: not written")
            return
        tensors[name] = t.detach()[0].to("cpu", copy=True).contiguous()

    def pre_hook(name):
        def hook(mod, args, kwargs):
            calls[name] = calls.get(name, 0) + 1
            if calls[name] == 1:
                t = _first_tensor(list(args))
                if t is None:
                    t = _first_tensor(list(kwargs.values()))
                keep(name + ":in", t)

        return hook

    def post_hook(name):
        def hook(mod, args, kwargs, out):
            if calls.get(name) == 1:
                keep(name + ":out", _first_tensor(out))

        return hook

    handles = []
    try:
        for name in wanted:
            mod = named[name]
            handles.append(mod.register_forward_pre_hook(pre_hook(name), with_kwargs=True))
            handles.append(mod.register_forward_hook(post_hook(name), with_kwargs=True))
        out = model(input_ids=ids, output_hidden_states=True, use_cache=False)
    finally:
        for h in handles:
            h.remove()

    for name, n in calls.items():
        if n > 1:
            print(f"dump_run: warning: {name} ran {n} times in one forward; kept its first call", file=sys.stderr)
    hs = getattr(out, "hidden_states", None) or ()
    for i, h in enumerate(hs):
        keep(f"hidden_states.{i}", h)
    keep("logits", out.logits)

    meta = {"tokens": json.dumps(ids[0].tolist()), "device": _device_name(param.device),
            "dtype": str(param.dtype).replace("torch.", "")}
    if label is not None:
        meta["label"] = str(label)
    save_file(tensors, path, metadata=meta)
    return tensors


if __name__ == "__main__":
    print(__doc__)
    print("This file is a library: import dump_run from it (see tools/run_example.py). Nothing was run.")
