"""An object graph written as plain values, and read back into an object of the same shape.

`encode(obj)` turns an object (an env with its wrappers) into a tree of `None`, bools, ints, floats,
strings, bytes, tensors, lists, tuples, sets and tagged dicts (`{"k": kind, ...}`): what
`torch.load(weights_only=True)` loads without calling any function named by the file.
`decode(node, fresh)` writes such a tree back into `fresh`, an object this run built the same way
(the env the run's own factory made): every attribute of every object is set from the tree, so
`fresh` ends in the saved object's state.

Reading constructs no object of a class named by the file. Objects are never created, only
updated in place: the file must say the same class as the object already there. The only things
created are containers (list, dict, deque, set), numpy arrays and scalars of numeric dtypes, and
numpy / Python random generators of a fixed list of kinds. Functions, classes and modules are never
read: the file only records which one was there, and reading checks that the same one is (they are
the env's configuration, not its state).

What cannot be written (an object with neither `__dict__` nor `__slots__`, such as a C extension's
handle, a numpy array of Python objects) raises `PlainStateUnsupported` naming its attribute path.
A tree that does not fit `fresh` (another class, a missing object) raises `PlainStateMismatch`.
`types` adds kinds for C objects whose state their library can export (the ALE emulator's).
"""

from __future__ import annotations

import collections
import enum
import functools
import random
import re
import types as pytypes
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch


class PlainStateUnsupported(Exception):
    """An object of the graph cannot be written as plain values (the message names its path)."""


class PlainStateMismatch(ValueError):
    """A saved tree does not fit the object it is read into (the message names the path)."""


@dataclass(frozen=True)
class Extra:
    """A kind for a C object: `save(obj)` returns plain values, `load(fresh, values)` puts them into
    the existing `fresh` (`apply=False`: only checks that they would load)."""

    save: Callable[[Any], Any]
    load: Callable[[Any, Any, bool], None]


_PLAIN = (type(None), bool, int, float, str, bytes)  # exact types, with tensors: written as they are
_PRIMITIVE = (*_PLAIN, torch.Tensor)
_NUMERIC_KINDS = "biufc"  # numpy dtype kinds read back: bool, int, uint, float, complex
_DTYPE = re.compile(r"^[<>|=][biufc]\d{1,2}$")
_BIT_GENERATORS = {"PCG64", "PCG64DXSM", "MT19937", "Philox", "SFC64"}
_CALLABLE = (
    pytypes.FunctionType,
    pytypes.BuiltinFunctionType,
    pytypes.MethodType,
    pytypes.ModuleType,
    type,
    functools.partial,
)
_MISSING = object()


def type_name(obj: Any) -> str:
    t = type(obj)  # a SWIG type (Box2D) has no __module__
    return f"{getattr(t, '__module__', '?')}.{getattr(t, '__qualname__', t.__name__)}"


def _callable_name(obj: Any) -> str:
    if isinstance(obj, pytypes.ModuleType):
        return f"module {obj.__name__}"
    if isinstance(obj, functools.partial):
        return f"partial {_callable_name(obj.func)}"
    return f"{type(obj).__name__} {getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '?')}"


def _slot_names(t: type) -> list[str]:
    names = []
    for klass in t.__mro__:
        slots = klass.__dict__.get("__slots__", ())
        for s in (slots,) if isinstance(slots, str) else slots:
            if s not in ("__dict__", "__weakref__") and s not in names:
                names.append(s)
    return names


class _Encoder:
    def __init__(self, extras: dict[str, Extra]):
        self.extras = extras
        self.seen: dict[int, str] = {}
        self.alive: list[Any] = []  # keeps every object in `seen` alive: its id stays its own

    def __call__(self, obj: Any, path: str) -> Any:
        if isinstance(obj, np.generic):  # before the primitives: np.float64 is a float
            return {"k": "npscalar", "dtype": self._dtype(obj.dtype, path), "value": obj.item()}
        if isinstance(obj, enum.Enum):  # before the primitives: an IntEnum is an int
            return {"k": "enum", "type": type_name(obj), "name": obj.name}
        if type(obj) in _PLAIN or isinstance(obj, torch.Tensor):  # exactly: a subclass pickles by name
            return obj
        if isinstance(obj, _CALLABLE):
            return {"k": "same", "what": _callable_name(obj)}
        if isinstance(obj, np.dtype):
            return {"k": "dtype", "str": self._dtype(obj, path)}
        if isinstance(obj, tuple):
            return tuple(self(v, f"{path}[{i}]") for i, v in enumerate(obj))
        if isinstance(obj, (set, frozenset)):
            items = sorted(obj, key=repr)
            if not all(type(v) in _PLAIN for v in items):
                raise PlainStateUnsupported(f"{path}: a set of other values than numbers and strings")
            return {"k": "frozenset" if isinstance(obj, frozenset) else "set", "items": items}
        if id(obj) in self.seen:
            return {"k": "ref", "path": self.seen[id(obj)]}
        self.seen[id(obj)] = path
        self.alive.append(obj)
        return self._mutable(obj, path)

    def _dtype(self, dtype: np.dtype, path: str) -> str:
        if dtype.kind not in _NUMERIC_KINDS:
            raise PlainStateUnsupported(f"{path}: numpy dtype {dtype} (only numbers are saved)")
        return dtype.str

    def _mutable(self, obj: Any, path: str) -> Any:
        if isinstance(obj, list):
            return {"k": "list", "items": [self(v, f"{path}[{i}]") for i, v in enumerate(obj)]}
        if isinstance(obj, collections.deque):
            items = [self(v, f"{path}[{i}]") for i, v in enumerate(obj)]
            return {"k": "deque", "items": items, "maxlen": obj.maxlen}
        if isinstance(obj, dict):
            items = [[self(k, f"{path}<key>"), self(v, f"{path}[{k!r}]")] for k, v in obj.items()]
            return {"k": "dict", "items": items}
        if isinstance(obj, np.ndarray):
            dtype = self._dtype(obj.dtype, path)
            raw = np.ascontiguousarray(obj).tobytes()
            data = (
                torch.frombuffer(bytearray(raw), dtype=torch.uint8)
                if raw
                else torch.empty(0, dtype=torch.uint8)
            )
            return {"k": "ndarray", "dtype": dtype, "shape": list(obj.shape), "data": data}
        if isinstance(obj, np.random.Generator):
            name = type(obj.bit_generator).__name__
            if name not in _BIT_GENERATORS:
                raise PlainStateUnsupported(f"{path}: numpy bit generator {name}")
            return {"k": "generator", "state": self(obj.bit_generator.state, f"{path}.state")}
        if isinstance(obj, np.random.RandomState):
            return {"k": "randomstate", "state": self(obj.get_state(legacy=False), f"{path}.state")}
        if type(obj) is random.Random:
            return {"k": "pyrandom", "state": self(obj.getstate(), f"{path}.state")}
        extra = self.extras.get(type_name(obj))
        if extra is not None:
            return {"k": "extra", "type": type_name(obj), "state": extra.save(obj)}
        return self._object(obj, path)

    def _object(self, obj: Any, path: str) -> dict[str, Any]:
        attrs = dict(getattr(obj, "__dict__", {}))
        slots = _slot_names(type(obj))
        if not attrs and not slots and not hasattr(obj, "__dict__"):
            raise PlainStateUnsupported(
                f"{path} is a {type_name(obj)}, an object whose state Python cannot see (no __dict__ or __slots__)"
            )
        for s in slots:
            if hasattr(obj, s):
                attrs[s] = getattr(obj, s)
        special = [n for n in attrs if _is_dunder(n)]
        if special:  # never set when reading (`__class__`, `__dict__`...): refused on both sides
            raise PlainStateUnsupported(f"{path}: a {type_name(obj)} with the attribute {special[0]}")
        return {
            "k": "object",
            "type": type_name(obj),
            "attrs": {n: self(v, f"{path}.{n}") for n, v in attrs.items()},
        }


def encode(obj: Any, extras: dict[str, Extra] | None = None, path: str = "env") -> Any:
    """`obj`'s state as plain values (see the module docstring).

    Raises:
        PlainStateUnsupported: an object of the graph cannot be written (the message names it).
    """
    return _Encoder(extras or {})(obj, path)


class _Decoder:
    def __init__(self, extras: dict[str, Extra], apply: bool):
        self.extras, self.apply = extras, apply
        self.at: dict[str, Any] = {}  # path -> the object now there (for "ref")

    def fail(self, path: str, why: str) -> PlainStateMismatch:
        return PlainStateMismatch(f"{path}: {why}")

    def __call__(self, node: Any, fresh: Any, path: str) -> Any:
        if isinstance(node, _PRIMITIVE):
            return node
        if isinstance(node, tuple):
            fresh_items = (
                fresh if isinstance(fresh, tuple) and len(fresh) == len(node) else (_MISSING,) * len(node)
            )
            return tuple(
                self(v, f, f"{path}[{i}]") for i, (v, f) in enumerate(zip(node, fresh_items, strict=True))
            )
        if isinstance(node, (list, set)):  # never written bare: a file not written by `encode`
            raise self.fail(path, f"a bare {type(node).__name__} (not written by surge)")
        if not isinstance(node, dict) or not isinstance(node.get("k"), str):
            raise self.fail(path, f"unexpected {type(node).__name__} (not written by surge)")
        kind = node["k"]
        method = getattr(self, f"_{kind}", None)
        if method is None:
            raise self.fail(path, f"unknown kind {kind!r}")
        try:
            out = method(node, fresh, path)
        except PlainStateMismatch:
            raise
        except (KeyError, TypeError, IndexError, ValueError, AttributeError, OverflowError) as e:
            raise self.fail(path, f"malformed {kind} entry ({type(e).__name__}: {e})") from e
        if kind not in ("same", "dtype", "npscalar", "enum", "set", "frozenset"):
            self.at[path] = out
        return out

    def _same(self, node: dict, fresh: Any, path: str) -> Any:
        if fresh is _MISSING or not isinstance(fresh, _CALLABLE) or _callable_name(fresh) != node["what"]:
            got = (
                "nothing"
                if fresh is _MISSING
                else _callable_name(fresh)
                if isinstance(fresh, _CALLABLE)
                else type_name(fresh)
            )
            raise self.fail(path, f"saved with {node['what']}, this run's env has {got}")
        return fresh

    def _dtype(self, node: dict, fresh: Any, path: str) -> np.dtype:
        s = node["str"]
        if not isinstance(s, str) or not _DTYPE.match(s):
            raise self.fail(path, f"dtype {s!r} is not a numeric numpy dtype")
        return fresh if isinstance(fresh, np.dtype) and fresh.str == s else np.dtype(s)

    def _npscalar(self, node: dict, fresh: Any, path: str) -> Any:
        dtype = self._dtype({"str": node["dtype"]}, None, path)
        if not isinstance(node["value"], (bool, int, float, complex)):
            raise self.fail(path, f"numpy scalar value {type(node['value']).__name__}")
        return dtype.type(node["value"])

    def _enum(self, node: dict, fresh: Any, path: str) -> Any:
        if not isinstance(fresh, enum.Enum) or type_name(fresh) != node["type"]:
            raise self.fail(path, f"saved a {node['type']}, this run's env has {type_name(fresh)}")
        return type(fresh)[node["name"]]

    def _set(self, node: dict, fresh: Any, path: str) -> Any:
        items = node["items"]
        if not all(type(v) in _PLAIN for v in items):
            raise self.fail(path, "a set of other values than numbers and strings")
        return set(items)

    def _frozenset(self, node: dict, fresh: Any, path: str) -> Any:
        return frozenset(self._set(node, fresh, path))

    def _ref(self, node: dict, fresh: Any, path: str) -> Any:
        if node["path"] not in self.at:
            raise self.fail(path, f"refers to {node['path']!r}, not read before it")
        return self.at[node["path"]]

    def _list(self, node: dict, fresh: Any, path: str) -> list:
        old = fresh if isinstance(fresh, list) else []
        return [
            self(v, old[i] if i < len(old) else _MISSING, f"{path}[{i}]") for i, v in enumerate(node["items"])
        ]

    def _deque(self, node: dict, fresh: Any, path: str) -> collections.deque:
        old = list(fresh) if isinstance(fresh, collections.deque) else []
        items = [
            self(v, old[i] if i < len(old) else _MISSING, f"{path}[{i}]") for i, v in enumerate(node["items"])
        ]
        maxlen = node["maxlen"]
        if maxlen is not None and not isinstance(maxlen, int):
            raise self.fail(path, "deque maxlen is not an int")
        return collections.deque(items, maxlen=maxlen)

    def _dict(self, node: dict, fresh: Any, path: str) -> dict:
        old = fresh if isinstance(fresh, dict) else {}
        out = {}
        for k_node, v_node in node["items"]:
            k = self(k_node, _MISSING, f"{path}<key>")
            try:
                hash(k)
            except TypeError as e:
                raise self.fail(path, f"unhashable key {type(k).__name__}") from e
            out[k] = self(v_node, old.get(k, _MISSING), f"{path}[{k!r}]")
        return out

    def _ndarray(self, node: dict, fresh: Any, path: str) -> np.ndarray:
        dtype = self._dtype({"str": node["dtype"]}, None, path)
        shape, data = [int(n) for n in node["shape"]], node["data"]
        if not isinstance(data, torch.Tensor) or data.dtype != torch.uint8 or data.dim() != 1:
            raise self.fail(path, "array data is not a flat uint8 tensor")
        if data.numel() != int(np.prod(shape)) * dtype.itemsize:
            raise self.fail(
                path, f"array of shape {shape} and dtype {dtype} does not fit {data.numel()} bytes"
            )
        return np.frombuffer(data.numpy().tobytes(), dtype=dtype).reshape(shape).copy()

    def _generator(self, node: dict, fresh: Any, path: str) -> np.random.Generator:
        state = self(node["state"], _MISSING, f"{path}.state")
        name = state.get("bit_generator") if isinstance(state, dict) else None
        if name not in _BIT_GENERATORS:
            raise self.fail(path, f"bit generator {name!r} is not one of {sorted(_BIT_GENERATORS)}")
        same = isinstance(fresh, np.random.Generator) and type(fresh.bit_generator).__name__ == name
        gen = fresh if same and self.apply else np.random.Generator(getattr(np.random, name)())
        try:
            gen.bit_generator.state = state
        except (ValueError, TypeError, KeyError, OverflowError) as e:
            raise self.fail(path, f"bad {name} state ({e})") from e
        return gen

    def _randomstate(self, node: dict, fresh: Any, path: str) -> np.random.RandomState:
        state = self(node["state"], _MISSING, f"{path}.state")
        rs = fresh if isinstance(fresh, np.random.RandomState) and self.apply else np.random.RandomState()
        try:
            rs.set_state(state)
        except (ValueError, TypeError, KeyError, OverflowError) as e:
            raise self.fail(path, f"bad RandomState state ({e})") from e
        return rs

    def _pyrandom(self, node: dict, fresh: Any, path: str) -> random.Random:
        state = self(node["state"], _MISSING, f"{path}.state")
        r = fresh if type(fresh) is random.Random and self.apply else random.Random()
        try:
            r.setstate(state)
        except (ValueError, TypeError) as e:
            raise self.fail(path, f"bad random.Random state ({e})") from e
        return r

    def _extra(self, node: dict, fresh: Any, path: str) -> Any:
        extra = self.extras.get(node["type"])
        if extra is None or type_name(fresh) != node["type"]:
            raise self.fail(path, f"saved a {node['type']}, this run's env has {type_name(fresh)}")
        try:
            extra.load(fresh, node["state"], self.apply)
        except Exception as e:  # noqa: BLE001 - the library refused the state: say where
            raise self.fail(path, f"{node['type']} refused its saved state ({type(e).__name__}: {e})") from e
        return fresh

    def _object(self, node: dict, fresh: Any, path: str) -> Any:
        if fresh is _MISSING or type_name(fresh) != node["type"]:
            got = "nothing" if fresh is _MISSING else type_name(fresh)
            raise self.fail(path, f"saved a {node['type']}, this run's env has {got} there")
        attrs = node["attrs"]
        if not isinstance(attrs, dict):
            raise self.fail(path, "attributes are not a dict")
        values = {}
        for name, v in attrs.items():
            if not isinstance(name, str) or not name.isidentifier() or _is_dunder(name):
                raise self.fail(path, f"attribute name {name!r} is not a plain attribute's")
            values[name] = self(v, _get(fresh, name), f"{path}.{name}")
        if self.apply:
            slots = set(_slot_names(type(fresh)))
            d = getattr(fresh, "__dict__", None)
            for name, v in values.items():
                if name in slots or d is None:
                    object.__setattr__(fresh, name, v)
                else:
                    d[name] = v  # as pickle does: no __setattr__ or property runs
        return fresh


def _is_dunder(name: str) -> bool:
    return name.startswith("__") and name.endswith("__")


def _get(obj: Any, name: str) -> Any:
    d = getattr(obj, "__dict__", None)
    if d is not None and name in d:
        return d[name]
    if name in _slot_names(type(obj)):
        return getattr(obj, name, _MISSING)
    return _MISSING


def check(node: Any, fresh: Any, extras: dict[str, Extra] | None = None, path: str = "env") -> None:
    """Checks that `decode(node, fresh)` would succeed, changing nothing.

    Raises:
        PlainStateMismatch: as `decode`.
    """
    _Decoder(extras or {}, apply=False)(node, fresh, path)


def decode(node: Any, fresh: Any, extras: dict[str, Extra] | None = None, path: str = "env") -> Any:
    """Writes the tree of `encode` into `fresh` (in place) and returns it. Checks the whole tree
    first, so a tree that does not fit leaves `fresh` untouched.

    Raises:
        PlainStateMismatch: the tree does not fit `fresh` (another class at a path, a missing
            object, a malformed entry); the message names the path.
    """
    _Decoder(extras or {}, apply=False)(node, fresh, path)
    return _Decoder(extras or {}, apply=True)(node, fresh, path)
