"""pev.testing: assertions for pytest (docs/python.md §5).

    import pev.testing

    def test_rotary_tables():
        cos, sin = my_rotary(torch.arange(4096))
        pev.testing.assert_certified("config.json", {"cos": cos, "sin": sin}, recipe="hf")

The pytest plugin (``pytest -p pev.testing``, or ``pytest_plugins = ["pev.testing"]`` in a
conftest.py) adds the fixture ``pev_certify``: pev.certify that also writes each certificate under
pytest's temporary directory of the test and names it in the failure message; and the fixture
``pev_certify_trace``: a model's trace (pev.torch.trace) certified against its config, failing the
test with the certificate's text unless every layer is certified (docs/python.md §9).
"""

import sys

from ._certify import Certificate, certify

__all__ = ["CertificationError", "assert_certified", "failure_message"]


class CertificationError(AssertionError):
    """An implementation pev did not certify (or whose claimed recipe does not hold)."""

    def __init__(self, message, certificate):
        super().__init__(message)
        #: The pev.Certificate that failed.
        self.certificate = certificate


def _worst_line(cert):
    w = cert.worst
    if w is None:
        return None
    d = w.to_dict()
    where = []
    for key in ("position", "index", "component"):
        if d.get(key) is not None:
            where.append(f"{key} {d[key]}")
    values = []
    if "got" in d and "exact" in d:
        values.append(f"got {d['got']} ({d.get('got_hex', '')}), exact {d['exact']}")
    for key in ("ulp_error", "rho"):
        if d.get(key) is not None:
            values.append(f"{key} {d[key]}")
    return f"worst case: {d.get('check')}: " + ", ".join(where + values)


def failure_message(cert):
    """What assert_certified says about a certificate that is not ok: the grade and the claim, the
    worst case, the diagnosis (the mistake it names, the first mismatches), a callable's exception,
    then the summary `pev certify` prints."""
    lines = [f"pev did not certify {cert.spec}: grade {cert.grade}"]
    if cert.claimed_recipe:
        lines[0] += f", claimed recipe {cert.claimed_recipe} " + (
            "holds" if cert.claim_holds else "does not hold")
    worst = _worst_line(cert)
    if worst:
        lines.append(worst)
    failed = [c for c in cert.to_dict()["checks"] if not c.get("pass", True)]
    for c in failed[:8]:
        why = c.get("note") or c.get("grade") or ""
        lines.append(f"failed check {c['id']}: {why}".rstrip())
    diag = cert.to_dict().get("diagnosis")
    if diag:
        explains = [e for e in diag.get("explanations") or [] if e.get("explains")]
        if diag.get("named") or explains:
            named = diag.get("named") or explains[0]["mutant"]
            what = next((e["description"] for e in explains if e["mutant"] == named), "")
            lines.append(f"diagnosis: {named}" + (f" ({what})" if what else ""))
        else:
            lines.append("diagnosis: no known mistake explains the data (max rho without an "
                         f"explanation {diag.get('max_rho_without_explanation')})")
        for m in (diag.get("first_mismatches") or [])[:6]:
            lines.append(f"  first mismatch: {m.get('check')} position {m.get('position')} index "
                         f"{m.get('index')}: got {m.get('got')}, want {m.get('want')} "
                         f"(bound {m.get('bound'):.3g})")
    if cert.exception is not None:
        lines.append(f"the callable raised: {type(cert.exception).__name__}: {cert.exception}")
    for note in cert.notes[:8]:  # e.g. what pev.torch's tracer saw (docs/python.md §9.2)
        lines.append(f"note: {note}")
    lines.append("")
    lines.append(str(cert).rstrip())
    return "\n".join(lines)


def assert_certified(spec_or_certificate, impl=None, *, grade=None, **kwargs):
    """Certifies `impl` as pev.certify(spec, impl, **kwargs) does (or takes a pev.Certificate) and
    raises CertificationError (an AssertionError) unless it is ok: certified, and the claimed
    recipe (recipe=) holds. `grade` additionally requires at least that grade (pev.GRADES order,
    e.g. "faithful"). Returns the certificate."""
    if isinstance(spec_or_certificate, Certificate):
        if impl is not None or kwargs:
            raise TypeError("assert_certified(certificate) takes no implementation or options")
        cert = spec_or_certificate
    else:
        cert = certify(spec_or_certificate, impl, **kwargs)
    if not cert.ok:
        raise CertificationError(failure_message(cert), cert)
    if grade is not None:
        from ._certify import GRADES

        if grade not in GRADES:
            raise ValueError(f"grade: expected one of {', '.join(GRADES)}, got {grade!r}")
        if GRADES.index(cert.grade) > GRADES.index(grade):
            raise CertificationError(
                f"pev certified {cert.spec} as {cert.grade}, below the required {grade}\n"
                + failure_message(cert), cert)
    return cert


# ---- pytest plugin ------------------------------------------------------------------------------

# Defined only under pytest (it has imported itself before a plugin or conftest imports this
# module), so that `import pev` does not import pytest.
_pytest = sys.modules.get("pytest")

if _pytest is not None:

    @_pytest.fixture
    def pev_certify(tmp_path):
        """pev.certify that writes each certificate to tmp_path/pev-certificate-N (kept by pytest
        for failed tests) and returns it."""
        count = [0]

        def run(spec, impl=None, **kwargs):
            cert = certify(spec, impl, **kwargs)
            count[0] += 1
            cert.write(tmp_path / f"pev-certificate-{count[0]}")
            return cert

        return run

    @_pytest.fixture
    def pev_certify_trace(tmp_path):
        """``run(config, trace_or_model, *trace_args, grade=None, **trace_kwargs)``: traces the
        model (pev.torch.trace(model, *trace_args, **trace_kwargs)) unless given a pev.torch.Trace,
        certifies the trace against `config` (a config.json path or dict), writes the certificate
        to tmp_path/pev-trace-certificate-N and returns it; fails the test (CertificationError,
        with the certificate's text) unless it is ok and at least `grade`."""
        count = [0]

        def run(config, trace_or_model, *trace_args, grade=None, **trace_kwargs):
            from ._trace import Trace

            trace = trace_or_model
            if not isinstance(trace, Trace):
                from . import torch as pev_torch

                trace = pev_torch.trace(trace_or_model, *trace_args, **trace_kwargs)
            elif trace_args or trace_kwargs:
                raise TypeError(
                    "pev_certify_trace: arguments of pev.torch.trace given with a Trace")
            cert = certify(config, trace)
            count[0] += 1
            out = tmp_path / f"pev-trace-certificate-{count[0]}"
            cert.write(out)
            try:
                return assert_certified(cert, grade=grade)
            except CertificationError as e:
                raise CertificationError(f"{e}\n(certificate written to {out})", cert) from None

        return run
