"""The typed batch (`surge.data.batch.TensorTuple`): one index operation over every field, optional
fields kept None, dict fields indexed leaf by leaf, frozen; and APPO's minibatch units
(`PPOUnits`) gathered by the learner's `_columns` as each tensor would be on its own."""

import dataclasses
from dataclasses import dataclass

import pytest
import torch
from torch import Tensor

from surge.algorithms.appo.learner import _columns
from surge.algorithms.appo.units import PPOUnits
from surge.data.batch import TensorTuple


@dataclass(frozen=True, slots=True)
class _Steps(TensorTuple):
    rewards: Tensor  # [T, B]
    obs: dict  # {"image": [T, B, 3], "state": [T, B]}
    masks: Tensor | None = None  # [T, B] bool


def _steps(masks: bool = True) -> _Steps:
    T, B = 4, 5
    return _Steps(
        rewards=torch.arange(T * B, dtype=torch.float32).reshape(T, B),
        obs={"image": torch.randn(T, B, 3), "state": torch.randn(T, B)},
        masks=(torch.rand(T, B) < 0.5) if masks else None,
    )


@pytest.mark.parametrize("idx", [(slice(None), torch.tensor([4, 0, 2])), slice(1, 3), 2])
def test_indexing_takes_the_same_index_of_every_field(idx):
    s = _steps()
    got = s[idx]
    assert type(got) is _Steps
    assert torch.equal(got.rewards, s.rewards[idx])
    assert torch.equal(got.masks, s.masks[idx])
    assert set(got.obs) == {"image", "state"}
    for k in got.obs:
        assert torch.equal(got.obs[k], s.obs[k][idx])


def test_an_absent_optional_field_stays_none_through_indexing_and_map():
    s = _steps(masks=False)
    assert s[:, :2].masks is None
    assert s.map(lambda x: x * 2).masks is None
    assert torch.equal(s.map(lambda x: x * 2).rewards, s.rewards * 2)


def test_a_batch_is_frozen_and_replace_gives_a_new_one():
    s = _steps()
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.rewards = torch.zeros(1)  # type: ignore[misc]
    r = s.replace(masks=None)
    assert r.masks is None and s.masks is not None and r.rewards is s.rewards


def test_ppo_units_gathered_by_columns_equal_each_field_gathered_alone():
    L, U = 3, 6
    g = torch.Generator().manual_seed(0)
    f = lambda *shape: torch.randn(L, U, *shape, generator=g)  # noqa: E731
    units = PPOUnits(
        obs=torch.randn(L, U, 4, 16, 16, generator=g),  # large rows: gathered by index_select
        rnn_states=f(8),
        actions=torch.randint(0, 3, (L, U), generator=g),
        behavior_log_probs=f(),
        old_values=f(),
        logits=f(3),
        rnn_resets=f(),
        valids=f(),
        advantages=f(),
        targets=f(),
    )
    idx = torch.tensor([5, 1, 3])
    mb = units.map(_columns(idx))
    for field in dataclasses.fields(PPOUnits):
        full, got = getattr(units, field.name), getattr(mb, field.name)
        if full is None:
            assert got is None, field.name
        else:
            assert torch.equal(got, full[:, idx]), field.name
    assert mb.rewards is None and mb.cv_values is None  # V-trace's fields, absent under GAE
