"""Learning test: two policies trained jointly on CartPole-v1 (Sample Factory's default mapping: a
random policy per env, re-drawn at each episode start), in the serial and the async placement. Each
policy has its own learner, checkpoints and summaries, and each one alone reaches >= 475 in
`surge enjoy --policy_index=i` (100 greedy episodes, Gym's solved criterion). In every placement the run stops
once each policy has had an evaluation (20 greedy episodes every 10k env frames) at 500
(`--eval_score_to_win`), and each one's best-by-evaluation checkpoint is played. The serial
placement stopped once policy 0's last 100 training episodes averaged >= 475 (`--score_to_win`)
until 2026-12-02; on an Intel Xeon policy 1's final checkpoint then played 268.9. With the
training-return stop in the async placement, 1 of 2 repeated runs (2026-11-25) failed the
evaluation (docs/logs/flaky_async_learning_tests_2026-11-25.md)."""

import numpy as np
import pytest
from test_cartpole import HYPERPARAMS
from test_cartpole import PLACEMENTS as CARTPOLE_PLACEMENTS

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.enjoy import enjoy
from tests.play_checkpoint import CARTPOLE_SOLVED_EPISODES

# The serial placement stops and plays as the async one does. With test_cartpole's serial stop
# (policy 0's training return) policy 1 played 268.9 on an Intel Xeon (2026-12-02): the serial run
# is reproducible on one CPU model only, and the training-return stop watches policy 0 alone.
EVAL_STOP = [f for f in CARTPOLE_PLACEMENTS["async"] if f.startswith("--eval") or f.startswith("--save_best")]
PLACEMENTS = {**CARTPOLE_PLACEMENTS, "serial": ["--serial_mode=True", *EVAL_STOP]}
KIND = dict.fromkeys(PLACEMENTS, "best")


@pytest.mark.slow
@pytest.mark.timeout(1200)  # each learner trains on its own trajectories only (routing by trajectory)
@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_two_policies_each_reach_475_on_cartpole(tmp_path, placement):
    args = ["--env=CartPole-v1", "--experiment=mp", f"--train_dir={tmp_path}"]
    hyper = [h for h in HYPERPARAMS if not h.startswith("--train_for_env_steps")]
    cfg = parse_cfg(
        [*args, *PLACEMENTS[placement], *hyper, "--num_policies=2", "--train_for_env_steps=600000"]
    )
    assert train(cfg) == "done"
    for p in (0, 1):
        assert list((tmp_path / "mp" / f"checkpoint_p{p}").glob("checkpoint_*.pth"))
        assert list((tmp_path / "mp" / "summaries" / str(p)).glob("events.out.tfevents.*"))
        ev = parse_cfg(
            [
                *args,
                f"--policy_index={p}",
                f"--max_num_episodes={CARTPOLE_SOLVED_EPISODES}",
                "--no_render",
                "--eval_deterministic",
            ]
            + [f"--load_checkpoint_kind={KIND[placement]}"],
            evaluation=True,
        )
        returns = enjoy(ev)["returns"]
        assert np.mean(returns) >= 475, (p, returns)
