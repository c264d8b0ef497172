#!/usr/bin/python3
"""The numpy RoPE of examples/exec/rope_numpy.py as a Python callable, certified in-process by
pev.certify (docs/python.md §7) instead of as a subprocess speaking pev's protocol: the same
math (transformers' fp32 inv_freq with the power in float64 rounded once, fp32 angle p * inv_freq,
cos/sin of that angle in float64 rounded to fp32), default and linear rope types in fp32.

    PYTHONPATH=build/python /usr/bin/python3 examples/python/numpy_callable.py [--bug sin-cos-swapped]

--bug sin-cos-swapped plants a known mistake, to see pev's diagnosis name it. Exit status: 0
certified, 1 not.
"""
import argparse
import sys

import numpy as np

import pev


def inv_freq(head_dim, theta, factor):
    exponent = np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / np.float32(head_dim)
    power = np.power(np.float64(np.float32(theta)), exponent.astype(np.float64)).astype(np.float32)
    return ((np.float32(1.0) / power) / np.float32(factor)).astype(np.float32)


def make_rope(bug=None):
    def rope(positions, spec, dtype):
        """cos, sin [P, head_dim/2] of `spec` at `positions` (int64 numpy array)."""
        p = spec.params
        if (spec.family != "rope" or spec.rope_type not in ("default", "linear")
                or spec.layout != "neox" or spec.rotary_dim != spec.head_dim or dtype != "fp32"
                or set(p) - {"head_dim", "rope_theta", "rope_type", "factor"}):
            return None  # not implemented: pev marks what needs it not applicable
        factor = float(p.get("factor", 1.0)) if spec.rope_type == "linear" else 1.0
        f = inv_freq(spec.head_dim, float(p.get("rope_theta", 10000.0)), factor)
        angle = positions.astype(np.float32)[:, None] * f[None, :]  # fp32 product
        c = np.cos(angle.astype(np.float64)).astype(np.float32)
        s = np.sin(angle.astype(np.float64)).astype(np.float32)
        if bug == "sin-cos-swapped":
            c, s = s, c
        return {"cos": c, "sin": s, "inv_freq": f}

    return rope


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spec", default="rope:head_dim=128,rope_theta=500000")
    ap.add_argument("--bug", choices=["sin-cos-swapped"])
    ap.add_argument("--max-position", type=int, default=1 << 20)
    ap.add_argument("--property-cases", type=int, default=100)
    args = ap.parse_args()
    cert = pev.certify(args.spec, make_rope(args.bug), recipe="hf", max_position=args.max_position,
                       property_cases=args.property_cases)
    print(cert)
    return cert.exit_code


if __name__ == "__main__":
    sys.exit(main())
