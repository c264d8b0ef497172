"""pev.Spec: an encoding, from a SPEC string, a dict or a Hugging Face config (docs/python.md §2)."""

import json
import os
import re
import warnings
from collections.abc import Mapping

from . import _pev
from ._errors import Error, PevWarning


class Spec:
    """A validated encoding, as pev's parsers read it.

    ``Spec(x)`` accepts
      * a SPEC string ``"family[:key=value,...]"`` (strict: an unknown key or a condition that
        transformers only warns about is an error; see ``pev list``);
      * a path to a Hugging Face ``config.json`` (a ``str`` ending in ``.json``, or any
        ``os.PathLike``), validated as transformers validates it: what transformers rejects raises
        pev.Error, what it only warns about is a pev.PevWarning;
      * a dict: with a ``"family"`` key, the SPEC's keys (``{"family": "rope", "head_dim": 128}``);
        otherwise a config.json's contents (as ``json.load`` gives them);
      * an object with ``to_dict()`` (a transformers ``PretrainedConfig``), read as its dict;
      * a Spec (returned as is).
    ``layer_type`` selects the group of a per-layer-type config (default: full_attention).

    A Spec read from a config records it (path or a description, and the SHA-256 of its text) and
    every certificate made with it lists it, as ``pev certify --config`` does.
    """

    def __new__(cls, source, *, layer_type=None):
        if isinstance(source, Spec):
            if layer_type is not None:
                raise Error("layer_type: applies to a config, not to a Spec")
            return source
        return super().__new__(cls)

    def __init__(self, source, *, layer_type=None):
        if source is self:
            return
        layer = layer_type or ""
        if isinstance(source, os.PathLike) or (isinstance(source, str) and source.endswith(".json")):
            handle, warned = _pev.spec_from_config_file(os.fspath(source), layer)
        elif isinstance(source, str):
            if layer_type is not None:
                raise Error("layer_type: applies to a config, not to a SPEC string")
            handle, warned = _pev.spec_from_string(source)
        elif isinstance(source, Mapping) and "family" in source:
            if layer_type is not None:
                raise Error("layer_type: applies to a config, not to a SPEC dict")
            handle, warned = _pev.spec_from_string(_spec_string(source))
        elif isinstance(source, Mapping) or hasattr(source, "to_dict"):
            config = dict(source) if isinstance(source, Mapping) else source.to_dict()
            what = "config dict" if isinstance(source, Mapping) else type(source).__name__
            text = json.dumps(config, sort_keys=True, default=str)
            handle, warned = _pev.spec_from_config_text(text, what, layer)
        else:
            raise Error(
                "spec: expected a SPEC string, a config.json path, a dict or a pev.Spec, got "
                + type(source).__name__
            )
        for message in warned:
            warnings.warn(message, PevWarning, stacklevel=3)
        self._handle = handle
        self._info = handle.info()

    @property
    def text(self):
        """The canonical SPEC string (parses back to the same encoding)."""
        return self._handle.text

    @property
    def family(self):
        """``"rope"``, ``"sinusoidal"``, ``"learned"``, ``"alibi"``, ``"t5"`` or ``"shaw"``."""
        return self._handle.family

    @property
    def params(self):
        """The keys of the canonical SPEC string (defaults left out), with typed values."""
        # Parsed once (a callable asked for generated specs reads it at every call, docs/python.md
        # §4.2); each caller gets its own dict and lists.
        parsed = self.__dict__.get("_params")
        if parsed is None:
            parsed = self.__dict__["_params"] = _parse_items(self.text.partition(":")[2])
        return {k: list(v) if isinstance(v, list) else v for k, v in parsed.items()}

    @property
    def inputs(self):
        """The config this spec was read from: a list of (path, "config", sha256)."""
        return list(self._handle.inputs)

    def __getattr__(self, name):
        # Derived sizes: head_dim, rotary_dim, pairs, rope_type, layout, stateful (RoPE); d_model
        # (sinusoidal, learned); num_heads (ALiBi).
        info = self.__dict__.get("_info", {})
        if name in info:
            return info[name]
        raise AttributeError(f"{type(self).__name__} of family {info.get('family')!r} has no {name!r}")

    def __str__(self):
        return self.text

    def __repr__(self):
        return f"pev.Spec({self.text!r})"

    def __eq__(self, other):
        return isinstance(other, Spec) and other.text == self.text

    def __hash__(self):
        return hash(self.text)


def _value_text(key, v):
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_value_text(key, x) for x in v) + "]"
    if isinstance(v, float):
        return repr(v)
    if isinstance(v, (int, str)):
        return str(v)
    if hasattr(v, "item"):  # numpy scalars
        return _value_text(key, v.item())
    raise Error(f"spec: key {key!r}: expected a number, a bool, a string or a list, got {type(v).__name__}")


def _spec_string(d):
    items = [f"{k}={_value_text(k, v)}" for k, v in d.items() if k != "family"]
    return str(d["family"]) + (":" + ",".join(items) if items else "")


def _typed(text):
    if text.startswith("[") and text.endswith("]"):
        items = [x for x in text[1:-1].split(",") if x]
        try:  # numbers (longrope's factor lists): each an int or a float, as below
            return [int(x) if x.lstrip("-").isdigit() else float(x) for x in items]
        except ValueError:
            return [_typed(x) for x in items]
    if text in ("true", "false"):
        return text == "true"
    if text.isascii() and (text.isdigit() or (text[:1] == "-" and text[1:].isdigit())):
        return int(text)
    try:
        return float(text)
    except ValueError:
        return text


# A canonical SPEC string's items: key=value, a value a [list] (one level) or up to the next comma.
_ITEM = re.compile(r"([^=,\[\]]+)=(\[[^\]]*\]|[^,]*)")


def _parse_items(text):
    return {key: _typed(value) for key, value in _ITEM.findall(text)}
