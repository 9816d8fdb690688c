"""`TrajectoryBatch`: the typed batch of the on-policy learners, its one index operation and the
dict view plug-ins, tests and benchmarks read it through."""

import pytest
import torch

from surge.data.trajectory_batch import TrajectoryBatch

T, N = 4, 3


def _batch(**more):
    g = torch.Generator().manual_seed(0)
    return TrajectoryBatch(
        obs={"pixels": torch.randn(T + 1, N, 2, generator=g), "vec": torch.randn(T + 1, N, 5, generator=g)},
        rnn_states=torch.randn(T + 1, N, 6, generator=g),
        actions=torch.randint(3, (T, N), generator=g),
        rewards=torch.randn(T, N, generator=g),
        terminated=torch.zeros(T, N),
        truncated=torch.zeros(T, N),
        is_active=torch.ones(T, N, dtype=torch.bool),
        behavior_version=torch.zeros(T, N, dtype=torch.int64),
        **more,
    )


def test_one_index_takes_the_columns_of_every_field_extra_included():
    b = _batch(old_values=torch.randn(T, N), extra={"my_field": torch.randn(T, N, 2)})
    idx = torch.tensor([2, 0])
    mb = b[:, idx]
    assert isinstance(mb, TrajectoryBatch)
    # reference: each tensor's columns picked one by one
    pick = lambda x: torch.stack([x[:, int(i)] for i in idx], dim=1)  # noqa: E731
    for name in ("rnn_states", "actions", "rewards", "terminated", "is_active", "old_values"):
        assert torch.equal(getattr(mb, name), pick(getattr(b, name))), name
    assert torch.equal(mb.obs["vec"], pick(b.obs["vec"])) and torch.equal(
        mb.obs["pixels"], pick(b.obs["pixels"])
    )
    assert torch.equal(mb.extra["my_field"], pick(b.extra["my_field"]))
    assert mb.logits is None and mb.targets is None  # absent fields stay absent


def test_the_dict_view_holds_the_fields_present_and_the_extra_names():
    b = _batch(extra={"my_field": torch.ones(T, N)})
    assert "acting_policy" not in b and "valids" not in b and "my_field" in b and "rewards" in b
    with pytest.raises(KeyError):
        b["valids"]  # a stage field not set yet reads as a missing key, as in the dict batch
    b["valids"] = torch.ones(T, N)  # a declared field: the attribute
    b["plugin_stat"] = torch.zeros(T, N)  # any other name: extra
    assert b.valids is b["valids"] and b.extra["plugin_stat"] is b["plugin_stat"]
    assert b.keys() == [
        "obs",
        "rnn_states",
        "actions",
        "rewards",
        "terminated",
        "truncated",
        "is_active",
        "behavior_version",
        "valids",
        "my_field",
        "plugin_stat",
    ]
    assert [k for k, _ in b.items()] == list(b) == b.keys() and len(b) == 11
    assert b.pop("is_active").dtype == torch.bool and b.is_active is None and "is_active" not in b
    assert b.pop("boot_values", None) is None and b.get("lag", 7) == 7
    with pytest.raises(KeyError):
        b.pop("lag")


def test_a_dict_of_its_names_converts_back_to_the_same_tensors():
    b = _batch(old_values=torch.randn(T, N), extra={"my_field": torch.ones(T, N)})
    d = dict(b)
    assert set(d) == {*b.keys()} and "extra" not in d
    back = TrajectoryBatch.from_mapping(d)
    assert all(back[k] is b[k] for k in b.keys() if k != "obs") and back.obs is b.obs
    assert back.extra == {"my_field": b.extra["my_field"]}
    assert TrajectoryBatch.from_mapping(b) is b  # already typed: no copy
    del d["behavior_version"], d["rnn_states"]
    with pytest.raises(KeyError, match=r"\['rnn_states', 'behavior_version'\]"):
        TrajectoryBatch.from_mapping(d)
