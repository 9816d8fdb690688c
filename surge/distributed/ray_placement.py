"""`--distributed=ray`: the learner on this machine, sampler nodes on a Ray cluster (docs/scaling.md).

The head is the driver process (the one `surge train` runs in). It runs the async placement's
learner process over trajectory buffers sized as if the run had `ray_sampler_nodes x num_workers`
rollout workers, and no rollout or inference worker of its own. Each sampler node is a Ray actor
(`surge.distributed.ray_sampler.SamplerNode`) running `num_workers` rollout workers and their
inference on its machine. Per step the head:

1. collects the shipments that arrived (`ray.wait`, no blocking) and writes each block into free
   slots of the matching owner (node, worker, split) of its buffers, then hands it to the learner
   as the node's own rollout worker would (`BlockReady` on the learner's queue);
2. when the learner published a new policy_version, `ray.put`s its weights once; every node's
   next call carries the version and the reference, and the node fetches them only if newer;
3. calls `pull` again on each node whose shipment arrived, unless blocks still wait for free
   slots (back-pressure: then the node's own pool fills and its workers wait).

A replay learner (DQN, SAC, TD3, DDPG) takes these blocks on its "observe" path as it takes a local
worker's: copied into its replay in the columns of their run-wide actor ids, and released.

Policy lag on this path: the learner's policy_version when it trains on a sample minus the
policy_version the node's inference acted with (stamped in the trajectory, as on one machine). The
node acts with the newest weights it received, so the lag adds the broadcast's delay (one `pull`
round trip, ~`SHIP_WAIT_SEC` at most) to the async placement's; samples older than
`--max_policy_lag` are masked out of the loss as on one machine, and the lag is reported the same
way (train/policy_lag_min/avg/max).

A node whose actor dies (its machine lost, its processes killed) loses the blocks it had not
shipped: those being filled and those finished since its last shipment, at most its trajectory
pool (`Shipment`, logged). Ray restarts the actor (`--ray_max_restarts`), which starts its
processes again at its next `pull`; training goes on meanwhile with the other nodes' experience
(or waits for it, with one node). A node whose `pull` has not returned for
`--heartbeat_timeout_sec` (a pull ships within about `SHIP_WAIT_SEC`; one that starts the node's
processes gets `NODE_START_GRACE_SEC` more) is hung (a stopped process, a machine that stopped
answering): the head kills its actor with `ray.kill`, and Ray restarts it as one that died.
"""

from __future__ import annotations

import logging
import math
import time
import warnings
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import torch

from surge.cfg.config import Config
from surge.data.trajectory import tree_assign, tree_map
from surge.distributed.ray_sampler import NODE_BLOCKS_PER_SPLIT, SamplerNode, Shipment, node_cfg_values
from surge.errors import ChildProcessFailed
from surge.runtime.async_placement import AsyncPlacement
from surge.runtime.checkpoint import CheckpointManager
from surge.runtime.child_start import STARTUP_MODULES
from surge.runtime.commands import Command, SetRewardShaping
from surge.runtime.components import num_actors
from surge.runtime.messages import BlockReady, SaveRefused
from surge.runtime.placement import StepReport
from surge.sampling.rollout_worker import EpisodeStats

log = logging.getLogger("surge")

STATS_INTERVAL_SEC = 30.0  # a log line of the transfers' statistics this often
CLOSE_TIMEOUT_SEC = 30.0
RETRY_SEC = 1.0  # a lost node is called again this often while Ray restarts it
#: a pull that starts a node's processes (its first, or the first after a restart) may take this
#: much longer than `--heartbeat_timeout_sec` before the node counts as hung: the imports, the
#: processes' start and their envs' first reset (`--reset_timeout_seconds` more)
NODE_START_GRACE_SEC = 120.0


class RayPlacement:
    """The head of a `--distributed=ray` run (see the module docstring); answers `Placement`'s calls."""

    def __init__(
        self,
        cfg: Config,
        ckpts: list[CheckpointManager],
        resume_states: list[dict[str, Any] | None],
    ):
        self.cfg = cfg
        n = cfg.ray_sampler_nodes
        # the head's buffers have an owner per (node, worker, split): node i's worker w is the
        # head's worker i * num_workers + w
        self.head = AsyncPlacement(replace(cfg, num_workers=n * cfg.num_workers), ckpts, resume_states)
        self.head.spawn_samplers = False
        self.nodes: list[Any] = []
        self.inflight: dict[Any, int] = {}  # ObjectRef of a pull -> node index
        self.pulled_at: dict[Any, float] = {}  # ObjectRef of a pull -> time.monotonic() of the call
        self.killed: set[Any] = set()  # pulls whose node was killed as hung (`_kill_hung`)
        self.shipped: set[int] = set()  # nodes that shipped since their processes (re)started
        self.waiting: list[tuple[int, int, int, dict[str, Any]]] = []  # (node, owner, slots, data)
        self.failures = [0] * n
        self.idle: set[int] = set()  # nodes without a pull in flight
        self.restarting: set[int] = set()  # nodes lost and not yet started again
        self.retry_at: dict[int, float] = {}  # node -> time.monotonic() of its next pull after a loss
        self.weights_ref: Any = None
        self.weights_seq = -1
        self.weights_version = 0
        self.env_frames = 0
        self.env_steps_counted = 0
        self.env_frames_limit: tuple[int, int] | None = None  # (env steps counted then, frames more)
        self.owns_ray = False
        self.stats: dict[str, float] = {
            "shipments": 0,
            "blocks": 0,
            "bytes": 0,
            "get_seconds": 0.0,  # ray.get of the shipments that arrived (fetch + deserialise)
            "write_seconds": 0.0,  # copying blocks into the learner's buffers
            "lost_nodes": 0,
            # the learner's batches that reported statistics (about one per second,
            # `surge.runtime.stats_cadence`) and their training time: the learner's ceiling
            "reported_batches": 0,
            "train_seconds": 0.0,
        }
        self.last_stats_log = time.monotonic()
        # Placement's attributes: the head's (the same objects; num_agents and frameskip at start)
        self.num_agents, self.frameskip = 1, 1
        self.final_written: set[int] = self.head.final_written
        self.checkpoints_written: list[int] = self.head.checkpoints_written
        self.save_refusals: list[SaveRefused] = self.head.save_refusals

    # ---------------------------------------------------------------------------------------
    def start(self) -> None:
        """Connects to Ray (or starts it here), starts the learner, then the sampler nodes.

        Raises:
            ChildProcessFailed: the learner failed to start.
        """
        import ray

        cfg = self.cfg
        if not ray.is_initialized():  # else a caller's session (ray.init before surge.train)
            self.owns_ray = True  # disconnected (a local instance: stopped) at close
            ray.init(address=cfg.ray_address, include_dashboard=False, log_to_driver=True)
        log.info(
            "Ray: %s; %d sampler node(s) of %d rollout workers x %d envs each",
            "local instance" if cfg.ray_address is None else f"cluster at {cfg.ray_address}",
            cfg.ray_sampler_nodes,
            cfg.num_workers,
            cfg.num_envs_per_worker,
        )
        self.head.start()
        self.num_agents, self.frameskip = self.head.num_agents, self.head.frameskip
        self._broadcast()
        per_node = num_actors(cfg, self.head.layout.info)
        options: dict[str, Any] = {
            "max_restarts": cfg.ray_max_restarts,
            "max_task_retries": 0,  # a pull in flight when the node died is lost, not repeated
            "num_cpus": 1,
            "scheduling_strategy": "SPREAD",
        }
        if cfg.ray_node_resource:
            options["resources"] = {cfg.ray_node_resource: 1}
        actor = ray.remote(SamplerNode).options(**options)
        values = cfg.to_dict()
        self.nodes = [
            actor.remote(node_cfg_values(values, i), i, per_node, tuple(STARTUP_MODULES))
            for i in range(cfg.ray_sampler_nodes)
        ]
        for i in range(len(self.nodes)):
            self._pull(i)

    def _broadcast(self) -> None:
        """`ray.put`s the learner's weights once per new publish (policy_version)."""
        import ray

        weights = self.head.shared.weights[0]
        seq = weights.read_seq()
        if seq == self.weights_seq:
            return
        model = self.head.model
        version = weights.load_into(model)
        if version is None:  # a publish in progress: next step
            return
        self.weights_seq, self.weights_version = seq, version
        self.weights_ref = ray.put({k: v.detach().clone() for k, v in model.state_dict().items()})

    def _pull(self, i: int) -> None:
        n = len(self.nodes)
        if self.env_frames_limit is None:
            left = torch.iinfo(torch.int64).max
        else:  # (frameskip is the env's once started; the first pull comes after the start)
            counted, frames = self.env_frames_limit
            left = max(0, counted + math.ceil(frames / self.frameskip) - self.env_steps_counted)
        share = left if left >= torch.iinfo(torch.int64).max // 2 else math.ceil(left / n)
        version = self.weights_version if self.weights_ref is not None else -1  # none put yet
        ref = self.nodes[i].pull.remote(
            version, [self.weights_ref], self.env_frames, share, self.cfg.ray_blocks_per_shipment
        )
        self.inflight[ref] = i
        self.pulled_at[ref] = time.monotonic()

    def _kill_hung(self) -> None:
        """Kills the actor of each node whose pull has been in flight too long (module docstring);
        its pull then fails as a dead node's does (`_lost`), and Ray restarts it."""
        import ray

        cfg, now = self.cfg, time.monotonic()
        for ref, i in self.inflight.items():
            limit = cfg.heartbeat_timeout_sec
            if i not in self.shipped:  # this pull starts the node's processes
                limit += NODE_START_GRACE_SEC + cfg.reset_timeout_seconds
            if ref in self.killed or now - self.pulled_at[ref] <= limit:
                continue
            log.warning(
                "Sampler node %d hung: its pull has not returned for %.0f s (--heartbeat_timeout_sec=%g): "
                "its actor is killed",
                i,
                now - self.pulled_at[ref],
                cfg.heartbeat_timeout_sec,
            )
            ray.kill(self.nodes[i], no_restart=False)
            self.killed.add(ref)

    # ---------------------------------------------------------------------------------------
    def step(self) -> StepReport:
        """The learner's reports (up to 0.1 s), then the shipments that arrived, written into the
        learner's buffers; new weights put once; the next pulls sent.

        Raises:
            ChildProcessFailed: the learner failed, or a node failed beyond `--ray_max_restarts`,
                or one of its processes beyond its restart budget (the node's traceback).
        """
        import ray

        report = self.head.step()
        for stats in report.train_stats.values():
            self.stats["reported_batches"] += 1
            self.stats["train_seconds"] += float(stats.get("train_seconds", 0.0))
        self._broadcast()
        if self.inflight:
            ready, _ = ray.wait(list(self.inflight), num_returns=len(self.inflight), timeout=0)
        else:
            ready = []
        repull: list[int] = []
        for ref in ready:
            i = self.inflight.pop(ref)
            self.pulled_at.pop(ref)
            self.killed.discard(ref)
            t0 = time.monotonic()
            try:
                ship: Shipment = ray.get(ref)
            except ray.exceptions.ActorUnavailableError as e:  # restarting (or unreachable)
                if i not in self.restarting:
                    self._lost(i, e)
                self.retry_at[i] = time.monotonic() + RETRY_SEC
                repull.append(i)
                continue
            except ray.exceptions.RayActorError as e:  # died: Ray restarts it, or it is gone
                self._lost(i, e)
                self.retry_at[i] = time.monotonic() + RETRY_SEC
                repull.append(i)
                continue
            except ray.exceptions.RayTaskError as e:
                raise ChildProcessFailed(f"sampler node {i} failed:\n{e}") from e
            self.stats["get_seconds"] += time.monotonic() - t0
            self._receive(ship, report)
            repull.append(i)
        self._kill_hung()
        self.idle.update(repull)
        t0 = time.monotonic()
        self._write_waiting()
        self.stats["write_seconds"] += time.monotonic() - t0
        # back-pressure: a node whose blocks still wait for free slots is not asked for more
        # (its own pool then fills and its workers wait), as the learner's held blocks pause
        # rollout workers on one machine
        blocked = {node for node, *_ in self.waiting}
        now = time.monotonic()
        for i in sorted(self.idle - blocked):
            if self.retry_at.get(i, 0.0) <= now:
                self._pull(i)
                self.idle.discard(i)
        self._maybe_log_stats()
        return report

    def _lost(self, i: int, error: Exception) -> None:
        """Counts a loss of node `i` (once per death: calls to it while Ray restarts it fail with
        ActorUnavailableError and are retried every `RETRY_SEC` without counting).

        Raises:
            ChildProcessFailed: the node was lost more than `--ray_max_restarts` times.
        """
        cfg = self.cfg
        self.restarting.add(i)
        self.shipped.discard(i)
        self.failures[i] += 1
        self.stats["lost_nodes"] += 1
        pool = self.head.block_pool
        per_node = cfg.num_workers * cfg.worker_num_splits * NODE_BLOCKS_PER_SPLIT
        if 0 <= cfg.ray_max_restarts < self.failures[i]:
            raise ChildProcessFailed(
                f"sampler node {i} was lost {self.failures[i]} times (--ray_max_restarts="
                f"{cfg.ray_max_restarts}): {error}"
            )
        log.warning(
            "Sampler node %d was lost (%s): the blocks it had not shipped are lost (at most its "
            "pool's %d blocks of %d trajectories); Ray restarts it (%d of --ray_max_restarts=%d) and "
            "training goes on (policy version %d at the loss).",
            i,
            type(error).__name__,
            per_node,
            pool.block_size,
            self.failures[i],
            cfg.ray_max_restarts,
            self.weights_version,
        )

    def _receive(self, ship: Shipment, report: StepReport) -> None:
        """Adds a shipment's counts to `report` and queues its blocks for the learner's buffers."""
        if ship.started:
            log.info("Sampler node %d started its processes", ship.node)
            self.restarting.discard(ship.node)
        self.shipped.add(ship.node)
        report.env_steps += ship.env_steps
        self.env_steps_counted += ship.env_steps
        report.episodes += [EpisodeStats(*e) for e in ship.episodes]
        report.worker_restarts += ship.worker_restarts
        report.nonfinite_rewards += ship.nonfinite_rewards
        report.nonfinite_obs += ship.nonfinite_obs
        report.env_faults += ship.env_faults
        report.last_env_fault = ship.last_env_fault or report.last_env_fault
        self.stats["shipments"] += 1
        self.stats["blocks"] += len(ship.owners)
        self.stats["bytes"] += ship.nbytes
        start = 0
        for owner, count in zip(ship.owners, ship.block_slots, strict=True):
            self.waiting.append((ship.node, owner, count, _rows(ship.data, start, start + count)))
            start += count

    def _write_waiting(self) -> None:
        """Writes the waiting blocks into free slots of their owners and hands them to the learner;
        a block whose owner has no free slots waits for the learner to release some."""
        cfg, head = self.cfg, self.head
        pool, buffers = head.block_pool, head.shared.buffers
        owners_per_node = cfg.num_workers * cfg.worker_num_splits
        still = []
        for node, owner, count, part in self.waiting:
            view = pool.owner_view(node * owners_per_node + owner)
            slots = view.get(count) if count == pool.block_size else None
            if slots is None:
                still.append((node, owner, count, part))
                continue
            with warnings.catch_warnings():  # Ray's zero-copy arrays are read-only; only read here
                warnings.simplefilter("ignore", UserWarning)
                for name in buffers.FIELDS:
                    tree_assign(getattr(buffers, name), slots, tree_map(torch.from_numpy, part[name]))
                buffers.actor_ids[slots] = torch.from_numpy(part["actor_ids"])
            view.hand_over(slots, [0])
            first = int(slots[0])
            contiguous = bool((slots == torch.arange(first, first + count)).all()) and first % count == 0
            head.learner_queues[0].put(BlockReady(first, None if contiguous else tuple(slots.tolist())))
        self.waiting = still

    def _maybe_log_stats(self, force: bool = False) -> None:
        now = time.monotonic()
        if (now - self.last_stats_log < STATS_INTERVAL_SEC and not force) or not self.stats["shipments"]:
            return
        self.last_stats_log = now
        s = self.stats
        cfg, info = self.cfg, self.head.layout.info
        # the learner's ceiling: env frames per second of training (agent steps per iteration /
        # agents per env step x frameskip)
        agent_steps = self.head.layout.make_batcher().traj_per_batch * cfg.rollout
        frames_per_iteration = agent_steps * info.frameskip / max(1, info.agents_per_step)
        ceiling = (
            frames_per_iteration * s["reported_batches"] / s["train_seconds"] if s["train_seconds"] else 0.0
        )
        log.info(
            "Ray transfers: %d shipments, %d blocks, %.2f MB (%.1f kB per block), %.2f ms per "
            "shipment fetched, %.3f ms per block written; weights at policy version %d; sampler "
            "nodes lost: %d; learner: %.3f s per batch (of %d batches sampled) = %.0f env frames/s "
            "while training",
            s["shipments"],
            s["blocks"],
            s["bytes"] / 1e6,
            s["bytes"] / max(1, s["blocks"]) / 1e3,
            1000 * s["get_seconds"] / s["shipments"],
            1000 * s["write_seconds"] / max(1, s["blocks"]),
            self.weights_version,
            s["lost_nodes"],
            s["train_seconds"] / max(1, s["reported_batches"]),
            s["reported_batches"],
            ceiling,
        )

    # ---------------------------------------------------------------------------------------
    def save(self, kind: str, counters: dict[str, Any], policy_id: int | None = None) -> None:
        self.head.save(kind, counters, policy_id)

    def send_command(self, cmd: Command) -> None:
        """The learner's commands (`AsyncPlacement.send_command`).

        Raises:
            ValueError: `SetRewardShaping`, which sampler nodes do not take.
        """
        if isinstance(cmd, SetRewardShaping):
            raise ValueError("SetRewardShaping: not supported with --distributed=ray")
        self.head.send_command(cmd)

    def set_policy_weights(
        self, policy_id: int, state_dict: dict[str, torch.Tensor], policy_version: int
    ) -> None:
        self.head.set_policy_weights(policy_id, state_dict, policy_version)

    def policy_weights(self, policy_id: int) -> tuple[dict[str, torch.Tensor], int]:
        return self.head.policy_weights(policy_id)

    def set_env_frames(self, env_frames: int) -> None:
        self.env_frames = int(env_frames)
        self.head.set_env_frames(env_frames)

    def limit_env_frames(self, env_frames: int) -> None:
        """The nodes together take about `env_frames` more env frames: each its share, from its
        next `pull` (so they overshoot by at most one shipment's worth each)."""
        self.env_frames_limit = (self.env_steps_counted, max(0, env_frames))

    def set_progress(self, fn: Callable[[], None]) -> None:
        """Nothing to do: the learner trains in its own process."""

    def interrupt(self) -> None:
        self.head.interrupt()

    def close(self) -> StepReport:
        """Stops the sampler nodes (their processes, then their actors), the learner, and Ray when
        it was started here. What the nodes had not shipped is not counted: an empty report
        (`Placement.close`)."""
        import ray

        self._maybe_log_stats(force=True)
        if self.nodes:
            closing = [node.close.remote() for node in self.nodes]
            try:
                ray.wait(closing, num_returns=len(closing), timeout=CLOSE_TIMEOUT_SEC)
            except Exception as e:  # noqa: BLE001 - a lost node: killed below either way
                log.warning("Sampler nodes did not close cleanly: %s", e)
            for node in self.nodes:
                ray.kill(node, no_restart=True)
            self.nodes = []
        self.inflight.clear()
        self.pulled_at.clear()
        self.head.close()  # no rollout worker of its own: nothing late
        if self.owns_ray and ray.is_initialized():
            ray.shutdown()
        return StepReport()


def _rows(data: dict[str, Any], lo: int, hi: int) -> dict[str, Any]:
    """Rows `[lo, hi)` of every array of a shipment's (nested) `data`: one block's trajectories."""
    return tree_map(lambda a: a[lo:hi], data)
