#!/usr/bin/python3
"""An example pev subprocess implementation (docs/exec-protocol.md): RoPE tables in numpy, fp32,
as transformers computes them (inv_freq = 1 / base ** (arange(0, dim, 2) / dim) in fp32, fp32
angle p * inv_freq; cos/sin of that fp32 angle evaluated in float64 and rounded to fp32 — within
transformers' recipe bound, as precise as it gets for that angle). Serves the `default` and
`linear` rope types in fp32: rope_table and inv_freq.

    pev certify --spec rope:head_dim=128,rope_theta=500000 --exec 'python3 examples/exec/rope_numpy.py'

--bug sin-cos-swapped plants a known mistake, to see pev's diagnosis name it.
"""
import json
import sys

import numpy as np

BUG = "--bug" in sys.argv and sys.argv[sys.argv.index("--bug") + 1]
inp, out = sys.stdin.buffer, sys.stdout.buffer


def reply(header, *arrays):
    out.write(json.dumps(header).encode() + b"\n")
    for a in arrays:
        out.write(np.ascontiguousarray(a).astype("<f4").tobytes())
    out.flush()


def parse(spec):
    family, _, items = spec.partition(":")
    if family != "rope" or "[" in items:  # no list-valued keys (LongRoPE) here
        return None
    keys = dict(kv.split("=", 1) for kv in items.split(",") if kv)
    allowed = {"head_dim", "rope_theta", "rope_type", "factor"}
    if set(keys) - allowed or keys.get("rope_type", "default") not in ("default", "linear"):
        return None
    head_dim = int(keys["head_dim"])
    factor = float(keys.get("factor", 1.0)) if keys.get("rope_type") == "linear" else 1.0
    return head_dim, float(keys.get("rope_theta", 10000.0)), factor


def inv_freq(head_dim, theta, factor):
    exponent = np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / np.float32(head_dim)
    # The power in float64, rounded once to fp32: numpy's own float32 power is less accurate than
    # glibc's powf (pev's property rope.inv_freq_exact caught it: rho 1.02 of transformers' bound at
    # rope_theta 1e6, pair 26), and the recipe's bound assumes glibc's 0.82 ulp.
    power = np.power(np.float64(np.float32(theta)), exponent.astype(np.float64)).astype(np.float32)
    f = np.float32(1.0) / power
    return (f / np.float32(factor)).astype(np.float32)


while True:
    line = inp.readline()
    if not line:
        break  # pev closed our stdin: done
    req = json.loads(line)
    payload = inp.read(int(req.get("payload_bytes", 0)))  # always consume the whole request
    n = int(req.get("positions", 0))
    positions = np.frombuffer(payload[:8 * n], dtype="<i8")
    what = req["request"]
    if what == "hello":
        reply({"ok": True, "name": "example-numpy-hf-rope" + (f"-bug-{BUG}" if BUG else ""),
               "outputs": ["rope_table", "inv_freq"]})
        continue
    try:
        spec = parse(req.get("spec", ""))
    except (ValueError, KeyError):
        spec = None
    if spec is None or req.get("dtype") != "fp32" or what not in ("rope_table", "inv_freq"):
        reply({"ok": False, "unsupported": True})
        continue
    f = inv_freq(*spec)
    if what == "inv_freq":
        reply({"ok": True, "tensors": [{"name": "inv_freq", "dtype": "fp32",
                                        "shape": [len(f)]}]}, f)
        continue
    angle = positions.astype(np.float32)[:, None] * f[None, :]  # fp32 product
    c = np.cos(angle.astype(np.float64)).astype(np.float32)
    s = np.sin(angle.astype(np.float64)).astype(np.float32)
    if BUG == "sin-cos-swapped":
        c, s = s, c
    shape = [int(n), len(f)]
    reply({"ok": True, "tensors": [{"name": "cos", "dtype": "fp32", "shape": shape},
                                   {"name": "sin", "dtype": "fp32", "shape": shape}]}, c, s)
