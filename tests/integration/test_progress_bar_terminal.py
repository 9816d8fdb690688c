"""`--progress_bar=auto` end to end (issue 22, item 5): a short CartPole run on a terminal (a pty)
shows the rich bar and not the plain progress lines; the same run with its output piped shows the
plain lines and no bar; the log file has the plain lines both times."""

from __future__ import annotations

import fcntl
import os
import pty
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PLAIN = "Env frames/s (10 s, 1 min, 5 min)"
BAR = "━"  # rich's bar


def _cmd(train_dir: Path, experiment: str) -> list[str]:
    # fmt: off
    return [sys.executable, "-m", "surge.train", "--env=CartPole-v1", f"--experiment={experiment}",
            f"--train_dir={train_dir}", "--serial_mode=True", "--num_workers=1", "--num_envs_per_worker=2",
            "--train_for_env_steps=6000", "--hidden_size=16", "--encoder_mlp_layers=16", "--num_torch_threads=1",
            "--report_interval_sec=0.2", "--seed=0"]
    # fmt: on


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1", "TERM": "xterm-256color"}
    for var in ("NO_COLOR", "COLUMNS", "LINES", "FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE"):
        env.pop(var, None)
    return env


def _run_on_a_pty(cmd: list[str]) -> tuple[int, str]:
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 160, 0, 0))
    proc = subprocess.Popen(cmd, stdin=slave, stdout=slave, stderr=slave, env=_env(), close_fds=True)
    os.close(slave)
    chunks = []
    deadline = time.time() + 240
    while time.time() < deadline:
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: every writer closed the pty
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return proc.wait(timeout=60), b"".join(chunks).decode(errors="replace")


@pytest.mark.slow
def test_a_terminal_shows_the_bar_and_a_pipe_the_plain_lines(tmp_path):
    rc, shown = _run_on_a_pty(_cmd(tmp_path, "tty"))
    assert rc == 0, shown[-3000:]
    assert BAR in shown and "env frames/s" in shown and "ETA" in shown and "6000 env frames" in shown, shown[
        -3000:
    ]
    assert PLAIN not in shown, shown[-3000:]
    assert "Training finished" in shown  # other log lines still reach the console
    assert PLAIN in (tmp_path / "tty" / "surge_log.txt").read_text()

    piped = subprocess.run(_cmd(tmp_path, "pipe"), capture_output=True, text=True, env=_env(), timeout=240)
    assert piped.returncode == 0, piped.stderr[-3000:]
    assert PLAIN in piped.stderr and BAR not in piped.stdout + piped.stderr
    assert PLAIN in (tmp_path / "pipe" / "surge_log.txt").read_text()
