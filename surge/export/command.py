"""`surge export --experiment=NAME [--train_dir=DIR] [--format=onnx|torchscript] [--output=FILE]
[--policy_index=0] [--load_checkpoint_kind=latest|best] [--check] [--tolerance=1e-5]`.

Writes the experiment's policy (APPO or A2C) as one file that maps observations to actions (see
`surge.export.policy` and docs/export.md); with --check runs that file on random observations and
compares it with the torch model. Exit status: 0 written (and the check passed), 1 the check
found a difference over --tolerance, 2 bad input (the command prints the error).
"""

from __future__ import annotations

import argparse
import logging
import math
from pathlib import Path
from typing import NoReturn

from surge.cfg.cli import str2bool
from surge.errors import ConfigError
from surge.export.options import DEFAULT_TOLERANCE, FORMATS

log = logging.getLogger("surge")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # a ConfigError naming the flag, not argparse's exit
        words = message.replace(",", " ").split()
        flags = [w for w in words if w.startswith("--")]
        field = flags[0].lstrip("-").split("=")[0].rstrip(":").split("/")[0] if flags else "command line"
        raise ConfigError(field, message, "see `surge export --help`.")


def build_parser() -> argparse.ArgumentParser:
    """The flags of `surge export`."""
    p = _Parser(prog="surge export", description=__doc__.split("\n\n")[1], allow_abbrev=False)
    p.add_argument("--experiment", required=True, help="The experiment folder's name inside --train_dir.")
    p.add_argument("--train_dir", default="./train_dir", help="Root folder of the experiments.")
    p.add_argument("--format", default="onnx", help=f"{' or '.join(FORMATS)} (default onnx).")
    p.add_argument(
        "--output",
        default="",
        help="The file to write (default TRAIN_DIR/EXPERIMENT/export/policy_p<index>.onnx or .pt).",
    )
    p.add_argument("--policy_index", type=int, default=0, help="Which policy (checkpoint_p<index>).")
    p.add_argument(
        "--load_checkpoint_kind",
        default="latest",
        choices=("latest", "best"),
        help="Which checkpoint, as enjoy.",
    )
    p.add_argument(
        "--check",
        type=str2bool,
        nargs="?",
        const=True,
        default=False,
        help="Run the written file on random observations and compare it with the torch model.",
    )
    p.add_argument(
        "--tolerance",
        type=float,
        default=DEFAULT_TOLERANCE,
        help="--check fails over this max abs difference (any output).",
    )
    return p


def main(argv: list[str] | None = None) -> int:
    """Runs `surge export`; returns the exit status (0 written and checked, 1 check failed).

    Raises:
        ConfigError: a bad flag, an unknown --format, a missing experiment or checkpoint, or an
            experiment of an algorithm other than APPO and A2C (`surge.export.load`).
        EnvError: an observation space that cannot be exported.
        SurgeError: the checkpoint does not load.
    """
    # torch only once the arguments are known to be good: bad input fails fast
    from surge.export.load import load_policy
    from surge.runtime.experiment_folder import setup_logging

    args = build_parser().parse_args(argv)
    if args.format not in FORMATS:  # before anything is loaded
        raise ConfigError(
            "format", f"unknown format {args.format!r}.", f"pass --format={' or --format='.join(FORMATS)}."
        )
    if not (math.isfinite(args.tolerance) and args.tolerance >= 0):
        raise ConfigError(
            "tolerance", f"must be a finite number >= 0, got {args.tolerance}.", "e.g. --tolerance=1e-5."
        )
    setup_logging()
    loaded = load_policy(args.train_dir, args.experiment, args.policy_index, args.load_checkpoint_kind)
    out = (
        Path(args.output)
        if args.output
        else (
            Path(args.train_dir)
            / args.experiment
            / "export"
            / f"policy_p{args.policy_index}{FORMATS[args.format]}"
        )
    )
    from surge.export.check import check_file  # torch, onnx: once the input is known to be good
    from surge.export.write import export_model

    meta = {
        "surge_env": str(loaded.cfg.env),
        "surge_algo": str(loaded.cfg.algo),
        "surge_checkpoint": str(loaded.checkpoint),
        "observation_space": str(loaded.obs_space),
        "action_space": str(loaded.action_space),
        # what the env received from the actions during training (surge.sampling.env_actions),
        # whether the recurrent state was reset at episode starts, and the critic's units
        "clip_actions": str(bool(loaded.cfg.clip_actions)),
        "rescale_actions": str(bool(loaded.cfg.rescale_actions)),
        "zero_rnn_on_done": str(bool(loaded.cfg.zero_rnn_on_done)),
        "values_normalized": str(bool(loaded.cfg.normalize_returns)),
        # True: `values` is the actor's value head, which a central value run never trains
        "central_value": str(bool(loaded.cfg.central_value)),
    }
    policy = export_model(loaded.model, loaded.obs_space, args.format, out, meta)
    print(f"wrote {out} ({args.format}) from {loaded.checkpoint}")
    print(f"  inputs:  {', '.join(policy.input_names)}")
    print(f"  outputs: {', '.join(policy.output_names)}")
    if not args.check:
        return 0
    diffs = check_file(policy, out, args.format)
    worst = max(diffs.values())
    shown = ", ".join(f"{k} {v:.3g}" for k, v in diffs.items())
    if worst > args.tolerance:
        print(f"check FAILED: max abs difference {worst:.3g} > --tolerance={args.tolerance:g} ({shown})")
        return 1
    print(f"check passed: max abs difference {worst:.3g} <= {args.tolerance:g} ({shown})")
    return 0
