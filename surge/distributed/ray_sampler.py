"""A sampler node of `--distributed=ray` (docs/scaling.md): one Ray actor per machine runs that
machine's rollout and inference workers exactly as the async placement does (`AsyncPlacement`
without a learner: the same processes over the node's shared memory, the same supervision), and
ships the finished trajectory blocks its learner queue receives to the learner's host in
shipments, each one Ray object. The head (`surge.distributed.ray_placement`) calls `pull` again
as soon as the previous shipment arrived, so one call is in flight per node; the call carries the
newest weights' policy_version and a reference to them, which the node fetches only when they are
newer than its own (weights broadcast by version).

A shipped block is copied out of the node's buffers and its slots released at once, so the node
never waits for the learner while a shipment is on its way; a head short of free slots stops
calling `pull`, and the node's pool then fills and its workers wait (back-pressure).
"""

from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, field
from queue import Empty
from typing import Any

import torch

from surge.data.trajectory import tree_map
from surge.learning.run_flags import rebuild_cfg
from surge.runtime.async_placement import AsyncPlacement
from surge.runtime.child_start import import_in_children, import_startup_modules
from surge.runtime.messages import BlockReady

log = logging.getLogger("surge")

#: a node ships at the latest this long after `pull` was called, even with fewer blocks ready
SHIP_WAIT_SEC = 0.5
#: trajectory blocks per (worker, split) on a node: one being filled, one waiting for the next pull
NODE_BLOCKS_PER_SPLIT = 2


@dataclass
class Shipment:
    """What one `SamplerNode.pull` returns (one object in Ray's object store).

    Attributes:
        node: the node's index.
        owners: `[K]` each block's owner on the node (`worker * worker_num_splits + split`).
        block_slots: `[K]` how many trajectories (slots) each block holds, in `data`'s order.
        data: every trajectory field (`TrajectoryBuffers.FIELDS`) of the shipped slots, numpy
            `[sum(block_slots), T(+1), ...]`, plus "actor_ids" `[sum(block_slots)]` int64 (global
            over the nodes: node `i`'s actors are numbered after the first `i` nodes').
        env_steps: env steps (calls of env.step) the node took since its previous shipment.
        episodes: finished episodes `(return, length, policy_id, extra)`.
        worker_restarts: rollout or inference processes the node replaced since then.
        nonfinite_rewards, nonfinite_obs, env_faults, last_env_fault: as `StepReport`'s.
        policy_version: the weights the node acted with when it shipped.
        nbytes: size of `data` in bytes.
        started: whether this call started the node's processes (its first call, or the first
            after Ray restarted the actor).
    """

    node: int
    owners: list[int] = field(default_factory=list)
    block_slots: list[int] = field(default_factory=list)
    data: dict[str, Any] = field(default_factory=dict)
    env_steps: int = 0
    episodes: list[tuple] = field(default_factory=list)
    worker_restarts: int = 0
    nonfinite_rewards: int = 0
    nonfinite_obs: int = 0
    env_faults: int = 0
    last_env_fault: str = ""
    policy_version: int = -1
    nbytes: int = 0
    started: bool = False


def node_cfg_values(cfg_values: dict[str, Any], node: int) -> dict[str, Any]:
    """The flat config of sampler node `node`: the run's, with its own seed (`--seed` + 1009 x
    (node + 1), so no two nodes' envs share seeds) and no folder writes (its processes log to the
    Ray worker's log, which Ray forwards to the driver's console)."""
    out = dict(cfg_values)
    if out.get("seed") is not None:
        out["seed"] = int(out["seed"]) + 1009 * (node + 1)
    out["no_writes"] = True
    out["distributed"] = "none"
    return out


class SamplerNode:
    """The Ray actor of one sampler node (see the module docstring); made with `ray.remote` by the
    head, so this module imports no Ray. Its processes start at the first `pull`, with the weights
    that call brings: also after Ray restarted the actor, whose `__init__` then runs again."""

    def __init__(
        self,
        cfg_values: dict[str, Any],
        node: int,
        actors_per_node: int,
        startup_modules: tuple[str, ...] = (),
    ):
        # the head's plug-ins (`child_start.STARTUP_MODULES`), registered here before the config
        # is rebuilt, and passed on to the node's own children
        for module in startup_modules:
            import_in_children(module)
        import_startup_modules(startup_modules)
        self.cfg_values, self.node = cfg_values, node
        self.actor_offset = node * actors_per_node
        self.actors_per_node = actors_per_node
        self.placement: Any = None
        self.version = -1  # policy_version of the weights published to the node's inference
        self.pending: list[BlockReady] = []  # received from the node's queue, not yet shipped

    def pid(self) -> int:
        """The actor's process id (tests kill it to simulate a lost node)."""
        return os.getpid()

    def child_pids(self) -> list[int]:
        """Process ids of the node's rollout and inference workers."""
        return [] if self.placement is None else [p.pid for p in self.placement.procs.values()]

    def _start(self) -> None:
        cfg = rebuild_cfg(self.cfg_values)
        placement = AsyncPlacement(cfg, [], [None])
        placement.spawn_learners = False  # its blocks are shipped to the head's learner instead
        # a block leaves at the next pull: a split fills one while its previous one waits for it,
        # so a node holds at most one finished rollout per split (the learner's pool on the head
        # bounds the rest of the policy lag, as on one machine)
        placement.blocks_per_owner = NODE_BLOCKS_PER_SPLIT
        # inference acts with run-wide actor ids (`--per_actor_eps`: no two nodes' actors share
        # an epsilon), as the shipped blocks carry them (`_pack`)
        placement.actor_offset = self.actor_offset
        placement.run_actors = self.actors_per_node * cfg.ray_sampler_nodes
        placement.start()
        self.placement = placement

    def _load_weights(self, version: int, box: list[Any]) -> None:
        import ray

        state = ray.get(box[0])
        model = self.placement.model
        model.load_state_dict(state)
        self.placement.shared.weights[0].publish(model, version)
        self.version = version

    def pull(
        self, version: int, box: list[Any], env_frames: int, env_steps_left: int, blocks_per_shipment: int
    ) -> Shipment:
        """Publishes the weights of `box[0]` (an ObjectRef of a state dict) to this node's inference
        when `version` is newer than its own, then waits until `blocks_per_shipment` blocks are ready
        (or `SHIP_WAIT_SEC` passed) and ships every ready block.

        Args:
            version: the policy_version of the weights `box[0]` refers to.
            box: `[ObjectRef]`, in a list so that Ray passes the reference, not the fetched value.
            env_frames: the run's env frames (`ActContext.env_frames` of the node's inference).
            env_steps_left: env steps this node may still take (its share of the frame budget).
            blocks_per_shipment: `--ray_blocks_per_shipment`.
        Raises:
            ChildProcessFailed: a process of the node failed beyond its restart budget.
        """
        started = self.placement is None
        if started:
            self._start()
        placement = self.placement
        if version > self.version:
            self._load_weights(version, box)
        placement.set_env_frames(env_frames)
        placement.limit_env_frames(env_steps_left * placement.frameskip)
        out = Shipment(self.node, started=started)
        deadline = time.monotonic() + SHIP_WAIT_SEC
        queue = placement.learner_queues[0]
        while True:
            report = placement.step()  # the node's supervision and reports (up to 0.1 s)
            out.env_steps += report.env_steps
            out.episodes += [
                (e.episode_return, e.episode_length, e.policy_id, e.extra) for e in report.episodes
            ]
            out.worker_restarts += report.worker_restarts
            out.nonfinite_rewards += report.nonfinite_rewards
            out.nonfinite_obs += report.nonfinite_obs
            out.env_faults += report.env_faults
            out.last_env_fault = report.last_env_fault or out.last_env_fault
            try:
                self.pending += queue.get_many(block=False)
            except Empty:
                pass
            if len(self.pending) >= blocks_per_shipment or time.monotonic() >= deadline:
                break
        self._pack(out)
        out.policy_version = self.version
        return out

    def _pack(self, out: Shipment) -> None:
        """Copies the pending blocks into `out` and frees their slots on the node."""
        if not self.pending:
            return
        pool, buffers = self.placement.block_pool, self.placement.shared.buffers
        per_owner = pool.blocks_per_owner * pool.block_size
        parts = []
        for first, own in self.pending:
            slots = list(range(first, first + pool.block_size)) if own is None else list(own)
            out.owners.append(first // per_owner)
            out.block_slots.append(len(slots))
            parts += slots
        self.pending = []
        index = torch.tensor(parts, dtype=torch.int64)
        data = buffers.gather(index)
        data["actor_ids"] = buffers.actor_ids[index] + self.actor_offset
        pool.release(index, 0)  # copied: the node's workers may fill them again
        out.data = tree_map(lambda t: t.numpy(), data)
        total = 0

        def add(a: Any) -> None:  # an np.ndarray
            nonlocal total
            total += a.nbytes

        tree_map(add, out.data)
        out.nbytes = total

    def close(self) -> None:
        """Stops the node's processes."""
        if self.placement is not None:
            self.placement.close()
            self.placement = None
