"""Dumps in the tensor layouts engines write (docs/certify.md §4), from the same pipelines as
torch_rope.py and ggml_rope.py, certified genuine and with a planted bug:

- transformers' own q/k `[B, H, T, D]` (query_states after `transpose(1, 2)`) with `position_ids`
  [1, T], and the issue's `[1, 4, 512, 128]` at positions 0…511 with no positions tensor;
- `[B, T, H, D]` with `position_ids`, and vLLM's flattened heads `[T, H·D]` with `positions`;
- DeepSeek-V3's `apply_rotary_pos_emb_interleave` output as it leaves the function: the rotated
  pairs in half-split order (torch_rope.py puts them back in interleaved order; here they are not);
- transformers' rotary on a batch of two sequences with their own positions: cos/sin [2, P, D] with
  position_ids [2, P];
- Meta's `precompute_freqs_cis` (complex64, `torch.polar`) in safetensors (C64) and in an .npz
  archive; transformers' table as a directory of .npy files;
- ggml_rope's NEOX output on [1…1 | 0…0] (= vLLM's cos_sin_cache row) and its NORMAL output on
  (1, 0) pairs, each a lone [P, n_dims] tensor.

Each case carries `layout`: role -> (pev layout, a phrase its reading must state); run_corpus.py
asserts the certificate's `layouts` say so.
"""

from __future__ import annotations

import os

import numpy as np
import torch

import ggml_rope
import st_io
import torch_rope
from common import corpus_positions, qk_positions


def _meta_freqs_cis(dim: int, theta: float, positions: np.ndarray, off_by_one: bool):
    """llama/model.py precompute_freqs_cis, at the given positions: fp32 throughout."""
    freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
    t = torch.from_numpy(positions).float()
    if off_by_one:
        t = t + 1
    freqs = torch.outer(t, freqs).float()
    return torch.polar(torch.ones_like(freqs), freqs)  # complex64


def generate(out: str, seed: int, only: str | None = None) -> list[dict]:
    os.makedirs(out, exist_ok=True)
    positions = corpus_positions(seed)
    qk_pos = qk_positions(positions, seed)
    cases: list[dict] = []

    def want(name):
        return only is None or only in name

    def record(name, config, dtype, kind, bug, path, rows, layout, engine="torch", spec=None,
               recipe="hf"):
        cases.append({
            "case": name, "engine": engine, "config": config, "dtype": dtype, "kind": kind,
            "bug": bug, "spec": spec or torch_rope.spec_string(torch_rope.CONFIGS[config]),
            "recipe": recipe, "file": path, "rows": rows, "layout": layout,
        })

    def rotated(config, dtype, bug, pos, heads, tag):
        """q [T, H, D] and its rotation by transformers' op sequence (torch_rope)."""
        cfg = torch_rope.CONFIGS[config]
        g = torch.Generator().manual_seed(seed + sum(map(ord, config + dtype + tag)))
        x = torch.randn((len(pos), heads, cfg["head_dim"]), generator=g)
        x = x.to(torch_rope.DTYPES[dtype])
        rot_bug = bug if bug in torch_rope.ROTATION_BUGS else None
        cos, sin = torch_rope.rope_table(cfg, pos, dtype, None if rot_bug else bug)
        return x, torch_rope.apply_rotary(cfg, x, cos, sin, rot_bug)

    def np_(t, dtype):
        return torch_rope._np(t, dtype)

    # ---- transformers' [B, H, T, D] ------------------------------------------------------------
    for config, dtype, bug in [("llama3.1", "bf16", None), ("llama3.1", "bf16", "rotate-inverse"),
                               ("qwen2.5", "fp32", "position-off-by-one")]:
        name = f"layout-{config}-{dtype}-qk-bhtd" + (f"-{bug}" if bug else "")
        if not want(name):
            continue
        q, q_out = rotated(config, dtype, bug, qk_pos, torch_rope.Q_HEADS, "q")
        k, k_out = rotated(config, dtype, bug, qk_pos, torch_rope.K_HEADS, "k")
        bhtd = lambda t: t.transpose(0, 1).unsqueeze(0)  # noqa: E731  [T, H, D] -> [1, H, T, D]
        path = os.path.join(out, name + ".safetensors")
        st_io.save(path, {"q_in": np_(bhtd(q), dtype), "q_out": np_(bhtd(q_out), dtype),
                          "k_in": np_(bhtd(k), dtype), "k_out": np_(bhtd(k_out), dtype),
                          "position_ids": qk_pos[None, :]})
        record(name, config, dtype, "qk", bug, path, len(qk_pos),
               {"q/k": ("bhtd", f"T={len(qk_pos)}")})

    # The case: [1, 4, 512, 128] at positions 0…511, no positions tensor.
    for bug in [None, "position-off-by-one"]:
        name = "layout-llama2-fp32-qk-bhtd-nopos" + (f"-{bug}" if bug else "")
        if want(name):
            pos = np.arange(512, dtype=np.int64)
            q, q_out = rotated("llama2", "fp32", bug, pos, 4, "q")
            path = os.path.join(out, name + ".safetensors")
            st_io.save(path, {"q_in": q.transpose(0, 1).unsqueeze(0).contiguous().numpy(),
                              "q_out": q_out.transpose(0, 1).unsqueeze(0).contiguous().numpy()})
            record(name, "llama2", "fp32", "qk", bug, path, 512,
                   {"q/k": ("bhtd", "H=4, T=512, D=128")})

    # [B, T, H, D] with position_ids; vLLM's [T, H·D] with positions.
    for config, dtype, layout, bug in [("qwen2.5", "bf16", "bthd", None),
                                       ("llama2", "fp16", "t(hd)", None),
                                       ("llama2", "fp16", "t(hd)", "rotate-inverse")]:
        tag = "t_hd" if layout == "t(hd)" else layout
        name = f"layout-{config}-{dtype}-qk-{tag}" + (f"-{bug}" if bug else "")
        if not want(name):
            continue
        q, q_out = rotated(config, dtype, bug, qk_pos, torch_rope.Q_HEADS, "q")
        k, k_out = rotated(config, dtype, bug, qk_pos, torch_rope.K_HEADS, "k")
        if layout == "bthd":
            shape = lambda t: t.unsqueeze(0)  # noqa: E731
            extra = {"position_ids": qk_pos[None, :]}
        else:
            shape = lambda t: t.reshape(t.shape[0], -1)  # noqa: E731
            extra = {"positions": qk_pos}
        path = os.path.join(out, name + ".safetensors")
        st_io.save(path, {"q_in": np_(shape(q), dtype), "q_out": np_(shape(q_out), dtype),
                          "k_in": np_(shape(k), dtype), "k_out": np_(shape(k_out), dtype),
                          **extra})
        record(name, config, dtype, "qk", bug, path, len(qk_pos), {"q/k": (layout, "T=")})

    # DeepSeek-V3's interleave output, left in half-split order.
    for dtype, bug in [("fp32", None), ("bf16", None), ("bf16", "rotate-inverse")]:
        name = f"layout-deepseek-v3-{dtype}-qk-halfsplit" + (f"-{bug}" if bug else "")
        if not want(name):
            continue
        q, q_out = rotated("deepseek-v3", dtype, bug, qk_pos, torch_rope.Q_HEADS, "q")
        k, k_out = rotated("deepseek-v3", dtype, bug, qk_pos, torch_rope.K_HEADS, "k")
        # apply_rotary undoes DeepSeek's permutation of the outputs: redo it (a permutation only).
        hs = torch_rope._deinterleave
        path = os.path.join(out, name + ".safetensors")
        st_io.save(path, {"q_in": np_(q, dtype), "q_out": np_(hs(q_out), dtype),
                          "k_in": np_(k, dtype), "k_out": np_(hs(k_out), dtype),
                          "positions": qk_pos})
        record(name, "deepseek-v3", dtype, "qk", bug, path, len(qk_pos),
               {"q/k": ("thd", "half-split order")})

    # transformers' rotary on a batch of two sequences, each with its own positions.
    half = len(positions) // 2
    ids = np.stack([positions[:half], positions[half:2 * half]])
    for config, dtype, bug in [("llama3.1", "fp32", None), ("llama3.1", "fp32", "rope-theta-wrong")]:
        name = f"layout-{config}-{dtype}-table-batch" + (f"-{bug}" if bug else "")
        if not want(name):
            continue
        cfg = torch_rope.CONFIGS[config]
        cs = [torch_rope.rope_table(cfg, ids[b], dtype, bug) for b in range(2)]
        cos, sin = torch.stack([c for c, _ in cs]), torch.stack([s for _, s in cs])
        path = os.path.join(out, name + ".safetensors")
        st_io.save(path, {"cos": np_(cos, dtype), "sin": np_(sin, dtype), "position_ids": ids})
        record(name, config, dtype, "table", bug, path, ids.size,
               {"table": ("halves", "each with its own positions")})

    # Meta's complex freqs_cis: safetensors C64 and an npz archive.
    meta = dict(torch_rope.CONFIGS["llama2"], layout="interleaved")
    meta_spec = torch_rope.spec_string(meta)
    for fmt, bug in [("st", None), ("npz", None), ("st", "position-off-by-one")]:
        name = f"layout-meta-llama2-fp32-freqs_cis-{fmt}" + (f"-{bug}" if bug else "")
        if not want(name):
            continue
        fc = _meta_freqs_cis(128, 10000.0, positions, bug is not None).numpy()
        if fmt == "st":
            path = os.path.join(out, name + ".safetensors")
            st_io.save(path, {"freqs_cis": (fc, "C64"), "positions": positions})
        else:
            path = os.path.join(out, name + ".npz")
            np.savez_compressed(path, freqs_cis=fc, positions=positions)
        record(name, "llama2", "fp32", "table", bug, path, len(positions),
               {"table": ("pairs", "complex")}, engine="meta", spec=meta_spec)

    # transformers' table as a directory of .npy files.
    name = "layout-llama2-bf16-table-npydir"
    if want(name):
        cos, sin = torch_rope.rope_table(torch_rope.CONFIGS["llama2"], positions, "bf16")
        d = os.path.join(out, name)
        os.makedirs(d, exist_ok=True)
        for key, t in {"cos": cos, "sin": sin}.items():
            np.save(os.path.join(d, key + ".npy"), np_(t, "bf16")[0])
        np.save(os.path.join(d, "positions.npy"), positions)
        record(name, "llama2", "bf16", "table", None, d, len(positions),
               {"table": ("halves", "transformers")})

    # ggml_rope on unit vectors: NEOX on [1…1 | 0…0] writes [cos | sin] (vLLM's cos_sin_cache
    # row); NORMAL on (1, 0) pairs writes (cos, sin) pairs. A lone [P, n_dims] tensor each.
    for cname, bug in [("linear", None), ("plain", None), ("linear", "ggml-freq-scale-inverted")]:
        c = ggml_rope.CASES[cname]
        mode = "neox" if c["mode"] == ggml_rope.NEOX else "normal"
        name = f"layout-ggml-{cname}-f32-{mode}-unit" + (f"-{bug}" if bug else "")
        if not want(name):
            continue
        n = c["n_dims"]
        x = np.zeros((len(positions), 1, n), dtype=np.float32)
        if c["mode"] == ggml_rope.NEOX:
            x[..., : n // 2] = 1
        else:
            x[..., 0::2] = 1
        cos, sin = ggml_rope.rope_cache(c, positions, bug)
        y = ggml_rope.rope_apply(c, x, cos, sin)[:, 0, :]
        path = os.path.join(out, name + ".safetensors")
        st_io.save(path, {"rope_out": y, "positions": positions})
        want_layout = ("vllm", "ggml's NEOX order") if mode == "neox" else (
            "pairs", "ggml's NORMAL order")
        record(name, cname, "fp32", "table", bug, path, len(positions), {"table": want_layout},
               engine="ggml", spec=c["spec"], recipe="ggml")
    return cases
