"""Seconds per DQN update on the CPU for the Q-network variants of Rainbow minus noisy: the plain
head, the dueling head with linear streams on the shared 512-unit layer (surge before 38d8b74),
Wang et al.'s dueling network (shared convolutions, a 512-unit layer per stream; surge's
`--dueling` since 38d8b74), and the latter under bf16 autocast.

    OMP_NUM_THREADS=1 taskset -c 1 python benchmarks/dqn_update_cost.py --rounds 5

One update is what `DQNLearner` does per batch: online Q of the batch, the double-DQN target (online
argmax, target network value) of the next observations, Huber loss, backward, gradient clipping at
norm 10 and a step of the learners' Adam (`make_adam`: torch's fused kernel); batch 32 of Breakout's 4x84x84 uint8 stacks, 4 actions, the Atari
family's Nature CNN, one torch thread. Rounds alternate the variants' order; the median per
variant and its ratio to the linear-stream dueling head are printed.
"""

from __future__ import annotations

import argparse
import copy
import statistics
import time
from collections.abc import Callable

import gymnasium as gym
import numpy as np
import torch
import torch.nn.functional as F

import surge.algorithms.dqn.networks as qn
from surge.app.resolve import parse_cfg
from surge.learning.base import make_adam

VARIANTS = ("plain", "dueling_linear", "dueling_paper", "dueling_paper_bf16")


def build(cfg, variant: str) -> qn.QNetwork:
    """The Q-network of `variant` for Breakout's spaces."""
    obs_space, act_space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8), gym.spaces.Discrete(4)
    split = qn.split_last_hidden_layer
    if variant == "dueling_linear":  # the streams stay linear on the shared layer, as before 38d8b74
        qn.split_last_hidden_layer = lambda c, s: (c, None)
    try:
        return qn.QNetwork(cfg, obs_space, act_space, dueling=variant != "plain")
    finally:
        qn.split_last_hidden_layer = split


def make_update(cfg, variant: str, batch: int = 32) -> tuple[qn.QNetwork, Callable[[], None]]:
    """(network, a function running one update on a fixed random batch)."""
    torch.manual_seed(0)
    net = build(cfg, variant)
    target = copy.deepcopy(net).requires_grad_(False)
    opt = make_adam(net, cfg, torch.device("cpu"))  # the learners' Adam (fused kernel on the CPU)
    g = torch.Generator().manual_seed(1)
    obs = torch.randint(0, 256, (batch, 4, 84, 84), dtype=torch.uint8, generator=g)
    nxt = torch.randint(0, 256, (batch, 4, 84, 84), dtype=torch.uint8, generator=g)
    actions = torch.randint(0, 4, (batch, 1), generator=g)
    bf16 = variant.endswith("bf16")

    def update() -> None:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
            q = net(obs).q_values.float().gather(1, actions).squeeze(1)
            with torch.no_grad():
                best = net(nxt).q_values.argmax(1, keepdim=True)
                y = 0.99 * target(nxt).q_values.float().gather(1, best).squeeze(1)
        loss = F.huber_loss(q, y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(net.parameters(), 10.0)
        opt.step()

    return net, update


def main(argv: list[str] | None = None) -> dict[str, float]:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--updates", type=int, default=40, help="updates timed per variant per round")
    p.add_argument("--warmup", type=int, default=5)
    a = p.parse_args(argv)
    torch.set_num_threads(1)
    cfg = parse_cfg(["--env=atari_breakout", "--algo=DQN", "--train_for_env_steps=1000"])
    runs = {v: make_update(cfg, v) for v in VARIANTS}
    for v, (net, update) in runs.items():
        print(f"{v}: {sum(p.numel() for p in net.parameters())} parameters")
        for _ in range(a.warmup):
            update()
    times: dict[str, list[float]] = {v: [] for v in VARIANTS}
    for r in range(a.rounds):
        for v in VARIANTS if r % 2 == 0 else VARIANTS[::-1]:
            update = runs[v][1]
            t = time.perf_counter()
            for _ in range(a.updates):
                update()
            times[v].append((time.perf_counter() - t) / a.updates)
    medians = {v: statistics.median(ts) for v, ts in times.items()}
    for v in VARIANTS:
        rounds = ", ".join(f"{1000 * t:.1f}" for t in times[v])
        ratio = medians[v] / medians["dueling_linear"]
        print(f"{v}: {1000 * medians[v]:.1f} ms per update (rounds {rounds}); / dueling_linear {ratio:.2f}")
    return medians


if __name__ == "__main__":
    main()
