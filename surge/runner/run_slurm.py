"""`--runner=slurm`: one `sbatch` job per unfinished experiment, then (with `--slurm_wait=True`,
the default) wait for the jobs and report them like the processes runner.

Each job runs a script made from a template (`--slurm_sbatch_template`, Python `string.Template`
placeholders, as in Sample Factory): `$CMD` the experiment's command, `$FILENAME` the script's own
path, `$NAME` the experiment, `$PARTITION`, `$GPU` (GPUs per job), `$CPU` (CPUs per job), `$CWD`
(the runner's working directory). The default template changes to `$CWD` and runs `$CMD`. Scripts,
job outputs (`sbatch_<name>.sh-slurm-<jobid>.out`) and `scancel.sh` go to `--slurm_workdir`.

Why sbatch and not submitit: submitit submits pickled Python functions and follows its jobs with
`sacct`, which needs Slurm's accounting database (slurmdbd); a sweep's jobs are command lines, and
`squeue` follows them on any cluster, a minimal one included.

Resuming: an experiment whose folder holds `done` is not submitted; neither is one whose job (same
name, `surge:<run>/<experiment>`) is still queued or running. Ctrl+C while waiting cancels the pending jobs and
sends SIGINT to the running ones (`scancel --full --signal=INT`): surge saves a checkpoint and
exits, and the next run of the sweep resumes them; jobs still there after `--stop_timeout` seconds
are cancelled.
"""

from __future__ import annotations

import argparse
import logging
import os
import shlex
import signal
import subprocess
import time
from pathlib import Path
from string import Template

from surge.errors import ConfigError
from surge.runner.outcome import (
    Outcome,
    command_tokens,
    is_done,
    log_to_sweep_folder,
    quote,
    report,
    surge_train_args,
)
from surge.runner.run_description import PlannedExperiment, RunDescription

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
    return parser


def load_template(path: str | None) -> str:
    """The job script template: the file's text, or `SBATCH_TEMPLATE_DEFAULT`.

    Raises:
        ConfigError: on slurm_sbatch_template: the file cannot be read, has no `$CMD`, or names a
            placeholder that does not exist.
    """
    if path is None:
        return SBATCH_TEMPLATE_DEFAULT
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
        _fill(text, dict(CMD="", FILENAME="", NAME="", PARTITION="", GPU=0, CPU=0, CWD=""))
    except (KeyError, ValueError) as e:
        raise ConfigError(
            "slurm_sbatch_template",
            f"{path} uses an unknown placeholder or a lone $ ({e}).",
            "use $CMD, $FILENAME, $NAME, $PARTITION, $GPU, $CPU, $CWD; write $$ for a literal $.",
        ) from e
    return text


def _fill(template: str, values: dict) -> str:
    return Template(template).substitute(values)


def job_name(run_description: RunDescription, exp: PlannedExperiment) -> str:
    return f"surge:{run_description.run_name}/{exp.name}"


class SlurmError(RuntimeError):
    """squeue failed (the controller cannot be reached); the message holds its error."""


def _squeue() -> dict[str, tuple[str, str]]:
    """Jobs in the queue: {job id: (name, state)}.

    Raises:
        SlurmError: squeue exits with an error or does not answer within 60 s.
    """
    try:
        res = subprocess.run(["squeue", "-h", "-o", "%i|%j|%T"], capture_output=True, text=True, timeout=60)
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
    exit code (`surge.runner.outcome.report`), else 0 once submitted."""
    template = load_template(args.slurm_sbatch_template)
    planned = run_description.plan(args.train_dir)
    queued = {} if args.slurm_print_only else {name: jid for jid, (name, _) in _squeue().items()}
    if not args.slurm_print_only:
        log_to_sweep_folder(args.train_dir, run_description.run_name)
    workdir = Path(args.slurm_workdir or Path(args.train_dir) / run_description.run_name / "slurm").absolute()
    workdir.mkdir(parents=True, exist_ok=True)
    gpus = args.slurm_gpus_per_job
    cpus = args.slurm_cpus_per_gpu * max(1, gpus)
    partition = f"-p {args.slurm_partition} " if args.slurm_partition else ""
    outcomes: dict[int, Outcome] = {}
    jobs: dict[str, tuple[int, PlannedExperiment, Path, float]] = {}
    for i, exp in enumerate(planned):
        name = job_name(run_description, exp)
        if is_done(exp):
            outcomes[i] = Outcome(exp, "skipped")
            log.info("Skipping %s: finished before (%s exists).", exp.name, exp.folder / "done")
            continue
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
                PARTITION=partition,
                GPU=gpus,
                CPU=cpus,
                CWD=shlex.quote(os.getcwd()),
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
            continue
        else:
            exp.folder.parent.mkdir(parents=True, exist_ok=True)
            res = subprocess.run(sbatch, capture_output=True, text=True, timeout=120)
            if res.returncode != 0:
                log.error(
                    "sbatch failed for %s (exit code %d): %s", exp.name, res.returncode, res.stderr.strip()
                )
                outcomes[i] = Outcome(exp, "failed", res.returncode)
                continue
            jid = res.stdout.strip().split(";")[0]
            log.info("Submitted %s as job %s: %s", exp.name, jid, quote(sbatch))
        jobs[jid] = (i, exp, Path(str(output).replace("%j", jid)), time.monotonic())
        if args.pause_between:
            time.sleep(args.pause_between)
    if args.slurm_print_only:
        return 0
    if jobs:
        scancel = workdir / "scancel.sh"
        scancel.write_text("scancel " + " ".join(jobs) + "\n")
        log.info("Jobs %s. Outputs: tail -f %s/*.out; cancel: sh %s", ", ".join(jobs), workdir, scancel)
    if not args.slurm_wait:
        return 1 if any(o.status == "failed" for o in outcomes.values()) else 0
    stopped, started = _wait(jobs, args.stop_timeout)
    for jid, (i, exp, output, start) in jobs.items():
        done = is_done(exp) if surge_train_args(exp.tokens) is not None else None
        status = (
            "done"
            if done
            else ("failed" if not stopped else "interrupted" if jid in started else "not_started")
        )
        if done is None:  # not a surge command: the job's exit code decides
            status = "done" if _exit_code(jid) == 0 else status
        outcomes[i] = Outcome(exp, status, None, time.monotonic() - start, output)
    return report([outcomes[i] for i in sorted(outcomes)])


def _exit_code(jid: str) -> int | None:
    res = subprocess.run(["scontrol", "show", "job", jid], capture_output=True, text=True, timeout=60)
    for token in res.stdout.split():
        if token.startswith("ExitCode="):
            return int(token.split("=")[1].split(":")[0])
    return None


def _wait(jobs: dict, stop_timeout: float) -> tuple[bool, set[str]]:
    """Waits until none of `jobs` is active. Returns (stopped by Ctrl+C, the ids of the jobs seen
    running). Ctrl+C: pending jobs are cancelled, running ones get SIGINT (they save and stop)."""
    count = [0]

    def on_signal(signum, frame):
        count[0] += 1

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    forwarded, deadline = 0, None
    started: set[str] = set()
    try:
        while True:
            try:
                queue = _squeue()
            except SlurmError as e:  # a busy or restarting controller: ask again
                log.warning("%s; trying again in 10 s.", e)
                time.sleep(10.0)
                continue
            active = {j: state for j, (_, state) in queue.items() if j in jobs and state in _ACTIVE}
            started.update(j for j, state in active.items() if state != "PENDING")
            if not active:
                return count[0] > 0, started
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
    finally:
        for s, h in old.items():
            signal.signal(s, h)
