"""Faults planted in a Hugging Face GPTNeoXForCausalLM (transformers 5.x) for the run-file fixtures, and a
PyTorch fp64 check of each op's local error from a run's own taps (to show where each fault is born).

Each plant_* function changes the model in place and returns an undo function. The patches replace a module's
`forward` on the instance (or a module-level function, gated to one layer), so forward hooks and HF's
output_hidden_states see exactly what the faulty model computed.
"""

import math

import torch
import torch.nn.functional as F
import transformers.models.gpt_neox.modeling_gpt_neox as mg


def _layer(model, i):
    return model.gpt_neox.layers[i]


def _bf16(x):
    return x.to(torch.bfloat16).to(x.dtype)


def plant_residual_bf16(model, i):
    """Layer i's residual sums are stored in bf16 (both adds of a sequential layer, the one add of a parallel one).
    A copy of transformers 5.17's GPTNeoXLayer.forward with the rounding added."""
    layer = _layer(model, i)

    def forward(hidden_states, attention_mask=None, position_ids=None, use_cache=False, layer_past=None,
                position_embeddings=None, **kwargs):
        attn_output, _ = layer.attention(
            layer.input_layernorm(hidden_states), attention_mask=attention_mask, position_ids=position_ids,
            layer_past=layer_past, use_cache=use_cache, position_embeddings=position_embeddings, **kwargs)
        attn_output = layer.post_attention_dropout(attn_output)
        if layer.use_parallel_residual:
            mlp_output = layer.post_mlp_dropout(layer.mlp(layer.post_attention_layernorm(hidden_states)))
            return _bf16(mlp_output + attn_output + hidden_states)
        attn_output = _bf16(attn_output + hidden_states)
        mlp_output = layer.post_mlp_dropout(layer.mlp(layer.post_attention_layernorm(attn_output)))
        return _bf16(mlp_output + attn_output)

    layer.forward = forward
    return lambda: delattr(layer, "forward")


def _rotate_every_two(x):
    return torch.stack((-x[..., 1::2], x[..., 0::2]), dim=-1).flatten(-2)


def _rope(q, k, cos, sin, unsqueeze_dim=1, interleaved=False):
    """HF's apply_rotary_pos_emb (neox: halves) or the GPT-J layout (interleaved pairs), partial rotary."""
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    rd = cos.shape[-1]
    if interleaved:  # HF's cos = cat(f, f): GPT-J pairs (2j, 2j+1) turn by frequency j
        cos = cos[..., : rd // 2].repeat_interleave(2, dim=-1)
        sin = sin[..., : rd // 2].repeat_interleave(2, dim=-1)
    turn = _rotate_every_two if interleaved else mg.rotate_half
    out = []
    for t in (q, k):
        r, p = t[..., :rd], t[..., rd:]
        out.append(torch.cat([r * cos + turn(r) * sin, p], dim=-1))
    return tuple(out)


def plant_gptj_rotary(model, i):
    """Layer i applies rotary to interleaved pairs (GPT-J) instead of GPT-NeoX's halves."""
    attn = _layer(model, i).attention
    orig_fn, orig_fwd = mg.apply_rotary_pos_emb, attn.forward
    state = {"on": False}

    def apply(q, k, cos, sin, unsqueeze_dim=1):
        if state["on"]:
            return _rope(q, k, cos, sin, unsqueeze_dim, interleaved=True)
        return orig_fn(q, k, cos, sin, unsqueeze_dim)

    def forward(*args, **kwargs):
        state["on"] = True
        try:
            return orig_fwd(*args, **kwargs)
        finally:
            state["on"] = False

    mg.apply_rotary_pos_emb = apply
    attn.forward = forward

    def undo():
        mg.apply_rotary_pos_emb = orig_fn
        delattr(attn, "forward")

    return undo


def plant_unscaled_softmax(model, i):
    """Layer i's attention scores are not scaled by 1/sqrt(head_dim)."""
    attn = _layer(model, i).attention
    old = attn.scaling
    attn.scaling = 1.0

    def undo():
        attn.scaling = old

    return undo


def plant_tanh_gelu(model, i):
    """Layer i's MLP activation is the tanh approximation of GELU."""
    act = _layer(model, i).mlp.act
    act.forward = lambda x: F.gelu(x, approximate="tanh")
    return lambda: delattr(act, "forward")


def plant_ln_eps_outside(model, i, which):
    """Layer i's LayerNorm `which` computes (x - mean) / (sqrt(var) + eps) instead of / sqrt(var + eps)."""
    ln = getattr(_layer(model, i), which)

    def forward(x):
        mu = x.mean(-1, keepdim=True)
        var = (x - mu).pow(2).mean(-1, keepdim=True)
        return (x - mu) / (var.sqrt() + ln.eps) * ln.weight + ln.bias

    ln.forward = forward
    return lambda: delattr(ln, "forward")


def plant_tf32(model, i):
    """Global: fp32 matmuls on CUDA may use TF32 (10-bit mantissa) tensor cores."""
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True

    def undo():
        torch.backends.cuda.matmul.allow_tf32 = old

    return undo


# ---------------------------------------------------------------- local op checks (fp64, from the run's own taps)

def _rel(a, b):
    a, b = a.double(), b.double()
    return (torch.linalg.vector_norm(a - b) / torch.linalg.vector_norm(b).clamp_min(1e-300)).item()


def local_errors(run, sd, cfg):
    """{(layer, op): rel L2 of the op's recorded output against the op recomputed in fp64 from its recorded
    input}, for the ops whose taps are in `run` (a dict of tensors). sd: the model's weights (fp64)."""
    d, H, L, eps = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"], cfg["layer_norm_eps"]
    hd = d // H
    rp = cfg.get("rope_parameters") or {}
    rd = int(hd * cfg.get("rotary_pct", rp.get("partial_rotary_factor", 0.25)))
    base = cfg.get("rotary_emb_base", rp.get("rope_theta", 10000.0))
    parallel = cfg.get("use_parallel_residual", True)
    g = {k: v.double() for k, v in run.items()}
    out = {}

    def lin(x, p):
        return x @ sd[p + ".weight"].T + sd[p + ".bias"]

    def ln(x, p):
        return F.layer_norm(x, (d,), sd[p + ".weight"], sd[p + ".bias"], eps)

    def attention(qkv):
        T = qkv.shape[0]
        qkv = qkv.view(T, H, 3 * hd).transpose(0, 1)  # [H, T, 3hd]
        q, k, v = qkv.chunk(3, dim=-1)
        inv = 1.0 / (base ** (torch.arange(0, rd, 2, dtype=torch.float64) / rd))
        ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None, :]
        cos, sin = torch.cat([ang.cos()] * 2, -1), torch.cat([ang.sin()] * 2, -1)  # [T, rd]
        q, k = _rope(q, k, cos, sin, unsqueeze_dim=0)
        s = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        s = s.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
        return (s.softmax(-1) @ v).transpose(0, 1).reshape(T, d)

    for i in range(L):
        p = f"gpt_neox.layers.{i}"
        ops = {
            "ln1": (f"{p}.input_layernorm", lambda x, p=p: ln(x, p + ".input_layernorm")),
            "qkv": (f"{p}.attention.query_key_value", lambda x, p=p: lin(x, p + ".attention.query_key_value")),
            "dense": (f"{p}.attention.dense", lambda x, p=p: lin(x, p + ".attention.dense")),
            "ln2": (f"{p}.post_attention_layernorm", lambda x, p=p: ln(x, p + ".post_attention_layernorm")),
            "fc1": (f"{p}.mlp.dense_h_to_4h", lambda x, p=p: lin(x, p + ".mlp.dense_h_to_4h")),
            "act": (f"{p}.mlp.act", lambda x: F.gelu(x)),
            "fc2": (f"{p}.mlp.dense_4h_to_h", lambda x, p=p: lin(x, p + ".mlp.dense_4h_to_h")),
        }
        for op, (m, fn) in ops.items():
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
            else:
                mid = g[f"{p}.post_attention_layernorm:in"]
                out[(i, "residual")] = max(_rel(mid, x + ao), _rel(y, mid + mo))
    return out
