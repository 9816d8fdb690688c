"""SharedWeights: the learner publishes its model's state and policy_version in shared memory; each
inference worker reads the version before every batch and copies the state when it changed."""

import pickle
from multiprocessing.reduction import ForkingPickler

import pytest
import torch
from torch import nn

import surge.runtime.shared_state as shared_state
from surge.runtime.shared_state import SharedWeights


def _model(seed: int) -> nn.Module:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(4, 8), nn.BatchNorm1d(8), nn.Linear(8, 2))


def test_a_published_state_loads_into_another_model_with_its_version():
    learner, actor = _model(0), _model(1)
    weights = SharedWeights(learner)
    weights.publish(learner, policy_version=5)
    assert weights.read_version() == 5
    assert weights.load_into(actor) == 5
    for a, b in zip(learner.state_dict().values(), actor.state_dict().values(), strict=True):
        if a.is_floating_point():
            assert torch.equal(a, b)


def test_a_copy_in_another_process_sees_later_versions():
    """A child gets the object pickled at spawn; the version it reads must be the shared one, even
    when the parent had read the version (and so made its own fast view) before pickling."""
    learner = _model(0)
    weights = SharedWeights(learner)
    assert weights.read_version() == 0
    received = pickle.loads(ForkingPickler.dumps(weights))  # as multiprocessing sends it
    weights.publish(learner, policy_version=3)
    assert received.read_version() == 3
    assert received.load_into(_model(1)) == 3


def test_a_state_being_written_is_not_loaded():
    """While the writer is mid-copy (the sequence number odd), a reader gets None after its
    timeout instead of a torn copy's version."""
    learner = _model(0)
    weights = SharedWeights(learner)
    weights.publish(learner, policy_version=1)
    weights.seq[0] += 1  # a writer that died mid-publish
    assert weights.load_into(_model(1), timeout=0.01) is None


def test_later_publishes_carry_in_place_updates_to_the_same_reader():
    """Each model's tensors are found once and kept: what the second publish and load carry must
    still be the model's current state after an optimizer step, a `load_state_dict` and an
    in-place buffer update, not the first call's."""
    learner, actor = _model(0), _model(1)
    weights = SharedWeights(learner)
    weights.publish(learner, policy_version=1)
    assert weights.load_into(actor) == 1
    opt = torch.optim.SGD(learner.parameters(), lr=0.5)
    learner(torch.randn(16, 4)).pow(2).sum().backward()
    opt.step()
    learner.load_state_dict({**learner.state_dict(), "2.bias": torch.tensor([3.0, -3.0])})
    learner[1].running_mean.add_(7.0)
    weights.publish(learner, policy_version=2)
    assert weights.load_into(actor) == 2
    for a, b in zip(learner.state_dict().values(), actor.state_dict().values(), strict=True):
        if a.is_floating_point():
            assert torch.equal(a, b)
    assert torch.equal(actor[2].bias, torch.tensor([3.0, -3.0]))


def test_a_model_of_another_layout_is_refused():
    weights = SharedWeights(_model(0))
    other = nn.Sequential(nn.Linear(4, 9), nn.Linear(9, 2))
    with pytest.raises(ValueError, match="another layout"):
        weights.publish(other, policy_version=1)
    with pytest.raises(ValueError, match="another layout"):
        weights.load_into(other)


def test_a_model_on_one_accelerator_crosses_as_one_flat_transfer_with_the_same_state(monkeypatch):
    # a GPU model's state is gathered into one flat tensor on its device and crosses in one copy
    # (`_Staging`); forced here on CPU tensors, whose per-tensor path is the reference
    learner, actor = _model(0), _model(1)
    learner(torch.randn(5, 4))  # batch-norm statistics move off their initial values
    reference = SharedWeights(learner)
    reference.publish(learner, policy_version=2)
    monkeypatch.setattr(shared_state, "_stages", lambda tensors: True)
    staged = SharedWeights(learner)
    staged.publish(learner, policy_version=2)
    assert torch.equal(staged.flat, reference.flat)
    assert staged.load_into(actor) == 2
    for a, b in zip(learner.state_dict().values(), actor.state_dict().values(), strict=True):
        if a.is_floating_point():
            assert torch.equal(a, b)
    # in-place updates after the first call travel too (the staging keeps the model's tensors)
    with torch.no_grad():
        learner[0].weight.add_(1.0)
    staged.publish(learner, policy_version=3)
    assert staged.load_into(actor) == 3
    assert torch.equal(actor[0].weight, learner[0].weight)
