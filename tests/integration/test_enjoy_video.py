"""`surge enjoy --save_video` on a real CartPole (issue 55, item 14): a video holds every frame of
its episodes (the first after the reset and the terminal one: N + 1 frames for N env steps), and a
Ctrl+C before any episode finished leaves the previous video as it was instead of overwriting it
with a fragment; after a finished episode it writes the finished episodes only."""

import os
import signal

import gymnasium as gym
import imageio.v2 as imageio
import numpy as np
import pytest
import torch

import surge.enjoy
from surge.app.resolve import parse_cfg
from surge.app.training_run import train


@pytest.fixture(scope="module")
def train_dir(tmp_path_factory):
    """A train dir holding experiment `cp`: CartPole trained for 256 env frames (one checkpoint)."""
    root = tmp_path_factory.mktemp("enjoy_video")
    cfg = parse_cfg(
        [
            "--env=cartpole",
            "--experiment=cp",
            f"--train_dir={root}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--train_for_env_steps=256",
            "--seed=0",
            "--num_torch_threads=1",
        ]
    )
    threads = torch.get_num_threads()
    try:
        assert train(cfg) == "done"
    finally:
        torch.set_num_threads(threads)  # the serial placement sets it in this process
    return root


def _enjoy(train_dir, *extra):
    cfg = parse_cfg(
        [
            "--env=cartpole",
            f"--train_dir={train_dir}",
            "--experiment=cp",
            "--save_video=True",
            "--seed=5",
            *extra,
        ],
        evaluation=True,
    )
    return surge.enjoy.enjoy(cfg)


def _frames(path):
    with imageio.get_reader(str(path)) as r:
        return [f for f in r]  # list(r) asks len(), which ffmpeg readers cannot answer


def _ctrl_c_at(monkeypatch, when):
    """Makes enjoy's env send a real SIGINT (what Ctrl+C sends) when `when(steps, episodes)` says
    so, `steps` counted over the play and `episodes` the episodes ended so far."""
    real_make_env = surge.enjoy.make_env

    def make_env(*args, **kwargs):
        env = real_make_env(*args, **kwargs)
        step, counts = env.step, {"steps": 0, "episodes": 0}

        def step_then_ctrl_c(actions):
            counts["steps"] += 1
            if when(counts["steps"], counts["episodes"]):
                os.kill(os.getpid(), signal.SIGINT)
            out = step(actions)
            counts["episodes"] += int(any(out[2]) or any(out[3]))
            return out

        env.step = step_then_ctrl_c
        return env

    monkeypatch.setattr(surge.enjoy, "make_env", make_env)


@pytest.fixture
def python_sigint():
    # Python's own SIGINT handler, as in a fresh `surge enjoy` process
    old = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, old)


def test_a_video_holds_each_episode_from_its_reset_frame_to_its_terminal_frame(train_dir):
    result = _enjoy(train_dir, "--max_num_episodes=3")
    lengths = result["lengths"]
    frames = _frames(result["video"])
    assert len(frames) == sum(lengths) + len(lengths), (len(frames), lengths)
    # the first frame is the env's own after `reset(seed)`: CartPole's render, as gymnasium draws it
    env = gym.make("CartPole-v1", render_mode="rgb_array")
    env.reset(seed=5)
    first = env.render().astype(np.int16)
    env.step(0)
    env.step(0)
    later = env.render().astype(np.int16)
    env.close()
    near = np.abs(frames[0].astype(np.int16) - first).mean()
    assert near < np.abs(frames[0].astype(np.int16) - later).mean(), near  # lossy mp4: the nearest


def test_ctrl_c_before_any_episode_finished_keeps_the_previous_video(train_dir, monkeypatch, python_sigint):
    previous = _enjoy(train_dir, "--max_num_episodes=1")["video"]
    before = previous.read_bytes()
    _ctrl_c_at(monkeypatch, lambda steps, episodes: steps == 3)  # CartPole cannot end in 3 steps
    result = _enjoy(train_dir, "--max_num_episodes=5")
    assert result["interrupted"] and result["returns"] == []
    assert result["video"] is None
    assert previous.read_bytes() == before
    assert not [p for p in previous.parent.iterdir() if p.name.endswith(".tmp.mp4")]


def test_ctrl_c_after_a_finished_episode_writes_the_finished_episodes_only(
    train_dir, monkeypatch, python_sigint
):
    marks = {}

    def when(steps, episodes):
        if episodes == 1 and "at" not in marks:
            marks["at"] = steps
        return marks.get("at") is not None and steps == marks["at"] + 3  # 3 steps into episode 2

    _ctrl_c_at(monkeypatch, when)
    result = _enjoy(train_dir, "--max_num_episodes=5", "--video_name=cut.mp4")
    assert result["interrupted"] and len(result["lengths"]) == 1
    assert len(_frames(result["video"])) == result["lengths"][0] + 1
