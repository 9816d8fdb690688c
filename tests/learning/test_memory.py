"""Learning test that needs memory: on `memory_cue` (surge.envs.memory: the cue is shown at the
first step only, the answer is asked after 5 blank steps; return +1 right, -1 wrong, chance 0),
APPO with a GRU or an LSTM core learns to answer right, in the serial and in the async placement.
A feed-forward policy stays at chance on the same budget, which shows the task cannot be solved
without carrying the hidden state from the cue to the query.

Guards, end to end: the hidden state written by inference and read back on the next step,
truncated BPTT in the learner, V-trace on recurrent trajectories. (The reset of the state at
episode starts is guarded by tests/integration/test_rnn_state_protocol.py: here every trajectory
is one whole episode, and a policy can learn to overwrite a stale state with the cue.) The return
checked is that of the last 200 training episodes (1000 for the feed-forward policy) as the
sampler played them, not of a separate evaluation, so a policy that acts without its memory fails
even if the learner's model would answer right."""

import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import TrainingRun
from surge.envs.memory import CHANCE_RETURN

# fmt: off
# rollout = recurrence = episode length (5 + 2) and no decorrelation: each trajectory is one episode.
# Serial runs reach 0.9 after 19-31k frames (GRU and LSTM, seeds 1-3); the budget is twice that.
# Async runs are not reproducible from their seed and get twice the budget again: at 60k frames the
# LSTM failed 1 run in 5 (seeds 1-5: 1.0, 0.99, 0.16, 1.0, 1.0; one CI failure with seed 1, 0.06),
# at 120k it reached 1.0 in 6 of 6 (seeds 1-6), 2026-11-25.
HYPERPARAMS = [
    "--memory_delay=5", "--rollout=7", "--recurrence=7", "--decorrelate_envs_on_one_worker=False",
    "--num_workers=2", "--num_envs_per_worker=16", "--batch_size=448", "--ppo_epochs=2",
    "--learning_rate=0.003", "--with_vtrace=True", "--hidden_size=32", "--encoder_mlp_layers", "32",
    "--train_for_env_steps=60000", "--num_torch_threads=1",
    "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False",
]
PLACEMENTS = {
    "serial": ["--serial_mode=True"],
    "async": ["--serial_mode=False", "--train_for_env_steps=120000"],
}
# fmt: on


def _train(tmp_path, *args, episodes: int = 200) -> float:
    """Trains and returns the mean return of the last `episodes` training episodes."""
    cfg = parse_cfg(
        [
            "--env=memory_cue",
            "--experiment=mem",
            f"--train_dir={tmp_path}",
            f"--stats_avg={episodes}",
            *HYPERPARAMS,
            *args,
        ]
    )
    run = TrainingRun(cfg)
    assert run.run() == "done"
    assert len(run.monitor.returns) == episodes
    return run.monitor.mean_return()


@pytest.mark.slow
@pytest.mark.parametrize("placement", list(PLACEMENTS))
@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
def test_recurrent_policy_remembers_the_cue(tmp_path, rnn_type, placement):
    mean = _train(tmp_path, "--use_rnn=True", f"--rnn_type={rnn_type}", *PLACEMENTS[placement], "--seed=1")
    assert mean >= 0.8, mean  # chance is 0; right 90% of the time gives 0.8


@pytest.mark.slow
def test_feed_forward_policy_stays_at_chance(tmp_path):
    mean = _train(tmp_path, "--use_rnn=False", "--serial_mode=True", "--seed=1", episodes=1000)
    # 1000 episodes of ±1 at chance: standard error 0.032; 0.15 is over 4.5 of them, far below 0.8
    assert abs(mean - CHANCE_RETURN) < 0.15, mean


@pytest.mark.slow
def test_memory_cue_learns_with_its_family_defaults(tmp_path):
    """`--env=memory_cue` with only the placement, budget and seed: the family's defaults are the
    hyper-parameters above (a 1024-sample batch of 7-step trajectories was refused before)."""
    cfg = parse_cfg(
        [
            "--env=memory_cue",
            "--experiment=mem",
            f"--train_dir={tmp_path}",
            "--stats_avg=200",
            "--serial_mode=True",
            "--num_workers=2",
            "--train_for_env_steps=60000",
            "--seed=1",
        ]
    )
    run = TrainingRun(cfg)
    assert run.run() == "done"
    assert run.monitor.mean_return() >= 0.8, run.monitor.mean_return()
