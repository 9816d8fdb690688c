"""Data-parallel learners (`surge.runtime.data_parallel`) in two gloo processes spawned with
torch.multiprocessing, on fixed data, through surge's APPO learner (`Learner.train` ->
`train_batch` -> `_step` -> `apply_gradients`):

- the gradient each rank applies equals the gradient one process computes on the union of both
  ranks' batches (the reference: an unmodified single learner, no process group), and so do the
  weights after the Adam step (tolerance 1e-6);
- a non-finite loss on one rank skips the step on both;
- the round protocol: a rank that stops is seen by the other at its next round;
- weights that differ between ranks are caught (`RanksDiverged`);
- rank 0's state is broadcast to a rank that started from other weights.

The loss is a masked mean over valid samples: with every sample valid and the same number per rank,
the mean of the two ranks' gradients is the gradient of the mean over the union. Per-minibatch
advantage normalisation would differ (statistics of a half vs of the union): it is off here.
"""

from __future__ import annotations

import os
import socket

import gymnasium as gym
import numpy as np
import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from surge.algorithms.appo.learner import Learner
from surge.app.resolve import parse_cfg
from surge.models.actor_critic import ActorCritic
from surge.runtime.data_parallel import DataParallel, RanksDiverged
from surge.runtime.ranks import RankInfo

T, N, OBS, ACTS = 8, 4, 4, 3  # N agents per rank
OBS_SPACE = gym.spaces.Box(-5.0, 5.0, (OBS,), np.float32)
ACTION_SPACE = gym.spaces.Discrete(ACTS)


#: the learner settings compared: GAE, V-trace, and GAE with observation and return normalisers
#: (their statistics fold in both ranks' batches: `DataParallel.reduce_moments`)
MODES = {
    "gae": ["--with_vtrace=False", "--recurrence=1"],
    "vtrace": ["--with_vtrace=True", f"--recurrence={T}"],
    "gae_normalized": [
        "--with_vtrace=False", "--recurrence=1", "--normalize_input=True", "--normalize_returns=True",
    ],
}  # fmt: skip


def _cfg(tmp: str, n_agents: int, mode: str):
    return parse_cfg(
        [
            "--env=cartpole",
            f"--train_dir={tmp}",
            "--seed=0",
            "--use_rnn=False",
            f"--rollout={T}",
            "--encoder_mlp_layers",
            "16",
            "--nonlinearity=tanh",
            "--normalize_advantage=False",
            "--max_grad_norm=0.5",  # clipped after averaging: the union's norm
            f"--batch_size={T * n_agents}",  # one minibatch per epoch
            "--ppo_epochs=1",
            "--learning_rate=0.01",
            "--exploration_loss_coeff=0.05",
            *MODES[mode],
        ]
    )


class StubBuffers:
    """`gather(slots)` returns the fixed trajectories `[N, T(+1), ...]`, whatever slots are asked."""

    def __init__(self, data: dict[str, torch.Tensor]):
        self.data = data

    def gather(self, slots: torch.Tensor, pin_memory: bool = False) -> dict[str, torch.Tensor]:
        return {k: v.pin_memory() if pin_memory else v.clone() for k, v in self.data.items()}


def _union_batch(n: int) -> dict[str, torch.Tensor]:
    """A batch of `n` agents' trajectories with episode ends inside, a stale behaviour policy and
    every sample active (buffers' layout `[n, T(+1), ...]`)."""
    g = torch.Generator().manual_seed(1)
    logits = 2.0 * torch.randn(n, T, ACTS, generator=g)
    mu = torch.distributions.Categorical(logits=logits)
    actions = torch.multinomial(mu.probs.reshape(-1, ACTS), 1, generator=g).reshape(n, T)
    term = torch.zeros(n, T, dtype=torch.bool)
    trunc = torch.zeros(n, T, dtype=torch.bool)
    term[0, 3], trunc[1, 5], term[n - 1, 2] = True, True, True
    return {
        "obs": torch.randn(n, T + 1, OBS, generator=g),
        "rnn_states": torch.zeros(n, T + 1, 0),
        "actions": actions,
        "behavior_log_probs": mu.log_prob(actions),
        "values": torch.randn(n, T, generator=g),
        "action_logits": logits,
        "rewards": 2.0 * torch.randn(n, T, generator=g),
        "terminated": term,
        "truncated": trunc,
        "is_active": torch.ones(n, T, dtype=torch.bool),
        "policy_id": torch.zeros(n, T, dtype=torch.int8),
        "policy_version": torch.zeros(n, T, dtype=torch.int64),
    }


def _part(data: dict[str, torch.Tensor], rank: int) -> dict[str, torch.Tensor]:
    return {k: v[rank * N : (rank + 1) * N].clone() for k, v in data.items()}


def _learner(cfg, data, seed: int = 0) -> Learner:
    torch.manual_seed(seed)
    return Learner(cfg, ActorCritic(cfg, OBS_SPACE, ACTION_SPACE), StubBuffers(data), torch.device("cpu"))


def _grads_and_weights(learner: Learner) -> dict[str, torch.Tensor]:
    """Each parameter's applied gradient and every tensor of the model's state after the step
    (weights and normaliser statistics)."""
    out = {f"grad/{k}": p.grad.detach().clone() for k, p in learner.model.named_parameters()}
    out.update({f"state/{k}": v.detach().clone() for k, v in learner.model.state_dict().items()})
    return out


def _rank_main(rank: int, port: int, tmp: str) -> None:
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=2)
    try:
        for mode in MODES:
            _rank_checks(rank, tmp, mode)
        _kl_adaptive_checks(rank, tmp)
        # neither rank tears gloo down while the other may still have a collective in flight: one
        # CI run saw rank 1 abort ("terminate called without an active exception", SIGABRT) after
        # both had written every result
        dist.barrier()
    finally:
        dist.destroy_process_group()
    os._exit(0)  # the results are written: no interpreter teardown that could abort the rank


def _rank_checks(rank: int, tmp: str, mode: str) -> None:
    info = RankInfo(rank, 2, rank)
    data = _union_batch(2 * N)
    cfg = _cfg(tmp, N, mode)
    # the ranks start from different weights (seed + rank): the broadcast makes them rank 0's
    learner = _learner(cfg, _part(data, rank), seed=rank)
    dp = DataParallel(info, torch.device("cpu"), init=False)
    dp.broadcast_policy(learner.model, learner)
    learner.data_parallel = dp
    frames = dp.begin_round(100 * (rank + 1), learner.model)
    learner.train(torch.arange(N), env_frames=frames or 0)
    out = _grads_and_weights(learner)
    out["round_frames"] = torch.tensor(frames)
    out["version"] = torch.tensor(learner.policy_version)

    # a non-finite loss on rank 1 only: both skip the step
    bad = _part(data, rank)
    if rank == 1:
        bad["rewards"][0, 0] = float("nan")
    learner.buffers = StubBuffers(bad)
    before = [p.detach().clone() for p in learner.model.parameters()]
    stats = learner.train(torch.arange(N), env_frames=0)
    out["skipped"] = torch.tensor(stats["skipped_updates"])
    out["unchanged"] = torch.tensor(
        all(torch.equal(a, p) for a, p in zip(before, learner.model.parameters(), strict=True))
    )

    # stop protocol: rank 0 stops, rank 1's next round sees it
    if rank == 0:
        dp.finish(0, learner.model)
        out["round_after_stop"] = torch.tensor(-1)
    else:
        r = dp.begin_round(5, learner.model)
        out["round_after_stop"] = torch.tensor(-2 if r is None else r)
    out["stopped"] = torch.tensor(dp.stopped)

    # divergence is caught on every rank
    if rank == 1:
        with torch.no_grad():
            next(learner.model.parameters()).add_(1e-3)
    try:
        dp.check_identical(learner.model, "in the test")
        out["diverged_caught"] = torch.tensor(False)
    except RanksDiverged:
        out["diverged_caught"] = torch.tensor(True)
    torch.save(out, os.path.join(tmp, f"rank{rank}_{mode}.pt"))


def _kl_adaptive_checks(rank: int, tmp: str) -> None:
    """`--lr_schedule=kl_adaptive_minibatch`: each rank measures its own KL, the rule sees their
    mean. Rank 0's KL (0.001) alone would raise the rate (below half the 0.008 threshold), rank
    1's (0.1) would lower it; their mean (0.0505) lowers it on both."""
    cfg = _cfg(tmp, N, "gae")
    cfg.lr_schedule = "kl_adaptive_minibatch"
    learner = _learner(cfg, _part(_union_batch(2 * N), rank))
    dp = DataParallel(RankInfo(rank, 2, rank), torch.device("cpu"), init=False)
    dp.broadcast_policy(learner.model, learner)
    learner.data_parallel = dp
    assert learner.kl_lr is not None
    before = learner.kl_lr.lr
    after = learner.adapt_learning_rate([0.001, 0.1][rank])
    torch.save({"before": before, "after": after}, os.path.join(tmp, f"rank{rank}_kl.pt"))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two_ranks(tmp_path_factory):
    """Runs `_rank_main` in two spawned gloo processes once; the folder holds their results."""
    tmp = tmp_path_factory.mktemp("ddp")
    mp.start_processes(_rank_main, args=(_free_port(), str(tmp)), nprocs=2, join=True, start_method="spawn")
    return tmp


@pytest.mark.slow
@pytest.mark.parametrize("mode", list(MODES))
def test_all_reduced_gradient_equals_single_process_on_union(two_ranks, tmp_path, mode):
    ranks = [torch.load(two_ranks / f"rank{r}_{mode}.pt", weights_only=True) for r in range(2)]

    # the reference: one learner, no process group, on both ranks' trajectories at once
    data = _union_batch(2 * N)
    single = _learner(_cfg(str(tmp_path), 2 * N, mode), data, seed=0)
    single.train(torch.arange(2 * N), env_frames=300)
    want = _grads_and_weights(single)
    for r, got in enumerate(ranks):
        for k, v in want.items():
            torch.testing.assert_close(
                got[k], v, rtol=0, atol=1e-6, msg=lambda m, r=r, k=k: f"rank {r}, {k}: {m}"
            )
        assert int(got["version"]) == 1
        assert int(got["round_frames"]) == 300  # 100 + 200: the ranks' env frames summed
    # the two ranks' weights are bitwise equal
    for k in want:
        assert torch.equal(ranks[0][k], ranks[1][k]), k

    for got in ranks:
        assert float(got["skipped"]) == 1.0 and bool(got["unchanged"])  # both skipped rank 1's NaN
        assert bool(got["stopped"]) and bool(got["diverged_caught"])
    assert int(ranks[1]["round_after_stop"]) == -2  # rank 1's round said: stop


@pytest.mark.slow
def test_kl_adaptive_rate_reacts_to_the_mean_kl_of_the_ranks(two_ranks):
    got = [torch.load(two_ranks / f"rank{r}_kl.pt", weights_only=True) for r in range(2)]
    for g in got:  # rl_games' rule: KL > 2 x threshold -> lr / 1.5
        assert g["after"] == pytest.approx(g["before"] / 1.5)
