"""Tensors as pev reads them (docs/python.md §4.1): numpy arrays, and anything with __dlpack__
(PyTorch CPU tensors, any dtype including bfloat16) or __array__."""

import numpy as np

from ._errors import Error

# DLPack device types (dlpack.h's DLDeviceType), for messages.
_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 9: "vpi",
            10: "rocm", 11: "rocm_host", 13: "cuda_managed", 14: "oneapi", 15: "webgpu"}
_HOST = (1, 3)  # CPU memory, and CUDA's pinned host memory


def _native(a):
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    return a if a.flags.c_contiguous else np.ascontiguousarray(a)


def _device_error(name, obj, kind, index):
    where = getattr(obj, "device", None)
    where = str(where) if where is not None else f"{_DEVICES.get(kind, f'device type {kind}')}:{index}"
    return Error(
        f"tensor '{name}' is on {where}; pev reads host memory: pass {name}.cpu() "
        f"({name}.detach().cpu() for a tensor that requires grad)"
    )


# The dtypes pev reads from DLPack (python/src/common.cpp, dlpack_dtype), by PyTorch's names: named
# here so that the message names the tensor's dtype as PyTorch does (bool does not even export).
_TORCH_DTYPES = ("float64", "float32", "float16", "bfloat16", "int32", "int64", "complex64",
                 "complex128")


def _refuse_unreadable(name, obj, dtypes=True):
    """pev.Error naming the tensor for the PyTorch tensors that hold no values pev can read in
    place (docs/python.md §4.1): meta, sparse and other non-strided layouts, nested, quantized, and
    dtypes pev does not read (bool among them). Checked before any data is touched."""
    layout = str(getattr(obj, "layout", "torch.strided"))
    if getattr(obj, "is_meta", False):
        raise Error(f"tensor '{name}' is a meta tensor: it has a shape but no values; pass a "
                    "tensor computed on the CPU")
    if getattr(obj, "is_nested", False):
        raise Error(f"tensor '{name}' is a nested tensor; pass its tensors one by one")
    if layout != "torch.strided":
        dense = ".to_dense()" if "sparse" in layout or "mkldnn" in layout else ""
        raise Error(f"tensor '{name}' has layout {layout}; pev reads dense (strided) tensors"
                    + (f": pass {name}{dense}" if dense else ""))
    if getattr(obj, "is_quantized", False):
        raise Error(f"tensor '{name}' is quantized ({obj.dtype}); pev reads the values: pass "
                    f"{name}.dequantize()")
    dtype = getattr(obj, "dtype", None)
    if dtypes and dtype is not None and str(dtype).startswith("torch."):
        short = str(dtype)[len("torch."):]
        if short not in _TORCH_DTYPES:
            raise Error(f"tensor '{name}' has dtype {dtype}; pev reads "
                        f"{', '.join(_TORCH_DTYPES)}")


def _dlpack_device(name, obj):
    try:
        kind, index = (int(x) for x in obj.__dlpack_device__())
    except Exception as e:  # e.g. a device DLPack has no code for
        raise Error(f"tensor '{name}': its device cannot be read through DLPack "
                    f"({type(e).__name__}: {e})") from None
    if kind not in _HOST:
        raise _device_error(name, obj, kind, index)


def prepare(name, obj):
    """`obj` for pev's compiled layer: a C-contiguous little-endian numpy array, or a DLPack
    capsule of host memory (copied by pev). pev.Error names the tensor when it is in device memory,
    holds no values pev can read (_refuse_unreadable), cannot be exported, or is of an unknown
    kind."""
    if isinstance(obj, np.ndarray):
        return _native(obj)
    if isinstance(obj, (np.generic, float, int)) and not isinstance(obj, bool):
        return np.asarray(obj)
    if hasattr(obj, "__dlpack__") and hasattr(obj, "__dlpack_device__"):
        _refuse_unreadable(name, obj)
        _dlpack_device(name, obj)
        if getattr(obj, "requires_grad", False):
            obj = obj.detach()
        if callable(getattr(obj, "resolve_conj", None)):
            obj = obj.resolve_conj().resolve_neg()  # lazily conjugated PyTorch views do not export
        try:
            return obj.__dlpack__()
        except Exception as e:  # anything else its DLPack export refuses
            raise Error(f"tensor '{name}' cannot be exported through DLPack "
                        f"({type(e).__name__}: {e})") from None
    if hasattr(obj, "__array__") or isinstance(obj, (list, tuple)):
        return _native(np.asarray(obj))
    raise Error(
        f"tensor '{name}': expected a numpy array or a tensor (__dlpack__ or __array__), got "
        f"{type(obj).__name__}"
    )


def as_numpy(name, obj):
    """`obj` as a numpy array (positions, which are small): device tensors refused by name."""
    if isinstance(obj, np.ndarray):
        return obj
    if hasattr(obj, "__dlpack_device__"):
        _refuse_unreadable(name, obj, dtypes=False)
        _dlpack_device(name, obj)
        if getattr(obj, "requires_grad", False):
            obj = obj.detach()
    try:
        return np.asarray(obj)
    except (TypeError, ValueError, RuntimeError) as e:
        raise Error(f"{name}: expected integers (a list, a numpy array or a tensor): {e}") from None


def shape_of(obj):
    return tuple(int(d) for d in getattr(obj, "shape", np.shape(obj)))


def is_complex(obj):
    return str(getattr(obj, "dtype", "")).replace("torch.", "").startswith("complex")


def named_tensors(out, family):
    """The tensors of an answer or a dump by role name: a dict as it is; for RoPE a pair as
    ("cos", "sin") and a lone tensor by its shape (complex: "freqs_cis"; [P, pairs, 2]: "table";
    [P, rot]: "cos_sin_cache"); a lone tensor of another family by its role ("pe"; ALiBi "bias"
    or "slopes"; "buckets")."""
    if isinstance(out, dict) or hasattr(out, "keys"):
        return {str(k): out[k] for k in out.keys()}
    if isinstance(out, (tuple, list)):
        if family == "rope" and len(out) == 2:
            return {"cos": out[0], "sin": out[1]}
        raise Error(
            f"expected a dict of tensors{' or a (cos, sin) pair' if family == 'rope' else ''}, "
            f"got a {type(out).__name__} of {len(out)}"
        )
    if family == "rope":
        shape = shape_of(out)
        while len(shape) > 1 and shape[0] == 1:
            shape = shape[1:]
        if is_complex(out):
            return {"freqs_cis": out}
        return {"table" if len(shape) == 3 else "cos_sin_cache": out}
    if family == "alibi":
        return {"bias" if len(shape_of(out)) == 3 else "slopes": out}
    if family in ("t5", "shaw"):
        return {"buckets": out}
    return {"pe": out}
