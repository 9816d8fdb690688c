"""A resumed run says once where it resumed (issue 55, item 14): one line with the env frame and
the policy version, not a "Policy 0 resumed at env frame N" line followed by "Resumed from env
frame N"."""

import re

import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train


def _cfg(root, frames):
    return parse_cfg(
        [
            "--env=cartpole",
            "--experiment=cp",
            f"--train_dir={root}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            f"--train_for_env_steps={frames}",
            "--seed=0",
            "--num_torch_threads=1",
        ]
    )


def test_a_resumed_run_logs_where_it_resumed_once(tmp_path):
    threads = torch.get_num_threads()
    try:
        assert train(_cfg(tmp_path, 256)) == "done"
        (first,) = (tmp_path / "cp" / "checkpoint_p0").glob("checkpoint_*")
        state = torch.load(first, weights_only=True)
        (tmp_path / "cp" / "done").unlink()
        log_file = tmp_path / "cp" / "surge_log.txt"
        before = len(log_file.read_text().splitlines())
        assert train(_cfg(tmp_path, 512)) == "done"
    finally:
        torch.set_num_threads(threads)  # the serial placement sets it in this process
    resumed_log = log_file.read_text().splitlines()[before:]
    said = [line for line in resumed_log if re.search(r"resumed (at|from) env frame", line, re.IGNORECASE)]
    assert len(said) == 1, said
    assert f"env frame {state['env_frames']}" in said[0]
    assert f"policy version {state['learner']['policy_version']}" in said[0]


def test_with_several_policies_the_one_line_gives_each_version_and_a_differing_frame():
    from surge.runtime.resume_line import resume_line

    def state(frames, version):
        return {"env_frames": frames, "learner": {"policy_version": version}}

    line = resume_line([state(2000, 48), state(1900, 40), None], 2000, learning={0, 1, 2})
    assert line == (
        "Resumed from env frame 2000: policy 0 at version 48, "
        "policy 1 at version 40 (its checkpoint at env frame 1900)."
    )
