"""pev.certify on a callable: a live implementation certified in-process, like --exec."""

import numpy as np
import pytest

import pev
from conftest import hf_table

SPEC = "rope:head_dim=64,rope_theta=10000"
FAST = dict(max_position=1 << 14, samples=4, property_cases=20)


def hf_rope(positions):
    return hf_table(positions)


def test_a_correct_callable_is_certified_with_its_properties():
    calls = []

    def rope(positions):
        calls.append(len(positions))
        return hf_table(positions)

    cert = pev.certify(SPEC, rope, recipe="hf", **FAST)
    assert cert.ok, str(cert)
    assert cert.to_dict()["inputs"] or True
    ids = [c["id"] for c in cert.to_dict()["checks"]]
    assert "cos" in ids and "sin" in ids
    props = [c for c in cert.to_dict()["checks"] if c.get("property")]
    assert props, "the property suites ran"
    assert all(c["pass"] for c in props), [c for c in props if not c["pass"]]
    assert sum(calls) >= 4096  # every position below 4096, then samples per octave
    assert cert.layout.startswith("separate, detected")
    assert "python callable" in cert.to_dict()["what"] or "rope" in cert.to_dict()["what"]


def test_the_callable_matches_the_same_tables_certified_as_tensors():
    cert = pev.certify(SPEC, hf_rope, properties=False, max_position=4095, samples=1)
    pos = np.arange(4096)
    cos, sin = hf_table(pos)
    dump = pev.certify(SPEC, {"cos": cos, "sin": sin})
    live = {c["id"]: c for c in cert.to_dict()["checks"]}
    for c in dump.to_dict()["checks"]:
        assert live[c["id"]]["recipes"] == c["recipes"]


def test_a_buggy_callable_is_diagnosed():
    def swapped(positions):
        c, s = hf_table(positions)
        return {"cos": s, "sin": c}

    cert = pev.certify(SPEC, swapped, recipe="hf", **FAST)
    assert not cert.ok and cert.exit_code == 1
    assert cert.diagnosis.named == "sin-cos-swapped"
    with pytest.raises(pev.testing.CertificationError, match="sin-cos-swapped"):
        pev.testing.assert_certified(cert)


def test_properties_find_and_shrink_a_wrong_spec_dependence():
    # Right for rope_theta 10000 only: a spec parameter, it ignores the spec it is given.
    def ignores_theta(positions, spec):
        if spec.family != "rope" or spec.rope_type != "default" or spec.layout != "neox":
            raise pev.Unsupported
        return hf_table(positions, head_dim=spec.head_dim)

    cert = pev.certify(SPEC, ignores_theta, **FAST)
    failed = [c for c in cert.to_dict()["checks"] if c.get("property") and not c["pass"]]
    assert failed, str(cert)
    assert not cert.ok


def test_an_exception_in_the_callable_is_a_failed_check():
    def broken(positions):
        if len(positions) > 1 and positions[-1] > 5000:
            raise RuntimeError("kernel exploded")
        return hf_table(positions)

    cert = pev.certify(SPEC, broken, properties=False, **FAST)
    assert not cert.ok
    assert isinstance(cert.exception, RuntimeError)
    assert "kernel exploded" in cert.json


def test_unsupported_dtype_and_keywords():
    seen = {}

    def rope(positions, dtype, seq_len):
        seen["dtype"], seen["seq_len"] = dtype, seq_len
        if dtype != "fp16":
            return None
        return hf_table(positions, dtype=np.float16)

    cert = pev.certify(SPEC, rope, dtype="fp16", properties=False, max_position=4095, samples=1)
    assert seen["dtype"] == "fp16" and seen["seq_len"] is None
    assert cert.checks[0].dtype == "fp16"


def test_torch_module_callable():
    torch = pytest.importorskip("torch")

    class Rotary(torch.nn.Module):
        def __init__(self, dim, base=10000.0):
            super().__init__()
            inv = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.int64).float() / dim))
            self.register_buffer("inv_freq", inv, persistent=False)

        def forward(self, positions):
            freqs = positions.float()[:, None] * self.inv_freq[None, :]
            emb = torch.cat((freqs, freqs), dim=-1)
            return emb.cos(), emb.sin()

    rotary = Rotary(64)
    cert = pev.certify(SPEC, lambda p: rotary(torch.from_numpy(p)), recipe="hf", **FAST)
    assert cert.ok, str(cert)
    assert cert.layout.startswith("halves")


def test_keyboard_interrupt_raised_by_the_callable_is_a_failed_check():
    # Raised by the callable, not a Ctrl-C (test_hostile.py sends a real SIGINT).
    n = [0]

    def interrupted(positions):
        n[0] += 1
        if n[0] == 3:
            raise KeyboardInterrupt
        return hf_table(positions)

    cert = pev.certify(SPEC, interrupted, **FAST)
    assert not cert.ok and isinstance(cert.exception, KeyboardInterrupt)
    # The module is usable afterwards.
    assert pev.certify(SPEC, hf_rope, properties=False, max_position=4095, samples=1).ok


def test_a_device_tensor_answer_is_a_pev_error():
    class Cuda:
        shape = (1, 32)
        device = "cuda:0"

        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, stream=None):
            raise AssertionError("not read")

    with pytest.raises(pev.Error, match=r"cos\.cpu\(\)"):
        pev.certify(SPEC, lambda p: {"cos": Cuda(), "sin": Cuda()}, **FAST)


def test_callable_options_are_checked():
    with pytest.raises(pev.Error, match="^positions"):
        pev.certify(SPEC, hf_rope, positions=range(3))
    with pytest.raises(pev.Error, match="spec"):
        pev.certify(None, hf_rope)
