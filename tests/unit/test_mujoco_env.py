"""MuJoCo family: names, float32 observations, continuous actions through the Gaussian policy."""

import importlib.util

import numpy as np
import pytest

from surge.algorithms.appo.config import APPOParams
from surge.app.resolve import parse_cfg
from surge.cfg.config import algo_params
from surge.envs.registry import make_env
from surge.errors import ConfigError

pytestmark = pytest.mark.skipif(importlib.util.find_spec("mujoco") is None, reason="mujoco not installed")


def test_halfcheetah_steps_with_float32_obs_and_sample_factory_defaults(tmp_path):
    cfg = parse_cfg(["--env=mujoco_halfcheetah", f"--train_dir={tmp_path}"])
    assert (
        algo_params(cfg, APPOParams).ppo_clip_ratio,
        algo_params(cfg, APPOParams).kl_loss_coeff,
        cfg.normalize_input,
        cfg.use_rnn,
    ) == (
        0.2,
        0.1,
        True,
        False,
    )
    env = make_env(cfg)
    obs, _ = env.reset(seed=0)
    assert obs[0].shape == (17,) and obs[0].dtype == np.float32
    obs, rew, term, trunc, infos = env.step([env.action_space.sample()])
    assert np.isfinite(rew[0]) and obs[0].dtype == np.float32
    env.close()


def test_unknown_mujoco_env_is_refused(tmp_path):
    cfg = parse_cfg(["--env=mujoco_halfcheetah", f"--train_dir={tmp_path}"])
    with pytest.raises(ConfigError, match="mujoco_halfcheetah"):
        make_env(cfg, env_name="mujoco_flyingfish")
