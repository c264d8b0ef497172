"""Engine-style (vLLM-like) decoders for pev's tracer tests (docs/python.md §9): tokens of every
sequence are flattened into one batch [T] with their positions [T] (packed sequences restart at
0), and each attention owns a rotary module called ``rotary_emb(positions, q, k) -> (q, k)`` on
q/k flattened [T, H·D], which rotates in place as vLLM's kernels do — the structure
pev.torch.trace hooks. Pure PyTorch, from the semantics in docs/encodings.md §4.4.

Families (models/__init__.py): GLM-4.5 (partial_rotary_factor 0.5), Qwen3-Next
(partial_rotary_factor 0.25, linear_attention layers without RoPE)."""

import torch
from torch import nn

from . import hf_style, rope


class RotaryEmbedding(nn.Module):
    """vLLM's rotary module: a cos_sin_cache [max_positions, rot] built in fp32 at construction,
    rows gathered by position, the first rot channels of each head rotated NeoX-style in place."""

    def __init__(self, config, head_dim, max_positions, layer_type, mistakes):
        super().__init__()
        self.head_dim = head_dim
        self.mistakes = mistakes
        self.register_buffer(
            "cos_sin_cache", rope.cos_sin_cache(config, max_positions, layer_type, mistakes),
            persistent=False)

    def forward(self, positions, query, key):
        positions = rope.positions_used(positions, self.mistakes)
        cos, sin = self.cos_sin_cache[positions].chunk(2, dim=-1)  # [T, rot/2] each
        for x in (query, key):
            t = x.shape[0]
            heads = x.view(t, -1, self.head_dim)
            rot = 2 * cos.shape[-1]
            x1 = heads[..., : rot // 2].float()
            x2 = heads[..., rot // 2 : rot].float()
            c, s = cos[:, None, :], sin[:, None, :]
            o1, o2 = x1 * c - x2 * s, x2 * c + x1 * s
            heads[..., : rot // 2] = o1.to(x.dtype)
            heads[..., rot // 2 : rot] = o2.to(x.dtype)
        return query, key


class Attention(nn.Module):
    def __init__(self, config, layer_idx, layer_type, use_rope, mistakes):
        super().__init__()
        c = config
        self.layer_idx = layer_idx
        self.heads = c["num_attention_heads"]
        self.kv_heads = c.get("num_key_value_heads", self.heads)
        self.head_dim = c.get("head_dim") or c["hidden_size"] // self.heads
        hidden = c["hidden_size"]
        self.sizes = [self.heads * self.head_dim] + [self.kv_heads * self.head_dim] * 2
        self.qkv_proj = nn.Linear(hidden, sum(self.sizes), bias=False)
        self.o_proj = nn.Linear(self.heads * self.head_dim, hidden, bias=False)
        self.rotary_emb = (RotaryEmbedding(c, self.head_dim, 4096, layer_type, mistakes)
                           if use_rope else None)

    def forward(self, positions, x):
        q, k, v = self.qkv_proj(x).split(self.sizes, dim=-1)
        q, k = q.contiguous(), k.contiguous()
        if self.rotary_emb is not None:
            q, k = self.rotary_emb(positions, q, k)
        t = x.shape[0]
        qh = q.view(t, self.heads, self.head_dim).transpose(0, 1)[None]
        kh = k.view(t, self.kv_heads, self.head_dim).transpose(0, 1)[None]
        vh = v.reshape(t, self.kv_heads, self.head_dim).transpose(0, 1)[None]
        mask = torch.ones(t, t, dtype=torch.bool).tril()[None, None]
        out = hf_style._attend(qh, kh, vh, mask)[0].transpose(0, 1).reshape(t, -1)
        return self.o_proj(out)


class LinearAttention(nn.Module):
    """A linear-attention layer (Qwen3-Next's Gated DeltaNet, reduced): no positional encoding."""

    def __init__(self, config):
        super().__init__()
        self.mix = nn.Linear(config["hidden_size"], config["hidden_size"], bias=False)

    def forward(self, positions, x):
        return self.mix(x).cumsum(0) / torch.arange(1, x.shape[0] + 1)[:, None]


class DecoderLayer(nn.Module):
    def __init__(self, config, layer_idx, layer_type, use_rope, mistakes):
        super().__init__()
        if layer_type == "linear_attention" and not use_rope:
            self.self_attn = LinearAttention(config)
        else:
            self.self_attn = Attention(config, layer_idx, layer_type, use_rope, mistakes)

    def forward(self, positions, x):
        return x + self.self_attn(positions, x)


class Model(nn.Module):
    def __init__(self, config, mistakes=()):
        super().__init__()
        self.config, self.mistakes = config, frozenset(mistakes)
        types = hf_style.layer_types(config)
        use = hf_style.planted_rope_layers(config, self.mistakes)
        self.embed_tokens = nn.Embedding(config.get("vocab_size", 256), config["hidden_size"])
        self.layers = nn.ModuleList(
            DecoderLayer(config, i, types[i], use[i], self.mistakes)
            for i in range(config["num_hidden_layers"]))

    def forward(self, input_ids, positions):
        x = self.embed_tokens(input_ids)
        for layer in self.layers:
            x = layer(positions, x)
        return x
