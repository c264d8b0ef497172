"""Live callables at tensor speed (docs/python.md §4.2): a spec the callable refused is not probed
again, a callable of one position at a time still works, and a wrong one keeps its error."""

import json

import numpy as np
import pytest

import pev
from conftest import hf_table

SPEC = "rope:head_dim=64,rope_theta=10000"
FAST = dict(max_position=1 << 14, samples=4, property_cases=10)
TIMING = ("time", "seconds", "elapsed", "duration")


def untimed(cert, name=None):
    """certificate.json without its timing fields (and with the callable's `name` as "f")."""

    def strip(o):
        if isinstance(o, dict):
            return {k: strip(v) for k, v in o.items() if not any(w in k for w in TIMING)}
        if isinstance(o, list):
            return [strip(v) for v in o]
        return o

    text = cert.json if name is None else cert.json.replace(name, "f")
    return strip(json.loads(text))


def default_neox(spec):
    if spec.family != "rope" or spec.rope_type != "default" or spec.layout != "neox":
        raise pev.Unsupported(spec.text)
    if spec.rotary_dim != spec.head_dim:
        raise pev.Unsupported(spec.text)
    return float(spec.params.get("rope_theta", 10000))


def test_a_refused_spec_is_probed_once():
    # The property suites probe each generated spec with position 0 (asked as two equal positions:
    # a one-row table would lose its row dimension); one the callable refused is not probed again.
    probes = {}
    refused = set()

    def rope(positions, spec):
        if [int(p) for p in positions] == [0, 0]:
            probes[spec.text] = probes.get(spec.text, 0) + 1
        try:
            theta = default_neox(spec)
        except pev.Unsupported:
            refused.add(spec.text)
            raise
        return hf_table(positions, head_dim=spec.head_dim, theta=theta)

    cert = pev.certify(SPEC, rope, recipe="hf", **FAST)
    assert cert.ok, str(cert)
    assert refused, "the property suites generated specs it refuses"
    again = {k: probes[k] for k in refused if probes.get(k, 0) > 1}
    assert not again, f"{len(again)} refused specs probed again, e.g. {next(iter(again.items()))}"


def one_position_rope(position, spec):
    """transformers' table for one position (an int): cos, sin [head_dim/2]."""
    assert isinstance(position, int)
    theta = default_neox(spec)
    c, s = hf_table(np.array([position]), head_dim=spec.head_dim, theta=theta)
    return {"cos": c[0], "sin": s[0]}


def vector_rope(positions, spec):
    theta = default_neox(spec)
    return hf_table(positions, head_dim=spec.head_dim, theta=theta)


def test_a_one_position_callable_gets_the_certificate_of_its_vector_form():
    one = pev.certify(SPEC, one_position_rope, recipe="hf", **FAST)
    vec = pev.certify(SPEC, vector_rope, recipe="hf", **FAST)
    assert one.ok, str(one)
    a, b = untimed(one, "one_position_rope"), untimed(vec, "vector_rope")
    # The certificates differ only in the callable they name (its name and source hash).
    for c in (a, b):
        c.pop("inputs", None)
        c.pop("what", None)
        c.pop("implementation", None)
    assert a["checks"] == b["checks"]
    assert a.get("diagnosis") == b.get("diagnosis")


def test_a_one_position_torch_callable_is_stacked_by_torch():
    torch = pytest.importorskip("torch")

    def rope(position, spec):
        theta = default_neox(spec)
        inv = 1.0 / (theta ** (torch.arange(0, spec.head_dim, 2, dtype=torch.int64).float()
                               / spec.head_dim))
        f = torch.tensor([float(position)]) * inv  # fp32, as transformers
        return f.cos()[None], f.sin()[None]  # a batch of one: [1, pairs]

    cert = pev.certify(SPEC, rope, recipe="hf", **FAST)
    assert cert.ok, str(cert)


def test_a_callable_wrong_for_both_keeps_its_first_error():
    def wrong(positions):
        raise ValueError("no table here")

    cert = pev.certify(SPEC, wrong, properties=False, max_position=4095, samples=1)
    assert not cert.ok
    assert isinstance(cert.exception, ValueError)
    assert "no table here" in cert.json


def test_spec_params_are_parsed_once_and_each_caller_gets_its_own():
    s = pev.Spec("rope:head_dim=64,rope_type=longrope,factor=4,original_max_position_embeddings="
                 "4096,short_factor=[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,"
                 "1],long_factor=[2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2,2]")
    p = s.params
    p["short_factor"].append(99)
    p["factor"] = 0
    assert s.params["factor"] == 4 and len(s.params["short_factor"]) == 32
