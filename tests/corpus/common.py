"""Shared by the corpus generators: the default seed and the positions every dump holds."""

from __future__ import annotations

import numpy as np

DEFAULT_SEED = 20260214
QK_TOKENS = 256


def corpus_positions(seed: int) -> np.ndarray:
    """Every p < 4096, 32 seeded samples per octave [2^k, 2^(k+1)) up to 2^20, and the edges
    2^k, 2^k ± 1 (k ≤ 20), 65504 (fp16's largest finite) and 65520 (the first that rounds to Inf in
    fp16): docs/numerics.md §2.3."""
    rng = np.random.default_rng(seed)
    pos = set(range(4096))
    for k in range(12, 20):
        pos.update(int(v) for v in rng.integers(2**k, 2 ** (k + 1), size=32))
    for k in range(1, 21):
        pos.update((2**k - 1, 2**k, 2**k + 1))
    pos.update((65504, 65520))
    return np.array(sorted(pos), dtype=np.int64)


def qk_positions(positions: np.ndarray, seed: int) -> np.ndarray:
    """QK_TOKENS of the table's positions, always with its smallest and largest (so that the q/k
    dump has the table's sequence length for dynamic/longrope)."""
    rng = np.random.default_rng(seed + 1)
    inner = rng.choice(positions[1:-1], size=QK_TOKENS - 2, replace=False)
    return np.sort(np.concatenate([positions[:1], inner, positions[-1:]])).astype(np.int64)
