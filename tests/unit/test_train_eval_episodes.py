"""Evaluation during training: the episode loop (`surge.evaluation.episodes.EpisodePlayer`)
against a naive loop over the same seeds, and the refused flag combinations."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from surge.app.notes import config_notes
from surge.app.resolve import parse_cfg
from surge.errors import ConfigError
from surge.evaluation.episodes import EpisodePlayer


def naive_returns(model, seeds: list[int]) -> tuple[list[float], list[int]]:
    """Reference: a fresh gymnasium CartPole-v1 per episode, reset with its seed, the greedy
    action (argmax of the policy's logits), the recurrent state carried from step to step."""
    returns, lengths = [], []
    for seed in seeds:
        env = gym.make("CartPole-v1")
        obs, _ = env.reset(seed=seed)
        state = torch.zeros(1, model.rnn_state_size)
        total, steps, done = 0.0, 0, False
        while not done:
            out = model.act(torch.as_tensor(obs, dtype=torch.float32)[None], state)
            state = out.rnn_states
            obs, reward, terminated, truncated, _ = env.step(int(out.logits[0].argmax()))
            total, steps, done = total + float(reward), steps + 1, terminated or truncated
        returns.append(total)
        lengths.append(steps)
    return returns, lengths


@pytest.mark.parametrize("num_envs", [1, 4, 8])
@pytest.mark.parametrize("use_rnn", [False, True])
def test_deterministic_eval_equals_a_naive_loop_over_the_documented_seeds(tmp_path, use_rnn, num_envs):
    """One env at a time or several at once (8 asked, 6 made: one per episode), the same
    episodes: episode k on seed k, each played to its end, in episode order."""
    cfg = parse_cfg(
        [
            "--env=CartPole-v1",
            f"--train_dir={tmp_path}",
            "--seed=5",
            "--eval_every_env_frames=1000",
            "--eval_episodes=6",
            "--eval_deterministic=True",
            f"--use_rnn={use_rnn}",
            f"--eval_num_envs={num_envs}",
        ]
    )
    torch.manual_seed(3)
    player = EpisodePlayer(cfg)
    try:
        with torch.no_grad():  # a fixed policy whose episodes differ in length (not all 9 steps)
            for p in player.model.parameters():
                p.mul_(4.0)
        returns, lengths = player.play()
        again = player.play()
    finally:
        player.close()
    seeds = [(5 * 100003 + 2**31 + k) % 2**32 for k in range(6)]  # docs/evaluation.md
    expected = naive_returns(player.model, seeds)
    assert (returns, lengths) == expected
    assert again == expected  # every evaluation plays the same seeds
    assert len(set(returns)) > 1
    assert len(player.envs) == min(num_envs, 6)


def test_sampled_eval_plays_the_requested_number_of_whole_episodes(tmp_path):
    cfg = parse_cfg(
        ["--env=CartPole-v1", f"--train_dir={tmp_path}", "--eval_every_env_frames=1000", "--eval_episodes=3"]
    )
    player = EpisodePlayer(cfg)
    try:
        returns, lengths = player.play()
    finally:
        player.close()
    assert len(returns) == len(lengths) == 3
    assert returns == [float(n) for n in lengths]  # CartPole: reward 1 per step


@pytest.mark.parametrize(
    ("flags", "field"),
    [
        (["--eval_every_env_frames=1000", "--eval_episodes=0"], "eval_episodes"),
        (["--eval_every_env_frames=1000", "--eval_num_envs=0"], "eval_num_envs"),
        (["--eval_every_env_frames=-5"], "eval_every_env_frames"),
        (["--save_best_by_eval=True"], "save_best_by_eval"),
        (["--eval_score_to_win=475"], "eval_score_to_win"),
        (["--eval_every_env_frames=1000", "--eval_score_to_win=inf"], "eval_score_to_win"),
        (["--eval_every_env_frames=1000", "--algo=DUMMY_SAMPLER"], "eval_every_env_frames"),
        (["--eval_every_env_frames=1000", "--sampler_only=True"], "eval_every_env_frames"),
        (["--eval_every_env_frames=1000", "--no_writes=True"], "eval_every_env_frames"),
        (["--eval_every_env_frames=1000", "--distributed=ray"], "eval_every_env_frames"),
    ],
)
def test_combinations_that_cannot_work_are_refused_naming_the_flag(tmp_path, flags, field):
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", *flags])
    assert e.value.field == field
    assert "--" in str(e.value)  # the fix names a flag


def test_eval_flags_without_evaluation_are_reported_and_enjoy_keeps_one_value(tmp_path):
    cfg = parse_cfg(
        ["--env=CartPole-v1", f"--train_dir={tmp_path}", "--eval_episodes=3", "--eval_deterministic"]
    )
    notes = config_notes(cfg)
    assert any("--eval_episodes has no effect" in n for n in notes)
    envs_notes = config_notes(
        parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", "--eval_num_envs=2"])
    )
    assert any("--eval_num_envs has no effect" in n for n in envs_notes)
    # not "no effect": it is saved as enjoy's default
    assert any("--eval_deterministic is not used in training" in n and "enjoy" in n for n in notes)
    dqn = parse_cfg(
        [
            "--env=CartPole-v1",
            f"--train_dir={tmp_path}",
            "--algo=DQN",
            "--eval_every_env_frames=1000",
            "--train_for_env_steps=100000",
        ]
    )
    assert any("--eval_deterministic=False has no effect with --algo=DQN" in n for n in config_notes(dqn))
    ev = parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", "--eval_deterministic"], evaluation=True)
    assert ev.eval_deterministic is True and ev.eval_params.eval_deterministic is True
    assert np.isclose(parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}"]).eval_episodes, 10)


def test_best_by_eval_writes_only_improvements_with_the_given_weights_and_survives_a_resume(tmp_path):
    from surge.evaluation.best_by_eval import BestByEval

    cfg = parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", "--eval_every_env_frames=1000"])
    folder = tmp_path / "checkpoint_p0"
    best = BestByEval(cfg, {0: folder}, resume=False)
    w1, w2 = {"w": torch.ones(3)}, {"w": torch.full((3,), 2.0)}
    counters = {"env_frames": 1000, "env_steps": 1000}
    assert best.offer(0, w1, 7, 50.0, counters) is not None
    assert best.offer(0, w2, 9, 40.0, {**counters, "env_frames": 2000}) is None  # worse: kept
    files = sorted(folder.glob("best_*.pth"))
    assert [f.name for f in files] == ["best_v000000007_f000000001000.pth"]
    state = torch.load(files[0], weights_only=True)
    assert torch.equal(state["model"]["w"], w1["w"]) and state["eval_return"] == 50.0
    resumed = BestByEval(cfg, {0: folder}, resume=True)
    assert resumed.offer(0, w2, 9, 45.0, counters) is None  # the resumed best is 50
    assert resumed.offer(0, w2, 11, 60.0, {**counters, "env_frames": 3000}) is not None
    files = sorted(folder.glob("best_*.pth"))
    assert [f.name for f in files] == ["best_v000000011_f000000003000.pth"]  # only the newest best
    assert torch.equal(torch.load(files[0], weights_only=True)["model"]["w"], w2["w"])


def test_a_better_best_after_a_resume_from_an_older_checkpoint_stays_on_disk(tmp_path):
    """A run that wrote a best at version 20 and resumed from a checkpoint of version 10 (a crash
    between the two) writes its next, better best at a lower version: that file is the one kept."""
    from surge.evaluation.best_by_eval import BestByEval

    cfg = parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", "--eval_every_env_frames=1000"])
    folder = tmp_path / "checkpoint_p0"
    counters = {"env_frames": 2000, "env_steps": 2000}
    assert BestByEval(cfg, {0: folder}, resume=False).offer(0, {"w": torch.ones(1)}, 20, 50.0, counters)
    resumed = BestByEval(cfg, {0: folder}, resume=True)
    path = resumed.offer(0, {"w": torch.full((1,), 2.0)}, 12, 80.0, {**counters, "env_frames": 1200})
    assert path is not None and path.exists()
    assert [f.name for f in folder.glob("best_*.pth")] == [path.name]
    assert torch.load(path, weights_only=True)["eval_return"] == 80.0


def test_eval_score_to_win_stops_only_once_every_learning_policy_has_reached_it():
    from types import SimpleNamespace

    from surge.evaluation.train_eval import TrainEvaluator

    ev = TrainEvaluator.__new__(TrainEvaluator)  # the stop rule alone: no run, no eval env
    ev.cfg, ev.policies, ev.reached, ev.won = SimpleNamespace(eval_score_to_win=10.0), [0, 1], {}, False

    def offer(pid: int, ret: float, frames: int) -> bool:
        ev._check_won(SimpleNamespace(policy_id=pid, return_mean=ret, returns=[ret], env_frames=frames))
        return ev.won

    assert not offer(0, 12.0, 1000)  # policy 1 has not scored yet
    assert not offer(0, 3.0, 2000)  # a later worse evaluation does not undo policy 0's
    assert not offer(1, 9.99, 2000)
    assert offer(1, 10.0, 3000)  # at or above, as --score_to_win
    assert ev.reached == {0: 1000, 1: 3000}
