"""The memory a run allocates, estimated before anything is (`estimate_memory`), against this
machine's RAM (`check_memory`). It reads the sizes of every subsystem (the trajectory buffers'
pool, the model), so it sits in the runtime, which allocates them: the preflight checks the
configured sizes, the run's components the env's real ones (`surge.runtime.env_checks`)."""

from __future__ import annotations

import os

from surge.cfg.config import Config, minibatches_to_accumulate
from surge.errors import ConfigError
from surge.learning.algorithm import get_algorithm

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


def rnn_state_floats(cfg: Config) -> int:
    """Floats of one agent's recurrent state (0 without an RNN; the actor's and the critic's with
    `--actor_critic_share_weights=False`)."""
    if not cfg.use_rnn:
        return 0
    streams = 1 if getattr(cfg, "actor_critic_share_weights", True) else 2
    return streams * cfg.hidden_size * cfg.rnn_num_layers * (2 if cfg.rnn_type == "lstm" else 1)


def estimate_memory(
    cfg: Config, obs_bytes: int = 1, obs_floats: int | None = None, num_agents: int = 1
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
    per_worker = cfg.num_workers * cfg.num_envs_per_worker * num_agents
    per_iteration = get_algorithm(cfg.algo).feed.iteration_trajectories(cfg)
    # the pool the run allocates: its blocks grow with the accumulation limit (Sample Factory 2's
    # num_batches_to_accumulate=1e6 asked for a million iterations' worth of trajectories)
    owners = cfg.num_workers * cfg.worker_num_splits
    pool = (
        owners
        * get_algorithm(cfg.algo).feed.blocks_per_split(cfg, num_agents)
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
