"""pev.certify and pev.Certificate (docs/python.md §4, §5)."""

import contextlib
import inspect
import json
import math
import numbers
import os
import signal
import tempfile
import threading
import traceback
from collections.abc import Mapping

import numpy as np

from . import _pev
from ._errors import Error, keyword_names
from ._spec import Spec
from ._tensors import named_tensors, prepare, shape_of
from ._trace import Trace
from ._values import positions_argument

#: The order of the grades, best first (docs/design.md §6.5).
GRADES = ("correctly-rounded", "faithful", "drift-free", "recipe:hf", "recipe:ggml", "recipe:vllm",
          "not certified")


class Unsupported(NotImplementedError):
    """Raised by (or returned as None from) a callable for a spec or dtype it does not implement."""


def load(*files):
    """The tensors of a dump (one safetensors file, or npy files named by tensor) as pev reads
    them: a dict name → numpy array, and the safetensors metadata (dict)."""
    with keyword_names():
        return _pev.read_dump([os.fspath(f) for f in files])


def _file_list(impl):
    return [os.fspath(impl)] if isinstance(impl, (str, os.PathLike)) else [os.fspath(f) for f in impl]


def _is_config(spec):
    """Whether `spec` is a model's config (a config.json path, a dict, a transformers config)."""
    if isinstance(spec, Mapping) or hasattr(spec, "to_dict"):
        return True
    return isinstance(spec, (str, os.PathLike)) and os.fspath(spec).endswith(".json")


def _is_files(impl):
    if isinstance(impl, (str, os.PathLike)):
        return True
    return (isinstance(impl, (list, tuple)) and len(impl) > 0
            and all(isinstance(f, (str, os.PathLike)) for f in impl))


def certify(spec=None, impl=None, *, recipe=None, layout=None, positions=None, seq_len=None,
            exhaustive=False, diagnosis=True, reference="fast", libm="any", max_trig_ulp=None,
            layer_type=None, layers=None, dtype=None, max_position=None, samples=None, seed=None,
            accuracy=None, properties=None, property_cases=None, timeout=None):
    """Certifies an implementation of `spec` — what `pev certify` does — and returns its
    pev.Certificate (check ``.ok``, print it, ``.write(dir)``).

    spec   a pev.Spec or anything it accepts (SPEC string, config.json path, dict, a transformers
           config); None for a dump file whose metadata names its spec (`pev compute` writes it).
    impl   what to certify:
           * tensors: a dict name → tensor (numpy arrays, PyTorch CPU tensors of any dtype, anything
             with __dlpack__ or __array__), named by role as in a dump (docs/certify.md): "cos" and
             "sin" in any layout pev reads ([P, rot/2]; [P, rot] with duplicated halves or
             repeated pairs), "cos_sin_cache", "table" or "freqs_cis" ([P, rot/2, 2] or complex),
             "positions", "inv_freq", "attention_factor", "q_in"/"q_out", "k_in"/"k_out"; "pe";
             ALiBi "slopes"/"bias"; T5 "buckets" with "distances". A (cos, sin) pair is read as
             "cos" and "sin". Leading dimensions of size 1 are dropped;
           * dump files: a path (or a list of paths) to a safetensors file or npy files;
           * a model trace (pev.torch.Trace, docs/python.md §9, or dump files that hold one) with
             `spec` the model's config (a config.json path, a dict or a transformers config):
             every layer is certified against the encoding the config gives it, as ``pev certify
             --config C --impl trace.safetensors`` does (a Trace is written to a temporary
             safetensors file first); with `spec` a SPEC (or a pev.Spec), every layer against
             that one encoding, as ``pev certify --spec S --impl trace.safetensors``;
           * a callable ``f(positions, [spec=], [dtype=], [seq_len=]) -> tensors``, certified as a
             live implementation (as ``pev certify --exec``): pev chooses the positions (int64
             numpy array), asks for tables (and inv_freq, when the answer holds it), certifies
             them, then runs the property suites with shrinking. It answers like a dump (a dict,
             or a (cos, sin) pair); None or ``raise pev.Unsupported`` for a spec or dtype it does
             not implement. Without a ``spec`` parameter it is asked for `spec` only (properties
             that generate other specs are then not applicable); with one it gets each generated
             spec as a pev.Spec. An exception it raises is a failed check (``.exception`` keeps the
             first).
    recipe        the recipe claimed: "exact", "hf", "ggml" or "vllm" (default: report the grade).
    layout        force a table layout: "separate", "halves", "repeated", "vllm" or "pairs".
    positions     positions of the dump's rows (default: its "positions" tensor, else 0 … P−1).
    seq_len       sequence length of dynamic and longrope (default: max position + 1).
    exhaustive    require every position 0 … max (a callable: ask for every one, below 2^26).
    diagnosis     name the known mistake that explains data that is not certified (default True).
    reference     "fast" (default) or "mpfr" (MPFR for every value: slow, a cross-check).
    libm          the math-library class of the recipe bounds: "any" (default), "one-ulp",
                  "glibc", "cr"; max_trig_ulp tightens the claim with the measured trig error.
    layer_type    the layer-type group of a per-layer-type config (not for a trace: each layer is
                  certified against its own type's encoding).
    layers        a model trace: the decoder layers it holds ("0:4,30", [0, 1, 5] or range(0, 4);
                  ``pev certify --layers``); default: every layer of the config.
    A callable only — defaults those of ``pev certify`` (docs/certify.md §9;
    pev._pev.certify_defaults()): dtype ("fp32", "fp16", "bf16"; default: the dtype of its first
    answer), max_position (the largest position asked: 2**20 − 1), samples (64 per octave), seed
    (20261122), accuracy (the strategy whose contract the property suites hold it to: "hf"),
    properties (True), property_cases (100), timeout (seconds each call may take, 0.001 … 86400; default None: no limit): a call past it is
    stopped (an exception raised in the callable's thread) and is a failed check.
    A callable that raises SystemExit (sys.exit()) or KeyboardInterrupt is a failed check naming
    it, and is not asked again; the script goes on.

    Runs without the GIL; Ctrl-C interrupts it (KeyboardInterrupt, also while the callable runs:
    see docs/python.md §4.3). Raises pev.Error for input
    that cannot be certified as given (no tensor for the encoding, an ambiguous layout, shape or
    dtype mismatches, a tensor in GPU memory), naming the tensor.
    """
    if impl is None:
        raise Error("impl: the tensors (a dict), dump files or a callable to certify")
    trace = impl if isinstance(impl, Trace) else None
    if trace is None and _is_files(impl) and spec is not None and _pev.is_trace(_file_list(impl)):
        # Dump files that hold a model trace (docs/certify.md §8.1): layer by layer, as a Trace.
        trace = _file_list(impl)
    if trace is not None:
        return _certify_trace(spec, trace, layer_type=layer_type, layers=layers, recipe=recipe,
                              layout=layout,
                              diagnose=bool(diagnosis), reference=reference, libm=libm,
                              max_trig_ulp=max_trig_ulp,
                              refused=dict(positions=positions, seq_len=seq_len, dtype=dtype,
                                           max_position=max_position, samples=samples, seed=seed,
                                           accuracy=accuracy, properties=properties,
                                           property_cases=property_cases, timeout=timeout,
                                           exhaustive=exhaustive or None))
    if layers is not None:
        raise Error("layers: only for a model trace (docs/certify.md §8), and the implementation "
                    "holds no layers.{i}.* tensor")
    s = None if spec is None else Spec(spec, layer_type=layer_type)
    common = dict(recipe=recipe, layout=layout, diagnose=bool(diagnosis), reference=reference,
                  libm=libm, max_trig_ulp=max_trig_ulp)
    live = dict(dtype=dtype, max_position=max_position, samples=samples, seed=seed,
                accuracy=accuracy, properties=properties, property_cases=property_cases,
                timeout=timeout)
    if callable(impl) and not isinstance(impl, Mapping) and not hasattr(impl, "__dlpack__"):
        if s is None:
            raise Error("spec: required to certify a callable (it is asked for that spec)")
        for name, value in (("positions", positions), ("seq_len", seq_len)):
            if value is not None:
                raise Error(f"{name}: pev chooses a callable's positions and sequence length "
                            "(max_position=, samples=, exhaustive=)")
        adapter = _Implementation(impl, s)
        # None: the default of `pev certify`, which the binding takes from the one certify request
        # (docs/certify.md §9; pev._pev.certify_defaults()).
        with keyword_names(), _watching_sigint(adapter):
            handle = _pev.certify_callable(
                s._handle, adapter, adapter.name, adapter.source, adapter.files,
                dtype=dtype,
                max_position=_int_or_none(max_position),
                samples=_int_or_none(samples),
                exhaustive=bool(exhaustive),
                seed=_int_or_none(seed),
                accuracy=accuracy,
                properties=None if properties is None else bool(properties),
                property_cases=_int_or_none(property_cases),
                timeout=_seconds(timeout),
                **common)
        return Certificate(handle, exceptions=adapter.exceptions)
    given = [k for k, v in live.items() if v is not None]
    if given:
        raise Error(f"{given[0]}: applies to a callable, not to tensors or dump files")
    rng, pos = positions_argument(positions)
    if _is_files(impl):
        files = [os.fspath(impl)] if isinstance(impl, (str, os.PathLike)) else [os.fspath(f) for f in impl]
        tensors = []
    else:
        family = s.family if s is not None else "rope"
        tensors = [(name, prepare(name, t)) for name, t in named_tensors(impl, family).items()]
        files = []
    with keyword_names():
        handle = _pev.certify_tensors(
            None if s is None else s._handle, tensors, files, positions_range=rng,
            positions=pos, seq_len=seq_len,
            exhaustive=bool(exhaustive), **common)
    return Certificate(handle)


def _int_or_none(v):
    return None if v is None else int(v)


def _layers_text(layers):
    """layers= as `pev certify --layers` reads it: "0:4,30" as given, or indices (0, 1, 5)."""
    if layers is None or isinstance(layers, str):
        return layers
    if isinstance(layers, range) and layers.step == 1:
        return f"{layers.start}:{layers.stop}"
    try:
        return ",".join(str(int(i)) for i in layers)
    except (TypeError, ValueError):
        raise Error(f"layers: expected indices and ranges ('0:4,30', [0, 1, 5] or range(0, 4)), "
                    f"got {layers!r}") from None


def _certify_trace(spec, trace, *, layer_type, layers, refused, **common):
    """A model trace (a pev.torch.Trace, or dump files that hold one) against its config, or
    against one spec for every layer (docs/certify.md §8): a Trace is saved to a temporary
    safetensors file (no size limit); both are certified by the same code as `pev certify
    --config C --impl trace.safetensors` (`--spec S`; `--layers L` for layers=); a Trace's notes
    and findings (what the tracer saw) travel in that file's metadata, which the engine puts on the
    certificate (docs/certify.md §8.1, docs/python.md §9.2)."""
    if spec is None:
        raise Error("spec: a model trace is certified against the model's config (a config.json "
                    "path, a dict or a transformers config) or one SPEC for every layer")
    if layer_type is not None:
        raise Error("layer_type: a trace holds every layer; each is certified against its own type")
    given = [k for k, v in refused.items() if v is not None]
    if given:
        raise Error(f"{given[0]}: does not apply to a model trace (it holds its own position_ids)")
    layers = _layers_text(layers)
    one = None if _is_config(spec) else Spec(spec)
    with _temporary_directory(trace) as tmp:
        path = None
        if one is not None:
            pass
        elif isinstance(spec, (str, os.PathLike)):
            path = os.fspath(spec)
        else:
            data = dict(spec) if isinstance(spec, Mapping) else spec.to_dict()
            path = _in_tmpdir(tmp, "config.json", trace,
                              lambda p: _write_json(p, data))
        files = trace if isinstance(trace, list) else [
            _in_tmpdir(tmp, "trace.safetensors", trace, trace.save)]
        with keyword_names():
            handle = _pev.certify_trace(path, None if one is None else one._handle, files,
                                        layers=layers, **common)
    return Certificate(handle)


def _write_json(path, data):
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f, default=str)
    return path


def _tmpdir_error(trace, exc):
    size = ""
    if isinstance(trace, Trace):
        n = sum(a.nbytes for a in trace.tensors.values())
        size = f" ({n / 2**20:.1f} MiB)" if n >= 2**20 else f" ({n} bytes)"
    return Error(f"TMPDIR: pev.certify saves the trace{size} to a temporary file under "
                 f"{tempfile.gettempdir()!r}, which failed: {exc.strerror or exc}; set TMPDIR to "
                 "a writable directory with room for it, or save it yourself (trace.save(path)) "
                 "and certify the file")


@contextlib.contextmanager
def _temporary_directory(trace):
    """tempfile.TemporaryDirectory, an unusable TMPDIR being a pev.Error that names it."""
    try:
        tmp = tempfile.TemporaryDirectory(prefix="pev-trace-")
    except OSError as exc:
        raise _tmpdir_error(trace, exc) from exc
    with tmp as name:
        yield name


def _in_tmpdir(tmp, name, trace, write):
    try:
        return write(os.path.join(tmp, name))
    except OSError as exc:
        raise _tmpdir_error(trace, exc) from exc


def _seconds(timeout):
    """timeout= as a float (its range is checked with pev's rule, python/src/certify.cpp)."""
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, numbers.Real):
        raise Error(f"timeout: expected a number of seconds, got {type(timeout).__name__}")
    t = float(timeout)
    if not math.isfinite(t) or t <= 0:
        raise Error(f"timeout: expected a positive finite number of seconds, got {timeout!r}")
    return t


@contextlib.contextmanager
def _watching_sigint(adapter):
    """While a callable is certified from the main thread, SIGINT's Python handler is wrapped to
    note that the signal came (adapter.sigint) before it runs: a KeyboardInterrupt then is a
    Ctrl-C, which stops pev; without the signal, the callable raised it (docs/python.md §4.3).
    The wrapper is C (_pev._SigintWatch): a Python one could be preempted at its first line by the
    timeout= stop pending in the thread, and the Ctrl-C would be taken for a timeout.
    Elsewhere Python runs no signal handler: a KeyboardInterrupt is always the callable's."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # SIG_IGN, SIG_DFL or a handler installed from C: no KeyboardInterrupt
        yield
        return

    handler = _pev._SigintWatch(previous)
    adapter.watch = handler
    signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        if signal.getsignal(signal.SIGINT) is handler:
            signal.signal(signal.SIGINT, previous)


def _describe(exc):
    where = ""
    frames = traceback.extract_tb(exc.__traceback__)
    if frames:
        f = frames[-1]
        where = f" (at {os.path.basename(f.filename)}:{f.lineno} in {f.name})"
    text = str(exc)
    return f"{type(exc).__name__}{': ' + text if text else ''}{where}"


class _Implementation:
    """The adapter pev's live backend calls (python/src/live_backend.cpp, python_backend): the
    user's callable asked for positions, answering tensors for pev to read. A callable that takes
    one position at a time (an int) is found at the first call and asked position by position, its
    answers stacked (docs/python.md §4.2)."""

    _KEYWORDS = ("spec", "dtype", "seq_len")
    # Roles that do not depend on the position: kept from the first answer, not stacked.
    _PER_SPEC = ("inv_freq", "attention_factor")

    def __init__(self, fn, spec):
        self.fn = fn
        self.spec = spec
        self.exceptions = []
        self.watch = None  # the SIGINT handler noting a Ctrl-C (_watching_sigint)
        self.one_at_a_time = None  # None until the first call tells (_ask)
        self._specs = {spec.text: spec}
        try:
            params = inspect.signature(fn).parameters
        except (TypeError, ValueError):
            params = {}
        var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        self.takes = {k for k in self._KEYWORDS if var_kw or k in params}
        target = inspect.unwrap(fn)
        self.name = getattr(target, "__qualname__", None) or type(target).__qualname__
        module = getattr(target, "__module__", None) or type(target).__module__
        self.source = f"python callable {module}.{self.name}"
        try:
            path = inspect.getsourcefile(target if inspect.isroutine(target) else type(target))
        except TypeError:
            path = None
        self.files = [path] if path and os.path.isfile(path) else []

    @property
    def sigint(self):
        """Whether SIGINT reached Python's handler while the callable was certified."""
        return self.watch is not None and self.watch.seen

    def __call__(self, positions, spec_text, dtype, seq_len, request):
        if "spec" not in self.takes and spec_text != self.spec.text:
            return None  # asked only for the spec it was given
        kwargs = {}
        # The specs it answered, kept for their next requests; the many it refuses (the property
        # suites probe every generated spec once, docs/python.md §4.2) are not kept.
        spec = self._specs.get(spec_text) or Spec(spec_text)
        if "spec" in self.takes:
            kwargs["spec"] = spec
        if "dtype" in self.takes:
            kwargs["dtype"] = dtype
        if "seq_len" in self.takes:
            kwargs["seq_len"] = seq_len
        try:
            out = self._ask(positions, kwargs)
        except _pev._CallTimedOut:
            raise  # past timeout=: pev says so (python/src/live_backend.cpp)
        except BaseException as exc:
            return self._failed(exc)
        if self.sigint:
            raise KeyboardInterrupt  # a Ctrl-C that the callable caught
        if out is None:
            return None
        self._specs.setdefault(spec_text, spec)
        if isinstance(out, _Rows):
            rows = [named_tensors(row, spec.family) for row in out]
            named = {name: (rows[0][name] if name in self._PER_SPEC
                            else _stack(name, [row.get(name) for row in rows]))
                     for name in rows[0]}
        else:
            named = named_tensors(out, spec.family)
        return {name: prepare(name, t) for name, t in named.items()}

    def _ask(self, positions, kwargs):
        """The callable's answer for `positions`: one answer, or a one-position callable's answers
        (_Rows). The first call (positions 0 … 15) tells which it is: the callable is asked for all
        of them at once; when that raises, for the first position alone (an int). Answered, it
        takes one position at a time; raising again, the first exception is its failure."""
        if self.one_at_a_time:
            return self._one_by_one(positions, kwargs)
        if self.one_at_a_time is False:
            return self.fn(positions, **kwargs)
        try:
            out = self.fn(positions, **kwargs)
        except Exception as exc:  # the callable's own failure, unless it takes one position
            if self.sigint or isinstance(exc, (NotImplementedError, _pev._CallTimedOut)):
                raise
            try:
                one = self.fn(int(positions[0]), **kwargs)
            except Exception:  # not a one-position callable either
                one = None
            if one is None or self.sigint:
                raise exc from None
            self.one_at_a_time = True
            return self._one_by_one(positions, kwargs)
        self.one_at_a_time = False
        return out

    def _one_by_one(self, positions, kwargs):
        """A one-position callable asked for each of `positions` (an int); None if it answers None
        for any."""
        rows = _Rows()
        for p in positions:
            out = self.fn(int(p), **kwargs)
            if out is None:
                return None
            rows.append(out)
        return rows

    def _failed(self, exc):
        """What pev's backend is told when the callable raised `exc`."""
        if self.sigint:  # a Ctrl-C came while it ran: it stops pev, whatever the callable did
            if isinstance(exc, KeyboardInterrupt):
                raise exc
            raise KeyboardInterrupt from exc
        if isinstance(exc, NotImplementedError):
            return None
        self._keep(exc)
        # The implementation failed: a failed check with its message. SystemExit and a
        # KeyboardInterrupt of its own end it (as an exit ends an --exec process).
        if isinstance(exc, KeyboardInterrupt):
            return ("ended", f"raised {_describe(exc)}, not a Ctrl-C (pev saw no SIGINT)")
        if isinstance(exc, SystemExit):
            return ("ended", f"raised {_describe(exc)}: it tried to end the process "
                             f"(exit status {exc.code!r})")
        return _describe(exc)

    def _keep(self, exc):
        if len(self.exceptions) < 16:
            self.exceptions.append(exc)


class _Rows(list):
    """A one-position callable's answers, one per position asked (_Implementation._one_by_one)."""


def _stack(name, tensors):
    """One-position answers' tensor `name` as rows [P, …]: each without its leading dimensions of
    size 1 (a batch of one), stacked by its own library (PyTorch, numpy)."""
    if any(t is None for t in tensors):
        raise Error(f"tensor '{name}': missing from some answers of the one-position callable")
    rows = []
    for t in tensors:
        shape = tuple(shape_of(t))
        while shape and shape[0] == 1:
            shape = shape[1:]
        rows.append(t.reshape(shape) if hasattr(t, "reshape") else np.reshape(np.asarray(t), shape))
    first = rows[0]
    if type(first).__module__.split(".")[0] == "torch":
        import torch  # only when the callable answers PyTorch tensors

        return torch.stack(rows)
    return np.stack([np.asarray(r) for r in rows])


class _Record:
    """A JSON object of certificate.json with attribute access (`pass` is `passed`)."""

    def __init__(self, data):
        self._data = data

    def __getattr__(self, name):
        data = self.__dict__["_data"]
        key = "pass" if name == "passed" else name
        if key not in data:
            raise AttributeError(name)
        return _wrap(data[key])

    def __getitem__(self, key):
        return _wrap(self._data[key])

    def __contains__(self, key):
        return key in self._data

    def keys(self):
        return self._data.keys()

    def to_dict(self):
        return self._data

    def __repr__(self):
        return f"{type(self).__name__}({self._data!r})"


def _wrap(v):
    if isinstance(v, dict):
        return _Record(v)
    if isinstance(v, list):
        return [_wrap(x) for x in v]
    return v


class Certificate:
    """A certificate: what `pev certify` prints and writes (docs/design.md §6.9).

    ok              certified, and the claimed recipe (if any) holds: `pev certify`'s exit code 0
    grade           "correctly-rounded" … "recipe:vllm" or "not certified"
    certified       the grade is not "not certified"
    claim_holds     the claimed recipe holds (True without a claim)
    checks          one per tensor role (and per property for a callable): id, dtype, grade,
                    passed, values, max_abs, max_ulp_error, recipes (max ρ per recipe: hf, ggml,
                    vllm-fp16, vllm-bf16, drift-free, exact), worst (position, index, component,
                    got/exact and their hex, rho, ulp_error), note, property, source, …
    rho             {check id: {recipe: max ρ}}
    recipes         {check id: {recipe: {"rho", "holds"}}}: the summary's recipes lines
    diagnosis       None when certified; else first_mismatches, named (the mistake that explains
                    the data), explanations, indistinguishable, findings, max_rho_without_explanation,
                    replayed_on (the rows a large dump's mistakes were replayed on; empty: all) and
                    recipe_vacuous (data failing only where the held recipe's bound is vacuous)
    worst           the worst check's worst value
    layout          how the table was read: "halves, detected", … (None without a table)
    exception       a callable's first exception, if it raised
    json, to_dict() certificate.json's text and object; str(cert): the summary `pev certify` prints
    write(dir)      certificate.json, summary.md, junit.xml, data/*.csv, index.html (as the CLI)
    """

    def __init__(self, handle, *, exceptions=()):
        self._handle = handle
        self.json = handle.json()
        self._data = json.loads(self.json)
        self.exceptions = list(exceptions)

    # The verdict.
    @property
    def exit_code(self):
        return self._handle.exit_code

    @property
    def ok(self):
        return self.exit_code == 0

    @property
    def grade(self):
        return self._data["grade"]

    @property
    def certified(self):
        return bool(self._data["certified"])

    @property
    def claim_holds(self):
        return bool(self._data["claim_holds"])

    @property
    def claimed_recipe(self):
        return self._data["claimed_recipe"]

    # What was certified.
    @property
    def spec(self):
        return self._data["spec"]

    @property
    def what(self):
        return self._data["what"]

    @property
    def layout(self):
        if self._handle.callable_layout:
            return self._handle.callable_layout
        what = self._data["what"]
        start = what.find("rope table (")
        if start < 0:
            return None
        # "rope table (halves layout, detected from …: …)" or "(…, forced by --layout: …)"
        head = what[start + len("rope table (") :].split(":")[0]
        name = head.split(" layout")[0]
        return name + (", given" if "forced by --layout" in head else ", detected")

    @property
    def positions(self):
        return _wrap(self._data["positions"])

    @property
    def inputs(self):
        return _wrap(self._data["inputs"])

    @property
    def library(self):
        return _wrap(self._data["library"])

    @property
    def provenance(self):
        return _wrap(self._data["provenance"])

    @property
    def notes(self):
        return list(self._data["notes"])

    @property
    def seconds(self):
        return self._data["seconds"]

    # Figures.
    @property
    def checks(self):
        return _wrap(self._data["checks"])

    @property
    def rho(self):
        return {c["id"]: dict(c.get("recipes", {})) for c in self._data["checks"]}

    @property
    def recipes(self):
        """{check: {recipe: {"rho": its own max ρ, "holds": bool}}} for every value check: the
        summary's `recipes` lines (a recipe holds on a check when its ladder ρ is at most 1 and no
        bound up to it is vacuous)."""
        out = {}
        for c in self._data["checks"]:
            if c.get("property") or not c.get("ladder"):
                continue
            vacuous, row = False, {}
            for name in ("exact", "drift-free", "hf", "ggml", "vllm-fp16", "vllm-bf16"):
                if name not in c.get("recipes", {}) or name not in c["ladder"]:
                    continue
                vacuous = vacuous or name in (c.get("vacuous") or {})
                row[name] = {"rho": c["recipes"][name],
                             "holds": not vacuous and c["ladder"][name] <= 1}
            out[c["id"]] = row
        return out

    @property
    def diagnosis(self):
        return _wrap(self._data["diagnosis"])

    @property
    def worst(self):
        """The worst value of the lowest-graded check (largest ulp error among equals)."""
        checks = [c for c in self._data["checks"] if c.get("values") and c.get("worst")]
        if not checks:
            return None

        def badness(c):
            g = c.get("grade") or "not certified"
            return (GRADES.index(g) if g in GRADES else len(GRADES), c["worst"].get("ulp_error", 0))

        c = max(checks, key=badness)
        return _wrap(dict(c["worst"], check=c["id"]))

    @property
    def exception(self):
        return self.exceptions[0] if self.exceptions else None

    def to_dict(self):
        return self._data

    def write(self, directory):
        """Writes the certificate's files as `directory` (replaced as one unit; refused when it
        holds anything pev did not write, or an input): what `pev certify --out` writes."""
        with keyword_names():
            self._handle.write(os.fspath(directory))
        return os.fspath(directory)

    def __str__(self):
        return self._handle.text()

    def __repr__(self):
        claim = f", claim {self.claimed_recipe} {'holds' if self.claim_holds else 'fails'}" if self.claimed_recipe else ""
        return f"<pev.Certificate {self.spec} {self.grade}{claim}>"
