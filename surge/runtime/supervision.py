"""Supervision of the async placement's processes (`surge.runtime.async_placement`).

A rollout or inference worker that crashes, exits, or shows no heartbeat for
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

An extra process spawned with a heartbeat (the evaluator, `AsyncPlacement.spawn_extra`) is
supervised as a worker: one that crashes, exits or shows no sign of life for
`--heartbeat_timeout_sec` (after `EXTRA_START_GRACE_SEC` for its start) is killed and started again,
charged to the same restart budget; the evaluation it was playing is lost (the main process
requests the next when it falls due: `surge.evaluation.train_eval`).

A learner that dies ends the run: the main process then writes the final checkpoint itself, from
the weights the learner last published in shared memory, and says so. So does a hung learner, which
the main process kills first: one that showed no sign of life for `--heartbeat_timeout_sec` (a
learner's signs: a poll of its queues while it waits for experience, an optimizer step, starting
or finishing a batch or a checkpoint).
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from torch import Tensor

from surge.errors import ChildProcessFailed
from surge.runtime.child_start import child_exited
from surge.runtime.messages import ChildError, ResetDone
from surge.runtime.process_setup import dump_stack
from surge.runtime.repeated_errors import exception_text

if TYPE_CHECKING:  # the placement owns its supervisor: a type only, no import circle
    from surge.runtime.async_placement import AsyncPlacement

log = logging.getLogger("surge")

RESTART_WINDOW_SEC = 3600.0  # --max_worker_restarts_per_hour counts replacements in this window
#: an extra process's first sign of life may come this long after its start: at the lowest
#: priority (`process_setup.NICENESS_OFFSET`) on a loaded machine its imports and its env's build
#: take minutes; never less than `--heartbeat_timeout_sec`
EXTRA_START_GRACE_SEC = 300.0


@dataclass
class ReplaceableExtra:
    """An extra process supervised as a worker (`AsyncPlacement.spawn_extra` with a heartbeat).

    Attributes:
        fn, context: what its replacements run (`fn(context)`).
        heartbeat: `[1]` float64 in shared memory, the `time.monotonic()` of its latest sign of
            life (0 until its loop starts).
        incarnation: processes started for it after the first (its replacements so far).
    """

    fn: Callable[[Any], None]
    context: Any
    heartbeat: Tensor
    incarnation: int = 0


class Supervisor:
    """Watches the processes of an `AsyncPlacement` (its `procs`, heartbeats and start times) and
    replaces rollout and inference workers and extra processes with a heartbeat that died or hung,
    within the restart budget.

    Args:
        placement: the placement whose processes are supervised (it spawns the replacements).
    """

    def __init__(self, placement: AsyncPlacement):
        self.placement = placement
        self.restart_times: deque[float] = deque()  # time.monotonic() of each replacement
        self.restarts_to_report = 0  # replacements since the last `pop_restarts`
        self.lost_servers: set[int] = set()  # fork servers found dead (each charged one restart)

    def pop_restarts(self) -> int:
        """The replacements made since the last call."""
        n, self.restarts_to_report = self.restarts_to_report, 0
        return n

    def await_first_resets(self) -> None:
        """Waits for every worker's first reset; replaces a worker stuck or crashed in it."""
        placement = self.placement
        cfg = placement.cfg
        started = {w: time.time() for w in range(cfg.num_workers)}
        done: set[int] = set()
        retries = 0
        placement._early = []
        while len(done) < cfg.num_workers:
            for msg in placement._drain(timeout=0.5):
                if isinstance(msg, ResetDone):
                    if (
                        msg.incarnation == placement.incarnations[msg.worker_idx]
                    ):  # not from a replaced process
                        done.add(msg.worker_idx)
                elif isinstance(msg, ChildError) and msg.name.startswith("rollout worker"):
                    first = placement.errors_seen.first_raised_by(msg.name, msg.traceback)
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
                    placement._early.append(msg)
            self.check_exits(allow_rollout_deaths=True)
            for w in range(cfg.num_workers):
                p = placement.procs[f"rollout_{w}"]
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
                    placement._spawn_worker(w)
                    started[w] = time.time()
        log.info("All %d rollout workers reset their envs", cfg.num_workers)

    def check_exits(self, allow_rollout_deaths: bool = False) -> None:
        """Ends the run when a child exited (before supervision replaces workers: the start-up).

        Raises:
            ChildProcessFailed: a child exited (with the tracebacks reported meanwhile); rollout
                workers excepted with `allow_rollout_deaths` (their first reset is retried).
        """
        if self.placement.stopping:
            return
        for name, p in self.placement.procs.items():
            if not p.is_alive() and not (allow_rollout_deaths and name.startswith("rollout_")):
                tb = ""
                for msg in self.placement._drain(timeout=0.5):
                    if isinstance(msg, ChildError):
                        tb += f"\n{msg.name}:\n{msg.traceback}"
                raise ChildProcessFailed(f"process {name} exited with code {p.exitcode}{tb}")

    def on_crash(self, msg: ChildError) -> None:
        """Logs a child's crash report: a worker or an extra process with a heartbeat is replaced
        (by `check`, once it exited); an error seen before is logged in one line (a fault that
        recurs now and then is tolerated, its traceback is above).

        Raises:
            ChildProcessFailed: any other process crashed (a learner).
        """
        name, tb = msg.name, msg.traceback
        if not name.startswith(("rollout worker", "inference worker")) and name not in self.placement.extras:
            raise ChildProcessFailed(f"{name} crashed:\n{tb}")
        if self.placement.errors_seen.first_raised_by(name, tb) is None:
            log.error("%s crashed (it will be replaced):\n%s", name, tb)
        else:
            error = exception_text(tb).splitlines()[-1]
            log.error("%s crashed with an error seen before (it will be replaced): %s", name, error)

    def check(self) -> None:
        """Replaces rollout and inference workers and extra processes with a heartbeat that died or
        hung (see the module docstring); any other dead child ends the run.

        Raises:
            ChildProcessFailed: a learner exited or hung (it is killed), or the restart budget is
                spent.
        """
        if self.placement.stopping:
            return
        cfg, now = self.placement.cfg, time.monotonic()
        beats = self.placement.heartbeats.numpy()
        for name, proc in list(self.placement.procs.items()):
            if name.startswith("rollout_"):
                index = int(name.rsplit("_", 1)[1])
                start_grace = float(cfg.reset_timeout_seconds + cfg.decorrelate_experience_max_seconds)
            elif name.startswith("inference_"):
                p, i = (int(x) for x in name[len("inference_p") :].split("_"))
                index = cfg.num_workers + self.placement.shared.inference_index(p, i)
                start_grace = max(cfg.heartbeat_timeout_sec, 120.0)  # imports and the model build
            elif name in self.placement.extras:
                index = -1
                start_grace = max(cfg.heartbeat_timeout_sec, EXTRA_START_GRACE_SEC)
            else:
                if not proc.is_alive():
                    raise ChildProcessFailed(f"process {name} exited with code {proc.exitcode}")
                if name.startswith("learner_p"):  # not an extra process (`spawn_extra`)
                    self._check_learner_progress(name, proc, now)
                continue
            beat = float(beats[index] if index >= 0 else self.placement.extras[name].heartbeat[0])
            started = self.placement.spawned_at[name]
            charge = True
            if not proc.is_alive():
                problem = f"exited with code {proc.exitcode}"
                server = self.placement.forked_by.get(name)
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
            self.replace(name, problem, charge)

    def _check_learner_progress(self, name: str, proc: Any, now: float) -> None:
        """Kills learner `name` when it showed no sign of life (see the module docstring) for longer
        than `--heartbeat_timeout_sec` since it entered its loop.

        Raises:
            ChildProcessFailed: it hung (the caller's stop then writes its final checkpoint from
                its published weights).
        """
        p = int(name[len("learner_p") :])
        beat = float(self.placement.learner_heartbeats[p])  # 0 until its loop starts (start-up is awaited)
        if beat <= 0.0 or now - beat <= self.placement.cfg.heartbeat_timeout_sec:
            return
        dump_stack(proc)  # where it hung, in the run's log
        proc.kill()
        proc.join(5)
        raise ChildProcessFailed(
            f"process {name} hung: no optimizer step, no finished batch or checkpoint and no "
            f"poll of its queues for {now - beat:.0f} s (--heartbeat_timeout_sec={self.placement.cfg.heartbeat_timeout_sec:g}); it "
            "was killed after writing its Python stack to the run's log. Raise --heartbeat_timeout_sec if one optimizer step or checkpoint write "
            "of this model takes that long."
        )

    def replace(self, name: str, problem: str, charge: bool = True) -> None:
        """Kills process `name` (if alive) and starts its replacement, within the restart budget
        (a replacement not `charge`d is part of a restart already counted: a dead fork server's)."""
        cfg, now = self.placement.cfg, time.monotonic()
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
        proc = self.placement.procs[name]
        if problem.startswith("hung") and dump_stack(proc):
            log.warning("Process %s: its Python stack when it was found hung is in the run's log above", name)
        if proc.is_alive():
            proc.kill()
        proc.join(5)
        extra = self.placement.extras.get(name)
        if extra is not None:
            extra.heartbeat[0] = 0.0  # the replacement's start grace
            extra.incarnation += 1
            self.placement._spawn(name, extra.fn, extra.context, daemon=False, worker=False)
            return
        if name.startswith("rollout_"):
            w, splits, pool = int(name.rsplit("_", 1)[1]), cfg.worker_num_splits, self.placement.block_pool
            lo, hi = pool.owner_slots(w * splits).start, pool.owner_slots((w + 1) * splits - 1).stop
            filling = int(pool.held[lo:hi, -1].sum())  # slots its splits were filling
            log.info(
                "Rollout worker %d's %d partial rollout(s) are discarded (at most %d agent steps)",
                w,
                filling // pool.block_size,
                filling * cfg.rollout,
            )
            self.placement._spawn_worker(w)
            return
        p, i = (int(x) for x in name[len("inference_p") :].split("_"))
        # after the old process is gone, so it cannot answer the requests sent again
        self.placement.inference_generation[self.placement.shared.inference_index(p, i)] += 1
        self.placement.inference_restarts[0] += 1
        self.placement._spawn_inference(p, i)
