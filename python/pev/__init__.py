"""pev — the positional-encoding verifier, from Python.

    import pev
    table = pev.reference("rope:head_dim=128,rope_theta=500000", range(4096), dtype="fp32")
    cert = pev.certify("config.json", {"cos": cos, "sin": sin}, recipe="hf")
    print(cert)                         # the summary `pev certify` prints
    pev.testing.assert_certified(cert)  # in a pytest test

The same values, certificates and messages as the `pev` tool: this package calls pev's library (a
pybind11 extension, pev._pev). Reference: docs/python.md in pev's repository.
"""

from . import _pev
from . import testing
from ._certify import GRADES, Certificate, Unsupported, certify, load
from ._errors import Error, PevWarning
from ._spec import Spec
from ._values import compute, reference

__version__ = _pev.build_info()["version"]
#: pev's version, git revision, compiler, FP flags and default MPFR precision.
build_info = _pev.build_info()

__all__ = [
    "Certificate",
    "Error",
    "GRADES",
    "PevWarning",
    "Spec",
    "Unsupported",
    "build_info",
    "certify",
    "compute",
    "load",
    "reference",
    "testing",
]
