"""The async placement (APPO, `--serial_mode=False`): rollout workers, inference workers and one
learner per policy in their own processes over trajectory buffers in shared memory.

The main process only supervises: it collects reports (env steps, episodes, learner statistics),
asks the learners for checkpoints, and stops every child within a bounded time. Children die with
the main process even when it is killed (PR_SET_PDEATHSIG). Shared tensors use torch's
file-descriptor strategy, so no /dev/shm file outlives the processes. The components are the same
objects the serial placement builds (`surge.runtime.components`), each made inside its process.

Supervision (heartbeats, replacement of workers, the restart budget, a dead or hung learner) is
`surge.runtime.supervision`'s `Supervisor`.
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections.abc import Callable
from queue import Empty
from typing import Any

import torch

from surge.cfg.config import Config
from surge.cfg.policy_roles import learning_policies
from surge.envs.registry import find_family
from surge.errors import ChildProcessFailed
from surge.learning.algorithm import acting_state_size
from surge.runtime.async_commands import CommandRelay
from surge.runtime.checkpoint import CheckpointManager
from surge.runtime.child_start import (
    ChildTask,
    child_main,
    direct_context,
    fork_server_pid,
    process_context,
    start_fork_server,
)
from surge.runtime.commands import Command
from surge.runtime.components import env_info, make_layout, make_model, seed_everything
from surge.runtime.inference_process import inference_process_main
from surge.runtime.learner_process import learner_process_main
from surge.runtime.lockstep import LockstepShared
from surge.runtime.main_module import children_skip_an_unreadable_main
from surge.runtime.messages import (
    BLOCK_CODEC,
    REPLY_CODEC,
    REQUEST_CODEC,
    ChildError,
    DataParallelStopped,
    EnvFaults,
    Episodes,
    LearnerReady,
    NonFiniteEnvOutput,
    PolicyExported,
    PolicyImported,
    SaveCommand,
    Saved,
    SaveRefused,
    StopCommand,
    TrainStats,
)
from surge.runtime.pipe_queue import PipeQueue
from surge.runtime.placement import StepReport, check_policy_state_fits, save_published
from surge.runtime.policy_stats import log_train_notes
from surge.runtime.process_context import InferenceContext, LearnerContext, RolloutContext, SharedContext
from surge.runtime.process_setup import thread_oversubscription
from surge.runtime.repeated_errors import RepeatedErrors
from surge.runtime.rollout_process import rollout_process_main
from surge.runtime.shared_state import SharedWeights
from surge.runtime.stop_flag import StopFlag
from surge.runtime.supervision import ReplaceableExtra, Supervisor
from surge.sampling.rollout_worker import EpisodeStats

log = logging.getLogger("surge")

JOIN_TIMEOUT_SEC = 10.0
LEARNER_STOP_TIMEOUT_SEC = 300.0
#: the report queue's pipe: about 10 s of a fast learner's statistics while the main process is busy
REPORT_PIPE_BYTES = 1 << 20
REPLACE_TIMEOUT_SEC = 60.0  # the final checkpoint waits this long for replacements in flight
STEP_POLL_SEC = 0.1  # the main loop's period while no report arrives (the budget and stop checks)


class AsyncPlacement:
    """Spawns and supervises the processes of an async run (see the module docstring)."""

    def __init__(
        self,
        cfg: Config,
        ckpts: list[CheckpointManager],
        resume_states: list[dict[str, Any] | None],
    ):
        self.cfg, self.ckpts, self.resume_states = cfg, ckpts, resume_states
        self.procs: dict[str, Any] = {}
        self.incarnations: dict[int, int] = {}  # rollout worker index -> processes started for it
        self.spawned_at: dict[str, float] = {}  # process name -> time.monotonic() of its start
        self.stopping = False
        self.supervising = False  # after the start-up: replace crashed or hung workers
        self.final_written: set[int] = set()  # see `Placement`
        self.checkpoints_written = [0] * cfg.num_policies  # see `Placement`
        self.save_refusals: list[SaveRefused] = []
        self.commands = CommandRelay(self)  # ReplacePolicy's exchanges in flight
        self.reward_shaping: dict[int, dict] = {}  # each policy's latest SetRewardShaping scheme
        # the run's env frames (`set_env_frames`, read by inference: `ActContext.env_frames`); made
        # here so that a resumed run's frame is set before the processes start
        self.env_frames = torch.zeros(1, dtype=torch.int64).share_memory_()
        # (env steps counted when the limit was set, env frames more): see `limit_env_frames`
        self.env_frames_limit: tuple[int, int] | None = None
        self.env_steps_counted = 0  # of sum(env_steps), reported by `step` so far
        # which processes `start` spawns: a Ray sampler node has no learner, the Ray head no
        # rollout or inference worker (`surge.distributed.ray_placement`)
        self.spawn_learners = True
        self.spawn_samplers = True
        self.blocks_per_owner: int | None = None  # see `make_layout`
        # a Ray sampler node's first actor's run-wide id and the run's actors (`ActContext`)
        self.actor_offset, self.run_actors = 0, 0
        self._early: list[Any] = []
        self.errors_seen = RepeatedErrors()  # workers' errors: a repeat is not logged in full again
        self.forked_by: dict[str, int] = {}  # worker process name -> pid of the fork server that forked it
        self.extras: dict[str, ReplaceableExtra] = {}  # `spawn_extra`'s processes with a heartbeat
        self.supervisor = Supervisor(self)

    # ---------------------------------------------------------------------------------------
    def start(self) -> None:
        """Allocates shared buffers and weights, spawns learners, inference and rollout processes,
        and waits until every worker reset its envs (replacing stuck or crashed ones)."""
        cfg = self.cfg
        seed_everything(cfg.seed)
        info = env_info(cfg, with_replay=self.spawn_learners)  # a Ray sampler node holds no replay
        self.num_agents, self.frameskip = info.agents_per_step, info.frameskip
        # the acting module only (the shared weights' layout, frozen policies' weights, a dead
        # learner's final checkpoint); learner-only modules are built in the learner processes
        parts = make_model(cfg, info, torch.device("cpu"))
        self.model = model = parts.acting
        # a checkpoint of another network is refused here, before any process starts (in a
        # learner it would surface only after every worker had started)
        for p, state in enumerate(self.resume_states):
            if state is not None:
                check_policy_state_fits(
                    state, model, parts.learner_modules, f"{self.ckpts[p].name}'s checkpoint"
                )
        del parts
        self.layout = layout = make_layout(cfg, info, acting_state_size(model), self.blocks_per_owner)
        self.algo = layout.algo
        self.block_pool = layout.block_pool
        buffers = layout.buffers.share_memory()
        P = cfg.num_policies
        log.info(
            "Async placement: %d rollout workers x %d envs, %d polic%s x (%s%s); "
            "%d trajectory slots (%.1f MB shared)",
            cfg.num_workers,
            cfg.num_envs_per_worker,
            P,
            "y" if P == 1 else "ies",
            f"{cfg.policy_workers_per_policy} inference worker(s)"
            if cfg.policy_workers_per_policy
            else "inference in the rollout workers",
            ", learner" if self.algo.trains else "",
            self.block_pool.num_slots,
            buffers.nbytes() / 1e6,
        )
        learners = len(learning_policies(cfg)) if self.spawn_learners and self.algo.trains else 0
        note = thread_oversubscription(cfg, learners, os.cpu_count() or 1)
        if note:
            log.warning(note)
        self.ctx = process_context(find_family(cfg.env).preload)  # the workers' (the fork server's)
        self.direct_ctx = direct_context()  # the learners' and extra processes'
        start_fork_server(self.ctx)  # its imports overlap with the learners'
        weights = [SharedWeights(model) for _ in range(P)]
        for shared_weights in weights:  # each learner publishes its own (resumed) weights first
            shared_weights.publish(model, 0)
        self.env_steps = torch.zeros(cfg.num_workers, dtype=torch.int64).share_memory_()
        self.env_steps_budget = torch.full((1,), self._env_steps_budget()).share_memory_()
        num_inference = P * cfg.policy_workers_per_policy
        self.heartbeats = torch.zeros(cfg.num_workers + num_inference, dtype=torch.float64).share_memory_()
        self.inference_generation = torch.zeros(num_inference, dtype=torch.int64).share_memory_()
        self.inference_restarts = torch.zeros(1, dtype=torch.int64).share_memory_()
        self.learner_heartbeats = torch.zeros(P, dtype=torch.float64).share_memory_()
        # written by every child, also those killed at any moment (`surge.runtime.pipe_queue`)
        self.report_queue = PipeQueue(capacity_bytes=REPORT_PIPE_BYTES)
        self.shared = SharedContext(
            cfg.to_dict(),
            info,
            layout.rnn_state_size,
            buffers,
            self.block_pool,
            weights,
            self.env_frames,
            self.env_steps,
            self.env_steps_budget,
            self.heartbeats,
            self.inference_generation,
            self.inference_restarts,
            self.learner_heartbeats,
            self.report_queue,
            StopFlag(),
            self.actor_offset,
            self.run_actors,
            # --deterministic: no rollout acts before the learner's first publish
            LockstepShared.make(model, P) if cfg.deterministic else None,
        )
        # written by the rollout workers, which may be killed at any moment (`surge.runtime.pipe_queue`)
        self.learner_queues = [PipeQueue(codec=BLOCK_CODEC) for _ in range(P)]
        self.command_queues = [PipeQueue() for _ in range(P)]
        # inboxes of the processes that are replaced when they crash: a replacement reads on
        self.request_queues = [
            [PipeQueue(codec=REQUEST_CODEC) for _ in range(cfg.policy_workers_per_policy)] for _ in range(P)
        ]
        self.worker_queues = [PipeQueue(codec=REPLY_CODEC) for _ in range(cfg.num_workers)]

        self.learning = learning_policies(cfg) if self.algo.trains else []
        if self.learning and self.spawn_learners:
            for p in self.learning:  # a frozen policy has no learner (surge.population.roles)
                lctx = LearnerContext(
                    self.shared,
                    p,
                    str(self.ckpts[p].folder),
                    self.resume_states[p] is not None,
                    self.learner_queues[p],
                    self.command_queues[p],
                )
                self._spawn(f"learner_p{p}", learner_process_main, lctx, worker=False)
            ready: set[int] = set()

            def all_ready(msg: Any) -> bool:
                if isinstance(msg, LearnerReady):
                    ready.add(msg.policy_id)
                return len(ready) == len(self.learning)

            self._wait_for(all_ready, timeout=120.0, what="the learners to start")
        if self.spawn_samplers:
            for p in range(P):
                for i in range(cfg.policy_workers_per_policy):
                    self._spawn_inference(p, i)
            for w in range(cfg.num_workers):
                self._spawn_worker(w)
            self.supervisor.await_first_resets()
        self.supervising = True

    def _spawn(
        self, name: str, fn: Callable[[Any], None], context: Any, daemon: bool = True, worker: bool = True
    ) -> None:
        # rollout workers are not daemonic: their envs may start processes of their own (a Doom
        # match runs one game per agent, gymnasium's AsyncVectorEnv one per env); stop() joins
        # or kills every process either way, and PR_SET_PDEATHSIG covers a killed main process:
        # `child_main` sets it before the child imports torch or unpickles `context`.
        # A process whose death ends the run (not `worker`) is spawned directly (module docstring).
        ctx = self.ctx if worker else self.direct_ctx
        p = ctx.Process(
            target=child_main, args=(ChildTask(fn, context),), name=f"surge-{name}", daemon=daemon
        )
        with children_skip_an_unreadable_main():  # `python -` names its main "<stdin>": no file to run
            p.start()
        self.procs[name] = p
        server = fork_server_pid() if worker and ctx is self.ctx else None
        if server is not None:
            self.forked_by[name] = server
        self.spawned_at[name] = time.monotonic()
        log.info("Started process %s (pid %d)", name, p.pid)

    def spawn_extra(
        self,
        name: str,
        fn: Callable[[Any], None],
        context: Any,
        heartbeat: torch.Tensor | None = None,
        replacement_context: Any = None,
    ) -> None:
        """Starts a process of another role (the evaluator, `surge.evaluation.eval_process`):
        `fn(context)` in a child that dies with this process (not daemonic: its env may start
        processes of its own), stopped by `close` (it must leave its loop once `shared.stop_flag`
        is set, or it is killed after `JOIN_TIMEOUT_SEC`). Without `heartbeat` its exit or crash
        ends the run; with one it is replaced as a worker is (`supervision.ReplaceableExtra`: its
        replacements run `fn(replacement_context)`, by default `context`)."""
        if heartbeat is not None:
            again = context if replacement_context is None else replacement_context
            self.extras[name] = ReplaceableExtra(fn, again, heartbeat)
        self._spawn(name, fn, context, daemon=False, worker=False)

    def _spawn_inference(self, p: int, i: int) -> None:
        ictx = InferenceContext(self.shared, p, i, self.request_queues[p][i], self.worker_queues)
        self._spawn(f"inference_p{p}_{i}", inference_process_main, ictx)

    def _spawn_worker(self, w: int) -> None:
        """Starts rollout worker `w`, or a replacement: each process for index `w` has its own
        incarnation number, so messages of the one it replaces are told apart."""
        cfg = self.cfg
        self.incarnations[w] = self.incarnations.get(w, -1) + 1
        for s in range(cfg.worker_num_splits):  # a replacement starts with the blocks it was filling free
            self.block_pool.reset_owner(w * cfg.worker_num_splits + s)
        rctx = RolloutContext(
            self.shared,
            w,
            self.incarnations[w],
            self.request_queues,
            self.worker_queues[w],
            self.learner_queues,
            # a replacement worker starts with them (it drains its inbox when it starts: a scheme
            # sent between its spawn and that drain is lost until the next one)
            dict(self.reward_shaping),
        )
        self._spawn(f"rollout_{w}", rollout_process_main, rctx, daemon=False)

    # ---------------------------------------------------------------------------------------
    def _drain(self, timeout: float) -> list[Any]:
        try:
            return self.report_queue.get_many(timeout=timeout)
        except Empty:
            return []

    def _wait_for(self, match: Callable[[Any], bool], timeout: float, what: str) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for msg in self._drain(timeout=0.2):
                if isinstance(msg, ChildError):
                    raise ChildProcessFailed(f"{msg.name} crashed:\n{msg.traceback}")
                if match(msg):
                    return
            self.supervisor.check_exits()
        raise ChildProcessFailed(f"timed out after {timeout:.0f} s waiting for {what}")

    def step(self) -> StepReport:
        """Collects the children's reports for up to 0.1 s; the env steps are the workers' shared
        counters' growth since the last call (exact, not lagging behind reports).

        Raises:
            ChildProcessFailed: a child crashed (its traceback in the message) or exited.
        """
        report = StepReport()
        msgs = self._early + self._drain(timeout=STEP_POLL_SEC)
        self._early = []
        total = int(self.env_steps.sum())
        report.env_steps, self.env_steps_counted = total - self.env_steps_counted, total
        for msg in msgs:
            if isinstance(msg, Episodes):
                report.episodes += [EpisodeStats(*e) for e in msg.episodes]
            elif isinstance(msg, NonFiniteEnvOutput):
                report.nonfinite_rewards += msg.rewards
                report.nonfinite_obs += msg.observations
            elif isinstance(msg, EnvFaults):
                report.env_faults += msg.faults
                report.last_env_fault = msg.last
            elif isinstance(msg, TrainStats):
                report.train_stats[msg.policy_id] = msg.stats
            elif isinstance(msg, DataParallelStopped):
                report.data_parallel_stopped = True
            elif isinstance(msg, (Saved, SaveRefused)):
                self._on_save(msg)
            elif isinstance(msg, PolicyExported):
                self.commands.on_exported(msg)
            elif isinstance(msg, PolicyImported):
                self.commands.on_imported(msg)
            elif isinstance(msg, ChildError):
                self.supervisor.on_crash(msg)
        self.supervisor.check()
        report.worker_restarts = self.supervisor.pop_restarts()
        return report

    def set_env_frames(self, env_frames: int) -> None:
        self.env_frames[0] = env_frames

    # ---------------------------------------------------------------------------------------
    def send_command(self, cmd: Command) -> None:
        """Sends `cmd` to the learner processes (see `Placement.send_command` and `CommandRelay.send`).

        Raises:
            ValueError: see `check_command`; or the run does not train (no learners).
        """
        self.commands.send(cmd)

    def set_policy_weights(
        self, policy_id: int, state_dict: dict[str, torch.Tensor], policy_version: int
    ) -> None:
        """See `CommandRelay.set_policy_weights`."""
        self.commands.set_policy_weights(policy_id, state_dict, policy_version)

    def policy_weights(self, policy_id: int) -> tuple[dict[str, torch.Tensor], int]:
        """See `CommandRelay.policy_weights`."""
        return self.commands.policy_weights(policy_id)

    @property
    def replaced(self) -> list[PolicyImported]:
        """The `ReplacePolicy` imports done (`CommandRelay.replaced`)."""
        return self.commands.replaced

    @property
    def exchange_dir(self) -> str | None:
        """The folder of the exported states (`CommandRelay.exchange_dir`)."""
        return self.commands.exchange_dir

    def limit_env_frames(self, env_frames: int) -> None:
        """The rollout workers step no more once they took `env_frames` more env frames in all
        (rounded up to whole env steps). Before `start`, the limit is in the shared budget from
        the workers' first step."""
        self.env_frames_limit = (self.env_steps_counted, max(0, env_frames))
        if hasattr(self, "env_steps_budget"):
            self.env_steps_budget[0] = self._env_steps_budget()

    def _env_steps_budget(self) -> int:
        """The workers' total env steps at which they stop (int64's maximum: no limit set)."""
        if self.env_frames_limit is None:
            return torch.iinfo(torch.int64).max
        counted, frames = self.env_frames_limit
        return counted + math.ceil(frames / self.frameskip)

    def set_progress(self, fn: Callable[[], None]) -> None:
        """Nothing to do: the learners train in their own processes, and `step` returns often."""

    def interrupt(self) -> None:
        """Nothing to do at the signal: `close` sets the stop event first, which the learners poll
        between optimizer steps (and the rollout and inference workers in their loops)."""

    def save(self, kind: str, counters: dict[str, Any], policy_id: int | None = None) -> None:
        """Asks the learners (or policy `policy_id`'s) to write a checkpoint (asynchronously; the
        final one is awaited in close). Kind "final" is a regular checkpoint for which a learner
        skips batches it has not started. Before the final one, replacements in flight are completed
        (`ReplacePolicy`), so the checkpoints hold what PBT's state says."""
        if kind == "final":
            self.commands.finish(timeout=REPLACE_TIMEOUT_SEC)
        for p in range(self.cfg.num_policies):
            if policy_id is not None and p != policy_id:
                continue
            learner = self.procs.get(f"learner_p{p}")
            if learner is not None and learner.is_alive():
                self.command_queues[p].put(SaveCommand(kind, counters))
            elif learner is not None and kind == "final":
                self._save_published(p, counters)

    def _on_save(self, msg: Saved | SaveRefused) -> None:
        """A learner's report of a checkpoint: logged, and kept in `final_written` / `save_refusals`."""
        if isinstance(msg, Saved):
            # a best checkpoint is rewritten while the return climbs: its first is announced once
            # at info by `BestCheckpoints`, the rest are debug (Sample Factory logs them so too)
            (log.debug if msg.kind == "best" else log.info)("Saved %s", msg.path)
            if msg.kind == "final":
                self.final_written.add(msg.policy_id)
            self.checkpoints_written[msg.policy_id] += msg.kind in ("checkpoint", "final")  # regular ones
            return
        log.error(
            "Policy %d: %s checkpoint not written: %s; the previous checkpoint stays the latest.",
            msg.policy_id, msg.kind, msg.reason,
        )  # fmt: skip
        self.save_refusals.append(msg)

    def _save_published(self, p: int, counters: dict[str, Any]) -> None:
        """The final checkpoint of policy `p` whose learner died (`save_published`)."""
        result = save_published(self.cfg, p, self.shared.weights[p], self.ckpts[p], self.model, counters)
        if isinstance(result, SaveRefused):
            self.save_refusals.append(result)
        elif result:
            self.final_written.add(p)
            self.checkpoints_written[p] += 1

    def close(self) -> StepReport:
        """Stops every child within a bounded time: the learners finish pending commands (the last
        checkpoint) and exit; workers and inference leave their loops; stragglers are killed.
        Returns the episodes reported after the last `step` (`Placement.close`)."""
        self.stopping = True
        late = StepReport()
        if not self.procs:
            return late
        self.shared.stop_flag.set()
        learners = [(p, self.procs.get(f"learner_p{p}")) for p in range(self.cfg.num_policies)]
        for p, learner in learners:
            if learner is not None and learner.is_alive():
                self.command_queues[p].put(StopCommand())
        deadline = time.time() + LEARNER_STOP_TIMEOUT_SEC
        for _, learner in learners:  # each finishes the batch in training, then saves
            if learner is not None:
                learner.join(max(0.1, deadline - time.time()))
        deadline = time.time() + JOIN_TIMEOUT_SEC
        for p in self.procs.values():
            p.join(max(0.1, deadline - time.time()))
        for name, p in self.procs.items():
            if p.is_alive():
                log.warning("Process %s did not exit in time: killing it", name)
                p.kill()
                p.join(5)
        early, self._early = getattr(self, "_early", []), []
        # every report left, not one read's worth: a read returns what fits its buffer, and a
        # learner's final `Saved` behind many `TrainStats` was once left unread (the run then
        # failed for a final checkpoint that had been written)
        left: list[Any] = []
        while got := self._drain(timeout=0.05):
            left += got
        for msg in early + left:
            if isinstance(msg, Episodes):
                late.episodes += [EpisodeStats(*e) for e in msg.episodes]
            elif isinstance(msg, TrainStats):
                log_train_notes(msg.policy_id, msg.stats)
            elif isinstance(msg, (Saved, SaveRefused)):
                self._on_save(msg)
            elif isinstance(msg, ChildError):
                log.error("%s crashed:\n%s", msg.name, msg.traceback)
        self.procs.clear()
        self.commands.close()
        return late
