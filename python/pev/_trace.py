"""pev.torch.Trace: a model trace as numpy arrays (docs/certify.md §8.1, docs/python.md §9).

Defined without PyTorch so that pev.certify recognizes a trace without importing torch; pev.torch
fills it from a live model."""

import json
import os
import struct

import numpy as np

#: numpy dtype → safetensors dtype, for the dtypes pev reads (docs/certify.md §1). uint16 holds
#: bf16 encodings (as pev's npy files do) and is written BF16 — what pev reads from an npz's '<u2'.
_SAFETENSORS = {"float64": "F64", "float32": "F32", "float16": "F16", "uint16": "BF16",
                "int32": "I32", "int64": "I64", "complex64": "C64"}


def _safetensors_dtype(name, a, declared):
    from ._errors import Error

    code = _SAFETENSORS.get(a.dtype.name)
    if a.dtype.name == "bfloat16":  # ml_dtypes' bfloat16
        code = "BF16"
    if code == "BF16" and declared not in (None, "torch.bfloat16", "bfloat16"):
        raise Error(f"tensor {name!r}: uint16 data declared {declared}; pev holds bf16 as uint16 "
                    "encodings and reads no other 16-bit integers")
    if code is None:
        raise Error(f"tensor {name!r} has numpy dtype {a.dtype.name}; a trace holds float64, "
                    "float32, float16, bfloat16 (its uint16 encodings), int32, int64 or complex64")
    return code


def write_safetensors(path, tensors, dtypes=None, metadata=None):
    """Writes `tensors` (name → numpy array) as a safetensors file: an 8-byte little-endian header
    length, the JSON header {name: {dtype, shape, data_offsets}} (``__metadata__`` first, padded
    with spaces to 8 bytes), then each array's raw little-endian bytes in order. No size limit;
    each array is written from its own memory (no copy of a C-contiguous little-endian array)."""
    dtypes = dtypes or {}
    header, arrays, offset = {}, [], 0
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    for name, a in tensors.items():
        a = np.asarray(a)
        code = _safetensors_dtype(name, a, dtypes.get(name))
        if a.dtype.byteorder == ">":
            a = a.astype(a.dtype.newbyteorder("<"))
        a = np.ascontiguousarray(a)
        header[name] = {"dtype": code, "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        arrays.append(a)
        offset += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode("utf-8")
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for a in arrays:
            if a.nbytes:
                f.write(memoryview(a.reshape(-1)).cast("B"))


class Trace:
    """A model trace: tensors named as docs/certify.md §8.1 names them.

    tensors   dict name → numpy array: ``position_ids``, ``attention_mask`` (when given),
              ``layers.{i}.q_in`` / ``q_out`` / ``k_in`` / ``k_out`` (the layer's q/k before and
              after its rotation, in the layout the model holds them), ``layers.{i}.none`` (the
              layer applied no rotation), ``layers.{i}.cos`` / ``sin`` (with tables=True),
              ``embed.table`` / ``embed.positions`` (a learned positional embedding). bfloat16
              tensors are held as their uint16 encodings, as pev's npy files hold them.
    dtypes    dict name → the dtype the model's tensor had ("torch.bfloat16", …).
    notes     what the tracer saw beyond the tensors (calls it could not record, layers where no
              rotary call was seen, what it watched); pev.certify puts them on the certificate.
    layer_notes {layer: [text]}: the notes that concern one layer, shown on its row.
    findings  {layer: (name, text)}: a layer the tracer found wrong whatever its data say (a
              rotation applied twice, one whose result the attention discarded); pev.certify fails
              that layer, naming it.
    save(p)   writes the tensors for ``pev certify --config config.json --impl p``: a safetensors
              file (no size limit), or an npz archive for a path ending ``.npz`` (docs/python.md
              §9.1).
    """

    def __init__(self, tensors=None, *, dtypes=None, notes=None, num_layers=None, findings=None,
                 layer_notes=None):
        self.tensors = dict(tensors or {})
        self.dtypes = dict(dtypes or {})
        self.notes = list(notes or [])
        self.findings = dict(findings or {})
        self.layer_notes = dict(layer_notes or {})
        #: The number of decoder layers the tracer found (None when built by hand).
        self.num_layers = num_layers

    def __getitem__(self, name):
        return self.tensors[name]

    def __contains__(self, name):
        return name in self.tensors

    def keys(self):
        return self.tensors.keys()

    @property
    def position_ids(self):
        return self.tensors.get("position_ids")

    @property
    def attention_mask(self):
        return self.tensors.get("attention_mask")

    @property
    def layers(self):
        """The indices of the layers the trace holds, ascending."""
        out = set()
        for name in self.tensors:
            if name.startswith("layers."):
                out.add(int(name.split(".")[1]))
        return sorted(out)

    def rotated(self, i):
        """Whether layer i applied a rotation (its rotary function or module was called)."""
        return f"layers.{i}.none" not in self.tensors and any(
            n.startswith(f"layers.{i}.") for n in self.tensors)

    def save(self, path):
        """Writes the trace at `path` and returns the path written (docs/python.md §9.1):
        an npz archive (``numpy.savez``) when `path` ends with ``.npz``; else a safetensors file,
        ``.safetensors`` appended when the name lacks it — no size limit (pev reads an npz of at
        most 1 GiB of arrays; a 4096-token trace of an 8B model is ~5 GB). bfloat16 tensors (held
        as uint16 encodings) are written as BF16; dtypes, notes and findings go into the
        safetensors metadata, which ``Trace.load`` reads back."""
        path = os.fspath(path)
        if path.endswith(".npz"):
            with open(path, "wb") as f:
                np.savez(f, **self.tensors)
            return path
        if not path.endswith(".safetensors"):
            path += ".safetensors"
        meta = {"pev.dtypes": json.dumps(self.dtypes, sort_keys=True),
                "pev.notes": json.dumps(self.notes),
                "pev.findings": json.dumps({str(k): list(v) for k, v in self.findings.items()}),
                "pev.layer_notes": json.dumps({str(k): list(v)
                                               for k, v in self.layer_notes.items()})}
        if self.num_layers is not None:
            meta["pev.num_layers"] = str(self.num_layers)
        write_safetensors(path, self.tensors, self.dtypes, meta)
        return path

    @classmethod
    def load(cls, path):
        """A Trace read back from a file Trace.save wrote (npz or safetensors; bf16 as uint16
        encodings)."""
        path = os.fspath(path)
        if path.endswith(".npz"):
            with np.load(path) as z:
                return cls({k: z[k] for k in z.files})
        from . import _pev
        from ._errors import keyword_names

        with keyword_names():
            tensors, meta = _pev.read_dump([path])
        num = meta.get("pev.num_layers")
        return cls(tensors, dtypes=json.loads(meta.get("pev.dtypes", "{}")),
                   notes=json.loads(meta.get("pev.notes", "[]")),
                   findings={int(k): tuple(v)
                             for k, v in json.loads(meta.get("pev.findings", "{}")).items()},
                   layer_notes={int(k): list(v)
                                for k, v in json.loads(meta.get("pev.layer_notes", "{}")).items()},
                   num_layers=None if num is None else int(num))

    def __repr__(self):
        return (f"<pev.torch.Trace: {len(self.layers)} layers, "
                f"{sum(1 for i in self.layers if self.rotated(i))} rotated, "
                f"{len(self.tensors)} tensors>")
