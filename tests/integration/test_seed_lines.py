"""Every training line of the seed documents 000 (Sample Factory's README) and 001 (its "Running
Experiments" page) runs with only the entry point changed (issue 58): `python -m
sample_factory.algorithms.appo.train_appo` and `python -m sample_factory.run_algorithm` become
`python -m surge.train`, the lines parsed from the files (tests/seed_lines.py).

- Every line is accepted as written, full worker counts and budgets included (fast).
- One line per code path (`path_key`: algorithm, the Doom scenario's kind, policies and PBT, the
  inference layout, W&B) runs with its budgets and worker counts cut to this machine (`reduced`)
  until its first trained batch (the dummy sampler: to its end and its summary line). Lines that
  share a path differ only in values the same code reads (a scenario of the same kind, a gamma,
  a batch size) and in their worker counts, which `reduced` cuts anyway.

Left out: DMLab's line (DMLab cannot be had on this Python: its refusal is checked instead) and
W&B's `wandb login`, which is not a training line; the W&B training line runs in W&B's offline
mode, which stands in for the login. The documents live outside the repository
(`tests/seed_lines.py`): without them the tests skip.
"""

from __future__ import annotations

import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from seed_lines import SURGE_ENTRY, SeedLine, seed_files, training_lines

from surge.app.resolve import parse_cfg
from surge.envs.doom.scenarios import SCENARIOS
from surge.errors import ConfigError, SurgeError

ROOT = Path(__file__).resolve().parents[2]
LINES = training_lines() if len(seed_files()) == 2 else []
pytestmark = pytest.mark.skipif(not LINES, reason="the seed documents 000 and 001 are not on this machine")

#: lines of an env family that cannot be had here, with the word the refusal must name
OUT_OF_REACH = {"dmlab_": "DMLab"}
#: the cut of `reduced`: workers, envs per worker and policies at most these
MAX_WORKERS, MAX_ENVS_PER_WORKER, MAX_POLICIES = 2, 2, 2
#: the reduced budgets: caps the test never reaches, as it stops each run at its first trained batch
RUN_ENV_FRAMES, RUN_SECONDS, DUMMY_FRAMES = 1_000_000, 900, 4000
#: the progress line's part that appears once a learner's first batch is trained (Monitor)
TRAINED = "Policy lag (min/avg/max)"
DUMMY_SUMMARY = re.compile(r"DUMMY_SAMPLER doom_benchmark: (\d+) env frames sampled")


def _out_of_reach(line: SeedLine) -> str | None:
    env = line.flag("env") or ""
    return next((word for prefix, word in OUT_OF_REACH.items() if env.startswith(prefix)), None)


def _env(**extra: str) -> dict[str, str]:
    # the W&B line's `wandb login` is left out: W&B's offline mode needs none
    return {**os.environ, "WANDB_MODE": "offline", **extra}


def test_every_training_line_is_accepted_as_written(tmp_path, monkeypatch):
    """Each line as written (72 workers, 4B frames ...), only `--train_dir` added to keep the
    folders in the test's: accepted by the config and the preflight, DMLab's refused naming it."""
    monkeypatch.setenv("WANDB_MODE", "offline")
    wheres = [line.where for line in LINES]
    assert len(wheres) >= 14, wheres  # 11 README lines, the runner grid, the dummy sampler, W&B's
    for line in LINES:
        argv = [*line.args, f"--train_dir={tmp_path}"]
        if (word := _out_of_reach(line)) is not None:
            with pytest.raises(ConfigError) as e:
                parse_cfg(argv)
            assert e.value.field == "env" and word in str(e.value), (line.where, str(e.value))
            continue
        cfg = parse_cfg(argv)
        assert cfg.env == line.flag("env") and cfg.algo == line.flag("algo"), line.where


def path_key(line: SeedLine, tmp_path: Path) -> tuple:
    """What decides the code a line runs, from its parsed config: the algorithm; the Doom
    scenario's kind (multiplayer, single player with bots, measurements, reward shaping); several
    policies, PBT; the inference workers and splits; W&B."""
    cfg = parse_cfg([*line.args, f"--train_dir={tmp_path}"])
    s = SCENARIOS[cfg.env]
    kind = "multiplayer" if s.num_agents > 1 else "bots" if s.num_bots else "single"
    return (
        cfg.algo,
        kind,
        s.measurements,
        s.reward_shaping is not None,
        cfg.num_policies > 1,
        cfg.with_pbt,
        cfg.policy_workers_per_policy,
        cfg.worker_num_splits,
        cfg.with_wandb,
    )


def _representatives() -> list[SeedLine]:
    """The first line of each `path_key` (DMLab's left out)."""
    if not LINES:
        return []
    os.environ.setdefault("WANDB_MODE", "offline")  # the W&B line's parse (collection time)
    seen: dict[tuple, SeedLine] = {}
    tmp = Path(os.environ.get("TMPDIR", "/tmp")) / "surge_seed_lines_keys"
    for line in LINES:
        if _out_of_reach(line) is not None:
            continue
        try:
            key = path_key(line, tmp)
        except SurgeError:  # refused: runs on its own (and fails there, as in the test above)
            key = ("refused", line.where)
        seen.setdefault(key, line)
    return list(seen.values())


def reduced(line: SeedLine, train_dir: Path) -> list[str]:
    """The line's flags with only its budgets and worker counts cut to a 2-core machine (workers,
    envs per worker and policies: at most `MAX_*`, the policies' learner and inference processes
    with them; the budgets: caps the test never reaches) and its folder in `train_dir` (last: it
    wins over a runner command's own); every other flag as written."""
    cut: dict[str, str] = {"num_workers": str(MAX_WORKERS)}
    for name, most in [("num_envs_per_worker", MAX_ENVS_PER_WORKER), ("num_policies", MAX_POLICIES)]:
        if (value := line.flag(name)) is not None:
            cut[name] = str(min(int(value), most))
    if line.flag("sample_env_frames") is not None:
        cut["sample_env_frames"] = str(DUMMY_FRAMES)
    else:
        cut["train_for_env_steps"] = str(RUN_ENV_FRAMES)
    if line.flag("train_for_seconds") is not None:
        cut["train_for_seconds"] = str(RUN_SECONDS)
    kept = [a for a in line.args if not (a.startswith("--") and a[2:].split("=", 1)[0] in cut)]
    return [*kept, *(f"--{k}={v}" for k, v in cut.items()), f"--train_dir={train_dir}"]


def _run_until(argv: list[str], stop_at: str | None, timeout: float) -> tuple[int, str]:
    """Runs `python -m surge.train argv`; on the first output line holding `stop_at` sends it
    SIGINT (it saves and stops). Returns (exit code, output)."""
    proc = subprocess.Popen(
        [sys.executable, *SURGE_ENTRY, *argv],
        cwd=ROOT,
        env=_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: queue.Queue[str | None] = queue.Queue()
    threading.Thread(target=lambda: [*map(lines.put, proc.stdout), lines.put(None)], daemon=True).start()
    out, deadline, stopped = [], time.monotonic() + timeout, False
    try:
        while (left := deadline - time.monotonic()) > 0:
            try:
                text = lines.get(timeout=left)
            except queue.Empty:
                break
            if text is None:
                break
            out.append(text)
            if stop_at is not None and stop_at in text and not stopped:
                proc.send_signal(signal.SIGINT)
                stopped = True
        return proc.wait(timeout=max(1.0, deadline - time.monotonic())), "".join(out)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("line", _representatives(), ids=lambda line: f"{line.where} {line.flag('env')}")
def test_seed_line_runs_to_its_first_trained_batch(line, tmp_path):
    argv = reduced(line, tmp_path)
    if line.flag("algo") == "DUMMY_SAMPLER":  # no learner: it runs to its end and says what it sampled
        rc, out = _run_until(argv, None, timeout=600)
        assert rc == 0, out[-4000:]
        m = DUMMY_SUMMARY.search(out)
        assert m and int(m.group(1)) >= DUMMY_FRAMES, out[-4000:]
        return
    rc, out = _run_until(argv, TRAINED, timeout=840)
    assert TRAINED in out, out[-4000:]
    assert rc == 128 + signal.SIGINT, out[-4000:]  # stopped by the test, not by a failure
    experiment = tmp_path / (line.flag("experiment") or "default_experiment")
    versions = [
        int(p.name.split("_v")[1].split("_")[0]) for p in experiment.glob("checkpoint_p*/checkpoint_v*.pth")
    ]
    assert versions and max(versions) >= 1, (sorted(experiment.rglob("*.pth")), out[-3000:])
