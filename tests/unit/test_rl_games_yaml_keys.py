"""rl_games' YAML keys mapped to surge's flags, each against rl_games 1.6.5's meaning
(`rl_games/common/a2c_common.py`, `algos_torch/a2c_discrete.py`, `common/common_losses.py`,
`common/tr_helpers.py`), on the files its wheel ships."""

from __future__ import annotations

import copy
import math

import gymnasium as gym
import pytest
import torch
from rl_games_yaml_support import future_fields, load, translate_future

from surge.algorithms.appo.ppo_loss import PPOLossConfig, ppo_loss
from surge.app.rl_games.envs import RlGamesKeyError
from surge.app.rl_games.translation import NO_LIMIT, is_rl_games_yaml, translate, worker_layout
from surge.models.distributions import make_distribution


def test_detects_the_nested_schema_only():
    assert is_rl_games_yaml(load("ppo_cartpole.yaml"))
    assert not is_rl_games_yaml({"env": "CartPole-v1", "batch_size": 64})
    assert not is_rl_games_yaml({"params": {"batch_size": 64}})  # surge's own files may nest under params


def test_ppo_cartpole_batch_geometry_and_hyper_parameters():
    v = translate_future("ppo_cartpole.yaml").values
    # num_actors 16, horizon_length 32, minibatch_size 64, mini_epochs 4
    assert v["num_workers"] * v["num_envs_per_worker"] == 16
    assert v["rollout"] == 32
    assert v["batch_size"] == 64
    assert v["num_batches_per_iteration"] == 32 * 16 // 64  # a2c_common: batch_size // minibatch_size
    assert v["ppo_epochs"] == 4
    assert (v["algo"], v["with_vtrace"], v["num_batches_to_accumulate"]) == ("APPO", False, 0)
    assert (v["gamma"], v["gae_lambda"]) == (0.99, 0.9)  # tau is GAE's lambda
    assert v["learning_rate"] == 2e-4 and v["lr_schedule"] == "constant"  # lr_schedule None
    assert v["ppo_clip_ratio"] == 0.2
    assert v["ppo_clip_value"] == 0.2  # clip_value True clips by e_clip (common_losses.default_critic_loss)
    assert v["exploration_loss_coeff"] == 0.01
    assert v["max_grad_norm"] == 1.0  # grad_norm with truncate_grads True
    assert v["reward_scale"] == 0.1 and v["reward_clip"] == NO_LIMIT  # no min_val/max_val
    assert v["score_to_win"] == 400.0
    assert v["actor_critic_share_weights"] is False  # separate: True
    assert v["encoder_mlp_layers"] == [32, 32] and v["nonlinearity"] == "relu" and v["use_rnn"] is False
    assert v["env"] == "CartPole-v1" and v["experiment"] == "cartpole_vel_info"
    assert v["adam_eps"] == 1e-8  # rl_games' optim.Adam(..., eps=1e-08)
    assert v["save_best_after"] == 10 * 32 * 16  # epochs -> env frames
    assert v["normalize_input"] is False and v["normalize_returns"] is False
    assert "rescale_actions" not in v  # discrete actions


def test_critic_coef_and_clip_value_give_rl_games_value_loss():
    """rl_games' total loss has `0.5 * c_loss * critic_coef` with `c_loss` from
    common_losses.default_critic_loss (clipped by e_clip when clip_value); surge's value term with
    the mapped value_loss_coeff and ppo_clip_value is the same number."""
    from rl_games.common.common_losses import default_critic_loss

    g = torch.Generator().manual_seed(0)
    n = 256
    old_values, returns = torch.randn(n, generator=g), torch.randn(n, generator=g) * 2
    values = old_values + torch.randn(n, generator=g)
    for critic_coef, clip_value in ((1.0, True), (4.0, False), (2.0, True)):
        data = copy.deepcopy(load("ppo_cartpole.yaml"))
        data["params"]["config"].update(critic_coef=critic_coef, clip_value=clip_value)
        v = translate(data, "x", fields=future_fields(), separate_ok=True).values
        c_loss = default_critic_loss(old_values[:, None], values[:, None], 0.2, returns[:, None], clip_value)
        expected = 0.5 * c_loss.mean() * critic_coef
        cfg = PPOLossConfig(0.2, v["ppo_clip_value"], v["value_loss_coeff"], "entropy", 0.0, 0.0)
        logits = torch.zeros(n, 2)
        dist = make_distribution(gym.spaces.Discrete(2), logits)
        actions = torch.zeros(n, dtype=torch.long)
        _, stats = ppo_loss(
            dist,
            dist,
            actions,
            dist.log_prob(actions),
            torch.zeros(n),
            values,
            old_values,
            returns,
            torch.ones(n),
            cfg,
        )
        assert stats["value_loss"].item() == pytest.approx(expected.item(), rel=1e-5)


def test_reward_shaper_matches_rl_games():
    """(r + shift) * scale clipped to [min, max], rl_games' DefaultRewardsShaper; surge's flags
    hold the same numbers (its shift is added before the scale, its clip after)."""
    from rl_games.common.tr_helpers import DefaultRewardsShaper

    data = copy.deepcopy(load("ppo_cartpole.yaml"))
    data["params"]["config"]["reward_shaper"] = {
        "scale_value": 0.5,
        "shift_value": 1,
        "min_val": -2,
        "max_val": 2,
    }
    v = translate(data, "x", fields=future_fields(), separate_ok=True).values
    r = torch.linspace(-10, 10, 41)
    expected = DefaultRewardsShaper(scale_value=0.5, shift_value=1, min_val=-2, max_val=2)(r)
    ours = ((r + v["reward_shift"]) * v["reward_scale"]).clamp(-v["reward_clip"], v["reward_clip"])
    assert torch.equal(ours, expected)


@pytest.mark.parametrize("bounds", [{"min_val": -1}, {"max_val": 0.5}, {"min_val": -0.2, "max_val": 3}])
def test_asymmetric_reward_clip_matches_rl_games(bounds):
    """ppo_walker.yaml's `min_val: -1` alone (no max_val) and other one-sided or asymmetric clips:
    surge's shaped_rewards with --reward_clip_low gives rl_games' DefaultRewardsShaper."""
    from rl_games.common.tr_helpers import DefaultRewardsShaper

    from surge.learning.reward_shaping import shaped_rewards

    data = copy.deepcopy(load("ppo_cartpole.yaml"))
    data["params"]["config"]["reward_shaper"] = {"scale_value": 0.1, **bounds}
    v = translate(data, "x", fields=future_fields(), separate_ok=True).values
    r = torch.linspace(-50, 50, 101)
    expected = DefaultRewardsShaper(scale_value=0.1, **bounds)(r)
    ours = shaped_rewards(r, v["reward_shift"], v["reward_scale"], v["reward_clip"], v.get("reward_clip_low"))
    assert torch.equal(ours, expected)


def test_a_reward_clip_that_passes_nothing_is_refused():
    data = copy.deepcopy(load("ppo_cartpole.yaml"))
    data["params"]["config"]["reward_shaper"] = {"min_val": 1, "max_val": 1}
    with pytest.raises(RlGamesKeyError) as e:
        translate(data, "x", fields=future_fields(), separate_ok=True)
    assert e.value.field == "params.config.reward_shaper.min_val"


def test_pong_budget_player_and_network():
    t = translate_future("atari/ppo_pong.yaml")
    v = t.values
    assert v["env"] == "atari_pong" and v["env_frameskip"] == 4 and v["atari_episodic_life"] is True
    assert v["atari_clip_reward"] is False and v["reward_clip"] == 1.0  # the shaper clips to [-1, 1]
    # max_epochs 500 epochs of horizon 128 x 64 actors env steps, x frameskip 4 in surge's env frames
    assert v["train_for_env_steps"] == 500 * 128 * 64 * 4
    assert v["value_loss_coeff"] == 1.0  # 0.5 * critic_coef 2
    assert v["ppo_clip_value"] == NO_LIMIT  # clip_value False
    # a discrete agent adapts once per mini-epoch whatever schedule_type says (a2c_common.py
    # DiscreteA2CBase.train_epoch), the default legacy included
    assert (v["lr_schedule"], v["lr_schedule_kl_threshold"]) == ("kl_adaptive_epoch", 0.01)
    assert v["encoder_subtype"] == "convnet_deepmind" and v["hidden_size"] == 512
    assert v["encoder_extra_fc_layers"] == 1 and v["nonlinearity"] == "elu"
    assert v["normalize_input"] is True and v["normalize_returns"] is True
    assert v["policy_initialization"] == "orthogonal" and v["policy_init_gain"] == pytest.approx(math.sqrt(2))
    assert v["seed"] == 322 and v["actor_critic_share_weights"] is True
    assert "max_num_episodes" not in v  # player: enjoy only
    enjoy = translate_future("atari/ppo_pong.yaml", evaluation=True).values
    assert (enjoy["eval_deterministic"], enjoy["max_num_episodes"], enjoy["no_render"]) == (True, 100, False)


def test_envpool_pong():
    v = translate_future("atari/ppo_pong_envpool.yaml").values
    assert v["env"] == "envpool_pong"
    assert v["num_workers"] * v["env_agents"] == 64 and v["num_envs_per_worker"] == 1
    assert v["atari_episodic_life"] is False  # EnvPool's default episodic_life
    assert v["value_bootstrap"] is False
    assert v["train_for_env_steps"] == 250 * 128 * 64 * 4


@pytest.mark.parametrize("name", ["mujoco/halfcheetah.yaml", "mujoco/halfcheetah_envpool.yaml"])
def test_halfcheetah(name):
    v = translate_future(name).values
    assert v["env"] == "mujoco_halfcheetah"
    assert (v["rollout"], v["batch_size"], v["num_batches_per_iteration"], v["ppo_epochs"]) == (
        256,
        2048,
        8,
        5,
    )
    assert v["value_loss_coeff"] == 2.0  # critic_coef 4
    assert v["adaptive_stddev"] is False and v["initial_stddev"] == 1.0  # fixed_sigma, log-std 0
    assert v["lr_schedule"] == "kl_adaptive_minibatch" and v["lr_schedule_kl_threshold"] == 0.008
    assert v["train_for_env_steps"] == 1000 * 256 * 64
    assert v["encoder_mlp_layers"] == [128, 64, 32]
    # normalize_input: rl_games' RunningMeanStd moves at every training forward (each minibatch)
    assert v["normalize_input"] is True and v["obs_normalizer_update"] == "minibatch"
    # rl_games' clip_actions default True: clamp to [-1, 1], rescale to [low, high]
    assert v["clip_actions"] is True and v["rescale_actions"] is True
    # variance_scaling_initializer scale 2: std sqrt(2 / fan_in) = gain sqrt(2) / sqrt(fan_in)
    assert v["policy_initialization"] == "variance_scaling"
    assert v["policy_init_gain"] == pytest.approx(math.sqrt(2))


def test_pendulum_and_lunar():
    v = translate_future("ppo_pendulum.yaml").values
    assert v["env"] == "Pendulum-v1" and v["adaptive_stddev"] is True and v["recurrence"] == 1
    v = translate_future("ppo_pendulum_torch.yaml").values
    assert (
        v["env"] == "Pendulum-v1"
        and v["lr_schedule_kl_threshold"] == 0.016
        and v["ppo_clip_value"] == NO_LIMIT
    )
    assert (
        v["policy_initialization"] == "xavier_normal" and v["policy_init_gain"] == 2.0
    )  # glorot_normal, gain 2
    v = translate_future("ppo_lunar_continiuos_torch.yaml").values
    assert v["env"] == "LunarLanderContinuous-v3"
    assert (v["use_rnn"], v["rnn_type"], v["hidden_size"], v["recurrence"]) == (True, "lstm", 64, 4)
    assert translate_future("ppo_lunar_discrete.yaml").values["env"] == "LunarLander-v3"


def test_schedule_type_standard_is_per_epoch():
    data = copy.deepcopy(load("mujoco/halfcheetah.yaml"))
    data["params"]["config"]["schedule_type"] = "standard"
    v = translate(data, "x", fields=future_fields(), separate_ok=True).values
    assert v["lr_schedule"] == "kl_adaptive_epoch"


def test_minibatch_size_per_env_and_max_frames():
    data = copy.deepcopy(load("ppo_cartpole.yaml"))
    del data["params"]["config"]["minibatch_size"]
    data["params"]["config"].update(minibatch_size_per_env=8, max_frames=100000, max_epochs=1000)
    v = translate(data, "x", fields=future_fields(), separate_ok=True).values
    assert v["batch_size"] == 16 * 8
    assert v["train_for_env_steps"] == 100000  # the lower of 1000 x 512 and 100000


@pytest.mark.parametrize(
    "actors,cpus,batched,expected",
    [
        (16, 2, False, {"num_workers": 2, "num_envs_per_worker": 8, "worker_num_splits": 2}),
        (7, 2, False, {"num_workers": 1, "num_envs_per_worker": 7, "worker_num_splits": 1}),
        (
            64,
            16,
            True,
            {"num_workers": 16, "num_envs_per_worker": 1, "worker_num_splits": 1, "env_agents": 4},
        ),
    ],
)
def test_worker_layout(actors, cpus, batched, expected):
    assert worker_layout(actors, batched, cpus) == expected


def test_keys_without_effect_are_reported_once_each():
    data = copy.deepcopy(load("ppo_cartpole.yaml"))
    data["params"]["config"].update(
        print_stats=True, save_frequency=100, use_diagnostics=True, bptt_length=16, games_to_track=50
    )
    data["params"]["config"]["self_play_config"] = {
        "update_score": 0.5,
        "games_to_check": 400,
        "check_scores": False,
        "env_update_num": 4,
    }
    t = translate(data, "x", fields=future_fields(), separate_ok=True)
    keys = [n.split(":")[0] for n in t.notes]
    for k in ("device", "print_stats", "save_frequency", "use_diagnostics", "bptt_length", "kl_threshold"):
        assert keys.count(f"params.config.{k}") == 1, keys
    assert keys.count("params.torch_threads") == 1 and keys.count("params.load_path") == 1
    v = t.values
    assert v["stats_avg"] == 50  # games_to_track: rl_games' window of the mean reward (and score_to_win)
    assert (v["self_play"], v["self_play_update_score"], v["self_play_games_to_check"]) == (True, 0.5, 400)
    assert (v["self_play_check_scores"], v["self_play_env_update_num"]) == (False, 4)
