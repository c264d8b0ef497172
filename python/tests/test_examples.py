"""The examples of examples/python run and certify (docs/python.md §7)."""

import os
import subprocess
import sys

import pytest


def run_example(source_dir, name, *args):
    env = dict(os.environ)
    return subprocess.run([sys.executable, os.path.join(source_dir, "examples", "python", name),
                           *args], capture_output=True, text=True, env=env, timeout=600)


def test_torch_rotary_module_is_certified(source_dir):
    pytest.importorskip("torch")
    r = run_example(source_dir, "torch_rotary.py", "--positions", "8192", "--max-position", "16384",
                    "--property-cases", "5")
    assert r.returncode == 0, r.stdout + r.stderr
    first = r.stdout.split("\n\n")[0]
    assert "data      rope table (halves layout, detected from " in first
    assert "8192 positions" in first
    assert "claim     recipe hf: holds" in first and "result    CERTIFIED" in first
    assert "python:main.<locals>.rotary" in r.stdout  # the module certified live


def test_numpy_callable_is_certified(source_dir):
    r = run_example(source_dir, "numpy_callable.py", "--max-position", "16384",
                    "--property-cases", "5")
    assert r.returncode == 0, r.stdout + r.stderr
    props = [line for line in r.stdout.splitlines() if line.startswith("properties ")]
    assert props and " 0 failed" in props[0], r.stdout
    not_applicable = props[0].split(": ", 1)[1].split(", ") if ": " in props[0] else []
    assert "rope.table_exact" not in not_applicable  # it ran
    assert "result    CERTIFIED" in r.stdout


def test_numpy_callable_bug_is_diagnosed(source_dir):
    r = run_example(source_dir, "numpy_callable.py", "--bug", "sin-cos-swapped",
                    "--max-position", "8192", "--property-cases", "1")
    assert r.returncode == 1, r.stdout + r.stderr
    assert "sin-cos-swapped" in r.stdout and "NOT CERTIFIED" in r.stdout
