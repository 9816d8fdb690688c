"""The soak's figures (`benchmarks/soak.py`): resident-memory slopes per role and the markdown
table. Kept apart from the driver so the fits can be read (and checked) without running a soak."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import numpy as np

#: growth over which a role fails the "flat memory" criterion (issue 59): % of its RSS per hour
MAX_SLOPE_PCT_PER_HOUR = 1.0


def role_of(title: str) -> str:
    """The role of a process from its title (`surge:rollout_0` -> `rollout`); `main` and
    `sampler_node` are set by the driver; anything else (fork server, resource tracker) `other`."""
    if title in ("main", "sampler_node"):
        return title
    name = title.removeprefix("surge:")
    for role in ("rollout", "inference", "learner", "evaluator"):
        if name.startswith(role):
            return role
    return "other"


def lifetime_slopes(
    samples: list[dict[str, Any]], warmup_sec: float, min_span_sec: float
) -> list[dict[str, Any]]:
    """One linear fit of RSS (bytes) against time (s) per process lifetime (a pid: a replaced
    process is a new lifetime, never joined to its predecessor's), on the samples taken more than
    `warmup_sec` after the process's first sample; lifetimes whose fitted samples span less than
    `min_span_sec` are left out (too short to tell growth from noise).

    Args:
        samples: `{"t": seconds, "pid", "title", "rss": bytes, ...}` per process per sample.

    Returns:
        per fitted lifetime: `{"role", "title", "pid", "span_s", "rss0_mb", "slope_pct_per_h",
        "fds_first", "fds_last"}`, the slope as % of the fitted RSS at the start of the window, per
        hour; the open fds at the window's first and last samples.
    """
    by_pid: dict[tuple[int, str], list[tuple[float, float, int]]] = defaultdict(list)
    for s in samples:
        by_pid[(s["pid"], s["title"])].append((s["t"], s["rss"], s["fds"]))
    out = []
    for (pid, title), pts in by_pid.items():
        t0 = pts[0][0]
        fit = [p for p in pts if p[0] - t0 >= warmup_sec]
        if len(fit) < 3 or fit[-1][0] - fit[0][0] < min_span_sec:
            continue
        t = np.array([p[0] for p in fit]) - fit[0][0]
        r = np.array([p[1] for p in fit], dtype=np.float64)
        slope, intercept = np.polyfit(t, r, 1)  # bytes per second, bytes
        out.append(
            {
                "role": role_of(title),
                "title": title,
                "pid": pid,
                "span_s": float(t[-1]),
                "rss0_mb": float(intercept / 2**20),
                "slope_pct_per_h": float(100.0 * slope * 3600.0 / intercept),
                "fds_first": fit[0][2],
                "fds_last": fit[-1][2],
            }
        )
    return out


def role_memory(fits: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Per role: the fitted lifetimes, the longest one's span and slope, and the span-weighted
    mean slope over all of them (% per hour)."""
    roles: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for f in fits:
        roles[f["role"]].append(f)
    out = {}
    for role, fs in sorted(roles.items()):
        longest = max(fs, key=lambda f: f["span_s"])
        w = np.array([f["span_s"] for f in fs])
        mean = float(np.sum(w * np.array([f["slope_pct_per_h"] for f in fs])) / np.sum(w))
        out[role] = {
            "lifetimes": len(fs),
            "longest_span_min": longest["span_s"] / 60.0,
            "longest_slope": longest["slope_pct_per_h"],
            "longest_rss_mb": longest["rss0_mb"],
            "weighted_slope": mean,
            "max_fd_growth": max(f["fds_last"] - f["fds_first"] for f in fs),
        }
    return out


def _ok(b: bool | None) -> str:
    return "n/a" if b is None else "pass" if b else "**fail**"


def table(res: dict[str, Any]) -> str:
    """The soak's markdown summary of `res` (what `soak.run_soak` returns)."""
    kills = res["kills"]
    lines = [f"### Soak `{res['scenario']}`: {res['minutes_run']:.1f} min, {len(kills)} kills", ""]
    lines += ["| role | signal | kills | resolved by replacement | by resume (restart of the run) | by Ray's restart | not detected |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    groups = Counter((k["role"], k["sig"]) for k in kills)
    for (role, sig), n in sorted(groups.items()):
        ks = [k for k in kills if (k["role"], k["sig"]) == (role, sig)]
        by = Counter(k["resolved_by"] for k in ks)
        lines.append(
            f"| {role} | {sig} | {n} | {by['replacement']} | {by['resume']} | {by['ray_restart']} | {by['undetected'] + by[None]} |"
        )
    lines += ["", f"Replacements logged: {res['replacements']} ({res.get('crash_replacements', 0)} of a worker that crashed itself, exit code 1); resumes: {res['resumes']}; "
              f"runs started: {res['runs_started']}; exits with no kill to explain them: {len(res['unexpected_exits'])}.", ""]  # fmt: skip
    ended = [k for k in kills if k.get("lost") is not None]
    worst = max(ended, key=lambda k: k["lost"] - k["bound"], default=None)
    disc = [k["discarded_steps"] for k in kills if k.get("discarded_steps") is not None]
    lines += ["| frames lost | measured | bound |", "|---|---|---|"]
    if worst is not None:
        lines.append(
            f"| run-ending kill (main, learner): env frames at the kill - frame resumed from "
            f"| max {max(k['lost'] for k in ended)} (worst vs bound: {worst['lost']} at a {worst['role']} {worst['sig']}) "
            f"| frames since the latest checkpoint on disk at the kill ({worst['bound']} there) |"
        )
    if disc:
        lines.append(
            f"| replaced rollout worker: discarded partial rollouts (the log's bound, agent steps) "
            f"| max {max(disc)} | one rollout per env of the worker: {res['documented_rollout_bound']} |"
        )
    mem = res["memory"]
    lines += ["", f"Resident memory, one linear fit per process lifetime (a replaced process's new pid is a new "
              f"lifetime), samples after {res['warmup_sec']:.0f} s of that lifetime, lifetimes fitted over "
              f"{res['min_span_sec']:.0f} s or more:", "",
              "| role | lifetimes fitted | longest (min) | its RSS (MB) | its slope (%/h) | span-weighted mean slope (%/h) | max open-fd growth in a lifetime |",
              "|---|---|---|---|---|---|---|"]  # fmt: skip
    for role, m in mem.items():
        lines.append(
            f"| {role} | {m['lifetimes']} | {m['longest_span_min']:.1f} | {m['longest_rss_mb']:.0f} "
            f"| {m['longest_slope']:+.2f} | {m['weighted_slope']:+.2f} | {m['max_fd_growth']:+d} |"
        )
    lines += ["", "| | first sample after the first warm-up | last sample before the final stop | after the end |", "|---|---|---|---|",
              f"| open fds (all processes of the run) | {res['fds_first']} | {res['fds_last']} | |",
              f"| `/dev/shm` entries named after a process of the run | {res['shm_first']} | {res['shm_mid_last']} | {res['shm_last']} |", ""]  # fmt: skip
    crit = res["criteria"]
    lines += ["| criterion | result |", "|---|---|"]
    lines += [f"| {name} | {_ok(ok)} ({detail}) |" for name, (ok, detail) in crit.items()]
    return "\n".join(lines) + "\n"


def criteria(res: dict[str, Any]) -> dict[str, tuple[bool | None, str]]:
    """Pass/fail per criterion of issue 59's soak, with what decided it (None: not measured)."""
    kills = res["kills"]
    unresolved = [k for k in kills if k["resolved_by"] in (None, "undetected")]
    ended = [k for k in kills if k.get("lost") is not None]
    over = [k for k in ended if k["lost"] > k["bound"]]
    disc_over = [k for k in kills if (k.get("discarded_steps") or 0) > res["documented_rollout_bound"]]
    grows = {
        r: m["longest_slope"]
        for r, m in res["memory"].items()
        if m["longest_slope"] >= MAX_SLOPE_PCT_PER_HOUR
    }
    return {
        "the run finished (clean stop at the end)": (res["finished"], f"exit code {res['final_rc']}"),
        "every kill followed by a replacement or a resume": (
            (not unresolved) if kills else None,
            f"{len(kills) - len(unresolved)}/{len(kills)}"
            + (f"; not: {', '.join(k['role'] + ' ' + k['sig'] for k in unresolved)}" if unresolved else ""),
        ),
        "no exit that no kill explains": (not res["unexpected_exits"], f"{len(res['unexpected_exits'])}"),
        "frames lost within the bound": (not over and not disc_over, f"{len(over) + len(disc_over)} over"),
        f"RSS growth < {MAX_SLOPE_PCT_PER_HOUR:g}%/h (longest lifetime per role)": (
            (not grows) if res["memory"] else None,
            ", ".join(f"{r} {s:+.2f}" for r, s in grows.items()) or "all under"
            if res["memory"]
            else "no lifetime long enough",
        ),
        "no process of the run left": (res["leftover_processes"] == 0, f"{res['leftover_processes']}"),
        "no new /dev/shm entry left": (
            res["leftover_shm"] == 0 and res["unattributed_shm"] == 0,
            f"{res['leftover_shm']} torch files, {res['unattributed_shm']} other new entries",
        ),
    }
