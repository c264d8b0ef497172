"""A real Ctrl-C with timeout= while the callable is blocked in C (docs/python.md §4.3, issue 34):
the watchdog cannot stop a C call, so past the limit its stop waits in the thread; the Ctrl-C that
the user then presses must reach the caller as KeyboardInterrupt, not be taken for the timeout."""

import os
import signal
import threading
import time

import pytest

import pev
from conftest import hf_table

SPEC = "rope:head_dim=64,rope_theta=10000"
FAST = dict(max_position=1 << 14, samples=4, property_cases=20)
NEVER = 60.0  # only keeps a broken stop from hanging CI; no test asserts on wall time
LIMIT = 0.2


def blocked_in_c(how):
    """Blocks in a C call that releases the GIL and returns only at a signal (or after NEVER)."""
    if how == "sleep":
        time.sleep(NEVER)
    elif how == "event":
        threading.Event().wait(NEVER)
    else:
        lock = threading.Lock()
        lock.acquire()
        lock.acquire(timeout=NEVER)


def sigint_after(started, delay):
    def send():
        if started.wait(NEVER):
            time.sleep(delay)
            os.kill(os.getpid(), signal.SIGINT)

    threading.Thread(target=send, daemon=True).start()


@pytest.mark.parametrize("how", ["sleep", "event", "lock"])
@pytest.mark.parametrize("past_limit", [False, True])
def test_a_ctrl_c_while_the_callable_is_blocked_in_c_reaches_the_caller(how, past_limit):
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("signals reach the main thread only")
    before = signal.getsignal(signal.SIGINT)
    started = threading.Event()
    calls = [0]

    def blocks(positions):
        calls[0] += 1
        if calls[0] == 2:  # a table request, after the greeting
            started.set()
            blocked_in_c(how)
        return hf_table(positions)

    # Past the limit: the watchdog's stop is pending in the thread when the Ctrl-C comes.
    sigint_after(started, 5 * LIMIT if past_limit else 0.0)
    with pytest.raises(KeyboardInterrupt):
        pev.certify(SPEC, blocks, timeout=LIMIT if past_limit else NEVER, **FAST)
    assert calls[0] == 2
    assert signal.getsignal(signal.SIGINT) is before
    assert pev.certify(SPEC, lambda p: hf_table(p), properties=False, max_position=4095, samples=1).ok


def test_a_callable_blocked_in_c_without_a_ctrl_c_still_times_out():
    calls = [0]

    def sleeps(positions):
        calls[0] += 1
        if calls[0] == 2:
            time.sleep(10 * LIMIT)  # returns by itself, past the limit
        return hf_table(positions)

    cert = pev.certify(SPEC, sleeps, timeout=LIMIT, **FAST)
    assert not cert.ok
    failed = [c.get("note", "") for c in cert.to_dict()["checks"] if not c["pass"]]
    assert len(failed) == 1 and "sleeps timed out" in failed[0]
