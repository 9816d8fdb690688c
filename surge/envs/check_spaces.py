"""The spaces half of `surge check-env`: observation and action spaces that surge's encoders and
policy heads take, and `check_space_support`, which `surge train` also runs before allocating
anything (`surge.runtime.env_checks`: images in the wrong order or too small for the conv encoder).
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np

from surge.cfg.config import Config
from surge.envs.action_masks import check_mask_space
from surge.envs.check_findings import Findings
from surge.envs.wrappers import is_channels_last, is_flattenable, unflattenable_entries
from surge.errors import EnvError

SUPPORTED_OBS = "a Box (vector or image), or a Dict of Box"
SUPPORTED_ACTIONS = "Discrete, MultiDiscrete, Box, or a Tuple of Discrete and Box"


def check_declared_spaces(env: Any, cfg: Config | None, found: Findings) -> None:
    """Checks the spaces an env declares (`observation_space`, `action_space`, one agent's) before
    it is stepped; adds to `found` what trains but looks unintended (a channels-last image, a uint8
    image with `--obs_scale=1`).

    Raises:
        EnvError: a space missing, not a gymnasium space, or one surge's encoders or policy heads
            do not take (unless `cfg.encoder_custom` names an encoder for it).
    """
    for attr in ("observation_space", "action_space"):
        space = getattr(env, attr, None)
        if space is None:
            raise EnvError(
                f"the env has no {attr}. Fix: set self.{attr} (a gymnasium.spaces object, for one agent) "
                "in the env's __init__."
            )
        if not isinstance(space, gym.spaces.Space):
            old_gym = type(space).__module__.startswith("gym.")
            raise EnvError(
                f"{attr} is a {type(space).__module__}.{type(space).__name__}, not a gymnasium space. Fix: "
                + (
                    "the env uses the old `gym` package; import gymnasium as gym instead."
                    if old_gym
                    else f"use gymnasium.spaces ({SUPPORTED_OBS} for observations)."
                )
            )
    obs_space, act_space = env.observation_space, env.action_space
    if not _supported_obs_space(obs_space):
        custom = getattr(cfg, "encoder_custom", "")
        if custom:
            found.append(
                f"observation_space {obs_space} is not {SUPPORTED_OBS}; your custom encoder "
                f"{custom!r} must handle it."
            )
        else:
            _refuse_unsupported_obs(obs_space, cfg)
    _check_action_space(act_space)
    for path, box in _boxes(obs_space):
        shape = tuple(box.shape)
        if len(shape) == 3 and shape[-1] in (1, 3, 4) and shape[0] not in (1, 3, 4):
            found.append(
                f"observation{path} has shape {shape}, which looks channels-last (H, W, C); surge's conv "
                f"encoders expect channels first (C, H, W). Pass "
                f"`{_with_wrappers(cfg, 'surge.envs.wrappers:ChannelsFirst')}`, or transpose in the env "
                "(obs.transpose(2, 0, 1))."
            )
        if (
            len(shape) == 3
            and box.dtype == np.uint8
            and cfg is not None
            and float(getattr(cfg, "obs_scale", 255.0)) == 1.0
        ):
            found.append(
                f"observation{path} is a uint8 image but obs_scale is 1: the network sees values up to "
                "255. Pass --obs_scale=255."
            )


def _supported_obs_space(space: gym.Space) -> bool:
    if isinstance(space, gym.spaces.Box):
        return True
    if isinstance(space, gym.spaces.Dict):
        return len(space.spaces) > 0 and all(_supported_obs_space(s) for s in space.spaces.values())
    return False


def _boxes(space: gym.Space, path: str = "") -> list[tuple[str, gym.spaces.Box]]:
    if isinstance(space, gym.spaces.Box):
        return [(path, space)]
    if isinstance(space, gym.spaces.Dict):
        return [b for k, s in space.spaces.items() for b in _boxes(s, f"{path}[{k!r}]")]
    return []


def _check_action_space(space: gym.Space) -> None:
    discretes = []
    if isinstance(space, (gym.spaces.Discrete, gym.spaces.MultiDiscrete)):
        discretes = [space]
    elif (
        isinstance(space, gym.spaces.Tuple)
        and space.spaces
        and all(isinstance(s, (gym.spaces.Discrete, gym.spaces.Box)) for s in space.spaces)
    ):  # Discrete heads, or Discrete and Box heads mixed (Doom's continuous turning)
        discretes = [s for s in space.spaces if isinstance(s, gym.spaces.Discrete)]
    elif not isinstance(space, gym.spaces.Box):
        raise EnvError(
            f"action_space {space} is not supported: surge's policies output {SUPPORTED_ACTIONS}. "
            "Fix: convert the actions in a gymnasium.ActionWrapper"
            + (
                " (a Dict of Discrete becomes a Tuple of Discrete, a Dict of Box one flat Box)."
                if isinstance(space, gym.spaces.Dict)
                else "."
            )
        )
    for d in discretes:
        if np.any(np.asarray(d.start) != 0):
            raise EnvError(
                f"action_space {space} has start={d.start}: surge samples actions from 0 to n-1. Fix: use "
                "start=0 and add the offset inside the env's step()."
            )


def _conv_min_size(layers: list[tuple[int, int, int]]) -> int:
    """The smallest height (and width) a stack of (channels, kernel, stride) convolutions accepts."""
    size = 1
    for _, k, s in reversed(layers):
        size = (size - 1) * s + k
    return size


def _conv_out(size: int, layers: list[tuple[int, int, int]]) -> int:
    for _, k, s in layers:
        size = (size - k) // s + 1
    return size


def _too_small(shape: tuple[int, ...], subtype: str) -> bool:
    """True when a (C, H, W) image leaves nothing after the conv layers of `subtype` (an unknown
    subtype counts as convnet_simple, the encoder's fallback)."""
    # torch (models) only when an image space is checked
    from surge.models.encoders import CONV_LAYERS

    layers = CONV_LAYERS.get(subtype, CONV_LAYERS["convnet_simple"])
    return min(_conv_out(shape[1], layers), _conv_out(shape[2], layers)) < 1


def check_space_support(
    cfg: Config, observation_space: gym.Space, action_space: gym.Space
) -> list[tuple[str, gym.spaces.Box]]:
    """Refuses an env whose spaces the encoders and policy heads of this config cannot take:
    observation spaces the encoders do not take (a Dict entry that is not a Box is named), action
    spaces the policy heads do not output (Dict), action masks that do not fit the action space,
    images in height-width-channel order or too small for the conv encoder of
    `cfg.encoder_subtype`. What the run refuses besides (action options, memory) is checked by
    `surge.runtime.env_checks.check_env_spaces`, which calls this first.

    Args:
        cfg: the run's config (encoder_type, encoder_subtype, encoder_custom, env_wrappers).
        observation_space, action_space: one agent's spaces, as the env reports them.

    Returns:
        The observation's Box entries, `(path, box)` each (path `""` for a plain Box).

    Raises:
        EnvError: a space this config cannot handle; the message names the observation key and
            says what to pass (a flag or a wrapper) to fix it.
    """
    # torch (models) only when spaces are checked, as in `_too_small`
    from surge.models.encoders import CONV_LAYERS

    custom = bool(getattr(cfg, "encoder_custom", ""))
    if not custom:
        _refuse_unsupported_obs(observation_space, cfg)
    _check_action_space(action_space)
    check_mask_space(observation_space, action_space)
    boxes = _boxes(observation_space)
    images = cfg.encoder_type != "mlp" and not custom
    for path, box in boxes:
        shape = tuple(box.shape)
        if not images or len(shape) != 3:
            continue
        where = f"observation{path}"
        if is_channels_last(shape):
            transposed = (shape[2], shape[0], shape[1])
            # the image the conv encoder will get after ChannelsFirst: too small for it, resnet
            small = cfg.encoder_type == "conv" and _too_small(transposed, cfg.encoder_subtype)
            raise EnvError(
                f"{where} has shape {shape}, height-width-channel order; surge's conv encoders take "
                f"channels first (C, H, W). Fix: `{_with_wrappers(cfg, 'surge.envs.wrappers:ChannelsFirst')}"
                + (" --encoder_type=resnet`" if small else "`")
                + (
                    f" (ChannelsFirst transposes it; a {shape[0]}x{shape[1]} image is too small for "
                    f"--encoder_subtype={cfg.encoder_subtype}, resnet takes any size)"
                    if small
                    else " (ChannelsFirst transposes it)"
                )
                + ", or `--encoder_type=mlp` to flatten the image into an MLP (fine for small images)."
            )
        if cfg.encoder_type == "conv":
            subtype = cfg.encoder_subtype if cfg.encoder_subtype in CONV_LAYERS else "convnet_simple"
            layers = CONV_LAYERS[subtype]
            if _too_small(shape, subtype):
                need = _conv_min_size(layers)
                fits = [s for s, ls in CONV_LAYERS.items() if min(shape[1:]) >= _conv_min_size(ls)]
                raise EnvError(
                    f"{where} is a {shape[1]}x{shape[2]} image (shape {shape}), smaller than the "
                    f"{need}x{need} that --encoder_subtype={subtype} needs. Fix: `--encoder_type=resnet` "
                    "(any size)"
                    + (f", `--encoder_subtype={fits[0]}`" if fits else "")
                    + ", `--encoder_type=mlp` (flattens the image), or a larger image (e.g. gymnasium's "
                    "ResizeObservation in a wrapper of yours)."
                )
    return boxes


def _with_wrappers(cfg: Config | None, *added: str) -> str:
    """The `--env_wrappers` flag that keeps the run's own wrappers (innermost first) and adds `added`."""
    given = [str(w) for w in (getattr(cfg, "env_wrappers", None) or [])]
    return "--env_wrappers " + " ".join([*given, *added])


def _space_name(space: gym.Space) -> str:
    cls = type(space)
    if cls.__module__.startswith("gymnasium."):
        return cls.__name__
    return f"{cls.__name__} (a {cls.__module__} space)"


_CUSTOM_ENCODER = "register a custom encoder (surge.models.register_encoder, --encoder_custom)"


def _refuse_unsupported_obs(space: gym.Space, cfg: Config | None = None) -> None:
    """EnvError for an observation space that is neither a Box nor a Dict of them, naming the parts
    that are not, and a fix that works when followed: the `--env_wrappers` command (the run's own
    wrappers kept) in backticks, when gymnasium can flatten the space; a custom encoder otherwise.
    """
    if _supported_obs_space(space):
        return
    if isinstance(space, gym.spaces.Dict) and space.spaces:
        unflat = unflattenable_entries(space)
        if unflat:
            named = ", ".join(f"observation_space{path} is {_space_name(s)}" for path, s in unflat)
            keys = ", ".join(path for path, _ in unflat)
            left = len(unflat) < _num_leaves(space)
            raise EnvError(
                f"{named}, which cannot be flattened into numbers (gymnasium's FlattenObservation "
                "fails on it), and surge's encoders take Box entries only. Fix: "
                + (
                    f"`{_with_wrappers(cfg, 'surge.envs.wrappers:DropUnflattenable', 'FlattenObservation')}` "
                    f"(drops {keys}, then the other entries become one vector, Discrete ones one-hot), "
                    f"or {_CUSTOM_ENCODER} that reads {keys}."
                    if left
                    else f"{_CUSTOM_ENCODER}."
                )
            )
        bad = [(path, s) for path, s in _leaves(space) if not isinstance(s, gym.spaces.Box)]
        named = ", ".join(f"observation_space{path} is {s}" for path, s in bad)
        raise EnvError(
            f"{named}: surge's encoders take Box entries. Fix: "
            f"`{_with_wrappers(cfg, 'FlattenObservation')}` (the whole Dict becomes one vector, "
            "Discrete entries one-hot), or a wrapper of yours that turns "
            f"{', '.join(path for path, _ in bad)} into a Box (e.g. one-hot)."
        )
    if not isinstance(space, gym.spaces.Dict) and is_flattenable(space):
        raise EnvError(
            f"observation_space {space} is not supported: surge's encoders take {SUPPORTED_OBS}. Fix: "
            f"`{_with_wrappers(cfg, 'FlattenObservation')}` (it becomes one vector, Discrete one-hot), "
            f"or {_CUSTOM_ENCODER}."
        )
    raise EnvError(
        f"observation_space {space} is not supported: surge's encoders take {SUPPORTED_OBS}, and "
        f"{_space_name(space)} cannot be flattened into numbers (gymnasium's FlattenObservation fails on "
        f"it). Fix: {_CUSTOM_ENCODER}, or a wrapper of yours that turns the observations into a Box."
    )


def _leaves(space: gym.Space, path: str = "") -> list[tuple[str, gym.Space]]:
    """`(path, space)` of each entry of a Dict that is not itself a Dict, at any depth."""
    if isinstance(space, gym.spaces.Dict):
        return [leaf for k, s in space.spaces.items() for leaf in _leaves(s, f"{path}[{k!r}]")]
    return [(path, space)]


def _num_leaves(space: gym.Space) -> int:
    return len(_leaves(space))
