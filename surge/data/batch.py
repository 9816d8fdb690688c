"""Typed batches: frozen dataclasses of tensors that are indexed as one, after rlpyt's
`namedarraytuple` (rlpyt/utils/collections.py): `batch[idx]` is the same type with `x[idx]` taken
of every field. A field's name, shape and dtype stand in its class definition; an optional field
is None when the batch does not carry it (and stays None through indexing); a field may be a
(nested) dict of tensors, e.g. a dict observation, indexed leaf by leaf.

Subclasses are `@dataclass(frozen=True, slots=True)` classes deriving from `TensorTuple` (or
`@dataclass(slots=True)` where a consumer completes the batch in its fields, as the replay
samples' `lag` and `td_errors`: `surge.replay.samples`)::

    @dataclass(frozen=True, slots=True)
    class Steps(TensorTuple):
        rewards: Tensor  # [T, B] float32
        masks: Tensor | None = None  # [T, B] bool, optional

    steps[:, idx]  # Steps with rewards[:, idx] and masks[:, idx] (or None)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar, overload

from torch import Tensor

from surge.data.trajectory import tree_map

_B = TypeVar("_B", bound="TensorTuple")


class TensorTuple:
    """Base of the typed batches (module docstring). Fields hold tensors, dicts of tensors, or None.

    Indexing and `map` build a new instance; the tensors themselves are never copied except by
    the index operation (`x[idx]` copies for a tensor index, views for slices, as torch does)."""

    __slots__ = ()
    __dataclass_fields__: ClassVar[dict[str, Any]]

    def map(self: _B, fn: Callable[[Tensor], Tensor]) -> _B:
        """The same type with `fn` applied to every tensor of every field present (None fields
        stay None); `fn` must keep a tensor a tensor."""
        values = {}
        for name in self.__dataclass_fields__:
            v = getattr(self, name)
            values[name] = None if v is None else tree_map(fn, v)
        return type(self)(**values)

    @overload
    def __getitem__(self, idx: str) -> Any: ...
    @overload
    def __getitem__(self: _B, idx: Any) -> _B: ...
    def __getitem__(self: _B, idx: Any) -> Any:
        """`x[idx]` of every field: the one index operation of a batch (e.g. `batch[:, cols]` the
        columns `cols` of `[T, B, ...]` fields, `batch[rows]` rows of `[N, ...]` ones). Every field
        present must accept `idx`: give a batch's fields a common leading layout.

        A field's name (a str, which no tensor accepts as an index) reads that field, as a dict
        batch was read: for plug-ins and tests; the engine reads attributes.

        Raises:
            KeyError: a name that is not a field."""
        if type(idx) is str:
            if idx not in self.__dataclass_fields__:
                raise KeyError(f"{type(self).__name__} has no field {idx!r}")
            return getattr(self, idx)
        return self.map(lambda x: x[idx])

    def replace(self: _B, **changes: Any) -> _B:
        """A copy with the named fields replaced (`dataclasses.replace`)."""
        return dataclasses.replace(self, **changes)
