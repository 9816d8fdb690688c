"""Learning test: A2C (its own module, `surge.algorithms.a2c.declaration`, on the unchanged placements) solves
CartPole-v1 in the serial and in the async placement: deterministic evaluation (100 episodes on
fresh envs) of the run's policy averages >= 475. A policy that does not learn runs the whole
budget and fails.

Serial: the run stops once its last 100 training episodes average >= 475 (`--score_to_win`; CI
time: runs reached it at 95-124k of the 300k frames) and its final checkpoint is played; the
placement is reproducible from its seed.

Async: the run stops at the first evaluation during training (every 10k env frames, 20 greedy
episodes on fixed eval seeds) that scores 500 on all 20 (`--eval_score_to_win`), and that
evaluated checkpoint (`--save_best_by_eval`) is played. The async placement is not reproducible
(the OS interleaves learner and workers), and the training-return stop was not a reliable proxy
for the greedy policy: in 18 runs of seed 1 with it (2026-11-25), 2 did not reach 475 within 300k
frames (a CI run of that kind evaluated 455.8) and one stopped at 119k with a greedy policy that
evaluated 254. Holding 475 after reaching it is A2C's stability question
(tests/learning/test_a2c_stability.py, docs/logs/a2c_stability_2026-11-24.md)."""

import numpy as np
import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from tests.play_checkpoint import CARTPOLE_SOLVED_EPISODES, play

# fmt: off
HYPERPARAMS = [  # A2C's defaults (rlpyt's) otherwise: Adam 1e-3, n-step returns, entropy 0.01
    # one gradient step per round of 2 x 8 envs x 8 steps = 128 samples (A2C's batch)
    "--algo=A2C", "--num_workers=2", "--num_envs_per_worker=8", "--rollout=8", "--recurrence=8",
    "--use_rnn=False", "--encoder_type=mlp", "--encoder_subtype=mlp",
    "--encoder_mlp_layers", "64", "64", "--nonlinearity=tanh", "--reward_scale=0.1",
    "--seed=1",  # (no --with_vtrace: an APPO flag, refused with A2C since APPO owns its section)
]
PLACEMENTS = {
    "serial": ["--serial_mode=True", "--train_for_env_steps=300000", "--score_to_win=475"],
    "async": [
        "--serial_mode=False", "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False",
        "--train_for_env_steps=500000", "--eval_every_env_frames=10000", "--eval_episodes=20",
        "--eval_deterministic=True", "--eval_score_to_win=500", "--save_best_by_eval=True",
    ],
}
KIND = {"serial": "latest", "async": "best"}  # which checkpoint is played (module docstring)
# fmt: on


@pytest.mark.slow
@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_a2c_reaches_475_on_cartpole(tmp_path, placement):
    args = ["--env=CartPole-v1", "--experiment=a2c", f"--train_dir={tmp_path}"]
    assert train(parse_cfg([*args, *PLACEMENTS[placement], *HYPERPARAMS])) == "done"
    returns = play(args, "A2C", KIND[placement], CARTPOLE_SOLVED_EPISODES)
    assert np.mean(returns) >= 475, returns
