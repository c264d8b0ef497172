#!/usr/bin/python3
"""pev.certify against `pev certify` on the same dump (docs/python.md §8): a 131072 x 64 fp32 table
(cos and sin [131072, 64], rope head_dim 128, as transformers computes it), certified alternately
by the tool (a process: read the npy files, certify, write the certificate's files) and in-process
by pev.certify (from the numpy arrays; and from the same npy files), ROUNDS times each, in the same
run. Prints every wall time, the medians and the ratios, and the same for CPU time (user + system:
the tool's from getrusage of children, the module's from time.process_time), which a machine
shared with other work disturbs less.

    PYTHONPATH=build/python /usr/bin/python3 python/bench/certify_vs_cli.py build/verify/pev [ROUNDS]
"""
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

import pev

SPEC = "rope:head_dim=128,rope_theta=500000"
ROWS = 131072


def table():
    exponent = np.arange(0, 128, 2, dtype=np.int64).astype(np.float32) / np.float32(128)
    power = np.power(np.float64(np.float32(500000.0)), exponent.astype(np.float64)).astype(np.float32)
    inv = (np.float32(1.0) / power).astype(np.float32)
    angle = np.arange(ROWS, dtype=np.int64).astype(np.float32)[:, None] * inv[None, :]
    return (np.cos(angle.astype(np.float64)).astype(np.float32),
            np.sin(angle.astype(np.float64)).astype(np.float32))


def main():
    tool = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    cos, sin = table()
    with tempfile.TemporaryDirectory() as d:
        files = [os.path.join(d, "cos.npy"), os.path.join(d, "sin.npy")]
        np.save(files[0], cos)
        np.save(files[1], sin)
        times = {"cli": [], "py_arrays": [], "py_files": [], "py_arrays_write": []}
        cpu = {k: [] for k in times}

        def children():
            r = resource.getrusage(resource.RUSAGE_CHILDREN)
            return r.ru_utime + r.ru_stime
        grades = set()
        for r in range(rounds):
            t0, c0 = time.perf_counter(), children()
            out = os.path.join(d, f"cli{r}")
            p = subprocess.run([tool, "certify", "--spec", SPEC, "--impl", files[0], "--impl",
                                files[1], "--out", out], capture_output=True, text=True)
            times["cli"].append(time.perf_counter() - t0)
            cpu["cli"].append(children() - c0)
            assert p.returncode in (0, 1), p.stderr
            grades.add(p.stdout.split("grade     ")[1].split()[0])
            t0, c0 = time.perf_counter(), time.process_time()
            c = pev.certify(SPEC, {"cos": cos, "sin": sin})
            times["py_arrays"].append(time.perf_counter() - t0)
            cpu["py_arrays"].append(time.process_time() - c0)
            grades.add(c.grade)
            t0, c0 = time.perf_counter(), time.process_time()
            c = pev.certify(SPEC, files)
            times["py_files"].append(time.perf_counter() - t0)
            cpu["py_files"].append(time.process_time() - c0)
            t0, c0 = time.perf_counter(), time.process_time()
            c = pev.certify(SPEC, {"cos": cos, "sin": sin})
            c.write(os.path.join(d, f"py{r}"))
            times["py_arrays_write"].append(time.perf_counter() - t0)
            cpu["py_arrays_write"].append(time.process_time() - c0)
    print(f"{SPEC}: cos, sin fp32 [{ROWS}, 64]; grades {sorted(grades)}; {rounds} rounds")
    for label, figures in (("wall", times), ("cpu", cpu)):
        med = {k: statistics.median(v) for k, v in figures.items()}
        for k, v in figures.items():
            print(f"{label:4s} {k:16s} median {med[k]:7.2f} s  ratio to cli "
                  f"{med[k] / med['cli']:.3f}  runs {' '.join(f'{x:.2f}' for x in v)}")


if __name__ == "__main__":
    main()
