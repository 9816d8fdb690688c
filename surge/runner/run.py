"""`python -m surge.runner.run --run=MODULE --runner=processes|slurm [...]`: runs the sweep that
MODULE describes in its `RUN_DESCRIPTION` (a `surge.runner.RunDescription`), Sample Factory's
launcher (docs/runner.md).

Exit code: 0 every experiment is done (now or before), 1 one failed (the log shows the tail of its
output), 130 the runner was stopped (Ctrl+C) before all finished; the same command resumes the
sweep, skipping finished experiments. 2: bad arguments, run module or experiment flags, or
(slurm) no sbatch or an unreachable controller: nothing was started.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from surge.errors import ConfigError, EnvError
from surge.runner.run_description import RunDescription

log = logging.getLogger("surge")

RUNNERS = ("processes", "slurm", "ngc")

NGC_REFUSAL = (
    "NGC (NVIDIA GPU Cloud) jobs are not supported: they need the `ngc` CLI configured with an API key "
    "and an org/team, a container image with surge installed pushed to NGC's registry, and a "
    "workspace or dataset mount for --train_dir, none of which this runner can check or test. "
    "Use --runner=processes on the machine, or --runner=slurm."
)


def launcher_argparser(argv: list[str]) -> argparse.ArgumentParser:
    """The runner's flags: the common ones, then those of the chosen `--runner`."""
    # the launcher imports what each option needs when it is used: `--help` and a sweep stay light
    from surge.cfg.cli import str2bool

    parser = argparse.ArgumentParser(
        prog="python -m surge.runner.run",
        description="Runs a sweep of experiments (docs/runner.md).",
        allow_abbrev=False,
    )
    parser.add_argument(
        "--run",
        required=True,
        help="Python module (importable, e.g. surge.runner.examples.cartpole_sweep) that defines RUN_DESCRIPTION.",
    )
    parser.add_argument(
        "--runner",
        "--backend",
        dest="runner",
        default="processes",
        help="processes (local, default) or slurm (sbatch); --backend is Sample Factory's name.",
    )
    parser.add_argument("--train_dir", default="./train_dir", help="Root of the sweeps' folders.")
    parser.add_argument(
        "--pause_between", default=1.0, type=float, help="Seconds between starting two experiments."
    )
    parser.add_argument("--experiment_suffix", default="", help="Appended to each experiment's group folder.")
    parser.add_argument(
        "--check_flags",
        default=True,
        type=str2bool,
        help="Parse every `surge.train` command's flags before starting any (False: skip, e.g. when the "
        "envs exist only on the cluster).",
    )
    pre_parser = argparse.ArgumentParser(
        add_help=False, allow_abbrev=False
    )  # which runner's flags to add (--help lists them)
    pre_parser.add_argument("--runner", "--backend", dest="runner", default="processes")
    pre, _ = pre_parser.parse_known_args(argv)
    if pre.runner == "processes":
        # the backend's module only for that backend
        from surge.runner.run_processes import add_os_parallelism_args

        add_os_parallelism_args(parser)
    elif pre.runner == "slurm":
        # the backend's module only for that backend
        from surge.runner.run_slurm import add_slurm_args

        add_slurm_args(parser)
    return parser


def parse_args(argv: list[str]) -> argparse.Namespace:
    """Raises ConfigError: --runner is ngc or unknown, or a count is out of range."""
    args = launcher_argparser(argv).parse_args(argv)
    if args.runner == "ngc":
        raise ConfigError("runner", NGC_REFUSAL)
    if args.runner not in RUNNERS:
        raise ConfigError(
            "runner", f"unknown runner {args.runner!r}.", "pass --runner=processes or --runner=slurm."
        )
    if args.pause_between < 0:
        raise ConfigError("pause_between", f"is negative ({args.pause_between}).", "pass seconds >= 0.")
    if args.runner == "processes":
        if args.max_parallel < 1:
            raise ConfigError("max_parallel", f"must be >= 1, got {args.max_parallel}.")
        if args.experiments_per_gpu > 0 and args.num_gpus < 1:
            raise ConfigError(
                "num_gpus",
                f"must be >= 1 with --experiments_per_gpu={args.experiments_per_gpu}.",
                "pass --num_gpus=N, or --experiments_per_gpu=-1 to leave CUDA_VISIBLE_DEVICES alone.",
            )
    if args.runner == "slurm":
        if args.slurm_gpus_per_job < 0:
            raise ConfigError("slurm_gpus_per_job", f"is negative ({args.slurm_gpus_per_job}).")
        if args.slurm_cpus_per_gpu < 1:
            raise ConfigError("slurm_cpus_per_gpu", f"must be >= 1, got {args.slurm_cpus_per_gpu}.")
        import shutil

        # the backend's module only for that backend
        from surge.runner.run_slurm import load_template

        missing = [c for c in ("sbatch", "squeue", "scancel") if shutil.which(c) is None]
        if missing and not args.slurm_print_only:
            raise ConfigError(
                "runner",
                f"slurm: {', '.join(missing)} not found on PATH.",
                "run on a machine with Slurm's client commands (a login node), or pass "
                "--slurm_print_only=True to write the job scripts without submitting them.",
            )

        load_template(
            args.slurm_sbatch_template, args.slurm_timeout
        )  # refused here, before anything is submitted
    return args


def load_run_description(module: str) -> RunDescription:
    """`module.RUN_DESCRIPTION`.

    Raises:
        ConfigError: on run: the module cannot be imported, raises while it is imported, or has no
            RunDescription named RUN_DESCRIPTION.
    """
    try:
        mod = importlib.import_module(module)
    except ImportError as e:
        raise ConfigError(
            "run", f"cannot import {module!r}: {e}.", "pass a module importable from here (check PYTHONPATH)."
        ) from e
    except Exception as e:  # the module raised while it ran (e.g. a ParamGrid's ValueError)
        raise ConfigError(
            "run", f"importing {module!r} raised {type(e).__name__}: {e}.", "fix the run module."
        ) from e
    rd = getattr(mod, "RUN_DESCRIPTION", None)
    if not isinstance(rd, RunDescription):
        raise ConfigError(
            "run",
            f"{module} has no RUN_DESCRIPTION of type surge.runner.RunDescription (found {type(rd).__name__}).",
            "define RUN_DESCRIPTION = RunDescription(name, experiments=[Experiment(...)]) in it.",
        )
    return rd


def main(argv: list[str] | None = None) -> int:
    """Runs the sweep; returns the exit code (see the module doc)."""
    # after the arguments parsed: `--help` stays light
    from surge.runner.outcome import check_flags, is_done
    from surge.runtime.experiment_folder import setup_logging

    argv = list(sys.argv[1:] if argv is None else argv)
    setup_logging()
    try:
        args = parse_args(argv)
        rd = load_run_description(args.run)
        rd.experiment_suffix = args.experiment_suffix
        try:
            planned = rd.plan(args.train_dir)
        except ValueError as e:
            raise ConfigError("run", str(e)) from e
        if args.check_flags:
            check_flags([p for p in planned if not is_done(p)])
    except (ConfigError, EnvError) as e:
        print(f"surge.runner: error: {e}", file=sys.stderr)
        return 2
    if args.runner == "slurm":
        # the backend's module only for that backend
        from surge.runner.run_slurm import SlurmError, run_slurm

        try:
            return run_slurm(rd, args)
        except SlurmError as e:
            print(f"surge.runner: error: {e} (is slurmctld running? SLURM_CONF?)", file=sys.stderr)
            return 2
    # the backend's module only for that backend
    from surge.runner.run_processes import run

    return run(rd, args)


if __name__ == "__main__":
    sys.exit(main())
