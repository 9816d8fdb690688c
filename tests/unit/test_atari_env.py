"""The Atari family: names, observations, episodic life, episode statistics, reward clipping."""

from __future__ import annotations

import dataclasses
from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("ale_py")
pytest.importorskip("cv2")

from gymnasium.wrappers import RecordEpisodeStatistics  # noqa: E402

import surge.envs.atari as atari  # noqa: E402
from surge.algorithms.appo.config import APPOParams
from surge.app.check_env import check_env, main  # noqa: E402
from surge.cfg.config import Config  # noqa: E402
from surge.envs.atari import ATARI_DEFAULTS, AtariParams, atari_env_id, atari_params, make_atari_env  # noqa: E402
from surge.envs.multi_agent import has_wrapper  # noqa: E402
from surge.envs.registry import find_family, make_env  # noqa: E402
from surge.envs.wrappers import EpisodicLifeEnv, FireResetEnv, sign_reward  # noqa: E402
from surge.errors import ConfigError  # noqa: E402


def atari_cfg(**overrides) -> Config:
    """A config whose Atari section has its defaults, with `overrides`."""
    return Config(env="atari_pong", env_params=AtariParams(**overrides))


def spy_raw_rewards(env: gym.Env) -> list[float]:
    """Records every reward of the ALE env itself (per emulator frame, unclipped)."""
    base = env.unwrapped
    raw: list[float] = []
    step = base.step

    def recording_step(action):
        result = step(action)
        raw.append(float(result[1]))
        return result

    base.step = recording_step
    return raw


# ------------------------------------------------------------------------------------------ names


@pytest.mark.parametrize(
    "name, env_id",
    [
        ("atari_breakout", "BreakoutNoFrameskip-v4"),
        ("atari_pong", "PongNoFrameskip-v4"),
        ("atari_spaceinvaders", "SpaceInvadersNoFrameskip-v4"),
        ("atari_space_invaders", "SpaceInvadersNoFrameskip-v4"),
        ("atari_montezuma", "MontezumaRevengeNoFrameskip-v4"),
        ("atari_montezuma_revenge", "MontezumaRevengeNoFrameskip-v4"),
        ("atari_ms_pacman", "MsPacmanNoFrameskip-v4"),
        ("atari_mspacman", "MsPacmanNoFrameskip-v4"),
    ],
)
def test_names_map_to_noframeskip_v4_ids(name, env_id):
    assert atari_env_id(name) == env_id
    assert find_family(name).prefix == "atari_"


def test_rom_without_v4_id_falls_back_to_v5_without_frameskip():
    assert atari_env_id("atari_tic_tac_toe_3d") == "ALE/TicTacToe3D-v5"


def test_unknown_game_raises_config_error_with_close_matches():
    with pytest.raises(ConfigError) as err:
        atari_env_id("atari_breakot")
    assert err.value.field == "env"
    assert "atari_breakot" in str(err.value)
    assert "atari_breakout" in str(err.value)  # the close match is suggested
    with pytest.raises(ConfigError):
        make_env(Config(env="atari_no_such_game"))


def test_family_defaults_and_params_are_registered():
    family = find_family("atari_pong")
    assert family.extra_params is AtariParams
    assert family.default_overrides == ATARI_DEFAULTS
    assert ATARI_DEFAULTS["encoder_subtype"] == "convnet_deepmind"
    assert ATARI_DEFAULTS["obs_scale"] == 255.0
    assert "atari_breakout" in family.names
    assert set(ATARI_DEFAULTS) <= {f.name for f in dataclasses.fields(Config)} | {
        f.name
        for f in dataclasses.fields(APPOParams)  # APPO's section: the family's PPO defaults
    }


def test_bad_frameskip_is_a_config_error():
    with pytest.raises(ConfigError) as err:
        make_atari_env("atari_pong", atari_cfg(env_frameskip=0))
    assert err.value.field == "env_frameskip"


def test_a_frameskip_longer_than_a_game_is_refused():
    """Found by the config fuzz: --env_frameskip=2147483648 ran a game's worth of frames per step,
    for hours. One step more than atari_max_episode_frames is refused, the limit itself accepted."""
    with pytest.raises(ConfigError) as err:
        make_atari_env("atari_pong", atari_cfg(env_frameskip=108001))
    assert err.value.field == "env_frameskip" and "108000" in str(err.value)
    with pytest.raises(ConfigError):
        atari_params(atari_cfg(env_frameskip=2**31))
    assert atari_params(atari_cfg(env_frameskip=108000)).env_frameskip == 108000
    assert atari_params(atari_cfg(env_frameskip=2**31, atari_max_episode_frames=0)).env_frameskip == 2**31


# ------------------------------------------------------------------------------------------ observations


def test_obs_are_stacked_84x84_uint8_frames():
    env = make_env(Config(env="atari_breakout"))  # a Config without the Atari fields: defaults
    assert env.observation_space.shape == (4, 84, 84)
    assert env.observation_space.dtype == np.uint8
    obs, infos = env.reset(seed=1)
    assert obs[0].shape == (4, 84, 84) and obs[0].dtype == np.uint8
    obs, rewards, term, trunc, infos = env.step([env.action_space.sample()])
    assert obs[0].shape == (4, 84, 84) and obs[0].dtype == np.uint8
    assert obs[0] in env.observation_space
    env.close()

    env = make_atari_env("atari_pong", atari_cfg(env_framestack=2))
    assert env.observation_space.shape == (2, 84, 84)
    assert env.reset(seed=0)[0].shape == (2, 84, 84)
    env.close()


@pytest.mark.parametrize("game", ["atari_pong", "atari_breakout"])
def test_the_ram_base_env_gives_the_rgb_base_envs_observations(game, monkeypatch):
    # AtariPreprocessing reads its frames from the emulator, never the ALE env's own observation:
    # made with the RAM as its observation (the cheapest for ALE), or in grayscale, the stack must
    # give what the RGB default gives, step for step, rewards and ends included (the reference: the
    # same stack with ALE's default obs_type)
    def rollout(obs_type: str) -> list:
        monkeypatch.setattr(atari, "BASE_OBS_TYPE", obs_type)
        env = make_atari_env(game, atari_cfg())
        assert env.unwrapped._obs_type == obs_type
        rng = np.random.default_rng(3)
        out = [env.reset(seed=5)[0]]
        for _ in range(300):
            obs, reward, terminated, truncated, _ = env.step(int(rng.integers(env.action_space.n)))
            out.append((obs, reward, terminated, truncated))
            if terminated or truncated:
                out.append(env.reset()[0])
        env.close()
        return out

    reference = rollout("rgb")
    assert any(np.any(x[0] if isinstance(x, tuple) else x) for x in reference)  # not blank frames
    for obs_type in ("ram", "grayscale"):
        fast = rollout(obs_type)
        assert len(fast) == len(reference), obs_type
        for a, b in zip(fast, reference, strict=True):
            if isinstance(a, tuple):
                assert np.array_equal(a[0], b[0]) and a[1:] == b[1:], obs_type
            else:
                assert np.array_equal(a, b), obs_type


def test_the_family_makes_the_ale_env_with_its_ram_behind_the_screens_space():
    env = make_atari_env("atari_pong", atari_cfg())
    assert atari.BASE_OBS_TYPE == "ram" and env.unwrapped._obs_type == "ram"
    below = env
    while not isinstance(below, atari.ScreenSpace):
        below = below.env
    assert below.observation_space.shape == (210, 160) and below.observation_space.dtype == np.uint8
    env.close()


def test_rendering_stays_rgb():
    env = make_atari_env("atari_pong", atari_cfg(), render_mode="rgb_array")
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (210, 160, 3) and frame.dtype == np.uint8
    env.close()


def test_wrapper_stack_follows_the_config():
    train = make_atari_env("atari_breakout", atari_cfg())
    assert has_wrapper(train, EpisodicLifeEnv) and has_wrapper(train, FireResetEnv)
    assert has_wrapper(train, RecordEpisodeStatistics)
    evaluation = make_atari_env("atari_breakout", atari_cfg(atari_episodic_life=False))
    assert not has_wrapper(evaluation, EpisodicLifeEnv)
    # surge's single-to-multi-agent wrapper must not add a second, outer RecordEpisodeStatistics
    wrapped = make_env(Config(env="atari_breakout"))
    assert not isinstance(wrapped.env, RecordEpisodeStatistics)
    for env in (train, evaluation, wrapped):
        env.close()


# ------------------------------------------------------------------------------------------ episodes


def test_episodic_life_ends_episodes_per_life_and_stats_per_game():
    """Breakout, random actions: each lost life is terminated=True, the game goes on after reset,
    and info["episode"] comes once, at the end of the game, through surge's auto-reset wrapper."""
    env = make_env(Config(env="atari_breakout"))
    ale = env.unwrapped.ale
    rng = np.random.default_rng(0)
    env.reset(seed=0)
    env.action_space.seed(0)
    start_lives = ale.lives()
    assert start_lives == 5
    lives_seen, episodes = [], []
    for _ in range(2000):
        obs, rewards, term, trunc, infos = env.step([int(rng.integers(env.action_space.n))])
        if term[0] or trunc[0]:
            lives_seen.append(ale.lives())
            if "episode" in infos[0]:
                episodes.append(infos[0]["episode"])
                break
            # the auto-reset after a lost life did not restart the game
            assert ale.lives() == lives_seen[-1] > 0
            assert infos[0]["lives"] == ale.lives()
    assert lives_seen[:4] == [4, 3, 2, 1], "one terminated per lost life, lives counting down"
    assert len(episodes) == 1 and len(lives_seen) == 5
    assert episodes[0]["l"] > 0
    env.close()


def test_episode_return_is_the_unclipped_game_score():
    """Space Invaders scores 5..30 points per invader: the agent sees the sign of each reward,
    info["episode"]["r"] is the whole game's raw score (all lives, hidden reset steps included)."""
    env = make_atari_env("atari_space_invaders", atari_cfg())
    raw = spy_raw_rewards(env)
    rng = np.random.default_rng(3)
    env.reset(seed=3)
    raw.clear()  # rewards of the no-op frames of reset are not part of the game's record
    clipped, life_losses, episode = [], 0, None
    for _ in range(5000):
        obs, reward, terminated, truncated, info = env.step(int(rng.integers(env.action_space.n)))
        clipped.append(reward)
        if "episode" in info:
            episode = info["episode"]
            break
        if terminated or truncated:
            life_losses += 1
            _, info = env.reset()
            assert "episode" not in info
    assert episode is not None, "the game did not end within 5000 steps"
    assert set(clipped) <= {-1.0, 0.0, 1.0}
    assert life_losses >= 1  # several lives, one game
    assert episode["r"] == pytest.approx(sum(raw))
    assert max(raw) > 1 and episode["r"] > sum(clipped)
    assert isinstance(episode["r"], float) and isinstance(episode["l"], int)
    env.close()


def test_time_limit_truncates_the_game_in_emulator_frames():
    env = make_atari_env("atari_breakout", atari_cfg(atari_max_episode_frames=400))
    env.reset(seed=0)
    for _ in range(200):
        obs, reward, terminated, truncated, info = env.step(0)
        if truncated:
            break
        if terminated:  # a lost life; the game goes on
            assert "episode" not in info
            env.reset()
    assert truncated and not terminated
    assert info["episode_frame_number"] == 400  # 400 emulator frames = 100 steps at frameskip 4
    assert info["lives"] > 0 and "episode" in info
    env.close()


def test_sign_reward():
    assert [sign_reward(r) for r in (-7, -0.5, 0, 0.2, 30)] == [-1.0, -1.0, 0.0, 1.0, 1.0]


# ------------------------------------------------------------------------------------------ wrappers


class FakeLivesEnv(gym.Env):
    """A tiny ALE-like env: action 1 loses a life; reward 1 per step; `noop_ends_game` makes the
    next no-op end the game."""

    observation_space = gym.spaces.Box(0, 100, (1,), np.float32)
    action_space = gym.spaces.Discrete(3)

    def __init__(self, lives: int = 3):
        self.start_lives = lives
        self.noop_ends_game = False
        self.real_resets = 0
        self.ale = SimpleNamespace(lives=lambda: self._lives)

    def get_action_meanings(self):
        return ["NOOP", "FIRE", "RIGHT"]

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self._lives, self.real_resets = self.start_lives, self.real_resets + 1
        return np.array([self._lives], np.float32), {"lives": self._lives}

    def step(self, action):
        if action == 1:
            self._lives -= 1
        if action == 0 and self.noop_ends_game:
            self._lives = 0
        obs = np.array([self._lives], np.float32)
        return obs, 1.0, self._lives == 0, False, {"lives": self._lives}


def test_episodic_life_keeps_the_episode_record_when_the_noop_reset_ends_the_game():
    fake = FakeLivesEnv(lives=3)
    env = EpisodicLifeEnv(RecordEpisodeStatistics(fake))
    env.reset(seed=0)
    _, _, terminated, _, info = env.step(1)  # lose a life
    assert terminated and "episode" not in info
    env.reset()  # a no-op step, not a real reset
    assert fake.real_resets == 1 and fake.ale.lives() == 2
    env.step(1)  # lose another life; the no-op of the next reset ends the game
    fake.noop_ends_game = True
    _, info = env.reset()
    assert fake.real_resets == 2
    assert info["episode"]["r"] == 4.0 and info["episode"]["l"] == 4  # 2 steps + 2 no-op resets


def test_fire_reset_presses_fire_and_keeps_episode_records():
    fake = FakeLivesEnv(lives=1)  # FIRE (action 1) loses the only life: the game ends at reset
    env = FireResetEnv(RecordEpisodeStatistics(fake))
    obs, info = env.reset(seed=0)
    assert fake.real_resets == 2  # the FIRE step ended the game, so it was reset again
    assert info["episode"]["l"] == 1


def test_atari_envs_pass_the_env_checker(capsys):
    assert check_env("atari_breakout", num_steps=20) == []
    assert (
        main(["--env=atari_pong", "--atari_episodic_life=False", "--env_framestack=2", "--num_steps=5"]) == 0
    )
    assert capsys.readouterr().out.startswith("OK")


@pytest.mark.parametrize("algo", ["DQN", "R2D2"])
def test_q_learning_keeps_a_constant_rate_over_the_familys_ppo_decay(tmp_path, algo):
    from surge.app.resolve import parse_cfg

    base = [
        "--env=atari_breakout",
        f"--algo={algo}",
        f"--train_dir={tmp_path}",
        "--train_for_env_steps=1000000",
    ]
    assert ATARI_DEFAULTS["lr_schedule"] == "linear_decay"  # APPO's default on Atari
    assert parse_cfg(base).lr_schedule == "constant"  # SB3's, rlpyt's and R2D2's
    assert parse_cfg([*base, "--lr_schedule=linear_decay"]).lr_schedule == "linear_decay"
    assert parse_cfg(["--env=atari_breakout", f"--train_dir={tmp_path}"]).lr_schedule == "linear_decay"


def test_evaluation_presses_fire_after_each_lost_life():
    """Breakout launches the ball only on FIRE. In training every life begins with FIRE (episodic
    life resets, then `FireResetEnv`), so a greedy agent may never press it; evaluation plays whole
    games, so `FireResetEnv` presses it after each lost life there too. An agent that only ever
    takes NOOP must then lose its 5 lives in a few hundred steps, not stand still until the
    27,000-step time limit (which it does without the presses: checked below for 2,000 steps)."""

    def noop_game(env: gym.Env, steps: int) -> tuple[bool, int]:
        env.reset(seed=1)
        for _ in range(steps):
            _, _, terminated, truncated, info = env.step(0)
            if terminated or truncated:
                return terminated, info["episode"]["l"]
        return False, steps

    evaluation = make_atari_env("atari_breakout", atari_cfg(atari_episodic_life=False))
    ended, length = noop_game(evaluation, 2000)
    assert ended and evaluation.unwrapped.ale.lives() == 0 and length < 1000
    fire = evaluation
    while not isinstance(fire, FireResetEnv):
        fire = fire.env
    fire.on_life_loss = False  # reset-only presses: the ball is never launched again
    assert noop_game(evaluation, 2000) == (False, 2000)
    assert evaluation.unwrapped.ale.lives() == 4
    evaluation.close()
