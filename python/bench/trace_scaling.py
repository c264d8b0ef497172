#!/usr/bin/python3
"""A model trace of L layers against one layer (docs/certify.md §8.2): q and k [1, 4, 32768, 64]
per layer (rope head_dim 64, θ 10^4, rotated as transformers does in fp32), certified by
`pev certify --spec ... --impl trace.npz` with L = 1 and L = 4, alternately, ROUNDS times each, in
the same run. Prints every wall and CPU time (user + system of the child), the medians, and the
ratio of the 4-layer run to 4 × the 1-layer run (the goal: at most 1.2).

    /usr/bin/python3 python/bench/trace_scaling.py build/verify/pev [ROUNDS]
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

SPEC = "rope:head_dim=64"
B, H, T, D = 1, 4, 32768, 64


def rotate(x, pos):
    inv = 1.0 / (10000.0 ** (torch.arange(0, D, 2, dtype=torch.int64).float() / D))
    f = pos[:, :, None].float() * inv[None, None, :]
    emb = torch.cat((f, f), -1)
    cos, sin = emb.cos()[:, None], emb.sin()[:, None]
    half = torch.cat((-x[..., D // 2:], x[..., :D // 2]), -1)
    return x * cos + half * sin


def write_trace(path, layers):
    torch.manual_seed(20261128)
    pos = torch.arange(T)[None]
    t = {"position_ids": pos.numpy()}
    for i in range(layers):
        for role in ("q", "k"):
            x = torch.randn(B, H, T, D)
            t[f"layers.{i}.{role}_in"] = x.numpy()
            t[f"layers.{i}.{role}_out"] = rotate(x, pos).numpy()
    np.savez(path, **t)


def run(pev, trace, out):
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    r = subprocess.run([pev, "certify", "--spec", SPEC, "--impl", trace, "--out", out],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if r.returncode != 0:
        sys.exit(f"pev certify exited {r.returncode}:\n{r.stdout}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main():
    pev = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    with tempfile.TemporaryDirectory() as tmp:
        one, four = os.path.join(tmp, "one.npz"), os.path.join(tmp, "four.npz")
        write_trace(one, 1)
        write_trace(four, 4)
        times = {1: [], 4: []}
        for r in range(rounds):
            for layers, path in ((1, one), (4, four)):
                wall, cpu = run(pev, path, os.path.join(tmp, f"cert{layers}"))
                times[layers].append((wall, cpu))
                print(f"round {r}: {layers} layer(s): wall {wall:.2f} s, cpu {cpu:.2f} s", flush=True)
        for k, name in ((0, "wall"), (1, "cpu")):
            m1 = statistics.median(t[k] for t in times[1])
            m4 = statistics.median(t[k] for t in times[4])
            print(f"median {name}: 1 layer {m1:.2f} s, 4 layers {m4:.2f} s; "
                  f"4 layers / (4 x 1 layer) = {m4 / (4 * m1):.3f}")


if __name__ == "__main__":
    main()
