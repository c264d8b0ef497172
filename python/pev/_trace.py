"""pev.torch.Trace: a model trace as numpy arrays (docs/certify.md §8.1, docs/python.md §9).

Defined without PyTorch so that pev.certify recognizes a trace without importing torch; pev.torch
fills it from a live model."""

import os

import numpy as np


class Trace:
    """A model trace: tensors named as docs/certify.md §8.1 names them.

    tensors   dict name → numpy array: ``position_ids``, ``attention_mask`` (when given),
              ``layers.{i}.q_in`` / ``q_out`` / ``k_in`` / ``k_out`` (the layer's q/k before and
              after its rotation, in the layout the model holds them), ``layers.{i}.none`` (the
              layer applied no rotation), ``layers.{i}.cos`` / ``sin`` (with tables=True),
              ``embed.table`` / ``embed.positions`` (a learned positional embedding). bfloat16
              tensors are held as their uint16 encodings, as pev's npy files hold them.
    dtypes    dict name → the dtype the model's tensor had ("torch.bfloat16", …).
    notes     what the tracer saw and did not record (a rotary function called twice in a layer).
    save(p)   writes the tensors to an npz archive (``numpy.savez``) that
              ``pev certify --config config.json --impl p`` reads.
    """

    def __init__(self, tensors=None, *, dtypes=None, notes=None, num_layers=None):
        self.tensors = dict(tensors or {})
        self.dtypes = dict(dtypes or {})
        self.notes = list(notes or [])
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
        """Writes the trace as an npz archive at `path` (".npz" is appended by numpy when the
        name lacks it; the path written is returned)."""
        path = os.fspath(path)
        if not path.endswith(".npz"):
            path += ".npz"
        with open(path, "wb") as f:
            np.savez(f, **self.tensors)
        return path

    @classmethod
    def load(cls, path):
        """A Trace read back from an npz archive."""
        with np.load(os.fspath(path)) as z:
            return cls({k: z[k] for k in z.files})

    def __repr__(self):
        return (f"<pev.torch.Trace: {len(self.layers)} layers, "
                f"{sum(1 for i in self.layers if self.rotated(i))} rotated, "
                f"{len(self.tensors)} tensors>")
