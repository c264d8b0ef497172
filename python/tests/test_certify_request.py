"""pev.certify as one certify request with `pev certify` (docs/certify.md §9): the live defaults
taken from it (a callable is asked what `pev certify --exec` asks), and what the CLI has for a
model trace: one SPEC for every layer (--spec), layers= (--layers), layer_type= refused."""

import numpy as np
import pytest

import pev
from pev import _pev
from pev.torch import Trace
from conftest import hf_table

SPEC = "rope:head_dim=64,rope_theta=10000"


def test_the_live_defaults_are_pev_certifys():
    d = _pev.certify_defaults()
    assert d["max_position"] == 2**20 - 1
    assert (d["samples"], d["seed"], d["accuracy"], d["property_cases"]) == (64, 20261122, "hf",
                                                                              100)


def test_a_callable_is_asked_the_positions_pev_certify_asks():
    # max_position defaults to 2^20 - 1, as `pev certify --exec`: no position 2^20 (a new octave).
    asked = []

    def rope(positions):
        asked.append(int(np.max(positions)))
        return hf_table(positions)

    cert = pev.certify(SPEC, rope, properties=False, samples=1)
    assert max(asked) == 2**20 - 1
    assert cert.positions["max"] == 2**20 - 1


def trace(layers, positions=64):
    pos = np.arange(positions)
    cos, sin = hf_table(pos)
    tensors = {"position_ids": pos[None, :].astype(np.int64)}
    for i in layers:
        tensors[f"layers.{i}.cos"] = cos
        tensors[f"layers.{i}.sin"] = sin
    return Trace(tensors)


def test_a_trace_against_one_spec_and_its_layers(tmp_path):
    t = trace([0, 1, 2])
    cert = pev.certify(SPEC, t)
    assert cert.ok, str(cert)
    assert len(cert.to_dict()["model"]["layers"]) == 3
    # Saved, as `pev certify --spec S --impl trace.safetensors --layers 0:3`.
    path = t.save(tmp_path / "trace.safetensors")
    for layers in ("0:3", [0, 1, 2], range(3)):
        assert pev.certify(SPEC, str(path), layers=layers).ok
    with pytest.raises(pev.Error, match="layer"):
        pev.certify(SPEC, str(path), layers="0:4")  # layer 3 is not in the trace
    with pytest.raises(pev.Error, match="layer_type"):
        pev.certify(SPEC, t, layer_type="sliding_attention")


def test_layers_only_for_a_trace():
    cos, sin = hf_table(np.arange(64))
    with pytest.raises(pev.Error, match="^layers: only for a model trace"):
        pev.certify(SPEC, {"cos": cos, "sin": sin}, layers="0:2")
