"""pev.testing: assert_certified's message and the pev_certify fixture (plugin)."""

import os

import numpy as np
import pytest

import pev
import pev.testing
from conftest import hf_table

SPEC = "rope:head_dim=64"


def test_assert_certified_returns_the_certificate():
    cos, sin = hf_table(np.arange(256))
    cert = pev.testing.assert_certified(SPEC, {"cos": cos, "sin": sin}, recipe="hf")
    assert cert.ok
    assert pev.testing.assert_certified(cert) is cert


def test_the_failure_message_has_grade_worst_case_and_diagnosis():
    cos, sin = hf_table(np.arange(256))
    with pytest.raises(AssertionError) as e:
        pev.testing.assert_certified(SPEC, {"cos": sin, "sin": cos}, recipe="hf")
    assert isinstance(e.value, pev.testing.CertificationError)
    message = str(e.value)
    lines = message.splitlines()
    assert lines[0] == ("pev did not certify rope:head_dim=64: grade not certified, claimed "
                        "recipe hf does not hold")
    assert lines[1].startswith("worst case: ") and "position 0" in lines[1]
    assert "diagnosis: sin-cos-swapped (cos and sin tables swapped)" in message
    assert "first mismatch: cos position 0 index 0: got 0x0p+0, want 0x1p+0" in message
    assert "result    NOT CERTIFIED" in message  # the tool's summary follows
    assert e.value.certificate.grade == "not certified"


def test_a_required_grade():
    t = pev.reference(SPEC, range(64), dtype="fp32")
    cos, sin = t[..., 0].copy(), t[..., 1].copy()
    pev.testing.assert_certified(SPEC, {"cos": cos, "sin": sin}, grade="correctly-rounded")
    c, s = hf_table(np.arange(4096))
    with pytest.raises(AssertionError, match="below the required correctly-rounded"):
        pev.testing.assert_certified(SPEC, {"cos": c, "sin": s}, grade="correctly-rounded")
    with pytest.raises(ValueError, match="grade"):
        pev.testing.assert_certified(SPEC, {"cos": c, "sin": s}, grade="excellent")


def test_a_callable_exception_is_in_the_message():
    def broken(positions):
        raise RuntimeError("no kernel for you")

    with pytest.raises(AssertionError, match="RuntimeError: no kernel for you"):
        pev.testing.assert_certified(SPEC, broken, properties=False)


def test_the_fixture_writes_each_certificate(pev_certify, tmp_path):
    cos, sin = hf_table(np.arange(32))
    cert = pev_certify(SPEC, {"cos": cos, "sin": sin})
    assert cert.ok
    assert os.path.isfile(tmp_path / "pev-certificate-1" / "certificate.json")
    pev_certify(SPEC, {"cos": cos, "sin": sin})
    assert os.path.isfile(tmp_path / "pev-certificate-2" / "summary.md")
