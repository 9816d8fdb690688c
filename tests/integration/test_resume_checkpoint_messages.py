"""What a resumed run says about its checkpoints (issue 55): a damaged latest checkpoint (truncated:
torch reports `[Errno 22] Invalid argument`) is called damaged, moved aside as `<name>.damaged` and
the run resumes from the previous one; a folder whose earlier run stopped before its first
checkpoint says that no checkpoint was found and the run starts from env frame 0."""

import shutil
from pathlib import Path

from surge.app.resolve import parse_cfg
from surge.app.training_run import train


def _cfg(tmp_path: Path, budget: int):
    return parse_cfg(
        [
            "--env=cartpole",
            "--experiment=exp",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--seed=3",
            f"--train_for_env_steps={budget}",
        ]
    )


def _log_since(path: Path, start: int) -> str:
    return path.read_text()[start:]


def test_a_damaged_latest_checkpoint_is_moved_aside_and_the_run_resumes_from_the_previous(tmp_path):
    assert train(_cfg(tmp_path, 200)) == "done"
    folder = tmp_path / "exp"
    (good,) = sorted((folder / "checkpoint_p0").glob("checkpoint_*.pth"))
    frames = int(good.stem.rpartition("_f")[2])
    # a newer checkpoint cut half way (a full disk, a copy stopped): torch reads [Errno 22]
    damaged = good.with_name(f"checkpoint_v000000099_f{frames + 1000:012d}.pth")
    damaged.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    (folder / "done").unlink()
    log = folder / "surge_log.txt"
    start = len(log.read_text())

    assert train(_cfg(tmp_path, 400)) == "done"

    text = _log_since(log, start)
    assert f"Checkpoint {damaged} is damaged" in text and f"moved aside to {damaged.name}.damaged" in text
    assert f"Resumed from env frame {frames}," in text
    assert not damaged.exists() and damaged.with_name(damaged.name + ".damaged").exists()


def test_a_folder_without_a_checkpoint_says_so_and_starts_from_frame_0(tmp_path):
    assert train(_cfg(tmp_path, 200)) == "done"
    folder = tmp_path / "exp"
    # what a run killed before its first checkpoint (--save_every_sec, 120 s) leaves: cfg.json, a log
    shutil.rmtree(folder / "checkpoint_p0")
    (folder / "done").unlink()
    (folder / "sampler_state.pth").unlink(missing_ok=True)
    log = folder / "surge_log.txt"
    start = len(log.read_text())

    assert train(_cfg(tmp_path, 200)) == "done"

    text = _log_since(log, start)
    assert f"No checkpoint found in {folder}" in text
    assert "stopped before its first checkpoint" in text and "starts from env frame 0" in text
