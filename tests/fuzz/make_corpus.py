#!/usr/bin/python3
"""Writes the seed corpora of pev's fuzz targets (tests/fuzz/corpus/*). Run once; the output is
committed. Needs python3-numpy (scripts/install-deps.sh). Seeds are small on purpose: valid files of
every dtype and version the readers accept, and malformed ones near each rule they enforce, so the
fuzzer starts next to every branch. The config target also reads tests/spec/configs and
tests/spec/invalid_configs."""
import io
import json
import os
import struct
import sys

import numpy as np

here = os.path.dirname(os.path.abspath(__file__))
out = os.path.join(here, "corpus")


def put(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


# ---- npy ------------------------------------------------------------------------------------
def npy(arr, version=None):
    b = io.BytesIO()
    if version is None:
        np.save(b, arr, allow_pickle=False)
    else:
        np.lib.format.write_array(b, arr, version=version, allow_pickle=False)
    return b.getvalue()


rng = np.random.default_rng(1)
put("npy", "f32_2x3", npy(rng.standard_normal((2, 3)).astype("<f4")))
put("npy", "f64_4", npy(rng.standard_normal(4)))
put("npy", "f16_3x2", npy(rng.standard_normal((3, 2)).astype("<f2")))
put("npy", "u2_bf16_bits", npy(np.array([0x3F80, 0x4000, 0x7FC0, 0x0001], dtype="<u2")))
put("npy", "i32", npy(np.arange(5, dtype="<i4")))
put("npy", "i64", npy(np.arange(-3, 3, dtype="<i8")))
put("npy", "scalar", npy(np.float32(1.5)))
put("npy", "empty_0x4", npy(np.zeros((0, 4), dtype="<f4")))
put("npy", "v2", npy(np.arange(3, dtype="<f4"), version=(2, 0)))
put("npy", "v3", npy(np.arange(3, dtype="<f4"), version=(3, 0)))
put("npy", "fortran", npy(np.asfortranarray(np.arange(6, dtype="<f4").reshape(2, 3))))
put("npy", "big_endian", npy(np.arange(3, dtype=">f4")))
put("npy", "u1", npy(np.arange(3, dtype="u1")))
good = npy(np.arange(8, dtype="<f4"))
put("npy", "truncated_data", good[:-5])
put("npy", "truncated_header", good[:20])
put("npy", "bad_magic", b"\x93NUMPZ" + good[6:])
hdr = b"{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000, 1000000), }"
hdr += b" " * (63 - (10 + len(hdr)) % 64) + b"\n"
put("npy", "huge_shape", b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr)
hdr = b"{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }"
hdr += b" " * (63 - (10 + len(hdr)) % 64) + b"\n"
put("npy", "negative_shape", b"\x93NUMPY\x01\x00" + struct.pack("<H", len(hdr)) + hdr)
put("npy", "header_len_beyond_file", b"\x93NUMPY\x01\x00\xff\xff{'descr'")


# ---- npz (numpy.savez archives: a zip of .npy members) ------------------------------------
def npz(compressed=False, **arrays):
    b = io.BytesIO()
    (np.savez_compressed if compressed else np.savez)(b, **arrays)
    return b.getvalue()


tab = rng.standard_normal((4, 2, 2)).astype("<f4")
put("npz", "stored", npz(cos=tab[..., 0], sin=tab[..., 1], positions=np.arange(4)))
put("npz", "deflated", npz(True, table=tab, positions=np.arange(4, dtype="<i4")))
put("npz", "complex64", npz(freqs_cis=(tab[..., 0] + 1j * tab[..., 1]).astype("<c8")))
put("npz", "bf16_bits", npz(cos=np.array([0x3F80, 0x4000], dtype="<u2")))
put("npz", "empty", npz())
good = npz(True, a=np.arange(8, dtype="<f4"))
put("npz", "truncated", good[:-7])
crc = bytearray(npz(a=np.arange(8, dtype="<f4")))
crc[30 + len("a.npy") + 128 + 8] ^= 0xFF  # in the array data (local header, name, npy header)
put("npz", "corrupt_data", bytes(crc))
b = io.BytesIO()
import zipfile  # noqa: E402
with zipfile.ZipFile(b, "w") as z:
    z.writestr("notes.txt", "not an array")
put("npz", "not_npy_member", b.getvalue())


# ---- safetensors ------------------------------------------------------------------------------
def st(tensors, metadata=None, header_override=None):
    header, blobs, off = {}, [], 0
    if metadata is not None:
        header["__metadata__"] = metadata
    for name, (dtype, shape, raw) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + len(raw)]}
        blobs.append(raw)
        off += len(raw)
    h = header_override if header_override is not None else json.dumps(header).encode()
    return struct.pack("<Q", len(h)) + h + b"".join(blobs)


f32 = np.arange(6, dtype="<f4").tobytes()
put("safetensors", "f32", st({"cos": ("F32", [2, 3], f32)}))
put("safetensors", "cos_sin_meta", st({"cos": ("F32", [2, 3], f32), "sin": ("F32", [2, 3], f32)},
                                      {"spec": "rope:head_dim=6", "layout": "neox"}))
put("safetensors", "f16_bf16", st({"a": ("F16", [2], b"\x00\x3c\x00\x40"),
                                   "b": ("BF16", [2], b"\x80\x3f\x00\x40")}))
put("safetensors", "ints", st({"positions": ("I64", [3], np.arange(3, dtype="<i8").tobytes()),
                               "ids": ("I32", [2], np.arange(2, dtype="<i4").tobytes())}))
put("safetensors", "scalar", st({"m": ("F32", [], b"\x00\x00\x80\x3f")}))
put("safetensors", "empty", st({}))
put("safetensors", "unknown_dtype", st({"x": ("F8_E4M3", [2], b"\x01\x02")}))
good = st({"cos": ("F32", [2, 3], f32)})
put("safetensors", "truncated", good[:-7])
put("safetensors", "header_len_beyond_file", struct.pack("<Q", 1 << 40) + good[8:])
put("safetensors", "offsets_out_of_range",
    st({}, header_override=b'{"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4096]}}') + b"\0" * 8)
put("safetensors", "offsets_overlap",
    st({}, header_override=b'{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                           b'"b":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}') + b"\0" * 4)
put("safetensors", "shape_overflow",
    st({}, header_override=b'{"a":{"dtype":"F32","shape":[4294967296,4294967296,16],'
                           b'"data_offsets":[0,4]}}') + b"\0" * 4)
put("safetensors", "deep_json", struct.pack("<Q", 400) + b"[" * 200 + b"]" * 200)
put("safetensors", "not_utf8", st({}, header_override=b'{"\xff\xfe":{}}'))
# A 4 TiB tensor declared in a 100-byte file: refused before any allocation.
put("safetensors", "terabyte",
    st({}, header_override=b'{"cos":{"dtype":"F32","shape":[1048576,1048576],'
                           b'"data_offsets":[0,4398046511104]}}') + b"\0" * 16)
# cos/sin tables of rope:head_dim=4 (2 pairs) at positions 0..2, exact but for planted values.
exact = np.arange(3)[:, None] * (10000.0 ** (-np.arange(2) / 2.0))[None, :]


def table(cos, sin):
    return st({"cos": ("F32", [3, 2], cos.astype("<f4").tobytes()),
               "sin": ("F32", [3, 2], sin.astype("<f4").tobytes())})


c, s_ = np.cos(exact), np.sin(exact)
for name, value in (("nan", np.nan), ("inf", np.inf)):
    bad = c.copy()
    bad[1, 0] = value
    put("safetensors", "table_" + name, table(bad, s_))
put("safetensors", "table_subnormal", table(np.full((3, 2), 1e-40), np.full((3, 2), 1e-40)))
put("safetensors", "table_exact", table(c, s_))
# Tensor names with terminal escape sequences (clear screen, bell): shown escaped in messages.
put("safetensors", "escape_names", st({"\x1b[2J": ("F32", [1], b"\0" * 4),
                                       "b\x07": ("F32", [1], b"\0" * 4)}))


# ---- safetensors at scale (fuzz_safetensors_many: each input describes a header) -------------
def many(n, defect=0, at=0, suffix=b""):
    v = (n - 1) * 2
    return struct.pack("<HBH", v, defect, at) + suffix


put("safetensors_many", "one", many(1))
put("safetensors_many", "hundred", many(101, suffix=b"_w"))
put("safetensors_many", "ten_thousand", many(10001, suffix=b".weight"))
put("safetensors_many", "max", many(32768))
for d, name in ((1, "duplicate"), (2, "gap"), (3, "overlap"), (4, "wrong_size"), (5, "deep"),
                (6, "metadata")):
    put("safetensors_many", name, many(2001, d, 999))
put("safetensors_many", "escape_suffix", many(11, 0, 0, b"\x1b[31m"))
put("safetensors_many", "not_utf8_suffix", many(11, 0, 0, b"\xff"))


# ---- config.json at scale (fuzz_config_scale: each input describes a config) -----------------
def scale(n, shape, text):
    return struct.pack("<HB", (n - 1) * 2, shape) + text


group = b'{"rope_type":"default","rope_theta":10000.0}'
put("config_scale", "groups_1000", scale(1000, 0, group))
put("config_scale", "groups_max", scale(32768, 0, group))
put("config_scale", "groups_unknown_name", scale(1000, 2, group))
put("config_scale", "groups_no_full", scale(1000, 4, group))
put("config_scale", "groups_yarn", scale(3000, 0, b'{"rope_type":"yarn","factor":4.0,'
                                                  b'"original_max_position_embeddings":1024}'))
put("config_scale", "groups_bad_json", scale(1000, 0, b'{"rope_type":'))
put("config_scale", "longrope_max", scale(32768, 1, b"1.5"))
put("config_scale", "longrope_short_list", scale(5000, 3, b"2"))
put("config_scale", "longrope_nan", scale(100, 1, b"NaN"))

# ---- SPEC strings -----------------------------------------------------------------------------
specs = [
    "sinusoidal:d_model=4",
    "sinusoidal:d_model=513,layout=blocked,freq_shift=0,base=10000",
    "learned:num_positions=8,d_model=4,target_positions=16,align_corners=false,seed=3",
    "alibi:num_heads=12,max_bias=8",
    "t5:num_buckets=32,max_distance=128,bidirectional=false",
    "shaw:max_relative_position=16",
    "rope:head_dim=128,rope_theta=500000",
    "rope:head_dim=64,layout=interleaved,partial_rotary_factor=0.5,freq_scale=0.25",
    "rope:head_dim=128,rope_type=linear,factor=8",
    "rope:head_dim=128,rope_type=ntk,factor=4",
    "rope:head_dim=128,rope_type=dynamic,factor=2,max_position_embeddings=4096",
    "rope:head_dim=128,rope_theta=1000000,rope_type=yarn,factor=4,"
    "original_max_position_embeddings=32768,beta_fast=32,beta_slow=1,truncate=false,"
    "mscale=1,mscale_all_dim=1,attention_factor=1.2",
    "rope:head_dim=128,rope_type=llama3,factor=8,low_freq_factor=1,high_freq_factor=4,"
    "original_max_position_embeddings=8192",
    "rope:head_dim=8,rope_type=longrope,original_max_position_embeddings=4096,"
    "max_position_embeddings=131072,short_factor=[1,1.5,2,2.5],long_factor=[1,2,3,4]",
    "rope:head_dim=256,rope_type=proportional,factor=8,partial_rotary_factor=0.25",
    "rope:head_dim=1000000000",
    "rope:head_dim=128,factor=1e308,rope_type=linear",
    "rope:head_dim=128,rope_theta=nan",
    "rope:head_dim=128,,rope_theta=1e4",
    "rope:head_dim=128,short_factor=[1,[2]]",
]
for i, s in enumerate(specs):
    put("spec", f"spec_{i:02d}", s)
tsv = os.path.join(here, "..", "spec", "invalid_specs.tsv")
with open(tsv) as f:
    n = 0
    for line in f:
        parts = line.rstrip("\n").split("\t")
        if len(parts) >= 2 and parts[0] == "spec":
            put("spec", f"invalid_{n:02d}", parts[1])
            n += 1

# ---- exec protocol (one header line, then payload bytes) -------------------------------------
def line(obj):
    return json.dumps(obj, separators=(",", ":")) + "\n"


spec = "rope:head_dim=8,rope_theta=10000"
pos = struct.pack("<3q", 0, 1, 4096)
req = {"pev": 1, "spec": spec, "dtype": "fp32", "seq_len": -1, "positions": 3}
exec_seeds = {
    # requests (what `pev serve` reads)
    "req_hello": line({"pev": 1, "request": "hello", "payload_bytes": 0}),
    "req_rope_table": line({**req, "request": "rope_table", "payload_bytes": 24}) + "",
    "req_inv_freq": line({**req, "request": "inv_freq", "positions": 0, "payload_bytes": 0}),
    "req_rope_rotate": line({**req, "request": "rope_rotate", "heads": 2, "head_dim": 8,
                             "dtype": "bf16", "payload_bytes": 24 + 3 * 2 * 8 * 2}),
    "req_sinusoidal": line({**req, "request": "sinusoidal_pe", "spec": "sinusoidal:d_model=16",
                            "dtype": "fp16", "payload_bytes": 24}),
    "req_payload_short": line({**req, "request": "rope_table", "payload_bytes": 8}),
    "req_payload_huge": line({**req, "request": "rope_table", "payload_bytes": 2**40}),
    "req_positions_negative": line({**req, "request": "rope_table", "positions": -3,
                                    "payload_bytes": 24}),
    "req_rotate_overflow": line({**req, "request": "rope_rotate", "positions": 2**40,
                                 "heads": 2**40, "head_dim": 2**40, "payload_bytes": 0}),
    "req_version_2": line({"pev": 2, "request": "hello", "payload_bytes": 0}),
    "req_types": line({"pev": "1", "request": 5, "payload_bytes": "0"}),
    # answers (what pev reads from a third-party process)
    "ans_hello": line({"ok": True, "name": "numpy", "outputs": ["rope_table", "inv_freq"]}),
    "ans_rope_table": line({"ok": True, "tensors": [
        {"name": "cos", "dtype": "fp32", "shape": [3, 4]},
        {"name": "sin", "dtype": "fp32", "shape": [3, 4]}]}),
    "ans_inv_freq": line({"ok": True, "tensors": [{"name": "inv_freq", "dtype": "fp32",
                                                   "shape": [4]}]}),
    "ans_unsupported": line({"ok": False, "unsupported": True}),
    "ans_error": line({"ok": False, "error": "out of memory"}),
    "ans_error_object": line({"ok": False, "error": {"code": 3}}),
    "ans_shape_overflow": line({"ok": True, "tensors": [
        {"name": "cos", "dtype": "fp32", "shape": [2**62, 2**62]}]}),
    "ans_shape_negative": line({"ok": True, "tensors": [{"name": "cos", "dtype": "bf16",
                                                         "shape": [-1, 4]}]}),
    "ans_ok_string": line({"ok": "yes"}),
    "ans_outputs_mixed": line({"ok": True, "outputs": ["rope_table", 3]}),
    "ans_deep": "[" * 5000 + "]" * 5000 + "\n",
    "ans_not_utf8": b'{"ok": true, "name": "\xff\xfe"}\n',
    "ans_not_object": line([1, 2, 3]),
    # Terminal escapes in a name and an error (escaped when shown), binary garbage after a greeting.
    "ans_escape_name": line({"ok": True, "name": "\x1b[31mRED\x1b[0m", "outputs": ["rope_table"]}),
    "ans_escape_error": line({"ok": False, "error": "bad\x1b]0;pwned\x07"}),
    "ans_garbage": b"\x93\x00\xff{\x1b[2J\xfe\n",
}
for name, data in exec_seeds.items():
    if name in ("req_rope_table", "req_sinusoidal"):
        data = data.encode() + pos
    put("exec", name, data)

print("corpus written under", out, file=sys.stderr)
