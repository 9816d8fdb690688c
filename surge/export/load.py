"""The experiment `surge export` reads: its config, one agent's spaces and the checkpointed
acting module of one policy (the checkpoint `surge enjoy` would play: --load_checkpoint_kind
latest or best)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from surge.cfg.config import Config, ExperimentParams
from surge.cfg.validate import check_experiment_name
from surge.errors import ConfigError, SurgeError

if TYPE_CHECKING:  # torch is imported once the experiment is known to exist (bad input fails fast)
    import gymnasium as gym
    from torch import nn


def exportable_algorithms() -> list[str]:
    """The registered algorithms whose acting module is an actor-critic with `act` (what
    `ExportablePolicy` wraps): those declaring `Capabilities.exportable`."""
    import surge.app.builtins  # noqa: F401  (torch, as in saved_values: the built-in algorithms)
    from surge.learning.algorithm import algorithm_names, get_algorithm

    default = ExperimentParams().algo
    names = [n for n in algorithm_names() if get_algorithm(n).capabilities.exportable]
    return sorted(names, key=lambda n: (n != default, n))  # the default algorithm first


@dataclass
class LoadedPolicy:
    """What `load_policy` returns: the run's config, one agent's observation and action spaces,
    the acting module (eval mode, on the CPU) and the checkpoint file its weights came from."""

    cfg: Config
    obs_space: gym.Space
    action_space: gym.Space
    model: nn.Module
    checkpoint: Path


def _experiments(train_dir: Path) -> list[str]:
    if not train_dir.is_dir():
        return []
    return sorted(p.name for p in train_dir.iterdir() if p.is_dir() and (p / "cfg.json").is_file())


def saved_values(train_dir: str, experiment: str) -> dict[str, Any]:
    """The experiment's saved config (`train_dir/experiment/cfg.json`) as a flat dict.

    Raises:
        ConfigError: no such experiment (the message lists those in `train_dir`), or an
            experiment trained with an algorithm that is not exportable (`exportable_algorithms`).
    """
    check_experiment_name(train_dir, experiment)
    path = Path(train_dir) / experiment / "cfg.json"
    if not path.is_file():
        names = _experiments(Path(train_dir))
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        there = f"it holds {shown}" if names else "it holds no experiment"
        if not Path(train_dir).is_dir():
            there = "it does not exist"
        raise ConfigError(
            "experiment",
            f"no experiment {experiment!r} in --train_dir={train_dir} ({path} not found; {there}).",
            "pass the --experiment and --train_dir of a trained run (surge train --env=ENV "
            f"--experiment={experiment} trains one).",
        )
    values = json.loads(path.read_text())
    algo = values.get("algo", "APPO")
    # a name read from the saved file: looked up among the registered algorithms, never imported
    # (surge.cfg.saved_code); the registry (torch) once the experiment is known to exist
    import surge.app.builtins  # noqa: F401  (the built-in algorithms, registered)
    from surge.learning.algorithm import registered_algorithm

    found = registered_algorithm(algo) if isinstance(algo, str) else None
    if found is None or not found.capabilities.exportable:
        supported = exportable_algorithms()
        raise ConfigError(
            "experiment",
            f"{experiment!r} was trained with --algo={algo}; surge export writes the actor-critic "
            f"policies of policy-gradient algorithms only ({', '.join(supported)}).",
            "export an experiment trained with " + " or ".join(f"--algo={a}" for a in supported) + ".",
        )
    return values


def load_policy(train_dir: str, experiment: str, policy_index: int = 0, kind: str = "latest") -> LoadedPolicy:
    """Loads policy `policy_index` of the experiment from its newest `kind` ("latest" or "best")
    checkpoint, its spaces from one env made with the run's config.

    Raises:
        ConfigError: see `saved_values`; a policy index the run does not have; no checkpoint of
            that kind (the message says whether the other kind exists).
        SurgeError: the checkpoint exists but does not load.
        CheckpointMismatch: its weights are of another network than the saved config builds.
    """
    values = saved_values(train_dir, experiment)  # before torch is imported: bad input fails fast
    # torch and the engine once the saved run is known to exist (saved_values above fails fast)
    from surge.app.resolve import parse_cfg
    from surge.envs.registry import make_env
    from surge.learning.algorithm import get_algorithm
    from surge.runtime.checkpoint import CheckpointManager
    from surge.runtime.checkpoint_fit import check_fits
    from surge.runtime.experiment_folder import ExperimentFolder

    num_policies = int(values.get("num_policies", 1))
    if not 0 <= policy_index < num_policies:
        raise ConfigError(
            "policy_index",
            f"{experiment!r} trained {num_policies} polic{'y' if num_policies == 1 else 'ies'}, "
            f"there is no policy {policy_index}.",
            f"pass --policy_index between 0 and {num_policies - 1}.",
        )
    cfg = parse_cfg(
        [
            f"--env={values['env']}",
            f"--experiment={experiment}",
            f"--train_dir={train_dir}",
            f"--policy_index={policy_index}",
            f"--load_checkpoint_kind={kind}",
        ],
        evaluation=True,
    )
    ckpts = CheckpointManager(ExperimentFolder(cfg).checkpoints(policy_index))
    path = ckpts.latest(kind)
    if path is None:
        other = "best" if kind == "latest" else "latest"
        has_other = ckpts.latest(other) is not None
        raise ConfigError(
            "load_checkpoint_kind" if has_other else "experiment",
            f"{experiment!r} has no {kind} checkpoint in {ckpts.folder}"
            + (
                f", but it has a {other} one."
                if has_other
                else " (a run stopped before its first save has none)."
            ),
            f"pass --load_checkpoint_kind={other}."
            if has_other
            else "train it longer (the same command resumes it).",
        )
    state = ckpts.load(kind, path=path)
    if state is None:
        raise SurgeError(f"could not load the checkpoint {path} (the warnings above say why).")
    cfg.batched_sampling = False
    env = make_env(cfg)
    try:
        obs_space, action_space = env.observation_space, env.action_space
    finally:
        env.close()
    model = get_algorithm(cfg.algo).make_model(cfg, obs_space, action_space).acting
    if getattr(cfg, "central_value", False):  # the actor's inputs: the state is the critic's alone
        # only for a run trained with a central value
        from surge.learning.central_value import actor_observation_space

        obs_space = actor_observation_space(obs_space, cfg.central_value_state_key)
    check_fits(model, state["model"], f"the checkpoint {path} (model)")
    model.load_state_dict(state["model"])
    model.eval()
    return LoadedPolicy(cfg, obs_space, action_space, model, path)
