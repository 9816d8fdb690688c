"""`--eval_env` and `--eval_stat`: evaluation during training plays another env of the training
env's family (a self-play population against the built-in bots: `--env=doom_duel
--eval_env=doom_duel_bots`) and reports a per-episode statistic from the env's info (Doom's
FRAGCOUNT). The reference is a naive loop over the same seeds on a plain gymnasium env."""

import gymnasium as gym
import pytest
import torch
from gymnasium.envs.classic_control.cartpole import CartPoleEnv

from surge.app.notes import config_notes
from surge.app.resolve import parse_cfg
from surge.errors import ConfigError
from surge.evaluation.episodes import EpisodePlayer

SHORT = "SurgeTestShortCartPole-v0"  # CartPole cut at 7 steps, reporting a statistic
MAX_STEPS = 7


class CountingCartPole(CartPoleEnv):
    """CartPole whose every step's info reports `episode_extra_stats["double_length"]`: twice the
    steps played so far (at the episode's end, twice its length)."""

    def reset(self, **kwargs):
        self.t = 0
        return super().reset(**kwargs)

    def step(self, action):
        obs, reward, terminated, truncated, info = super().step(action)
        self.t += 1
        return (
            obs,
            reward,
            terminated,
            truncated,
            {**info, "episode_extra_stats": {"double_length": 2 * self.t}},
        )


if SHORT not in gym.registry:
    gym.register(SHORT, entry_point=CountingCartPole, max_episode_steps=MAX_STEPS)


def naive_lengths(model, env_id: str, seeds: list[int]) -> list[int]:
    """Reference: a fresh gymnasium env per episode, reset with its seed, the greedy action."""
    lengths = []
    for seed in seeds:
        env = gym.make(env_id)
        obs, _ = env.reset(seed=seed)
        steps, done = 0, False
        while not done:
            out = model.act(torch.as_tensor(obs, dtype=torch.float32)[None], torch.zeros(1, 0))
            obs, _, terminated, truncated, _ = env.step(int(out.logits[0].argmax()))
            steps, done = steps + 1, terminated or truncated
        lengths.append(steps)
    return lengths


def flags(tmp_path, *extra: str) -> list[str]:
    return [
        "--env=CartPole-v1",
        f"--train_dir={tmp_path}",
        "--seed=5",
        "--eval_every_env_frames=1000",
        *extra,
    ]


def test_the_eval_env_is_played_and_its_statistic_reported(tmp_path):
    cfg = parse_cfg(flags(tmp_path, f"--eval_env={SHORT}", "--eval_stat=double_length", "--eval_episodes=5"))
    cfg.eval_deterministic = True
    torch.manual_seed(3)
    player = EpisodePlayer(cfg)
    try:
        with torch.no_grad():
            for p in player.model.parameters():
                p.mul_(4.0)
        result = player.evaluate(0, 1, 1000)
    finally:
        player.close()
    seeds = [(5 * 100003 + 2**31 + k) % 2**32 for k in range(5)]  # docs/evaluation.md
    expected = naive_lengths(player.model, SHORT, seeds)
    assert result.lengths == expected
    assert max(expected) <= MAX_STEPS  # the short twin was played, not CartPole-v1 (500 steps)
    assert result.stats == [2.0 * n for n in expected]
    assert result.stat_mean == pytest.approx(2.0 * sum(expected) / len(expected))


def test_a_statistic_the_env_does_not_report_is_left_out(tmp_path):
    cfg = parse_cfg(flags(tmp_path, "--eval_stat=FRAGCOUNT", "--eval_episodes=2"))
    player = EpisodePlayer(cfg)
    try:
        result = player.evaluate(0, 1, 1000)
    finally:
        player.close()
    assert len(result.returns) == 2 and result.stats == [] and result.stat_mean is None


@pytest.mark.parametrize("eval_env", ["atari_breakout", "CartPoel-v1"])
def test_an_eval_env_of_another_family_or_unknown_is_refused_before_any_process(tmp_path, eval_env):
    with pytest.raises(ConfigError) as e:
        parse_cfg(flags(tmp_path, f"--eval_env={eval_env}"))
    assert e.value.field == "eval_env"


def test_an_eval_env_with_other_spaces_is_refused_naming_both(tmp_path):
    cfg = parse_cfg(flags(tmp_path, "--eval_env=Acrobot-v1"))
    with pytest.raises(ConfigError) as e:
        EpisodePlayer(cfg)
    assert e.value.field == "eval_env"
    assert "Acrobot-v1" in str(e.value) and "CartPole-v1" in str(e.value)


def test_eval_env_and_stat_without_evaluation_are_reported(tmp_path):
    cfg = parse_cfg(
        ["--env=CartPole-v1", f"--train_dir={tmp_path}", "--eval_env=CartPole-v0", "--eval_stat=x"]
    )
    notes = config_notes(cfg)
    assert any("--eval_env has no effect" in n for n in notes)
    assert any("--eval_stat has no effect" in n for n in notes)


def test_a_module_path_name_is_the_family_it_wraps():
    from surge.envs.registry import find_family, same_family

    wrapped = find_family("two_player_toy:higher_number")  # a new factory object on every call
    assert same_family(wrapped, find_family("two_player_toy:higher_number"))
    assert same_family(wrapped, find_family("higher_number"))
    assert not same_family(wrapped, find_family("CartPole-v1"))
    assert same_family(find_family("CartPole-v1"), find_family("Acrobot-v1"))  # gymnasium ids


@pytest.mark.parametrize("name", ["return", "length"])
def test_a_statistic_named_as_an_eval_curve_is_refused(tmp_path, name):
    with pytest.raises(ConfigError) as e:
        parse_cfg(flags(tmp_path, f"--eval_stat={name}"))
    assert e.value.field == "eval_stat"
