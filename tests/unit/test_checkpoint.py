"""Checkpoints: atomic writes, retention, best, weights_only loading, fallback past a broken file."""

import os

import pytest
import torch

from surge.runtime.checkpoint import CheckpointManager, atomic_torch_save, rng_state, set_rng_state


def test_keeps_latest_n_and_one_best(tmp_path):
    m = CheckpointManager(tmp_path, keep_checkpoints=2)
    for v in range(4):
        m.save({"v": v}, policy_version=v, env_frames=v * 10)
    m.save({"best": 1}, 1, 10, kind="best")
    m.save({"best": 2}, 2, 20, kind="best")
    names = sorted(p.name for p in tmp_path.iterdir())
    assert [n for n in names if n.startswith("checkpoint_")] == [
        "checkpoint_v000000002_f000000000020.pth",
        "checkpoint_v000000003_f000000000030.pth",
    ]
    assert [n for n in names if n.startswith("best_")] == ["best_v000000002_f000000000020.pth"]
    assert m.load("latest")["v"] == 3 and m.load("best")["best"] == 2


def test_crash_during_write_leaves_previous_checkpoint_intact(tmp_path, monkeypatch):
    m = CheckpointManager(tmp_path)
    m.save({"w": torch.ones(3)}, 1, 100)

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "fsync", boom)
    with pytest.raises(OSError):
        m.save({"w": torch.zeros(3)}, 2, 200)
    monkeypatch.undo()
    assert [p.name for p in tmp_path.iterdir()] == ["checkpoint_v000000001_f000000000100.pth"]  # no temp left
    assert torch.equal(m.load()["w"], torch.ones(3))


def test_truncated_file_is_skipped_for_an_older_one(tmp_path):
    m = CheckpointManager(tmp_path, keep_checkpoints=5)
    m.save({"v": 1}, 1, 1)
    p = m.save({"v": 2, "big": torch.randn(1000)}, 2, 2)
    p.write_bytes(p.read_bytes()[:100])
    assert m.load()["v"] == 1


def test_rng_state_round_trips_and_loads_weights_only(tmp_path):
    import random

    import numpy as np

    st = rng_state()
    atomic_torch_save({"rng": st}, tmp_path / "r.pth")
    a = (random.random(), np.random.rand(), torch.rand(1).item())
    set_rng_state(torch.load(tmp_path / "r.pth", weights_only=True)["rng"])
    assert (random.random(), np.random.rand(), torch.rand(1).item()) == a


def _damage(path, how: str) -> None:
    data = path.read_bytes()
    if how == "truncated":  # a write cut by a full disk or a copy stopped half way: torch says [Errno 22]
        path.write_bytes(data[: len(data) // 2])
    elif how == "garbage":
        path.write_bytes(os.urandom(len(data)))
    elif how == "not_utf8":  # torch reads a non-zip file as a legacy pickle: a UnicodeDecodeError
        path.write_bytes(b"\x80\x02X\x03\x00\x00\x00\xcc\xcc\xcc" + b"." * 50)
    elif how == "empty_stack":  # ... or an IndexError (8% of random files raised one of these two)
        path.write_bytes(b"\x80\x02." * 30)
    else:
        path.write_bytes(b"")


@pytest.mark.parametrize("how", ["truncated", "garbage", "empty", "not_utf8", "empty_stack"])
def test_a_damaged_latest_checkpoint_is_moved_aside_and_the_previous_one_loads(tmp_path, caplog, how):
    m = CheckpointManager(tmp_path, keep_checkpoints=5)
    m.save({"v": 1, "big": torch.randn(1000)}, 1, 100)
    latest = m.save({"v": 2, "big": torch.randn(1000)}, 2, 200)
    _damage(latest, how)
    with caplog.at_level("WARNING", logger="surge"):
        assert m.load(move_damaged=True)["v"] == 1
    assert not latest.exists() and latest.with_name(latest.name + ".damaged").exists()
    said = [r.getMessage() for r in caplog.records]
    assert len(said) == 1 and f"{latest} is damaged" in said[0] and "moved aside" in said[0], said
    assert "Invalid argument" not in said[0].split("(")[0]  # the cause follows the verdict, not instead of it
    caplog.clear()
    with caplog.at_level("WARNING", logger="surge"):
        assert m.load(move_damaged=True)["v"] == 1
    assert not caplog.records  # moved aside: a later resume does not report it again
    assert m.latest().name == "checkpoint_v000000001_f000000000100.pth"


def test_a_reader_reports_a_damaged_checkpoint_but_leaves_it_in_place(tmp_path, caplog):
    m = CheckpointManager(tmp_path, keep_checkpoints=5)
    m.save({"v": 1}, 1, 100)
    latest = m.save({"v": 2, "big": torch.randn(1000)}, 2, 200)
    _damage(latest, "truncated")
    with caplog.at_level("WARNING", logger="surge"):
        assert m.load()["v"] == 1  # surge enjoy / export: they read the folder, never change it
    assert latest.exists() and "is damaged" in caplog.text and "moved aside" not in caplog.text
