"""rl_games' `dm_control/*.yaml` (EnvPool's dm_control suite tasks, `env_name: envpool` with
`flatten_obs: True`) translated to surge's `envpool_dmc_` family, and one trained a little."""

from __future__ import annotations

import copy
import importlib.util

import pytest
from rl_games_yaml_support import CONFIGS, load

from surge.app.resolve import parse_cfg
from surge.app.rl_games.envs import RlGamesKeyError
from surge.app.rl_games.translation import translate

pytestmark = pytest.mark.skipif(importlib.util.find_spec("envpool") is None, reason="envpool not installed")

#: each shipped file's EnvPool task (its env_config.env_name) -> surge's env
FILES = {
    "acrobot_swingup.yaml": "envpool_dmc_acrobot_swingup",
    "ball_in_cup.yaml": "envpool_dmc_ball_in_cup_catch",
    "cartpole.yaml": "envpool_dmc_cartpole_balance",
    "cheetah_walk.yaml": "envpool_dmc_cheetah_run",  # the file trains CheetahRun-v1 despite its name
    "fish_swim.yaml": "envpool_dmc_fish_swim",
    "hopper_hop.yaml": "envpool_dmc_hopper_hop",
    "hopper_stand.yaml": "envpool_dmc_hopper_stand",
    "humanoid_run.yaml": "envpool_dmc_humanoid_run",
    "humanoid_stand.yaml": "envpool_dmc_humanoid_stand",
    "humanoid_walk.yaml": "envpool_dmc_humanoid_walk",
    "manipulator_bringball.yaml": "envpool_dmc_manipulator_bring_ball",
    "pendulum_swingup.yaml": "envpool_dmc_pendulum_swingup",
    "walker_run.yaml": "envpool_dmc_walker_run",
    "walker_stand.yaml": "envpool_dmc_walker_stand",
    "walker_walk.yaml": "envpool_dmc_walker_walk",
}


def test_every_shipped_dm_control_file_is_listed():
    assert sorted(p.name for p in (CONFIGS / "dm_control").glob("*.yaml")) == sorted(FILES)


@pytest.mark.parametrize("name", sorted(FILES))
def test_the_files_translate_to_the_family(name):
    v = translate(load(f"dm_control/{name}"), name).values
    assert v["env"] == FILES[name]
    # num_actors 64 as batched EnvPool envs: workers x env_agents, one env per worker
    assert v["num_workers"] * v["env_agents"] == 64 and v["num_envs_per_worker"] == 1
    # the shaper: log(r + 1) (scale 1, shift 1, log_val True)
    assert (v["reward_shift"], v["reward_scale"], v["reward_log"]) == (1.0, 1.0, True)


def test_the_translation_parses_as_a_surge_config(tmp_path):
    path = CONFIGS / "dm_control" / "cartpole.yaml"
    cfg = parse_cfg([f"--cfg={path}", f"--train_dir={tmp_path}"])
    assert cfg.env == "envpool_dmc_cartpole_balance" and cfg.reward_log is True
    assert cfg.env_params.dmc_max_episode_steps == 1000


def _cartpole():
    return copy.deepcopy(load("dm_control/cartpole.yaml"))


def test_an_unflattened_observation_is_refused():
    data = _cartpole()
    data["params"]["config"]["env_config"]["flatten_obs"] = False
    with pytest.raises(RlGamesKeyError) as e:
        translate(data, "f.yaml")
    assert e.value.field == "params.config.env_config.flatten_obs"


def test_the_episode_length_maps_to_the_family_flag():
    data = _cartpole()
    data["params"]["config"]["env_config"]["max_episode_steps"] = 500
    assert translate(data, "f.yaml").values["dmc_max_episode_steps"] == 500


def test_an_envpool_task_of_no_family_is_refused():
    data = _cartpole()
    data["params"]["config"]["env_config"]["env_name"] = "Highway-v0"
    with pytest.raises(RlGamesKeyError) as e:
        translate(data, "f.yaml")
    assert e.value.field == "params.config.env_config.env_name" and "Highway-v0" in str(e.value)


@pytest.mark.slow
def test_the_cartpole_file_trains_a_little(tmp_path):
    """The file as shipped (minibatches of 2048 = 128 steps x 16 envs), with 16 envs instead of 64
    and 10 iterations: the learner trains and the 1000-step episodes are reported."""
    from surge.app.training_run import TrainingRun

    path = CONFIGS / "dm_control" / "cartpole.yaml"
    cfg = parse_cfg(
        [
            f"--cfg={path}",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--env_agents=16",
            "--train_for_env_steps=20480",
            "--num_torch_threads=1",
        ]
    )
    run = TrainingRun(cfg)
    assert run.run() == "done"
    m = run.monitor
    assert m.env_frames >= 20480 and m.episodes >= 16  # 16 envs x 1000-step episodes
    import torch

    state = torch.load(sorted(tmp_path.glob("*/checkpoint_p0/checkpoint_*.pth"))[-1], weights_only=True)
    # each iteration trains 5 epochs of 1 minibatch (the budget stops the run before the last ones)
    assert state["learner"]["policy_version"] >= 5 * 5
    # dm_control's cartpole balance rewards each step in [0, 1]: a 1000-step episode scores in (0, 1000]
    assert all(0 < r <= 1000 for r in m.returns)
