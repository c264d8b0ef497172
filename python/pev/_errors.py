"""pev.Error (a ValueError, raised for bad input with pev's own message) and pev.PevWarning."""

import contextlib

from . import _pev

#: Bad input: the message names the input or option and the rule (as `pev` exits 2 with it).
Error = _pev.Error
Error.__module__ = "pev"


class PevWarning(UserWarning):
    """What pev warns about (what transformers only warns about in a config.json)."""


# pev's messages name the CLI's flags; from Python they name the keyword arguments.
_FLAGS = {
    "--what": "what",
    "--dtype": "dtype",
    "--recipe": "recipe",
    "--seq-len": "seq_len",
    "--positions": "positions",
    "--layout": "layout",
    "--libm": "libm",
    "--reference": "reference",
    "--max-trig-ulp": "max_trig_ulp",
    "--max-position": "max_position",
    "--precision": "precision",
    "--strategy": "strategy",
    "--exhaustive": "exhaustive",
    "--samples": "samples",
    "--property-cases": "property_cases",
}


def renamed(message):
    """`message` with a leading CLI flag (`--dtype: …`) named as pev's keyword argument."""
    for flag, name in _FLAGS.items():
        if message.startswith(flag) and message[len(flag) : len(flag) + 1] in (":", " "):
            return name + message[len(flag) :]
    return message


@contextlib.contextmanager
def keyword_names():
    """Re-raises pev.Error with its message's leading flag named as a keyword argument."""
    try:
        yield
    except Error as e:
        message = str(e)
        new = renamed(message)
        if new == message:
            raise
        raise Error(new) from None
