"""Errors as pev.Error (a ValueError) with pev's messages; the GIL released during long work; Ctrl-C
(SIGINT) interrupting it."""

import os
import signal
import threading
import time

import numpy as np
import pytest

import pev
from conftest import hf_table

SPEC = "rope:head_dim=128,rope_theta=500000"


def test_error_is_a_value_error_named_pev_error():
    assert issubclass(pev.Error, ValueError)
    assert pev.Error.__module__ == "pev" and pev.Error.__name__ == "Error"


def test_messages_are_pevs_own_with_keyword_names(cli):
    with pytest.raises(pev.Error) as e:
        pev.reference(SPEC, range(2), dtype="fp8")
    r = cli("reference", "--spec", SPEC, "--positions", "0:2", "--dtype", "fp8", check=False)
    assert r.returncode == 2
    # The tool says --dtype, Python says dtype; the rest is the same message.
    assert str(e.value).startswith("dtype")
    assert str(e.value)[len("dtype"):] in r.stderr


def test_options_that_do_not_apply_are_refused():
    with pytest.raises(pev.Error, match="applies to a callable"):
        pev.certify(SPEC, {"cos": np.zeros((2, 64), np.float32)}, samples=3)
    with pytest.raises(pev.Error, match="impl"):
        pev.certify(SPEC)


def interrupt_main_after_running_alongside(call):
    """Runs call() on the main thread while another thread counts for 0.5 s and then sends SIGINT.
    Returns (raised KeyboardInterrupt, iterations counted while call() ran). The other thread can
    only count while call() runs if pev released the GIL; without the interruption check, call()
    would run to its end (minutes)."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    started, count, done = threading.Event(), [0], threading.Event()

    def other():
        started.wait()
        end = time.monotonic() + 0.5
        while time.monotonic() < end and not done.is_set():
            count[0] += 1
        if not done.is_set():
            os.kill(os.getpid(), signal.SIGINT)

    t = threading.Thread(target=other)
    t.start()
    interrupted = False
    try:
        started.set()
        call()
    except KeyboardInterrupt:
        interrupted = True
    finally:
        done.set()
        t.join()
        signal.signal(signal.SIGINT, previous)
    return interrupted, count[0]


def test_ctrl_c_interrupts_a_certification_with_the_gil_released():
    # An MPFR reference for every value of a 131072 x 64 table: minutes of work.
    cos, sin = hf_table(np.arange(131072), head_dim=128, theta=500000.0)
    interrupted, counted = interrupt_main_after_running_alongside(
        lambda: pev.certify(SPEC, {"cos": cos, "sin": sin}, reference="mpfr"))
    assert interrupted
    assert counted > 1000
    # The module works afterwards.
    assert pev.certify(SPEC, {"cos": cos[:16], "sin": sin[:16]}).certified


def test_ctrl_c_interrupts_a_reference():
    # MPFR values for every entry (dtype exact): a minute of work (fp32 tables come from the fast
    # reference in a fraction of a second).
    interrupted, counted = interrupt_main_after_running_alongside(
        lambda: pev.reference(SPEC, range(1 << 18), dtype="exact"))
    assert interrupted and counted > 1000
    assert pev.reference(SPEC, range(2), dtype="fp32").shape == (2, 64, 2)


def test_a_callable_sees_no_interrupt_state_left_over():
    # After an interrupted call, a nested call from a callable runs normally.
    def rope(positions):
        t = pev.compute("hf", SPEC, positions)
        return t[..., 0], t[..., 1]

    cert = pev.certify(SPEC, rope, properties=False, max_position=8191, samples=2)
    assert cert.ok, str(cert)
