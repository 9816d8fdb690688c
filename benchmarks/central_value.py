"""Asymmetric actor-critic (central value) vs the shared actor-critic on `occluded_payout`.

    PYTHONPATH=. OMP_NUM_THREADS=1 python benchmarks/central_value.py --seeds 1 2 3 \\
        --env_steps 20000 --bins 10 --zeros \\
        --out docs/central_value.md --plot docs/central_value_curves.png

Trains APPO (GAE, feed-forward) with `--central_value=False` (the actor-critic's own value head,
which sees only the actor's observation) and `--central_value=True` (a central value on the
state, which holds the hidden loan of `surge.envs.occluded_payout`) for each seed, in the serial
placement (with `--zeros` also the central value fed zeros instead of the state: same networks
and training, no information), and writes a Markdown table of the mean training-episode return (as the sampler played
them) per bin of env steps, mean ± std over the seeds, and the curves as a PNG (matplotlib).
The command that made the file is written at its top.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from typing import Any

import numpy as np
import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import TrainingRun
from surge.experiment.monitor import Monitor
from surge.learning.central_value import CentralValue

# fmt: off
BASE = [
    "--env=occluded_payout", "--serial_mode=True", "--num_workers=2", "--num_torch_threads=1",
    "--decorrelate_experience_max_seconds=0", "--set_workers_cpu_affinity=False",
    "--save_every_sec=100000", "--experiment_summaries_interval=100000",
]
# fmt: on
VARIANTS = {"shared critic": "--central_value=False", "central value": "--central_value=True"}
#: the control of `--zeros`: the central value with the same training, fed zeros instead of the state
ZEROS = "central value fed zeros"


def train_curve(
    variant_flag: str, seed: int, env_steps: int, extra: list[str], zeros: bool = False
) -> list[tuple[int, float]]:
    """Trains one run; returns `(env steps when the episode ended, episode return)` per episode.
    `zeros`: the central value's input is replaced by zeros (serial placement: same process)."""
    forward = CentralValue.forward
    if zeros:
        CentralValue.forward = lambda self, state: forward(self, torch.zeros_like(state))  # type: ignore[method-assign]
    try:
        return _train_curve(variant_flag, seed, env_steps, extra)
    finally:
        CentralValue.forward = forward  # type: ignore[method-assign]


def _train_curve(variant_flag: str, seed: int, env_steps: int, extra: list[str]) -> list[tuple[int, float]]:
    with tempfile.TemporaryDirectory() as d:
        cfg = parse_cfg(
            [
                *BASE,
                f"--train_dir={d}",
                "--experiment=cv",
                variant_flag,
                f"--seed={seed}",
                f"--train_for_env_steps={env_steps}",
                *extra,
            ]  # fmt: skip
        )
        episodes: list[tuple[int, float]] = []
        add = Monitor.add_episodes

        def record(m: Monitor, eps: list) -> None:
            episodes.extend((m.env_steps, float(e.episode_return)) for e in eps)
            add(m, eps)

        Monitor.add_episodes = record  # type: ignore[method-assign]
        try:
            assert TrainingRun(cfg).run() == "done"
        finally:
            Monitor.add_episodes = add  # type: ignore[method-assign]
    return episodes


def binned(episodes: list[tuple[int, float]], edges: np.ndarray) -> np.ndarray:
    """Mean return of the episodes that ended in each bin `[edges[i], edges[i+1])` of env steps."""
    steps = np.array([s for s, _ in episodes])
    rets = np.array([r for _, r in episodes])
    out = np.full(len(edges) - 1, np.nan)
    for i in range(len(edges) - 1):
        sel = (steps >= edges[i]) & (steps < edges[i + 1])
        if sel.any():
            out[i] = rets[sel].mean()
    return out


BEGIN, END = "<!-- results: benchmarks/central_value.py -->", "<!-- /results -->"


def write_results(path: str, command: str, table: str) -> None:
    """Writes the results to `path`: in a page that has the `BEGIN`/`END` markers, the block
    between them and the page's first line (the command) are replaced, the rest kept; else the
    command and the table make the whole file."""
    import os

    text = open(path).read() if os.path.exists(path) else ""
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        first, _, body = head.partition("\n")
        head = (command + "\n" + body) if first.startswith("<!-- made by:") else command + "\n" + head
        text = f"{head}{BEGIN}\n{table}{END}{tail}"
    else:
        text = f"{command}\n\n{table}"
    with open(path, "w") as f:
        f.write(text)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--seeds", type=int, nargs="+", default=[1, 2, 3])
    p.add_argument("--env_steps", type=int, default=60000)
    p.add_argument("--bins", type=int, default=12)
    p.add_argument("--out", default="")
    p.add_argument("--plot", default="")
    p.add_argument("--zeros", action="store_true", help=f"also run the control {ZEROS!r}")
    p.add_argument("extra", nargs="*", help="more surge flags for both variants (after --)")
    a = p.parse_args(argv)
    edges = np.linspace(0, a.env_steps, a.bins + 1)
    curves: dict[str, np.ndarray] = {}
    seconds: dict[str, float] = {}
    variants = {k: (v, False) for k, v in VARIANTS.items()}
    if a.zeros:
        variants[ZEROS] = ("--central_value=True", True)
    for name, (flag, zeros) in variants.items():
        rows = []
        t0 = time.time()
        for seed in a.seeds:
            rows.append(binned(train_curve(flag, seed, a.env_steps, a.extra, zeros), edges))
            print(f"{name} seed {seed}: last bin {rows[-1][-1]:.2f}", flush=True)
        curves[name] = np.stack(rows)
        seconds[name] = (time.time() - t0) / len(a.seeds)
    lines = [
        "<!-- made by: PYTHONPATH=. OMP_NUM_THREADS=1 python "
        + " ".join(
            shlex.quote(x)
            for x in ["benchmarks/central_value.py", *(argv if argv is not None else sys.argv[1:])]
        )
        + " -->",
        "",
        f"Mean training-episode return on `occluded_payout` per bin of env steps, mean ± std over "
        f"seeds {a.seeds} (random policy 2, best 8). Seconds per run: "
        + ", ".join(f"{k} {v:.1f} s" for k, v in seconds.items())
        + ".",
        "",
        "| env steps | " + " | ".join(curves) + " |",
        "|---|" + "---|" * len(curves),
    ]
    for i in range(a.bins):
        cells = [f"{np.nanmean(c[:, i]):.2f} ± {np.nanstd(c[:, i]):.2f}" for c in curves.values()]
        lines.append(f"| {int(edges[i])}-{int(edges[i + 1])} | " + " | ".join(cells) + " |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.out:
        write_results(a.out, lines[0], "\n".join(lines[2:]) + "\n")
    if a.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        mid = (edges[:-1] + edges[1:]) / 2
        fig, ax = plt.subplots(figsize=(6, 4))
        for name, c in curves.items():
            mean, std = np.nanmean(c, 0), np.nanstd(c, 0)
            ax.plot(mid, mean, label=name)
            ax.fill_between(mid, mean - std, mean + std, alpha=0.2)
        ax.set_xlabel("env steps")
        ax.set_ylabel("mean episode return")
        ax.set_title(f"occluded_payout, APPO (GAE), seeds {a.seeds}")
        ax.legend()
        fig.tight_layout()
        fig.savefig(a.plot, dpi=100)
    return {"edges": edges, "curves": curves}


if __name__ == "__main__":
    main()
