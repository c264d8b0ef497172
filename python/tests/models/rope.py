"""RoPE frequencies and tables of the test models, in PyTorch fp32 as transformers computes them
(docs/encodings.md §5, §6), written from the formulas there — not copied from transformers.

Every function takes the model's config dict (a config.json's contents) and a set of planted
mistakes (python/tests/models/__init__.py, MISTAKES); the genuine path is the empty set."""

import math

import torch


def text_config(config):
    """The text model's config (Qwen3-VL nests it under text_config)."""
    return config.get("text_config", config)


def head_dim(config):
    c = text_config(config)
    if c.get("qk_rope_head_dim"):
        return c["qk_rope_head_dim"]  # DeepSeek MLA: the rope part of the head
    return c.get("head_dim") or c["hidden_size"] // c["num_attention_heads"]


def rope_parameters(config, layer_type="full_attention"):
    """(rope_theta, the scaling dict) a layer of `layer_type` uses: Gemma-3's sliding layers take
    rope_local_base_freq without scaling, OLMo-3's sliding layers the default RoPE at rope_theta
    (docs/encodings.md §7.2); every other layer the config's rope_scaling."""
    c = text_config(config)
    theta = float(c.get("rope_theta", 10000.0))
    scaling = dict(c.get("rope_scaling") or {"rope_type": "default"})
    scaling.setdefault("rope_type", scaling.get("type", "default"))
    if layer_type == "sliding_attention":
        if "rope_local_base_freq" in c:
            return float(c["rope_local_base_freq"]), {"rope_type": "default"}
        if c.get("model_type") == "olmo3":
            return theta, {"rope_type": "default"}
    return theta, scaling


def rotary_dim(config, mistakes=()):
    """The rotated width: int(head_dim · partial_rotary_factor) (docs/encodings.md §4.3); the whole
    head with the mistake partial-full."""
    d = head_dim(config)
    if "partial-full" in mistakes:
        return d
    return int(d * float(text_config(config).get("partial_rotary_factor", 1.0)))


def _exponents(rot, denominator):
    return torch.arange(0, rot, 2, dtype=torch.int64).float() / denominator


def _mscale(scale, m=1.0):
    return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0


def inv_freq(config, layer_type="full_attention", mistakes=(), seq_len=None):
    """(inv_freq fp32 [rot/2], attention factor) of a layer (docs/encodings.md §5). The mistake
    freq-head-dim divides the exponents by head_dim instead of rotary_dim; sliding-global gives
    sliding layers the global θ and scaling."""
    c = text_config(config)
    if "sliding-global" in mistakes:
        layer_type = "full_attention"
    base, sc = rope_parameters(config, layer_type)
    rot = rotary_dim(config, mistakes)
    denom = head_dim(config) if "freq-head-dim" in mistakes else rot
    kind = sc["rope_type"]
    factor = float(sc.get("factor", 1.0))
    m = 1.0
    if kind == "default":
        inv = 1.0 / (base ** _exponents(rot, denom))
    elif kind == "linear":
        inv = 1.0 / (base ** _exponents(rot, denom))
        inv = inv / factor
    elif kind == "llama3":
        inv = 1.0 / (base ** _exponents(rot, denom))
        lo = float(sc["original_max_position_embeddings"])
        low_wl = lo / sc["low_freq_factor"]
        high_wl = lo / sc["high_freq_factor"]
        wavelength = 2 * math.pi / inv
        long = wavelength > low_wl
        scaled = torch.where(long, inv / factor, inv)
        low_f, high_f = sc["low_freq_factor"], sc["high_freq_factor"]
        t = (lo / wavelength - low_f) / (high_f - low_f)
        blended = (1 - t) * scaled / factor + t * scaled
        middle = ~(wavelength < high_wl) * ~long
        inv = torch.where(middle, blended, scaled)
    elif kind == "yarn":
        lo = float(sc.get("original_max_position_embeddings") or c["max_position_embeddings"])
        beta_fast = sc.get("beta_fast") or 32
        beta_slow = sc.get("beta_slow") or 1
        truncate = sc.get("truncate", True)

        def cdim(beta):
            return (rot * math.log(lo / (beta * 2 * math.pi))) / (2 * math.log(base))

        low, high = cdim(beta_fast), cdim(beta_slow)
        if truncate:
            low, high = math.floor(low), math.ceil(high)
        low, high = max(low, 0), min(high, rot - 1)
        if low == high:
            high += 0.001
        ramp = ((torch.arange(rot // 2, dtype=torch.float32) - low) / (high - low)).clamp(0, 1)
        keep = 1 - ramp
        power = base ** _exponents(rot, denom)
        inv = (1.0 / (factor * power)) * (1 - keep) + (1.0 / power) * keep
        if sc.get("attention_factor") is not None:
            m = float(sc["attention_factor"])
        elif sc.get("mscale") and sc.get("mscale_all_dim"):
            m = _mscale(factor, sc["mscale"]) / _mscale(factor, sc["mscale_all_dim"])
        else:
            m = _mscale(factor)
    elif kind == "longrope":
        lo = float(c.get("original_max_position_embeddings")
                   or sc["original_max_position_embeddings"])
        f = float(sc.get("factor") or c["max_position_embeddings"] / lo)
        lists = sc["long_factor"] if seq_len and seq_len > lo else sc["short_factor"]
        ext = torch.tensor(lists, dtype=torch.float32)
        inv = 1.0 / (ext * base ** _exponents(rot, denom))
        m = 1.0 if f <= 1 else math.sqrt(1 + math.log(f) / math.log(lo))
        if sc.get("attention_factor") is not None:
            m = float(sc["attention_factor"])
    else:
        raise ValueError(f"the test models do not implement rope_type {kind}")
    if "attn-factor-squared" in mistakes:
        m = m * m
    if "attn-factor-dropped" in mistakes:
        m = 1.0
    return inv.float(), m


def stream_of_pairs(config, pairs, mistakes=()):
    """MRoPE: the position stream (0 t, 1 h, 2 w) of each pair (docs/encodings.md §4.6): Qwen3-VL's
    interleaved map (mrope_interleaved) or the consecutive sections of Qwen2-VL. Mistakes:
    mrope-hw-swapped (h and w exchanged), mrope-blocked (an interleaved config read as blocked)."""
    sc = text_config(config)["rope_scaling"]
    sections = sc["mrope_section"]
    interleaved = sc.get("mrope_interleaved", False) and "mrope-blocked" not in mistakes
    out = []
    for i in range(pairs):
        if interleaved:
            s = 0
            if i % 3 == 1 and i < 3 * sections[1]:
                s = 1
            elif i % 3 == 2 and i < 3 * sections[2]:
                s = 2
        else:
            s = 0 if i < sections[0] else (1 if i < sections[0] + sections[1] else 2)
        if "mrope-hw-swapped" in mistakes and s:
            s = 3 - s
        out.append(s)
    return torch.tensor(out, dtype=torch.int64)


def positions_used(position_ids, mistakes=()):
    """The positions a model rotates by: the ones given, or with a planted mistake batch-row0 (every
    row takes row 0's) or packed-no-restart (0 … T − 1 along the whole packed sequence)."""
    p = position_ids
    if "batch-row0" in mistakes:
        p = p[..., :1, :].expand(p.shape) if p.dim() >= 2 else p
    if "packed-no-restart" in mistakes:
        p = torch.arange(p.shape[-1], dtype=torch.int64).expand(p.shape)
    return p


def cos_sin(config, position_ids, dtype, layer_type="full_attention", mistakes=()):
    """transformers' rotary forward (docs/encodings.md §6): freqs = inv_freq ⊗ positions in fp32,
    emb = cat(freqs, freqs), cos/sin · attention factor, cast to the model's dtype. position_ids
    [B, T] → [B, T, rot]; MRoPE [3, B, T]: each pair takes its stream's angle."""
    p = positions_used(position_ids, mistakes)
    seq_len = int(p.max()) + 1
    inv, m = inv_freq(config, layer_type, mistakes, seq_len=seq_len)
    if p.dim() == 3:  # MRoPE: [3, B, T]
        freqs = p.float()[..., None] * inv  # [3, B, T, rot/2]
        streams = stream_of_pairs(config, inv.shape[0], mistakes)
        freqs = torch.gather(freqs, 0, streams.view(1, 1, 1, -1).expand(1, *freqs.shape[1:]))[0]
    else:
        freqs = (inv[None, :, None] @ p[:, None, :].float()).transpose(1, 2)
    emb = torch.cat((freqs, freqs), dim=-1)
    return (emb.cos() * m).to(dtype), (emb.sin() * m).to(dtype)


def cos_sin_cache(config, max_positions, layer_type="full_attention", mistakes=()):
    """vLLM's cache [P, rot] = [cos | sin] per position, built in fp32."""
    inv, m = inv_freq(config, layer_type, mistakes)
    t = torch.arange(max_positions, dtype=torch.float32)
    freqs = torch.einsum("i,j->ij", t, inv)
    return torch.cat((freqs.cos() * m, freqs.sin() * m), dim=-1)
