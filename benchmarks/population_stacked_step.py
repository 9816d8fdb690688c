"""What splitting a batch between P policies costs in a bare training step, with and without
stacking the policies: the cartpole config's MLP (4-512-512, ELU, a 2-logit policy head and a value
head), a log-likelihood + squared-error loss, gradient clipping and one fused Adam step; no
normalisers, no PPO clipping, no statistics.

  1 policy x n      one step on B samples
  1 policy x B/P    one step on B/P samples (P learners each take such steps: P times as many)
  P stacked x B/P   the P policies' parameters stacked `[P, ...]`, one step with batched matmuls
                    (`torch.baddbmm`) and one Adam over the stacked tensors

CPU time of this thread (`time.thread_time`), medians of the alternating rounds; samples/s and the
ratio to one policy.

    python benchmarks/population_stacked_step.py --batch 512 --policies 4
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch
from torch import Tensor, nn


def make(policies: int, seed: int = 0) -> tuple[list[nn.Parameter], torch.optim.Adam]:
    """Stacked parameters `[policies, ...]` of the MLP and a fused Adam over them."""
    g = torch.Generator().manual_seed(seed)
    shapes = [(4, 512), (512,), (512, 512), (512,), (512, 3), (3,)]
    params = [nn.Parameter(torch.randn(policies, *s, generator=g) * 0.05) for s in shapes]
    return params, torch.optim.Adam(params, lr=1e-4, fused=True)


def step(
    params: list[nn.Parameter], opt: torch.optim.Adam, x: Tensor, actions: Tensor, targets: Tensor
) -> None:
    """One optimizer step on x `[P, n, 4]`, actions `[P, n, 1]` int64, targets `[P, n]`."""
    w1, b1, w2, b2, w3, b3 = params
    h = nn.functional.elu(torch.baddbmm(b1.unsqueeze(1), x, w1))
    h = nn.functional.elu(torch.baddbmm(b2.unsqueeze(1), h, w2))
    out = torch.baddbmm(b3.unsqueeze(1), h, w3)
    log_probs = out[..., :2].log_softmax(-1).gather(-1, actions).squeeze(-1)
    loss = -log_probs.mean() + (out[..., 2] - targets).pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    nn.utils.clip_grad_norm_(params, 4.0)
    opt.step()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=512, help="total samples per iteration")
    p.add_argument("--policies", type=int, default=4)
    p.add_argument("--rounds", type=int, default=30)
    a = p.parse_args()
    torch.set_num_threads(1)
    n = a.batch // a.policies
    settings = {
        f"1 policy x {a.batch}": (1, a.batch),
        f"1 policy x {n}": (1, n),
        f"{a.policies} stacked x {n}": (a.policies, n),
    }
    models = {name: make(P) for name, (P, _) in settings.items()}
    times: dict[str, list[float]] = {name: [] for name in settings}
    for r in range(a.rounds + 3):
        for name, (P, m) in settings.items():
            x, actions, targets = torch.randn(P, m, 4), torch.randint(0, 2, (P, m, 1)), torch.randn(P, m)
            t0 = time.thread_time()
            step(*models[name], x, actions, targets)
            if r >= 3:  # warm-up rounds
                times[name].append(time.thread_time() - t0)
    rate = {name: settings[name][0] * settings[name][1] / statistics.median(ts) for name, ts in times.items()}
    one = rate[f"1 policy x {a.batch}"]
    print("| setting | ms per step | samples/s | / 1 policy |")
    print("|---|---|---|---|")
    for name, ts in times.items():
        print(f"| {name} | {statistics.median(ts) * 1e3:.2f} | {rate[name]:.0f} | {rate[name] / one:.2f} |")


if __name__ == "__main__":
    main()
