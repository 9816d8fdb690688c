"""Repeats the async case of a learning test (tests/learning/test_a2c.py or test_dqn.py) N times
and prints, per run, its training time and the greedy returns of the checkpoint the test plays
(10 episodes as the test, and 30): how often the async placement, which is not reproducible from
its seed, would pass. Extra arguments are flags appended to the test's.

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
from tests.play_checkpoint import play


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
        returns = play(args, algo, KIND["async"], episodes=30)
        mean10 = float(np.mean(returns[:10]))  # the test's 10 episodes: the same seeds
        passed += mean10 >= 475
        print(
            f"RESULT {which} run {i}: {status}, train {seconds:.0f} s, mean of 10 {mean10:.1f}, "
            f"of 30 {np.mean(returns):.1f}, {'pass' if mean10 >= 475 else 'FAIL'}",
            flush=True,
        )
    print(f"RESULT {which}: {passed} of {runs} runs pass ({' '.join(extra) or 'the test flags'})")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[2]), sys.argv[3:])
