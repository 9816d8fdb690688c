"""The on-policy learners' batch: `LearnerBase.prepare_batch`'s time-major trajectories as one
typed structure of tensors (`surge.data.batch.TensorTuple`), completed in its stage fields by
`train_batch` (`_mask_stale`, GAE, the central value).

The learner reads attributes (`b.rewards`); plug-ins, tests and benchmarks may keep reading it as
the dict it was (`b["rewards"]`, `"valids" in b`, `b.items()`, `dict(b)`, `b["x"] = t`): a field
that is None is absent in that view, and a name that is not a field (an algorithm's own buffer
field) lives in `extra`."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from torch import Tensor

from surge.data.batch import TensorTuple
from surge.data.trajectory import Tree

_MISSING = object()


@dataclass(slots=True, eq=False)
class TrajectoryBatch(TensorTuple):
    """`N` trajectories of `T` steps, time-major. Not frozen: `train_batch` adds its stage fields.

    Fields of `prepare_batch` (`LearnerBase.prepare_batch`):
        obs: `[T+1, N, ...]` as stored (a dict of them for a Dict space), the last row the
            bootstrap observation; the actor's part only with a central value (`cv_state`).
        rnn_states: `[T+1, N, state]` float32 (state 0 without an RNN).
        actions: `[T, N, ...]` as the action space gives them.
        rewards: `[T, N]` float32, shaped (`shaped_rewards`).
        terminated, truncated: `[T, N]` float32, the env's flags as 0/1.
        is_active: `[T, N]` bool; behavior_version `[T, N]` int64, the acting policy's version.
            `_mask_stale` consumes both (None afterwards).
        acting_policy: `[T, N]` int8, with several policies only (consumed by `_mask_stale`).
    An algorithm's buffer fields (`FieldSpec`s) under the learner's names:
        old_values: `[T, N]` float32, the behavior critic's values (buffer field `values`).
        logits: `[T, N, num_logits]` float32, the behavior policy's (buffer `action_logits`).
        behavior_log_probs: `[T, N]` float32.
        actor_ids: `[N]` int64, the slots' actors (replay learners: the replay columns).
        extra: `{name: [T, N, ...]}`, the fields of a plug-in algorithm that are not these.
    Stage fields (None until `train_batch` sets them):
        rnn_resets: `[T, N]` float32, 1 where the core resets its state after the step.
        own_active: `[T, N]` bool, active steps of this learner's policy; valids `[T, N]`
            float32, those not too stale; valid_fraction a `[]` float32 tensor, their share.
        lag: `[T, N]` float32, or `[n]` (this policy's steps) with several policies.
        advantages, targets: `[T, N]` float32 (GAE's; targets normalised with the returns).
        cv_state: `[T+1, N, ...]`, the central value's state (moved out of `obs`).
        cv_values: `[T+1, N]` float32, the central value's values; boot_values `[1, N]` float32,
            the bootstrap value GAE takes instead of the actor-critic's.

    The fields do not share one layout (`[T(+1), N]`, `[N]`, `[]`): index the parts a step
    needs (`surge.algorithms.appo.units.PPOUnits` is the minibatch's typed batch).
    """

    obs: Tree
    rnn_states: Tensor
    actions: Tensor
    rewards: Tensor
    terminated: Tensor
    truncated: Tensor
    is_active: Tensor | None
    behavior_version: Tensor | None
    acting_policy: Tensor | None = None
    old_values: Tensor | None = None
    logits: Tensor | None = None
    behavior_log_probs: Tensor | None = None
    actor_ids: Tensor | None = None
    rnn_resets: Tensor | None = None
    own_active: Tensor | None = None
    valids: Tensor | None = None
    valid_fraction: Tensor | None = None
    lag: Tensor | None = None
    advantages: Tensor | None = None
    targets: Tensor | None = None
    cv_state: Tree | None = None
    cv_values: Tensor | None = None
    boot_values: Tensor | None = None
    extra: dict[str, Tree] = field(default_factory=dict)

    @classmethod
    def from_mapping(cls, m: Mapping[str, Any] | TrajectoryBatch) -> TrajectoryBatch:
        """`m` itself when it is a TrajectoryBatch, else one built from a dict batch (as `dict(b)`
        gives it): the fields by name, other names into `extra`.

        Raises:
            KeyError: `m` lacks a required field (obs, rnn_states, actions, rewards, terminated,
                truncated, is_active, behavior_version)."""
        if isinstance(m, TrajectoryBatch):
            return m
        names = _FIELD_NAMES
        missing = [f for f in _REQUIRED if f not in m]
        if missing:
            raise KeyError(f"a trajectory batch needs {missing} (it has {sorted(m)})")
        known = {k: v for k, v in m.items() if k in names}
        return cls(**known, extra={k: v for k, v in m.items() if k not in names})

    # the dict view of plug-ins, tests and benchmarks (the learner reads attributes) --------------
    def __getitem__(self, idx: Any) -> Any:  # type: ignore[override]
        """A name: that field (KeyError when it is None) or `extra`'s entry; else `TensorTuple`'s
        index of every field."""
        if type(idx) is not str:
            return self.map(lambda x: x[idx])
        if idx in _FIELD_NAMES:
            v = getattr(self, idx)
            if v is None:
                raise KeyError(idx)
            return v
        return self.extra[idx]

    def __setitem__(self, name: str, value: Any) -> None:
        """Sets a field, or `extra[name]` for a name that is not one."""
        if name in _FIELD_NAMES:
            setattr(self, name, value)
        else:
            self.extra[name] = value

    def __contains__(self, name: object) -> bool:
        if name in _FIELD_NAMES:
            return getattr(self, name) is not None  # type: ignore[arg-type]
        return name in self.extra

    def get(self, name: str, default: Any = None) -> Any:
        return self[name] if name in self else default

    def pop(self, name: str, default: Any = _MISSING) -> Any:
        """Removes a field (it becomes None) or an `extra` entry and returns it.

        Raises:
            KeyError: `name` is absent and no default is given."""
        if name not in self:
            if default is _MISSING:
                raise KeyError(name)
            return default
        value = self[name]
        if name in _FIELD_NAMES:
            setattr(self, name, None)
        else:
            del self.extra[name]
        return value

    def keys(self) -> list[str]:
        """The fields present (not None) in declaration order, then `extra`'s names."""
        return [n for n in _FIELD_ORDER if getattr(self, n) is not None] + list(self.extra)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        return len(self.keys())

    def items(self) -> list[tuple[str, Any]]:
        return [(k, self[k]) for k in self.keys()]

    def values(self) -> list[Any]:
        return [self[k] for k in self.keys()]


_FIELD_ORDER = tuple(f.name for f in fields(TrajectoryBatch) if f.name != "extra")
_FIELD_NAMES = frozenset(_FIELD_ORDER)
_REQUIRED = (
    "obs",
    "rnn_states",
    "actions",
    "rewards",
    "terminated",
    "truncated",
    "is_active",
    "behavior_version",
)
