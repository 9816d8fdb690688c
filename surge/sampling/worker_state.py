"""A rollout worker's state for exact resume (the serial placement saves it at a stop,
`surge.runtime.serial_sampler`): per split its slots, step t, the policy of each agent and the envs'
whole state (`surge.sampling.env_state`), the policy mapping's random stream, and the env rebuild
count and fault streaks."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import torch

from surge.sampling.env_state import EnvStateRefused, check_env_state, restore_env_state, save_env_state

if TYPE_CHECKING:  # the worker calls these: a type only, no import circle
    from surge.sampling.rollout_worker import RolloutWorker


def worker_state_dict(worker: RolloutWorker) -> dict[str, Any]:
    """Everything of this worker that a resumed run needs to continue exactly where it stopped
    (the serial placement saves it at a stop): per split its slots, step t, the policy of each
    agent and the envs' whole state (`surge.sampling.env_state`), the policy mapping's random
    stream, and the env rebuild count and fault streaks (rebuilt envs' seeds). Tensors and plain
    values only: it loads with `weights_only=True` and loading it runs no code.
    Call it between steps (no env step half done). The trajectory buffers are not in it.

    Raises:
        EnvStateUnsupported: an env's state cannot be saved (the message says which and why).
    """
    splits = []
    for split in worker.splits:
        envs = [save_env_state(env) for env in split.envs]
        splits.append(
            {
                "slots": split.slots.clone(),
                "t": split.t,
                "agent_policy": split.agent_policy.clone(),
                "agent_episode": torch.from_numpy(split.agent_episode.copy()),
                "bad_obs": None if split.bad_obs is None else torch.from_numpy(split.bad_obs.copy()),
                "random_start": torch.from_numpy(split.random_start.copy()),
                "envs": envs,
            }
        )
    mapper = None
    if worker.mapper is not None:
        version, internal, gauss = worker.mapper.rng.getstate()
        mapper = {"rng": [version, list(internal), gauss], "env_draw": dict(worker.mapper._env_draw)}
    streaks = [[s, e, n] for (s, e), n in worker.fault_streaks.items()]
    return {"splits": splits, "mapper": mapper, "rebuilds": worker.rebuilds, "fault_streaks": streaks}


def check_worker_state(worker: RolloutWorker, state: dict[str, Any]) -> None:
    """Checks that `load_state_dict(state)` would restore this worker's envs, changing nothing.

    Raises:
        ValueError: the state is of a worker with other splits or envs per split.
        EnvStateRefused (a ValueError): an env's saved state is not loaded (an older pickled
            format, or a state that does not fit this run's env); the message says which.
    """
    saved = state["splits"]
    if len(saved) != len(worker.splits) or any(
        len(s["envs"]) != len(split.envs) for s, split in zip(saved, worker.splits, strict=True)
    ):
        raise ValueError(
            f"sampler state of worker {worker.worker_idx} has {[len(s['envs']) for s in saved]} envs per "
            f"split, this run {[len(split.envs) for split in worker.splits]}"
        )
    for s_idx, (s, split) in enumerate(zip(saved, worker.splits, strict=True)):
        for e_idx, (env_state, env) in enumerate(zip(s["envs"], split.envs, strict=True)):
            try:
                check_env_state(env, env_state)
            except EnvStateRefused as e:
                raise EnvStateRefused(f"worker {worker.worker_idx} split {s_idx} env {e_idx}: {e}") from e


def load_worker_state(worker: RolloutWorker, state: dict[str, Any]) -> None:
    """Restores what `state_dict` saved, instead of `reset()`: the envs made for this worker are
    put in the saved envs' state (`surge.sampling.env_state.restore_env_state`).

    Raises:
        ValueError, EnvStateRefused: as `check_state_dict` (checked before anything changes).
    """
    check_worker_state(worker, state)
    for s, split in zip(state["splits"], worker.splits, strict=True):
        for env, env_state in zip(split.envs, s["envs"], strict=True):
            restore_env_state(env, env_state)
        split.set_slots(s["slots"].clone())
        worker._claim_slots(split)
        split.t = int(s["t"])
        split.agent_policy = s["agent_policy"].clone()
        split.agent_episode = s["agent_episode"].numpy().copy()
        split.policies = sorted(set(split.agent_policy.tolist()))
        split.bad_obs = None if s["bad_obs"] is None else s["bad_obs"].numpy().copy()
        split.random_start = s["random_start"].numpy().copy()
    worker.rebuilds = int(state["rebuilds"])  # rebuilt envs' seeds count on from it
    worker.fault_streaks = {(int(s), int(e)): int(n) for s, e, n in state["fault_streaks"]}
    if worker.mapper is not None and state["mapper"] is not None:
        version, internal, gauss = state["mapper"]["rng"]
        worker.mapper.rng.setstate((version, tuple(internal), gauss))
        worker.mapper._env_draw = {int(k): tuple(v) for k, v in state["mapper"]["env_draw"].items()}
