"""Hostile input to pev's Python front end (docs/python.md §4.1, §4.3): callables that exit, raise
KeyboardInterrupt, hang or are interrupted by a real SIGINT, and tensors pev cannot read."""

import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import warnings

import numpy as np
import pytest

import pev
from conftest import hf_table

SPEC = "rope:head_dim=64,rope_theta=10000"
FAST = dict(max_position=1 << 14, samples=4, property_cases=20)
# No test waits on wall time; this bound only keeps a broken stop from hanging CI.
NEVER = 60.0


def hf(positions):
    return hf_table(positions)


def notes(cert):
    return [c.get("note", "") for c in cert.to_dict()["checks"] if not c["pass"]]


# ---- SystemExit and KeyboardInterrupt raised by the callable ------------------------------------


@pytest.mark.parametrize("status", [0, 3])
@pytest.mark.parametrize("at_call", [1, 3])
def test_sys_exit_in_the_callable_is_a_failed_check_and_ends_it(status, at_call):
    calls = [0]

    def exits(positions):
        calls[0] += 1
        if calls[0] == at_call:
            sys.exit(status)
        return hf_table(positions)

    cert = pev.certify(SPEC, exits, recipe="hf", **dict(FAST, property_cases=5))
    assert not cert.ok and not cert.certified and cert.exit_code == 1
    assert isinstance(cert.exception, SystemExit) and cert.exception.code == status
    live = next(c for c in cert.to_dict()["checks"] if c["id"] == "live")
    assert not live["pass"]
    assert f"raised SystemExit: {status} (at test_hostile.py:" in live["note"]
    assert f"it tried to end the process (exit status {status})" in live["note"]
    failed = notes(cert)
    if at_call == 1:  # the greeting: the certificate of a failed implementation, one check
        assert failed == [live["note"]]
    else:  # the third call is a property's: that property fails too, and "live" says why
        assert live["note"].endswith("(during the property suites)")
        assert all("SystemExit" in n for n in failed), failed
    assert calls[0] == at_call  # ended: not asked again


def test_a_script_whose_callable_calls_sys_exit_goes_on_to_its_verdict(tmp_path):
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(f"""
        import sys
        import pev
        cert = pev.certify({SPEC!r}, lambda positions: sys.exit(0), max_position=4095)
        print("verdict:", cert.grade, cert.ok)
        sys.exit(5)
    """))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                       timeout=NEVER)
    assert r.returncode == 5, r.stderr
    assert r.stdout == "verdict: not certified False\n"


def test_keyboard_interrupt_raised_by_the_callable_is_a_failed_check_naming_it():
    calls = [0]

    def interrupts(positions):
        calls[0] += 1
        if calls[0] == 2:
            raise KeyboardInterrupt("mine")
        return hf_table(positions)

    cert = pev.certify(SPEC, interrupts, **FAST)
    assert not cert.ok and isinstance(cert.exception, KeyboardInterrupt)
    failed = notes(cert)
    assert len(failed) == 1
    assert "raised KeyboardInterrupt: mine (at test_hostile.py:" in failed[0]
    assert "not a Ctrl-C (pev saw no SIGINT)" in failed[0]
    assert calls[0] == 2


def test_keyboard_interrupt_of_the_callable_on_another_thread_is_a_failed_check():
    out = {}

    def run():
        out["cert"] = pev.certify(SPEC, lambda p: (_ for _ in ()).throw(KeyboardInterrupt),
                                  max_position=4095)

    t = threading.Thread(target=run)
    t.start()
    t.join(NEVER)
    assert not t.is_alive()
    assert "KeyboardInterrupt" in notes(out["cert"])[0]


# ---- A real Ctrl-C ------------------------------------------------------------------------------


def sigint_when(started):
    def send():
        if started.wait(NEVER):
            time.sleep(0.1)
            os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=send, daemon=True).start()


@pytest.mark.parametrize("swallows", [False, True])
def test_a_real_sigint_while_the_callable_runs_still_interrupts_pev(swallows):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    before = signal.getsignal(signal.SIGINT)
    started = threading.Event()
    calls = [0]

    def busy(positions):
        calls[0] += 1
        if calls[0] == 2:  # a table request, after the greeting
            started.set()
            end, n = time.monotonic() + NEVER, 0
            try:
                while time.monotonic() < end:
                    n += 1
            except KeyboardInterrupt:
                if not swallows:
                    raise
        return hf_table(positions)

    sigint_when(started)
    t0 = time.monotonic()
    with pytest.raises(KeyboardInterrupt):
        pev.certify(SPEC, busy, **FAST)
    assert time.monotonic() - t0 < NEVER  # stopped, not run out
    assert calls[0] == 2
    assert signal.getsignal(signal.SIGINT) is before  # pev's wrapper is gone
    assert pev.certify(SPEC, hf, properties=False, max_position=4095, samples=1).ok


# ---- timeout= -----------------------------------------------------------------------------------


def spin_forever():
    n = 0
    while True:
        n += 1


@pytest.mark.parametrize("at_call", [1, 2])
def test_a_callable_past_its_timeout_is_stopped_and_a_failed_check(at_call):
    calls = [0]

    def hangs(positions):
        calls[0] += 1
        if calls[0] == at_call:
            spin_forever()
        return hf_table(positions)

    t0 = time.monotonic()
    cert = pev.certify(SPEC, hangs, timeout=0.25, **FAST)
    assert time.monotonic() - t0 < NEVER
    assert not cert.ok
    failed = notes(cert)
    assert len(failed) == 1
    assert "hangs timed out: no answer within 0.25 s (timeout=)" in failed[0]
    assert "pev stopped it" in failed[0]
    assert cert.exception is None  # pev's stop is not the callable's exception
    assert calls[0] == at_call


def test_a_callable_that_catches_the_stop_is_stopped_again():
    caught = []

    def stubborn(positions):
        n = 0
        try:
            while True:
                n += 1
        except BaseException as e:
            caught.append(type(e).__name__)
        while True:
            n += 1

    t0 = time.monotonic()
    cert = pev.certify(SPEC, stubborn, timeout=0.2, **FAST)
    assert time.monotonic() - t0 < NEVER
    assert caught == ["_CallTimedOut"]
    assert "stubborn timed out" in notes(cert)[0]


def test_a_callable_that_returns_after_catching_the_stop_still_timed_out():
    def late(positions):
        n = 0
        try:
            while True:
                n += 1
        except BaseException:
            pass
        return hf_table(positions)

    cert = pev.certify(SPEC, late, timeout=0.2, **FAST)
    assert not cert.ok and "late timed out" in notes(cert)[0]


def test_a_timeout_during_the_property_suites_is_a_failed_check():
    claimed = pev.Spec(SPEC).text

    def hangs_elsewhere(positions, spec):  # right for the claimed spec, hangs for the others
        if spec.text != claimed:
            spin_forever()
        return hf_table(positions)

    cert = pev.certify(SPEC, hangs_elsewhere, timeout=0.2, max_position=4095, samples=1,
                       property_cases=5)
    checks = {c["id"]: c for c in cert.to_dict()["checks"]}
    assert checks["cos"]["pass"] and checks["sin"]["pass"]  # the tables were answered
    assert not checks["live"]["pass"]
    assert "hangs_elsewhere timed out" in checks["live"]["note"]
    assert checks["live"]["note"].endswith("(during the property suites)")
    assert not cert.ok and cert.grade == "not certified"
    assert "timed out" in str(cert)


def test_a_callable_within_its_timeout_certifies_as_without_one():
    few = dict(FAST, property_cases=5)  # every property still asks the callable, under the limit
    with_limit = pev.certify(SPEC, hf, recipe="hf", timeout=NEVER, **few)
    without = pev.certify(SPEC, hf, recipe="hf", **few)
    assert with_limit.ok
    assert [c["grade"] for c in with_limit.to_dict()["checks"]] == \
        [c["grade"] for c in without.to_dict()["checks"]]


@pytest.mark.parametrize("bad", [0, -1, 1e-4, 86401, math.nan, math.inf, -math.inf, "1", True,
                                 [1]])
def test_timeout_must_be_a_positive_finite_number(bad):
    with pytest.raises(pev.Error, match=r"^timeout: "):
        pev.certify(SPEC, hf, timeout=bad, **FAST)


def test_timeout_applies_to_callables_only():
    c, s = hf_table(np.arange(16))
    with pytest.raises(pev.Error, match="^timeout: applies to a callable"):
        pev.certify(SPEC, {"cos": c, "sin": s}, timeout=1)


# ---- Tensors pev cannot read --------------------------------------------------------------------


def torch_cases():
    torch = pytest.importorskip("torch")
    c, _ = hf_table(np.arange(16))
    t = torch.from_numpy(c)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "beta" and "experimental" notices
        return {
            "meta": (torch.empty(16, 32, device="meta"), "is a meta tensor"),
            "bool": (t > 0, "has dtype torch.bool"),
            "sparse_coo": (t.to_sparse(), "has layout torch.sparse_coo"),
            "sparse_csr": (t.to_sparse_csr(), "has layout torch.sparse_csr"),
            "quantized": (torch.quantize_per_tensor(t, 0.1, 0, torch.qint8),
                          r"is quantized \(torch.qint8\)"),
            "nested": (torch.nested.nested_tensor([torch.ones(2), torch.ones(3)]),
                       "is a nested tensor"),
            "mkldnn": (t.to_mkldnn(), "has layout torch._mkldnn"),
            "uint8": (t.to(torch.uint8), "has dtype torch.uint8"),
            "int16": (t.to(torch.int16), "has dtype torch.int16"),
            "complex32": (torch.ones(16, 32, dtype=torch.complex32), "has dtype torch.complex32"),
        }


KINDS = ["meta", "bool", "sparse_coo", "sparse_csr", "quantized", "nested", "mkldnn", "uint8",
         "int16", "complex32"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("role", ["cos", "sin"])
def test_an_unreadable_torch_tensor_is_refused_by_name(kind, role):
    torch = pytest.importorskip("torch")
    bad, why = torch_cases()[kind]
    c, s = hf_table(np.arange(16))
    tensors = {"cos": torch.from_numpy(c), "sin": torch.from_numpy(s)}
    tensors[role] = bad
    with pytest.raises(pev.Error, match=f"^tensor '{role}' {why}"):
        pev.certify(SPEC, tensors)
    # A (cos, sin) pair names its tensors by role too.
    with pytest.raises(pev.Error, match=f"^tensor '{role}' {why}"):
        pev.certify(SPEC, (tensors["cos"], tensors["sin"]))


@pytest.mark.parametrize("kind", ["meta", "sparse_coo", "quantized"])
def test_an_unreadable_torch_tensor_in_a_callables_answer_is_refused_by_name(kind):
    torch = pytest.importorskip("torch")
    bad, why = torch_cases()[kind]

    def answers(positions):
        _, s = hf_table(positions)
        return {"cos": bad, "sin": torch.from_numpy(s)}

    with pytest.raises(pev.Error, match=f"^tensor 'cos' {why}"):
        pev.certify(SPEC, answers, **FAST)


def test_unreadable_torch_positions_are_refused_by_name():
    torch = pytest.importorskip("torch")
    for positions, why in [(torch.empty(4, dtype=torch.int64, device="meta"), "is a meta tensor"),
                           (torch.arange(4).to_sparse(), "has layout torch.sparse_coo")]:
        with pytest.raises(pev.Error, match=f"^tensor 'positions' {why}"):
            pev.reference(SPEC, positions)


def test_tensors_pev_reads_are_still_read():
    torch = pytest.importorskip("torch")
    c, s = hf_table(np.arange(4096))
    cos = torch.from_numpy(np.ascontiguousarray(c.T)).t().requires_grad_()  # strided, needs grad
    cert = pev.certify(SPEC, {"cos": cos, "sin": torch.from_numpy(s)}, recipe="hf")
    assert cert.ok


def test_a_numpy_array_of_a_dtype_pev_does_not_read_is_refused_by_name():
    c, s = hf_table(np.arange(16))
    with pytest.raises(pev.Error, match="^tensor 'sin' has numpy dtype bool"):
        pev.certify(SPEC, {"cos": c, "sin": s > 0})
