"""SAC, TD3 and DDPG through the engine on Pendulum-v1, short runs: two policies train side by side
(each its own critics, targets and optimizers), a serial run resumes from its checkpoint with its
learner modules, optimizers and saved replay restored, `surge enjoy` plays a checkpoint through
the algorithm's `eval_act`, and the async placement trains."""

import pytest
import torch

from surge.cfg.cli import parse_cfg
from surge.enjoy import enjoy
from surge.experiment.checkpoint import CheckpointManager
from surge.runtime.serial import SerialPlacement
from surge.runtime.training_run import train

# fmt: off
SMALL = [
    "--env=Pendulum-v1", "--num_workers=1", "--num_envs_per_worker=2", "--rollout=8",
    "--learning_starts=200", "--net_arch", "16", "16", "--batch_size=32", "--replay_ratio=0.25",
    "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False",
    "--num_torch_threads=1", "--seed=2",
]
# fmt: on
MODULES = {
    "SAC": ({"critic", "critic_target", "log_alpha"}, {"model", "critic", "ent_coef"}),
    "TD3": ({"critic", "critic_target", "actor_target"}, {"model", "critic"}),
    "DDPG": ({"critic", "critic_target", "actor_target"}, {"model", "critic"}),
}


def _train(cfg):
    threads = torch.get_num_threads()
    try:
        return train(cfg)
    finally:
        torch.set_num_threads(threads)


def _check(state, algo):
    modules, optimizers = MODULES[algo]
    assert set(state["learner_modules"]) == modules
    assert set(state["learner"]["optimizers"]) == optimizers
    for name in optimizers:  # every optimizer has stepped
        assert state["learner"]["optimizers"][name]["state"], name
    assert state["learner"]["policy_version"] > 0


def _equal(a, b):
    if isinstance(a, dict):
        assert set(a) == set(b)
        for k in a:
            _equal(a[k], b[k])
    elif isinstance(a, torch.Tensor):
        assert torch.equal(a, b)


@pytest.mark.slow
def test_sac_trains_two_policies(tmp_path):
    cfg = parse_cfg(
        [
            *SMALL,
            "--algo=SAC",
            "--serial_mode=True",
            "--num_policies=2",
            f"--train_dir={tmp_path}",
            "--experiment=two",
            "--train_for_env_steps=1600",
        ]  # fmt: skip
    )
    assert _train(cfg) == "done"
    states = [CheckpointManager(tmp_path / "two" / f"checkpoint_p{p}").load("latest") for p in (0, 1)]
    for s in states:
        assert s is not None
        _check(s, "SAC")
    a, b = (s["learner_modules"]["critic"]["q1_net.out.weight"] for s in states)
    assert not torch.equal(a, b)  # each policy its own critic


@pytest.mark.slow
def test_td3_resumes_with_its_replay_and_is_played_by_enjoy(tmp_path):
    args = [*SMALL, "--algo=TD3", "--serial_mode=True", f"--train_dir={tmp_path}", "--experiment=td3"]
    assert _train(parse_cfg([*args, "--save_replay_buffer=True", "--train_for_env_steps=1000"])) == "done"
    ckpts = CheckpointManager(tmp_path / "td3" / "checkpoint_p0")
    saved = ckpts.load("latest")
    assert saved is not None
    _check(saved, "TD3")
    resumed = parse_cfg(
        ["--env=Pendulum-v1", f"--train_dir={tmp_path}", "--experiment=td3", "--train_for_env_steps=1400"]
    )
    assert resumed.algo == "TD3" and resumed.algo_params.save_replay_buffer
    placement = SerialPlacement(resumed, [ckpts], [saved])
    placement.start()
    learner = placement.c.learners[0]
    for name, module in learner.learner_modules.items():
        _equal(module.state_dict(), saved["learner_modules"][name])
    for name, opt in learner.optimizers.items():
        _equal(opt.state_dict()["state"], saved["learner"]["optimizers"][name]["state"])
    assert learner.policy_version == saved["learner"]["policy_version"]
    assert len(learner.replay) > 0 and learner.env_steps == saved["learner"]["replay_counters"]["env_steps"]
    placement.close()
    (tmp_path / "td3" / "done").unlink()
    assert _train(resumed) == "done"
    assert ckpts.load("latest")["learner"]["policy_version"] > saved["learner"]["policy_version"]
    ev = parse_cfg(
        [
            "--env=Pendulum-v1",
            f"--train_dir={tmp_path}",
            "--experiment=td3",
            "--max_num_episodes=1",
            "--no_render",
        ],
        evaluation=True,
    )
    out = enjoy(ev)
    assert len(out["returns"]) == 1


@pytest.mark.slow
def test_ddpg_trains_in_the_async_placement(tmp_path):
    cfg = parse_cfg(
        [
            *SMALL,
            "--algo=DDPG",
            "--serial_mode=False",
            f"--train_dir={tmp_path}",
            "--experiment=ddpg",
            "--train_for_env_steps=1200",
        ]  # fmt: skip
    )
    assert _train(cfg) == "done"
    saved = CheckpointManager(tmp_path / "ddpg" / "checkpoint_p0").load("latest")
    assert saved is not None
    _check(saved, "DDPG")
