"""A cost model of env frames/s that knows single processes: the rate on C cores, with or without a
GPU, from CPU costs per env frame measured on another machine (this one).

    python benchmarks/cost_model.py validate              # the H200 runs of 2026-11-28 and 2026-12-04
    python benchmarks/cost_model.py predict --cores 16 36 64   # today's code and Sample Factory's, one GPU
    python benchmarks/cost_model.py calibrate             # host ratio and µs per kernel launch

An env frame costs CPU time in every role it passes through. The model's terms, in env frames/s:

- cores: the whole CPU cost of a frame (every role) over the cores the run keeps busy,
  `1e6 * C * util / sum(cost_r)`; the pool roles (rollout workers, game processes) get whatever
  cores the single processes leave, so this is the rollout side spread over the cores left;
- one term per role made of single processes (the learner, the inference workers, the main
  process): each process is one thread of Python and runs on at most one core, so k processes
  sharing a role's frames cap the rate at `1e6 * k / cost_r`, however many cores there are.

The rate is the smallest term; the term it comes from is the one that binds. A role's cost on the
target machine is `ratio * cpu_us + launches_per_frame * launch_us`:

- `cpu_us`: CPU µs per env frame measured here (for a role on a GPU: its host side only, what the
  GPU does not take over: gathers, copies, Python per request or batch);
- `ratio`: CPU time there / CPU time here for the same work: `speed_ratio` for CPU-bound work
  (games, rollout workers), `host_ratio` for a GPU role's host side (copies and Python, which need
  not carry like a game does; `calibrate` fits it with `launch_us` on two processes logged there);
- `launches_per_frame * launch_us`: the host side of the role's GPU kernel launches (the torch
  operations it dispatches per env frame, `cost_model_inputs.py`, times the host µs of one).

The inputs, with where each comes from, are in `cost_model_data.json` beside this file.
"""

from __future__ import annotations

import argparse
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "cost_model_data.json"


@dataclass(frozen=True)
class Role:
    """One role of a run.

    Attributes:
        name: the role (learner, inference, rollout, game, main, ...).
        cpu_us: CPU µs per env frame on the machine it was measured on (>= 0).
        processes: 0 for a pool spread over the cores (rollout workers, games); k >= 1 for k
            single processes sharing the role's frames, each at most one core.
        launches_per_frame: GPU kernel launches per env frame (0 when the role runs on the CPU).
        carry: which of the machine's ratios carries `cpu_us` there: "cpu" (`speed_ratio`, CPU-bound
            work such as a game or a rollout worker), "host" (`host_ratio`, the host side of a role
            on a GPU: copies and Python per call) or "none" (a figure measured on the target).
    """

    name: str
    cpu_us: float
    processes: int = 0
    launches_per_frame: float = 0.0
    carry: str = "cpu"


@dataclass(frozen=True)
class Machine:
    """The machine predicted for.

    Attributes:
        cores: CPU cores (> 0).
        speed_ratio: CPU time there / CPU time here for the same CPU-bound work (1: the same CPU).
        launch_us: host µs per GPU kernel launch (0 without a GPU).
        util: the fraction of the cores a run keeps busy, in (0, 1].
        host_ratio: the same for the host side of a GPU role (None: `speed_ratio`).
    """

    cores: float
    speed_ratio: float = 1.0
    launch_us: float = 0.0
    util: float = 1.0
    host_ratio: float | None = None


@dataclass
class Prediction:
    """`fps`: env frames/s; `binding`: the term that sets it ("cores" or a role's name); `terms`:
    every term's env frames/s; `cost_us`: each role's µs per env frame on the target machine;
    `inference_workers`: the inference workers per policy it was predicted with (0: not chosen)."""

    fps: float
    binding: str
    terms: dict[str, float] = field(default_factory=dict)
    cost_us: dict[str, float] = field(default_factory=dict)
    inference_workers: int = 0  # per policy, where the prediction chose it (`today`)


def role_cost_us(role: Role, machine: Machine) -> float:
    """CPU µs per env frame of `role` on `machine`."""
    if role.carry not in ("cpu", "host", "none"):
        raise ValueError(f"role {role.name}: carry must be cpu, host or none, got {role.carry!r}")
    host = machine.speed_ratio if machine.host_ratio is None else machine.host_ratio
    ratio = {"cpu": machine.speed_ratio, "host": host, "none": 1.0}[role.carry]
    return ratio * role.cpu_us + role.launches_per_frame * machine.launch_us


def predict(roles: list[Role], machine: Machine) -> Prediction:
    """Env frames/s of a run made of `roles` on `machine`: the smallest of the cores term and each
    single-process role's ceiling. Raises ValueError on an empty or free run, or a bad machine."""
    if machine.cores <= 0 or not 0 < machine.util <= 1 or machine.speed_ratio <= 0:
        raise ValueError(f"machine: cores > 0, 0 < util <= 1, speed_ratio > 0 needed, got {machine}")
    cost = {}
    for r in roles:
        if r.cpu_us < 0 or r.processes < 0 or r.launches_per_frame < 0:
            raise ValueError(f"role {r.name}: cpu_us, processes, launches_per_frame must be >= 0")
        cost[r.name] = cost.get(r.name, 0.0) + role_cost_us(r, machine)
    total = sum(cost.values())
    if total <= 0:
        raise ValueError("the roles cost nothing: no rate to predict")
    terms = {"cores": 1e6 * machine.cores * machine.util / total}
    for r in roles:
        if r.processes and cost[r.name] > 0:
            terms[r.name] = 1e6 * r.processes / cost[r.name]
    binding = min(terms, key=terms.__getitem__)
    return Prediction(terms[binding], binding, terms, cost)


def load_data(path: Path = DATA) -> dict[str, Any]:
    """The committed inputs (`cost_model_data.json`), keys starting with "_" being notes."""
    return dict(json.loads(path.read_text()))


def _roles(rows: list[dict[str, Any]]) -> list[Role]:
    return [Role(**{k: v for k, v in r.items() if not k.startswith("_")}) for r in rows]


def _machine(d: dict[str, Any], cores: float) -> Machine:
    return Machine(
        cores=cores,
        speed_ratio=d["speed_ratio"],
        launch_us=d.get("launch_us", 0.0),
        util=d.get("util", 1.0),
        host_ratio=d.get("host_ratio"),
    )


def fit_host(
    learner: tuple[float, float, float], inference: tuple[float, float, float]
) -> tuple[float, float]:
    """The host ratio and the host µs per kernel launch that make two GPU roles' costs measured here
    match their costs logged there: each of `learner` and `inference` is (host µs per frame here,
    launches per frame, µs per frame there), and `here * ratio + launches * launch_us = there` for
    both. Returns (ratio, launch_us); raises ValueError when the two equations do not fix them."""
    (h1, n1, t1), (h2, n2, t2) = learner, inference
    det = h1 * n2 - h2 * n1
    if det == 0:
        raise ValueError("the two roles' host costs and launches are proportional: nothing to fit")
    return (t1 * n2 - t2 * n1) / det, (h1 * t2 - h2 * t1) / det


def validation(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Per logged GPU run and "framework route": the prediction of the run (`cores` cores, the
    route's ratios and roles), the rate measured there and whether the route is expected within 20%
    (False: a route kept to show what it misses). Keys: "DATE FRAMEWORK ROUTE". A route gives its
    roles and ratios, or `today`: a config of `data["today"]` (`framework`, `config`,
    `inference_workers`) with `override` replacing the config's entries and `machine` the machine's
    (today's code predicted as `today` predicts it, to set beside a run of that code)."""
    out: dict[str, dict[str, Any]] = {}
    for v in data["validations"]:
        for fw, d in v["frameworks"].items():
            for route, r in d["routes"].items():
                if "today" in r:
                    t = r["today"]
                    cfg, m = _today_config(data, t["framework"], t["config"])
                    cfg = {**cfg, **t.get("override", {}), "inference_workers": t["inference_workers"]}
                    p = predict(
                        today_roles(cfg, v["cores"]), _machine({**m, **t.get("machine", {})}, v["cores"])
                    )
                else:
                    p = predict(_roles(r["roles"]), _machine(r, v["cores"]))
                out[f"{v['date']} {fw} {route}"] = {
                    "prediction": p,
                    "measured": d["measured_fps"],
                    "within_20": r.get("within_20", True),
                }
    return out


def _today_config(data: dict[str, Any], framework: str, name: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A config of today's inputs for `framework` and its machine (the shared one, with the config's
    own "machine" entries over it)."""
    section = data["today"] if framework == "surge" else data["today"][framework]
    cfg = section["configs"][name]
    return cfg, {**data["today"]["machine"], **cfg.get("machine", {})}


def today_roles(cfg: dict[str, Any], cores: int) -> list[Role]:
    """Today's code on a config with one rollout worker per core (`--num_workers=C`, as the H200 runs
    were) and the learner and inference workers on one GPU: the rollout side's and main process's
    µs per frame measured here ("cpu"; the main process's as logged there). The learner and the
    inference workers: where the config has `gpu_measured` (their CPU µs per env frame measured on
    the GPU machine by `role_ceilings.py --device cuda`), those figures ("none"; an inference
    worker's taken at the pass size it was measured at; the learner's adjusted for the DMA path,
    `gpu_learner`); otherwise their host side measured here
    ("host") plus their launches. An inference worker that is the limit is saturated, so each
    pass takes every split waiting: with W workers and S splits per rollout worker,
    `rows = C * envs_per_worker / S / W` per pass, each row `frameskip` env frames."""
    k = cfg["inference_workers"]
    rows = cores * cfg["envs_per_worker"] / cfg["splits"] / k
    frames_per_pass = rows * cfg["frameskip"]
    common = [*_roles(cfg["pool"]), Role("main", cfg["main_us"], processes=1, carry="none")]
    g = cfg.get("gpu_measured")
    if g:
        return [
            *common,
            gpu_learner(g, cfg.get("learner_dma")),
            Role("inference", g["inference_us"], processes=k, carry="none"),
        ]
    return [
        *common,
        Role(
            "learner",
            cfg["learner_host_us"],
            processes=1,
            launches_per_frame=cfg["learner_launches_per_frame"],
            carry="host",
        ),
        Role(
            "inference",
            cfg["inference_host_us"],
            processes=k,
            launches_per_frame=cfg["inference_launches_per_call"] / frames_per_pass,
            carry="host",
        ),
    ]


def gpu_learner(measured: dict[str, Any], dma: dict[str, Any] | None) -> Role:
    """The learner from its CPU µs per env frame measured on the GPU machine (`measured`:
    `learner_us`, and `learner_host_us`, the part of it in `prepare_batch`), for code that sends
    its batches by DMA (`surge.data.device_copy`) where the measured code gathered them on the host
    (`dma`, None when the code is the measured one): `host_left` of the host part remains (the
    DMA path's host work over the gather path's, both measured here, `cost_model_inputs.py`
    `learner_dma_host_us` against `learner_gather_us` within `learner_prepare_us`), and
    `extra_copies_per_frame` more copy calls (one per run of consecutive slots of each large field,
    where the gather made one per field), each costing the host a kernel launch's `launch_us`."""
    us = measured["learner_us"]
    if not dma:
        return Role("learner", us, processes=1, carry="none")
    left = dma["host_left"]
    if not 0 <= left <= 1:
        raise ValueError(f"learner_dma.host_left must be in [0, 1], got {left}")
    return Role(
        "learner",
        us - measured["learner_host_us"] * (1 - left),
        processes=1,
        launches_per_frame=dma["extra_copies_per_frame"],
        carry="none",
    )


def today(
    data: dict[str, Any], cores: list[int], framework: str = "surge", max_inference_workers: int = 4
) -> dict[str, dict[int, Prediction]]:
    """Per config and core count: the prediction for today's code of `framework` ("surge", or
    "sample_factory": Sample Factory 2.1.1, whose roles are measured and carried the same way) with
    one GPU. A config's own "machine" entries (its rollout side's speed ratio, measured in another
    session) override the shared machine's. Each core count takes the number of inference workers
    per policy (`--policy_workers_per_policy`, both frameworks' flag) from 1 to
    `max_inference_workers` with the highest rate, the fewest on a tie, as a run tuned for that
    machine would (`surge tune`): inference workers are not single processes, the learner is."""
    section = data["today"] if framework == "surge" else data["today"][framework]
    out: dict[str, dict[int, Prediction]] = {}
    for name in section["configs"]:
        cfg, m = _today_config(data, framework, name)
        out[name] = {}
        for c in cores:
            best: Prediction | None = None
            for k in range(1, max_inference_workers + 1):
                p = predict(today_roles({**cfg, "inference_workers": k}, c), _machine(m, c))
                if best is None or p.fps > best.fps:
                    best, p.inference_workers = p, k
            assert best is not None
            out[name][c] = best
    return out


def _k(x: float) -> str:
    return f"{x / 1000:.1f}k" if math.isfinite(x) else "-"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("what", choices=["validate", "predict", "calibrate"])
    ap.add_argument("--cores", type=int, nargs="+", default=[16, 36, 64])
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--launch_us", type=float, help="predict: override the host µs per kernel launch")
    ap.add_argument(
        "--max_inference_workers",
        type=int,
        default=4,
        help="predict: inference workers per policy tried (from 1)",
    )
    a = ap.parse_args(argv)
    data = load_data(a.data)
    if a.what == "calibrate":
        c = data["calibration"]
        ratio, launch = fit_host(tuple(c["learner"]), tuple(c["inference"]))
        print(f"host ratio {ratio:.3f}, host µs per kernel launch {launch:.2f}")
        return 0
    if a.what == "validate":
        print(
            "| date | run | route | predicted env frames/s | measured | predicted / measured | binds | terms |"
        )
        print("|---|---|---|---|---|---|---|---|")
        for key, r in validation(data).items():
            p, meas = r["prediction"], r["measured"]
            date, fw, route = key.split(" ")
            terms = ", ".join(f"{k} {_k(x)}" for k, x in p.terms.items())
            print(
                f"| {date} | {fw} | {route} | {p.fps:.0f} | {meas} | {p.fps / meas:.2f} | {p.binding} | {terms} |"
            )
        return 0
    if a.launch_us is not None:
        data["today"]["machine"]["launch_us"] = a.launch_us
    m = data["today"]["machine"]
    print(
        f"speed ratio {m['speed_ratio']}, host ratio {m['host_ratio']}, launch {m['launch_us']} µs, "
        f"util {m['util']}\n"
    )
    res = today(data, a.cores, max_inference_workers=a.max_inference_workers)
    sf = today(data, a.cores, "sample_factory", a.max_inference_workers)
    for title, r in (("surge", res), ("Sample Factory 2.1.1", sf)):
        print(f"{title}:\n")
        print("| config | " + " | ".join(f"{c} cores" for c in a.cores) + " | terms at the largest |")
        print("|---|" + "---|" * len(a.cores) + "---|")
        for name, by_c in r.items():
            cells = [
                f"{_k(p.fps)} ({p.binding}{f', {p.inference_workers} inference' if p.inference_workers > 1 else ''})"
                for p in by_c.values()
            ]
            last = by_c[a.cores[-1]]
            terms = ", ".join(f"{k} {_k(x)}" for k, x in last.terms.items())
            print(f"| {name} | " + " | ".join(cells) + f" | {terms} |")
        print()
    print("surge / Sample Factory, both predicted:\n")
    print("| config | " + " | ".join(f"{c} cores" for c in a.cores) + " |")
    print("|---|" + "---|" * len(a.cores))
    for name in sf:
        cells = [f"{res[name][c].fps / sf[name][c].fps:.2f}x" for c in a.cores]
        print(f"| {name} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
