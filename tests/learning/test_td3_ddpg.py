"""Learning tests: TD3, DDPG and SAC (`surge.algorithms.ddpg_td3.td3`, `ddpg`, `sac`, on the unchanged
placements, replay feed) reach a mean return >= -200 on Pendulum-v1 within 20k env steps: the best
checkpoint by evaluation every 2k steps (10 deterministic episodes) is played by `surge enjoy` for 10
deterministic episodes (the algorithm's `eval_act`).

Hyper-parameters: Stable-Baselines3 zoo's Pendulum ones (gamma 0.98, lr 1e-3, Gaussian noise 0.1
for TD3/DDPG) with smaller networks (64, 64) and minibatches (128) so that a 2-core CI machine runs
each in a few minutes; 1000 random steps first, one update per env step, one env.

A run stops once its last 25 training episodes (200 steps each, exploration included) average
>= -200 (`--score_to_win`, CI time); a run that does not learn trains the whole 20k steps and fails
the evaluation as before. In the per-episode returns of a CI run's 20k-step checkpoints (seed 1),
that stop came at episode 54-57 (TD3), 41 (DDPG) and 68 (SAC) of 100, and every later 10-episode
window of training returns averaged >= -200; a 10-episode window would have stopped SAC at
episode 30, before two episodes of -1206 and -1453 at 42-43.
"""

import numpy as np
import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from tests.play_checkpoint import play

# fmt: off
HYPERPARAMS = [
    "--num_workers=1", "--num_envs_per_worker=1", "--worker_num_splits=1", "--rollout=8",
    "--gamma=0.98", "--learning_rate=1e-3", "--learning_starts=1000", "--net_arch", "64", "64",
    "--batch_size=128", "--train_for_env_steps=20000", "--seed=1", "--num_torch_threads=1",
    "--stats_avg=25", "--score_to_win=-200",
]
# Both placements play their best checkpoint by evaluation every 2k steps. The async run is not
# reproducible from its seed: at CI 604b1b7 it stopped by --score_to_win at 11k steps with a final
# policy that failed 2 of 10 swing-ups (-731); with the best checkpoint, seeds 1-3 evaluated -122,
# -115, -124 (2026-11-25). The serial run is reproducible on one CPU model only: on an Intel Xeon
# (2026-12-02) SAC's final checkpoint after the --score_to_win stop played -409 (one swing-up of
# -1082), where an AMD EPYC's passed.
BEST_BY_EVAL = [
    "--eval_every_env_frames=2000", "--eval_episodes=10", "--eval_deterministic=True", "--save_best_by_eval=True",
]
PLACEMENTS = {
    "serial": ["--serial_mode=True", *BEST_BY_EVAL],
    "async": [
        "--serial_mode=False", "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False",
        *BEST_BY_EVAL,
    ],
}
KIND = {"serial": "best", "async": "best"}
# fmt: on


def _train_and_play(tmp_path, algo: str, placement: str) -> list[float]:
    args = ["--env=Pendulum-v1", f"--experiment={algo}", f"--train_dir={tmp_path}"]
    assert train(parse_cfg([*args, f"--algo={algo}", *PLACEMENTS[placement], *HYPERPARAMS])) == "done"
    return play(args, algo, KIND[placement])


@pytest.mark.slow
@pytest.mark.parametrize("algo", ["TD3", "DDPG", "SAC"])
def test_reaches_minus_200_on_pendulum_serial(tmp_path, algo):
    returns = _train_and_play(tmp_path, algo, "serial")
    assert len(returns) == 10
    assert np.mean(returns) >= -200, returns


@pytest.mark.slow
def test_td3_reaches_minus_200_on_pendulum_async(tmp_path):
    returns = _train_and_play(tmp_path, "TD3", "async")
    assert np.mean(returns) >= -200, returns
