"""Learning test: A2C (its own module, `surge.learning.a2c`, on the unchanged placements) solves
CartPole-v1 in the serial and in the async placement: deterministic evaluation of the final
checkpoint averages >= 475. The run stops once its last 100 training episodes average >= 475
(`--score_to_win`, CI time: runs reached it at 95-124k of the 300k frames); a policy that does not
learn runs the whole budget and fails the evaluation. Holding 475 after reaching it is A2C's
stability question (tests/learning/test_a2c_stability.py, docs/logs/a2c_stability_2026-11-24.md)."""

import numpy as np
import pytest

from surge.cfg.cli import parse_cfg
from surge.enjoy import enjoy
from surge.runtime.training_run import train

# fmt: off
HYPERPARAMS = [  # A2C's defaults (rlpyt's) otherwise: Adam 1e-3, n-step returns, entropy 0.01
    # one gradient step per round of 2 x 8 envs x 8 steps = 128 samples (A2C's batch)
    "--algo=A2C", "--num_workers=2", "--num_envs_per_worker=8", "--rollout=8", "--recurrence=8",
    "--use_rnn=False", "--encoder_type=mlp", "--encoder_subtype=mlp",
    "--encoder_mlp_layers", "64", "64", "--nonlinearity=tanh", "--reward_scale=0.1",
    "--with_vtrace=False", "--train_for_env_steps=300000", "--seed=1", "--score_to_win=475",
]
PLACEMENTS = {
    "serial": ["--serial_mode=True"],
    "async": ["--serial_mode=False", "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False"],
}
# fmt: on


@pytest.mark.slow
@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_a2c_reaches_475_on_cartpole(tmp_path, placement):
    args = ["--env=CartPole-v1", "--experiment=a2c", f"--train_dir={tmp_path}"]
    assert train(parse_cfg([*args, *PLACEMENTS[placement], *HYPERPARAMS])) == "done"
    ev = parse_cfg([*args, "--max_num_episodes=10", "--no_render", "--eval_deterministic"], evaluation=True)
    assert ev.algo == "A2C"
    returns = enjoy(ev)["returns"]
    assert np.mean(returns) >= 475, returns
