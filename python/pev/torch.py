"""pev.torch: a model trace from a live PyTorch model (docs/python.md §9, docs/certify.md §8.1).

    trace = pev.torch.trace(model, input_ids, attention_mask=mask)
    cert = pev.certify("config.json", trace)

PyTorch is imported when a trace is taken, not when pev is imported.
"""

import contextlib
import inspect
import sys

import numpy as np

from ._errors import Error
from ._trace import Trace

__all__ = ["ROTARY_FUNCTIONS", "Recording", "Trace", "derive_position_ids", "record", "trace"]

#: The module-level functions of transformers-style modeling modules that rotate q and k:
#: ``f(q, k, …) -> (q, k)``. The tracer wraps those it finds in the modeling modules of the layers.
ROTARY_FUNCTIONS = ("apply_rotary_pos_emb", "apply_rotary_pos_emb_interleave", "apply_rotary_emb",
                    "apply_multimodal_rotary_pos_emb")

#: The names of the decoder-layer lists the tracer looks for, by preference.
_LAYER_LISTS = ("layers", "h", "layer", "blocks")
#: The names of a learned positional embedding module (GPT-2's wpe, OPT's embed_positions).
_EMBED_NAMES = ("wpe", "embed_positions", "position_embeddings")


def _torch():
    try:
        import torch
    except ImportError as e:  # pragma: no cover - torch is installed where this is tested
        raise Error("pev.torch needs PyTorch (Debian: python3-torch)") from e
    return torch


def to_numpy(t):
    """A tensor as pev reads it: a C-contiguous CPU numpy array; bfloat16 as its uint16 encodings
    (docs/certify.md §1); the dtype name it had."""
    torch = _torch()
    if not isinstance(t, torch.Tensor):
        a = np.asarray(t)
        return np.ascontiguousarray(a), str(a.dtype)
    t = t.detach()
    if t.device.type != "cpu":
        t = t.cpu()
    t = t.contiguous()
    if t.dtype == torch.bfloat16:
        return t.view(torch.int16).numpy().view(np.uint16).copy(), str(t.dtype)
    if t.dtype == torch.bool:
        return t.to(torch.int64).numpy().copy(), str(t.dtype)
    return t.numpy().copy(), str(t.dtype)


def derive_position_ids(input_ids, attention_mask=None):
    """The position ids transformers derives for a batch (its generation utilities): with an
    attention mask, mask.cumsum(-1) − 1 with padded tokens set to 1 (left padding starts each row
    at 0 at its first real token); without one, 0 … T − 1 for every row. int64, input_ids' shape."""
    torch = _torch()
    shape = tuple(input_ids.shape)
    if attention_mask is not None:
        mask = torch.as_tensor(attention_mask)
        if tuple(mask.shape) != shape:
            raise Error(f"attention_mask has shape {list(mask.shape)}, input_ids {list(shape)}")
        pos = mask.long().cumsum(-1) - 1
        pos.masked_fill_(mask == 0, 1)
        return pos
    t = shape[-1]
    return torch.arange(t, dtype=torch.int64).expand(shape).clone()


def _find_layers(model, layers):
    torch = _torch()
    if layers is not None:
        if isinstance(layers, str):
            m = model
            for part in layers.split("."):
                m = getattr(m, part)
            layers = m
        return list(layers)
    found = {}
    for name, m in model.named_modules():
        if isinstance(m, torch.nn.ModuleList):
            leaf = name.rsplit(".", 1)[-1]
            if leaf in _LAYER_LISTS:
                found.setdefault(leaf, []).append((name, m))
    for leaf in _LAYER_LISTS:
        lists = found.get(leaf, [])
        if len(lists) == 1:
            return list(lists[0][1])
        if len(lists) > 1:
            names = ", ".join(n for n, _ in lists)
            raise Error(f"the model has several layer lists ({names}): pass layers= naming the "
                        "decoder's")
    raise Error("no decoder layer list found (a ModuleList named layers, h, layer or blocks): "
                "pass layers=")


def _find_embed(model, embed):
    if embed is False:
        return None
    if embed is not None and not isinstance(embed, str):
        return embed
    for name, m in model.named_modules():
        leaf = name.rsplit(".", 1)[-1]
        if (embed is not None and name == embed) or (embed is None and leaf in _EMBED_NAMES):
            if embed is None and not hasattr(m, "weight"):
                continue  # a rotary module named alike has no table
            return m
    if embed is not None:
        raise Error(f"embed: the model has no module named {embed!r}")
    return None


class _Recorder:
    """Which layer is running, every rotary call it made, and whether the attention consumed the
    rotation's result (docs/python.md §9.1)."""

    def __init__(self, rotary_names, tables):
        self.current = []  # stack of layer indices (a layer may call a sub-layer: the innermost)
        self.in_module = 0  # inside a per-layer rotary module: its own helpers are not recorded
        self.quiet = 0  # the tracer's own torch calls (copies): not the model's uses of a tensor
        self.calls = {}  # layer → [call], every rotary call seen, in order
        self.pending = {}  # layer → _Use of its latest rotary call's tensors
        self.discarded = {}  # layer → the call whose result the attention did not use
        self.notes = []
        self.tables = tables
        self.rotary_names = rotary_names
        self.watched = ()  # the function names watched, and where they were found
        self.patched = []
        self.positions = None  # what the first per-layer rotary module was called with

    def layer(self):
        return self.current[-1] if self.current else None

    def record(self, i, where, q_in, k_in, q_out, k_out, cos=None, sin=None, used=None):
        """One rotary call of layer i: copies of its tensors (numpy); `used` the model's own
        tensors (arguments and results), to see which of them the layer uses afterwards."""
        self.quiet += 1
        try:
            got = {"q_in": q_in, "q_out": q_out, "k_in": k_in, "k_out": k_out}
            if self.tables:
                got.update(cos=cos, sin=sin)
            call = {"where": where, "tensors": {}, "dtypes": {}}
            for role, t in got.items():
                if t is None:
                    continue
                call["tensors"][role], call["dtypes"][role] = to_numpy(t)
        finally:
            self.quiet -= 1
        self.calls.setdefault(i, []).append(call)
        if used is not None:
            self.pending[i] = _Use(call, *used)

    def saw(self, args, kwargs):
        """A torch function the model called (TorchFunctionMode): marks which of the running
        layer's rotation tensors it uses."""
        i = self.layer()
        use = self.pending.get(i)
        if use is None or self.quiet:
            return
        for t in _tensors_in(args, kwargs):
            use.mark(_storage(t))

    def left(self, i):
        """Layer i ended: a rotation whose result it never used, while it used the tensors the
        rotation was given, was discarded (the attention consumed the unrotated q/k)."""
        use = self.pending.pop(i, None)
        if use is not None and use.inputs_used and not use.outputs_used:
            self.discarded[i] = use.call


class _Use:
    """The storages of a rotary call's arguments and results (references kept, so that their
    memory is not reused while the layer runs), and whether the layer used them afterwards."""

    def __init__(self, call, inputs, outputs):
        self.call = call
        self.keep = (inputs, outputs)
        self.inputs = {_storage(t) for t in inputs if t is not None}
        self.outputs = {_storage(t) for t in outputs if t is not None}
        self.inputs_used = self.outputs_used = False

    def mark(self, storage):
        if storage in self.outputs:
            self.outputs_used = True
        elif storage in self.inputs:
            self.inputs_used = True


def _storage(t):
    try:
        s = t.untyped_storage() if hasattr(t, "untyped_storage") else t.storage()
        return s.data_ptr()
    except (RuntimeError, NotImplementedError):
        return id(t)


def _tensors_in(args, kwargs):
    torch = _torch()
    stack = [*args, *kwargs.values()]
    while stack:
        a = stack.pop()
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            stack.extend(a)


def _consumption_mode(rec):
    """A TorchFunctionMode that shows the recorder every torch function the model calls, so that
    it sees whether a layer used its rotation's result (docs/python.md §9.1)."""
    from torch.overrides import TorchFunctionMode

    class Watch(TorchFunctionMode):
        def __torch_function__(self, func, types, args=(), kwargs=None):
            kwargs = kwargs or {}
            rec.saw(args, kwargs)
            return func(*args, **kwargs)

    return Watch()


def _site(i, calls, discarded, where_names):
    """A layer's site from its rotary calls, and what to say about it: (tensors, dtypes, finding,
    note). One call is the site. Calls each on the result of the one before rotate q/k several
    times: the site is the first call's input and the last one's result (what the attention got),
    and the finding rotated-twice. Two calls of one tensor each (q, then k: Gemma-3n's
    apply_rotary_pos_emb(x, cos, sin)) are one site. Other repeated calls keep the first, noted."""
    first, last = calls[0], calls[-1]
    tensors, dtypes = dict(first["tensors"]), dict(first["dtypes"])
    finding = note = None
    where = first["where"]
    if len(calls) > 1:
        chain = _chained(calls)
        single = all("k_out" not in c["tensors"] for c in calls)
        if chain:
            for role in ("q_out", "k_out"):
                if role in last["tensors"]:
                    tensors[role], dtypes[role] = last["tensors"][role], last["dtypes"][role]
            finding = ("rotated-twice",
                       f"{where} was called {len(calls)} times in one forward, each on the result "
                       f"of the one before: q/k were rotated {len(calls)} times (recorded: the first "
                       "call's input, the last one's result)")
        elif single and len(calls) == 2:
            for role in ("q_in", "q_out"):
                tensors["k" + role[1:]] = last["tensors"][role]
                dtypes["k" + role[1:]] = last["dtypes"][role]
        else:
            note = (f"layer {i}: {where} was called {len(calls)} times in one forward on different "
                    "tensors; the first call is recorded, the others are not checked")
    if i in discarded:
        for role in ("q", "k"):
            if f"{role}_in" in tensors:
                tensors[f"{role}_out"] = tensors[f"{role}_in"]
        finding = ("rotation-discarded",
                   f"the layer used q/k as they were before {where}, not its result: the "
                   "attention got them unrotated (recorded as it got them)")
    return tensors, dtypes, finding, note


def _chained(calls):
    """Whether each call after the first was given a result of the call before it."""
    for before, after in zip(calls, calls[1:]):
        outs = [before["tensors"].get(r) for r in ("q_out", "k_out")]
        ins = [after["tensors"].get(r) for r in ("q_in", "k_in")]
        if not any(a is not None and o is not None and a.shape == o.shape and np.array_equal(a, o)
                   for a in ins for o in outs):
            return False
    return True


def _clone(t):
    torch = _torch()
    return t.detach().clone() if isinstance(t, torch.Tensor) else t


def _wrap_function(fn, rec, name):
    def traced(*args, **kwargs):
        i = rec.layer()
        if i is None or rec.in_module:
            return fn(*args, **kwargs)
        q = args[0] if args else kwargs.get("q", kwargs.get("xq"))
        k = args[1] if len(args) > 1 else kwargs.get("k", kwargs.get("xk"))
        rec.quiet += 1
        try:
            q_in, k_in = _clone(q), _clone(k)
        finally:
            rec.quiet -= 1
        cos = args[2] if len(args) > 2 else kwargs.get("cos")
        sin = args[3] if len(args) > 3 else kwargs.get("sin")
        out = fn(*args, **kwargs)
        q_out, k_out = (out[0], out[1]) if isinstance(out, (tuple, list)) else (out, None)
        if k_out is None:
            k, k_in = None, None  # f(x, cos, sin) -> x: one tensor a call
        rec.record(i, name, q_in, k_in, q_out, k_out, cos, sin,
                   used=((q, k), (q_out, k_out)))
        return out

    traced.__wrapped__ = fn
    traced.__pev_traced__ = True
    return traced


@contextlib.contextmanager
def _patched(namespaces, names, rec):
    done = []
    try:
        for module in namespaces:
            for name in names:
                fn = module.__dict__.get(name)
                if callable(fn) and not getattr(fn, "__pev_traced__", False):
                    setattr(module, name, _wrap_function(fn, rec, name))
                    done.append((module, name, fn))
        yield done
    finally:
        for module, name, fn in reversed(done):
            setattr(module, name, fn)


def _forward_arguments(model, input_ids, position_ids, attention_mask, kwargs):
    try:
        params = inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        params = {}
    var_kw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
    call = dict(kwargs)
    if "position_ids" in params or var_kw:
        call["position_ids"] = position_ids
    elif "positions" in params:
        call["positions"] = position_ids
    if attention_mask is not None:
        call["attention_mask"] = attention_mask
    return call


def trace(model, input_ids, position_ids=None, attention_mask=None, *, layers=None, embed=None,
          functions=ROTARY_FUNCTIONS, rotary="rotary_emb", tables=False, **kwargs):
    """Runs ``model``'s forward once on ``input_ids`` and returns the pev.torch.Trace of what every
    decoder layer rotated (docs/certify.md §8.1).

    Two structures are traced, in the same run:
      * transformers-style: each layer's attention calls a module-level function of its modeling
        module, ``apply_rotary_pos_emb(q, k, cos, sin, …) -> (q, k)`` (or another name in
        ``functions``). The tracer wraps those functions in the modules that define the layers'
        classes for the duration of the forward and attributes each call to the layer running
        (forward pre-hooks on the layers). q_in/k_in are copies of the arguments, q_out/k_out the
        results, in the layout the model holds them (transformers: [B, H, T, D]).
      * engine-style: a rotary module inside each layer (a submodule named ``rotary``, default
        ``rotary_emb``) called ``rotary_emb(positions, q, k) -> (q, k)``, as vLLM's, with q/k
        flattened [T, H·D]; hooks copy its inputs before it runs (vLLM rotates in place) and
        record its outputs.
    A layer where neither was called is recorded as ``layers.{i}.none`` (and noted, with what the
    tracer watched). Every call is recorded: calls chained on each other's results are the finding
    rotated-twice, a result the layer never used (it went on with the unrotated q/k) the finding
    rotation-discarded (docs/python.md §9.1); trace.findings and trace.notes hold them.

    position_ids   the positions the model is given ([B, T], MRoPE [3, B, T], or [T] for a
                   flattened batch); default: derived as transformers derives them — from
                   attention_mask (mask.cumsum(-1) − 1, padded tokens 1: left padding restarts
                   each row at 0) or 0 … T − 1 — and passed to the forward (``position_ids=``, or
                   ``positions=`` when the forward takes that), so that what is recorded is what
                   the model used. Recorded as ``position_ids``.
    attention_mask passed to the forward and recorded (its padded tokens are not checked).
    layers         the decoder layers (a ModuleList or a dotted name); default: the model's
                   ModuleList named layers, h, layer or blocks.
    embed          a learned positional embedding: a module or its dotted name; default the module
                   named wpe, embed_positions or position_embeddings when there is one (False: none).
                   Recorded as ``embed.table`` (its weight) and ``embed.positions`` (what it
                   returned).
    tables         also record the cos/sin a transformers-style function was given.
    kwargs         passed to the forward.
    """
    torch = _torch()
    if position_ids is None:
        position_ids = derive_position_ids(input_ids, attention_mask)
    call = _forward_arguments(model, input_ids, torch.as_tensor(position_ids), attention_mask,
                              kwargs)
    with record(model, layers=layers, embed=embed, functions=functions, rotary=rotary,
                tables=tables) as recording, torch.no_grad():
        model(input_ids, **call)
    return recording.trace(position_ids, attention_mask)


class Recording:
    """What pev.torch.record saw while its block ran (the first forward's rotations)."""

    def __init__(self, rec, indices, tensors, dtypes):
        self._rec, self._indices = rec, indices
        self._tensors, self._dtypes = tensors, dtypes

    @property
    def positions(self):
        """The positions the first per-layer rotary module was called with (engine-style), or
        None."""
        return self._rec.positions

    def trace(self, position_ids=None, attention_mask=None):
        """The pev.torch.Trace: `position_ids` as the model was given them (default: the positions
        an engine-style rotary module received), `attention_mask` when there is one."""
        torch = _torch()
        tensors, dtypes = dict(self._tensors), dict(self._dtypes)
        if position_ids is None:
            position_ids = self._rec.positions
        if position_ids is None:
            raise Error("position_ids: required (no rotary module received positions)")
        pos, _ = to_numpy(torch.as_tensor(position_ids))
        tensors["position_ids"] = pos.astype(np.int64, copy=False)
        if attention_mask is not None:
            mask, _ = to_numpy(torch.as_tensor(attention_mask))
            tensors["attention_mask"] = mask.astype(np.int64, copy=False)
        rec = self._rec
        notes, findings, unseen, layer_notes = list(rec.notes), {}, [], {}
        for i in self._indices:
            calls = rec.calls.get(i)
            if not calls:
                tensors[f"layers.{i}.none"] = np.array(1, dtype=np.int64)
                unseen.append(i)
                continue
            site, kinds, finding, note = _site(i, calls, rec.discarded, rec.watched)
            for role, a in site.items():
                tensors[f"layers.{i}.{role}"] = a
                dtypes[f"layers.{i}.{role}"] = kinds[role]
            if finding:
                findings[i] = finding
                notes.append(f"layer {i}: {finding[0]}: {finding[1]}")
            if note:
                notes.append(note)
                layer_notes[i] = [note.split(": ", 1)[1]]
        if unseen:
            notes.append(_unseen_note(unseen, rec))
            for i in unseen:
                layer_notes[i] = [f"no rotary call was seen in this layer (the tracer watched "
                                  f"functions=({', '.join(rec.watched)}) and rotary="
                                  f"{rec.rotary_names!r}; a NoPE layer has none)"]
        return Trace(tensors, dtypes=dtypes, notes=notes, num_layers=len(self._indices),
                     findings=findings, layer_notes=layer_notes)


def _unseen_note(layers, rec):
    """Item 3 of issue 34: which layers had no rotary call, and what the tracer watched for."""
    shown = ", ".join(map(str, layers[:16])) + (f" … ({len(layers)} layers)" if len(layers) > 16
                                                else "")
    found = ", ".join(rec.patched) if rec.patched else "none of them in the layers' modules"
    return (f"no rotary call was seen in layer{'s' if len(layers) > 1 else ''} {shown}: recorded "
            "as not rotated (layers.{i}.none). The tracer watched the functions "
            f"functions=({', '.join(rec.watched)}) — found: {found} — and submodules named "
            f"rotary={rec.rotary_names!r}; a model that rotates through another function or module "
            "is recorded as not rotated: name it with functions= or rotary= (docs/python.md §9.1)")


@contextlib.contextmanager
def record(model, *, layers=None, embed=None, functions=ROTARY_FUNCTIONS, rotary="rotary_emb",
           tables=False):
    """Records the rotations of whatever forward runs inside the block — an engine's own loop
    (vLLM's generate, transformers' generate) — with the hooks and patches of pev.torch.trace;
    every call of each layer's rotation is recorded (docs/python.md §9.1: one forward). ``recording.trace(position_ids, attention_mask)``
    gives the Trace:

        with pev.torch.record(model) as recording:
            llm.generate(prompts)
        trace = recording.trace()          # positions: what the rotary modules received
    """
    layer_list = _find_layers(model, layers)
    rec = _Recorder(rotary, tables)
    tensors, dtypes = {}, {}
    indices = [_layer_index(n, layer) for n, layer in enumerate(layer_list)]
    hooks = []
    namespaces = []
    try:
        for index, layer in zip(indices, layer_list):

            def enter(module, args, index=index):
                rec.current.append(index)

            def leave(module, args, out, index=index):
                rec.current.pop()
                rec.left(index)

            hooks.append(layer.register_forward_pre_hook(enter))
            hooks.append(layer.register_forward_hook(leave))
            for m in layer.modules():
                ns = sys.modules.get(type(m).__module__)
                if ns is not None and ns not in namespaces:
                    namespaces.append(ns)
            for name, m in layer.named_modules():
                if name.rsplit(".", 1)[-1] != rotary:
                    continue
                hooks.extend(_hook_rotary_module(m, rec, index))
        embed_module = _find_embed(model, embed)
        if embed_module is not None:

            def embed_out(module, args, out):
                if "embed.positions" in tensors:
                    return
                a, d = to_numpy(out[0] if isinstance(out, (tuple, list)) else out)
                tensors["embed.positions"] = a
                dtypes["embed.positions"] = d

            hooks.append(embed_module.register_forward_hook(embed_out))
            a, d = to_numpy(embed_module.weight)
            tensors["embed.table"] = a
            dtypes["embed.table"] = d
        rec.watched = tuple(functions)
        with _patched(namespaces, functions, rec) as done, _consumption_mode(rec):
            rec.patched = sorted({f"{m.__name__}.{n}" for m, n, _ in done})
            yield Recording(rec, indices, tensors, dtypes)
    finally:
        for h in hooks:
            h.remove()


def _layer_index(n, layer):
    """A layer's index: its own layer_idx, else its attention's (transformers keeps it there),
    else its place in the list."""
    for m in (layer, *layer.modules()):
        index = getattr(m, "layer_idx", None)
        if isinstance(index, int) and not isinstance(index, bool):
            return index
    return n


def _hook_rotary_module(module, rec, index):
    """Hooks on a per-layer rotary module called (positions, q, k) -> (q, k): inputs copied before
    it runs (an in-place kernel overwrites them), outputs recorded after."""
    saved = {}

    def before(m, args):
        rec.in_module += 1
        rec.quiet += 1
        try:
            saved["args"] = tuple(_clone(a) for a in args)
        finally:
            rec.quiet -= 1
        saved["given"] = args

    def after(m, args, out):
        rec.in_module -= 1
        a = saved.pop("args", args)
        if len(a) < 3 or not isinstance(out, (tuple, list)) or len(out) < 2:
            rec.notes.append(f"layer {index}: rotary module {type(m).__name__} was not called "
                             "(positions, q, k) -> (q, k); not recorded")
            return
        if rec.positions is None:
            rec.positions = _clone(a[0])
        given = saved.pop("given", args)
        rec.record(index, type(m).__name__, a[1], a[2], out[0], out[1],
                   used=((given[1], given[2]), (out[0], out[1])))

    return [module.register_forward_pre_hook(before), module.register_forward_hook(after)]
