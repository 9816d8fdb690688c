"""CPU time of a learner's RNN pass (forward and backward) over a batch with episode ends inside,
by path: `RnnCore.sequence` (what the learner runs), its two paths (one call per time range, one
packed call) and one call per step (what `sequence` ran before, when any column had an end inside
its chunk).

    python benchmarks/rnn_sequence.py                       # doom_benchmark's shape
    python benchmarks/rnn_sequence.py --T 32 --B 64 --hidden 256 --rounds 7

One torch thread, CPU seconds of this thread, median of the rounds, each round alternating the
paths.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

import torch

from surge.models.cores import RnnCore


def stepwise(
    core: RnnCore, x: torch.Tensor, stored: torch.Tensor, dones: torch.Tensor, R: int
) -> torch.Tensor:
    """One RNN call per step: the state from the stored one at chunk starts, zeros after an end."""
    outs, state = [], None
    for t in range(x.shape[0]):
        if t % R == 0:
            state = core._unflatten(stored[t].detach())
        out, state = core.rnn(x[t : t + 1], state)
        outs.append(out)
        keep = (1.0 - dones[t]).view(1, -1, 1)
        state = (state[0] * keep, state[1] * keep) if core.is_lstm else state * keep
    return torch.cat(outs)


def _paths(
    core: RnnCore, x: torch.Tensor, stored: torch.Tensor, dones: torch.Tensor, T: int, cuts: list[int]
) -> dict[str, Callable[[], torch.Tensor]]:
    return {
        "sequence": lambda: core.sequence(x, stored, dones, T),
        "split": lambda: core.sequence_split(x, stored, dones, T, cuts),
        "packed": lambda: core.sequence_packed(x, stored, dones.numpy(), T),
        "per step": lambda: stepwise(core, x, stored, dones, T),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--T", type=int, default=32, help="steps per trajectory (= --recurrence)")
    ap.add_argument("--B", type=int, default=32, help="trajectories in the batch")
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--ends", type=int, nargs="+", default=[0, 2, 8, 64], help="episode ends in the batch")
    ap.add_argument("--rounds", type=int, default=5)
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    T, B, H = a.T, a.B, a.hidden
    print(
        f"T={T} B={B} hidden={H}, ms per forward+backward (median of {a.rounds}; load {open('/proc/loadavg').read().split()[0]})"
    )
    print(
        "| core | ends in batch | time ranges | sequence | split | packed | per step | per step / sequence |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for rnn_type in ("gru", "lstm"):
        torch.manual_seed(0)
        core = RnnCore(H, H, rnn_type, 1)
        x = torch.randn(T, B, H, requires_grad=True)
        stored = torch.randn(T, B, core.state_size)
        for n in a.ends:
            dones = torch.zeros(T, B)
            for i in range(n):  # spread over steps and columns
                dones[(7 * i + 3) % T, (5 * i + 1) % B] = 1.0
            cuts = sorted(set(range(0, T, T)) | {t + 1 for t in range(T - 1) if dones[t].any()})
            paths = _paths(core, x, stored, dones, T, cuts)
            times: dict[str, list[float]] = {k: [] for k in paths}
            for _ in range(a.rounds):
                for name, fn in paths.items():
                    t0 = time.thread_time()
                    fn().sum().backward()
                    times[name].append(time.thread_time() - t0)
            ms = {k: statistics.median(v) * 1e3 for k, v in times.items()}
            print(
                f"| {rnn_type} | {n} | {len(cuts)} | {ms['sequence']:.1f} | {ms['split']:.1f} | {ms['packed']:.1f} "
                f"| {ms['per step']:.1f} | {ms['per step'] / ms['sequence']:.2f} |",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
