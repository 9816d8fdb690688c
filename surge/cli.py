"""The `surge` command: `surge train | enjoy | bench | check-env | export | tune | report | tb |
doom-scenarios` (and `python -m surge.train`)."""

from __future__ import annotations

import difflib
import os
import sys

from surge.errors import SurgeError

COMMANDS = ("train", "enjoy", "bench", "check-env", "export", "tune", "report", "tb", "doom-scenarios")

USAGE = """usage: surge COMMAND [--flag=value ...]

commands:
  train       train an agent            (surge train --env=atari_breakout --experiment=breakout)
  enjoy       watch or record an agent  (surge enjoy --env=atari_breakout --experiment=breakout --save_video=True)
  bench       env frames/s of random actions through the sampler (surge bench --env=atari_pong --num_workers=2)
  check-env   check that an env follows the API surge expects (surge check-env --env=my_module:MyEnv-v0)
  export      write a trained policy as ONNX or TorchScript (surge export --experiment=breakout --check)
  tune        the fastest workers / envs / splits on this machine, as a YAML for --cfg (surge tune --env=CartPole-v1)
  report      several runs in one figure and table, seeds as mean ± std (surge report train_dir/sweep --out=sweep_report)
  tb          TensorBoard over experiments matching a wildcard (surge tb 'cartpole_*' --train_dir=train_dir)
  doom-scenarios  Sample Factory's Doom maps from its wheel (surge doom-scenarios install | status)

`surge train --env=ENV --help` lists every parameter by section, including those the env family adds.
`surge --version` prints the version.
"""


def _import_from_the_current_folder() -> None:
    """Puts the current folder first on `sys.path`, as `python -m surge.train` has it, so that the
    console script finds a module of the folder it runs in (`--env=my_module:MyEnv-v0`,
    `--algo=my_algos:NAME`). A console script's `sys.path` starts with the folder of the script
    (the environment's `bin/`), not the current one. The children of the async placement take this
    `sys.path` from the main process (multiprocessing's start data), so they import it too."""
    try:
        cwd = os.getcwd()
    except OSError:  # the folder was deleted under the shell: nothing to import from
        return
    if "" not in sys.path and cwd not in sys.path:
        sys.path.insert(0, cwd)


def main(argv: list[str] | None = None) -> int:
    """Runs `surge COMMAND ...`; returns the exit code: 0 done (or `--help`, `--version`), 1 a failed
    run, 2 bad input (no command, an unknown command, a refused config). Run as a program
    (`argv` None), modules of the current folder can be imported, as with `python -m`."""
    if argv is None:
        _import_from_the_current_folder()
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
    # each command's module is imported only when that command runs (here and for --version above):
    # `surge --help` and a mistyped command import no torch
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
            from surge.app.check_env import main as check_main  # it loads the built-in families

            return check_main(rest)
        if command == "doom-scenarios":
            from surge.envs.doom.sf_maps_install import main as doom_scenarios_main

            return doom_scenarios_main(rest)
    except SurgeError as e:
        print(f"surge {command}: error: {e}", file=sys.stderr)
        return 2
    close = difflib.get_close_matches(command, COMMANDS, n=1)
    hint = f"; did you mean `surge {close[0]}`?" if close else ""
    print(f"surge: unknown command {command!r}{hint}\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
