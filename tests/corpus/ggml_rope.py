#!/usr/bin/python3
"""llama.cpp's CPU rope (ggml) emulated in numpy fp32, for the real-engine corpus of `pev certify`.

The semantics (docs/encodings.md §8), written from llama.cpp's sources and checked against them:
`ggml/src/ggml-cpu/ops.cpp` — `ggml_compute_forward_rope_flt` (theta_scale = powf(freq_base,
−2.0f/n_dims); the cache is filled per position with theta_base = (float) p; NORMAL mode rotates
(x[2i], x[2i+1]), NEOX (x[i], x[i + n_dims/2]); the channels from n_dims on are copied), 
`ggml_rope_cache_init` (θ starts at float(p); per pair: rope_yarn(θ/ff) with ff the optional
per-pair factor, sin times sin_sign (−1 for ROPE_BACK), then θ ← θ·theta_scale), `rope_yarn` and
`rope_yarn_ramp` (θ_interp = freq_scale·θ_extrap; when ext_factor ≠ 0: y = (i0/2 − low) /
MAX(0.001f, high − low), ramp_mix = (1 − MIN(1, MAX(0, y)))·ext_factor, θ = θ_interp·(1 −
ramp_mix) + θ_extrap·ramp_mix, mscale *= 1.0f + 0.1f·logf(1.0f/freq_scale); cache = cosf(θ)·mscale,
sinf(θ)·mscale), `rotate_pairs` (x0·cos − x1·sin, x0·sin + x1·cos in fp32, one conversion to the
tensor type); `ggml/src/ggml.c` — `ggml_rope_yarn_corr_dim(s)` (n_dims·logf(n_ctx_orig/(β·2·
(float)M_PI))/(2·logf(base)), floorf/ceilf, clamped to [0, n_dims − 1]); `convert_hf_to_gguf.py`
(Llama-3's `rope_freqs`, computed in PyTorch there and here); `ggml_mrope_cache_init` for
`ggml_rope_multi` (MROPE, IMROPE: one θ recurrence per position stream t, h, w, e, each pair's θ
from the stream of its sector = pair mod Σ sections; docs/encodings.md §4.6).

Every step is a numpy float32 operation on float32 operands (no float64 intermediates), with these
library stand-ins: powf is numpy's float32 power (the C library's powf); cosf, sinf and logf are
the float64 function rounded once to float32 (glibc's float functions are correctly rounded in all
but rare cases; numpy's own float32 SIMD cos/sin are a different, less accurate library). No FMA is
emulated: llama.cpp built with -march=native may contract x0·cos − x1·sin (docs/encodings.md §8.2).

The table dump is ggml's per-position cache restricted to the rotated pairs: `table`
[P, n_dims/2, 2] of (cos, sin) — pev's `pairs` layout (docs/encodings.md §4.4).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402
from common import DEFAULT_SEED, corpus_positions, qk_positions  # noqa: E402

f32 = np.float32
NORMAL, NEOX = 0, 2
Q_HEADS, K_HEADS = 2, 1


def _logf(x) -> np.float32:
    return f32(math.log(float(f32(x))))


def _powf(b, e) -> np.float32:
    return np.power(f32(b), f32(e))


# ggml_rope_ext's arguments per case, and the pev SPEC that states what the case claims to compute
# (docs/encodings.md §8.5 maps each transformers rope_type to these parameters).
CASES: dict[str, dict] = {
    # Llama-2 as llama.cpp runs it: NORMAL mode (HF's q/k rows permuted back to interleaved pairs).
    "plain": {
        "spec": "rope:head_dim=128,layout=interleaved", "head_dim": 128, "n_dims": 128,
        "mode": NORMAL, "freq_base": 10000.0,
    },
    # Linear ×4 (transformers' linear) is freq_scale = 1/4 in ggml.
    "linear": {
        "spec": "rope:head_dim=128,rope_type=linear,factor=4", "head_dim": 128, "n_dims": 128,
        "mode": NEOX, "freq_base": 10000.0, "freq_scale": 0.25,
    },
    # Llama-3.1: NORMAL mode with the per-pair `rope_freqs` factors of convert_hf_to_gguf.py.
    "llama3": {
        "spec": "rope:head_dim=128,rope_theta=500000,layout=interleaved,rope_type=llama3,factor=8,"
                "low_freq_factor=1,high_freq_factor=4,original_max_position_embeddings=8192",
        "head_dim": 128, "n_dims": 128, "mode": NORMAL, "freq_base": 500000.0,
        "llama3": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                   "original_max_position_embeddings": 8192},
    },
    # Partial rotary: n_dims 64 of head_dim 128 (the other 64 channels copied).
    "partial": {
        "spec": "rope:head_dim=128,rotary_dim=64", "head_dim": 128, "n_dims": 64, "mode": NEOX,
        "freq_base": 10000.0,
    },
    # Qwen2.5-style YaRN ×4: freq_scale 1/4, ext_factor 1, n_ctx_orig 32768, β 32/1; attn_factor 1
    # (the kernel's own 1 + 0.1·ln(1/freq_scale) is transformers' attention factor here).
    "yarn": {
        "spec": "rope:head_dim=128,rope_theta=1000000,rope_type=yarn,factor=4,"
                "original_max_position_embeddings=32768",
        "head_dim": 128, "n_dims": 128, "mode": NEOX, "freq_base": 1000000.0, "freq_scale": 0.25,
        "ext_factor": 1.0, "attn_factor": 1.0, "n_ctx_orig": 32768, "beta_fast": 32.0,
        "beta_slow": 1.0,
    },
    # Qwen2-VL / Qwen2.5-VL as llama.cpp runs them: ggml_rope_multi, mode MROPE (NEOX pairs),
    # sections [16, 24, 24, 0] (t, h, w, e), four position streams (docs/encodings.md §4.6).
    "mrope": {
        "spec": "rope:head_dim=128,rope_theta=1000000,mrope_section=[16,24,24,0]",
        "head_dim": 128, "n_dims": 128, "mode": NEOX, "freq_base": 1000000.0,
        "sections": [16, 24, 24, 0],
    },
    # Qwen3-VL: mode IMROPE, sections [24, 20, 20, 0]; pairs 61 and 62 take the fourth stream.
    "imrope": {
        "spec": "rope:head_dim=128,rope_theta=5000000,mrope_section=[24,20,20,0],"
                "mrope_interleaved=true",
        "head_dim": 128, "n_dims": 128, "mode": NEOX, "freq_base": 5000000.0,
        "sections": [24, 20, 20, 0], "imrope": True,
    },
}

# Planted bugs: (case, kind, bug) with the pev mutant id that should name each.
#   ggml-freq-scale-inverted      freq_scale = factor instead of 1/factor
#   ggml-yarn-ramp-off            ext_factor 0 on a YaRN model (no ramp, no magnitude factor)
#   ggml-attn-factor-not-divided  attn_factor = transformers' m, not m/(1 + 0.1·ln f): m² in total
#   sin-negated                   the backward cache (ROPE_BACK: sin_sign −1) dumped as the table
#   rotate-inverse                q/k rotated by ROPE_BACK
BUGS = [
    ("linear", "table-f32", "ggml-freq-scale-inverted"),
    ("linear", "qk-f32", "ggml-freq-scale-inverted"),
    ("yarn", "table-f32", "ggml-yarn-ramp-off"),
    ("yarn", "qk-f16", "ggml-yarn-ramp-off"),
    ("yarn", "table-f32", "ggml-attn-factor-not-divided"),
    ("yarn", "qk-f16", "ggml-attn-factor-not-divided"),
    ("plain", "table-f32", "sin-negated"),
    ("plain", "qk-f32", "rotate-inverse"),
    ("mrope", "table-f32", "mrope-hw-swapped"),
    ("imrope", "qk-f16", "mrope-interleave-flipped"),
]
#   mrope-hw-swapped              ggml MROPE with the h and w position streams exchanged
#   mrope-interleave-flipped      IMROPE's sections applied as MROPE (consecutive)


def mrope_sector_stream(c: dict, i: int, imrope: bool) -> int:
    """ggml_mrope_cache_init's choice of θ for pair i: sector = i mod Σ sections; MROPE takes t, h,
    w, e on consecutive sector ranges, IMROPE h on sectors ≡ 1 (mod 3) below 3·s1, w on ≡ 2 below
    3·s2, t on ≡ 0 below 3·s0, e otherwise."""
    s = c["sections"]
    sector = i % sum(s)
    if imrope:
        if sector % 3 == 1 and sector < 3 * s[1]:
            return 1
        if sector % 3 == 2 and sector < 3 * s[2]:
            return 2
        if sector % 3 == 0 and sector < 3 * s[0]:
            return 0
        return 3
    if s[0] <= sector < s[0] + s[1]:
        return 1
    if s[0] + s[1] <= sector < s[0] + s[1] + s[2]:
        return 2
    if sector >= s[0] + s[1] + s[2]:
        return 3
    return 0


def mrope_positions4(positions: np.ndarray, seed: int) -> np.ndarray:
    """[4, P] streams t, h, w, e: every other token a text token (all four equal), the others
    patches at h, w, e = t + seeded offsets below 32."""
    rng = np.random.default_rng(seed + 23)
    patch = (np.arange(positions.size) % 2) == 1
    rows = [positions]
    for _ in range(3):
        rows.append(np.where(patch, positions + rng.integers(0, 32, size=positions.shape),
                             positions))
    return np.stack(rows).astype(np.int64)


def llama3_rope_freqs(head_dim: int, base: float, p: dict) -> np.ndarray:
    """convert_hf_to_gguf.py's Llama-3 `rope_freqs` (per-pair divisors of θ), in PyTorch as there:
    freqs = 1/(base ** (arange(0, dim, 2, fp32)/dim)); per pair λ = 2π/freq (fp32), factor 1 when
    λ < Lo/high, f when λ > Lo/low, else 1/((1 − s)/f + s) with s = (Lo/λ − low)/(high − low)."""
    import torch  # the converter is a PyTorch program

    factor, low, high = p["factor"], p["low_freq_factor"], p["high_freq_factor"]
    old_context_len = p["original_max_position_embeddings"]
    freqs = 1.0 / (base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim))
    low_freq_wavelen = old_context_len / low
    high_freq_wavelen = old_context_len / high
    rope_factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            rope_factors.append(1)
        elif wavelen > low_freq_wavelen:
            rope_factors.append(factor)
        else:
            smooth = (old_context_len / wavelen - low) / (high - low)
            rope_factors.append(1 / ((1 - smooth) / factor + smooth))
    return torch.tensor(rope_factors, dtype=torch.float32).numpy()


def corr_dims(n_dims: int, n_ctx_orig: int, base: float, beta_fast: float, beta_slow: float):
    """ggml_rope_yarn_corr_dims: always floor/ceil, clamped to [0, n_dims − 1] (float)."""

    def corr_dim(n_rot):
        inner = f32(n_ctx_orig) / (f32(n_rot) * f32(2) * f32(math.pi))
        return f32(n_dims) * _logf(inner) / (f32(2) * _logf(base))

    start = f32(math.floor(corr_dim(beta_fast)))
    end = f32(math.ceil(corr_dim(beta_slow)))
    return max(f32(0), start), min(f32(n_dims - 1), end)


def rope_cache(c: dict, positions: np.ndarray, bug: str | None = None):
    """ggml_rope_cache_init for every position at once: (cos, sin) [P, n_dims/2] float32."""
    n_dims = c["n_dims"]
    freq_scale = f32(c.get("freq_scale", 1.0))
    ext_factor = f32(c.get("ext_factor", 0.0))
    attn_factor = f32(c.get("attn_factor", 1.0))
    if bug == "ggml-freq-scale-inverted":
        freq_scale = f32(1.0) / freq_scale
    if bug == "ggml-yarn-ramp-off":
        ext_factor = f32(0.0)
    if bug == "ggml-attn-factor-not-divided":
        # llama.cpp before dividing by the kernel's own factor: transformers' m itself
        attn_factor = f32(0.1 * math.log(1.0 / c["freq_scale"]) + 1.0)
    sin_sign = f32(-1.0) if bug == "sin-negated" else f32(1.0)
    low, high = corr_dims(n_dims, c.get("n_ctx_orig", 0), c["freq_base"], c.get("beta_fast", 0.0),
                          c.get("beta_slow", 0.0)) if ext_factor != 0 else (f32(0), f32(0))
    ff = (llama3_rope_freqs(c["head_dim"], c["freq_base"], c["llama3"]) if "llama3" in c
          else None)

    theta_scale = _powf(c["freq_base"], f32(-2.0) / f32(n_dims))
    # ggml_rope_multi (MROPE/IMROPE): positions [4, P], one θ recurrence per stream, each pair's
    # θ taken from its sector's stream (ggml_mrope_cache_init).
    multi = "sections" in c
    streams = positions.astype(np.float32) if multi else positions.astype(np.float32)[None, :]
    if multi and bug == "mrope-hw-swapped":
        streams = streams[[0, 2, 1, 3]]
    imrope = c.get("imrope", False) != (bug == "mrope-interleave-flipped")
    pairs = n_dims // 2
    cos = np.empty((streams.shape[1], pairs), dtype=np.float32)
    sin = np.empty_like(cos)
    for i in range(pairs):  # i0 = 2i
        theta = streams[mrope_sector_stream(c, i, imrope)] if multi else streams[0]
        theta_extrap = theta / ff[i] if ff is not None else theta
        theta_interp = freq_scale * theta_extrap
        th = theta_interp
        mscale = attn_factor
        if ext_factor != 0:
            y = (f32(i) - low) / max(f32(0.001), high - low)
            ramp_mix = (f32(1) - min(f32(1), max(f32(0), y))) * ext_factor
            th = theta_interp * (f32(1) - ramp_mix) + theta_extrap * ramp_mix
            mscale = mscale * (f32(1) + f32(0.1) * _logf(f32(1) / freq_scale))
        # cosf/sinf: the float64 functions rounded once
        cos[:, i] = np.cos(th.astype(np.float64)).astype(np.float32) * mscale
        sin[:, i] = np.sin(th.astype(np.float64)).astype(np.float32) * mscale * sin_sign
        streams = streams * theta_scale
    return cos, sin


def rope_apply(c: dict, x: np.ndarray, cos: np.ndarray, sin: np.ndarray,
               backward: bool = False) -> np.ndarray:
    """rotate_pairs on x [T, H, head_dim] (float32 or float16): fp32 arithmetic, one conversion to
    x's type; channels from n_dims on copied."""
    n_dims = c["n_dims"]
    xf = x.astype(np.float32)
    out = xf.copy()
    cs, sn = cos[:, None, :], sin[:, None, :]
    if backward:
        sn = -sn
    if c["mode"] == NORMAL:
        i0, i1 = np.arange(0, n_dims, 2), np.arange(1, n_dims, 2)
    else:
        i0, i1 = np.arange(n_dims // 2), np.arange(n_dims // 2) + n_dims // 2
    x0, x1 = xf[..., i0], xf[..., i1]
    out[..., i0] = x0 * cs - x1 * sn
    out[..., i1] = x0 * sn + x1 * cs
    y = out.astype(x.dtype)
    y[..., n_dims:] = x[..., n_dims:]  # copied bit for bit
    return y


def generate(out: str, seed: int, only: str | None = None) -> list[dict]:
    os.makedirs(out, exist_ok=True)
    positions = corpus_positions(seed)
    qk_pos = qk_positions(positions, seed)
    mpos = mrope_positions4(positions, seed)
    mqk_pos = mpos[:, np.searchsorted(positions, qk_pos)]
    cases = []

    def emit(name, cname, kind, dtype, bug):
        if only is not None and only not in name:
            return
        c = CASES[cname]
        path = os.path.join(out, name + ".safetensors")
        pos, qpos = (mpos, mqk_pos) if "sections" in c else (positions, qk_pos)
        if kind == "table":
            cos, sin = rope_cache(c, pos, bug)
            st_io.save(path, {"table": np.stack([cos, sin], axis=-1), "positions": pos},
                       {"spec": c["spec"]})
            rows = len(positions)
        else:
            rng = np.random.default_rng(seed + sum(map(ord, name.split("-qk")[0])))
            npdt = np.float32 if dtype == "fp32" else np.float16
            shape = (len(qk_pos), Q_HEADS, c["head_dim"])
            q = rng.standard_normal(shape, dtype=np.float32).astype(npdt)
            shape = (len(qk_pos), K_HEADS, c["head_dim"])
            k = rng.standard_normal(shape, dtype=np.float32).astype(npdt)
            cos, sin = rope_cache(c, qpos, None if bug == "rotate-inverse" else bug)
            back = bug == "rotate-inverse"
            q_out, k_out = rope_apply(c, q, cos, sin, back), rope_apply(c, k, cos, sin, back)
            st_io.save(path, {"q_in": q, "q_out": q_out, "k_in": k, "k_out": k_out,
                              "positions": qpos}, {"spec": c["spec"]})
            rows = len(qk_pos)
        cases.append({"case": name, "engine": "ggml", "config": cname, "dtype": dtype,
                      "kind": kind, "bug": bug, "spec": c["spec"], "recipe": "ggml", "file": path,
                      "rows": rows})

    variants = {"table-f32": ("table", "fp32"), "qk-f32": ("qk", "fp32"), "qk-f16": ("qk", "fp16")}
    for cname in CASES:
        for v, (kind, dtype) in variants.items():
            emit(f"ggml-{cname}-{v}", cname, kind, dtype, None)
    for cname, v, bug in BUGS:
        kind, dtype = variants[v]
        emit(f"ggml-{cname}-{v}-{bug}", cname, kind, dtype, bug)
    return cases


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--seed", type=int, default=DEFAULT_SEED)
    ap.add_argument("--only", help="only cases whose name contains this")
    a = ap.parse_args()
    print(f"ggml_rope: seed {a.seed} (numpy {np.__version__})")
    cases = generate(a.out, a.seed, a.only)
    with open(os.path.join(a.out, "ggml_manifest.json"), "w") as f:
        json.dump({"seed": a.seed, "cases": cases}, f, indent=1)
    print(f"ggml_rope: {len(cases)} dumps in {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
