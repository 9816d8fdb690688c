"""A PBT run stopped with Ctrl+C (SIGINT) and resumed: every policy keeps its weights (the resumed
learners start from the stopped run's checkpoints) and its hyper-parameters (PBT's, not the
flags'), and PBT's own state goes on."""

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parents[2]
ARGS = [
    "--env=CartPole-v1",
    "--experiment=pbt",
    "--num_policies=3",
    "--with_pbt=True",
    "--pbt_start_mutation=500",
    "--pbt_period_env_steps=500",
    "--pbt_mutation_rate=1",
    "--pbt_replace_fraction=0.34",
    "--num_workers=2",
    "--num_envs_per_worker=4",
    "--rollout=16",
    "--batch_size=128",
    "--use_rnn=False",
    "--seed=3",
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
    "--serial_mode=False",
]


def _latest(folder: Path, p: int) -> dict:
    last = sorted((folder / f"checkpoint_p{p}").glob("checkpoint_*.pth"))[-1]
    return torch.load(last, weights_only=True)


@pytest.mark.slow
def test_sigint_and_resume_keep_each_policys_weights_and_hyperparams(tmp_path):
    folder = tmp_path / "pbt"
    cmd = [sys.executable, "-m", "surge.train", *ARGS, f"--train_dir={tmp_path}"]
    proc = subprocess.Popen(
        [*cmd, "--train_for_env_steps=10000000"],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.time() + 240
        pbt_log = folder / "pbt_log.jsonl"
        while time.time() < deadline:  # until PBT changed a policy (and replaced one)
            lines = pbt_log.read_text().splitlines() if pbt_log.exists() else []
            if any(json.loads(x)["event"] == "replace" for x in lines):
                break
            assert proc.poll() is None, (folder / "surge_log.txt").read_text()
            time.sleep(0.5)
        else:
            raise AssertionError("PBT replaced no policy in time")
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=120) == 130  # 128 + SIGINT: stopped on request
    finally:
        if proc.poll() is None:
            proc.kill()
    state = json.loads((folder / "pbt_state.json").read_text())
    stopped = [_latest(folder, p) for p in range(3)]
    for p, ckpt in enumerate(stopped):  # the checkpoints hold PBT's values, which are not the flags'
        hp = ckpt["learner"]["hyperparams"]
        assert all(hp[k] == v for k, v in state["hyperparams"][p].items()), p
    assert any(s["learner"]["hyperparams"]["learning_rate"] != 1e-4 for s in stopped)

    # resume for a few more frames: no PBT update can happen in them (period 10^9 from now on)
    frames = int(stopped[0]["env_frames"])
    resumed = subprocess.run(
        [*cmd, f"--train_for_env_steps={frames + 3000}", "--pbt_period_env_steps=1000000000"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    log = (folder / "surge_log.txt").read_text()
    for p, ckpt in enumerate(stopped):
        version = int(ckpt["learner"]["policy_version"])
        assert re.search(rf"Learner {p} \(pid \d+\) on cpu, .* starts at policy version {version}\b", log), p
    after = [_latest(folder, p) for p in range(3)]
    for p in range(3):
        assert after[p]["learner"]["hyperparams"] == stopped[p]["learner"]["hyperparams"], p
        assert after[p]["learner"]["policy_version"] >= stopped[p]["learner"]["policy_version"]
    new_state = json.loads((folder / "pbt_state.json").read_text())
    assert all(b >= a for a, b in zip(state["frames_played"], new_state["frames_played"], strict=True))
    assert "PBT resumed from" in log
