"""The typed configuration of a surge run: one field per command-line flag.

Field names, defaults and meanings follow Sample Factory v1 (`appo.py`, seed 004) where it has the
parameter, so its command lines run unchanged. Env families add their own fields (for example
`env_frameskip`) as their own typed section, `cfg.env_params`, and override defaults through the
registry (`surge.envs.registry`); the flags of `surge enjoy` are the section `cfg.eval_params`; an
algorithm's own flags are its section `cfg.algo_params`, declared in its folder (APPO's PPO and
V-trace flags: `surge.algorithms.appo.config.APPOParams`). The CLI (`surge.cfg.cli`) is generated
from these fields, one flat `--flag` each, and cfg.json is flat.

Here: the optimiser's section and `Config`, which composes every section. The other sections are in
`surge.cfg.core_sections` and `surge.cfg.feature_sections` (imported here, so that
`from surge.cfg.config import EvalParams` keeps working), and `param` with the fields' ranges in
`surge.cfg.fields`.
"""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any, TypeVar

from surge.cfg.core_sections import (
    CheckpointParams,
    ExperimentParams,
    ModelParams,
    SamplingParams,
    StoppingParams,
)
from surge.cfg.feature_sections import (
    CentralValueParams,
    DebugParams,
    DistributedParams,
    EvalParams,
    PbtParams,
    SelfPlayParams,
    TrainEvalParams,
)
from surge.cfg.fields import param
from surge.errors import ConfigError


@dataclass
class OptimParams:
    """The optimiser and the losses. (`--help` section "optimisation")"""

    learning_rate: float = param(1e-4, "Adam learning rate.")
    lr_schedule: str = param(
        "constant",
        "Learning-rate schedule: constant; linear_decay (to 0 at train_for_env_steps); "
        "kl_adaptive_minibatch / kl_adaptive_epoch (APPO only; rl_games' adaptive schedule: "
        "lr / 1.5 when the KL between the behavior and the current policy is above "
        "2 x lr_schedule_kl_threshold, lr x 1.5 when below half of it, within [lr_adaptive_min, "
        "lr_adaptive_max], after every minibatch or every pass over the batch; docs/ppo_options.md).",
        ("constant", "linear_decay", "kl_adaptive_minibatch", "kl_adaptive_epoch"),
    )
    lr_schedule_kl_threshold: float = param(
        0.008, "kl_adaptive_* schedules: the KL target (rl_games' kl_threshold), > 0."
    )
    lr_adaptive_min: float = param(1e-6, "kl_adaptive_* schedules: the lowest learning rate (> 0).")
    lr_adaptive_max: float = param(1e-2, "kl_adaptive_* schedules: the highest learning rate.")
    adam_eps: float = param(1e-6, "Adam epsilon parameter.")
    adam_beta1: float = param(0.9, "Adam momentum decay coefficient.")
    adam_beta2: float = param(0.999, "Adam second momentum decay coefficient.")
    adam_weight_decay: float = param(
        0.0,
        "L2 penalty added to the gradients by Adam (torch.optim.Adam's weight_decay, not AdamW's "
        "decoupled decay; rl_games' weight_decay).",
        low=0,
        why="a negative penalty would push weights away from 0",
    )
    max_grad_norm: float = param(
        4.0,
        "Max L2 norm of the gradient vector (0: no clipping).",
        low=0,
        why="0 turns clipping off; a negative norm would scale every gradient to 0",
    )
    gamma: float = param(0.99, "Discount factor.")
    reward_scale: float = param(1.0, "Rewards are multiplied by this (> 0) before learning.")
    reward_clip: float = param(10.0, "Rewards are clipped to [-reward_clip, reward_clip] after scaling.")
    reward_clip_low: float | None = param(
        None,
        "Lower end of the reward clip, below reward_clip (None: -reward_clip): rewards are clipped to "
        "[reward_clip_low, reward_clip] (rl_games' reward_shaper min_val with another max_val).",
    )
    reward_shift: float = param(
        0.0,
        "Added to every reward before reward_scale (rl_games' reward_shaper shift_value): the learner "
        "trains on clamp((r + reward_shift) x reward_scale, -reward_clip, reward_clip); the reported "
        "episode returns stay the env's.",
    )
    reward_log: bool = param(
        False,
        "The learner trains on the natural log of the shifted, scaled and clipped reward (rl_games' "
        "reward_shaper log_val): log(clamp((r + reward_shift) x reward_scale, ...)); a reward that is "
        "not positive there stops the run naming the fix (rl_games trains on its -inf or NaN). The "
        "reported returns stay the env's.",
    )
    value_bootstrap: bool = param(
        True,
        "A step truncated by a time limit gets gamma x V(s) added to its reward (rl_games' "
        "value_bootstrap); False: truncation is treated as termination. APPO (GAE and V-trace), A2C.",
    )
    gae_lambda: float = param(0.95, "GAE lambda (used only when with_vtrace is False).")
    value_loss_coeff: float = param(0.5, "Coefficient of the critic loss.")
    exploration_loss: str = param("entropy", "Exploration loss.", ("entropy", "symmetric_kl"))
    exploration_loss_coeff: float = param(0.003, "Coefficient of the exploration loss.")
    exploration_loss_schedule: str = param(
        "constant",
        "APPO: the exploration coefficient over the run: constant, or linear_decay from "
        "exploration_loss_coeff to exploration_loss_coeff_min at train_for_env_steps (rl_games' "
        "schedule_entropy with its linear lr_schedule).",
        ("constant", "linear_decay"),
    )
    exploration_loss_coeff_min: float = param(
        1e-4,
        "The exploration coefficient at the end of --exploration_loss_schedule=linear_decay (rl_games' "
        "min_entropy_coef, 1e-4).",
        low=0,
        why="a negative coefficient punishes exploration",
    )
    normalize_advantage: bool = param(
        True, "Normalise advantages to zero mean and unit std (per minibatch, see normalize_advantage_over)."
    )
    normalize_input: bool = param(
        False,
        "Normalise observations with running mean and std (vectors per element, images per pixel, Dict per key).",
    )
    normalize_returns: bool = param(
        False,
        "The critic learns returns normalised by their running mean and std "
        "(rl_games' value normalisation, Sample Factory 2's normalize_returns).",
    )
    obs_subtract_mean: float = param(0.0, "Subtracted from image observations before scaling.")
    obs_scale: float = param(1.0, "Image observations are divided by this (255 for uint8 frames).")


#: the sections of `Config`, in `--help` order: (title, dataclass)
SECTIONS: tuple[tuple[str, type], ...] = (
    ("experiment", ExperimentParams),
    ("stopping", StoppingParams),
    ("checkpoints and summaries", CheckpointParams),
    ("optimisation", OptimParams),
    ("sampling", SamplingParams),
    ("model", ModelParams),
    ("central value", CentralValueParams),
    ("PBT", PbtParams),
    ("self-play and policy roles", SelfPlayParams),
    ("debugging and benchmarking", DebugParams),
    ("evaluation during training", TrainEvalParams),
    ("distributed", DistributedParams),
)


@dataclass
class Config(
    TrainEvalParams,
    DistributedParams,
    DebugParams,
    SelfPlayParams,
    PbtParams,
    CentralValueParams,
    ModelParams,
    SamplingParams,
    OptimParams,
    CheckpointParams,
    StoppingParams,
    ExperimentParams,
):
    """Every core parameter of surge, one field per flag, composed of the section dataclasses of
    `SECTIONS` (so `cfg.learning_rate` is typed; `--help` groups the flags by section). Units are in
    the help text: env_steps are `env.step` calls, env_frames are env_steps × frameskip (Sample
    Factory counts frames)."""

    #: the env family's own flags: an instance of its `extra_params` dataclass (`AtariParams` ...),
    #: None when the family adds none; read it typed with `family_params(cfg, AtariParams)`
    env_params: Any = field(default=None, metadata={"section": True})
    #: the flags of `surge enjoy` (None in training)
    eval_params: EvalParams | None = field(default=None, metadata={"section": True})
    #: the algorithm's own flags: an instance of its `Algorithm.params` dataclass, None when it
    #: declares none; read it typed with `algo_params(cfg, MyAlgoParams)`
    algo_params: Any = field(default=None, metadata={"section": True})

    def to_dict(self) -> dict[str, Any]:
        """Every flag as a flat JSON-serialisable dict, one key per flag as on the command line and
        in Sample Factory's cfg.json: the core fields, then the env family's, then enjoy's (a name in
        two sections, such as the Doom family's `fps` and enjoy's, holds one value: the family's)."""
        out = {f.name: copy.deepcopy(getattr(self, f.name)) for f in core_fields()}
        if self.env_params is not None:
            out.update(dataclasses.asdict(self.env_params))
        if self.algo_params is not None:
            for k, v in dataclasses.asdict(self.algo_params).items():
                out.setdefault(k, v)
        if self.eval_params is not None:
            for k, v in dataclasses.asdict(self.eval_params).items():
                out.setdefault(k, v)
        return out

    @classmethod
    def from_flat(
        cls,
        values: dict[str, Any],
        env_params_cls: type | None = None,
        evaluation: bool = False,
        algo_params_cls: type | None = None,
    ) -> Config:
        """The config of a flat dict of flags (`to_dict`, a cfg.json): core fields from their keys,
        `env_params` an `env_params_cls` (the family's `extra_params`), `eval_params` an
        `EvalParams` (when `evaluation`) and `algo_params` an `algo_params_cls` (the algorithm's
        `Algorithm.params`) from theirs; a key in two sections sets both. Keys that
        are no field of any of them are ignored (use `unknown_keys` to refuse them); a missing key
        takes the field's default."""

        def pick(section: type) -> dict[str, Any]:
            return {f.name: values[f.name] for f in dataclasses.fields(section) if f.name in values}

        return cls(
            **{f.name: values[f.name] for f in core_fields() if f.name in values},
            env_params=env_params_cls(**pick(env_params_cls)) if env_params_cls is not None else None,
            eval_params=EvalParams(**pick(EvalParams)) if evaluation else None,
            algo_params=algo_params_cls(**pick(algo_params_cls)) if algo_params_cls is not None else None,
        )


def core_fields() -> tuple[dataclasses.Field, ...]:
    """The fields of `Config` that are flags (not the `env_params` / `eval_params` / `algo_params`
    sections)."""
    return tuple(f for f in dataclasses.fields(Config) if not f.metadata.get("section"))


T = TypeVar("T")


def family_params(cfg: Config, cls: type[T]) -> T:
    """`cfg.env_params`, typed as the family's params dataclass `cls` (`family_params(cfg,
    AtariParams).env_frameskip`). A config made without the section (`Config(env="atari_pong")`)
    gets one with `cls`'s defaults.

    Raises:
        ConfigError: `cfg.env_params` is not a `cls` (the env belongs to another family).
    """
    if cfg.env_params is None:
        cfg.env_params = cls()
    p = cfg.env_params
    if not isinstance(p, cls):
        raise ConfigError(
            "env",
            f"{cfg.env!r} has no {cls.__name__} parameters (its family's are "
            f"{type(p).__name__ if p is not None else 'none'}).",
            f"use an env of the family that defines {cls.__name__}.",
        )
    return p


def algo_params(cfg: Config, cls: type[T]) -> T:
    """`cfg.algo_params`, typed as the algorithm's params dataclass `cls` (`algo_params(cfg,
    DQNParams).buffer_size`), as `family_params` for env families. A config made without the
    section (`Config(algo="DQN")`) gets one with `cls`'s defaults.

    Raises:
        ConfigError: `cfg.algo_params` is not a `cls` (the config is of another algorithm).
    """
    if cfg.algo_params is None:
        cfg.algo_params = cls()
    p = cfg.algo_params
    if not isinstance(p, cls):
        raise ConfigError(
            "algo",
            f"--algo={cfg.algo} has no {cls.__name__} parameters (its section is {type(p).__name__}).",
            f"use the algorithm that defines {cls.__name__}.",
        )
    return p


#: algorithm name -> its section's dataclass (`Algorithm.params`), filled by
#: `surge.learning.algorithm.register_algorithm`: the schema knows no algorithm, yet a reader of
#: the schema alone (the rl_games translator's flags, `algo_section_fields`) needs APPO's section
_ALGO_SECTIONS: dict[str, type] = {}


def register_algo_section(algo: str, section: type) -> None:
    """Records `section` (a dataclass of `param` fields) as the config section of `--algo=algo`."""
    _ALGO_SECTIONS[algo] = section


def algo_section_fields(algo: str) -> tuple[dataclasses.Field, ...]:
    """The fields of `--algo=algo`'s section (`register_algo_section`), () for an algorithm
    without one or not registered in this process."""
    section = _ALGO_SECTIONS.get(algo)
    return dataclasses.fields(section) if section is not None else ()


_ABSENT = object()


def flag_value(cfg: Config, name: str, default: Any = _ABSENT) -> Any:
    """The value of the flag `name` whichever section of `cfg` holds it: a core field, the
    algorithm's section (`cfg.algo_params`, e.g. APPO's `ppo_clip_value`) or the env family's.
    For readers that serve several algorithms by flag name (per-policy hyper-parameters, PBT);
    an algorithm's own code reads its section typed (`algo_params`). A config made without the
    algorithm's section (`Config(algo="APPO")`) gets one with its defaults, as with `algo_params`.

    Raises:
        AttributeError: no section of `cfg` has `name` and no `default` is given.
    """
    section = _ALGO_SECTIONS.get(cfg.algo)
    if cfg.algo_params is None and section is not None:  # a config built by hand, as `algo_params`
        cfg.algo_params = section()
    holders: tuple[Any, ...] = (cfg, cfg.algo_params, cfg.env_params)
    for holder in holders:
        if holder is not None and name in _field_names(type(holder)):
            return getattr(holder, name)
    if default is _ABSENT:
        raise AttributeError(f"no section of this config (--algo={cfg.algo}) has the flag {name!r}")
    return default


_ABSENT_FLAG = object()


def has_flag(cfg: Config, name: str) -> bool:
    """Whether a section of `cfg` has the flag `name` (`flag_value`)."""
    return flag_value(cfg, name, _ABSENT_FLAG) is not _ABSENT_FLAG


#: dataclass -> its field names (`flag_value` runs once per batch at most, with the central value)
_FIELD_NAMES: dict[type, frozenset[str]] = {}


def _field_names(cls: type) -> frozenset[str]:
    names = _FIELD_NAMES.get(cls)
    if names is None:
        fields = dataclasses.fields(cls) if dataclasses.is_dataclass(cls) else ()
        names = _FIELD_NAMES[cls] = frozenset(f.name for f in fields)
    return names


def enjoy_params(cfg: Config) -> EvalParams:
    """`cfg.eval_params`, the flags of `surge enjoy`.

    Raises:
        ConfigError: `cfg` is a training config (parsed without `evaluation=True`).
    """
    if cfg.eval_params is None:
        raise ConfigError("command line", "this config has no enjoy flags.", "parse it with evaluation=True.")
    return cfg.eval_params


def env_frameskip(cfg: Config) -> int:
    """Frames per env step of this config's env: its family's `env_frameskip` (Atari, EnvPool,
    Doom), 1 for a family without one."""
    return int(getattr(cfg.env_params, "env_frameskip", 1) or 1)


def set_env_frameskip(cfg: Config, frameskip: int) -> None:
    """Sets the family's `env_frameskip` (enjoy plays at `eval_env_frameskip`).

    Raises:
        ConfigError: the env's family has no frameskip.
    """
    if not hasattr(cfg.env_params, "env_frameskip"):
        raise ConfigError("eval_env_frameskip", f"{cfg.env!r} has no frameskip to change.", "leave it unset.")
    cfg.env_params.env_frameskip = frameskip


def minibatches_to_accumulate(cfg: Config) -> int:
    """Minibatches the learner may hold before collection pauses (`num_minibatches_to_accumulate`
    semantics: -1 = 2 x num_batches_per_iteration, 0 = synchronous PPO), whichever of the seed's
    `num_minibatches_to_accumulate` or Sample Factory 2's `num_batches_to_accumulate` (iterations)
    was given; `validate_cfg` refuses the two when they disagree."""
    if cfg.num_batches_to_accumulate is not None:
        return cfg.num_batches_to_accumulate * cfg.num_batches_per_iteration
    return cfg.num_minibatches_to_accumulate
