"""Self-play on a tiny two-player zero-sum game (`two_player_toy.HigherNumber`: the higher number
wins): policy 0 beats its first snapshot, snapshots join the pool, ratings move, and the pool
survives a resume."""

import json

import pytest
import torch
import two_player_toy  # noqa: F401  (registers --env=higher_number)

from surge.app.resolve import parse_cfg
from surge.app.training_run import train

ARGS = [
    "--env=higher_number",
    "--experiment=sp",
    "--num_policies=3",
    "--self_play=True",
    "--self_play_games_to_check=100",
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
]


@pytest.mark.slow
def test_self_play_promotes_snapshots_and_the_pool_survives_a_resume(tmp_path):
    args = [*ARGS, f"--train_dir={tmp_path}"]
    assert train(parse_cfg([*args, "--train_for_env_steps=3000"])) == "done"
    folder = tmp_path / "sp" / "self_play"
    pool = json.loads((folder / "pool.json").read_text())
    ids = [s["id"] for s in pool["snapshots"]]
    assert len(ids) >= 2, "no snapshot joined the pool"  # the higher number is easy to learn
    for i in ids:
        assert (folder / f"snapshot_{i:04d}.pth").exists()
    # against the random initial snapshot 0, picking 2 scores 5/6: policy 0's rating rose above it
    by_id = {s["id"]: s for s in pool["snapshots"]}
    assert pool["learner_elo"] > by_id[0]["elo"] + 100
    log = (tmp_path / "sp" / "surge_log.txt").read_text()
    assert "Self-play: win rate" in log and "now in opponent slot(s) [0]" in log
    history = [json.loads(line) for line in (folder / "history.jsonl").read_text().splitlines()]
    games = [h["games"] for h in history]
    assert games == sorted(games) and games[-1] == pool["games"]
    assert history[-1]["return_sum"] == 0.0  # every game of this run was zero-sum
    last = torch.load(folder / f"snapshot_{max(ids):04d}.pth", weights_only=True)
    assert last["policy_version"] > 0

    (tmp_path / "sp" / "done").unlink()
    assert train(parse_cfg([*args, "--train_for_env_steps=4000"])) == "done"
    log = (tmp_path / "sp" / "surge_log.txt").read_text()
    assert f"Self-play: resumed the pool of {len(ids)} snapshot(s)" in log
    again = json.loads((folder / "pool.json").read_text())
    assert again["games"] > pool["games"]  # the count goes on from the saved pool
    assert [s["id"] for s in again["snapshots"]][: len(ids)] == ids
