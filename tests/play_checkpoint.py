"""Plays a trained run's checkpoint by `surge enjoy`, as the learning tests judge a run."""

from __future__ import annotations

from surge.app.resolve import parse_cfg
from surge.enjoy import enjoy

#: Gym's criterion for CartPole-v1 solved: a mean return >= 475 over 100 consecutive episodes. With
#: 10, one episode moves the mean by up to 50: a best checkpoint that had scored 500 on all 20 of its
#: eval episodes played 465.4 over 10 (two-policy test, CI of 2026-12-04; one episode of 318).
CARTPOLE_SOLVED_EPISODES = 100


def play(run_args: list[str], algo: str, kind: str = "latest", episodes: int = 10) -> list[float]:
    """Returns of `episodes` deterministic episodes (the algorithm's `eval_act`) of the run named by
    `run_args` (`--env`, `--experiment`, `--train_dir`), on fresh envs.

    `kind` is `--load_checkpoint_kind`: `latest` (the final checkpoint) or `best`. Raises
    AssertionError if the run's saved config names another algorithm than `algo`."""
    play_args = ["--no_render", "--eval_deterministic", f"--max_num_episodes={episodes}"]
    ev = parse_cfg([*run_args, *play_args, f"--load_checkpoint_kind={kind}"], evaluation=True)
    assert ev.algo == algo, (ev.algo, algo)
    return list(enjoy(ev)["returns"])
