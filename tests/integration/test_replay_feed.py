"""The REPLAY feed (`Feed.REPLAY`): a replay learner gets every finished block copied out, the block
is free again at once (no learner holds it), and the learner trains at its own replay ratio, in
both placements. The algorithm is a test double registered by `replay_algorithm.py`."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from replay_algorithm import TEST_REPLAY  # noqa: F401  (registers --algo=TEST_REPLAY)

from surge.app.resolve import parse_cfg
from surge.runtime.serial import SerialPlacement

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ARGS = [
    "--env=CartPole-v1",
    "--algo=TEST_REPLAY",
    "--experiment=replay",
    "--num_workers=2",
    "--num_envs_per_worker=2",
    "--rollout=8",
    "--recurrence=8",
    "--use_rnn=False",
    "--encoder_type=mlp",
    "--encoder_subtype=mlp",
    "--encoder_mlp_layers",
    "16",
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
]


def test_serial_replay_learner_sees_every_block_and_holds_none(tmp_path):
    cfg = parse_cfg([*ARGS, f"--train_dir={tmp_path}", "--serial_mode=True"])
    placement = SerialPlacement(cfg, [], [None])
    placement.start()
    c = placement.c
    reports = 0
    for _ in range(200):
        report = placement.step()
        assert int(c.block_pool.held[:, 0].sum()) == 0  # released as soon as observed
        reports += bool(report.train_stats)
    learner = c.learners[0]
    blocks = (
        200 * cfg.num_workers * cfg.worker_num_splits // cfg.rollout
    )  # splits finish a block every T steps
    assert learner.observed_blocks >= blocks - cfg.num_workers * cfg.worker_num_splits
    assert learner.policy_version == learner.observed_blocks  # replay ratio: one update per block
    assert reports > 0
    placement.close()


@pytest.mark.slow
def test_async_replay_run_trains_and_saves(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(HERE)!r})\n"
        "import replay_algorithm  # noqa: F401\n"
        "if __name__ == '__main__':\n"
        "    from surge.train import main\n"
        "    sys.exit(main(sys.argv[1:]))\n"
    )
    cmd = [sys.executable, str(script), *ARGS, f"--train_dir={tmp_path}", "--train_for_env_steps=4000"]
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{HERE}"}
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, cwd=tmp_path, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    ckpt = sorted((tmp_path / "replay" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    state = torch.load(ckpt, weights_only=True)
    assert state["env_frames"] >= 4000 and state["learner"]["policy_version"] > 10
