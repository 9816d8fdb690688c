"""Soak: one training run for `--minutes`, a random process of it killed every `--kill_every`
seconds (issue 59), then a table (`benchmarks/soak_report.py`).

Scenarios (CartPole-v1 in a subprocess, `python -m surge.train`; the env raises on 1% of its steps,
`surge.envs.fault_injection:FlakyStep`, evaluation during training so an evaluator process runs):

- `appo`: async APPO, two policies with PBT, an RNN. Each kill picks a role at random among
  rollout, inference, learner, evaluator and main (the main process), then a process of it, and
  SIGKILL or SIGSTOP at random (the roles of `--sigkill_only`, by default the main process, see
  below, SIGKILL only). A rollout or inference
  worker or the evaluator must be replaced by the run (a SIGSTOPped one found hung by its
  heartbeat, `--heartbeat_timeout_sec`); a learner ends the run (the main process writes the
  final checkpoints) and a killed main process takes every child with it: the soak then starts
  the same command again, which must resume (`Resumed from env frame N`).
- `dqn`: async DQN with `--save_replay_buffer=True`, the same kills.
- `ray`: `--distributed=ray` on a two-node Ray cluster on this machine (`tests/ray_two_nodes.py`),
  the sampler node (its actor and every process under it) killed: Ray must restart it.

Not killed: SIGSTOP of the main process (nothing watches the main process: surge's heartbeats are
read by it; a stopped main process stalls the run until it is continued), the main process of a Ray
run (not built: the soak does not restart the Ray driver), the fork server and the resource tracker
(not a role of the issue; `benchmarks/fault_tolerance.py`'s group tests kill the server).

Recorded: every kill (time, role, pid, signal), what resolved it (the run's replacement line, a
resume, Ray's restart, or nothing within `--heartbeat_timeout_sec` + 120 s: then the soak SIGKILLs
the stopped process so the run can go on, and the kill counts as not detected), the frames lost at
each run-ending kill against the latest checkpoint on disk at the kill (`docs/reliability.md`: a
crash resumes from the last periodic checkpoint), each replaced rollout worker's discarded steps
(the log's bound) against one rollout per env, every `--sample_every` seconds the RSS and open fds
of each process of the run (psutil, keyed by title and pid) and the number of `/dev/shm` entries;
at the end no process of the run and no new `/dev/shm` entry (`fault_tolerance._leftovers`).

    python benchmarks/soak.py --scenario appo --minutes 20
    python benchmarks/soak.py --scenario dqn --minutes 8 --json dqn.json --markdown out.md
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "tests"))  # ray_two_nodes (the Ray scenario's cluster)
import fault_tolerance as ft  # noqa: E402
import soak_report as rep  # noqa: E402

COMMON = [a for a in ft.COMMON if not a.startswith("--use_rnn")]
FLAKY = ["--env_wrappers", "surge.envs.fault_injection:FlakyStep"]
SCENARIOS: dict[str, list[str]] = {
    # fmt: off
    "appo": [
        "--num_policies=2",
        "--with_pbt=True",
        "--pbt_period_env_steps=20000",
        "--pbt_start_mutation=20000",
        "--use_rnn=True",
        *FLAKY,
    ],
    "dqn": ["--algo=DQN", "--save_replay_buffer=True", "--use_rnn=False", "--exploration_fraction=0", *FLAKY],
    "ray": ["--use_rnn=False", "--num_envs_per_worker=8"],
    # fmt: on
}
ROLES = {"appo": ("rollout", "inference", "learner", "evaluator", "main"), "ray": ("sampler_node",)}
ROLES["dqn"] = ROLES["appo"]
REPLACED = ("rollout", "inference", "evaluator")  # by the run itself


class Soak:
    """One soak (see the module docstring); `run()` returns the results `soak_report` reads."""

    def __init__(self, args: argparse.Namespace, workdir: Path):
        self.args, self.workdir = args, workdir
        self.rng = random.Random(args.seed)
        self.log = workdir / "run.log"
        self.exp = workdir / "train" / "soak"
        self.kills: list[dict[str, Any]] = []
        self.samples: list[dict[str, Any]] = []
        self.totals: list[tuple[float, int, int]] = []  # (t, open fds of the run, /dev/shm entries)
        self.starts: list[dict[str, Any]] = []  # each start of the command: time, log offset, pid
        self.exits: list[dict[str, Any]] = []
        self.unexpected: list[dict[str, Any]] = []
        self.cluster: Any = None
        self.proc: subprocess.Popen | None = None
        self.t0 = time.time()
        self.failed_starts = 0  # starts in a row that ended before training
        self.remedied_at = -1e9  # when the soak last SIGKILLed a stopped process the run missed
        self.resolve_timeout = args.heartbeat_timeout_sec + 120.0

    # -- the run ------------------------------------------------------------------------------
    def command(self) -> list[str]:
        a = self.args
        cmd = [sys.executable, "-m", "surge.train", f"--train_dir={self.exp.parent}", "--experiment=soak",
               *COMMON, *SCENARIOS[a.scenario], "--num_workers=2", "--train_for_env_steps=10000000000",
               "--report_interval_sec=5", f"--save_every_sec={a.save_every_sec}",
               "--set_workers_cpu_affinity=False", "--write_report=False",
               f"--heartbeat_timeout_sec={a.heartbeat_timeout_sec}"]  # fmt: skip
        if a.scenario == "ray":
            import ray_two_nodes

            cmd += ["--distributed=ray", f"--ray_address={self.cluster.address}", "--ray_max_restarts=-1",
                    f"--ray_node_resource={ray_two_nodes.SAMPLER_RESOURCE}", "--num_torch_threads=1"]  # fmt: skip
        else:
            cmd += ["--max_worker_restarts_per_hour=100000", f"--eval_every_env_frames={a.eval_every}",
                    "--eval_episodes=2"]  # fmt: skip
        return cmd

    def start_run(self) -> None:
        offset = self.log.stat().st_size if self.log.exists() else 0
        env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
        self.proc = subprocess.Popen(
            self.command(), stdout=self.log.open("ab"), stderr=subprocess.STDOUT, cwd=self.workdir, env=env
        )
        ft.PIDS.add(self.proc.pid)
        self.starts.append({"t": self.now(), "offset": offset, "pid": self.proc.pid})

    def now(self) -> float:
        return time.time() - self.t0

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def up(self) -> bool:
        """Whether the current start of the command reported env frames and is not stopping."""
        text = self.text()[self.starts[-1]["offset"] :]
        return bool(re.search(r"Total env frames: [1-9]", text)) and "Stopping:" not in text

    def processes(self) -> dict[int, str]:
        """pid -> title of each living process of the run (the main process titled `main`, the Ray
        sampler node's actor `sampler_node`)."""
        found = {p: ft._title(p) for p in ft._ours(self.workdir)}
        if self.cluster is not None:
            node = self.cluster.sampler_node_pids()
            found.update({p: ft._title(p) for p in node})
            if node:
                found[node[0]] = "sampler_node"
        if self.proc is not None and self.proc.poll() is None:
            found[self.proc.pid] = "main"
        ft.PIDS.update(found)
        return found

    def ckpt_frames(self) -> int:
        """The env frames of the furthest checkpoint on disk (the frame a resume starts from)."""
        frames = [int(m.group(1)) for f in self.exp.glob("checkpoint_p*/checkpoint_*.pth")
                  if (m := re.search(r"_f(\d+)\.pth$", f.name))]  # fmt: skip
        return max(frames, default=0)

    # -- sampling -----------------------------------------------------------------------------
    def sample(self) -> None:
        t, fds = self.now(), 0
        for pid, title in self.processes().items():
            try:
                p = psutil.Process(pid)
                if p.status() == psutil.STATUS_ZOMBIE:
                    continue
                rss, n = p.memory_info().rss, p.num_fds()
            except (psutil.NoSuchProcess, psutil.AccessDenied):
                continue
            self.samples.append({"t": t, "pid": pid, "title": title, "rss": rss, "fds": n})
            fds += n
        self.totals.append((t, fds, _our_shm()))

    def sample_loop(self, stop: threading.Event) -> None:
        while not stop.wait(self.args.sample_every):
            self.sample()

    # -- kills --------------------------------------------------------------------------------
    def kill_one(self) -> bool:
        """Kills a random process of a random role (module docstring); False if none is there."""
        cands: dict[str, list[tuple[int, str]]] = {}
        for pid, title in self.processes().items():
            role = rep.role_of(title)
            if role in ROLES[self.args.scenario] and _running(pid):
                cands.setdefault(role, []).append((pid, title))
        if not cands:
            return False
        role = self.rng.choice(sorted(cands))
        pid, title = self.rng.choice(cands[role])
        sigkill_only = role in self.args.sigkill_only
        sig = signal.SIGKILL if sigkill_only else self.rng.choice([signal.SIGKILL, signal.SIGSTOP])
        text = self.text()
        victims = self.cluster.sampler_node_pids() if role == "sampler_node" else [pid]
        for v in victims:
            try:
                os.kill(v, sig)
            except ProcessLookupError:
                pass
        self.kills.append({
            "t": self.now(), "role": role, "name": title.removeprefix("surge:"), "pid": pid, "pids": victims,
            "sig": sig.name, "offset": self.log.stat().st_size, "frames_at_kill": ft._last_frames(text),
            "ckpt_frames": self.ckpt_frames(), "resolved_by": None,
        })  # fmt: skip
        return True

    def resolve(self) -> bool:
        """Marks each pending kill resolved by what the log says (module docstring); True when
        the soak itself SIGKILLed a stopped process that the run did not notice."""
        remedied = False
        raw = self.log.read_bytes() if self.log.exists() else b""
        for k in self.kills:
            if k["resolved_by"] is not None:
                continue
            after = raw[k["offset"] :].decode(errors="replace")
            how, extra = None, {}
            if k["role"] in REPLACED:
                m = re.search(rf"Process {re.escape(k['name'])} (.*?): replacing it", after)
                if m:
                    how, extra = "replacement", {"detected_as": m.group(1)}
                    d = re.search(
                        r"partial rollout\(s\) are discarded \(at most (\d+) agent steps\)", after[m.end() :]
                    )
                    if k["role"] == "rollout" and d:
                        extra["discarded_steps"] = int(d.group(1))
            elif k["role"] == "sampler_node" and re.search(r"Sampler node \d+ was lost", after):
                how = "ray_restart"
            later = [s for s in self.starts if s["t"] > k["t"]]
            if how is None and later:
                start = later[0]
                m = re.search(
                    r"Resumed from env frame (\d+)", raw[start["offset"] :].decode(errors="replace")
                )
                if m:
                    ended_at = ft._last_frames(raw[: start["offset"]].decode(errors="replace"))
                    resumed = int(m.group(1))
                    how = "resume"
                    extra = {"resumed_from": resumed, "frames_at_exit": ended_at,
                             "lost": max(0, ended_at - resumed), "bound": max(0, ended_at - k["ckpt_frames"])}  # fmt: skip
            if how is not None:
                k.update(resolved_by=how, resolved_after_s=round(self.now() - k["t"], 1), **extra)
            elif self.now() - k["t"] > self.resolve_timeout:
                k.update(resolved_by="undetected", resolved_after_s=None)
                remedied = True
                self.remedied_at = self.now()
                for v in k["pids"]:  # so the run can go on: the soak ends what the run did not notice
                    try:
                        os.kill(v, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        return remedied

    def pending(self) -> bool:
        return any(k["resolved_by"] is None for k in self.kills)

    def handle_exit(self) -> None:
        """The command ended on its own: note it (explained when a kill is pending), start it again."""
        assert self.proc is not None
        rc = self.proc.returncode
        tail = [
            ln
            for ln in self.text()[self.starts[-1]["offset"] :].splitlines()
            if "ERROR" in ln or "died" in ln
        ]
        rec = {"t": self.now(), "rc": rc, "lines": tail[-3:]}
        if not re.search(r"Total env frames: [1-9]", self.text()[self.starts[-1]["offset"] :]):
            self.failed_starts += 1  # a command that cannot start would be restarted for ever
            if self.failed_starts >= 3:
                raise RuntimeError(f"the command ended 3 times before training: {self.text()[-2000:]}")
        else:
            self.failed_starts = 0
        self.exits.append(rec)
        if not self.pending() and self.now() - self.remedied_at > 60.0:
            self.unexpected.append(rec)
        time.sleep(1.0)  # its children die with it (PR_SET_PDEATHSIG)
        self.start_run()

    # -- the soak -----------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        a = self.args
        shm_before = ft._shm()
        if a.scenario == "ray":
            import ray_two_nodes

            self.cluster = ray_two_nodes.TwoNodeCluster().start()
        stop = threading.Event()
        sampler = threading.Thread(target=self.sample_loop, args=(stop,), daemon=True)
        try:
            self.start_run()
            sampler.start()
            end = self.t0 + 60.0 * a.minutes
            next_kill = time.time() + a.kill_every
            while time.time() < end or self.pending():
                assert self.proc is not None
                if self.proc.poll() is not None:
                    self.handle_exit()
                if self.resolve():  # what the soak's SIGKILL does is not charged to the next kill
                    next_kill = time.time() + a.kill_every
                if time.time() >= next_kill and time.time() < end and not self.pending() and self.up():
                    if self.kill_one():
                        next_kill = time.time() + a.kill_every
                time.sleep(0.5)
            deadline = time.time() + 240
            while time.time() < deadline:  # a run ending after the last kill: its resume is the end
                if self.proc.poll() is not None:
                    self.handle_exit()
                elif self.up():
                    break
                time.sleep(0.5)
            t_stop = self.now()
            self.proc.send_signal(signal.SIGINT)
            try:
                rc: Any = self.proc.wait(timeout=180)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                rc = "hung"
            minutes = self.now() / 60.0
            stop.set()
            sampler.join(a.sample_every + 5)
            text = self.text()
        finally:
            stop.set()
            if self.proc is not None and self.proc.poll() is None:
                self.proc.kill()
            if self.cluster is not None:
                self.cluster.stop()
        procs, shm, unattributed = ft._leftovers(shm_before, self.workdir)
        cfg = json.loads((self.exp / "cfg.json").read_text())
        fits = rep.lifetime_slopes(self.samples, a.warmup_sec, a.min_span_sec)
        # fds and /dev/shm: the first sample after the first warm-up, the last before the final SIGINT
        span = [x for x in self.totals if a.warmup_sec <= x[0] <= t_stop] or self.totals or [(0.0, 0, 0)]
        res = {
            "scenario": a.scenario, "command": " ".join(self.command()[1:]), "minutes_run": minutes,
            "kills": self.kills, "exits": self.exits, "unexpected_exits": self.unexpected,
            "replacements": len(re.findall(r": replacing it", text)),
            # replacements no kill caused: a worker that crashed itself (the env's faults in a row)
            "crash_replacements": len(re.findall(r"exited with code 1: replacing it", text)),
            "resumes": len(re.findall(r"Resumed from env frame", text)), "runs_started": len(self.starts),
            "final_rc": rc, "finished": rc == 130 and "Stopped on request" in text[self.starts[-1]["offset"] :],
            "documented_rollout_bound": int(cfg.get("num_envs_per_worker", 0)) * int(cfg.get("rollout", 0)),
            "fits": fits, "memory": rep.role_memory(fits), "warmup_sec": a.warmup_sec,
            "min_span_sec": a.min_span_sec, "fds_first": span[0][1], "fds_last": span[-1][1],
            "shm_first": span[0][2], "shm_mid_last": span[-1][2], "shm_last": _our_shm(), "leftover_processes": procs, "leftover_shm": shm,
            "unattributed_shm": unattributed, "samples": self.samples, "totals": self.totals,
        }  # fmt: skip
        res["criteria"] = rep.criteria(res)
        return res


def _our_shm() -> int:
    """`/dev/shm` entries named after a process of the soak's runs (torch's `torch_<pid>_...`)."""
    names = [re.match(r"torch_(\d+)_", n) for n in os.listdir("/dev/shm")]
    return sum(int(m.group(1)) in ft.PIDS for m in names if m)


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() not in (psutil.STATUS_STOPPED, psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


def kill_list(res: dict[str, Any]) -> str:
    """One markdown row per kill: when, what, how it was resolved, frames."""
    rows = ["| t (s) | role | process | pid | signal | resolved by | after (s) | detected as / resumed from | lost / bound |",
            "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for k in res["kills"]:
        what = k.get("detected_as") or (f"env frame {k['resumed_from']}" if "resumed_from" in k else "")
        lost = f"{k['lost']} / {k['bound']}" if "lost" in k else (
            f"{k['discarded_steps']} steps discarded" if "discarded_steps" in k else "")  # fmt: skip
        rows.append(f"| {k['t']:.0f} | {k['role']} | {k['name']} | {k['pid']} | {k['sig']} | {k['resolved_by']} "
                    f"| {k.get('resolved_after_s')} | {what} | {lost} |")  # fmt: skip
    return "\n".join(rows) + "\n"


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scenario", choices=sorted(SCENARIOS), default="appo")
    ap.add_argument("--minutes", type=float, default=120.0, help="how long the run is soaked")
    ap.add_argument("--kill_every", type=float, default=60.0, help="seconds between kills (the next waits "
                    "until the previous one was resolved and the run reports frames)")  # fmt: skip
    ap.add_argument(
        "--heartbeat_timeout_sec",
        type=int,
        default=20,
        help="the run's; a SIGSTOPped worker, evaluator or Ray sampler node is found hung after it",
    )
    ap.add_argument("--save_every_sec", type=int, default=20)
    ap.add_argument("--sigkill_only", nargs="*", default=["main"], help="roles never sent SIGSTOP (main: "
                    "nothing watches the main process)")  # fmt: skip
    ap.add_argument("--eval_every", type=int, default=50_000, help="env frames between evaluations")
    ap.add_argument("--sample_every", type=float, default=5.0, help="seconds between RSS/fd samples")
    ap.add_argument(
        "--warmup_sec", type=float, default=120.0, help="of each process lifetime, left out of its RSS fit"
    )
    ap.add_argument("--min_span_sec", type=float, default=180.0, help="shortest fitted window of a lifetime")
    ap.add_argument("--seed", type=int, default=None, help="of the soak's choices (victims, signals)")
    ap.add_argument("--json", type=Path, default=None, help="write the results (samples included) here")
    ap.add_argument("--markdown", type=Path, default=None, help="append the kill list and the table here")
    ap.add_argument("--keep", action="store_true", help="keep the work folder (run log, experiment)")
    args = ap.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix=f"surge_soak_{args.scenario}_"))
    try:
        res = Soak(args, workdir).run()
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    out = f"`python benchmarks/soak.py {' '.join(sys.argv[1:] if argv is None else argv)}`\n\n"
    out += kill_list(res) + "\n" + rep.table(res)
    print(out + (f"\nwork folder: {workdir}" if args.keep else ""), flush=True)
    if args.markdown is not None:
        with args.markdown.open("a") as f:
            f.write(out + "\n")
    if args.json is not None:
        args.json.write_text(json.dumps(res, default=str))
    return res


if __name__ == "__main__":
    main()
