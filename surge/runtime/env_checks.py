"""What a run refuses once its env's spaces are known, before anything is allocated: the spaces
the encoders and policy heads cannot take (`surge.envs.check_spaces`), the action options the
action space cannot carry (`surge.learning.pg_checks`), and buffers, model and replay larger than
this machine's memory (`surge.runtime.memory_estimate`). The run's components
(`surge.runtime.components.env_info`), the config resolution (`surge.app.resolve`) and
`surge check-env` (`surge.app.check_env`) run it; it sits in the runtime, the lowest layer that
sees all three.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np

from surge.cfg.config import Config
from surge.envs.check_spaces import check_space_support
from surge.learning.pg_checks import check_action_options
from surge.runtime.memory_estimate import check_memory, estimate_memory


def check_env_spaces(
    cfg: Config,
    observation_space: gym.Space,
    action_space: gym.Space,
    num_agents: int = 1,
    memory: bool = True,
    replay_bytes: int = 0,
) -> None:
    """Refuses, before anything is allocated, an env whose spaces this config cannot train on:
    observation spaces the encoders do not take (a Dict entry that is not a Box is named), action
    spaces the policy heads do not output (Dict), images in height-width-channel order or too small
    for the conv encoder of `cfg.encoder_subtype` (`surge.envs.check_spaces.check_space_support`),
    `--bounds_loss_coef` or `--rescale_actions` without a Box action space, and buffers and model
    larger than this machine's memory (`estimate_memory` with the real observation size).

    Args:
        cfg: the run's config (encoder_type, encoder_subtype, encoder_custom, sizes).
        observation_space, action_space: one agent's spaces, as the env reports them.
        num_agents: agents per env object.
        memory: also check the memory estimate (False: the spaces only, as `parse_cfg` does for
            an env whose spaces it read, before the number of agents is known).
        replay_bytes: what the algorithm's replay buffers hold (`Algorithm.replay_bytes`, bytes),
            added to the estimate.

    Raises:
        EnvError: a space this config cannot handle; the message names the observation key and
            says what to pass (a flag or a wrapper) to fix it.
        ConfigError: an action option the action space cannot carry, or the run would need more
            memory than this machine has (see `check_memory`); the message names the flag.
    """
    boxes = check_space_support(cfg, observation_space, action_space)
    check_action_options(cfg, action_space)
    if not memory:
        return
    custom = bool(getattr(cfg, "encoder_custom", ""))
    obs_bytes = sum(int(np.prod(b.shape)) * np.dtype(b.dtype).itemsize for _, b in boxes) or 1
    vector = boxes and all(len(b.shape) <= 1 for _, b in boxes) and len(boxes) == 1
    obs_floats = int(np.prod(boxes[0][1].shape)) if vector else None
    if cfg.encoder_type == "mlp" and len(boxes) == 1 and not custom:
        obs_floats = int(np.prod(boxes[0][1].shape))
    parts = estimate_memory(cfg, obs_bytes=obs_bytes, obs_floats=obs_floats, num_agents=num_agents)
    if replay_bytes:
        parts.append(("algo", replay_bytes, f"the replay buffer(s) of --algo={cfg.algo}"))
    check_memory(parts)
