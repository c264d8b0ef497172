#!/usr/bin/python3
"""Certify a PyTorch rotary module with pev, directly from Python (docs/python.md §7).

The module below is written the way transformers writes LlamaRotaryEmbedding (fp32 inv_freq from
the config, llama3 frequency scaling, fp32 positions times inv_freq, cos/sin of the concatenated
halves); it stands in for your engine's module. The user code is the few lines under "certify".

    PYTHONPATH=build/python /usr/bin/python3 examples/python/torch_rotary.py [--positions N]

Exit status 0 when the module's tables are certified (recipe hf).
"""
import argparse
import math

import torch

import pev

# Llama 3.1 8B's rotary settings, as its config.json gives them.
CONFIG = {
    "head_dim": 128, "hidden_size": 4096, "num_attention_heads": 32,
    "max_position_embeddings": 131072, "rope_theta": 500000.0,
    "rope_scaling": {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                     "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
}


class LlamaRotaryEmbedding(torch.nn.Module):
    """cos, sin [batch, P, head_dim] for position ids [batch, P] (duplicated halves)."""

    def __init__(self, config):
        super().__init__()
        dim, base = config["head_dim"], config["rope_theta"]
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
        s = config.get("rope_scaling") or {}
        if s.get("rope_type") == "llama3":
            factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
            old = s["original_max_position_embeddings"]
            wavelen = 2 * math.pi / inv_freq
            scaled = torch.where(wavelen > old / low, inv_freq / factor, inv_freq)
            smooth = (old / wavelen - low) / (high - low)
            smoothed = (1 - smooth) * scaled / factor + smooth * scaled
            medium = ~(wavelen < old / high) * ~(wavelen > old / low)
            inv_freq = torch.where(medium, smoothed, scaled)
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    @torch.no_grad()
    def forward(self, x, position_ids):
        inv = self.inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
        freqs = (inv @ position_ids[:, None, :].float()).transpose(1, 2)
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos().to(x.dtype), emb.sin().to(x.dtype)


def config_of(spec):
    """The config of a pev.Spec this module implements (default and llama3 RoPE, neox layout, the
    whole head rotated); pev.Unsupported for others (pev's property suites ask for many)."""
    p = spec.params
    known = {"head_dim", "rope_theta", "rope_type", "factor", "low_freq_factor",
             "high_freq_factor", "original_max_position_embeddings", "max_position_embeddings"}
    if (spec.family != "rope" or spec.rope_type not in ("default", "llama3")
            or spec.layout != "neox" or spec.rotary_dim != spec.head_dim or set(p) - known):
        raise pev.Unsupported(spec.text)
    config = {"head_dim": spec.head_dim, "rope_theta": float(p.get("rope_theta", 10000))}
    if spec.rope_type == "llama3":
        config["rope_scaling"] = {"rope_type": "llama3", "factor": p["factor"],
                                  "low_freq_factor": p["low_freq_factor"],
                                  "high_freq_factor": p["high_freq_factor"],
                                  "original_max_position_embeddings":
                                      p["original_max_position_embeddings"]}
    return config


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--positions", type=int, default=131072, help="table rows (default 131072)")
    ap.add_argument("--max-position", type=int, default=1 << 20,
                    help="the callable: largest position pev asks (default 2^20)")
    ap.add_argument("--property-cases", type=int, default=100,
                    help="the callable: cases per property (default 100)")
    args = ap.parse_args()
    rope = LlamaRotaryEmbedding(CONFIG)
    x = torch.zeros(1)

    # ---- certify: the tensors the module returns ---------------------------------------------
    cos, sin = rope(x, torch.arange(args.positions)[None])
    cert = pev.certify(CONFIG, {"cos": cos, "sin": sin, "inv_freq": rope.inv_freq}, recipe="hf")
    print(cert)

    # ---- certify: the module itself, asked by pev for positions and (property suites) specs -----
    def rotary(positions, spec):
        return LlamaRotaryEmbedding(config_of(spec))(x, torch.from_numpy(positions)[None])

    live = pev.certify(CONFIG, rotary, recipe="hf", max_position=args.max_position,
                       property_cases=args.property_cases)
    print(live)

    # Both pass transformers' recipe for any conforming math library (PyTorch's vectorized cos is
    # a 1-ulp function): the tables, and the property suites' cases, whose contract assumes the
    # same library class as the recipe bounds (docs/python.md §7).
    pev.testing.assert_certified(cert)
    pev.testing.assert_certified(live)


if __name__ == "__main__":
    main()
