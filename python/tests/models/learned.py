"""Decoders with a learned positional table added at the input, for pev's tracer tests
(docs/python.md §9, docs/encodings.md §2.4): GPT-2 (``transformer.wpe`` [n_positions, d], row p for
position p) and OPT (``decoder.embed_positions``: row p + 2 — OPT's offset of 2; its positions from
the attention mask, padded tokens at −1 + 2). Their layers apply no rotation. Pure PyTorch."""

import torch
from torch import nn

from . import hf_style


def _block_config(hidden, heads, vocab):
    return {"hidden_size": hidden, "num_attention_heads": heads, "vocab_size": vocab}


class Block(nn.Module):
    def __init__(self, config, layer_idx):
        super().__init__()
        self.attn = hf_style.Attention(config, layer_idx, False, frozenset())

    def forward(self, x, mask):
        return x + self.attn(x, None, mask)


def _mask(b, t, attention_mask):
    mask = torch.ones(t, t, dtype=torch.bool).tril()[None, None]
    if attention_mask is not None:
        mask = mask & attention_mask.bool()[:, None, None, :]
    return mask


class GPT2(nn.Module):
    class Transformer(nn.Module):
        def __init__(self, config):
            super().__init__()
            c = _block_config(config["n_embd"], config["n_head"], config["vocab_size"])
            self.wte = nn.Embedding(config["vocab_size"], config["n_embd"])
            self.wpe = nn.Embedding(config["n_positions"], config["n_embd"])
            self.h = nn.ModuleList(Block(c, i) for i in range(config["n_layer"]))

    def __init__(self, config, mistakes=()):
        super().__init__()
        self.transformer = GPT2.Transformer(config)

    def forward(self, input_ids, position_ids=None, attention_mask=None):
        b, t = input_ids.shape
        if position_ids is None:
            position_ids = torch.arange(t).expand(b, t)
        x = self.transformer.wte(input_ids) + self.transformer.wpe(position_ids)
        mask = _mask(b, t, attention_mask)
        for block in self.transformer.h:
            x = block(x, mask)
        return x


class OPTLearnedPositionalEmbedding(nn.Embedding):
    """OPT's table: max_position_embeddings + 2 rows, position p read at row p + offset."""

    def __init__(self, positions, dim, offset):
        super().__init__(positions + 2, dim)
        self.offset = offset

    def forward(self, attention_mask, position_ids=None):
        if position_ids is None:
            position_ids = (attention_mask.cumsum(1) * attention_mask).long() - 1
        return super().forward(position_ids + self.offset)


class OPT(nn.Module):
    class Decoder(nn.Module):
        def __init__(self, config, offset):
            super().__init__()
            c = _block_config(config["hidden_size"], config["num_attention_heads"],
                              config["vocab_size"])
            self.embed_tokens = nn.Embedding(config["vocab_size"], config["hidden_size"])
            self.embed_positions = OPTLearnedPositionalEmbedding(
                config["max_position_embeddings"], config["hidden_size"], offset)
            self.layers = nn.ModuleList(Block(c, i) for i in range(config["num_hidden_layers"]))

    def __init__(self, config, mistakes=()):
        super().__init__()
        # The mistake opt-offset forgets OPT's offset of 2 (reads row p for position p).
        self.decoder = OPT.Decoder(config, 0 if "opt-offset" in mistakes else 2)

    def forward(self, input_ids, position_ids=None, attention_mask=None):
        b, t = input_ids.shape
        if attention_mask is None:
            attention_mask = torch.ones(b, t, dtype=torch.int64)
        x = self.decoder.embed_tokens(input_ids) + self.decoder.embed_positions(
            attention_mask, position_ids)
        mask = _mask(b, t, attention_mask)
        for layer in self.decoder.layers:
            x = layer(x, mask)
        return x
