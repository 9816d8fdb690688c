"""Serial placement end to end: training writes its folder, resumes, stops cleanly, enjoy plays."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train


def _cfg(tmp_path, *extra, env="cartpole"):
    return parse_cfg(
        [
            f"--env={env}",
            "--experiment=exp",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=2",
            "--num_envs_per_worker=2",
            "--seed=0",
            *extra,
        ]
    )


def _checkpoints(folder: Path):
    return sorted((folder / "checkpoint_p0").glob("checkpoint_*.pth"))


@pytest.mark.slow
def test_cartpole_trains_writes_folder_and_resumes(tmp_path):
    status = train(_cfg(tmp_path, "--train_for_env_steps=3000"))
    exp = tmp_path / "exp"
    assert status == "done"
    assert (exp / "done").exists() and (exp / "surge_log.txt").stat().st_size > 0
    assert json.loads((exp / "cfg.json").read_text())["env"] == "cartpole"
    assert list((exp / "summaries" / "0").glob("events.out.tfevents.*"))
    state = torch.load(_checkpoints(exp)[-1], weights_only=True)
    assert state["env_frames"] >= 3000 and state["learner"]["policy_version"] > 0

    # a finished run is not retrained
    assert train(_cfg(tmp_path, "--train_for_env_steps=3000")) == "already_done"

    # raising the budget and removing the marker resumes: the frame counter continues
    (exp / "done").unlink()
    assert train(_cfg(tmp_path, "--train_for_env_steps=6000")) == "done"
    resumed = torch.load(_checkpoints(exp)[-1], weights_only=True)
    assert resumed["env_frames"] >= 6000
    assert resumed["learner"]["policy_version"] > state["learner"]["policy_version"]
    log = (exp / "surge_log.txt").read_text()
    assert f"Resumed from env frame {state['env_frames']}" in log
    assert "train_for_env_steps changed on resume" in log


@pytest.mark.slow
def test_atari_with_rnn_and_vtrace_runs_a_few_thousand_frames(tmp_path):
    status = train(
        _cfg(
            tmp_path,
            "--train_for_env_steps=2048",
            "--use_rnn=True",
            "--with_vtrace=True",
            "--rollout=16",
            "--recurrence=16",
            "--batch_size=64",
            "--ppo_epochs=1",
            "--num_batches_per_iteration=1",
            "--encoder_subtype=convnet_simple",
            "--hidden_size=64",
            env="atari_pong",
        )
    )
    assert status == "done"
    state = torch.load(_checkpoints(tmp_path / "exp")[-1], weights_only=True)
    assert state["env_frames"] >= 2048  # frames = env steps x 4


@pytest.mark.slow
def test_sigint_saves_a_loadable_checkpoint_and_the_same_command_resumes(tmp_path):
    cmd = [
        sys.executable,
        "-m",
        "surge.train",
        "--env=cartpole",
        "--experiment=sig",
        f"--train_dir={tmp_path}",
        "--serial_mode=True",
        "--num_workers=1",
        "--num_envs_per_worker=2",
        "--train_for_env_steps=100000000",
        "--save_every_sec=1000",
    ]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    log = tmp_path / "sig" / "surge_log.txt"
    deadline = time.time() + 60
    while time.time() < deadline and not (log.exists() and "Env frames/s" in log.read_text()):
        time.sleep(0.5)
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130, out  # 128 + SIGINT: stopped on request
    ckpts = _checkpoints(tmp_path / "sig")
    assert len(ckpts) == 1
    frames = torch.load(ckpts[0], weights_only=True)["env_frames"]
    assert frames > 0
    assert not list((tmp_path / "sig" / "checkpoint_p0").glob(".tmp_*"))
    assert not (tmp_path / "sig" / "done").exists()
    # resume continues the counter
    proc = subprocess.Popen(
        cmd[:-2] + [f"--train_for_env_steps={frames + 2000}"],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ},
    )
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0, out
    assert f"Resumed from env frame {frames}" in out


@pytest.mark.slow
def test_enjoy_writes_a_video_and_reports_returns(tmp_path):
    from surge.enjoy import enjoy

    train(_cfg(tmp_path, "--train_for_env_steps=2000", env="atari_breakout"))
    cfg = parse_cfg(
        [
            "--env=atari_breakout",
            "--experiment=exp",
            f"--train_dir={tmp_path}",
            "--save_video=True",
            "--max_num_episodes=1",
            "--video_frames=100",
            "--no_render=True",
        ],
        evaluation=True,
    )
    result = enjoy(cfg)
    assert len(result["returns"]) == 1 and result["lengths"][0] > 0
    video = result["video"]
    assert video is not None and video.stat().st_size > 1000
    import imageio.v2 as imageio

    with imageio.get_reader(str(video)) as r:
        frames = [f for f in r]
    assert len(frames) == 100 and frames[0].shape == (210, 160, 3)
