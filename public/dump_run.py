#!/usr/bin/env python3
"""dump_run: write one forward pass of a Hugging Face GPT-NeoX model as a run file for the explorer;
dump_generation: write a greedy `generate` (prefill and every cached decode step) as one run over all positions.

A run file is one safetensors file (docs/RUNS.md):
  <module path>:in    the module's first tensor input (positional args first, then keyword args in call order)
  <module path>:out   the module's first tensor output (the tensor, or the first tensor of a tuple/list/ModelOutput)
  hidden_states.{i}   HF's output_hidden_states, i = 0..L
  logits              the model's logits
Batch dimension dropped (batch must be 1), floating tensors only, each in the dtype it had, on the CPU.
__metadata__ (all strings): tokens (JSON list of ints), label, device, dtype; a generation adds prefill (the
prompt's length) and generated (JSON list of every new id, the last one included).

Paste this file anywhere: it needs torch and safetensors only.

    from dump_run import dump_run
    dump_run(model, input_ids, "clean.safetensors", label="clean")            # every module
    dump_run(model, input_ids, "hs.safetensors", modules=[])                  # hidden states + logits only
    dump_generation(model, input_ids, 16, "gen.safetensors", label="generate")  # prefill + 15 decode steps
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


def _as_batch(input_ids, who):
    ids = torch.as_tensor(input_ids)
    if ids.dim() == 1:
        ids = ids[None]
    if ids.dim() != 2 or ids.shape[0] != 1 or ids.shape[1] == 0:
        raise ValueError(f"{who}: input_ids must be [T] or [1, T] (batch 1, T > 0), got shape {tuple(ids.shape)}")
    return ids


@torch.no_grad()
def dump_generation(model, input_ids, max_new_tokens, path, label=None, modules=None, use_cache=True,
                    past_key_values=None):
    """Greedy `model.generate` (KV cache), every hooked module's first tensor input and output of every forward —
    the prefill over the prompt, then one decode step per new token — concatenated along the token axis: a run
    over all positions (docs/RUNS.md). Row p of every tensor is position p: rows 0..P-1 come from the prefill,
    row P + s - 1 from decode step s. The last new token is never fed back, so the file holds P + n - 1 rows for
    n new tokens; __metadata__.tokens is those rows' input ids, prefill is P, generated all n new ids.

    use_cache=False: generate without a KV cache (each step re-runs the whole sequence); the new row of each
    step is kept, so the file has the same layout (a benign pair with the cached run).
    past_key_values: a Cache object for generate to use (e.g. one whose reads you patched).
    Returns the dict of tensors written.
    """
    ids = _as_batch(input_ids, "dump_generation")
    P = ids.shape[1]
    n = int(max_new_tokens)
    if n < 1:
        raise ValueError("dump_generation: max_new_tokens must be at least 1")
    param = next(model.parameters())
    ids = ids.to(param.device)
    named = dict(model.named_modules())
    if modules is None:
        wanted = [m for m in named if m]
    else:
        missing = [m for m in modules if m not in named]
        if missing:
            raise ValueError(f"dump_generation: no module named {missing[0]!r} in the model")
        wanted = list(modules)

    steps = []  # per forward: {name: tensor [rows, ...] on the CPU}
    calls = []  # per forward: {module name: calls}

    def keep(name, t):
        if t is None or not torch.is_tensor(t) or not t.is_floating_point() or t.dim() < 2 or t.shape[0] != 1:
            return
        steps[-1][name] = t.detach()[0].to("cpu", copy=True)

    def root_pre(mod, args, kwargs):
        steps.append({})
        calls.append({})

    def root_post(mod, args, kwargs, out):
        hs = getattr(out, "hidden_states", None) or ()
        for i, h in enumerate(hs):
            keep(f"hidden_states.{i}", h)
        keep("logits", getattr(out, "logits", None))

    def pre_hook(name):
        def hook(mod, args, kwargs):
            if not steps:
                return
            c = calls[-1]
            c[name] = c.get(name, 0) + 1
            if c[name] == 1:
                t = _first_tensor(list(args))
                if t is None:
                    t = _first_tensor(list(kwargs.values()))
                keep(name + ":in", t)

        return hook

    def post_hook(name):
        def hook(mod, args, kwargs, out):
            if steps and calls[-1].get(name) == 1:
                keep(name + ":out", _first_tensor(out))

        return hook

    gc = model.generation_config
    kw = dict(max_new_tokens=n, do_sample=False, num_beams=1, use_cache=use_cache, output_hidden_states=True,
              return_dict_in_generate=True, attention_mask=torch.ones_like(ids))
    if gc.pad_token_id is None:
        eos = gc.eos_token_id
        kw["pad_token_id"] = (eos[0] if isinstance(eos, (list, tuple)) and eos else eos) or 0
    if past_key_values is not None:
        kw["past_key_values"] = past_key_values
    handles = [model.register_forward_pre_hook(root_pre, with_kwargs=True),
               model.register_forward_hook(root_post, with_kwargs=True)]
    try:
        for name in wanted:
            mod = named[name]
            handles.append(mod.register_forward_pre_hook(pre_hook(name), with_kwargs=True))
            handles.append(mod.register_forward_hook(post_hook(name), with_kwargs=True))
        try:  # every logits row, not only the last (transformers' generate keeps 1 by default)
            out = model.generate(ids, logits_to_keep=0, **kw)
        except (TypeError, ValueError) as e:
            if "logits_to_keep" not in str(e):
                raise
            out = model.generate(ids, **kw)
    finally:
        for h in handles:
            h.remove()

    seq = out.sequences[0].tolist() if hasattr(out, "sequences") else out[0].tolist()
    F = len(steps)  # forwards run: the prefill and F - 1 decode steps
    if F == 0:
        raise RuntimeError("dump_generation: generate ran no forward through the model's hooks")
    rows = P + F - 1
    tensors = {}
    for name in steps[0]:
        parts = []
        for f, got in enumerate(steps):
            t = got.get(name)
            new = P if f == 0 else 1  # rows this forward adds
            want = new if use_cache else P + f  # rows it runs: the new ones (cached) or the whole sequence
            if t is None or t.shape[0] != want:
                parts = None
                why = "absent" if t is None else f"{t.shape[0]} rows"
                print(f"dump_generation: {name}: {why} in forward {f} (expected {want}); not written",
                      file=sys.stderr)
                break
            parts.append(t[-new:])
        if parts is not None:
            tensors[name] = torch.cat(parts, dim=0).contiguous()
    for f, c in enumerate(calls):
        for name, k in c.items():
            if k > 1:
                print(f"dump_generation: warning: {name} ran {k} times in forward {f}; kept its first call",
                      file=sys.stderr)
    meta = {"tokens": json.dumps(seq[:rows]), "prefill": str(P), "generated": json.dumps(seq[P:]),
            "device": _device_name(param.device), "dtype": str(param.dtype).replace("torch.", "")}
    if label is not None:
        meta["label"] = str(label)
    save_file(tensors, path, metadata=meta)
    return tensors


if __name__ == "__main__":
    print(__doc__)
    print("This file is a library: import dump_run from it (see tools/run_example.py). Nothing was run.")
