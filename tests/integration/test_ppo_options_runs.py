"""rl_games' PPO options end to end: `--score_to_win` stops a CartPole run early (cleanly: done,
final checkpoint, a log line) and an unreachable one does not; the KL-adaptive learning rate lives in
the learner process of the async placement and is saved with its checkpoint."""

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train

BUDGET = 8192
# the score_to_win runs' budget: far beyond where they stop. The async placement's stop comes
# within about a second of the 10th episode (episodes reach the main process every 0.5 s), which on
# a fast machine is several thousand env frames: the run must stop well before this, not by a
# fraction of the 8192 frames of the other runs
WIN_BUDGET = 100_000

PLACEMENTS = {
    "serial": ["--serial_mode=True"],
    "async": [
        "--serial_mode=False",
        "--decorrelate_experience_max_seconds=0",
        "--set_workers_cpu_affinity=False",
    ],
}


def _cfg(tmp_path, placement, *extra, budget=BUDGET):
    return parse_cfg(
        [
            "--env=cartpole",
            "--experiment=win",
            f"--train_dir={tmp_path}",
            *PLACEMENTS[placement],
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--rollout=32",
            "--batch_size=128",
            "--stats_avg=10",
            f"--train_for_env_steps={budget}",
            "--seed=0",
            "--num_torch_threads=1",
            *extra,
        ]
    )


@pytest.mark.slow
@pytest.mark.parametrize("placement", ["serial", "async"])
def test_score_to_win_stops_the_run_cleanly(tmp_path, placement):
    # a random CartPole policy's episodes last about 20 steps: 10 of them average well above 5
    assert train(_cfg(tmp_path, placement, "--score_to_win=5", budget=WIN_BUDGET)) == "done"
    exp = tmp_path / "win"
    assert (exp / "done").exists()
    ckpts = sorted((exp / "checkpoint_p0").glob("checkpoint_*.pth"))
    state = torch.load(ckpts[-1], weights_only=True)
    assert state["env_frames"] < WIN_BUDGET / 4
    assert len(state["episode_returns"]) >= 10
    log = (exp / "surge_log.txt").read_text()
    assert "--score_to_win=5" in log and "Stopping: policy 0's mean return over its last 10 episodes" in log


@pytest.mark.slow
def test_an_unreachable_score_to_win_does_not_stop_the_run(tmp_path):
    assert train(_cfg(tmp_path, "serial", "--score_to_win=1000")) == "done"
    state = torch.load(
        sorted((tmp_path / "win" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1], weights_only=True
    )
    assert state["env_frames"] >= BUDGET
    assert "Stopping: policy 0" not in (tmp_path / "win" / "surge_log.txt").read_text()


@pytest.mark.slow
def test_kl_adaptive_rate_is_saved_by_the_async_learner(tmp_path):
    cfg = _cfg(
        tmp_path,
        "async",
        "--lr_schedule=kl_adaptive_epoch",
        "--lr_schedule_kl_threshold=1000",  # every KL is far below: the rate rises every epoch
        "--learning_rate=1e-5",
        "--ppo_epochs=2",
        "--train_for_env_steps=2048",
    )
    assert train(cfg) == "done"
    state = torch.load(
        sorted((tmp_path / "win" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1], weights_only=True
    )
    kl_state = state["learner"]["kl_adaptive_lr"]
    assert kl_state["updates"] >= 2
    assert kl_state["lr"] == pytest.approx(min(1e-5 * 1.5 ** kl_state["updates"], 1e-2))
    assert state["learner"]["optimizers"]["model"]["param_groups"][0]["lr"] == pytest.approx(kl_state["lr"])
