"""Checks of a resolved config, run once before any process or env starts."""

from __future__ import annotations

import dataclasses
import logging
import math
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from surge.cfg.config import core_fields, env_frameskip, minibatches_to_accumulate
from surge.errors import ConfigError

log = logging.getLogger("surge")

_POSITIVE_INTS = (
    "rollout",
    "recurrence",
    "batch_size",
    "num_batches_per_iteration",
    "num_workers",
    "num_envs_per_worker",
    "worker_num_splits",
    "num_policies",
    "min_traj_buffers_per_worker",
    "hidden_size",
    "rnn_num_layers",
    "keep_checkpoints",
    "sample_env_frames",
)


#: more intra-op threads than any machine has cores (torch refuses values beyond a C int)
MAX_TORCH_THREADS = 4096

#: Sample Factory parameters accepted so its command lines run, with no effect in surge (yet)
NO_EFFECT = {
    "actor_worker_gpus": ([], "rollout workers do not render on GPUs"),
    "learner_main_loop_num_cores": (1, "the learner uses --num_torch_threads threads"),
}


#: flags only population-based training reads
PBT_ONLY = (
    "pbt_period_env_steps",
    "pbt_start_mutation",
    "pbt_replace_fraction",
    "pbt_mutation_rate",
    "pbt_replace_reward_gap",
    "pbt_replace_reward_gap_absolute",
    "pbt_optimize_gamma",
    "pbt_target_objective",
    "pbt_perturb_min",
    "pbt_perturb_max",
)


#: flags read only by the processes of the multi-process placement: no effect with --serial_mode=True
ASYNC_ONLY = {
    "policy_workers_per_policy": "inference runs in the main process",
    "decorrelate_experience_max_seconds": "there are no rollout processes to start at different times",
    "set_workers_cpu_affinity": "there are no rollout processes to pin to cores",
    "force_envs_single_thread": "the envs run in the main process, with its threads",
    "reset_timeout_seconds": "there are no rollout processes to restart",
    "heartbeat_timeout_sec": "there are no worker processes to watch",
    "max_worker_restarts_per_hour": "there are no worker processes to replace",
    "default_niceness": "there are no child processes to renice",
    "train_in_background_thread": "training runs in the main loop, between rollouts",
}


def rl_games_notes(path: str) -> list[str]:
    """The keys of the rl_games file `path` (the run's `--cfg`) that have no effect here or only an
    approximate one, one line each (`surge.cfg.rl_games_yaml.translate`); [] for no file, a file
    that is gone, or surge's own flat YAML."""
    if not path:
        return []
    from pathlib import Path

    if not Path(path).is_file():
        return []
    from surge.cfg.cli import read_yaml
    from surge.cfg.rl_games_yaml import is_rl_games_yaml, translate

    data = read_yaml(path)
    if not is_rl_games_yaml(data):
        return []
    return [f"rl_games file {path}: {n}." for n in translate(data, path).notes]


def config_notes(cfg: Any) -> list[str]:
    """Flags that are accepted but have no effect in this run, one sentence each with the reason:
    Sample Factory parameters surge does not use (`NO_EFFECT`) and, with --serial_mode=True, flags
    only the multi-process placement reads (`ASYNC_ONLY`). A flag is named only when its value
    differs from this run's default (after the env family's and the algorithm's overrides), so a
    value the family chose is not reported as the user's. The run logs these once, after its log
    file is set up; an rl_games `--cfg` file adds its own (`rl_games_notes`)."""
    notes = rl_games_notes(getattr(cfg, "cfg", ""))
    defaults = _field_defaults(cfg)
    for name, (default, why) in NO_EFFECT.items():
        if getattr(cfg, name, default) != defaults.get(name, default):
            notes.append(f"--{name} has no effect in surge ({why}).")
    if getattr(cfg, "serial_mode", False):
        for name, why in ASYNC_ONLY.items():
            if name in defaults and getattr(cfg, name) != defaults[name]:
                notes.append(f"--{name} has no effect with --serial_mode=True ({why}).")
    from surge.learning.algorithm import get_algorithm

    algo = get_algorithm(cfg.algo)
    for name in algo.unused_params:
        if name in defaults and getattr(cfg, name) != defaults[name]:
            notes.append(f"--{name} has no effect with --algo={algo.name} ({algo.description}).")
    if not cfg.use_rnn and not getattr(cfg, "zero_rnn_on_done", True):
        notes.append("--zero_rnn_on_done=False has no effect with --use_rnn=False (no recurrent state).")
    if not str(cfg.lr_schedule).startswith("kl_adaptive"):
        for name in ("lr_schedule_kl_threshold", "lr_adaptive_min", "lr_adaptive_max"):
            if name in defaults and getattr(cfg, name) != defaults[name]:
                notes.append(f"--{name} has no effect without --lr_schedule=kl_adaptive_minibatch|epoch.")
    if cfg.bound_loss_type != defaults.get("bound_loss_type", "bound") and not cfg.bounds_loss_coef:
        notes.append("--bound_loss_type has no effect with --bounds_loss_coef=0.")
    if cfg.num_policies == 1 and cfg.policy_mapping != defaults.get("policy_mapping", "random"):
        notes.append("--policy_mapping has no effect with --num_policies=1.")
    if not cfg.with_pbt:
        for name in PBT_ONLY:
            if name in defaults and getattr(cfg, name) != defaults[name]:
                notes.append(f"--{name} has no effect without --with_pbt=True.")
    else:
        notes += pbt_budget_notes(cfg)
    if getattr(cfg, "self_play", False) and cfg.policy_mapping == "random":
        notes.append(
            "--self_play=True: the agents are mapped with --policy_mapping=self_play (each game pairs "
            "policy 0 with one opponent slot), not random."
        )
    if not getattr(cfg, "self_play", False):
        for name in (
            "self_play_update_score",
            "self_play_games_to_check",
            "self_play_check_scores",
            "self_play_env_update_num",
        ):
            if name in defaults and getattr(cfg, name) != defaults[name]:
                notes.append(f"--{name} has no effect without --self_play=True.")
    if not getattr(cfg, "central_value", False):
        from surge.cfg.config import CentralValueParams

        for f in dataclasses.fields(CentralValueParams):
            name = f.name
            if name != "central_value" and name in defaults and getattr(cfg, name) != defaults[name]:
                notes.append(f"--{name} has no effect without --central_value=True.")
    from surge.evaluation.train_eval_checks import train_eval_notes

    notes += train_eval_notes(cfg, defaults)
    from surge.distributed.ray_checks import ray_notes

    notes += ray_notes(cfg, defaults)
    return notes


def pbt_budget_notes(cfg: Any) -> list[str]:
    """With --with_pbt=True, a sentence when the run's budget is too short for PBT to update any
    policy: a policy is first updated once it played more than --pbt_period_env_steps and at
    least --pbt_start_mutation env frames (`surge.population.pbt`), and the policies share
    --train_for_env_steps, about train_for_env_steps / num_policies env frames each. Sample
    Factory's defaults (5M and 20M env frames) leave a short run without a single update."""
    if not cfg.with_pbt:
        return []
    first = max(cfg.pbt_start_mutation, cfg.pbt_period_env_steps + 1)
    share = cfg.train_for_env_steps // max(1, cfg.num_policies)
    if first <= share:
        return []
    return [
        f"--with_pbt=True will likely update no policy in this run: a policy is first updated after it "
        f"played {first} env frames (--pbt_start_mutation={cfg.pbt_start_mutation}, "
        f"--pbt_period_env_steps={cfg.pbt_period_env_steps}), and each of the {cfg.num_policies} "
        f"policies plays about {share} of --train_for_env_steps={cfg.train_for_env_steps}; lower both "
        "flags for PBT to act."
    ]


def _field_defaults(cfg: Any) -> dict[str, Any]:
    """This run's default of every flag: those `surge.app.resolve.parse_cfg` used (the defaults the
    env's spaces chose included), else `surge.cfg.cli.field_defaults` for its env family and
    algorithm; the dataclasses' own defaults for a config of an env not registered here."""
    from surge.cfg.cli import FIELD_DEFAULTS_ATTR, field_defaults

    parsed = getattr(cfg, FIELD_DEFAULTS_ATTR, None)
    if parsed is not None:  # a chosen default is the run's, not a flag the user set
        return dict(parsed)
    from surge.envs.registry import find_family
    from surge.errors import SurgeError

    try:
        return field_defaults(find_family(cfg.env), cfg.algo, cfg.eval_params is not None)
    except SurgeError:  # a config built by hand for an env that is not registered here
        pass
    out = {}
    sections = [core_fields()] + [
        dataclasses.fields(p)
        for p in (cfg.env_params, cfg.eval_params, cfg.algo_params)
        if dataclasses.is_dataclass(p)
    ]
    for f in (f for fields in sections for f in fields):
        if f.default is not dataclasses.MISSING:
            out[f.name] = f.default
        elif f.default_factory is not dataclasses.MISSING:
            out[f.name] = f.default_factory()
    return out


def validate_cfg(cfg: Any) -> None:
    """Raises `ConfigError` naming the first invalid field and how to fix it. Accepted flags
    without effect are not errors: `config_notes` lists them for the run's log.

    Reads the file system (the experiment folder must lie inside --train_dir and, for training,
    be creatable: `check_experiment_name`, `check_train_dir`) and, only for
    `--policy_mapping=agent_index` with several policies, makes the env once to count its agents
    (`check_policy_mapping`); writes nothing."""
    check_experiment_name(cfg.train_dir, cfg.experiment)
    _check_numbers(cfg)
    from surge.sampling.policy_mapping import mapping_names

    if cfg.policy_mapping not in mapping_names():  # else every rollout worker would fail to start
        raise ConfigError(
            "policy_mapping",
            f"unknown policy mapping {cfg.policy_mapping!r}.",
            f"use one of {mapping_names()}, or a name registered with "
            "surge.sampling.policy_mapping.register_policy_mapping before the run starts.",
        )
    for name in _POSITIVE_INTS:
        v = getattr(cfg, name)
        if not isinstance(v, int) or isinstance(v, bool) or v < 1:
            raise ConfigError(
                name, f"must be a positive integer, got {v!r}.", f"pass --{name}=N with N >= 1."
            )
    _check_policy_workers(cfg)
    if cfg.num_envs_per_worker % cfg.worker_num_splits:
        raise ConfigError(
            "num_envs_per_worker",
            f"{cfg.num_envs_per_worker} envs cannot be split evenly into worker_num_splits={cfg.worker_num_splits} groups.",
            f"use a multiple of {cfg.worker_num_splits} (e.g. --num_envs_per_worker="
            f"{cfg.worker_num_splits * max(1, round(cfg.num_envs_per_worker / cfg.worker_num_splits))}) "
            "or --worker_num_splits=1.",
        )
    _check_accumulation(cfg)
    eval_skip = cfg.eval_env_frameskip
    if eval_skip is not None and (eval_skip < 1 or env_frameskip(cfg) % eval_skip):
        raise ConfigError(
            "eval_env_frameskip",
            f"must be a positive divisor of env_frameskip={env_frameskip(cfg)}, got {eval_skip}.",
            "pass --eval_env_frameskip=1 (every frame) or leave it unset (the training frameskip).",
        )
    if cfg.rollout % cfg.recurrence:
        raise ConfigError(
            "rollout",
            f"rollout={cfg.rollout} is not a multiple of recurrence={cfg.recurrence}.",
            f"set --recurrence to a divisor of {cfg.rollout} (e.g. --recurrence={cfg.rollout}).",
        )
    if not 0.0 < cfg.gamma <= 1.0:
        raise ConfigError("gamma", f"discount must be in (0, 1], got {cfg.gamma}.", "e.g. --gamma=0.99.")
    # the algorithm's own flags are checked by it (`Algorithm.validate`: APPO's PPO and V-trace
    # ranges, `surge.learning.pg_checks`) and by its section (`cfg.algo_params.validate()`)
    for name in ("learning_rate", "adam_eps", "reward_clip"):
        if getattr(cfg, name) <= 0:
            raise ConfigError(name, f"must be > 0, got {getattr(cfg, name)}.", "")
    if cfg.num_policies > 127:
        raise ConfigError(
            "num_policies", f"at most 127 policies (int8 policy ids), got {cfg.num_policies}.", ""
        )
    check_roles(cfg)
    check_policy_mapping(cfg)
    from surge.learning.algorithm import get_algorithm
    from surge.learning.pg_checks import check_rl_games_options

    check_rl_games_options(cfg)

    get_algorithm(cfg.algo).validate(cfg)
    from surge.learning.central_value import check_central_value_flags, check_env_state

    check_central_value_flags(cfg)
    from surge.learning.amp import check_mixed_precision

    check_mixed_precision(cfg)
    check_algo = getattr(cfg.algo_params, "validate", None)
    if callable(check_algo):  # the algorithm's section's own ranges (`Algorithm.params`)
        check_algo()
    check_population(cfg)
    from surge.evaluation.train_eval_checks import check_train_eval

    check_train_eval(cfg)
    from surge.distributed.ray_checks import check_ray_flags

    check_ray_flags(cfg)
    from surge.experiment.progress import check_progress_bar

    check_progress_bar(cfg.progress_bar)
    if cfg.with_wandb:
        import importlib.util

        if importlib.util.find_spec("wandb") is None:
            raise ConfigError(
                "with_wandb",
                "Weights & Biases is not installed.",
                "pip install wandb, or --with_wandb=False.",
            )
        problem = wandb_login_problem()
        if problem:
            raise ConfigError(
                "with_wandb",
                problem,
                "run `wandb login` (or set WANDB_API_KEY), or log offline with WANDB_MODE=offline "
                "(`wandb sync` uploads later), or pass --with_wandb=False.",
            )
    check_family = getattr(cfg.env_params, "validate", None)
    if callable(check_family):  # the env family's own ranges (`EnvFamily.extra_params`)
        check_family()
    _check_encoder(cfg)
    from surge.models.model_checks import check_model_flags

    check_model_flags(cfg)
    _check_env_wrappers(cfg)
    _check_memory(cfg)
    check_env_state(cfg)  # makes the env once, with --central_value only
    _check_device(cfg.device)
    if cfg.train_for_env_steps < 0 or cfg.train_for_seconds < 0:
        raise ConfigError("train_for_env_steps", "budgets must be >= 0.", "")
    # training writes the folder; enjoy (eval_params set) only reads it, and a benchmark writes
    # nothing there
    writes = not getattr(cfg, "benchmark", False) and cfg.algo != "DUMMY_SAMPLER"
    if getattr(cfg, "eval_params", None) is None and writes:
        check_train_dir(cfg.train_dir, cfg.experiment)
    if getattr(cfg, "eval_params", None) is None:  # training under torchrun with several ranks
        from surge.distributed.ranks import check_data_parallel

        check_data_parallel(cfg)


def _check_policy_workers(cfg: Any) -> None:
    """`--policy_workers_per_policy`: N >= 1 inference processes per policy, or 0 for inference in
    the rollout workers' processes (`surge.runtime.rollout_inference`), which act on the CPU.

    Raises:
        ConfigError: a negative or non-integer value; 0 with a GPU `--device` in the async placement.
    """
    v = cfg.policy_workers_per_policy
    if not isinstance(v, int) or isinstance(v, bool) or v < 0:
        raise ConfigError(
            "policy_workers_per_policy",
            f"must be a non-negative integer, got {v!r}.",
            "pass --policy_workers_per_policy=N with N >= 1 inference processes per policy, or 0 to act "
            "in the rollout workers.",
        )
    if v == 0 and cfg.device != "cpu" and not getattr(cfg, "serial_mode", False):
        raise ConfigError(
            "policy_workers_per_policy",
            f"0 acts in the rollout workers, on the CPU, but --device={cfg.device} asks for GPU inference.",
            "pass --policy_workers_per_policy=1 (or more) for inference on the GPU, or --device=cpu.",
        )


def _check_device(device: str) -> None:
    """`--device`: cpu, gpu, cuda or cuda:K with a GPU K this process sees.

    Raises:
        ConfigError: another spelling, no CUDA device, or no GPU K.
    """
    import re

    m = re.fullmatch(r"cuda:(\d+)", device)
    if device not in ("cpu", "gpu", "cuda") and m is None:
        raise ConfigError("device", f"{device!r} is not a device.", "pass --device=cpu, gpu, cuda or cuda:K.")
    if device == "cpu":
        return
    import torch

    if not torch.cuda.is_available():
        raise ConfigError("device", "no CUDA device is available to this process.", "pass --device=cpu.")
    if m is not None and int(m[1]) >= torch.cuda.device_count():
        raise ConfigError(
            "device",
            f"GPU {m[1]} does not exist: this process sees {torch.cuda.device_count()} GPU(s).",
            f"pass --device=cuda:K with K < {torch.cuda.device_count()}, or --device=gpu.",
        )


# ------------------------------------------------------------------------------- policy roles


def check_roles(cfg: Any) -> None:
    """Refuses `--frozen_policies` and `--self_play` settings that cannot run: see
    `surge.population.roles.parse_frozen_policies`; self-play needs at least one opponent slot
    (`--num_policies` >= 2), no `--frozen_policies` of its own (its slots are the frozen ones), the
    `self_play` mapping (the default `random` is replaced by it), a positive games_to_check,
    env_update_num in [1, num_policies-1], and an algorithm that learns.

    Raises:
        ConfigError: naming the field and the fix.
    """
    from surge.population.roles import parse_frozen_policies

    parse_frozen_policies(list(cfg.frozen_policies or []), cfg.num_policies)
    if not cfg.self_play:
        if cfg.policy_mapping == "self_play":
            raise ConfigError(
                "policy_mapping",
                "the self_play mapping pairs policy 0 with the pool's slots.",
                "pass --self_play=True, or another mapping.",
            )
        return
    if cfg.num_policies < 2:
        raise ConfigError(
            "num_policies",
            f"self-play needs opponent slots: policy 0 learns, 1..num_policies-1 hold snapshots; got "
            f"--num_policies={cfg.num_policies}.",
            "pass --num_policies=2 or more (e.g. 5 for a pool of 4 snapshots).",
        )
    if cfg.frozen_policies:
        raise ConfigError(
            "frozen_policies",
            "with --self_play=True policies 1..num_policies-1 are the pool's frozen slots.",
            "drop --frozen_policies, or --self_play.",
        )
    if cfg.policy_mapping not in ("random", "self_play"):
        raise ConfigError(
            "policy_mapping",
            f"self-play pairs policy 0 with an opponent slot in every game; --policy_mapping="
            f"{cfg.policy_mapping} would not.",
            "leave --policy_mapping unset (or pass self_play).",
        )
    if cfg.self_play_games_to_check < 1:
        raise ConfigError("self_play_games_to_check", "must be >= 1.", "e.g. 200.")
    if not 1 <= cfg.self_play_env_update_num <= cfg.num_policies - 1:
        raise ConfigError(
            "self_play_env_update_num",
            f"must be between 1 and the {cfg.num_policies - 1} opponent slot(s), got "
            f"{cfg.self_play_env_update_num}.",
            "e.g. --self_play_env_update_num=1.",
        )
    if cfg.with_pbt:
        raise ConfigError("self_play", "self-play and PBT do not run together yet.", "pass one of them.")
    from surge.learning.algorithm import get_algorithm

    if not get_algorithm(cfg.algo).trains or cfg.sampler_only:
        raise ConfigError("self_play", f"--algo={cfg.algo} does not learn: no snapshots to play.", "")


# ------------------------------------------------------------------------------- policy mapping


def check_policy_mapping(cfg: Any, num_agents: int | None = None) -> None:
    """Refuses policies that the built-in mappings can never pick, whose learners would idle for
    the whole run and whose checkpoints would stay untrained: with `agent_index`, policies
    `num_agents`..`num_policies-1` (agent i acts as policy i mod num_policies); with `env_index`,
    policies beyond the run's env objects (num_workers x num_envs_per_worker). `random` picks every
    policy; a registered mapping is the user's to check.

    Args:
        num_agents: agents of one env object; None makes the env once to count them (only for
            agent_index with several policies); an env that cannot be made here is not checked
            (the run's start reports why, and `surge.runtime.components.env_info` checks again
            with the agents it counts).
    Raises:
        ConfigError: on --num_policies, naming the idle policies and the alternatives; on
            --self_play for an env of one agent (self-play needs two players).
    """
    n = cfg.num_policies
    if getattr(cfg, "self_play", False) and num_agents is None:
        num_agents = _count_agents(cfg)
    if getattr(cfg, "self_play", False) and num_agents is not None and num_agents < 2:
        raise ConfigError(
            "self_play",
            f"{cfg.env} has {num_agents} agent: self-play needs a game of two players.",
            "use a two-player env (e.g. --env=pettingzoo_classic.connect_four_v3), or --self_play=False.",
        )
    if n <= 1 or cfg.policy_mapping not in ("agent_index", "env_index"):
        return
    if cfg.policy_mapping == "env_index":
        acting = cfg.num_workers * cfg.num_envs_per_worker
        what = (
            f"env k acts as policy k mod {n}, and the run has {acting} env(s) "
            f"(--num_workers={cfg.num_workers} x --num_envs_per_worker={cfg.num_envs_per_worker})"
        )
        fix = (
            f"pass --num_policies={acting} or fewer, or more envs (--num_workers x "
            f"--num_envs_per_worker >= {n}), or --policy_mapping=random."
        )
    else:
        if num_agents is None:
            num_agents = _count_agents(cfg)
            if num_agents is None:
                return
        acting = num_agents
        what = f"agent i of an env acts as policy i mod {n}, and {cfg.env!r} has {acting} agent(s) per env"
        fix = (
            f"pass --num_policies={acting}" + (" or fewer" if acting > 1 else "") + " (one policy "
            "per agent), or --policy_mapping=random or env_index to give all agents of an env to one "
            "policy."
        )
    if acting >= n:
        return
    idle = list(range(acting, n))
    shown = (
        f"policies {', '.join(map(str, idle[:-1]))} and {idle[-1]}" if len(idle) > 1 else f"policy {idle[0]}"
    )
    raise ConfigError(
        "num_policies",
        f"{shown} would never act with --policy_mapping={cfg.policy_mapping}: {what}; "
        f"{'their learners' if len(idle) > 1 else 'its learner'} would idle for the whole run.",
        fix,
    )


def _count_agents(cfg: Any) -> int | None:
    """Agents of one env object of `cfg` (makes the env once, then closes it); None when the env
    cannot be made here."""
    from surge.envs.registry import make_env

    try:
        env = make_env(cfg)
    except Exception:  # noqa: BLE001 - the env's own error comes at the run's start, from env_info
        return None
    try:
        return int(env.num_agents)
    finally:
        env.close()


# ------------------------------------------------------------------------------- experiment folder


def check_experiment_name(train_dir: str, experiment: str) -> None:
    """The experiment folder `train_dir/experiment` lies strictly inside `train_dir`: `experiment`
    is a folder name (or a relative path such as `group/run`) that is not empty, not absolute and
    does not climb out with `..`. Lexical only (a symlinked experiment folder is fine), reads
    nothing. `surge train` and `surge enjoy` both check it (`validate_cfg`, `ExperimentFolder`).

    Raises:
        ConfigError: on --experiment, saying where the run would have gone.
    """
    fix = (
        "pass a folder name, e.g. --experiment=my_run; choose where runs go with --train_dir "
        "(each experiment is a folder inside it)."
    )
    if not isinstance(experiment, str) or not experiment.strip():
        raise ConfigError(
            "experiment",
            f"is empty ({experiment!r}): the run would write cfg.json, its checkpoints and the done "
            f"marker straight into --train_dir={train_dir}, mixed with every other experiment.",
            fix,
        )
    if "\0" in experiment:
        raise ConfigError("experiment", f"holds a NUL character ({experiment!r}).", fix)
    norm = os.path.normpath(experiment)
    if (
        os.path.isabs(experiment)
        or norm == os.curdir
        or norm == os.pardir
        or norm.startswith(os.pardir + os.sep)
    ):
        where = os.path.normpath(os.path.join(train_dir, experiment))
        raise ConfigError(
            "experiment",
            f"{experiment!r} is not a folder inside --train_dir={train_dir}: the experiment folder "
            f"would be {where}.",
            fix,
        )


def check_train_dir(train_dir: str, experiment: str) -> None:
    """The experiment folder `train_dir/experiment` exists as a writable folder or can be created:
    its nearest existing parent must be a folder in which this process can create a folder (tried
    with a temporary folder, removed at once, so no file is left; `os.access` says yes to root
    where the file system says no, as in /proc).

    Raises:
        ConfigError: on --train_dir (or --experiment when that name is taken by a file), naming
            the path and the OS's reason.
    """
    root = Path(train_dir)
    folder = root / experiment
    fix = "pass a --train_dir in a folder you can write to, e.g. --train_dir=./train_dir."
    for path, field in ((root, "train_dir"), (folder, "experiment")):
        if os.path.lexists(path) and not os.path.isdir(path):
            raise ConfigError(
                field,
                f"{path} exists and is not a folder, so the run cannot write its experiment folder there.",
                fix if field == "train_dir" else "pass another --experiment name, or move the file away.",
            )
    existing = folder
    while not os.path.isdir(existing) and existing != existing.parent:
        if os.path.lexists(existing):  # a file (or a broken link) on the way
            break
        existing = existing.parent
    try:
        if not os.path.isdir(existing):
            raise NotADirectoryError(f"{existing} is not a folder")
        os.rmdir(tempfile.mkdtemp(prefix=".surge_write_check_", dir=existing))
    except OSError as e:
        why = e.strerror or str(e)
        raise ConfigError(
            "train_dir",
            f"cannot create or write the experiment folder {folder}: {why} (in {existing}).",
            fix,
        ) from None


def _check_accumulation(cfg: Any) -> None:
    """The back-pressure limit: the seed's `num_minibatches_to_accumulate` (>= -1) or Sample Factory
    2's `num_batches_to_accumulate` (>= 0 iterations), not both with different values."""
    mini, iters = cfg.num_minibatches_to_accumulate, cfg.num_batches_to_accumulate
    for name, v in (("num_minibatches_to_accumulate", mini), ("num_batches_to_accumulate", iters)):
        if v is not None and v > 2**31:  # the trajectory buffers hold that many batches
            raise ConfigError(
                name, f"{v} batches cannot be held in memory.", f"pass a small --{name}, e.g. 2."
            )
    if mini < -1:
        raise ConfigError(
            "num_minibatches_to_accumulate",
            f"must be >= -1, got {mini}.",
            "pass -1 (two iterations' worth), 0 (synchronous PPO) or a number of minibatches.",
        )
    if iters is None:
        return
    if iters < 0:
        raise ConfigError(
            "num_batches_to_accumulate",
            f"must be >= 0 training iterations, got {iters}.",
            "pass 0 (synchronous PPO) or N >= 1, e.g. --num_batches_to_accumulate=2.",
        )
    if mini != -1 and mini != iters * cfg.num_batches_per_iteration:
        raise ConfigError(
            "num_batches_to_accumulate",
            f"{iters} iterations x num_batches_per_iteration={cfg.num_batches_per_iteration} disagrees "
            f"with num_minibatches_to_accumulate={mini}.",
            "pass only one of --num_batches_to_accumulate (Sample Factory 2, iterations) and "
            "--num_minibatches_to_accumulate (minibatches).",
        )


# ------------------------------------------------------------------------------- value ranges

#: coefficients and limits where a negative value inverts or disables what the flag is for
_NON_NEGATIVE = {
    "max_grad_norm": "0 turns clipping off; a negative norm would scale every gradient to 0",
    "max_policy_lag": "a negative lag masks every sample, so nothing is learned",
}


#: durations -> their least value; the most is what a thread can wait (`threading.TIMEOUT_MAX`)
_SECONDS = {
    "decorrelate_experience_max_seconds": 0,  # a rollout process waits a random time up to it
    "reset_timeout_seconds": 1,  # below 1 s every worker counts as stuck in its first reset
    "save_every_sec": 0,
    "save_best_every_sec": 0,
    "experiment_summaries_interval": 0,
}


def _check_numbers(cfg: Any) -> None:
    """Non-finite floats anywhere, and the ranges of single fields (see `validate_cfg`)."""
    for name, value in cfg.to_dict().items():  # the family's and enjoy's flags too
        for x in value if isinstance(value, list) else [value]:
            if isinstance(x, float) and not math.isfinite(x):
                raise ConfigError(
                    name,
                    f"must be a finite number, got {x!r} (a value beyond ±1.8e308 reads as inf).",
                    f"pass a finite --{name}.",
                )
    for name, why in _NON_NEGATIVE.items():
        v = getattr(cfg, name)
        if v < 0:
            raise ConfigError(name, f"must be >= 0, got {v} ({why}).", f"pass --{name} >= 0.")
    for name, low in _SECONDS.items():
        v = getattr(cfg, name)
        if not low <= v <= threading.TIMEOUT_MAX:
            raise ConfigError(
                name,
                f"a time in seconds in [{low}, {threading.TIMEOUT_MAX:.3g}], got {v}.",
                f"pass --{name} >= {low}" + (", e.g. 120." if low > 0 else "."),
            )
    if cfg.reward_scale <= 0:
        raise ConfigError(
            "reward_scale",
            f"rewards are multiplied by it before learning, got {cfg.reward_scale}: 0 erases every "
            "reward (nothing is learned) and a negative scale trains the agent to minimise its return.",
            "pass --reward_scale > 0 (1 keeps the rewards, e.g. 0.1 for rewards in the hundreds); "
            "to minimise a cost, negate the env's reward in a wrapper.",
        )
    if cfg.initial_stddev <= 0:
        raise ConfigError(
            "initial_stddev",
            f"the Gaussian policy's initial standard deviation, got {cfg.initial_stddev}: its log "
            "is a weight, log(0) = -inf (the weights go NaN at the first update) and a negative "
            "deviation has no log.",
            "pass --initial_stddev > 0, e.g. 1.0 (or 0.5 for a less random start).",
        )
    if cfg.obs_scale <= 0:
        raise ConfigError(
            "obs_scale",
            f"image observations are divided by it, got {cfg.obs_scale}.",
            "pass --obs_scale > 0 (255 for uint8 frames, 1 to leave them as they are).",
        )
    if cfg.heartbeat_timeout_sec < 1:
        raise ConfigError(
            "heartbeat_timeout_sec",
            f"a worker silent this long is replaced as hung, got {cfg.heartbeat_timeout_sec} s; a worker "
            "waiting for actions or free slots checks in every 0.1 s, but an env step may take longer.",
            "pass --heartbeat_timeout_sec >= 1 (seconds), e.g. 60; longer than your env's slowest step.",
        )
    if not 0 <= cfg.num_torch_threads <= MAX_TORCH_THREADS:
        raise ConfigError(
            "num_torch_threads",
            f"torch's intra-op threads per process, got {cfg.num_torch_threads}.",
            f"pass --num_torch_threads between 1 and {MAX_TORCH_THREADS} (this machine has "
            f"{os.cpu_count()} cores), or 0 for torch's default (one per core; docs/threads.md).",
        )
    if cfg.max_worker_restarts_per_hour < 0:
        raise ConfigError(
            "max_worker_restarts_per_hour",
            f"must be >= 0, got {cfg.max_worker_restarts_per_hour}.",
            "pass --max_worker_restarts_per_hour >= 0 (0: a crashed worker stops the run).",
        )
    if cfg.report_interval_sec <= 0:
        raise ConfigError(
            "report_interval_sec",
            f"must be > 0 seconds, got {cfg.report_interval_sec}.",
            "pass --report_interval_sec > 0 (finite), e.g. 5.",
        )
    for name in ("adam_beta1", "adam_beta2"):
        v = getattr(cfg, name)
        if not 0.0 <= v < 1.0:
            raise ConfigError(
                name,
                f"Adam's decay rates lie in [0, 1), got {v}.",
                f"pass --{name} in [0, 1), e.g. 0.9 or 0.999.",
            )
    if cfg.stats_avg < 1:
        raise ConfigError(
            "stats_avg",
            f"episodes averaged in reports, got {cfg.stats_avg}.",
            "pass --stats_avg >= 1, e.g. 100.",
        )
    if cfg.seed is not None and not 0 <= cfg.seed < 2**32:
        raise ConfigError(
            "seed",
            f"numpy seeds lie in [0, 2**32), got {cfg.seed}.",
            "pass --seed in [0, 2**32) (0 <= seed <= 4294967295), or leave it unset for a random run.",
        )
    bad = [s for s in cfg.encoder_mlp_layers if s < 1]
    if bad:
        raise ConfigError(
            "encoder_mlp_layers",
            f"layer sizes must be positive, got {cfg.encoder_mlp_layers}.",
            "pass sizes >= 1, e.g. --encoder_mlp_layers 64 64.",
        )


# ------------------------------------------------------------------------------- encoder

#: the subtypes each encoder_type builds (surge.models.encoders.make_encoder)
ENCODER_SUBTYPES = {
    "conv": ("convnet_simple", "convnet_deepmind", "convnet_impala"),
    "resnet": ("resnet_impala",),
    "mlp": ("mlp", "mlp_mujoco"),
}


def _check_encoder(cfg: Any) -> None:
    """An encoder_subtype that belongs to another encoder_type would be ignored in silence
    (`--encoder_type=conv --encoder_subtype=resnet_impala` builds convnet_simple). The default
    subtype, convnet_simple, goes with every type, so `--encoder_type=resnet` (or mlp) alone works."""
    etype, sub = cfg.encoder_type, cfg.encoder_subtype
    if cfg.encoder_custom or sub in ENCODER_SUBTYPES.get(etype, (sub,)):
        return
    if sub == "convnet_simple" and etype != "conv":
        return
    owner = next((t for t, subs in ENCODER_SUBTYPES.items() if sub in subs), None)
    if owner is None:
        return
    raise ConfigError(
        "encoder_subtype",
        f"{sub} is an encoder of --encoder_type={owner}; --encoder_type={etype} builds "
        f"{' / '.join(ENCODER_SUBTYPES[etype])} and would ignore it.",
        f"pass --encoder_type={owner} for {sub}, or --encoder_type={etype} with "
        f"--encoder_subtype one of {', '.join(ENCODER_SUBTYPES[etype])}.",
    )


def _check_env_wrappers(cfg: Any) -> None:
    """Every `--env_wrappers` entry names an importable wrapper (ConfigError otherwise)."""
    from surge.envs.registry import resolve_wrapper

    for name in getattr(cfg, "env_wrappers", None) or []:
        resolve_wrapper(name)


# ------------------------------------------------------------------------------- W&B


def wandb_login_problem() -> str | None:
    """Why W&B would fail to start a run, or None: no API key is configured (WANDB_API_KEY, the
    netrc file or wandb's settings files) and W&B is not in offline or disabled mode (WANDB_MODE,
    or `wandb offline`). Reads files and the environment only, no network."""
    mode = os.environ.get("WANDB_MODE", "").strip().lower()
    disabled = os.environ.get("WANDB_DISABLED", "").strip().lower() in ("true", "1", "yes")
    if mode in ("offline", "dryrun", "disabled") or disabled:
        return None
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return None
    try:  # wandb's own lookup: settings files (mode, api_key) and the netrc entry of its host
        from wandb.sdk.lib import wbauth
        from wandb.sdk.wandb_setup import _WandbSetup

        settings = _WandbSetup(pid=os.getpid()).settings
        if settings._offline or settings._noop or settings.api_key:
            return None
        try:
            if wbauth.read_netrc_auth(host=settings.base_url):
                return None
        except Exception as e:  # noqa: BLE001 - e.g. an API key of the wrong length in .netrc
            return f"the W&B API key in the netrc file is not usable: {e}"
        host = settings.base_url
    except Exception:  # noqa: BLE001 - another wandb version: read the netrc file ourselves
        import netrc

        host = "api.wandb.ai"
        try:
            path = os.environ.get("NETRC") or os.path.expanduser("~/.netrc")
            if any("wandb" in m for m in netrc.netrc(path).hosts):
                return None
        except (OSError, netrc.NetrcParseError):
            pass
    return f"no W&B login: no API key in WANDB_API_KEY, the netrc file or wandb's settings (host {host})."


# ------------------------------------------------------------------------------- memory

#: bytes per agent step of the trajectory fields other than obs and rnn states (actions >= 4,
#: behavior_log_probs, values, action_logits >= 4, rewards, policy_version 8, three bools)
_STEP_BYTES = 4 + 4 + 4 + 4 + 4 + 8 + 3


def physical_memory_bytes() -> int | None:
    """This machine's RAM in bytes (`SC_PHYS_PAGES` x `SC_PAGE_SIZE`, else /proc/meminfo's
    MemTotal), or None where neither can be read."""
    try:
        return int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError):
        pass
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def rnn_state_floats(cfg: Any) -> int:
    """Floats of one agent's recurrent state (0 without an RNN; the actor's and the critic's with
    `--actor_critic_share_weights=False`)."""
    if not cfg.use_rnn:
        return 0
    streams = 1 if getattr(cfg, "actor_critic_share_weights", True) else 2
    return streams * cfg.hidden_size * cfg.rnn_num_layers * (2 if cfg.rnn_type == "lstm" else 1)


def estimate_memory(
    cfg: Any, obs_bytes: int = 1, obs_floats: int | None = None, num_agents: int = 1
) -> list[tuple[str, int, str]]:
    """A lower bound of the memory a run of `cfg` allocates, in parts: [(field to blame, bytes,
    what it is)]. Without the env's spaces an observation counts as 1 byte and the encoder's input
    as 1 float, so what this reports is certainly needed.

    Args:
        obs_bytes: bytes of one agent's observation (all keys of a Dict).
        obs_floats: length of a flat vector observation (the MLP's input), None when unknown
            or an image.
        num_agents: agents per env.
    """
    from surge.learning.algorithm import Feed, get_algorithm
    from surge.runtime.components import blocks_per_split

    per_worker = cfg.num_workers * cfg.num_envs_per_worker * num_agents
    per_iteration = -(-cfg.batch_size * cfg.num_batches_per_iteration // cfg.rollout)
    if get_algorithm(cfg.algo).feed is Feed.REPLAY:  # blocks are copied out, never held as batches
        per_iteration = 0
    # the pool the run allocates: its blocks grow with the accumulation limit (Sample Factory 2's
    # num_batches_to_accumulate=1e6 asked for a million iterations' worth of trajectories)
    owners = cfg.num_workers * cfg.worker_num_splits
    pool = (
        owners
        * blocks_per_split(cfg, num_agents)
        * (cfg.num_envs_per_worker // cfg.worker_num_splits * num_agents)
    )
    slots = max(per_worker * cfg.num_policies, per_iteration * cfg.num_policies, pool)
    blame = "rollout"
    if pool == slots and minibatches_to_accumulate(cfg) > 2 * cfg.num_batches_per_iteration:
        blame = "num_minibatches_to_accumulate"
        if cfg.num_batches_to_accumulate is not None:
            blame = "num_batches_to_accumulate"
    step = obs_bytes + 4 * rnn_state_floats(cfg) + _STEP_BYTES
    buffers = slots * (cfg.rollout + 1) * step
    parts = [
        (
            blame,
            buffers,
            f"trajectory buffers ({slots} trajectories x {cfg.rollout + 1} steps x {step} bytes)",
        )
    ]
    # model: weights, gradients and Adam's two moments, 4 copies of 4 bytes per parameter
    sizes = [64, 64] if cfg.encoder_subtype == "mlp_mujoco" else list(cfg.encoder_mlp_layers)
    widths = [obs_floats or 1, *sizes]
    mlp = sum(a * b for a, b in zip(widths, widths[1:], strict=False))
    vector_obs = obs_floats is not None or cfg.encoder_type == "mlp"
    encoder_out = sizes[-1] if sizes and vector_obs else 1
    if vector_obs and mlp:
        parts.append(("encoder_mlp_layers", 16 * mlp, f"MLP encoder ({mlp:.3g} parameters x 16 bytes)"))
        parts.append(
            ("encoder_mlp_layers", 4 * cfg.batch_size * max(sizes), "MLP activations of one minibatch")
        )
    h = cfg.hidden_size
    core = 0
    if cfg.use_rnn:
        gates = 4 if cfg.rnn_type == "lstm" else 3
        core = gates * (encoder_out * h + h * h) + (cfg.rnn_num_layers - 1) * gates * 2 * h * h
    if core:
        parts.append(("hidden_size", 16 * core, f"recurrent core ({core:.3g} parameters x 16 bytes)"))
    return parts


def _gb(n: float) -> str:
    return f"{n / 1e9:.1f} GB"


def check_memory(parts: list[tuple[str, int, str]], available: int | None = None) -> None:
    """Refuses a run whose `estimate_memory` parts add up to more than this machine's RAM.

    Raises:
        ConfigError: naming the field of the largest part, its size and the machine's memory.
    """
    available = physical_memory_bytes() if available is None else available
    total = sum(b for _, b, _ in parts)
    if available is None or total <= available:
        return
    field, size, what = max(parts, key=lambda p: p[1])
    raise ConfigError(
        field,
        f"the run needs at least {_gb(total)} of memory, more than this machine's {_gb(available)}; "
        f"the largest part is {what}: {_gb(size)}.",
        "shrink the algorithm's replay buffer (its section's size flag, see --help)."
        if field == "algo"
        else f"lower --{field}"
        + (
            " (or --num_workers, --num_envs_per_worker, --batch_size, --hidden_size with an RNN)"
            if field == "rollout"
            else ""
        )
        + ".",
    )


def _check_memory(cfg: Any) -> None:
    check_memory(estimate_memory(cfg))


def check_population(cfg: Any) -> None:
    """Per-policy hyper-parameters and PBT's flags (docs/population.md).

    Raises:
        ConfigError: a malformed `--policy_hyperparams`, a PBT flag out of range, or
            `--pbt_optimize_batch_size=True`.
    """
    from surge.population.hyperparams import parse_policy_hyperparams
    from surge.population.roles import learning_policies

    per_policy = parse_policy_hyperparams(cfg.policy_hyperparams, cfg.num_policies)
    learning = learning_policies(cfg)
    if frozen := sorted(p for p in per_policy if p not in learning):
        raise ConfigError(
            "policy_hyperparams",
            f"policies {frozen} are frozen (--frozen_policies / --self_play): they have no learner to use hyper-parameters.",
            "give hyper-parameters to learning policies only.",
        )
    if cfg.pbt_optimize_batch_size:
        raise ConfigError(
            "pbt_optimize_batch_size",
            "PBT cannot change the batch size: it sizes the shared trajectory buffers and the block "
            "pool, allocated once before the processes start (Sample Factory 2 disables it for the same reason).",
            "use --pbt_optimize_batch_size=False.",
        )
    if not cfg.with_pbt:
        return
    if cfg.num_policies < 2:
        raise ConfigError(
            "with_pbt", "PBT needs a population: --num_policies is 1.", "pass --num_policies=2 or more."
        )
    from surge.learning.algorithm import get_algorithm

    if not get_algorithm(cfg.algo).trains or cfg.sampler_only:
        raise ConfigError(
            "with_pbt", f"--algo={cfg.algo} does not train: there is nothing for PBT to select.", ""
        )
    if len(learning) < cfg.num_policies:
        raise ConfigError(
            "with_pbt",
            f"PBT ranks and replaces every policy, but policies {sorted(set(range(cfg.num_policies)) - set(learning))} "
            "are frozen (--frozen_policies): they have no learner to copy into or from.",
            "drop --frozen_policies, or use --with_pbt=False.",
        )
    if not 0.0 < cfg.pbt_replace_fraction <= 0.5:
        raise ConfigError(
            "pbt_replace_fraction",
            f"must be in (0, 0.5], got {cfg.pbt_replace_fraction}: the best and the worst fractions must not overlap.",
            "",
        )
    if not 0.0 <= cfg.pbt_mutation_rate <= 1.0:
        raise ConfigError("pbt_mutation_rate", f"is a probability, got {cfg.pbt_mutation_rate}.", "")
    if not 1.0 <= cfg.pbt_perturb_min <= cfg.pbt_perturb_max:
        raise ConfigError(
            "pbt_perturb_min",
            f"need 1 <= --pbt_perturb_min <= --pbt_perturb_max, got {cfg.pbt_perturb_min} and {cfg.pbt_perturb_max}.",
            "",
        )
    for name in (
        "pbt_period_env_steps",
        "pbt_start_mutation",
        "pbt_replace_reward_gap",
        "pbt_replace_reward_gap_absolute",
    ):
        if getattr(cfg, name) < 0:
            raise ConfigError(name, f"must be >= 0, got {getattr(cfg, name)}.", "")
    if not cfg.pbt_target_objective:
        raise ConfigError(
            "pbt_target_objective", "is empty.", "pass true_reward or a statistic the env reports in info."
        )
