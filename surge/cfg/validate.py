"""Checks of the config alone (the schema level): the ranges of single fields, how the core fields
fit together, the experiment folder's name. They read nothing but the config; the preflight
(`surge.app.preflight.validate_cfg`) runs them with each subsystem's own checks, once, before any
process or env starts. The flags that are accepted without effect (`NO_EFFECT`, `ASYNC_ONLY`,
`PBT_ONLY`) are listed here for the run's notes (`surge.app.notes.config_notes`)."""

from __future__ import annotations

import logging
import math
import os

from surge.cfg.config import Config, core_fields, env_frameskip
from surge.cfg.fields import check_ranges
from surge.errors import ConfigError

log = logging.getLogger("surge")

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
    "deterministic": "the serial placement is exact already: it resumes bit for bit",
    "cuda_graphs": "inference acts with the learner's own model, which training moves",
}


def check_core_fields(cfg: Config) -> None:
    """The core sections' sizes and how they fit together: positive sizes, the inference placement
    (`--policy_workers_per_policy`), envs split evenly, the accumulation limit, the evaluation
    frameskip, rollout a multiple of recurrence, the discount, positive rates, at most 127
    policies. Reads the config only.

    Raises:
        ConfigError: naming the first field out of range and how to fix it.
    """
    check_ranges(cfg, core_fields(), count=True)  # the sizes and counts (`param(..., low=1)`)
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
    if cfg.reward_clip_low is not None and not cfg.reward_clip_low < cfg.reward_clip:
        raise ConfigError(
            "reward_clip_low",
            f"{cfg.reward_clip_low} is not below --reward_clip={cfg.reward_clip}: no reward would pass.",
            "give a lower end below reward_clip, or leave it unset for [-reward_clip, reward_clip].",
        )
    if cfg.num_policies > 127:
        raise ConfigError(
            "num_policies", f"at most 127 policies (int8 policy ids), got {cfg.num_policies}.", ""
        )


def check_budgets(cfg: Config) -> None:
    """`--train_for_env_steps` and `--train_for_seconds` are not negative (ConfigError otherwise)."""
    if cfg.train_for_env_steps < 0 or cfg.train_for_seconds < 0:
        raise ConfigError("train_for_env_steps", "budgets must be >= 0.", "")


def _check_policy_workers(cfg: Config) -> None:
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


def _check_accumulation(cfg: Config) -> None:
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


def check_numbers(cfg: Config) -> None:
    """Non-finite floats anywhere, and the ranges of single fields.

    Raises:
        ConfigError: naming the first field out of range and how to fix it.
    """
    for name, value in cfg.to_dict().items():  # the family's and enjoy's flags too
        for x in value if isinstance(value, list) else [value]:
            if isinstance(x, float) and not math.isfinite(x):
                raise ConfigError(
                    name,
                    f"must be a finite number, got {x!r} (a value beyond ±1.8e308 reads as inf).",
                    f"pass a finite --{name}.",
                )
    check_ranges(cfg, core_fields(), count=False)  # the declared ranges (`param(..., low=, high=)`)
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


def check_encoder(cfg: Config) -> None:
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
