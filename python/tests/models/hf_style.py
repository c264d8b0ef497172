"""Transformers-style decoders for pev's tracer tests (docs/python.md §9): a model-level rotary
embedding computes cos/sin once per layer type, and each attention module calls this module's
function apply_rotary_pos_emb (or apply_rotary_pos_emb_interleave, apply_rotary_emb) on
query_states [B, H, T, D] — the structure pev.torch.trace patches. Written from the semantics in
docs/encodings.md §4, §6; pure PyTorch (no transformers package).

Families (models/__init__.py builds them from a config dict): Llama-3.1, Gemma-3 (sliding and
global layers with their own θ), Llama-4 (NoPE every 4th layer, interleaved pairs via complex
multiply, q in [B, T, H, D]), SmolLM3 (no_rope_layers), Phi-4-mini (longrope, partial rotary),
Qwen3-VL (interleaved MRoPE, 3-D position ids), DeepSeek-V3 (MLA, interleaved rope on
qk_rope_head_dim, YaRN), OLMo-3 (YaRN on full layers only)."""

import torch
from torch import nn

from . import rope


def rotate_half(x):
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2 :]
    return torch.cat((-x2, x1), dim=-1)


def apply_rotary_pos_emb(q, k, cos, sin, unsqueeze_dim=1):
    """NeoX rotation of the first cos.shape[-1] channels of q and k (the rest pass through, as
    partial-rotary models do); cos/sin [B, T, rot] broadcast over the heads."""
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)
    rot = cos.shape[-1]
    q_rot, q_pass = q[..., :rot], q[..., rot:]
    k_rot, k_pass = k[..., :rot], k[..., rot:]
    q_out = torch.cat((q_rot * cos + rotate_half(q_rot) * sin, q_pass), dim=-1)
    k_out = torch.cat((k_rot * cos + rotate_half(k_rot) * sin, k_pass), dim=-1)
    return q_out, k_out


def apply_rotary_pos_emb_interleave(q, k, cos, sin, unsqueeze_dim=1):
    """DeepSeek-V3's interleaved rope (docs/encodings.md §4.2): the GPT-J pairs (2i, 2i+1) are
    gathered into half-split order, rotated the NeoX way, and left in half-split order."""
    cos, sin = cos.unsqueeze(unsqueeze_dim), sin.unsqueeze(unsqueeze_dim)

    def deinterleave(x):
        b, h, s, d = x.shape
        return x.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)

    q, k = deinterleave(q), deinterleave(k)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def apply_rotary_emb(xq, xk, freqs_cis):
    """Llama-4's rotation: x [B, T, H, D] read as complex pairs (2i, 2i+1) in fp32, multiplied by
    freqs_cis [B, T, D/2] (complex), cast back."""
    q = torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))
    k = torch.view_as_complex(xk.float().reshape(*xk.shape[:-1], -1, 2))
    f = freqs_cis[:, :, None, :]
    q_out = torch.view_as_real(q * f).flatten(3)
    k_out = torch.view_as_real(k * f).flatten(3)
    return q_out.type_as(xq), k_out.type_as(xk)


class Attention(nn.Module):
    def __init__(self, config, layer_idx, use_rope, mistakes):
        super().__init__()
        c = rope.text_config(config)
        self.layer_idx = layer_idx
        self.use_rope = use_rope
        self.mistakes = mistakes
        self.heads = c["num_attention_heads"]
        self.kv_heads = c.get("num_key_value_heads", self.heads)
        self.head_dim = c.get("head_dim") or c["hidden_size"] // self.heads
        hidden = c["hidden_size"]
        self.q_proj = nn.Linear(hidden, self.heads * self.head_dim, bias=False)
        self.k_proj = nn.Linear(hidden, self.kv_heads * self.head_dim, bias=False)
        self.v_proj = nn.Linear(hidden, self.kv_heads * self.head_dim, bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, hidden, bias=False)
        self.complex = c.get("model_type") == "llama4_text"

    def rotate(self, q, k, cos, sin):
        if self.complex:  # Llama-4: q/k [B, T, H, D], freqs_cis from cos/sin's first half
            half = cos.shape[-1] // 2
            freqs_cis = torch.complex(cos[..., :half].float(), sin[..., :half].float())
            q, k = apply_rotary_emb(q.transpose(1, 2), k.transpose(1, 2), freqs_cis)
            return q.transpose(1, 2), k.transpose(1, 2)
        return apply_rotary_pos_emb(q, k, cos, sin)

    def forward(self, x, cos_sin, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.head_dim).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
        if self.use_rope:
            q, k = self.rotate(q, k, *cos_sin)
        return self.o_proj(_attend(q, k, v, mask).transpose(1, 2).reshape(b, t, -1))


class MLAttention(nn.Module):
    """DeepSeek-V3's multi-head latent attention, reduced to what its rope touches: q_pe
    [B, H, T, qk_rope_head_dim] and the shared k_pe [B, 1, T, qk_rope_head_dim]."""

    def __init__(self, config, layer_idx, mistakes):
        super().__init__()
        c = config
        self.layer_idx = layer_idx
        self.heads = c["num_attention_heads"]
        self.nope, self.pe = c["qk_nope_head_dim"], c["qk_rope_head_dim"]
        self.v_dim = c["v_head_dim"]
        hidden = c["hidden_size"]
        self.q_proj = nn.Linear(hidden, self.heads * (self.nope + self.pe), bias=False)
        self.kv_proj = nn.Linear(hidden, self.heads * (self.nope + self.v_dim), bias=False)
        self.k_pe_proj = nn.Linear(hidden, self.pe, bias=False)
        self.o_proj = nn.Linear(self.heads * self.v_dim, hidden, bias=False)

    def forward(self, x, cos_sin, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, -1).transpose(1, 2)
        q_nope, q_pe = q.split([self.nope, self.pe], dim=-1)
        kv = self.kv_proj(x).view(b, t, self.heads, -1).transpose(1, 2)
        k_nope, v = kv.split([self.nope, self.v_dim], dim=-1)
        k_pe = self.k_pe_proj(x).view(b, 1, t, self.pe)
        q_pe, k_pe = apply_rotary_pos_emb_interleave(q_pe, k_pe, *cos_sin)
        q = torch.cat((q_nope, q_pe), dim=-1)
        k = torch.cat((k_nope, k_pe.expand(b, self.heads, t, self.pe)), dim=-1)
        return self.o_proj(_attend(q, k, v, mask).transpose(1, 2).reshape(b, t, -1))


def _attend(q, k, v, mask):
    if k.shape[1] != q.shape[1]:
        k = k.repeat_interleave(q.shape[1] // k.shape[1], dim=1)
        v = v.repeat_interleave(q.shape[1] // v.shape[1], dim=1)
    scores = (q.float() @ k.float().transpose(-1, -2)) / q.shape[-1] ** 0.5
    scores = scores.masked_fill(~mask, float("-inf"))
    return (scores.softmax(-1).nan_to_num() @ v.float()).to(q.dtype)


class DecoderLayer(nn.Module):
    def __init__(self, config, layer_idx, layer_type, use_rope, mistakes):
        super().__init__()
        self.layer_type = layer_type
        if "qk_rope_head_dim" in config:
            self.self_attn = MLAttention(config, layer_idx, mistakes)
        else:
            self.self_attn = Attention(config, layer_idx, use_rope, mistakes)

    def forward(self, x, position_embeddings, mask):
        return x + self.self_attn(x, position_embeddings[self.layer_type], mask)


def layer_types(config):
    c = rope.text_config(config)
    return list(c.get("layer_types") or ["full_attention"] * c["num_hidden_layers"])


def rope_layers(config):
    """Which layers rotate, by the config: no_rope_layers (1 rotates), no_rope_layer_interval
    (every n-th layer is NoPE), linear_attention layers never."""
    c = rope.text_config(config)
    n = c["num_hidden_layers"]
    if "no_rope_layers" in c:
        use = [bool(v) for v in c["no_rope_layers"]]
    elif c.get("no_rope_layer_interval"):
        use = [(i + 1) % c["no_rope_layer_interval"] != 0 for i in range(n)]
    else:
        use = [True] * n
    return [u and t != "linear_attention" for u, t in zip(use, layer_types(config))]


def planted_rope_layers(config, mistakes):
    """rope_layers with the mistakes rope-on-nope (NoPE layers rotate), nope-on-rope (the layers
    that should rotate do not) and no-rope-inverted (no_rope_layers read the other way round:
    both)."""
    use = rope_layers(config)
    types = layer_types(config)
    nope = [not u and t != "linear_attention" for u, t in zip(use, types)]
    if "no-rope-inverted" in mistakes:
        return nope
    if "nope-on-rope" in mistakes:
        use = [False] * len(use)
    if "rope-on-nope" in mistakes:
        use = [u or n for u, n in zip(use, nope)]
    return use


class Model(nn.Module):
    def __init__(self, config, mistakes=()):
        super().__init__()
        c = rope.text_config(config)
        self.config, self.mistakes = config, frozenset(mistakes)
        self.embed_tokens = nn.Embedding(c.get("vocab_size", 256), c["hidden_size"])
        types = layer_types(config)
        use = planted_rope_layers(config, self.mistakes)
        self.layers = nn.ModuleList(
            DecoderLayer(c, i, types[i], use[i], self.mistakes)
            for i in range(c["num_hidden_layers"]))

    def forward(self, input_ids, position_ids=None, attention_mask=None):
        b, t = input_ids.shape
        if position_ids is None:
            position_ids = torch.arange(t).expand(b, t)
        x = self.embed_tokens(input_ids)
        embeddings = {
            ty: rope.cos_sin(self.config, position_ids, x.dtype, ty, self.mistakes)
            for ty in set(layer_types(self.config))
        }
        mask = torch.ones(t, t, dtype=torch.bool).tril()[None, None]
        if attention_mask is not None:
            mask = mask & attention_mask.bool()[:, None, None, :]
        for layer in self.layers:
            x = layer(x, embeddings, mask)
        return x
