"""Repeats the async case of a learning test (tests/learning/test_a2c.py or test_dqn.py) N times
and prints, per run, its training time, the greedy return of the checkpoint the test plays over
the test's 100 episodes, its evaluations during training and its policy lag (updates, min / avg /
max of the last logged values): how often the async placement, which is not reproducible from its
seed, would pass. Extra arguments are flags appended to the test's.

    PYTHONPATH=$PWD python benchmarks/repeat_learning_test.py dqn 8 --eval_every_env_frames=5000

Figures: docs/logs/flaky_async_learning_tests_2026-11-25.md.
"""

from __future__ import annotations

import sys
import tempfile
import time

import numpy as np

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.experiment.events import read_scalars
from tests.play_checkpoint import CARTPOLE_SOLVED_EPISODES, play


def main(which: str, runs: int, extra: list[str]) -> None:
    if which == "a2c":
        from tests.learning.test_a2c import HYPERPARAMS, KIND, PLACEMENTS

        flags, algo = [*PLACEMENTS["async"], *HYPERPARAMS], "A2C"
    elif which == "dqn":
        from tests.learning.test_dqn import HYPERPARAMS, KIND, PLACEMENTS

        flags, algo = [*HYPERPARAMS, *PLACEMENTS["async"]], "DQN"
    else:
        raise SystemExit(f"usage: repeat_learning_test.py a2c|dqn RUNS [flags]; got {which!r}")
    passed = 0
    for i in range(runs):
        args = ["--env=CartPole-v1", f"--experiment={which}", f"--train_dir={tempfile.mkdtemp(prefix=which)}"]
        start = time.time()
        status = train(parse_cfg([*args, *flags, *extra]))
        seconds = time.time() - start
        returns = play(args, algo, KIND["async"], episodes=CARTPOLE_SOLVED_EPISODES)
        mean = float(np.mean(returns))
        passed += mean >= 475
        scalars = read_scalars(f"{args[2].split('=', 1)[1]}/{which}")[0]
        ev = scalars.get("eval/return_mean")
        evals = (
            " ".join(f"{v:.0f}@{f // 1000}k" for f, v in zip(ev.env_frames, ev.values, strict=True))
            if ev
            else "-"
        )
        lag = " / ".join(
            f"{np.mean(scalars[t].values):.0f}" if t in scalars else "-"
            for t in (f"train/policy_lag_{k}" for k in ("min", "avg", "max"))
        )
        print(
            f"RESULT {which} run {i}: {status}, train {seconds:.0f} s, mean of {len(returns)} {mean:.1f}, "
            f"{'pass' if mean >= 475 else 'FAIL'}; evaluations {evals}; policy lag min/avg/max (run means) {lag}",
            flush=True,
        )
    print(f"RESULT {which}: {passed} of {runs} runs pass ({' '.join(extra) or 'the test flags'})")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
