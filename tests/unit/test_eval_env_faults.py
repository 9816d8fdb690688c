"""An eval env whose `step` raises (`EpisodePlayer.play`): the env is rebuilt and reset with the
next eval seed, the episode it was playing ends there with its return so far, and the following
episodes equal a naive loop over the documented seeds; three faults in a row are an `EnvError`.
Before, the first fault crashed the evaluator process and ended the async run (soak, issue 59)."""

import pytest
import torch
from test_train_eval_episodes import naive_returns

from surge.app.resolve import parse_cfg
from surge.errors import EnvError
from surge.evaluation.episodes import EpisodePlayer


class Faulting:
    """Delegates to `env`; the `step` calls numbered in `faults` (counted over every env the
    factory made, from 1) raise instead of stepping."""

    calls = 0

    def __init__(self, env, faults: set[int]):
        self.env, self.faults = env, faults

    def __getattr__(self, name):
        return getattr(self.env, name)

    def step(self, actions):
        Faulting.calls += 1
        if Faulting.calls in self.faults:
            raise RuntimeError("emulator stopped answering")
        return self.env.step(actions)


def _player(tmp_path, faults: set[int], *extra: str) -> EpisodePlayer:
    cfg = parse_cfg(
        ["--env=CartPole-v1", f"--train_dir={tmp_path}", "--seed=5", "--eval_every_env_frames=1000",
         "--eval_episodes=4", "--eval_deterministic=True", "--use_rnn=True", *extra]
    )  # fmt: skip
    torch.manual_seed(3)
    player = EpisodePlayer(cfg)
    with torch.no_grad():  # episodes of several lengths (as the naive-loop test)
        for p in player.model.parameters():
            p.mul_(4.0)
    make = player._make
    Faulting.calls = 0
    player._make = lambda: Faulting(make(), faults)
    player.env = Faulting(player.env, faults)
    return player


def test_a_fault_ends_the_episode_and_the_next_ones_play_the_next_seeds(tmp_path):
    player = _player(tmp_path, {3}, "--eval_num_envs=1")  # the step calls counted are one env's
    try:
        returns, lengths = player.play()
    finally:
        player.close()
    seeds = [(5 * 100003 + 2**31 + k) % 2**32 for k in range(1, 4)]  # episode 0's seed was cut short
    exp_returns, exp_lengths = naive_returns(player.model, seeds)
    assert (returns, lengths) == ([2.0, *exp_returns], [2, *exp_lengths])
    assert player.env_faults == 1


def test_three_faults_in_a_row_are_an_env_error(tmp_path):
    player = _player(tmp_path, {2, 3, 4}, "--eval_num_envs=1")
    try:
        with pytest.raises(EnvError, match="raised 3 times in a row"):
            player.play()
    finally:
        player.close()


class FaultOnStep:
    """Delegates to `env`; its own `at`-th `step` call raises."""

    def __init__(self, env, at: int):
        self.env, self.at, self.steps = env, at, 0

    def __getattr__(self, name):
        return getattr(self.env, name)

    def step(self, actions):
        self.steps += 1
        if self.steps == self.at:
            raise RuntimeError("emulator stopped answering")
        return self.env.step(actions)


def test_with_several_envs_a_fault_ends_that_envs_episode_and_the_others_are_played_whole(tmp_path):
    """3 envs for 4 episodes: resets 0, 1, 2 start together; env 1 raises on its 3rd step, so
    episode 1 ends there (2 steps, return 2) and the rebuilt env plays reset 3. Every other
    episode is the naive loop's on its own seed, and the episodes come back in reset order."""
    player = _player(tmp_path, set(), "--eval_num_envs=3")
    make = player._make
    made: list = []

    def make_faulting_first():
        env = make()
        made.append(env)
        return FaultOnStep(env, 3) if len(made) == 1 else env  # the first made here is env 1

    player._make = make_faulting_first
    try:
        returns, lengths = player.play()
    finally:
        player.close()
    seeds = [(5 * 100003 + 2**31 + k) % 2**32 for k in (0, 2, 3)]
    (r0, r2, r3), (l0, l2, l3) = naive_returns(player.model, seeds)
    assert (returns, lengths) == ([r0, 2.0, r2, r3], [l0, 2, l2, l3])
    assert player.env_faults == 1 and len(made) == 3  # envs 1 and 2, then env 1 rebuilt


def test_a_fault_on_an_episodes_first_step_leaves_no_episode_and_one_more_reset_is_made(tmp_path):
    """Episode 0 raises before its first step: it has no step to count, so the evaluation makes
    reset 4 as well and still returns its 4 episodes (seeds 1-4)."""
    player = _player(tmp_path, set(), "--eval_num_envs=1")
    player.env = FaultOnStep(player.env, 1)
    try:
        returns, lengths = player.play()
    finally:
        player.close()
    seeds = [(5 * 100003 + 2**31 + k) % 2**32 for k in range(1, 5)]
    assert (returns, lengths) == naive_returns(player.model, seeds)
    assert player.env_faults == 1
