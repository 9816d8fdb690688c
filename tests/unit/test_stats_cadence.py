"""Learner statistics once per second in the async placement (`surge.runtime.stats_cadence`): the
cadence decides, and a batch trained without its diagnostics takes the same optimizer steps."""

import copy

import torch

from surge.app.resolve import parse_cfg
from surge.runtime.components import build_components
from surge.runtime.serial import SerialSampler
from surge.runtime.stats_cadence import StatsCadence


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_diagnostics_are_due_once_per_interval_and_urgent_stats_go_at_once():
    clock = FakeClock()
    cadence = StatsCadence(interval=1.0, clock=clock)
    assert cadence.due()  # the first batch has them
    full = {"lr": 1e-4, "policy_loss": 0.5, "entropy": 0.7, "skipped_updates": 0.0}
    assert cadence.report(full, with_diagnostics=True) == full
    clock.now += 0.4
    assert not cadence.due()
    assert cadence.report({"lr": 1e-4, "skipped_updates": 0.0}, with_diagnostics=False) is None
    # a skipped step is reported from its own batch, with the last diagnostics
    urgent = cadence.report({"lr": 2e-4, "skipped_updates": 1.0}, with_diagnostics=False)
    assert urgent == {"lr": 2e-4, "policy_loss": 0.5, "entropy": 0.7, "skipped_updates": 1.0}
    stopped = cadence.report({"lr": 2e-4, "stopped_early": 1.0}, with_diagnostics=False)
    assert stopped is not None and stopped["stopped_early"] == 1.0
    clock.now += 0.6
    assert cadence.due()


def _batch_and_learner():
    cfg = parse_cfg(
        [
            "--env=CartPole-v1", "--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=4",
            "--rollout=16", "--batch_size=64", "--normalize_input=True", "--normalize_returns=True",
            "--decorrelate_experience_max_seconds=0", "--seed=3", "--device=cpu",
        ]
    )  # fmt: skip
    c = build_components(cfg)
    sampler, learner = SerialSampler(c), c.learners[0]
    while (slots := sampler.take(0)) is None:
        sampler.step()
    batch = learner.prepare_batch(slots)
    return c, learner, batch


def test_a_batch_without_diagnostics_trains_the_same_weights():
    """The same learner state and batch, trained with and then, from the same state restored,
    without diagnostics: equal weights, normaliser statistics and policy version, bit for bit; only
    the statistics differ. The minibatches are shuffled from the same torch seed both times."""
    c, learner, batch = _batch_and_learner()
    try:
        model_state = copy.deepcopy(learner.model.state_dict())
        learner_state = copy.deepcopy(learner.state_dict())
        again = {k: (v.clone() if torch.is_tensor(v) else copy.deepcopy(v)) for k, v in batch.items()}
        torch.manual_seed(11)
        full = learner.train_batch(batch)
        trained = copy.deepcopy(learner.model.state_dict())
        version = learner.policy_version
        learner.model.load_state_dict(model_state)
        learner.load_state_dict(learner_state)
        learner.diagnostics = False
        torch.manual_seed(11)
        light = learner.train_batch(again)
        for name, value in learner.model.state_dict().items():
            assert torch.equal(value, trained[name]), name
        assert learner.policy_version == version > 0
        keys = {"policy_loss", "entropy", "approx_kl", "clip_fraction", "policy_lag_avg"}
        assert keys <= set(full)
        assert not keys & set(light)
        for key in ("lr", "policy_version", "samples", "skipped_updates", "skipped_updates_total"):
            assert light[key] == full[key], key
    finally:
        c.close()
