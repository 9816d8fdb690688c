"""The `surge` command: `surge train | enjoy | bench | check-env | export | tune | report | tb` (and `python -m surge.train`)."""

from __future__ import annotations

import difflib
import sys

from surge.errors import SurgeError

COMMANDS = ("train", "enjoy", "bench", "check-env", "export", "tune", "report", "tb")

USAGE = """usage: surge COMMAND [--flag=value ...]

commands:
  train       train an agent            (surge train --env=atari_breakout --experiment=breakout)
  enjoy       watch or record an agent  (surge enjoy --env=atari_breakout --experiment=breakout --save_video=True)
  bench       env frames/s of random actions through the sampler (surge bench --env=atari_pong --num_workers=2)
  check-env   check that an env follows the API surge expects (surge check-env --env=MyEnv-v0)
  export      write a trained policy as ONNX or TorchScript (surge export --experiment=breakout --check)
  tune        the fastest workers / envs / splits on this machine, as a YAML for --cfg (surge tune --env=CartPole-v1)
  report      several runs in one figure and table, seeds as mean ± std (surge report train_dir/sweep --out=sweep_report)
  tb          TensorBoard over experiments matching a wildcard (surge tb 'cartpole_*' --train_dir=train_dir)

`surge train --env=ENV --help` lists every parameter by section, including those the env family adds.
`surge --version` prints the version.
"""


def main(argv: list[str] | None = None) -> int:
    """Runs `surge COMMAND ...`; returns the exit code: 0 done (or `--help`, `--version`), 1 a failed
    run, 2 bad input (no command, an unknown command, a refused config)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:  # no command is a usage error (argparse's exit code 2); only --help asked for the usage
        print(f"surge: error: no command given\n\n{USAGE}", file=sys.stderr)
        return 2
    if argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    if argv[0] == "--version":
        from surge.cfg.cli import version_text

        print(version_text())
        return 0
    command, rest = argv[0], argv[1:]
    try:
        if command == "train":
            from surge.train import main as train_main

            return train_main(rest)
        if command == "bench":
            from surge.train import main as train_main

            return train_main(["--algo=DUMMY_SAMPLER", *rest])
        if command == "enjoy":
            from surge.enjoy import main as enjoy_main

            return enjoy_main(rest)
        if command == "export":
            from surge.export.command import main as export_main

            return export_main(rest)
        if command == "tune":
            from surge.tune.command import main as tune_main

            return tune_main(rest)
        if command == "report":
            from surge.experiment.compare import main as report_main

            return report_main(rest)
        if command == "tb":
            from surge.experiment.tb import main as tb_main

            return tb_main(rest)
        if command == "check-env":
            from surge.envs.check import main as check_main

            return check_main(rest)
    except SurgeError as e:
        print(f"surge {command}: error: {e}", file=sys.stderr)
        return 2
    close = difflib.get_close_matches(command, COMMANDS, n=1)
    hint = f"; did you mean `surge {close[0]}`?" if close else ""
    print(f"surge: unknown command {command!r}{hint}\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
