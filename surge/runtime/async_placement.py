"""The async placement (APPO, `--serial_mode=False`): rollout workers, inference workers and one
learner per policy in their own processes over trajectory buffers in shared memory.

The main process only supervises: it collects reports (env steps, episodes, learner statistics),
asks the learners for checkpoints, and stops every child within a bounded time. Children die with
the main process even when it is killed (PR_SET_PDEATHSIG). Shared tensors use torch's
file-descriptor strategy, so no /dev/shm file outlives the processes. The components are the same
objects the serial placement builds (`surge.runtime.components`), each made inside its process.

Supervision. A rollout or inference worker that crashes, exits, or shows no heartbeat for
`--heartbeat_timeout_sec` is killed and replaced, at start-up (a stuck first reset, as Sample
Factory's `init_subset`) and at any time after, within `--max_worker_restarts_per_hour`:
- a rollout worker's replacement gets the slots its predecessor was filling (their partial
  trajectories are discarded, at most one rollout per split) and the current weights through
  inference; its env-step counter goes on, so no frame is counted twice;
- when an inference worker is replaced, its rollout workers send the requests it had not answered
  again (`surge.runtime.rollout_process`).
Rollout and inference workers are forked by multiprocessing's fork server (`child_start`), which
they die with: a fork server killed alone (kill -9) costs its workers, found dead (exit code 255,
the status the server can no longer report) and replaced as any dead worker, all of them counted
as one restart; the next spawn starts a new server. The learners and extra processes (the
evaluator), whose death would end the run, are spawned directly by the main process instead, so
they do not depend on the server.

A learner that dies ends the run: the main process then writes the final checkpoint itself, from
the weights the learner last published in shared memory, and says so. So does a hung learner, which
the main process kills first: one that showed no sign of life for `--heartbeat_timeout_sec` (a
learner's signs: a poll of its queues while it waits for experience, an optimizer step, starting
or finishing a batch or a checkpoint).
"""

from __future__ import annotations

import logging
import math
import os
import time
from collections import deque
from collections.abc import Callable
from queue import Empty
from typing import Any

import torch

from surge.cfg.config import Config
from surge.cfg.policy_roles import learning_policies
from surge.errors import ChildProcessFailed
from surge.experiment.checkpoint import CheckpointManager, rng_state
from surge.experiment.monitor import log_train_notes
from surge.learning.algorithm import acting_state_size
from surge.population.commands import Command, ReplacePolicy, SetRewardShaping
from surge.runtime.child_start import (
    ChildTask,
    child_exited,
    child_main,
    direct_context,
    fork_server_pid,
    process_context,
    start_fork_server,
)
from surge.runtime.components import env_info, make_layout, make_model, seed_everything
from surge.runtime.inference_process import inference_process_main
from surge.runtime.learner_process import learner_process_main
from surge.runtime.main_module import children_skip_an_unreadable_main
from surge.runtime.messages import (
    ChildError,
    DataParallelStopped,
    EnvFaults,
    Episodes,
    ExportPolicy,
    ImportPolicy,
    LearnerReady,
    NonFiniteEnvOutput,
    PolicyExported,
    PolicyImported,
    ResetDone,
    SaveCommand,
    Saved,
    SaveRefused,
    StopCommand,
    TrainStats,
)
from surge.runtime.pipe_queue import PipeQueue
from surge.runtime.placement import StepReport, check_command, check_policy_state_fits, published_policy_state
from surge.runtime.process_context import InferenceContext, LearnerContext, RolloutContext, SharedContext
from surge.runtime.process_setup import dump_stack
from surge.runtime.repeated_errors import RepeatedErrors, exception_text
from surge.runtime.rollout_process import rollout_process_main
from surge.runtime.shared_state import SharedWeights
from surge.runtime.stop_flag import StopFlag
from surge.sampling.rollout_worker import EpisodeStats

log = logging.getLogger("surge")

JOIN_TIMEOUT_SEC = 10.0
LEARNER_STOP_TIMEOUT_SEC = 300.0
#: the report queue's pipe: about 10 s of a fast learner's statistics while the main process is busy
REPORT_PIPE_BYTES = 1 << 20
REPLACE_TIMEOUT_SEC = 60.0  # the final checkpoint waits this long for replacements in flight
STEP_POLL_SEC = 0.1  # the main loop's period while no report arrives (the budget and stop checks)
RESTART_WINDOW_SEC = 3600.0  # --max_worker_restarts_per_hour counts replacements in this window


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
        self.restart_times: deque[float] = deque()  # time.monotonic() of each replacement
        self.restarts_to_report = 0
        self.stopping = False
        self.supervising = False  # after the start-up: replace crashed or hung workers
        self.final_written: set[int] = set()  # see `Placement`
        self.save_refusals: list[SaveRefused] = []
        # ReplacePolicy in flight: export file -> (replaced policy, source policy); commands to a
        # policy being replaced wait until its import is sent, so they apply after it, in order
        self.exports: dict[str, tuple[int, int]] = {}
        self.held: dict[int, list[Any]] = {}
        self.exchange_dir: str | None = None  # temporary folder of the exported states
        self.replaced: list[PolicyImported] = []  # imports done since the last `step`
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
        self.lost_servers: set[int] = set()  # fork servers found dead (each charged one restart)

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
        self.ctx = process_context()  # the workers' (the fork server's where there is one)
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
        )
        # written by the rollout workers, which may be killed at any moment (`surge.runtime.pipe_queue`)
        self.learner_queues = [PipeQueue() for _ in range(P)]
        self.command_queues = [PipeQueue() for _ in range(P)]
        # inboxes of the processes that are replaced when they crash: a replacement reads on
        self.request_queues = [[PipeQueue() for _ in range(cfg.policy_workers_per_policy)] for _ in range(P)]
        self.worker_queues = [PipeQueue() for _ in range(cfg.num_workers)]

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
            self._init_workers()
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

    def spawn_extra(self, name: str, fn: Callable[[Any], None], context: Any) -> None:
        """Starts a process of another role (the evaluator of `surge.evaluation.eval_process`):
        `fn(context)` in a child that dies with this process (not daemonic: its env may start
        processes of its own, as a rollout worker's may); supervised as a learner is (its exit or
        crash ends the run), stopped by `close` (it must leave its loop once `shared.stop_flag`
        is set, or it is killed after `JOIN_TIMEOUT_SEC`)."""
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

    def _init_workers(self) -> None:
        """Waits for every worker's first reset; replaces a worker stuck or crashed in it."""
        cfg = self.cfg
        started = {w: time.time() for w in range(cfg.num_workers)}
        done: set[int] = set()
        retries = 0
        self._early = []
        while len(done) < cfg.num_workers:
            for msg in self._drain(timeout=0.5):
                if isinstance(msg, ResetDone):
                    if msg.incarnation == self.incarnations[msg.worker_idx]:  # not from a replaced process
                        done.add(msg.worker_idx)
                elif isinstance(msg, ChildError) and msg.name.startswith("rollout worker"):
                    first = self.errors_seen.first_raised_by(msg.name, msg.traceback)
                    if first is not None:  # deterministic: replacing the worker again repeats it
                        raise ChildProcessFailed(
                            f"{msg.name} failed in its first reset with the same error as "
                            f"{'its previous process' if first == msg.name else first} (traceback "
                            f"above): {exception_text(msg.traceback)}\nAn error that recurs in another "
                            "process is the env's, not chance. `surge check-env "
                            f"--env={cfg.env}` reproduces it in one process."
                        )
                    log.error(
                        "%s failed during its first reset (it is replaced; the same error again "
                        "stops the run):\n%s",
                        msg.name,
                        msg.traceback,
                    )
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

    def _wait_for(self, match: Callable[[Any], bool], timeout: float, what: str) -> None:
        deadline = time.time() + timeout
        while time.time() < deadline:
            for msg in self._drain(timeout=0.2):
                if isinstance(msg, ChildError):
                    raise ChildProcessFailed(f"{msg.name} crashed:\n{msg.traceback}")
                if match(msg):
                    return
            self._check_children()
        raise ChildProcessFailed(f"timed out after {timeout:.0f} s waiting for {what}")

    def _check_children(self, allow_rollout_deaths: bool = False) -> None:
        if self.stopping:
            return
        for name, p in self.procs.items():
            if not p.is_alive() and not (allow_rollout_deaths and name.startswith("rollout_")):
                tb = ""
                for msg in self._drain(timeout=0.5):
                    if isinstance(msg, ChildError):
                        tb += f"\n{msg.name}:\n{msg.traceback}"
                raise ChildProcessFailed(f"process {name} exited with code {p.exitcode}{tb}")

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
                self._on_exported(msg)
            elif isinstance(msg, PolicyImported):
                self._on_imported(msg)
            elif isinstance(msg, ChildError):
                if not msg.name.startswith(("rollout worker", "inference worker")):
                    raise ChildProcessFailed(f"{msg.name} crashed:\n{msg.traceback}")
                if self.errors_seen.first_raised_by(msg.name, msg.traceback) is None:
                    log.error("%s crashed (it will be replaced):\n%s", msg.name, msg.traceback)
                else:  # a fault that recurs now and then is tolerated; its traceback is above
                    error = exception_text(msg.traceback).splitlines()[-1]
                    log.error(
                        "%s crashed with an error seen before (it will be replaced): %s", msg.name, error
                    )
        self._supervise()
        report.worker_restarts, self.restarts_to_report = self.restarts_to_report, 0
        return report

    # ---------------------------------------------------------------------------------------
    def _supervise(self) -> None:
        """Replaces rollout and inference workers that died or hung (see the module docstring);
        any other dead child ends the run.

        Raises:
            ChildProcessFailed: a learner exited or hung (it is killed), or the restart budget is
                spent.
        """
        if self.stopping:
            return
        cfg, now = self.cfg, time.monotonic()
        beats = self.heartbeats.numpy()
        for name, proc in list(self.procs.items()):
            if name.startswith("rollout_"):
                index = int(name.rsplit("_", 1)[1])
                start_grace = float(cfg.reset_timeout_seconds + cfg.decorrelate_experience_max_seconds)
            elif name.startswith("inference_"):
                p, i = (int(x) for x in name[len("inference_p") :].split("_"))
                index = cfg.num_workers + self.shared.inference_index(p, i)
                start_grace = max(cfg.heartbeat_timeout_sec, 120.0)  # imports and the model build
            else:
                if not proc.is_alive():
                    raise ChildProcessFailed(f"process {name} exited with code {proc.exitcode}")
                if name.startswith("learner_p"):  # not an extra process (`spawn_extra`)
                    self._check_learner_progress(name, proc, now)
                continue
            beat, started = float(beats[index]), self.spawned_at[name]
            charge = True
            if not proc.is_alive():
                problem = f"exited with code {proc.exitcode}"
                server = self.forked_by.get(name)
                if server is not None and (server in self.lost_servers or child_exited(server)):
                    problem = f"died with the fork server (pid {server}) that forked it"
                    charge = server not in self.lost_servers  # the first of its workers only
                    if charge:
                        log.warning(
                            "The fork server (pid %d) died: the workers it forked died with it and are "
                            "replaced (one restart), from a new server",
                            server,
                        )
                    self.lost_servers.add(server)
            elif beat < started and now - started > start_grace:
                problem = f"gave no sign of life in the {now - started:.0f} s since it started"
            elif beat >= started and now - beat > cfg.heartbeat_timeout_sec:
                problem = f"hung: no heartbeat for {now - beat:.0f} s (--heartbeat_timeout_sec)"
            else:
                continue
            self._replace(name, problem, charge)

    def _check_learner_progress(self, name: str, proc: Any, now: float) -> None:
        """Kills learner `name` when it showed no sign of life (see the module docstring) for longer
        than `--heartbeat_timeout_sec` since it entered its loop.

        Raises:
            ChildProcessFailed: it hung (the caller's stop then writes its final checkpoint from
                its published weights).
        """
        p = int(name[len("learner_p") :])
        beat = float(self.learner_heartbeats[p])  # 0 until its loop starts (start-up is awaited)
        if beat <= 0.0 or now - beat <= self.cfg.heartbeat_timeout_sec:
            return
        dump_stack(proc)  # where it hung, in the run's log
        proc.kill()
        proc.join(5)
        raise ChildProcessFailed(
            f"process {name} hung: no optimizer step, no finished batch or checkpoint and no "
            f"poll of its queues for {now - beat:.0f} s (--heartbeat_timeout_sec={self.cfg.heartbeat_timeout_sec:g}); it "
            "was killed after writing its Python stack to the run's log. Raise --heartbeat_timeout_sec if one optimizer step or checkpoint write "
            "of this model takes that long."
        )

    def _replace(self, name: str, problem: str, charge: bool = True) -> None:
        """Kills process `name` (if alive) and starts its replacement, within the restart budget
        (a replacement not `charge`d is part of a restart already counted: a dead fork server's)."""
        cfg, now = self.cfg, time.monotonic()
        while self.restart_times and now - self.restart_times[0] > RESTART_WINDOW_SEC:
            self.restart_times.popleft()
        if charge and len(self.restart_times) >= cfg.max_worker_restarts_per_hour:
            raise ChildProcessFailed(
                f"process {name} {problem}, and {len(self.restart_times)} workers were already replaced "
                f"within the last hour (--max_worker_restarts_per_hour={cfg.max_worker_restarts_per_hour}); "
                "stopping. Look for the cause in the tracebacks above; raise the budget to keep "
                "going through it."
            )
        if charge:
            self.restart_times.append(now)
        self.restarts_to_report += 1
        log.warning(
            "Process %s %s: replacing it (%d replaced in the last hour)",
            name,
            problem,
            len(self.restart_times),
        )
        proc = self.procs[name]
        if problem.startswith("hung") and dump_stack(proc):
            log.warning("Process %s: its Python stack when it was found hung is in the run's log above", name)
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        if name.startswith("rollout_"):
            w, splits, pool = int(name.rsplit("_", 1)[1]), cfg.worker_num_splits, self.block_pool
            lo, hi = pool.owner_slots(w * splits).start, pool.owner_slots((w + 1) * splits - 1).stop
            filling = int(pool.held[lo:hi, -1].sum())  # slots its splits were filling
            log.info(
                "Rollout worker %d's %d partial rollout(s) are discarded (at most %d agent steps)",
                w,
                filling // pool.block_size,
                filling * cfg.rollout,
            )
            self._spawn_worker(w)
            return
        p, i = (int(x) for x in name[len("inference_p") :].split("_"))
        # after the old process is gone, so it cannot answer the requests sent again
        self.inference_generation[self.shared.inference_index(p, i)] += 1
        self.inference_restarts[0] += 1
        self._spawn_inference(p, i)

    def set_env_frames(self, env_frames: int) -> None:
        self.env_frames[0] = env_frames

    # ---------------------------------------------------------------------------------------
    def send_command(self, cmd: Command) -> None:
        """Sends `cmd` to the learner processes (see `Placement.send_command`). `ReplacePolicy(p,
        src)` asks learner `src` to export its state to a file, and once it reported it, learner
        `p` to import it; commands to `p` sent meanwhile follow the import.

        Raises:
            ValueError: see `check_command`; or the run does not train (no learners).
        """
        check_command(cmd, self.cfg.num_policies, self.learning)
        if isinstance(cmd, SetRewardShaping):  # to the rollout workers, and to any started later
            self.reward_shaping[cmd.policy_id] = cmd.scheme
            for q in self.worker_queues:
                q.put(cmd)
            return
        if not self.algo.trains:
            raise ValueError(f"{type(cmd).__name__}: --algo={self.cfg.algo} has no learners to command")
        p = cmd.policy_id
        if p in self.held:  # a replacement of p is in flight
            self.held[p].append(cmd)
            return
        if not isinstance(cmd, ReplacePolicy):
            self.command_queues[p].put(cmd)
            return
        if self.exchange_dir is None:
            import tempfile

            self.exchange_dir = tempfile.mkdtemp(prefix="surge_replace_")
        path = f"{self.exchange_dir}/p{cmd.source_policy_id}_to_p{p}_{len(self.exports)}_{time.monotonic_ns()}.pth"
        self.exports[path] = (p, cmd.source_policy_id)
        self.held[p] = []
        self.command_queues[cmd.source_policy_id].put(ExportPolicy(path))

    def _finish_replacements(self, timeout: float) -> None:
        """Waits up to `timeout` s for the exports of the replacements in flight and sends their
        imports (and the commands held behind them); other reports are kept for the next `step`."""
        deadline = time.time() + timeout
        while self.exports and time.time() < deadline:
            for msg in self._drain(timeout=0.1):
                if isinstance(msg, PolicyExported):
                    self._on_exported(msg)
                else:
                    self._early.append(msg)
        if self.exports:
            log.warning(
                "Replacements not done at the stop (the source's learner did not export its state within %.0f s): %s",
                timeout,
                ", ".join(f"policy {p} by {src}" for p, src in self.exports.values()),
            )

    def _on_exported(self, msg: PolicyExported) -> None:
        p, src = self.exports.pop(msg.path)
        self.command_queues[p].put(ImportPolicy(msg.path, src))
        for cmd in self.held.pop(p, []):
            self.send_command(cmd)

    def _on_imported(self, msg: PolicyImported) -> None:
        log.info(
            "Policy %d now plays with policy %d's weights (policy version %d)",
            msg.policy_id,
            msg.source_policy_id,
            msg.policy_version,
        )
        self.replaced.append(msg)

    def set_policy_weights(
        self, policy_id: int, state_dict: dict[str, torch.Tensor], policy_version: int
    ) -> None:
        """Publishes `state_dict` as frozen policy `policy_id`'s weights in shared memory, stamped
        `policy_version`; its inference workers load them before their next batch (they reload on
        every publish, even one with the same version).

        Raises:
            ValueError: the policy learns (its learner owns its weights), or the id is out of range.
        """
        if not 0 <= policy_id < self.cfg.num_policies:
            raise ValueError(f"no policy {policy_id}")
        if policy_id in self.learning:
            raise ValueError(f"policy {policy_id} learns: only a frozen policy's weights are set by the run")
        self.model.load_state_dict(state_dict)
        self.shared.weights[policy_id].publish(self.model, int(policy_version))

    def policy_weights(self, policy_id: int) -> tuple[dict[str, torch.Tensor], int]:
        """Policy `policy_id`'s weights as last published in shared memory (a learner publishes
        after each training iteration) and their policy_version; non-float buffers are the
        layout's initial ones (they are not shared).

        Raises:
            ValueError: the id is out of range.
            ChildProcessFailed: no consistent copy could be read within 1 s (a writer died mid-write).
        """
        if not 0 <= policy_id < self.cfg.num_policies:
            raise ValueError(f"no policy {policy_id}")
        version = self.shared.weights[policy_id].load_into(self.model)
        if version is None:
            raise ChildProcessFailed(f"policy {policy_id}'s shared weights could not be read consistently")
        return {k: v.detach().clone() for k, v in self.model.state_dict().items()}, version

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
            self._finish_replacements(timeout=REPLACE_TIMEOUT_SEC)
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
            return
        log.error(
            "Policy %d: %s checkpoint not written: %s; the previous checkpoint stays the latest.",
            msg.policy_id,
            msg.kind,
            msg.reason,
        )
        self.save_refusals.append(msg)

    def _save_published(self, p: int, counters: dict[str, Any]) -> None:
        """The final checkpoint of policy `p` whose learner died: the weights it last published in
        shared memory (what inference acted with), with the learner state (optimizers,
        hyper-parameters) and learner modules of its latest checkpoint (none when there is none:
        a resumed learner then starts them fresh). No learner is built in this process, so no
        optimizer, learner module or replay buffer is allocated here. Logs what was written, or why
        nothing was."""
        weights, ckpt = self.shared.weights[p], self.ckpts[p]
        loaded = weights.load_into(self.model) if weights.read_version() > 0 else None
        if loaded is None:
            log.error(
                "Learner %d died %s: no final checkpoint; %s stays the latest.",
                p,
                "before publishing any update"
                if weights.read_version() == 0
                else "while publishing its weights",
                ckpt.latest() or "none",
            )
            return
        previous = ckpt.load("latest")
        state = published_policy_state(self.cfg, p, self.model.state_dict(), loaded, previous)
        path = ckpt.save({**state, **counters, "rng": rng_state()}, loaded, counters["env_frames"])
        if path is None:  # CheckpointManager logged why
            self.save_refusals.append(SaveRefused(p, "final", ckpt.last_refusal, int(counters["env_frames"])))
        else:
            self.final_written.add(p)
            log.warning(
                "Learner %d died: wrote the final checkpoint %s from the weights it last published "
                "(policy version %d, env frame %d), with the optimizer state of %s.",
                p,
                path,
                loaded,
                counters["env_frames"],
                f"policy version {int(previous['learner']['policy_version'])}'s checkpoint"
                if previous is not None
                else "a fresh optimizer (no earlier checkpoint)",
            )

    def close(self) -> None:
        """Stops every child within a bounded time: the learners finish pending commands (the last
        checkpoint) and exit; workers and inference leave their loops; stragglers are killed."""
        self.stopping = True
        if not self.procs:
            return
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
            if isinstance(msg, TrainStats):
                log_train_notes(msg.policy_id, msg.stats)
            elif isinstance(msg, (Saved, SaveRefused)):
                self._on_save(msg)
            elif isinstance(msg, ChildError):
                log.error("%s crashed:\n%s", msg.name, msg.traceback)
        self.procs.clear()
        if self.exchange_dir is not None:
            import shutil

            shutil.rmtree(self.exchange_dir, ignore_errors=True)


def thread_oversubscription(cfg: Config, num_learners: int, cores: int) -> str | None:
    """The run's-log warning when the async placement's model processes together ask for more
    torch threads than the machine has cores, else None. Each learner runs `--num_torch_threads`
    threads (0: torch's count, one per core), each inference worker `--num_torch_threads` (0: 1);
    an OpenMP thread that waits for a time slice stalls every small operation of its process
    (docs/threads.md)."""
    learner = cfg.num_torch_threads or cores
    inference = cfg.num_torch_threads or 1
    workers = cfg.num_policies * cfg.policy_workers_per_policy
    if learner == 1 and inference == 1:  # one thread each never waits for a sibling thread
        return None
    total = num_learners * learner + workers * inference
    if total <= cores:
        return None
    return (
        f"--num_torch_threads={cfg.num_torch_threads}: {num_learners} learner(s) x {learner} + {workers} "
        f"inference worker(s) x {inference} torch threads on {cores} cores, besides the rollout "
        "workers; processes whose threads wait for each other's time slices can run many times "
        "slower. Pass --num_torch_threads=1 (the default) unless docs/threads.md says otherwise."
    )
