"""A small safetensors writer and reader for the real-engine corpus (numpy only).

Debian has no python3-safetensors, so the corpus writes the format itself: an 8-byte little-endian
header length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {...}} padded
with spaces to a multiple of 8 bytes, then the raw little-endian data of every tensor, in header
order. bf16 tensors are stored as their raw 16-bit encodings (numpy has no bfloat16): pass them as
uint16 arrays with dtype "BF16".
"""

from __future__ import annotations

import json
import os
import struct
import tempfile

import numpy as np

_DTYPES = {
    "F64": np.dtype("<f8"),
    "F32": np.dtype("<f4"),
    "F16": np.dtype("<f2"),
    "BF16": np.dtype("<u2"),  # raw encodings
    "I64": np.dtype("<i8"),
    "I32": np.dtype("<i4"),
    "C64": np.dtype("<c8"),  # complex64: (real, imag) float32 pairs (Meta's freqs_cis)
}


def _default_dtype(a: np.ndarray) -> str:
    for name, dt in _DTYPES.items():
        if name != "BF16" and a.dtype.newbyteorder("<") == dt:
            return name
    raise ValueError(f"no safetensors dtype for numpy dtype {a.dtype}")


def save(path: str, tensors: dict, metadata: dict | None = None) -> None:
    """Writes `tensors` (name -> np.ndarray, or name -> (np.ndarray, "BF16")) atomically."""
    header: dict = {}
    blobs = []
    offset = 0
    for name, value in tensors.items():
        if isinstance(value, tuple):
            arr, dtype = value
        else:
            arr, dtype = value, _default_dtype(value)
        data = np.ascontiguousarray(arr, dtype=_DTYPES[dtype]).tobytes()
        header[name] = {
            "dtype": dtype,
            "shape": [int(s) for s in arr.shape],
            "data_offsets": [offset, offset + len(data)],
        }
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)


def load(path: str) -> tuple[dict, dict]:
    """Returns ({name: np.ndarray (BF16 as uint16 encodings)}, metadata)."""
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        raw = f.read()
    meta = header.pop("__metadata__", {})
    out = {}
    for name, h in header.items():
        a, b = h["data_offsets"]
        out[name] = np.frombuffer(raw[a:b], dtype=_DTYPES[h["dtype"]]).reshape(h["shape"])
    return out, meta
