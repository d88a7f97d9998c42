"""Faults planted in a Hugging Face GPTNeoXForCausalLM (transformers 5.x) for the cause fixtures
(tools/cause_fixtures.py, src/model/testdata/causes/): one fault per cause, at one op of one layer, and a PyTorch
fp64 check of every op's local error from a run's own taps.

plant(model, cj, op, layer, cause, params, off=False) changes the model in place and returns an undo function.
With off=True the same patch goes in with its fault switched off (the exact op, by the patch's own code path):
the fixtures check that such a run reproduces the clean run, so what a faulty run shows is the fault alone.

How each op is patched (instance attributes, so forward hooks and HF's output_hidden_states see exactly what the
faulty model computed):
  embed, ln1, qkv, dense, ln2, fc1, act, fc2, final_norm, lm_head: the module's `forward`;
  attention: GPTNeoXAttention.forward replaced by query_key_value -> core() below -> dense (core = rotary, scores,
             mask, softmax, values, written here with every variant as a parameter);
  residual: GPTNeoXLayer.forward replaced by a copy of transformers 5.17's with each residual term selectable;
  softmax-scale with params {scale: 1}: GPTNeoXAttention.scaling set to 1 (HF's own attention path).
"""

import math

import torch
import torch.nn.functional as F

import run_faults as rf

HALF = {"bf16": torch.bfloat16, "fp16": torch.float16}

# op id -> module path inside gpt_neox.layers.{i} (None: not a module of its own)
LAYER_OPS = {"ln1": "input_layernorm", "qkv": "attention.query_key_value", "attention": None,
             "dense": "attention.dense", "ln2": "post_attention_layernorm", "fc1": "mlp.dense_h_to_4h",
             "act": "mlp.act", "fc2": "mlp.dense_4h_to_h", "residual": None}
OP_ORDER = ["ln1", "qkv", "attention", "dense", "ln2", "fc1", "act", "fc2", "residual"]

CAUSES = {
    "output-bf16": "the op's output rounded to bf16, returned as fp32",
    "output-fp16": "the op's output rounded to fp16, returned as fp32",
    "input-bf16": "a linear's input rounded to bf16, then an exact product",
    "input-fp16": "a linear's input rounded to fp16, then an exact product",
    "weight-bf16": "a linear's weight rounded to bf16 (bias kept), then an exact product",
    "weight-fp16": "a linear's weight rounded to fp16 (bias kept), then an exact product",
    "tf32": "torch.backends.cuda.matmul.allow_tf32 = True around one linear (cuBLAS rounds its operands to TF32)",
    "autocast-bf16": "torch.autocast(bf16) around one linear: input, weight and bias in bf16, bf16 output, .float()",
    "autocast-fp16": "torch.autocast(fp16) around one linear: input, weight and bias in fp16, fp16 output, .float()",
    "bias-dropped": "a linear computed without its bias",
    "bias-doubled": "a linear's bias added twice",
    "ln-weight-dropped": "a LayerNorm without its weight (gamma)",
    "ln-bias-dropped": "a LayerNorm without its bias (beta)",
    "residual-term-dropped": "one term of the layer's residual add left out (params.term)",
    "residual-term-doubled": "one term of the layer's residual add added twice (params.term)",
    "residual-wrong-tensor": "one term of the layer's residual add taken from another tensor of the layer "
                             "(params.term replaced by params.from)",
    "row-broadcast": "one row's output (params.row) copied to every row",
    "ln-eps": "a LayerNorm with another eps (params.eps) than the config's",
    "ln-eps-outside": "a LayerNorm computing (x - mean) / (sqrt(var) + eps): eps outside the root",
    "ln-unbiased-var": "a LayerNorm with the unbiased variance (divided by N - 1)",
    "softmax-scale": "attention scores scaled by params.scale instead of 1/sqrt(head_dim)",
    "rotary-base": "rotary angles from another base (params.base) than the config's",
    "rotary-width": "rotary applied to params.ndims dims of each head instead of the config's rotary_ndims",
    "rows-shifted": "the op's output rows shifted: out[t] = exact[t - shift] for t >= from (rows before 'from' "
                    "exact)",
    "elements-shifted": "the op's flattened [T * width] output shifted by params.shift elements: "
                        "out[i] = exact[i - shift], the first shift elements 0 (a misaligned write)",
    "weight-transposed": "a square linear computed with W.T",
    "qkv-layout": "the attention core reads the fused QKV as [3, heads, head_dim] instead of [heads, 3, head_dim]",
    "heads-permuted": "the attention core's output heads written in another order (params.order: "
                      "output head h = computed head order[h])",
    "causal-missing": "the attention core without its causal mask",
    "causal-off-by-one": "the causal mask off by params.offset: row t sees keys j <= t + offset",
    "rotary-gptj": "rotary on interleaved pairs (GPT-J) instead of GPT-NeoX's halves",
    "rotary-offset": "rotary positions shifted: position t + params.offset for rows t >= params.from "
                     "(q and k alike; rows before 'from' at position t)",
    "gelu-tanh": "the MLP activation is GELU's tanh approximation",
    "gelu-sigmoid": "the MLP activation is x * sigmoid(1.702 x)",
    "relu": "the MLP activation is ReLU",
    "silu": "the MLP activation is SiLU (x * sigmoid(x))",
    "softmax-fp16": "attention probabilities rounded to fp16 before the values product",
    "softmax-bf16": "attention probabilities rounded to bf16 before the values product",
    "softmax-no-rescale": "online softmax over key blocks of params.block without rescaling the running sum and "
                          "the accumulator when the running max grows",
    "dropout": "dropout with p = params.p left on at the op's output (zeros, survivors times 1/(1-p))",
}


def _rnd(x, name):
    return x.to(HALF[name]).to(x.dtype)


def _layer(model, i):
    return model.gpt_neox.layers[i]


def lm_head_module(model):
    return getattr(model, "lm_head", None) or getattr(model, "embed_out")


def op_module(model, op, layer):
    if op == "embed":
        return model.gpt_neox.embed_in
    if op == "final_norm":
        return model.gpt_neox.final_layer_norm
    if op == "lm_head":
        return lm_head_module(model)
    mod = _layer(model, layer)
    for part in LAYER_OPS[op].split("."):
        mod = getattr(mod, part)
    return mod


def rope_config(cj):
    """(head_dim, rotary_ndims, base) from a config.json dict, either key style."""
    d, H = cj["hidden_size"], cj["num_attention_heads"]
    hd = d // H
    rp = cj.get("rope_parameters") or {}
    pct = cj.get("rotary_pct", rp.get("partial_rotary_factor", 0.25))
    base = cj.get("rotary_emb_base", rp.get("rope_theta", 10000.0))
    return hd, int(hd * pct), float(base)


# ---------------------------------------------------------------- output transforms (any op)

def _dropout(y, p, seed):
    g = torch.Generator(device=y.device).manual_seed(seed)
    keep = torch.rand(y.shape, generator=g, device=y.device) >= p
    return y * keep.to(y.dtype) * (1.0 / (1.0 - p))


def post_transform(cause, params):
    """The output transform of a cause that acts on an op's output, else None. Outputs are [1, T, width]."""
    if cause in ("output-bf16", "output-fp16"):
        return lambda y: _rnd(y, cause.split("-")[1])
    if cause == "rows-shifted":
        s, r = params["shift"], params["from"]
        assert r >= s >= 1

        def f(y):
            z = y.clone()
            z[:, r:] = y[:, r - s: y.shape[1] - s]
            return z

        return f
    if cause == "elements-shifted":
        s = params["shift"]

        def f(y):
            flat = y.reshape(y.shape[0], -1)
            z = torch.zeros_like(flat)
            z[:, s:] = flat[:, :-s]
            return z.view_as(y)

        return f
    if cause == "row-broadcast":
        r = params["row"]
        return lambda y: y[:, r: r + 1].expand_as(y).clone()
    if cause == "dropout":
        return lambda y: _dropout(y, params["p"], params.get("seed", 1234))
    return None


# ---------------------------------------------------------------- op variants

def _linear_fn(mod, cause, params):
    W, b = mod.weight, mod.bias

    def f(x):
        if cause in ("input-bf16", "input-fp16"):
            return F.linear(_rnd(x, cause.split("-")[1]), W, b)
        if cause in ("weight-bf16", "weight-fp16"):
            return F.linear(x, _rnd(W, cause.split("-")[1]), b)
        if cause == "tf32":
            old = torch.backends.cuda.matmul.allow_tf32
            torch.backends.cuda.matmul.allow_tf32 = True
            try:
                return F.linear(x, W, b)
            finally:
                torch.backends.cuda.matmul.allow_tf32 = old
        if cause in ("autocast-bf16", "autocast-fp16"):
            with torch.autocast(x.device.type, dtype=HALF[cause.split("-")[1]]):
                y = F.linear(x, W, b)
            return y.to(x.dtype)
        if cause == "bias-dropped":
            return F.linear(x, W)
        if cause == "bias-doubled":
            return F.linear(x, W, 2 * b)
        if cause == "weight-transposed":
            return F.linear(x, W.t(), b)
        return F.linear(x, W, b)  # off

    return f


def _ln_fn(ln, cause, params):
    shape, w, b, eps = ln.normalized_shape, ln.weight, ln.bias, ln.eps

    def f(x):
        if cause == "ln-eps":
            return F.layer_norm(x, shape, w, b, params["eps"])
        if cause == "ln-weight-dropped":
            return F.layer_norm(x, shape, None, b, eps)
        if cause == "ln-bias-dropped":
            return F.layer_norm(x, shape, w, None, eps)
        if cause in ("ln-eps-outside", "ln-unbiased-var"):
            mu = x.mean(-1, keepdim=True)
            if cause == "ln-eps-outside":
                var = (x - mu).pow(2).mean(-1, keepdim=True)
                return (x - mu) / (var.sqrt() + eps) * w + b
            var = (x - mu).pow(2).sum(-1, keepdim=True) / (x.shape[-1] - 1)
            return (x - mu) / torch.sqrt(var + eps) * w + b
        return F.layer_norm(x, shape, w, b, eps)  # off

    return f


def _act_fn(cause):
    def f(x):
        if cause == "gelu-tanh":
            return F.gelu(x, approximate="tanh")
        if cause == "gelu-sigmoid":
            return x * torch.sigmoid(1.702 * x)
        if cause == "relu":
            return F.relu(x)
        if cause == "silu":
            return F.silu(x)
        return F.gelu(x)  # off (HF "gelu" = exact erf GELU)

    return f


# ---------------------------------------------------------------- attention core

def inv_freq_of(rd, base):
    """transformers' default rope inv_freq, computed on the CPU in fp32 (as at model init)."""
    return 1.0 / (base ** (torch.arange(0, rd, 2, dtype=torch.int64).to(dtype=torch.float) / rd))


def rotary_cos_sin(T, rd, base, device, positions=None, inv_freq=None):
    """cos, sin [1, T, rd] in fp32 as transformers computes them (default rope): angles = position * inv_freq
    in fp32, cat(freqs, freqs). inv_freq: the model's own buffer, else inv_freq_of(rd, base)."""
    inv_freq = (inv_freq_of(rd, base) if inv_freq is None else inv_freq).to(device=device, dtype=torch.float)
    pos = torch.arange(T, device=device, dtype=torch.float) if positions is None else positions.float()
    freqs = pos[:, None] * inv_freq[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    return emb.cos()[None], emb.sin()[None]


def _online_no_rescale(scores, v, block):
    """softmax(scores) @ v computed over key blocks, the running sum and accumulator NOT rescaled when the
    running max grows. scores [B, H, T, T] fp32 (masked entries -inf), v [B, H, T, hd]."""
    T = scores.shape[-1]
    m = torch.full(scores.shape[:-1] + (1,), float("-inf"), device=scores.device, dtype=torch.float32)
    l = torch.zeros_like(m)
    acc = torch.zeros(scores.shape[:-1] + (v.shape[-1],), device=scores.device, dtype=torch.float32)
    for j0 in range(0, T, block):
        s = scores[..., j0: j0 + block]
        m_new = torch.maximum(m, s.amax(-1, keepdim=True))  # finite: key 0 (block 0) is seen by every row
        p = torch.exp(s - m_new)
        l = l + p.sum(-1, keepdim=True)
        acc = acc + p @ v[..., j0: j0 + block, :].float()
        m = m_new
    return (acc / l).to(v.dtype)


def attention_core(qkv, cj, position_embeddings=None, scale=None, base=None, ndims=None, pos_offset=None,
                   gptj=False, layout="neox", head_order=None, causal=0, softmax_round=None, online_block=None,
                   post=None, inv_freq=None):
    """The attention core from the fused QKV output [B, T, 3d] to the input of attention.dense [B, T, d].
    causal: an int offset (row t sees keys j <= t + causal) or None (no mask). Rotary tables: HF's
    position_embeddings, unless base / ndims / pos_offset asks for others (then made here: from the model's
    inv_freq buffer `inv_freq` where base and ndims are the config's)."""
    d, H = cj["hidden_size"], cj["num_attention_heads"]
    hd, rd, cbase = rope_config(cj)
    B, T, _ = qkv.shape
    if layout == "3hd":
        q, k, v = (qkv[..., i * d: (i + 1) * d].reshape(B, T, H, hd).transpose(1, 2) for i in range(3))
    else:
        x = qkv.view(B, T, H, 3 * hd).transpose(1, 2)
        q, k, v = x[..., :hd], x[..., hd: 2 * hd], x[..., 2 * hd:]
    own = base is not None or ndims is not None or pos_offset is not None or position_embeddings is None
    if own:
        pos = torch.arange(T, device=qkv.device)
        if pos_offset is not None:
            pos = torch.where(pos >= pos_offset["from"], pos + pos_offset["offset"], pos)
        same = base is None and ndims is None
        cos, sin = rotary_cos_sin(T, ndims or rd, base or cbase, qkv.device, pos, inv_freq if same else None)
    else:
        cos, sin = position_embeddings
    cos, sin = cos.to(q.dtype), sin.to(q.dtype)
    q, k = rf._rope(q, k, cos, sin, unsqueeze_dim=1, interleaved=gptj)
    s = torch.matmul(q, k.transpose(-1, -2)) * (1.0 / math.sqrt(hd) if scale is None else scale)
    if causal is not None:
        i = torch.arange(T, device=qkv.device)
        allowed = i[None, :] <= i[:, None] + causal
        s = s.masked_fill(~allowed, float("-inf"))
    if online_block:
        out = _online_no_rescale(s.float(), v, online_block)
    else:
        p = F.softmax(s, dim=-1, dtype=torch.float32).to(q.dtype)
        if softmax_round:
            p = _rnd(p, softmax_round)
        out = torch.matmul(p, v)
    if head_order is not None:
        out = out[:, list(head_order)]
    out = out.transpose(1, 2).reshape(B, T, d)
    return post(out) if post else out


ATTN_CAUSES = {"softmax-scale", "rotary-base", "rotary-width", "qkv-layout", "heads-permuted", "causal-missing",
               "causal-off-by-one", "rotary-gptj", "rotary-offset", "softmax-fp16", "softmax-bf16",
               "softmax-no-rescale", "rows-shifted", "output-bf16", "output-fp16", "dropout", "elements-shifted",
               "row-broadcast"}


def _core_kwargs(cause, params):
    if cause == "softmax-scale":
        return {"scale": params["scale"]}
    if cause == "rotary-base":
        return {"base": params["base"]}
    if cause == "rotary-width":
        return {"ndims": params["ndims"]}
    if cause == "qkv-layout":
        return {"layout": "3hd"}
    if cause == "heads-permuted":
        return {"head_order": params["order"]}
    if cause == "causal-missing":
        return {"causal": None}
    if cause == "causal-off-by-one":
        return {"causal": params["offset"]}
    if cause == "rotary-gptj":
        return {"gptj": True}
    if cause == "rotary-offset":
        return {"pos_offset": {"offset": params["offset"], "from": params["from"]}}
    if cause in ("softmax-fp16", "softmax-bf16"):
        return {"softmax_round": cause.split("-")[1]}
    if cause == "softmax-no-rescale":
        return {"online_block": params["block"]}
    post = post_transform(cause, params)
    if post is not None:
        return {"post": post}
    raise ValueError(f"no attention-core variant for {cause}")


def _off_core_kwargs(cause, params):
    """The patch with its fault off: the same code path (own rotary tables where the fault makes its own)."""
    if cause == "rotary-base":
        return {"base": None, "ndims": None, "pos_offset": {"offset": 0, "from": 0}}
    if cause in ("rotary-width", "rotary-offset"):
        return {"pos_offset": {"offset": 0, "from": 0}}
    if cause == "softmax-no-rescale":
        return {"online_block": 10 ** 9}  # one block: the exact online softmax
    return {}


def _plant_attention(model, cj, layer, cause, params, off):
    attn = _layer(model, layer).attention
    if cause == "softmax-scale" and params["scale"] == 1 and not params.get("core"):
        old = attn.scaling  # HF's own attention path (sdpa): the unscaled softmax of run_faults
        if not off:
            attn.scaling = 1.0

        def undo():
            attn.scaling = old

        return undo
    kw = _off_core_kwargs(cause, params) if off else _core_kwargs(cause, params)
    rot = getattr(model.gpt_neox, "rotary_emb", None)

    def forward(hidden_states, attention_mask=None, position_ids=None, position_embeddings=None, **kwargs):
        qkv = attn.query_key_value(hidden_states)
        a = attention_core(qkv, cj, position_embeddings, inv_freq=getattr(rot, "inv_freq", None), **kw)
        return attn.dense(a), None

    attn.forward = forward
    return lambda: delattr(attn, "forward")


# ---------------------------------------------------------------- residual

def _plant_residual(model, layer_i, cause, params, off):
    layer = _layer(model, layer_i)
    term, src = params.get("term"), params.get("from")

    def pick(name, val, named):
        if off or name != term:
            return val
        if cause == "residual-term-dropped":
            return torch.zeros_like(val)
        if cause == "residual-term-doubled":
            return val + val
        if cause == "residual-wrong-tensor":
            return named[src]
        raise ValueError(cause)

    def forward(hidden_states, attention_mask=None, position_ids=None, use_cache=False, layer_past=None,
                position_embeddings=None, **kwargs):
        ln1 = layer.input_layernorm(hidden_states)
        attn_output, _ = layer.attention(
            ln1, attention_mask=attention_mask, position_ids=position_ids, layer_past=layer_past,
            use_cache=use_cache, position_embeddings=position_embeddings, **kwargs)
        attn_output = layer.post_attention_dropout(attn_output)
        named = {"input": hidden_states, "ln1": ln1, "attn": attn_output}
        if layer.use_parallel_residual:
            ln2 = layer.post_attention_layernorm(hidden_states)
            mlp_output = layer.post_mlp_dropout(layer.mlp(ln2))
            named.update(ln2=ln2, mlp=mlp_output)
            return (pick("mlp", mlp_output, named) + pick("attn", attn_output, named)
                    + pick("input", hidden_states, named))
        mid = pick("attn", attn_output, named) + pick("input", hidden_states, named)
        ln2 = layer.post_attention_layernorm(mid)
        mlp_output = layer.post_mlp_dropout(layer.mlp(ln2))
        named.update(mid=mid, ln2=ln2, mlp=mlp_output)
        return pick("mlp", mlp_output, named) + mid

    layer.forward = forward
    return lambda: delattr(layer, "forward")


# ---------------------------------------------------------------- one entry point

def plant(model, cj, op, layer, cause, params, off=False):
    """Plant `cause` at `op` (layer `layer`; None for embed / final_norm / lm_head). Returns undo()."""
    params = params or {}
    if op == "attention":
        return _plant_attention(model, cj, layer, cause, params, off)
    if op == "residual":
        return _plant_residual(model, layer, cause, params, off)
    mod = op_module(model, op, layer)
    post = post_transform(cause, params)
    if post is not None:
        orig = type(mod).forward.__get__(mod)
        fn = orig if off else (lambda *a, **k: post(orig(*a, **k)))
    elif isinstance(mod, torch.nn.Linear):
        fn = _linear_fn(mod, None if off else cause, params)
    elif isinstance(mod, torch.nn.LayerNorm):
        fn = _ln_fn(mod, None if off else cause, params)
    elif op == "act":
        fn = _act_fn(None if off else cause)
    else:
        raise ValueError(f"no variant {cause} for op {op}")
    mod.forward = fn
    return lambda: delattr(mod, "forward")


# ---------------------------------------------------------------- local op checks (fp64, from the run's own taps)

def _rel(a, b):
    a, b = a.double(), b.double()
    nb = torch.linalg.vector_norm(b)
    return (torch.linalg.vector_norm(a - b) / nb.clamp_min(1e-300)).item()


def local_errors(run, sd, cj, ids, inv_freq=None):
    """{(layer, op): rel L2 of the op's recorded output against the op recomputed in fp64 from its recorded input}
    for every op whose taps are in `run`. layer is None for embed, final_norm, lm_head. sd: the weights the run
    used (fp64). Rotary angles as transformers computes them (fp32; inv_freq: the model's buffer if given),
    then cos and sin in fp64."""
    d, H, L, eps = cj["hidden_size"], cj["num_attention_heads"], cj["num_hidden_layers"], cj["layer_norm_eps"]
    hd, rd, base = rope_config(cj)
    parallel = cj.get("use_parallel_residual", True)
    g = {k: v.double() for k, v in run.items()}
    out = {}

    def lin(x, p):
        return x @ sd[p + ".weight"].T + (sd[p + ".bias"] if p + ".bias" in sd else 0.0)

    def ln(x, p):
        return F.layer_norm(x, (d,), sd[p + ".weight"], sd[p + ".bias"], eps)

    def attention(qkv):
        T = qkv.shape[0]
        inv = inv_freq_of(rd, base) if inv_freq is None else inv_freq.detach().cpu().float()
        ang = (torch.arange(T, dtype=torch.float)[:, None] * inv[None, :]).double()  # fp32 angles, fp64 trig
        cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)
        x = qkv.view(T, H, 3 * hd).transpose(0, 1)
        q, k, v = x[..., :hd], x[..., hd: 2 * hd], x[..., 2 * hd:]
        q, k = rf._rope(q, k, cos, sin, unsqueeze_dim=0)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        return (s.softmax(-1) @ v).transpose(0, 1).reshape(T, d)

    if "gpt_neox.embed_in:out" in g:
        out[(None, "embed")] = _rel(g["gpt_neox.embed_in:out"], sd["gpt_neox.embed_in.weight"][torch.as_tensor(ids)])
    for i in range(L):
        p = f"gpt_neox.layers.{i}"
        fns = {"ln1": lambda x, p=p: ln(x, p + ".input_layernorm"),
               "qkv": lambda x, p=p: lin(x, p + ".attention.query_key_value"),
               "dense": lambda x, p=p: lin(x, p + ".attention.dense"),
               "ln2": lambda x, p=p: ln(x, p + ".post_attention_layernorm"),
               "fc1": lambda x, p=p: lin(x, p + ".mlp.dense_h_to_4h"),
               "act": lambda x: F.gelu(x),
               "fc2": lambda x, p=p: lin(x, p + ".mlp.dense_4h_to_h")}
        for op, fn in fns.items():
            m = f"{p}.{LAYER_OPS[op]}"
            if m + ":in" in g and m + ":out" in g:
                out[(i, op)] = _rel(g[m + ":out"], fn(g[m + ":in"]))
        qkv, a = g.get(f"{p}.attention.query_key_value:out"), g.get(f"{p}.attention.dense:in")
        if qkv is not None and a is not None:
            out[(i, "attention")] = _rel(a, attention(qkv))
        x, y = g.get(f"{p}:in"), g.get(f"{p}:out")
        ao, mo = g.get(f"{p}.attention.dense:out"), g.get(f"{p}.mlp.dense_4h_to_h:out")
        if None not in (x, y, ao, mo):
            if parallel:
                out[(i, "residual")] = _rel(y, x + ao + mo)
            elif f"{p}.post_attention_layernorm:in" in g:
                mid = g[f"{p}.post_attention_layernorm:in"]
                out[(i, "residual")] = max(_rel(mid, x + ao), _rel(y, mid + mo))
    fi, fo = g.get("gpt_neox.final_layer_norm:in"), g.get("gpt_neox.final_layer_norm:out")
    if fi is not None and fo is not None:
        out[(None, "final_norm")] = _rel(fo, ln(fi, "gpt_neox.final_layer_norm"))
    if fo is not None and "logits" in g:
        head = sd.get("lm_head.weight", sd.get("embed_out.weight"))
        out[(None, "lm_head")] = _rel(g["logits"], fo @ head.T)
    return out


def forward_order(L):
    """Every check (layer, op) in forward order."""
    return [(None, "embed")] + [(i, op) for i in range(L) for op in OP_ORDER] + [(None, "final_norm"),
                                                                               (None, "lm_head")]
