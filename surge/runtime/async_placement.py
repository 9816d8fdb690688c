"""The async placement (APPO, `--serial_mode=False`): rollout workers, inference workers and the
learner in their own processes over trajectory buffers in shared memory.

The main process only supervises: it collects reports (env steps, episodes, learner statistics),
asks the learner for checkpoints, replaces a worker that is stuck or crashed in its first reset (as
Sample Factory's `init_subset`), and stops every child within a bounded time. Children die with the
main process even when it is killed (PR_SET_PDEATHSIG). Shared tensors use torch's file-descriptor
strategy, so no /dev/shm file outlives the processes.
"""

from __future__ import annotations

import logging
import time
from queue import Empty
from typing import Any

import torch
import torch.multiprocessing as tmp

from surge.data.trajectory import TrajectoryBuffers
from surge.errors import ChildProcessFailed
from surge.experiment.checkpoint import CheckpointManager
from surge.learning.learner_process import learner_process_main
from surge.models.actor_critic import make_actor_critic
from surge.runtime.components import blocks_per_split, env_info, seed_everything
from surge.runtime.placement import StepReport
from surge.runtime.shared_state import BlockPool, SharedWeights
from surge.sampling.inference_process import inference_process_main
from surge.sampling.rollout_process import rollout_process_main
from surge.sampling.rollout_worker import EpisodeStats

log = logging.getLogger("surge")

JOIN_TIMEOUT_SEC = 10.0
LEARNER_STOP_TIMEOUT_SEC = 300.0
QUEUE_BYTES = 10 * 1000 * 1000


def _queue():
    from faster_fifo import Queue

    return Queue(max_size_bytes=QUEUE_BYTES)


class AsyncPlacement:
    """Spawns and supervises the processes of an APPO run (see the module docstring)."""

    def __init__(
        self,
        cfg: Any,
        ckpt: CheckpointManager,
        resume_state: dict[str, Any] | None,
        random_actions: bool = False,
    ):
        self.cfg, self.ckpt, self.resume_state = cfg, ckpt, resume_state
        self.random_actions = random_actions
        self.procs: dict[str, Any] = {}
        self.incarnations: dict[int, int] = {}  # rollout worker index -> processes started for it
        self.stopping = False

    # ---------------------------------------------------------------------------------------
    def start(self) -> None:
        """Allocates shared buffers and weights, spawns learner, inference and rollout processes,
        and waits until every worker reset its envs (replacing stuck or crashed ones)."""
        cfg = self.cfg
        seed_everything(cfg.seed)
        info = env_info(cfg)
        self.num_agents, self.frameskip = info.agents_per_step, info.frameskip
        model = make_actor_critic(cfg, info.observation_space, info.action_space)
        if self.resume_state is not None:
            model.load_state_dict(self.resume_state["model"])
        ctx = self.ctx = tmp.get_context("spawn")
        agents_per_split = cfg.num_envs_per_worker // cfg.worker_num_splits * info.num_agents
        k = blocks_per_split(cfg, info.num_agents)
        self.block_pool = BlockPool(cfg.num_workers * cfg.worker_num_splits, k, agents_per_split)
        self.buffers = TrajectoryBuffers(
            self.block_pool.num_slots,
            cfg.rollout,
            info.observation_space,
            info.action_space,
            model.rnn_state_size,
        ).share_memory()
        log.info(
            "Async placement: %d rollout workers x %d envs, %d inference worker(s), learner; %d trajectory slots "
            "(%.1f MB shared)",
            cfg.num_workers,
            cfg.num_envs_per_worker,
            cfg.policy_workers_per_policy,
            self.block_pool.num_slots,
            self.buffers.nbytes() / 1e6,
        )
        self.weights = SharedWeights(model, ctx.Lock())
        self.weights.publish(
            model, 0 if self.resume_state is None else int(self.resume_state["learner"]["policy_version"])
        )
        self.env_frames = torch.zeros(1, dtype=torch.int64).share_memory_()
        self.stop_event = ctx.Event()
        self.report_queue = _queue()
        self.learner_queue = _queue()
        self.command_queue = _queue()
        self.request_queues = [_queue() for _ in range(cfg.policy_workers_per_policy)]
        self.worker_queues = [_queue() for _ in range(cfg.num_workers)]
        self.cfg_values = cfg.to_dict()
        self.info = info

        self._spawn(
            "learner",
            learner_process_main,
            (
                self.cfg_values,
                info.observation_space,
                info.action_space,
                self.buffers,
                self.block_pool,
                self.weights,
                self.env_frames,
                str(self.ckpt.folder),
                self.resume_state is not None,
                self.learner_queue,
                self.command_queue,
                self.report_queue,
            ),
        )
        self._wait_for("learner_ready", lambda msg: True, timeout=120.0, what="the learner to start")
        for i in range(cfg.policy_workers_per_policy):
            self._spawn(
                f"inference_{i}",
                inference_process_main,
                (
                    self.cfg_values,
                    i,
                    info.observation_space,
                    info.action_space,
                    self.buffers,
                    self.weights,
                    self.request_queues[i],
                    self.worker_queues,
                    self.report_queue,
                    self.stop_event,
                    self.random_actions,
                ),
            )
        for w in range(cfg.num_workers):
            self._spawn_worker(w)
        self._init_workers()

    def _spawn(self, name: str, fn, args: tuple, daemon: bool = True) -> None:
        # rollout workers are not daemonic: their envs may start processes of their own (a Doom
        # match runs one game per agent, gymnasium's AsyncVectorEnv one per env); stop() joins
        # or kills every process either way, and PR_SET_PDEATHSIG covers a killed main process
        p = self.ctx.Process(target=fn, args=args, name=f"surge-{name}", daemon=daemon)
        p.start()
        self.procs[name] = p
        log.info("Started process %s (pid %d)", name, p.pid)

    def _spawn_worker(self, w: int) -> None:
        """Starts rollout worker `w`, or a replacement: each process for index `w` has its own
        incarnation number, so messages of the one it replaces are told apart."""
        cfg = self.cfg
        self.incarnations[w] = self.incarnations.get(w, -1) + 1
        k = self.block_pool.blocks_per_owner
        for s in range(cfg.worker_num_splits):  # a replaced worker starts with all its blocks free
            o = w * cfg.worker_num_splits + s
            self.block_pool.free[o * k : (o + 1) * k] = 1
        q = self.request_queues[w % len(self.request_queues)]
        self._spawn(
            f"rollout_{w}",
            rollout_process_main,
            (
                self.cfg_values,
                w,
                self.buffers,
                self.block_pool,
                q,
                self.worker_queues[w],
                self.learner_queue,
                self.report_queue,
                self.stop_event,
                self.incarnations[w],
            ),
            daemon=False,
        )

    def _init_workers(self) -> None:
        """Waits for every worker's first reset; replaces a worker stuck or crashed in it."""
        cfg = self.cfg
        started = {w: time.time() for w in range(cfg.num_workers)}
        done: set[int] = set()
        retries = 0
        self._early: list[Any] = []
        while len(done) < cfg.num_workers:
            for msg in self._drain(timeout=0.5):
                if msg[0] == "reset_done":
                    if msg[2] == self.incarnations[msg[1]]:  # not from a process already replaced
                        done.add(msg[1])
                elif msg[0] == "error" and msg[1].startswith("rollout worker"):
                    log.error("%s failed during its first reset:\n%s", msg[1], msg[2])
                else:
                    self._early.append(msg)
            self._check_children(allow_rollout_deaths=True)
            for w in range(cfg.num_workers):
                p = self.procs[f"rollout_{w}"]
                stuck = time.time() - started[w] > cfg.reset_timeout_seconds
                if w not in done and (stuck or not p.is_alive()):
                    retries += 1
                    if retries > 3 * cfg.num_workers:
                        raise ChildProcessFailed(
                            f"rollout worker {w} failed to reset its envs {retries} times; giving up"
                        )
                    log.error(
                        "Rollout worker %d is %s in its first reset: replacing it",
                        w,
                        "stuck" if stuck else "dead",
                    )
                    p.kill()
                    p.join(5)
                    self._spawn_worker(w)
                    started[w] = time.time()
        log.info("All %d rollout workers reset their envs", cfg.num_workers)

    # ---------------------------------------------------------------------------------------
    def _drain(self, timeout: float) -> list[Any]:
        try:
            return self.report_queue.get_many(timeout=timeout)
        except Empty:
            return []

    def _wait_for(self, kind: str, match, timeout: float, what: str) -> Any:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for msg in self._drain(timeout=0.2):
                if msg[0] == kind and match(msg):
                    return msg
                if msg[0] == "error":
                    raise ChildProcessFailed(f"{msg[1]} crashed:\n{msg[2]}")
            self._check_children()
        raise ChildProcessFailed(f"timed out after {timeout:.0f} s waiting for {what}")

    def _check_children(self, allow_rollout_deaths: bool = False) -> None:
        if self.stopping:
            return
        for name, p in self.procs.items():
            if not p.is_alive() and not (allow_rollout_deaths and name.startswith("rollout_")):
                tb = ""
                for msg in self._drain(timeout=0.5):
                    if msg[0] == "error":
                        tb += f"\n{msg[1]}:\n{msg[2]}"
                raise ChildProcessFailed(f"process {name} exited with code {p.exitcode}{tb}")

    def step(self) -> StepReport:
        """Collects the children's reports for up to 0.1 s.

        Raises:
            ChildProcessFailed: a child crashed (its traceback in the message) or exited.
        """
        report = StepReport()
        msgs = self._early + self._drain(timeout=0.1)
        self._early = []
        for msg in msgs:
            kind = msg[0]
            if kind == "steps":
                report.env_steps += msg[2]
                report.episodes += [EpisodeStats(r, n) for r, n in msg[3]]
            elif kind == "train":
                report.train_stats = msg[1]
            elif kind == "saved":
                log.info("Saved %s", msg[2])
            elif kind == "error":
                raise ChildProcessFailed(f"{msg[1]} crashed:\n{msg[2]}")
        self._check_children()
        return report

    def set_env_frames(self, env_frames: int) -> None:
        self.env_frames[0] = env_frames

    def save(self, kind: str, counters: dict[str, Any]) -> None:
        """Asks the learner to write a checkpoint (asynchronously; the final one is awaited in close).
        Kind "final" is a regular checkpoint for which the learner skips batches it has not started."""
        if "learner" in self.procs and self.procs["learner"].is_alive():
            self.command_queue.put(("save", kind, counters))

    def close(self) -> None:
        """Stops every child within a bounded time: the learner finishes pending commands (the last
        checkpoint) and exits; workers and inference leave their loops; stragglers are killed."""
        self.stopping = True
        if not self.procs:
            return
        self.stop_event.set()
        learner = self.procs.get("learner")
        if learner is not None and learner.is_alive():
            self.command_queue.put(("stop",))
            learner.join(LEARNER_STOP_TIMEOUT_SEC)  # it finishes the batch in training, then saves
        deadline = time.time() + JOIN_TIMEOUT_SEC
        for p in self.procs.values():
            p.join(max(0.1, deadline - time.time()))
        for name, p in self.procs.items():
            if p.is_alive():
                log.warning("Process %s did not exit in time: killing it", name)
                p.kill()
                p.join(5)
        for msg in self._drain(timeout=0.05):
            if msg[0] == "saved":
                log.info("Saved %s", msg[2])
            elif msg[0] == "error":
                log.error("%s crashed:\n%s", msg[1], msg[2])
        self.procs.clear()
