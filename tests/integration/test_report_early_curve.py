"""The curves of a run start with its first episodes (issue 55, item 14: they began at the first
periodic summary, `--experiment_summaries_interval` (20 s) in, and a fast env's early learning was
missing): the monitor writes a summary as soon as a policy's first episodes are counted."""

import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.experiment.events import read_scalars


def test_the_return_curve_starts_at_the_first_episodes(tmp_path):
    cfg = parse_cfg(
        [
            "--env=cartpole",
            "--experiment=early",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--train_for_env_steps=3000",
            "--seed=0",
            "--num_torch_threads=1",
            "--write_report=False",
        ]
    )
    threads = torch.get_num_threads()
    try:
        assert train(cfg) == "done"
    finally:
        torch.set_num_threads(threads)  # the serial placement sets it in this process
    series = read_scalars(tmp_path / "early")[0]["episode/return_mean"]
    # CartPole's first episodes end within the first rollouts (tens of steps; 2 x 32 frames each)
    assert series.env_frames[0] <= 512, series.env_frames
    assert len(series) >= 2  # and the run's end
