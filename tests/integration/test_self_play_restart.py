"""Self-play's state through a restart (issue 59, item 3), serial placement, on the two-player toy
game (`two_player_toy.HigherNumber`): the pool (`self_play/pool.json`: snapshots, slots, Elo
ratings, games, the win-rate windows) and the snapshots' weights (`snapshot_<id>.pth`).

- SIGINT at a seeded random moment after the first checkpoint, then the same command: the pool,
  every snapshot and policy 0's weights end as those of the run that never stopped.
- SIGKILL at such a moment: the resumed pool is the `pool.json` the killed run left, and each
  opponent slot acts with the weights of the snapshot file that pool names.
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
import torch
import two_player_toy  # noqa: F401  (registers --env=higher_number in this process too)
from restart_kill import UNREACHED, kill_if_running, resume_budget, run, start, stop_after_first_checkpoint

from surge.population.self_play import SelfPlayController

ARGS = [
    "--env=higher_number",
    "--experiment=sp",
    "--num_policies=3",
    "--self_play=True",
    "--self_play_games_to_check=50",
    "--self_play_update_score=0.6",
    "--num_workers=1",
    "--num_envs_per_worker=16",
    "--worker_num_splits=1",
    "--rollout=8",
    "--recurrence=8",
    "--batch_size=128",
    "--learning_rate=0.003",
    "--use_rnn=False",
    "--encoder_type=mlp",
    "--encoder_subtype=mlp",
    "--encoder_mlp_layers",
    "16",
    "--seed=1",
    "--serial_mode=True",
    "--decorrelate_experience_max_seconds=0",
    "--decorrelate_envs_on_one_worker=False",
    "--set_workers_cpu_affinity=False",
    "--num_torch_threads=1",
    "--write_report=False",
    "--save_every_sec=1",
]
TOY = "two_player_toy"


def _snapshots(folder: Path) -> dict[str, dict]:
    return {f.name: torch.load(f, weights_only=True) for f in sorted(folder.glob("snapshot_*.pth"))}


def _final(folder: Path) -> dict:
    return torch.load(sorted((folder / "checkpoint_p0").glob("checkpoint_*.pth"))[-1], weights_only=True)


def _equal(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


@pytest.mark.slow
def test_ctrl_c_at_a_random_moment_then_resume_ends_as_the_run_that_never_stopped(tmp_path):
    stopped = tmp_path / "stopped"
    proc = start([*ARGS, f"--train_for_env_steps={UNREACHED}"], stopped, TOY)
    try:
        stop_after_first_checkpoint(proc, stopped / "sp", signal.SIGINT, seed=3, max_delay=1.0)
    finally:
        kill_if_running(proc)
    budget = [f"--train_for_env_steps={resume_budget(stopped / 'sp', 3000)}"]
    resumed = run([*ARGS, *budget], stopped, TOY)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    ref = tmp_path / "ref"
    done = run([*ARGS, *budget], ref, TOY)
    assert done.returncode == 0, done.stderr[-3000:]
    a, b = ref / "sp", stopped / "sp"
    assert "Self-play: resumed the pool" in (b / "surge_log.txt").read_text()
    pool = json.loads((a / "self_play" / "pool.json").read_text())
    assert len(pool["snapshots"]) >= 2, "no snapshot joined the pool: the test shows nothing"
    assert json.loads((b / "self_play" / "pool.json").read_text()) == pool
    x, y = _snapshots(a / "self_play"), _snapshots(b / "self_play")
    assert x.keys() == y.keys()
    for name in x:
        assert _equal(x[name]["model"], y[name]["model"]), name
        assert (x[name]["policy_version"], x[name]["env_frames"]) == (
            y[name]["policy_version"],
            y[name]["env_frames"],
        )
    assert _equal(_final(a)["model"], _final(b)["model"])


@pytest.mark.slow
def test_sigkill_at_a_random_moment_then_resume_loads_the_pool_the_run_left(tmp_path, monkeypatch):
    folder = tmp_path / "sp"
    proc = start([*ARGS, f"--train_for_env_steps={UNREACHED}"], tmp_path, TOY)
    try:
        stop_after_first_checkpoint(proc, folder, signal.SIGKILL, seed=4, max_delay=1.5)
    finally:
        kill_if_running(proc)
    saved = json.loads((folder / "self_play" / "pool.json").read_text())
    files = _snapshots(folder / "self_play")

    # the resume runs in this process to see the controller right after it loaded the pool
    from surge.app.resolve import parse_cfg
    from surge.app.training_run import train

    seen: list[tuple[dict, list[dict]]] = []
    original = SelfPlayController.start

    def spy(self: SelfPlayController, placement, resume: bool, env_frames: int) -> None:
        original(self, placement, resume, env_frames)
        slots = [placement.policy_weights(slot + 1)[0] for slot in range(self.pool.num_slots)]
        seen.append((json.loads(json.dumps(self.pool.state_dict())), slots))

    monkeypatch.setattr(SelfPlayController, "start", spy)
    assert (
        train(parse_cfg([*ARGS, f"--train_dir={tmp_path}", f"--train_for_env_steps={resume_budget(folder)}"]))
        == "done"
    )
    (state, slots), *_ = seen
    assert state == saved
    for slot, sid in enumerate(saved["slots"]):
        assert _equal(slots[slot], files[f"snapshot_{sid:04d}.pth"]["model"]), (slot, sid)
