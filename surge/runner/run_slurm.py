"""`--runner=slurm`: one `sbatch` job per unfinished experiment, then (with `--slurm_wait=True`,
the default) wait for the jobs and report them like the processes runner.

Each job runs a script made from a template (`--slurm_sbatch_template`, Python `string.Template`
placeholders, as in Sample Factory): `$CMD` the experiment's command, `$FILENAME` the script's own
path, `$NAME` the experiment, `$PARTITION`, `$GPU` (GPUs per job), `$CPU` (CPUs per job), `$CWD`
(the runner's working directory), `$TIMEOUT` (`--slurm_timeout`, Sample Factory's `timeout $TIMEOUT
$CMD` of its sbatch_timeout.sh). The default template changes to `$CWD` and runs `$CMD`. Scripts,
job outputs (`sbatch_<name>.sh-slurm-<jobid>.out`) and `scancel.sh` go to `--slurm_workdir`.

Why sbatch and not submitit: submitit submits pickled Python functions and follows its jobs with
`sacct`, which needs Slurm's accounting database (slurmdbd); a sweep's jobs are command lines, and
`squeue` follows them on any cluster, a minimal one included.

Resuming: an experiment whose folder holds `done` (or `runner_done`, a finished benchmark) is not
submitted; neither is one whose job is still queued or running (a job of this user, `squeue --me`,
with the same name `surge:<run>/<experiment>:<hash of the experiment folder's absolute path>`).
Ctrl+C (SIGTERM, SIGHUP), while submitting or waiting, stops submitting, cancels the pending jobs and
sends SIGINT to the running ones (`scancel --full --signal=INT`): surge saves a checkpoint and
exits, and the next run of the sweep resumes them; jobs still there after `--stop_timeout` seconds
are cancelled. When the controller cannot be reached, a signal returns at once and leaves the jobs
as they are (`scancel.sh` cancels them).
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path
from string import Template
from typing import Any

from surge.errors import ConfigError
from surge.runner.outcome import (
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
from surge.runner.run_processes import STOP_SIGNALS

log = logging.getLogger("surge")

SBATCH_TEMPLATE_DEFAULT = "#!/bin/bash\ncd $CWD || exit 1\n$CMD\n"

#: squeue states of a job that has not ended yet
_ACTIVE = {
    "PENDING",
    "CONFIGURING",
    "RUNNING",
    "COMPLETING",
    "SUSPENDED",
    "REQUEUED",
    "RESIZING",
    "STAGE_OUT",
}


def add_slurm_args(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    # the config's modules only when the Slurm options are built
    from surge.cfg.cli import str2bool

    parser.add_argument(
        "--slurm_gpus_per_job", default=1, type=int, help="GPUs per job (--gres=gpu:N; 0: no --gres)."
    )
    parser.add_argument(
        "--slurm_cpus_per_gpu",
        default=14,
        type=int,
        help="CPU cores per GPU of a job (-c = this x max(1, --slurm_gpus_per_job)).",
    )
    parser.add_argument(
        "--slurm_sbatch_template",
        default=None,
        type=str,
        help="File of the job script, with $CMD where the experiment's command goes (activate an env, "
        "cd, module load ... before it).",
    )
    parser.add_argument(
        "--slurm_workdir",
        default=None,
        type=str,
        help="Folder of the job scripts and outputs (default: <train_dir>/<run_name>/slurm).",
    )
    parser.add_argument("--slurm_partition", default=None, type=str, help="sbatch -p PARTITION.")
    parser.add_argument(
        "--slurm_wait",
        default=True,
        type=str2bool,
        help="Wait for the jobs and report failures (True), or submit and exit as Sample Factory does (False).",
    )
    parser.add_argument(
        "--slurm_print_only",
        default=False,
        type=str2bool,
        help="Write the job scripts, print the sbatch commands, submit nothing.",
    )
    parser.add_argument(
        "--stop_timeout",
        default=60.0,
        type=float,
        help="Seconds the jobs get to save and exit after Ctrl+C before they are cancelled.",
    )
    parser.add_argument(
        "--slurm_timeout",
        default="0",
        type=str,
        help="The template's $TIMEOUT (Sample Factory's: its sbatch_timeout.sh runs `timeout $TIMEOUT $CMD` "
        "and resubmits on exit code 124; 0 = no time limit). Refused when not 0 and the template has no $TIMEOUT.",
    )
    return parser


def load_template(path: str | None, timeout: str = "0") -> str:
    """The job script template: the file's text, or `SBATCH_TEMPLATE_DEFAULT`.

    Raises:
        ConfigError: on slurm_sbatch_template: the file cannot be read, has no `$CMD`, or names a
            placeholder that does not exist; on slurm_timeout: not "0" while the template has no
            `$TIMEOUT` (it would be ignored).
    """
    text = SBATCH_TEMPLATE_DEFAULT if path is None else _read_template(path)
    if timeout != "0" and "$TIMEOUT" not in text and "${TIMEOUT}" not in text:
        raise ConfigError(
            "slurm_timeout",
            f"is {timeout!r} but the job script template ({path or 'the default'}) has no $TIMEOUT.",
            "pass a --slurm_sbatch_template that uses it (e.g. `timeout $TIMEOUT $CMD`), or leave "
            "--slurm_timeout at 0.",
        )
    return text


def _read_template(path: str) -> str:
    try:
        text = Path(path).read_text()
    except OSError as e:
        raise ConfigError(
            "slurm_sbatch_template", f"cannot read {path}: {e}.", "pass an existing file."
        ) from e
    if "$CMD" not in text and "${CMD}" not in text:
        raise ConfigError(
            "slurm_sbatch_template",
            f"{path} has no $CMD: its jobs would not run the experiments.",
            "put $CMD on the line that should run the experiment's command.",
        )
    try:
        _fill(text, dict(CMD="", FILENAME="", NAME="", PARTITION="", GPU=0, CPU=0, CWD="", TIMEOUT=""))
    except (KeyError, ValueError) as e:
        raise ConfigError(
            "slurm_sbatch_template",
            f"{path} uses an unknown placeholder or a lone $ ({e}).",
            "use $CMD, $FILENAME, $NAME, $PARTITION, $GPU, $CPU, $CWD, $TIMEOUT; write $$ for a literal $.",
        ) from e
    return text


def _fill(template: str, values: dict) -> str:
    return Template(template).substitute(values)


def job_name(run_description: RunDescription, exp: PlannedExperiment) -> str:
    """`surge:<run>/<experiment>:<8 hex digits>`, the digits a hash of the experiment folder's absolute
    path (so two sweeps with another --train_dir or --experiment_suffix do not match)."""
    digest = hashlib.sha1(str(exp.folder.absolute()).encode()).hexdigest()[:8]
    return f"surge:{run_description.run_name}/{exp.name}:{digest}"


class SlurmError(RuntimeError):
    """squeue failed (the controller cannot be reached); the message holds its error."""


def _squeue() -> dict[str, tuple[str, str]]:
    """This user's jobs in the queue (`squeue --me`): {job id: (name, state)}.

    Raises:
        SlurmError: squeue exits with an error or does not answer within 60 s.
    """
    try:
        res = subprocess.run(
            ["squeue", "--me", "-h", "-o", "%i|%j|%T"], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as e:
        raise SlurmError(f"squeue failed: {e}") from e
    if res.returncode != 0:
        raise SlurmError(f"squeue failed (exit code {res.returncode}): {res.stderr.strip()}")
    jobs = {}
    for line in res.stdout.splitlines():
        parts = line.strip().split("|", 2)
        if len(parts) == 3:
            jobs[parts[0]] = (parts[1], parts[2])
    return jobs


def run_slurm(run_description: RunDescription, args: argparse.Namespace) -> int:
    """Submits the sweep's unfinished experiments; with `--slurm_wait` waits for them and returns the
    exit code (`surge.runner.outcome.report`), else 0 once submitted (1 when an sbatch failed).

    Ctrl+C, SIGTERM or SIGHUP while submitting stops the submissions and, as while waiting, cancels
    the pending jobs and sends SIGINT to the running ones (`_wait`)."""
    template = load_template(args.slurm_sbatch_template, args.slurm_timeout)
    planned = run_description.plan(args.train_dir)
    queued = {} if args.slurm_print_only else {name: jid for jid, (name, _) in _squeue().items()}
    if not args.slurm_print_only:
        log_to_sweep_folder(args.train_dir, run_description.run_name)
    workdir = Path(args.slurm_workdir or Path(args.train_dir) / run_description.run_name / "slurm").absolute()
    workdir.mkdir(parents=True, exist_ok=True)
    scancel = workdir / "scancel.sh"
    outcomes: dict[int, Outcome] = {}
    jobs: dict[str, tuple[int, PlannedExperiment, Path, float]] = {}
    count = [0]  # signals received

    def on_signal(signum: int, frame: Any) -> None:
        count[0] += 1

    old = {} if args.slurm_print_only else {s: signal.signal(s, on_signal) for s in STOP_SIGNALS}
    try:
        for i, exp in enumerate(planned):
            if is_done(exp):
                outcomes[i] = Outcome(exp, "skipped")
                log.info("Skipping %s: finished before (its folder holds a done marker).", exp.name)
            elif count[0]:
                outcomes[i] = Outcome(exp, "not_started")
            else:
                submitted = _submit(run_description, exp, args, template, workdir, queued)
                if isinstance(submitted, Outcome):
                    outcomes[i] = Outcome(exp, "not_started") if count[0] else submitted
                elif submitted is not None:
                    jid, output = submitted
                    jobs[jid] = (i, exp, output, time.monotonic())
                    _write_scancel(scancel, jobs)
                    end = time.monotonic() + args.pause_between
                    while not count[0] and time.monotonic() < end:
                        time.sleep(0.05)
        if args.slurm_print_only:
            return 0
        if jobs:
            log.info("Jobs %s. Outputs: tail -f %s/*.out; cancel: sh %s", ", ".join(jobs), workdir, scancel)
        if count[0]:
            log.warning("Stopped while submitting: %d experiment(s) not submitted.", len(planned) - len(jobs))
        elif not args.slurm_wait:
            return 1 if any(o.status == "failed" for o in outcomes.values()) else 0
        stopped, started, left = _wait(jobs, args.stop_timeout, count, scancel)
    finally:
        for s, h in old.items():
            signal.signal(s, h)
    for jid, (i, exp, output, start) in jobs.items():
        status = "interrupted" if left else _status(jid, exp, stopped, started)  # left: maybe running
        outcomes[i] = Outcome(exp, status, None, time.monotonic() - start, output)
    return report([outcomes[i] for i in sorted(outcomes)])


def _status(jid: str, exp: PlannedExperiment, stopped: bool, started: set[str]) -> str:
    """How an experiment's job ended; writes `runner_done` for a benchmark that finished."""
    benchmark = is_benchmark(exp.tokens)
    if surge_train_args(exp.tokens) is not None and not benchmark:
        done = is_done(exp)
    else:  # not a surge command, or a benchmark (no `done` marker): the job's exit code decides
        done = _exit_code(jid) == 0 and not (benchmark and stopped)
        if done and benchmark:
            mark_runner_done(exp, f"benchmark job {jid} exited with 0")
    if done:
        return "done"
    if not stopped:
        return "failed"
    return "interrupted" if jid in started else "not_started"


def _submit(
    run_description: RunDescription,
    exp: PlannedExperiment,
    args: argparse.Namespace,
    template: str,
    workdir: Path,
    queued: dict[str, str],
) -> tuple[str, Path] | Outcome | None:
    """Writes the experiment's job script and submits it (or prints the sbatch command with
    --slurm_print_only: None). Returns (job id, its output file), the job already queued included,
    or a failed Outcome when sbatch fails."""
    name = job_name(run_description, exp)
    gpus = args.slurm_gpus_per_job
    cpus = args.slurm_cpus_per_gpu * max(1, gpus)
    script = workdir / f"sbatch_{exp.name}.sh"
    cmd = quote(command_tokens(exp))
    if exp.env_vars:
        cmd = " ".join(f"{k}={shlex.quote(str(v))}" for k, v in exp.env_vars.items()) + " " + cmd
    text = _fill(
        template,
        dict(
            CMD=cmd,
            FILENAME=str(script),
            NAME=exp.name,
            PARTITION=f"-p {args.slurm_partition} " if args.slurm_partition else "",
            GPU=gpus,
            CPU=cpus,
            CWD=shlex.quote(os.getcwd()),
            TIMEOUT=args.slurm_timeout,
        ),
    )
    tmp = script.with_suffix(".sh.tmp")
    tmp.write_text(text)
    tmp.replace(script)
    script.chmod(0o755)
    output = workdir / f"{script.name}-slurm-%j.out"
    sbatch = ["sbatch", "--parsable", f"--job-name={name}", "-c", str(cpus), "--output", str(output)]
    if gpus > 0:
        sbatch.append(f"--gres=gpu:{gpus}")
    if args.slurm_partition:
        sbatch += ["-p", args.slurm_partition]
    sbatch.append(str(script))
    if name in queued:
        jid = queued[name]
        log.info("Not submitting %s: its job %s is still in the queue.", exp.name, jid)
    elif args.slurm_print_only:
        print(quote(sbatch))
        return None
    else:
        exp.folder.parent.mkdir(parents=True, exist_ok=True)
        # its own session: a Ctrl+C on the terminal reaches the runner only, which then tracks the job
        res = subprocess.run(sbatch, capture_output=True, text=True, timeout=120, start_new_session=True)
        if res.returncode != 0:
            log.error("sbatch failed for %s (exit code %d): %s", exp.name, res.returncode, res.stderr.strip())
            return Outcome(exp, "failed", res.returncode)
        jid = res.stdout.strip().split(";")[0]
        log.info("Submitted %s as job %s: %s", exp.name, jid, quote(sbatch))
    return jid, Path(str(output).replace("%j", jid))


def _write_scancel(path: Path, jobs: dict) -> None:
    tmp = path.with_suffix(".sh.tmp")
    tmp.write_text("scancel " + " ".join(jobs) + "\n")
    tmp.replace(path)


def _exit_code(jid: str) -> int | None:
    """The job's exit code from `scontrol show job` (`ExitCode=<code>:<signal>`; killed by a signal:
    128 + signal), or None when scontrol cannot tell (the job left the controller's memory)."""
    try:
        res = subprocess.run(["scontrol", "show", "job", jid], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    for token in res.stdout.split():
        if token.startswith("ExitCode="):
            code, _, sig = token.split("=", 1)[1].partition(":")
            return 128 + int(sig) if sig and int(sig) else int(code)
    return None


def _wait(jobs: dict, stop_timeout: float, count: list[int], scancel: Path) -> tuple[bool, set[str], bool]:
    """Waits until none of `jobs` is active. Returns (stopped by a signal, the ids of the jobs seen
    running, the jobs were left as they are). `count[0]` counts the SIGINT/SIGTERM/SIGHUP received
    (`run_slurm`'s handler): pending jobs are then cancelled, running ones get SIGINT (they save and
    stop). While squeue fails (the controller cannot be reached) a signal returns at once, the jobs
    left as they are."""
    forwarded, deadline = 0, None
    started: set[str] = set()
    while True:
        try:
            queue = _squeue()
        except SlurmError as e:  # a busy or restarting controller: ask again, unless stopping
            if count[0]:
                log.warning(
                    "Stopping, but %s: jobs %s are left as they are (cancel them with: sh %s).",
                    e,
                    ", ".join(jobs) or "(none)",
                    scancel,
                )
                return True, started, True
            log.warning("%s; trying again in 10 s.", e)
            end = time.monotonic() + 10.0
            while not count[0] and time.monotonic() < end:
                time.sleep(0.1)
            continue
        active = {j: state for j, (_, state) in queue.items() if j in jobs and state in _ACTIVE}
        started.update(j for j, state in active.items() if state != "PENDING")
        if not active:
            return count[0] > 0, started, False
        if count[0] > forwarded:
            pending = [j for j, state in active.items() if state == "PENDING"]
            running = [j for j in active if j not in pending]
            log.warning(
                "Stopping: cancelling pending jobs %s, SIGINT to running jobs %s (they save and stop; "
                "cancelled after %.0f s).",
                ", ".join(pending) or "(none)",
                ", ".join(running) or "(none)",
                stop_timeout,
            )
            if pending:
                subprocess.run(["scancel", *pending], timeout=60)
            if running:
                subprocess.run(["scancel", "--full", "--signal=INT", *running], timeout=60)
            forwarded = count[0]
            deadline = deadline or time.monotonic() + stop_timeout
        if deadline is not None and time.monotonic() > deadline:
            subprocess.run(["scancel", *active], timeout=60)
            deadline = float("inf")
        time.sleep(1.0)
