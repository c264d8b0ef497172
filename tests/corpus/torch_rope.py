#!/usr/bin/python3
"""RoPE tables and rotated q/k computed the way Hugging Face transformers computes them, on
PyTorch (Debian's python3-torch), for the real-engine corpus of `pev certify`.

The op sequence follows transformers' documented semantics (docs/encodings.md §5 and §6), written
here from those semantics and checked against upstream (`src/transformers/modeling_rope_utils.py`:
`_compute_default_rope_parameters`, `_compute_linear_scaling_rope_parameters`,
`_compute_dynamic_ntk_parameters` with `dynamic_rope_update`, `_compute_yarn_parameters` with
`find_correction_range`/`linear_ramp_factor`/`get_mscale`, `_compute_longrope_parameters` with
`longrope_frequency_update`, `_compute_llama3_parameters`, `_compute_proportional_rope_parameters`; the models' `*RotaryEmbedding.forward`,
`rotate_half` and `apply_rotary_pos_emb` in `models/llama/modeling_llama.py`,
`models/gpt_oss/modeling_gpt_oss.py` (`_apply_rotary_emb`, half-width cos/sin) and
`models/deepseek_v3/modeling_deepseek_v3.py` (`apply_rotary_pos_emb_interleave`)). Every
arithmetic step is a real PyTorch op on CPU, so its rounding, vectorised pow/cos/sin and scalar
promotion are PyTorch 1.13's own — nothing is emulated except the planted bugs that need hardware
this machine lacks (TF32).

Usage: torch_rope.py --out DIR [--seed S] [--only NAME_SUBSTRING]; writes one safetensors file per
case and DIR/torch_manifest.json describing them (case, config, dtype, kind, planted bug, spec).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np
import torch

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402
from common import DEFAULT_SEED, corpus_positions, qk_positions  # noqa: E402

DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}

# Phi-3-mini-128k-instruct's LongRoPE lists (48 pairs of head_dim 96), as in pev's default suite
# (verify/src/sweep/suite.cpp).
PHI3_SHORT = [1.0] * 30 + [
    1.0125000476837158, 1.0307786464691162, 1.0521396398544312, 1.0757858753204346,
    1.1012910604476929, 1.128382682800293, 1.1568691730499268, 1.1866066455841064,
    1.2174829244613647, 1.2494077682495117, 1.2823063135147095, 1.316115379333496,
    1.3507812023162842, 1.3862570524215698, 1.4225019216537476, 1.4594793319702148,
    1.497157096862793, 1.5355058908462524,
]
PHI3_LONG = [
    1.0299999713897705, 1.0317927598953247, 1.0371899604797363, 1.046248197555542,
    1.0590626001358032, 1.0757691860198975, 1.0965467691421509, 1.1216199398040771,
    1.1512638330459595, 1.185808539390564, 1.2256453037261963, 1.2712342739105225,
    1.323112964630127, 1.3819069862365723, 1.4483424425125122, 1.5232607126235962,
    1.6076363325119019, 1.7025971412658691, 1.8094497919082642, 1.92970871925354,
    2.0651304721832275, 2.2177562713623047, 2.3899600505828857, 2.5845091342926025,
    2.8046329021453857, 3.0541090965270996, 3.3373641967773438, 3.6595964431762695,
    4.026923179626465, 4.446559429168701, 4.927031517028809, 5.478443145751953,
    6.112791061401367, 6.844353675842285, 7.690169811248779, 8.670616149902344,
    9.810124397277832, 11.138062477111816, 12.68981647491455, 14.508133888244629,
    16.644790649414062, 19.162654876708984, 22.138263702392578, 25.665042877197266,
    29.857330322265625, 34.85543441772461, 40.831993103027344, 48.0,
]

# The eight configurations: rope_parameters as a config.json would give them (rope_theta inside),
# plus head_dim, the q/k layout and the table width transformers returns.
CONFIGS: dict[str, dict] = {
    "llama2": {"head_dim": 128, "rope_theta": 10000, "rope_type": "default"},
    "llama3.1": {
        "head_dim": 128, "rope_theta": 500000, "rope_type": "llama3", "factor": 8.0,
        "low_freq_factor": 1.0, "high_freq_factor": 4.0,
        "original_max_position_embeddings": 8192,
    },
    "qwen2.5": {
        "head_dim": 128, "rope_theta": 1000000, "rope_type": "yarn", "factor": 4.0,
        "original_max_position_embeddings": 32768,
    },
    # DeepSeek-V3's rope part: qk_rope_head_dim 64, interleaved q/k (rope_interleave), YaRN ×40.
    "deepseek-v3": {
        "head_dim": 64, "rope_theta": 10000, "rope_type": "yarn", "factor": 40.0,
        "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
        "mscale": 1.0, "mscale_all_dim": 1.0, "layout": "interleaved",
    },
    # gpt-oss: its rotary returns cos/sin of the half width (no cat) and `_apply_rotary_emb` splits
    # x in halves: the table is [P, head_dim/2] (pev's `separate` layout).
    "gpt-oss": {
        "head_dim": 64, "rope_theta": 150000, "rope_type": "yarn", "factor": 32.0,
        "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
        "truncate": False, "table": "half",
    },
    "gemma3-global": {"head_dim": 256, "rope_theta": 1000000, "rope_type": "linear", "factor": 8.0},
    "phi3-longrope": {
        "head_dim": 96, "rope_theta": 10000, "rope_type": "longrope", "factor": 32.0,
        "original_max_position_embeddings": 4096, "max_position_embeddings": 131072,
        "short_factor": PHI3_SHORT, "long_factor": PHI3_LONG,
    },
    # Gemma-4-style proportional RoPE (transformers v5): the first int(0.25·256 // 2) = 32 pairs
    # rotate with exponents 2i/head_dim, the other 96 have frequency 0 (cos 1, sin 0).
    "gemma4-proportional": {
        "head_dim": 256, "rope_theta": 1000000, "rope_type": "proportional",
        "partial_rotary_factor": 0.25,
    },
    # Dynamic NTK: every dump reaches far beyond L = 4096, so the dynamic path is active.
    "dynamic-ntk": {
        "head_dim": 128, "rope_theta": 10000, "rope_type": "dynamic", "factor": 2.0,
        "max_position_embeddings": 4096,
    },
    # Qwen2.5-VL's text model: multimodal RoPE (docs/encodings.md §4.6) with three position
    # streams (temporal, height, width) and mrope_section [16, 24, 24] pairs. Its dumps hold
    # positions [3, P] (mrope_positions below).
    "qwen2.5-vl": {
        "head_dim": 128, "rope_theta": 1000000, "rope_type": "default",
        "mrope_section": [16, 24, 24],
    },
    # Qwen3-VL: interleaved MRoPE (mrope_interleaved), sections [24, 20, 20], rope_theta 5e6.
    "qwen3-vl": {
        "head_dim": 128, "rope_theta": 5000000, "rope_type": "default",
        "mrope_section": [24, 20, 20], "mrope_interleaved": True,
    },
}

# Planted bugs: pev mutant id -> what changes in the pipeline (applied in the functions below).
#   inv-freq-bf16            inv_freq buffer cast to bf16 (`model.to(bf16)`), .float() in forward
#   autocast-bf16            the forward under a bf16 CPU autocast (transformers before PR #29285):
#                            the angle matmul runs in bf16, cos/sin of the bf16 angles in bf16
#   positions-bf16/-fp16     position_ids materialised in bf16/fp16 before the .float()
#   positions-tf32           TF32 matmul emulated: both inputs rounded to 11 significant bits
#   sin-cos-swapped          the returned cos and sin swapped
#   position-off-by-one      positions + 1 (a 1-based arange)
#   rope-theta-wrong         rope_theta 10000 where the spec says otherwise
#   scaling-ignored          rope_scaling dropped: default RoPE with the same rope_theta
#   attention-factor-missing the attention factor not applied (m = 1)
#   attention-factor-twice   cos·m·m (applied in the table and again)
#   yarn-other-truncate      the other `truncate` setting
#   yarn-mscale-ignored      mscale/mscale_all_dim ignored: m = get_mscale(factor)
#   longrope-swapped         short and long factor lists swapped
#   dynamic-wrong-length     dynamic NTK evaluated at L·factor (vLLM's static cache)
#   dynamic-never-updated    dynamic NTK left at the init frequencies (original_inv_freq)
#   proportional-tail-rotates  proportional RoPE with every pair rotating (no NoPE tail)
#   neox-as-interleaved      q/k: NeoX weights rotated with interleaved pairs
#   rotate-inverse           q/k: backward rotation (sin negated)
TABLE_BUGS = [
    ("llama2", "fp32", "inv-freq-bf16"), ("qwen2.5", "bf16", "inv-freq-bf16"),
    ("llama2", "fp32", "autocast-bf16"), ("llama3.1", "bf16", "autocast-bf16"),
    ("llama2", "fp32", "positions-bf16"), ("gemma3-global", "bf16", "positions-bf16"),
    ("llama2", "fp32", "positions-fp16"), ("qwen2.5", "fp16", "positions-fp16"),
    ("llama3.1", "fp32", "positions-tf32"), ("llama2", "bf16", "positions-tf32"),
    ("llama2", "fp32", "sin-cos-swapped"), ("deepseek-v3", "fp16", "sin-cos-swapped"),
    ("llama2", "fp32", "position-off-by-one"), ("gpt-oss", "bf16", "position-off-by-one"),
    ("llama3.1", "fp32", "rope-theta-wrong"), ("qwen2.5", "fp32", "rope-theta-wrong"),
    ("llama3.1", "fp32", "scaling-ignored"), ("qwen2.5", "bf16", "scaling-ignored"),
    ("gemma3-global", "fp32", "scaling-ignored"),
    ("qwen2.5", "fp32", "attention-factor-missing"),
    ("phi3-longrope", "fp32", "attention-factor-missing"),
    ("gpt-oss", "fp16", "attention-factor-twice"), ("qwen2.5", "fp32", "attention-factor-twice"),
    ("gpt-oss", "fp32", "yarn-other-truncate"), ("qwen2.5", "fp32", "yarn-other-truncate"),
    ("deepseek-v3", "fp32", "yarn-mscale-ignored"), ("deepseek-v3", "bf16", "yarn-mscale-ignored"),
    ("phi3-longrope", "fp32", "longrope-swapped"), ("phi3-longrope", "bf16", "longrope-swapped"),
    ("dynamic-ntk", "fp32", "dynamic-wrong-length"),
    ("dynamic-ntk", "fp32", "dynamic-never-updated"),
    ("dynamic-ntk", "bf16", "dynamic-never-updated"),
    ("gemma4-proportional", "fp32", "proportional-tail-rotates"),
]
#   mrope-hw-swapped         MRoPE: chunk k of the split takes stream (0, 2, 1)[k mod 3] (h/w swapped)
#   mrope-text-positions     MRoPE: the temporal positions for every stream (1-D position_ids)
#   mrope-interleave-flipped MRoPE: Qwen3-VL's interleave applied to consecutive sections
#   mrope-sections-doubled   MRoPE: sections counted in dims (each doubled, so the split covers
#                            head_dim with [32, 32, 0] pairs: w gets none)
TABLE_BUGS += [
    ("qwen2.5-vl", "fp32", "mrope-hw-swapped"), ("qwen2.5-vl", "bf16", "mrope-text-positions"),
    ("qwen2.5-vl", "fp32", "mrope-interleave-flipped"),
    ("qwen3-vl", "bf16", "mrope-interleave-flipped"), ("qwen3-vl", "fp32", "mrope-hw-swapped"),
]
QK_BUGS = [
    ("qwen2.5-vl", "bf16", "mrope-sections-doubled"), ("qwen2.5-vl", "fp16", "mrope-hw-swapped"),
    ("llama2", "fp32", "neox-as-interleaved"), ("qwen2.5", "bf16", "neox-as-interleaved"),
    ("llama2", "fp32", "rotate-inverse"), ("gemma3-global", "bf16", "rotate-inverse"),
    ("deepseek-v3", "fp32", "rotate-inverse"),
    ("llama3.1", "bf16", "inv-freq-bf16"), ("phi3-longrope", "fp16", "longrope-swapped"),
    ("dynamic-ntk", "bf16", "dynamic-never-updated"),
]

Q_HEADS, K_HEADS = 2, 1


# ---------------------------------------------------------------------------------------------
# The pev SPEC of a configuration
# ---------------------------------------------------------------------------------------------

def _num(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return v
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return repr(v)


SPEC_KEYS = [
    "head_dim", "rope_theta", "layout", "rope_type", "partial_rotary_factor", "factor", "max_position_embeddings",
    "original_max_position_embeddings", "beta_fast", "beta_slow", "truncate", "mscale",
    "mscale_all_dim", "low_freq_factor", "high_freq_factor", "short_factor", "long_factor",
    "mrope_section", "mrope_interleaved",
]


def spec_string(cfg: dict) -> str:
    """pev's SPEC for a configuration (docs/encodings.md §7.7; keys as `pev list` shows them)."""
    parts = []
    for k in SPEC_KEYS:
        if k not in cfg or (k == "rope_type" and cfg[k] == "default"):
            continue
        v = cfg[k]
        if isinstance(v, list):
            parts.append(f"{k}=[{','.join(_num(x) for x in v)}]")
        else:
            parts.append(f"{k}={_num(v)}")
    return "rope:" + ",".join(parts)


# ---------------------------------------------------------------------------------------------
# inv_freq and the attention factor (modeling_rope_utils.py), per rope_type
# ---------------------------------------------------------------------------------------------

def _exponents(dim: int) -> torch.Tensor:
    # torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float) / dim  (PR #28760: int64 first)
    return torch.arange(0, dim, 2, dtype=torch.int64).to(torch.float) / dim


def _default_inv_freq(base, dim: int) -> torch.Tensor:
    # 1.0 / (base ** exponents): a Python-number (or 0-d fp32 tensor) base, fp32 pow; `1.0 / t` is
    # PyTorch's reciprocal.
    return 1.0 / (base ** _exponents(dim))


def _get_mscale(scale: float, mscale: float = 1.0) -> float:
    if scale <= 1:
        return 1.0
    return 0.1 * mscale * math.log(scale) + 1.0


def _yarn(cfg: dict, dim: int, truncate: bool, ignore_mscale: bool):
    base = cfg["rope_theta"]
    factor = cfg["factor"]
    lo = cfg["original_max_position_embeddings"]
    attention_factor = cfg.get("attention_factor")
    mscale, mscale_all_dim = cfg.get("mscale"), cfg.get("mscale_all_dim")
    if attention_factor is None:
        if mscale and mscale_all_dim and not ignore_mscale:
            attention_factor = float(
                _get_mscale(factor, mscale) / _get_mscale(factor, mscale_all_dim))
        else:
            attention_factor = _get_mscale(factor)
    beta_fast = cfg.get("beta_fast") or 32
    beta_slow = cfg.get("beta_slow") or 1

    # find_correction_dim / find_correction_range: Python doubles, floor/ceil when truncating,
    # then max(low, 0) and min(high, dim - 1).
    def corr_dim(rotations):
        return (dim * math.log(lo / (rotations * 2 * math.pi))) / (2 * math.log(base))

    low, high = corr_dim(beta_fast), corr_dim(beta_slow)
    if truncate:
        low, high = math.floor(low), math.ceil(high)
    low, high = max(low, 0), min(high, dim - 1)

    # linear_ramp_factor: fp32 arange minus a Python number, divided by (max - min), clamped.
    if low == high:
        high += 0.001
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float32) - low) / (high - low), 0, 1)

    pos_freqs = base ** (torch.arange(0, dim, 2).to(dtype=torch.float) / dim)
    inv_freq_extrapolation = 1.0 / pos_freqs
    inv_freq_interpolation = 1.0 / (factor * pos_freqs)
    extrapolation_factor = 1 - ramp.to(dtype=torch.float)
    inv_freq = (inv_freq_interpolation * (1 - extrapolation_factor)
                + inv_freq_extrapolation * extrapolation_factor)
    return inv_freq, attention_factor


def _llama3(cfg: dict, dim: int):
    inv_freq = _default_inv_freq(cfg["rope_theta"], dim)
    factor = cfg["factor"]
    low_freq_factor, high_freq_factor = cfg["low_freq_factor"], cfg["high_freq_factor"]
    old_context_len = cfg["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor  # Python doubles
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq  # fp32 tensor
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = ((old_context_len / wavelen - low_freq_factor)
                     / (high_freq_factor - low_freq_factor))
    smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium, smoothed, inv_freq_llama), 1.0


def _longrope(cfg: dict, dim: int, seq_len: int, swapped: bool):
    base = cfg["rope_theta"]
    lo = cfg["original_max_position_embeddings"]
    short, long_ = cfg["short_factor"], cfg["long_factor"]
    if swapped:
        short, long_ = long_, short
    factor = cfg.get("factor")
    if factor is None:
        factor = cfg["max_position_embeddings"] / lo
    attention_factor = cfg.get("attention_factor")
    if attention_factor is None:
        attention_factor = 1.0 if factor <= 1.0 else math.sqrt(1 + math.log(factor) / math.log(lo))
    # longrope_frequency_update: the long list once max(position_ids) + 1 exceeds Lo.
    ext = long_ if seq_len and seq_len > lo else short
    ext_factors = torch.tensor(ext, dtype=torch.float32)
    inv_freq_shape = torch.arange(0, dim, 2, dtype=torch.int64).float() / dim
    return 1.0 / (ext_factors * base**inv_freq_shape), attention_factor


def _proportional(cfg: dict, head_dim: int, tail_rotates: bool):
    """_compute_proportional_rope_parameters: int(partial_rotary_factor·head_dim // 2) pairs with
    exponents over the full head_dim, zeros for the rest (cat), then the in-place division by
    `factor` (default 1.0)."""
    base = cfg["rope_theta"]
    factor = cfg.get("factor", 1.0)
    rope_angles = int(cfg.get("partial_rotary_factor", 1.0) * head_dim // 2)
    if tail_rotates:
        rope_angles = head_dim // 2
    exponents = torch.arange(0, 2 * rope_angles, 2, dtype=torch.int64).to(dtype=torch.float)
    inv_freq_rotated = 1.0 / (base ** (exponents / head_dim))
    nope_angles = head_dim // 2 - rope_angles
    if nope_angles > 0:
        inv_freq = torch.cat((inv_freq_rotated, torch.zeros(nope_angles, dtype=torch.float32)), dim=0)
    else:
        inv_freq = inv_freq_rotated
    inv_freq /= factor
    return inv_freq, 1.0


def _dynamic(cfg: dict, dim: int, seq_len):
    """_compute_dynamic_ntk_parameters. seq_len None: the init call (Python doubles, α = 1); a
    tensor: dynamic_rope_update's max(position_ids) + 1 (int64), so α and the base are fp32."""
    base = cfg["rope_theta"]
    factor = cfg["factor"]
    max_pos = cfg["max_position_embeddings"]
    if seq_len is None:
        seq_len = max_pos
    elif isinstance(seq_len, torch.Tensor):
        seq_len = torch.maximum(seq_len, torch.tensor(max_pos, dtype=seq_len.dtype))
    else:
        seq_len = max(seq_len, max_pos)
    base = base * ((factor * seq_len / max_pos) - (factor - 1)) ** (dim / (dim - 2))
    return _default_inv_freq(base, dim), 1.0


def init_inv_freq(cfg: dict, position_ids: torch.Tensor, bug: str | None):
    """(inv_freq fp32 [dim/2], attention factor as a Python double) for a forward over
    `position_ids`, including the state updates of `dynamic_rope_update` for dynamic/longrope."""
    cfg = dict(cfg)
    if bug == "rope-theta-wrong":
        cfg["rope_theta"] = 10000
    if bug == "scaling-ignored":
        cfg = {"head_dim": cfg["head_dim"], "rope_theta": cfg["rope_theta"], "rope_type": "default"}
    dim = cfg["head_dim"]
    kind = cfg["rope_type"]
    seq_len = torch.max(position_ids) + 1  # dynamic_rope_update's sequence length (int64)
    if kind == "default":
        inv_freq, m = _default_inv_freq(cfg["rope_theta"], dim), 1.0
    elif kind == "linear":
        inv_freq, m = _default_inv_freq(cfg["rope_theta"], dim), 1.0
        inv_freq /= cfg["factor"]  # in-place fp32 division
    elif kind == "dynamic":
        if bug == "dynamic-never-updated":
            inv_freq, m = _dynamic(cfg, dim, None)  # original_inv_freq from __init__
        elif bug == "dynamic-wrong-length":
            length = int(cfg["max_position_embeddings"] * cfg["factor"])
            inv_freq, m = _dynamic(cfg, dim, torch.tensor(length, dtype=torch.int64))
        elif seq_len > cfg["max_position_embeddings"]:
            inv_freq, m = _dynamic(cfg, dim, seq_len)  # growth: recomputed at seq_len
        else:
            inv_freq, m = _dynamic(cfg, dim, None)
    elif kind == "yarn":
        truncate = cfg.get("truncate", True)
        if bug == "yarn-other-truncate":
            truncate = not truncate
        inv_freq, m = _yarn(cfg, dim, truncate, ignore_mscale=bug == "yarn-mscale-ignored")
    elif kind == "llama3":
        inv_freq, m = _llama3(cfg, dim)
    elif kind == "proportional":
        inv_freq, m = _proportional(cfg, dim, tail_rotates=bug == "proportional-tail-rotates")
    elif kind == "longrope":
        lo = cfg["original_max_position_embeddings"]
        # the long table is computed once with seq_len = Lo + 1
        inv_freq, m = _longrope(cfg, dim, lo + 1 if int(seq_len) > lo else None,
                                swapped=bug == "longrope-swapped")
    else:
        raise ValueError(kind)
    if bug == "inv-freq-bf16":
        inv_freq = inv_freq.to(torch.bfloat16)  # model.to(torch.bfloat16) casts the buffer
    if bug == "attention-factor-missing":
        m = 1.0
    return inv_freq, m


# ---------------------------------------------------------------------------------------------
# The forward: cos/sin (LlamaRotaryEmbedding.forward and its copies)
# ---------------------------------------------------------------------------------------------

def _to_tf32(t: torch.Tensor) -> torch.Tensor:
    """fp32 rounded to nearest-even at 11 significant bits (TF32's 10-bit mantissa)."""
    bits = t.float().contiguous().view(torch.int32)
    lsb = (bits >> 13) & 1
    bits = (bits + 0x0FFF + lsb) & ~0x1FFF
    return bits.view(torch.float32)


def mrope_table(cfg: dict, positions: np.ndarray, dtype: str, bug: str | None = None):
    """Qwen2-VL / Qwen2.5-VL / Qwen3-VL: cos, sin [P, head_dim] as attention multiplies q by them,
    for positions [3, P] (temporal, height, width). The rotary forward computes the angles of
    every stream (Qwen2VLRotaryEmbedding.forward: inv_freq expanded to [3, B, D/2, 1], the fp32
    matmul with position_ids [3, B, 1, P]). Qwen3-VL (`mrope_interleaved`) then takes pair i of
    the angles from stream h on slice(1, 3·s1, 3), w on slice(2, 3·s2, 3), t elsewhere
    (apply_interleaved_mrope), and forms cat(freqs, freqs), cos()·m, .to(dtype); Qwen2/2.5-VL form
    the three tables and apply_multimodal_rotary_pos_emb splits their last dim by
    mrope_section·2, chunk k from stream k mod 3."""
    position_ids = torch.from_numpy(positions)[:, None, :]  # [3, B = 1, P]
    if bug == "mrope-text-positions":
        position_ids = position_ids[:1].expand(3, -1, -1)
    inv_freq, m = init_inv_freq(cfg, position_ids[0], bug)
    inv_freq_expanded = inv_freq[None, None, :, None].float().expand(3, position_ids.shape[1], -1, 1)
    position_ids_expanded = position_ids[:, :, None, :].float()
    section = list(cfg["mrope_section"])
    order = (0, 2, 1) if bug == "mrope-hw-swapped" else (0, 1, 2)
    interleaved = cfg.get("mrope_interleaved", False) != (bug == "mrope-interleave-flipped")
    if bug == "mrope-sections-doubled":
        # Sections read as dims: each doubled ([16, 24, 24] -> [32, 48, 48]); a split must cover
        # head_dim, so the consecutive engine gets [32, 32, 0] pairs (w none).
        left, doubled = sum(section), []
        for n in section:
            doubled.append(2 * n if interleaved else min(2 * n, left))
            left -= doubled[-1]
        section = doubled
    with torch.autocast("cpu", enabled=False):
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(2, 3)
        if interleaved:
            merged = freqs[order[0]].clone()
            for dim, offset in ((1, 1), (2, 2)):
                idx = slice(offset, section[dim] * 3, 3)
                merged[..., idx] = freqs[order[dim]][..., idx]
            emb = torch.cat((merged, merged), dim=-1)
            cos = (emb.cos() * m).to(dtype=DTYPES[dtype])
            sin = (emb.sin() * m).to(dtype=DTYPES[dtype])
            return cos[0], sin[0]
        emb = torch.cat((freqs, freqs), dim=-1)
        cos = (emb.cos() * m).to(dtype=DTYPES[dtype])
        sin = (emb.sin() * m).to(dtype=DTYPES[dtype])
    split = section * 2
    cos = torch.cat([c[order[i % 3]] for i, c in enumerate(cos.split(split, dim=-1))], dim=-1)
    sin = torch.cat([c[order[i % 3]] for i, c in enumerate(sin.split(split, dim=-1))], dim=-1)
    return cos[0], sin[0]


def mrope_positions(positions: np.ndarray, seed: int) -> np.ndarray:
    """[3, P] position streams for the corpus positions, as Qwen2-VL's get_rope_index lays out
    text and image tokens: a text token has t = h = w; an image patch has t = its base position and
    h, w = base + its row and column in the grid (seeded; every other token is a patch)."""
    rng = np.random.default_rng(seed + 19)
    rows = rng.integers(0, 32, size=positions.shape)
    cols = rng.integers(0, 32, size=positions.shape)
    patch = (np.arange(positions.size) % 2) == 1
    h = np.where(patch, positions + rows, positions)
    w = np.where(patch, positions + cols, positions)
    return np.stack([positions, h, w]).astype(np.int64)


def rope_table(cfg: dict, positions: np.ndarray, dtype: str, bug: str | None = None):
    """cos, sin as the model's rotary embedding returns them for x of `dtype`: [P, head_dim]
    (duplicated halves) or [P, head_dim/2] for gpt-oss."""
    if "mrope_section" in cfg:
        return mrope_table(cfg, positions, dtype, bug)
    position_ids = torch.from_numpy(positions)[None, :]  # [B = 1, P] int64
    if bug == "position-off-by-one":
        position_ids = position_ids + 1
    inv_freq, m = init_inv_freq(cfg, position_ids, bug)

    inv_freq_expanded = inv_freq[None, :, None].float().expand(position_ids.shape[0], -1, 1)
    if bug == "positions-bf16":
        position_ids_expanded = position_ids[:, None, :].to(torch.bfloat16).float()
    elif bug == "positions-fp16":
        position_ids_expanded = position_ids[:, None, :].to(torch.float16).float()
    else:
        position_ids_expanded = position_ids[:, None, :].float()
    if bug == "positions-tf32":
        inv_freq_expanded = _to_tf32(inv_freq_expanded)
        position_ids_expanded = _to_tf32(position_ids_expanded)

    def angles_to_table():
        # freqs = (inv_freq @ positions)ᵀ: an fp32 matmul with K = 1
        freqs = (inv_freq_expanded.float() @ position_ids_expanded.float()).transpose(1, 2)
        emb = freqs if cfg.get("table") == "half" else torch.cat((freqs, freqs), dim=-1)
        cos = emb.cos() * m
        sin = emb.sin() * m
        if bug == "attention-factor-twice":
            cos, sin = cos * m, sin * m
        return cos, sin

    if bug == "autocast-bf16":
        # transformers before PR #29285: the forward ran under the caller's autocast.
        with torch.autocast("cpu", dtype=torch.bfloat16):
            cos, sin = angles_to_table()
    else:
        # Since PR #29285 the block runs with autocast disabled; fp32 throughout.
        with torch.autocast("cpu", enabled=False):
            cos, sin = angles_to_table()
    cos, sin = cos.to(dtype=DTYPES[dtype])[0], sin.to(dtype=DTYPES[dtype])[0]
    if bug == "sin-cos-swapped":
        cos, sin = sin, cos
    return cos, sin


# ---------------------------------------------------------------------------------------------
# Applying the rotation (apply_rotary_pos_emb and variants), in q's dtype
# ---------------------------------------------------------------------------------------------

def rotate_half(x: torch.Tensor) -> torch.Tensor:
    x1 = x[..., : x.shape[-1] // 2]
    x2 = x[..., x.shape[-1] // 2:]
    return torch.cat((-x2, x1), dim=-1)


def _deinterleave(x: torch.Tensor) -> torch.Tensor:
    # DeepSeek-V3's view(..., d // 2, 2).transpose(-1, -2).reshape: pairs (2i, 2i+1) -> (i, i + d/2)
    t, h, d = x.shape
    return x.view(t, h, d // 2, 2).transpose(3, 2).reshape(t, h, d)


def _interleave(x: torch.Tensor) -> torch.Tensor:
    t, h, d = x.shape
    return x.view(t, h, 2, d // 2).transpose(3, 2).reshape(t, h, d)


def apply_rotary(cfg: dict, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor,
                 bug: str | None = None) -> torch.Tensor:
    """x [T, H, D] in the model dtype; cos/sin [T, D] (or [T, D/2] for gpt-oss) in that dtype;
    every product and sum rounded in x's dtype, as PyTorch's elementwise ops do."""
    cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)  # broadcast over heads
    if bug == "rotate-inverse":
        sin = -sin
    if cfg.get("table") == "half":
        # gpt-oss `_apply_rotary_emb`: chunk into halves, first·cos − second·sin, second·cos +
        # first·sin, cat. (Bit-identical to q·cos + rotate_half(q)·sin with duplicated halves.)
        first, second = torch.chunk(x, 2, dim=-1)
        if bug == "neox-as-interleaved":
            first, second = x[..., 0::2], x[..., 1::2]
            out = torch.stack((first * cos - second * sin, second * cos + first * sin), dim=-1)
            return out.flatten(-2)
        return torch.cat((first * cos - second * sin, second * cos + first * sin), dim=-1)
    if cfg.get("layout") == "interleaved":
        # DeepSeek-V3 apply_rotary_pos_emb_interleave: de-interleave, then the NeoX formula. Its
        # output stays in the half-split order; pev reads interleaved outputs at (2i, 2i + 1)
        # (docs/encodings.md §4.2), so the result is put back in that order (a permutation only).
        y = _deinterleave(x)
        out = (y * cos) + (rotate_half(y) * sin)
        return _interleave(out)
    if bug == "neox-as-interleaved":
        # NeoX weights rotated as interleaved pairs (x_2i, x_2i+1) with pair i's cos/sin.
        y = _deinterleave(x)
        return _interleave((y * cos) + (rotate_half(y) * sin))
    return (x * cos) + (rotate_half(x) * sin)


# ---------------------------------------------------------------------------------------------
# Cases
# ---------------------------------------------------------------------------------------------

def _np(t: torch.Tensor, dtype: str):
    """A tensor as (numpy array, safetensors dtype)."""
    if dtype == "bf16":
        return (t.contiguous().view(torch.int16).numpy().view(np.uint16), "BF16")
    if dtype == "fp16":
        return (t.contiguous().numpy(), "F16")
    return (t.contiguous().numpy(), "F32")


def _case_name(config: str, dtype: str, kind: str, bug: str | None) -> str:
    return f"torch-{config}-{dtype}-{kind}" + (f"-{bug}" if bug else "")


def _same(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.shape == b.shape and torch.equal(a.float().nan_to_num(7.0), b.float().nan_to_num(7.0))


def generate(out: str, seed: int, only: str | None = None) -> list[dict]:
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(seed)
    positions = corpus_positions(seed)
    qk_pos = qk_positions(positions, seed)
    # MRoPE configurations take [3, P] streams; the q/k dump the same tokens' columns.
    mpos = mrope_positions(positions, seed)
    mqk_pos = mpos[:, np.searchsorted(positions, qk_pos)]
    cases = []

    def rows_of(cfg, qk=False):
        if "mrope_section" in cfg:
            return mqk_pos if qk else mpos
        return qk_pos if qk else positions

    def want(name):
        return only is None or only in name

    def qk_inputs(cfg, dtype, config):
        # Seeded standard-normal inputs, drawn in fp32 and rounded to the model dtype.
        g = torch.Generator().manual_seed(seed + sum(map(ord, config + dtype)))
        d = cfg["head_dim"]
        q = torch.randn((len(qk_pos), Q_HEADS, d), generator=g).to(DTYPES[dtype])
        k = torch.randn((len(qk_pos), K_HEADS, d), generator=g).to(DTYPES[dtype])
        return q, k

    def table_case(config, dtype, bug):
        cfg = CONFIGS[config]
        name = _case_name(config, dtype, "table", bug)
        if not want(name):
            return
        pos = rows_of(cfg)
        cos, sin = rope_table(cfg, pos, dtype, bug)
        if bug:
            c0, s0 = rope_table(cfg, pos, dtype, None)
            if _same(cos, c0) and _same(sin, s0):
                print(f"torch_rope: {name}: the bug changes nothing, skipped", file=sys.stderr)
                return
        path = os.path.join(out, name + ".safetensors")
        st_io.save(path, {"cos": _np(cos, dtype), "sin": _np(sin, dtype),
                          "positions": pos}, {"spec": spec_string(cfg)})
        cases.append(_record(name, config, dtype, "table", bug, path, len(positions)))

    def qk_case(config, dtype, bug):
        cfg = CONFIGS[config]
        name = _case_name(config, dtype, "qk", bug)
        if not want(name):
            return
        q, k = qk_inputs(cfg, dtype, config)
        pos = rows_of(cfg, qk=True)
        cos, sin = rope_table(cfg, pos, dtype, None if bug in ROTATION_BUGS else bug)
        rot_bug = bug if bug in ROTATION_BUGS else None
        q_out = apply_rotary(cfg, q, cos, sin, rot_bug)
        k_out = apply_rotary(cfg, k, cos, sin, rot_bug)
        if bug:
            c0, s0 = rope_table(cfg, pos, dtype, None)
            if (_same(q_out, apply_rotary(cfg, q, c0, s0))
                    and _same(k_out, apply_rotary(cfg, k, c0, s0))):
                print(f"torch_rope: {name}: the bug changes nothing, skipped", file=sys.stderr)
                return
        path = os.path.join(out, name + ".safetensors")
        st_io.save(path, {"q_in": _np(q, dtype), "q_out": _np(q_out, dtype),
                          "k_in": _np(k, dtype), "k_out": _np(k_out, dtype),
                          "positions": pos}, {"spec": spec_string(cfg)})
        cases.append(_record(name, config, dtype, "qk", bug, path, len(qk_pos)))

    for config in CONFIGS:
        for dtype in DTYPES:
            table_case(config, dtype, None)
            qk_case(config, dtype, None)
    for config, dtype, bug in TABLE_BUGS:
        table_case(config, dtype, bug)
    for config, dtype, bug in QK_BUGS:
        qk_case(config, dtype, bug)
    return cases


ROTATION_BUGS = {"neox-as-interleaved", "rotate-inverse"}


def _record(name, config, dtype, kind, bug, path, rows) -> dict:
    return {
        "case": name, "engine": "torch", "config": config, "dtype": dtype, "kind": kind,
        "bug": bug, "spec": spec_string(CONFIGS[config]), "recipe": "hf", "file": path,
        "rows": rows,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--only", help="only cases whose name contains this")
    a = ap.parse_args()
    torch.set_num_threads(1)
    print(f"torch_rope: seed {a.seed} (torch {torch.__version__}, numpy {np.__version__})")
    cases = generate(a.out, a.seed, a.only)
    with open(os.path.join(a.out, "torch_manifest.json"), "w") as f:
        json.dump({"seed": a.seed, "cases": cases}, f, indent=1)
    print(f"torch_rope: {len(cases)} dumps in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
