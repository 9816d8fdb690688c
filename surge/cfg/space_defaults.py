"""Defaults chosen from the env's observation and action spaces, for envs no family claims.

`Config`'s own defaults are Sample Factory's, sized for Doom and Atari (conv encoder, 512 units,
a 512-unit GRU, lr 1e-4, V-trace, rewards clipped to ±10). A plain gymnasium id
(`--env=CartPole-v1`) or `--env=package.module:EnvId` has no family to override them, so surge
makes the env once, reads its spaces and applies the rules of `space_defaults` in place of a
family's `default_overrides`. Precedence, lowest to highest: `Config` < these rules (or a family's
overrides) < the algorithm's overrides < YAML (`--cfg`) < the command line; on resume the saved
cfg.json replaces all defaults, these included. The rules and their sources are in docs/defaults.md.

`space_defaults` holds the policy-gradient algorithms' rules (APPO, A2C). An algorithm that declares
its own (`Algorithm.space_defaults`: DQN, R2D2, SAC, TD3, DDPG) gets those instead, applied over its
`default_overrides` (they are its choice for these spaces), each logged with its own reason;
`surge.app.space_defaults.chosen_space_defaults` picks them and adds the training budget (`surge.cfg.budget`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import gymnasium as gym

from surge.cfg.config import Config


@dataclass(frozen=True)
class SpaceDefault:
    """One chosen default: config field, value, and why (a sentence fragment for the run's log)."""

    field: str
    value: Any
    reason: str


def _boxes(space: gym.Space) -> list[gym.spaces.Box]:
    if isinstance(space, gym.spaces.Box):
        return [space]
    if isinstance(space, gym.spaces.Dict):
        return [b for s in space.spaces.values() for b in _boxes(s)]
    return []


def is_vector_observation(space: gym.Space) -> bool:
    """True for a Box of at most 2 dimensions (a vector, or a small grid the MLP flattens), or a
    Dict of them; False for images (any 3-D Box) and for spaces the encoders do not take."""
    boxes = _boxes(space)
    return bool(boxes) and all(len(b.shape) <= 2 for b in boxes)


def is_continuous_action(space: gym.Space) -> bool:
    """True for a Box action space (a Gaussian head); Discrete, MultiDiscrete and Tuples are not."""
    return isinstance(space, gym.spaces.Box)


#: reasons shared by several rules
_VECTOR = "vector observation"
_SMALL = "vector observation, SB3's and CleanRL's classic-control PPO"


def space_defaults(
    observation_space: gym.Space, action_space: gym.Space, use_rnn: bool = False, rollout: int = 32
) -> list[SpaceDefault]:
    """The defaults for an env with these spaces (one agent's), in the order they are logged.

    Image observations (any 3-D Box) keep `Config`'s conv defaults: the list is empty. Vector
    observations get a small MLP policy trained by PPO with GAE, input and return normalisation;
    Box actions add the Gaussian head settings of SB3's and CleanRL's continuous-control PPO.

    Args:
        observation_space, action_space: the env's spaces, as `gym.make` reports them (after
            `--env_wrappers`).
        use_rnn: the value given in YAML or on the command line (False when not given): with an
            RNN the BPTT chunk is the whole rollout instead of one step.
        rollout: the rollout length in env steps that will be used (`recurrence` follows it
            when `use_rnn`).
    Returns:
        [SpaceDefault], at most one per field.
    """
    if not is_vector_observation(observation_space):
        return []
    continuous = is_continuous_action(action_space)
    out = [
        SpaceDefault("encoder_type", "mlp", f"{_VECTOR}: MLP encoder, the conv encoders are for images"),
        SpaceDefault("encoder_subtype", "mlp", f"{_VECTOR}: MLP encoder"),
        SpaceDefault("encoder_mlp_layers", [64, 64], f"{_SMALL}: two hidden layers of 64"),
        SpaceDefault("nonlinearity", "tanh", f"{_SMALL}: tanh activations"),
        SpaceDefault(
            "use_rnn",
            False,
            f"{_VECTOR}: feed-forward policy; pass --use_rnn=True for a task that needs memory",
        ),
        SpaceDefault(
            "hidden_size", 64, f"{_VECTOR}: a 64-unit core when --use_rnn=True; 512 is sized for Doom"
        ),
        SpaceDefault(
            "recurrence",
            rollout if use_rnn else 1,
            f"{_VECTOR} with an RNN: back-propagation through the whole rollout"
            if use_rnn
            else f"{_VECTOR} without an RNN: minibatches of single steps, shuffled",
        ),
        SpaceDefault("with_vtrace", False, f"{_SMALL}: PPO with GAE"),
        SpaceDefault("learning_rate", 3e-4, f"{_SMALL}: Adam lr 3e-4; 1e-4 is for conv nets"),
        SpaceDefault("max_grad_norm", 0.5, f"{_SMALL}: gradients clipped at norm 0.5"),
        SpaceDefault("num_envs_per_worker", 8, f"{_SMALL}: 8 envs per worker"),
        SpaceDefault(
            "batch_size",
            rollout * max(1, 128 // rollout) if use_rnn else 128,
            f"{_SMALL}: minibatches of about 128 steps"
            + (", a whole number of rollouts (the BPTT chunks)" if use_rnn else ""),
        ),
        SpaceDefault("num_batches_per_iteration", 4, f"{_SMALL}: 4 minibatches per iteration"),
        SpaceDefault(
            "normalize_input", True, f"{_VECTOR}: observations standardised by their running mean and std"
        ),
        SpaceDefault(
            "normalize_returns",
            True,
            f"{_VECTOR}: the critic learns normalised returns, so no reward_scale is needed for any reward size",
        ),
        SpaceDefault(
            "reward_clip",
            1000.0,
            f"{_VECTOR}: rewards are not clipped at ±10, an Atari/Doom convention that would cut LunarLander's ±100",
        ),
    ]
    if continuous:
        out += [
            SpaceDefault(
                "ppo_epochs", 10, "Box actions: 10 epochs per batch, as SB3's and CleanRL's continuous PPO"
            ),
            SpaceDefault(
                "ppo_clip_ratio", 0.2, "Box actions: PPO clip 0.2, as SB3's and CleanRL's continuous PPO"
            ),
            SpaceDefault(
                "adaptive_stddev",
                False,
                "Box actions: state-independent log-std parameters, as SB3's and CleanRL's continuous PPO",
            ),
            SpaceDefault("initial_stddev", 1.0, "Box actions: initial std 1, SB3's log_std_init=0"),
            SpaceDefault(
                "exploration_loss_coeff",
                0.0,
                "Box actions: no entropy bonus, as SB3's and CleanRL's continuous PPO",
            ),
        ]
    else:
        out += [
            SpaceDefault(
                "ppo_epochs", 4, "discrete actions: 4 epochs per batch, as CleanRL's classic-control PPO"
            ),
            SpaceDefault(
                "exploration_loss_coeff", 0.01, "discrete actions: entropy bonus 0.01, as CleanRL's PPO"
            ),
        ]
    return out


def as_overrides(rules: list[SpaceDefault]) -> dict[str, Any]:
    """`{field: value}` of `rules`, the form of `EnvFamily.default_overrides`."""
    return {r.field: r.value for r in rules}


def describe(rules: list[SpaceDefault], cfg: Config, given: frozenset[str] = frozenset()) -> list[str]:
    """One log line per rule whose value `cfg` still holds (YAML and flags win over the rules), in
    its core fields or its algorithm's section, and whose field is not in `given` (the names YAML
    and the command line set: a value given is the user's, even when it equals the rule's)."""
    lines = []
    sections = [cfg, getattr(cfg, "algo_params", None)]  # an algorithm's own flags are in its section
    for r in rules:
        held = [getattr(s, r.field) for s in sections if s is not None and hasattr(s, r.field)]
        if held and held[0] == r.value and r.field not in given:
            lines.append(f"--{r.field}={_fmt(r.value)} chosen by the env's spaces ({r.reason}).")
    return lines


def _fmt(value: Any) -> str:
    return " ".join(str(v) for v in value) if isinstance(value, list) else str(value)
