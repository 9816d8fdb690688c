"""The Python API: train from a script or a notebook, then act with the trained policy.

    from surge import train, load_policy
    run = train(env="CartPole-v1", train_for_env_steps=200_000, num_workers=2)
    policy = load_policy(run.folder)
    action, state = policy.act(obs, state)

`train(**flags)` takes the flags of `surge train` as keyword arguments and builds the same typed
`Config` through the same parser and validation (`surge.app.resolve.parse_cfg`: env-family defaults,
a YAML file with `cfg=`, every refusal). Errors are raised, never turned into an exit: `ConfigError`
and `EnvError` for bad input (before any process starts), `RunFailed` for a run that failed.

This module imports nothing heavy (torch, gymnasium) until a function is called, so that
`import surge` stays cheap.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surge.errors import ConfigError, RunFailed

if TYPE_CHECKING:
    from surge.cfg.config import Config
    from surge.export.acting import Policy

#: keyword arguments that are not training flags: `surge train --help` / `--version` would print
#: and exit, which a function must not do
_REFUSED = {"help": "print `surge train --env=ENV --help` in a shell", "version": "read surge.__version__"}


@dataclass
class Run:
    """A finished (or stopped) training run.

    Attributes:
        cfg: the run's `Config`, as parsed and validated.
        folder: the experiment folder, `train_dir/experiment` (checkpoints, cfg.json, the log
            surge_log.txt, TensorBoard summaries); `load_policy(run.folder)` loads its policy.
        status: "done" (the budget was reached), "interrupted" (Ctrl+C / SIGTERM: a checkpoint was
            saved; the same call resumes), or "already_done" (the folder held a finished run and
            nothing was trained; pass `restart_behavior="restart"` to train again). A failed run
            raises `RunFailed` instead.
        summary: throughput from the first env steps on: `total_env_frames`, `env_frames`,
            `seconds` (wall-clock s), `env_frames_per_sec` (nan for a run under 1 s); empty when
            no env step was taken.
    """

    cfg: Config
    folder: Path
    status: str
    summary: dict[str, float] = field(default_factory=dict)


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def flags_to_argv(flags: dict[str, Any]) -> list[str]:
    """Keyword flags as `surge train` arguments: `x=v` -> `--x=v`; booleans True/False, None
    `None`, lists and tuples `--x v1 v2 ...` (an empty one `--x`).

    Raises:
        ConfigError: `help` or `version` (they print and exit on the command line); a list item
            that starts with "-" and is not a number (the parser would read it as an option).
    """
    argv: list[str] = []
    for name, value in flags.items():
        if name in _REFUSED:
            raise ConfigError(name, "is a command-line option, not a training flag.", _REFUSED[name] + ".")
        if isinstance(value, (list, tuple)):
            items = [str(v) for v in value]
            for item in items:
                if item.startswith("-") and not _is_number(item):
                    raise ConfigError(
                        name,
                        f"list item {item!r} starts with '-': the command line would read it as an option.",
                        "pass list items that do not start with '-' (negative numbers are fine).",
                    )
            argv += [f"--{name}", *items]
        else:
            argv.append(f"--{name}={value}")
    return argv


def _unguarded_call_message(site: tuple[str, int] | None) -> tuple[str, str]:
    """(problem, fix) for a `train` call that each child process of the async placement would
    make again while it imports the main script (`surge.runtime.main_module`)."""
    where = "the main script" if site is None else f"{site[0]}, line {site[1]},"
    return (
        f'train() is called at the top level of {where} outside `if __name__ == "__main__":`; '
        "the async placement's worker processes import the main script again, and each would call "
        "train() too (multiprocessing's forkserver/spawn start methods).",
        'put the call under `if __name__ == "__main__":` (docs/python_api.md), or pass '
        "serial_mode=True (one process: nothing imports the script again).",
    )


def train(**flags: Any) -> Run:
    """Trains with the flags of `surge train` given as keyword arguments (`env="CartPole-v1"`,
    `train_for_env_steps=200_000`, `cfg="my.yaml"`, `encoder_mlp_layers=[64, 64]`); blocks until
    the run ends and returns its `Run`. Resumes the experiment `train_dir/experiment` when it
    exists (`restart_behavior`), exactly as the command does.

    With the async placement (the default), the worker processes are started from a fork server
    (or with `spawn`), which runs the main script again: in a script, call `train` under
    `if __name__ == "__main__":`. Standard input (`python - <<EOF`), `python -c` and notebooks need
    nothing. Ctrl+C stops the run with a checkpoint (status "interrupted").

    Raises:
        ConfigError: an unknown flag, a value of the wrong type or out of range, a refused
            combination (before any process starts); a call at the top level of a script, outside
            `if __name__ == "__main__":`, with the async placement (`e.field` "serial_mode").
        EnvError: an env that cannot be made or whose spaces the config cannot train on.
        RunFailed: the run ended with status "failed" (a child process crashed or hung, or the
            final weights could not be saved); `e.run` is its `Run`, the log file says why.
    """
    # the engine (torch) when a run is asked for: `import surge` binds this module cheaply
    from surge.app.resolve import parse_cfg
    from surge.app.run_config import run_config
    from surge.runtime.experiment_folder import ExperimentFolder
    from surge.runtime.main_module import importing_main_in_a_child, unguarded_call_site

    if importing_main_in_a_child():  # before the config: nothing may touch the parent's run folder
        raise ConfigError("serial_mode", *_unguarded_call_message(None))
    cfg = parse_cfg(flags_to_argv(flags))
    if not cfg.serial_mode:
        site = unguarded_call_site(sys._getframe(1))
        if site is not None:
            raise ConfigError("serial_mode", *_unguarded_call_message(site))
    training, status = run_config(cfg)
    run = Run(cfg, ExperimentFolder(cfg).root, status, dict(training.summary))
    if status == "failed":
        raise RunFailed(
            f"the training run in {run.folder} failed (its log, {run.folder / 'surge_log.txt'}, says why).",
            run,
        )
    return run


def load_policy(
    folder: str | Path, policy_index: int = 0, kind: str = "latest", device: str = "cpu"
) -> Policy:
    """The trained policy of the experiment folder `folder` (`Run.folder`, `train_dir/experiment`),
    from its newest `kind` ("latest" or "best") checkpoint, ready to `act` on numpy observations.

    Raises:
        ConfigError: no experiment in `folder`, an algorithm other than APPO or A2C, no policy
            `policy_index`, or no checkpoint of that kind (`surge.export.load.load_policy`).
        SurgeError: the checkpoint exists but does not load.
    """
    # torch: when a policy is loaded (`import surge` binds this module cheaply)
    from surge.export.acting import Policy
    from surge.export.load import load_policy as load

    path = Path(folder)
    return Policy(load(str(path.parent), path.name, policy_index, kind), device)
