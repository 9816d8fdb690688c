"""SAC, TD3 and DDPG through the engine on Pendulum-v1, short runs (issue 20, "every new
algorithm"), each algorithm the same checks as DQN's (tests/integration/test_dqn_engine.py):

- the serial placement resumes exactly from its checkpoint with `--save_replay_buffer`: a run cut in
  two halves ends with the weights, learner modules (critics, targets, SAC's log alpha), optimizers
  and replay counters bit for bit equal to an uninterrupted run's;
- `surge enjoy` plays the checkpoint through the algorithm's `eval_act`;
- the async placement trains `--num_policies=2`, each policy its own critics, targets and optimizers.
"""

from pathlib import Path

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.cli import main as surge_main
from surge.runtime.checkpoint import CheckpointManager

ALGOS = ["SAC", "TD3", "DDPG"]
# fmt: off
SMALL = [
    "--env=Pendulum-v1", "--num_workers=1", "--num_envs_per_worker=2", "--rollout=8",
    "--learning_starts=100", "--net_arch", "16", "16", "--batch_size=32", "--replay_ratio=0.25",
    "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False",
    "--num_torch_threads=1", "--seed=2",
]
# fmt: on
MODULES = {
    "SAC": ({"critic", "critic_target", "log_alpha"}, {"model", "critic", "ent_coef"}),
    "TD3": ({"critic", "critic_target", "actor_target"}, {"model", "critic"}),
    "DDPG": ({"critic", "critic_target", "actor_target"}, {"model", "critic"}),
}


def _train(cfg) -> str:
    threads = torch.get_num_threads()
    try:
        return train(cfg)
    finally:
        torch.set_num_threads(threads)


def _latest(tmp_path: Path, exp: str, policy: int = 0) -> dict:
    state = CheckpointManager(tmp_path / exp / f"checkpoint_p{policy}").load("latest")
    assert state is not None
    return state


def _check(state: dict, algo: str) -> None:
    """The algorithm's learner modules and optimizers are in the checkpoint, every optimizer stepped."""
    modules, optimizers = MODULES[algo]
    assert set(state["learner_modules"]) == modules
    assert set(state["learner"]["optimizers"]) == optimizers
    for name in optimizers:
        assert state["learner"]["optimizers"][name]["state"], name
    assert state["learner"]["policy_version"] > 0


def _same(a, b, path: str = "") -> None:
    if isinstance(a, torch.Tensor):
        assert torch.equal(a, b), f"{path} differs"
    elif isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            _same(a[k], b[k], f"{path}.{k}")
    else:
        assert a == b, f"{path}: {a} != {b}"


@pytest.mark.slow
@pytest.mark.parametrize("algo", ALGOS)
def test_serial_resume_with_the_replay_saved_is_exact_and_enjoy_plays_it(tmp_path, algo, capsys):
    def cfg(exp: str, budget: int):
        return parse_cfg(
            [*SMALL, f"--algo={algo}", "--serial_mode=True", "--save_replay_buffer=True",
             f"--train_dir={tmp_path}", f"--experiment={exp}", f"--train_for_env_steps={budget}"]
        )  # fmt: skip

    n = 800
    assert _train(cfg("whole", n)) == "done"
    assert _train(cfg("halves", n // 2)) == "done"
    assert _latest(tmp_path, "halves")["learner"]["policy_version"] > 0
    (tmp_path / "halves" / "done").unlink()
    assert _train(cfg("halves", n)) == "done"
    a, b = _latest(tmp_path, "whole"), _latest(tmp_path, "halves")
    _check(a, algo)
    assert "Loaded the replay buffer" in (tmp_path / "halves" / "surge_log.txt").read_text()
    assert a["env_frames"] == b["env_frames"]
    assert a["learner"]["policy_version"] == b["learner"]["policy_version"]
    assert a["learner"]["replay_counters"]["env_steps"] == b["learner"]["replay_counters"]["env_steps"]
    _same(a["model"], b["model"], "model")
    _same(a["learner_modules"], b["learner_modules"], "learner_modules")
    _same(a["learner"]["optimizers"], b["learner"]["optimizers"], "optimizers")

    code = surge_main(
        ["enjoy", "--env=Pendulum-v1", f"--train_dir={tmp_path}", "--experiment=halves",
         "--max_num_episodes=1", "--no_render"]
    )  # fmt: skip
    assert code == 0
    assert "mean return" in capsys.readouterr().out


@pytest.mark.slow
@pytest.mark.parametrize("algo", ALGOS)
def test_async_placement_trains_two_policies(tmp_path, algo):
    cfg = parse_cfg(
        [*SMALL, f"--algo={algo}", "--serial_mode=False", "--num_policies=2", "--num_workers=2",
         f"--train_dir={tmp_path}", "--experiment=async2", "--train_for_env_steps=1200"]
    )  # fmt: skip
    assert _train(cfg) == "done"
    states = [_latest(tmp_path, "async2", p) for p in (0, 1)]
    for s in states:
        _check(s, algo)
        assert s["learner"]["replay_counters"]["env_steps"] > 0
    a, b = (s["learner_modules"]["critic"] for s in states)
    assert any(not torch.equal(a[k], b[k]) for k in a)  # each policy its own critic
