"""`--runner=processes`: the sweep's experiments as local processes, at most `--max_parallel` at a
time, optionally spread over GPUs (`--experiments_per_gpu` per GPU of `--num_gpus`, through
CUDA_VISIBLE_DEVICES).

Stopping: each experiment runs in its own session (process group), so a terminal's Ctrl+C reaches
only the runner, which passes one SIGINT to every running experiment's group: surge saves a
checkpoint and exits, and the next run of the sweep resumes it. A second Ctrl+C is passed on too
(surge then stops without saving, 2 s or more after the first: `surge.runtime.stop_signals`); experiments still running `--stop_timeout` seconds later are
killed with their whole group. SIGTERM and SIGHUP (the runner's terminal closed) stop the sweep
like Ctrl+C. If the runner itself is killed (SIGKILL), the kernel sends each experiment's own
process SIGTERM (PR_SET_PDEATHSIG), which surge treats as Ctrl+C and which stops surge's own
workers in turn; processes that a non-surge command starts itself are not reached this way.

Finished: a `surge.train` experiment is done when surge wrote its `done` marker; a benchmark
(`--no_writes=True` or `--algo=DUMMY_SAMPLER`, which write no marker) when it exits with 0 while the
runner is not stopping it, and the runner then writes `runner_done` in its folder (skipped next time).
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import functools
import logging
import os
import signal
import subprocess
import time
from dataclasses import dataclass
from typing import IO, Any

from surge.runner.outcome import (
    OUTPUT_FILE,
    Outcome,
    command_tokens,
    is_benchmark,
    is_done,
    log_to_sweep_folder,
    mark_runner_done,
    quote,
    report,
    surge_train_args,
)
from surge.runner.run_description import PlannedExperiment, RunDescription
from surge.runtime.stop_signals import exit_status

log = logging.getLogger("surge")

_PR_SET_PDEATHSIG = 1


def add_os_parallelism_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--num_gpus", default=1, type=int, help="How many local GPUs to use.")
    parser.add_argument("--max_parallel", default=4, type=int, help="Most experiments running at once.")
    parser.add_argument(
        "--experiments_per_gpu",
        default=-1,
        type=int,
        help="Experiments sharing one GPU: each gets CUDA_VISIBLE_DEVICES=<least busy of --num_gpus>. "
        "-1 (default): CUDA_VISIBLE_DEVICES is left as it is (every experiment sees every GPU).",
    )
    parser.add_argument(
        "--stop_timeout",
        default=60.0,
        type=float,
        help="Seconds the experiments get to save and exit after Ctrl+C before they are killed.",
    )
    return parser


def _die_with_runner(runner_pid: int) -> None:  # runs in the child between fork and exec
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)
    except (OSError, AttributeError):  # not Linux/glibc
        return
    # a runner killed between the fork and the prctl above sends no signal: the child, already
    # reparented, would run on alone, so it stops itself
    if os.getppid() != runner_pid:
        os.kill(os.getpid(), signal.SIGTERM)


@dataclass
class _Running:
    exp: PlannedExperiment
    proc: subprocess.Popen
    gpu: int | None
    start: float
    out: IO[Any]
    surge: bool
    benchmark: bool = False


#: the signals that stop the sweep (SIGHUP: the runner's terminal closed)
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class _Stop:
    """Counts SIGINT/SIGTERM/SIGHUP received by the runner (the main loop acts on them)."""

    def __init__(self) -> None:
        self.count = 0
        self.forwarded = 0

    def __call__(self, signum: int, frame: Any) -> None:
        self.count += 1


def _signal_group(proc: subprocess.Popen, sig: int) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def run(run_description: RunDescription, args: argparse.Namespace) -> int:
    """Runs the sweep's unfinished experiments; returns the exit code (`surge.runner.outcome.report`)."""
    planned = run_description.plan(args.train_dir)
    log_to_sweep_folder(args.train_dir, run_description.run_name)
    outcomes: dict[int, Outcome] = {}
    pending: list[tuple[int, PlannedExperiment]] = []
    for i, exp in enumerate(planned):
        if is_done(exp):
            outcomes[i] = Outcome(exp, "skipped")
            log.info("Skipping %s: finished before (its folder holds a done marker).", exp.name)
        else:
            pending.append((i, exp))
    log.info(
        "Sweep %s: %d experiments, %d to run, at most %d at a time. Their logs: %s/%s/*/*/%s",
        run_description.run_name,
        len(planned),
        len(pending),
        args.max_parallel,
        args.train_dir,
        run_description.run_name,
        OUTPUT_FILE,
    )
    gpu_load = {g: 0 for g in range(args.num_gpus)}

    def least_busy_gpu() -> tuple[int | None, int]:
        best, free = None, 0
        for g in range(args.num_gpus):
            available = args.experiments_per_gpu - gpu_load[g]
            if available > free:
                best, free = g, available
        return best, free

    def can_start() -> bool:
        if len(running) >= args.max_parallel:
            return False
        return args.experiments_per_gpu <= 0 or least_busy_gpu()[1] > 0

    running: dict[int, _Running] = {}
    stop = _Stop()
    old = {s: signal.signal(s, stop) for s in STOP_SIGNALS}
    stop_deadline = None
    try:
        while pending or running:
            if stop.count > stop.forwarded:  # pass each Ctrl+C on to every running experiment once
                if stop.forwarded == 0:
                    log.warning(
                        "Stopping the sweep: asking %d running experiment(s) to save and stop "
                        "(again to stop them without saving; killed after %.0f s).",
                        len(running),
                        args.stop_timeout,
                    )
                    stop_deadline = time.monotonic() + args.stop_timeout
                for r in running.values():
                    _signal_group(r.proc, signal.SIGINT)
                stop.forwarded = stop.count
            if stop.count:
                for i, exp in pending:
                    outcomes[i] = Outcome(exp, "not_started")
                pending = []
                if stop_deadline is not None and time.monotonic() > stop_deadline:
                    for r in running.values():
                        log.warning(
                            "Killing %s (no exit %.0f s after the stop).", r.exp.name, args.stop_timeout
                        )
                        _signal_group(r.proc, signal.SIGKILL)
                    stop_deadline = None
            while pending and not stop.count and can_start():
                i, exp = pending.pop(0)
                gpu = least_busy_gpu()[0] if args.experiments_per_gpu > 0 else None
                try:
                    running[i] = _start(exp, args, gpu)
                except OSError as e:  # e.g. the command's program does not exist
                    log.error("%s could not start: %s", exp.name, e)
                    with contextlib.suppress(OSError), open(exp.folder / OUTPUT_FILE, "a") as f:
                        f.write(f"surge.runner: could not start {exp.cmd}: {e}\n")
                    outcomes[i] = Outcome(exp, "failed", None, 0.0, exp.folder / OUTPUT_FILE)
                    continue
                if gpu is not None:
                    gpu_load[gpu] += 1
                end = time.monotonic() + args.pause_between
                while pending and not stop.count and time.monotonic() < end:
                    time.sleep(0.05)
            for i, r in list(running.items()):
                rc = r.proc.poll()
                if rc is None:
                    continue
                del running[i]
                r.out.close()
                if r.gpu is not None:
                    gpu_load[r.gpu] -= 1
                _signal_group(r.proc, signal.SIGKILL)  # anything its process left in its group
                outcomes[i] = _outcome(r, rc, stopping=stop.count > 0)
                log.info(
                    "%s: %s (exit code %d, %.0f s)", r.exp.name, outcomes[i].status, rc, outcomes[i].seconds
                )
            time.sleep(0.1)
    finally:
        for r in running.values():  # an exception in the loop: leave nothing behind
            _signal_group(r.proc, signal.SIGKILL)
            r.proc.wait()
        for s, h in old.items():
            signal.signal(s, h)
    return report([outcomes[i] for i in sorted(outcomes)])


def _start(exp: PlannedExperiment, args: argparse.Namespace, gpu: int | None) -> _Running:
    tokens = command_tokens(exp)
    benchmark = is_benchmark(tokens)  # parses the flags: before the process starts, not after
    env = os.environ.copy()
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = str(gpu)
    for k, v in (exp.env_vars or {}).items():
        env[str(k)] = str(v)
    exp.folder.mkdir(parents=True, exist_ok=True)
    out = open(exp.folder / OUTPUT_FILE, "a")
    resumed = (exp.folder / "cfg.json").exists()
    out.write(
        f"=== surge.runner {time.strftime('%Y-%m-%d %H:%M:%S')}: {'resuming' if resumed else 'starting'}: "
        f"{quote(tokens)}\n"
    )
    out.flush()
    try:
        proc = subprocess.Popen(
            tokens,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
            preexec_fn=functools.partial(_die_with_runner, os.getpid()),
        )
    except OSError:
        out.close()
        raise
    log.info(
        "%s %s (pid %d%s): %s",
        "Resuming" if resumed else "Starting",
        exp.name,
        proc.pid,
        "" if gpu is None else f", GPU {gpu}",
        exp.cmd,
    )
    return _Running(exp, proc, gpu, time.monotonic(), out, surge_train_args(tokens) is not None, benchmark)


def _outcome(r: _Running, rc: int, stopping: bool) -> Outcome:
    seconds = time.monotonic() - r.start
    if r.benchmark:  # surge writes no `done` with --no_writes: exit 0 unless the runner stopped it
        finished = rc == 0 and not stopping
        if finished:
            mark_runner_done(r.exp, f"benchmark exited with 0 after {seconds:.0f} s")
    else:
        finished = is_done(r.exp) if r.surge else rc == 0
    if finished and rc == 0:
        status = "done"
    elif stopping:
        status = "interrupted"
    elif rc in (0, exit_status(signal.SIGINT), exit_status(signal.SIGTERM)):
        # surge exits 128 + the signal when Ctrl+C or SIGTERM stopped it (someone else did, a
        # scheduler's limit, an operator): resumable, not failed
        status = "interrupted"
    else:
        status = "failed"
    return Outcome(r.exp, status, rc, seconds, r.exp.folder / OUTPUT_FILE)
