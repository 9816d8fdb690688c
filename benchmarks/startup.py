"""Start-up against Sample Factory 2.1.1: seconds from the command to the first trained batch.

    bash benchmarks/sf_setup.sh /work/sf-venv          # once: Sample Factory in its own venv
    python benchmarks/startup.py --rounds 3 --config cartpole --config pong_1epoch

Each round starts each framework once per config, alternating which goes first, in the async
placement (`--serial_mode=False`, the placement of the throughput table), with the benchmark
config's flags and no experience decorrelation (`--decorrelate_experience_max_seconds=0`, as
`compare_sample_factory.py` runs both; Sample Factory's default is 0, surge's 10 s), and stops it
as soon as its first batch is trained. The end of start-up:

- surge: the time stamp of its log line `LearnerLoop: first batch trained` (the learner, after the
  first batch whose training took an optimizer step);
- Sample Factory: the wall time of the first `train/` scalar in its TensorBoard events (its learner
  records summaries on its first training step, `Learner._should_save_summaries` with
  `last_summary_time = 0`, and the runner writes them as they arrive; `--flush_summaries_interval=1`
  makes them reach the file within a second).

The table gives each framework's median over rounds and surge / Sample Factory (below 1: surge
starts faster). A run that never trains within `--timeout` counts as missing.
"""

from __future__ import annotations

import argparse
import functools
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

sys.path.insert(0, str(Path(__file__).resolve().parent))
from compare_sample_factory import _kill_group, _pythonpath, _ts  # noqa: E402
from configs import CONFIGS, BenchConfig  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SURGE_FIRST = re.compile(r"^\[(\d+-\d+-\d+ [\d:,]+)\]\[INFO\] LearnerLoop: first batch trained")
NAN = float("nan")
COMMON = ["--serial_mode=False", "--decorrelate_experience_max_seconds=0", "--save_every_sec=100000"]


def surge_command(cfg: BenchConfig, workdir: Path) -> list[str]:
    """`surge train` with the config's flags, an ample budget and its own folder."""
    return [
        sys.executable, "-m", "surge.train", *cfg.surge_args, *COMMON,
        f"--train_for_env_steps={cfg.frames}", f"--train_dir={workdir}", "--experiment=surge",
    ]  # fmt: skip


def sf_command(cfg: BenchConfig, workdir: Path, sf_python: str) -> list[str]:
    """Sample Factory's example module with the config's flags, summaries flushed every second."""
    return [
        sf_python, "-m", cfg.sf_module, *cfg.sf_args, *COMMON,
        f"--train_for_env_steps={cfg.frames}", f"--train_dir={workdir}", "--experiment=sf",
        "--flush_summaries_interval=1",
    ]  # fmt: skip


def surge_first_trained(log: Path) -> float | None:
    """The epoch time of surge's `first batch trained` line in `log`, None while there is none."""
    if not log.exists():
        return None
    for line in log.read_text(errors="replace").splitlines():
        if m := SURGE_FIRST.match(line):
            return _ts(m.group(1))
    return None


def sf_first_trained(workdir: Path) -> float | None:
    """The wall time of the first `train/` scalar in Sample Factory's events, None while none."""
    first = None
    for path in sorted(workdir.glob("sf/.summary/*/events.out.tfevents.*")):
        for event in EventFileLoader(str(path)).Load():
            if any(v.tag.startswith("train/") for v in event.summary.value):
                first = event.wall_time if first is None else min(first, event.wall_time)
                break
    return first


def time_to_first_batch(cmd: list[str], workdir: Path, find, timeout: float, env=None) -> float:  # type: ignore[no-untyped-def]
    """Starts `cmd` in its own session, polls `find()` every 0.2 s, and returns the seconds from the
    start to the time `find` reports (nan past `timeout` or when the run exits first); the run's
    process group is killed either way."""
    out = workdir / "console.txt"
    with open(out, "w") as f:
        t0 = time.time()
        proc = subprocess.Popen(
            cmd, stdout=f, stderr=subprocess.STDOUT, cwd=workdir, env=env, start_new_session=True
        )
        try:
            while time.time() - t0 < timeout:
                found = find()
                if found is not None:
                    return found - t0
                if proc.poll() is not None:
                    found = find()
                    if found is None:
                        tail = out.read_text(errors="replace").splitlines()[-15:]
                        print(
                            "  the run exited before training:\n    " + "\n    ".join(tail), file=sys.stderr
                        )
                    return NAN if found is None else found - t0
                time.sleep(0.2)
            return NAN
        finally:
            _kill_group(proc.pid)
            proc.wait()


def _median(xs: list[float]) -> float:
    xs = [x for x in xs if x == x]
    return statistics.median(xs) if xs else NAN


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--config", action="append", choices=sorted(CONFIGS), help="default: all")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--timeout", type=float, default=300.0, help="seconds per run")
    p.add_argument("--sf-python", default="/work/sf-venv/bin/python")
    a = p.parse_args(argv)
    signal.signal(signal.SIGTERM, lambda s, f: (_ for _ in ()).throw(SystemExit(128 + s)))
    names = a.config or sorted(CONFIGS)
    res: dict[str, dict[str, list[float]]] = {n: {"surge": [], "sf": []} for n in names}
    env = {**os.environ, "PYTHONPATH": _pythonpath(ROOT)}
    for r in range(a.rounds):
        for name in names:
            cfg = CONFIGS[name]
            order = ["surge", "sf"] if r % 2 == 0 else ["sf", "surge"]
            for fw in order:
                with tempfile.TemporaryDirectory(prefix=f"startup_{fw}_") as tmp:
                    wd = Path(tmp)
                    if fw == "surge":
                        log = wd / "console.txt"
                        s = time_to_first_batch(
                            surge_command(cfg, wd),
                            wd,
                            functools.partial(surge_first_trained, log),
                            a.timeout,
                            env,
                        )
                    else:
                        s = time_to_first_batch(
                            sf_command(cfg, wd, a.sf_python),
                            wd,
                            functools.partial(sf_first_trained, wd),
                            a.timeout,
                        )
                res[name][fw].append(s)
                load = open("/proc/loadavg").read().split()[0]
                print(
                    f"round {r + 1} {name} {fw}: {s:.2f} s to the first trained batch (load {load})",
                    flush=True,
                )
    print("\n| config | surge (s) | Sample Factory 2.1.1 (s) | surge / SF | rounds (surge; SF) |")
    print("|---|---|---|---|---|")
    for name in names:
        s, f = _median(res[name]["surge"]), _median(res[name]["sf"])
        rounds = (
            ", ".join(f"{x:.1f}" for x in res[name]["surge"])
            + "; "
            + ", ".join(f"{x:.1f}" for x in res[name]["sf"])
        )
        print(f"| {name} | {s:.2f} | {f:.2f} | {s / f:.2f} | {rounds} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
