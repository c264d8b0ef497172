"""Shared fixtures of pev's Python tests: the `pev` tool of the same build (PEV_BINARY, set by
ctest), the source tree (PEV_SOURCE_DIR) and the pev.testing plugin."""

import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

pytest_plugins = ["pev.testing"]

SOURCE_DIR = os.environ.get(
    "PEV_SOURCE_DIR", os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


def pev_binary():
    path = os.environ.get("PEV_BINARY") or shutil.which("pev")
    if not path:
        pytest.skip("the pev tool: set PEV_BINARY (ctest does)")
    return path


def run_cli(*args, check=True):
    """Runs the `pev` tool of this build; returns the CompletedProcess (text)."""
    r = subprocess.run([pev_binary(), *map(str, args)], capture_output=True, text=True)
    if check and r.returncode not in (0, 1):
        raise AssertionError(f"pev {' '.join(map(str, args))} exited {r.returncode}: {r.stderr}")
    return r


@pytest.fixture
def cli():
    return run_cli


@pytest.fixture(scope="session")
def source_dir():
    return SOURCE_DIR


def hf_table(positions, head_dim=64, theta=10000.0, dtype=np.float32):
    """cos, sin [P, head_dim/2] as transformers computes them in fp32 (numpy: the power and
    the trig in float64, rounded once: within the hf recipe's bounds)."""
    exponent = np.arange(0, head_dim, 2, dtype=np.int64).astype(np.float32) / np.float32(head_dim)
    power = np.power(np.float64(np.float32(theta)), exponent.astype(np.float64)).astype(np.float32)
    inv = (np.float32(1.0) / power).astype(np.float32)
    angle = np.asarray(positions, dtype=np.int64).astype(np.float32)[:, None] * inv[None, :]
    c = np.cos(angle.astype(np.float64)).astype(dtype)
    s = np.sin(angle.astype(np.float64)).astype(dtype)
    return c, s


def seed_from_env(default=20261123):
    seed = int(os.environ.get("PEV_SEED", default))
    print(f"seed {seed} (PEV_SEED)", file=sys.stderr)
    return seed
