"""Learning test of `--use_prev_action_reward`: a task that only the previous reward solves
(`LastRewardTells-v0`, tests/last_reward_tells.py: the paying action is told by the previous
step's reward, the observation is a constant; 9 at best, 0 at chance). The same GRU policy, the
same budget, with and without the flag. The return checked is that of the last training episodes
as the sampler played them, so a model that is fed zeros instead of the two inputs fails.
"""

from __future__ import annotations

import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import TrainingRun
from tests.last_reward_tells import EPISODE

# fmt: off
# rollout = recurrence = episode length and no decorrelation: each trajectory is one episode
HYPERPARAMS = [
    "--env=tests.last_reward_tells:LastRewardTells-v0", "--experiment=prev", "--serial_mode=True", f"--rollout={EPISODE}",
    f"--recurrence={EPISODE}", "--decorrelate_envs_on_one_worker=False", "--num_workers=2",
    "--num_envs_per_worker=16", f"--batch_size={32 * EPISODE}", "--ppo_epochs=2",
    "--learning_rate=0.003", "--hidden_size=32", "--encoder_mlp_layers", "32", "--use_rnn=True",
    "--train_for_env_steps=150000", "--num_torch_threads=1", "--stats_avg=200", "--seed=1",
    "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False",
]
# fmt: on


# Serial, seed 1: 7.69 at 150k frames (seed 2: 7.73). Async runs are not reproducible from their
# seed: one reached 9.07 by 103k frames and held it to 300k (2026-12-02); its budget is 200k.
PLACEMENTS = {
    "serial": [],
    "async": ["--serial_mode=False", "--train_for_env_steps=200000"],
}


def _train(tmp_path, flag: bool, *args: str) -> float:
    """Trains and returns the mean return of the last 200 training episodes."""
    cfg = parse_cfg([f"--train_dir={tmp_path}", *HYPERPARAMS, f"--use_prev_action_reward={flag}", *args])
    run = TrainingRun(cfg)
    assert run.run() == "done"
    return run.monitor.mean_return()


@pytest.mark.slow
@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_the_previous_reward_is_learned_from_with_the_flag(tmp_path, placement):
    mean = _train(tmp_path, True, *PLACEMENTS[placement])
    assert mean >= 6.0, mean  # 9 at best, 0 at chance


@pytest.mark.slow
def test_without_the_flag_the_policy_stays_at_chance(tmp_path):
    mean = _train(tmp_path, False)
    # 200 episodes of 10 steps of ±1 at chance: standard error 0.22; 1.5 is over 6 of them
    assert abs(mean) < 1.5, mean
