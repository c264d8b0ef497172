"""pev.reference and pev.compute (docs/python.md §3): the values `pev reference` and `pev compute`
write to an npy file, as numpy arrays (computed by the same code: bit for bit the same)."""

import numbers

import numpy as np

from . import _pev
from ._errors import Error, keyword_names
from ._spec import Spec
from ._tensors import as_numpy


def positions_argument(positions, name="positions"):
    """(range string, int64 array) for pev's compiled layer: a range or an "A:B[:STEP]" string is
    passed as text (its size is checked before anything is allocated), anything else as a 1-d
    int64 array."""
    if positions is None:
        return None, None
    if isinstance(positions, str):
        return positions, None
    if isinstance(positions, range):
        if positions.step <= 0:
            raise Error(f"{name}: a range with a positive step, got {positions!r}")
        return f"{positions.start}:{positions.stop}:{positions.step}", None
    if isinstance(positions, (bool, np.bool_)) or isinstance(positions, numbers.Integral):
        raise Error(
            f"{name}: give range(N) for the positions 0 … N−1, or [N] for the single position N "
            f"(got the integer {positions!r})"
        )
    a = as_numpy(name, positions)
    if a.size == 0:
        a = a.astype(np.int64)
    if a.dtype.kind not in "iu":
        raise Error(f"{name}: expected integers, got an array of {a.dtype}")
    if a.dtype.kind == "u" and a.size and a.max() > np.iinfo(np.int64).max:
        raise Error(f"{name}: {a.max()} is outside the 64-bit integer range")
    if a.ndim != 1:
        raise Error(f"{name}: expected a 1-d array, got shape {list(a.shape)}")
    return None, np.ascontiguousarray(a, dtype=np.int64)


def reference(spec, positions=None, *, what=None, dtype="exact", recipe="exact", seq_len=None,
              precision=None):
    """The arbitrary-precision reference of `spec` at `positions` — the array `pev reference`
    writes with ``--format npy``.

    spec       a pev.Spec or anything pev.Spec accepts (SPEC string, config.json path, dict).
    positions  a range, an "A:B[:STEP]" string, or integers (list, numpy array, CPU tensor);
               relative distances key − query for what="buckets" (may be negative). Not needed
               for inv_freq, attention_factor and slopes.
    what       "table" (RoPE: [P, rot/2, 2] of m·cos, m·sin), "inv_freq" ([rot/2]),
               "attention_factor" ([]), "pe" ([P, d_model]), "bias" (ALiBi [H, P, P]), "slopes"
               ([H]), "buckets" (T5/Shaw [P], int64); default: the family's main output.
    dtype      "exact" (float64 of the exact value), "fp64", "fp32", "fp16" or "bf16": one correct
               rounding of the exact value. bf16 arrays hold the encodings as uint16 (as pev's npy
               files do): ``a.view(ml_dtypes.bfloat16)``, or
               ``torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)``.
    recipe     "exact", "hf" (transformers' fp32 pipeline) or "ggml": round only where it rounds.
    seq_len    sequence length of dynamic and longrope (default: max position + 1).
    precision  MPFR precision in bits for this call (default 161).

    The array owns pev's buffer (no copy). Raises pev.Error for bad input.
    """
    s = Spec(spec)
    rng, arr = positions_argument(positions)
    with keyword_names():
        return _pev.reference(s._handle, rng, arr, what or "", dtype, recipe, seq_len,
                              int(precision or 0))


def compute(strategy, spec, positions=None, *, what=None, dtype="fp32", seq_len=None):
    """A built-in kernel's output — the array `pev compute --strategy STRATEGY` writes with
    ``--format npy``, in the shapes of pev.reference.

    strategy  "hf" (transformers' fp32 recipe), "ggml" (llama.cpp's fp32 recurrence, RoPE only),
              "table-fp16", "table-bf16" (the cache stored in the 16-bit type) or "accurate".
    dtype     "fp32", "fp16" or "bf16" (bf16 as uint16 encodings).
    Other arguments as for pev.reference.
    """
    s = Spec(spec)
    rng, arr = positions_argument(positions)
    with keyword_names():
        return _pev.compute(strategy, s._handle, rng, arr, what or "", dtype, seq_len)
