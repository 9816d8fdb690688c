"""The rollout worker's loop over single-agent envs (`RolloutWorker._step_single_agent_envs`, one
`SingleAgentAsMultiAgent.step_one` per env) gives what the general multi-agent loop gives: a seeded
serial run trains to the same weights, frames and episode statistics either way, through env faults
(`FlakyStep` raises in 1% of the steps) and decorrelation's random starts."""

from pathlib import Path

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.sampling.rollout_worker import RolloutWorker


def _run(tmp_path: Path, name: str) -> dict:
    cfg = parse_cfg(
        [
            "--env=CartPole-v1",
            f"--experiment={name}",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--worker_num_splits=2",
            "--rollout=16",
            "--batch_size=64",
            "--ppo_epochs=1",
            "--encoder_mlp_layers",
            "16",
            "--hidden_size=16",
            "--env_wrappers=surge.envs.fault_injection:FlakyStep",
            "--decorrelate_envs_on_one_worker=True",
            "--seed=11",
            "--train_for_env_steps=6000",
        ]
    )
    assert train(cfg) == "done"
    ckpt = sorted((tmp_path / name / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    return torch.load(ckpt, weights_only=True)


def test_single_agent_loop_trains_exactly_as_the_general_loop(tmp_path, monkeypatch):
    calls = {"single": 0, "faults": 0}
    single, replace = RolloutWorker._step_single_agent_envs, RolloutWorker._replace_env

    def counted_single(self, split, actions):
        calls["single"] += 1
        return single(self, split, actions)

    def counted_replace(self, split, e_idx, error):
        calls["faults"] += 1
        return replace(self, split, e_idx, error)

    monkeypatch.setattr(RolloutWorker, "_step_single_agent_envs", counted_single)
    monkeypatch.setattr(RolloutWorker, "_replace_env", counted_replace)
    fast = _run(tmp_path, "fast")
    assert calls["single"] > 0 and calls["faults"] > 0, calls  # the path ran, through faults

    monkeypatch.setattr(RolloutWorker, "_step_single_agent_envs", RolloutWorker._step_multi_agent_envs)
    general = _run(tmp_path, "general")

    assert fast["env_frames"] == general["env_frames"]
    assert fast["episodes"] == general["episodes"]  # counted, random starts left out, in both
    assert fast["episode_returns"] == general["episode_returns"] and len(fast["episode_returns"]) > 10
    assert fast["episode_lengths"] == general["episode_lengths"]
    assert fast["model"].keys() == general["model"].keys()
    for k, v in fast["model"].items():
        assert torch.equal(v, general["model"][k]), k


@pytest.mark.parametrize("box", [False, True], ids=["discrete", "box"])
def test_step_one_is_step_without_the_lists(box):
    import gymnasium as gym
    import numpy as np

    from surge.envs.multi_agent import SingleAgentAsMultiAgent

    name = "Pendulum-v1" if box else "CartPole-v1"
    a, b = SingleAgentAsMultiAgent(gym.make(name)), SingleAgentAsMultiAgent(gym.make(name))
    a.reset(seed=3), b.reset(seed=3)
    rng = np.random.default_rng(0)
    for _ in range(600):  # CartPole episodes end (auto-reset); Pendulum's truncate at 200
        act = rng.uniform(-2, 2, size=(1,)).astype(np.float32) if box else np.int64(rng.integers(2))
        obs, rew, term, trunc, info = a.step_one(act)
        lobs, lrew, lterm, ltrunc, linfo = b.step([act])
        assert np.array_equal(obs, lobs[0]) and float(rew) == lrew[0]
        assert bool(term) == lterm[0] and bool(trunc) == ltrunc[0] and info.keys() == linfo[0].keys()
