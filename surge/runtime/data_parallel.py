"""Data-parallel learners: one process group over the ranks torchrun starts, joined by the
process that learns (the serial placement's only process, or the async placement's learner
process), never by the main process of the async placement.

Every rank samples and learns on its own data; the learners stay identical because

- rank 0's whole learning state (weights, normaliser statistics, Adam's moments, policy_version)
  is broadcast to the others when they start (`broadcast_policy`), fresh or resumed;
- every optimizer step all-reduces the flat gradient, averaged over ranks, with a flag of
  non-finite losses in the same call (`average_gradients`): a step is skipped on every rank
  or on none;
- training proceeds in rounds, one batch per rank each: a round starts with a small all-reduce
  (`begin_round`) that says whether a rank is stopping, sums the ranks' env frames (the
  learning-rate schedule runs on the global count, so every rank uses the same rate) and compares
  a checksum of the weights (`RanksDiverged` when they differ). A rank that stops answers the
  next round with "stop" (`finish`), and every rank stops training there: no rank waits in a
  collective another rank will never call.

A round trains the same number of optimizer steps on every rank: batches have the same shape and
`LearnerBase` keeps the units without valid samples in data-parallel runs, and a batch is not left
in the middle at a stop (the stop comes at the next round). See docs/distributed.md.
"""

from __future__ import annotations

import datetime
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

import torch
import torch.distributed as dist
from torch import Tensor, nn

from surge.models.normalization import RunningMeanStd
from surge.runtime.placement import load_policy_state, policy_state
from surge.runtime.ranks import RankInfo, rank_info

log = logging.getLogger("surge")

#: how long a collective waits for the other ranks before the run fails (seconds): a rank's
#: learner waits in `begin_round` while the slowest rank collects its batch
COLLECTIVE_TIMEOUT_SEC = 1800.0
#: how often a waiting round calls `DataParallel.on_wait` (seconds)
WAIT_POLL_SEC = 0.01


class RanksDiverged(RuntimeError):
    """The ranks' weights differ (a bug: they are kept identical by construction)."""


def _to_cpu(x: Any) -> Any:
    if isinstance(x, Tensor):
        return x.detach().cpu()
    if isinstance(x, dict):
        return {k: _to_cpu(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_to_cpu(v) for v in x)
    return x


def tensor_checksums(model: nn.Module | dict[str, Tensor]) -> Tensor:
    """`[K]` float64 on the CPU: for each of the K floating-point tensors of `model.state_dict()`
    (or of a state dict: parameters and buffers such as normaliser statistics), the float64 sum of
    its values plus the sum of their squares. Equal on ranks whose weights are bitwise equal (the
    same reduction over the same values); one entry per tensor, so a large tensor (a normaliser's
    sample count) does not hide a small difference in another."""
    state = model.state_dict() if isinstance(model, nn.Module) else model
    sums = [
        (v.detach().double().sum() + v.detach().double().square().sum()).reshape(1)
        for v in state.values()
        if v.is_floating_point()
    ]
    return torch.cat(sums).cpu() if sums else torch.zeros(0, dtype=torch.float64)


def weights_checksum(model: nn.Module | dict[str, Tensor]) -> float:
    """The sum of `tensor_checksums`: one number to log and compare between ranks' logs."""
    return float(tensor_checksums(model).sum())


class DataParallel:
    """This rank's membership of the process group (see the module docstring).

    Args:
        info: the rank (`surge.runtime.ranks.rank_info`).
        device: the learning device: NCCL on CUDA, gloo on the CPU.
        init: initialise the process group from torchrun's environment (`MASTER_ADDR`,
            `MASTER_PORT`); False when the caller initialised it (tests).
    """

    def __init__(self, info: RankInfo, device: torch.device, init: bool = True):
        self.info, self.device = info, device
        self.backend = "nccl" if device.type == "cuda" else "gloo"
        self.stopped = False  # a rank stopped: no more rounds, no more collectives
        self.rounds = 0
        self.global_env_frames = 0  # all ranks' env frames summed, at the last round's start
        self.last_checksum = float("nan")  # `weights_checksum`, equal on all ranks, at the last round
        #: called every `WAIT_POLL_SEC` while a round waits for the other ranks (the async learner's
        #: heartbeat: a rank that waits for a slower one's batch is not hung); None: just wait
        self.on_wait: Callable[[], None] | None = None
        if init and not dist.is_initialized():
            if device.type == "cuda":
                torch.cuda.set_device(device)
            dist.init_process_group(
                self.backend,
                init_method="env://",
                rank=info.rank,
                world_size=info.world_size,
                timeout=datetime.timedelta(seconds=COLLECTIVE_TIMEOUT_SEC),
            )
        # collectives run on the device NCCL reduces on; gloo on the CPU
        self.comm_device = device if self.backend == "nccl" else torch.device("cpu")
        # observation and return normalisers fold in all ranks' batches (their statistics are
        # part of the weights the ranks keep identical)
        RunningMeanStd.reduce_moments = self.reduce_moments
        log.info(
            "Data parallel: rank %d of %d (local rank %d), %s on %s",
            info.rank, info.world_size, info.local_rank, self.backend, device,
        )  # fmt: skip

    # ------------------------------------------------------------------ start
    def broadcast_policy(self, model: nn.Module, learner: Any) -> None:
        """Replaces this rank's model and learner state (optimizers, policy_version,
        hyper-parameters) by rank 0's: every rank starts from the same point, fresh (their seeds
        differ) or resumed (rank 0 read the checkpoint)."""
        obj: list[Any] = [_to_cpu(policy_state(model, learner)) if self.info.is_main else None]
        dist.broadcast_object_list(obj, src=0, device=self.comm_device if self.backend == "nccl" else None)
        if not self.info.is_main:
            load_policy_state(obj[0], model, learner)
        self.check_identical(model, "at the start")

    # ------------------------------------------------------------------ rounds
    def begin_round(self, env_frames: int, model: nn.Module, stop: bool = False) -> int | None:
        """Starts a training round (call it before training each batch, and with `stop=True`
        once when this rank stops: `finish`). Returns the env frames of all ranks summed (the
        count to schedule the learning rate on), or None when a rank stopped: train no more.

        Raises:
            RanksDiverged: the ranks' weights differ.
        """
        if self.stopped:
            return None
        t = torch.tensor([float(stop), float(env_frames)], dtype=torch.float64, device=self.comm_device)
        work = dist.all_reduce(t, op=dist.ReduceOp.SUM, async_op=True)
        if self.on_wait is not None:
            while not work.is_completed():
                self.on_wait()
                time.sleep(WAIT_POLL_SEC)
        work.wait()
        self.last_checksum = self.check_identical(model, f"at round {self.rounds}")
        self.rounds += 1
        self.global_env_frames = int(t[1].item())
        if t[0].item() > 0:
            self.stopped = True
            return None
        return self.global_env_frames

    def finish(self, env_frames: int, model: nn.Module) -> None:
        """This rank stops training at `env_frames` (its own): tells the others at their next
        round (once); `global_env_frames` is then all ranks' frames at that round."""
        if not self.stopped:
            self.begin_round(env_frames, model, stop=True)
            self.stopped = True

    def check_identical(self, model: nn.Module, when: str) -> float:
        """Compares the ranks' `tensor_checksums` (one all-reduce of 2K numbers for K tensors);
        returns their sum (`weights_checksum`).

        Raises:
            RanksDiverged: they differ.
        """
        sums = tensor_checksums(model)
        t = torch.cat([sums, -sums]).to(self.comm_device)
        dist.all_reduce(t, op=dist.ReduceOp.MAX)
        hi, lo = t[: len(sums)].cpu(), -t[len(sums) :].cpu()
        if not torch.equal(hi, lo):
            names = [k for k, v in model.state_dict().items() if v.is_floating_point()]
            bad = [names[i] for i in (hi != lo).nonzero().flatten().tolist()]
            raise RanksDiverged(
                f"the data-parallel ranks' weights differ {when}: {', '.join(bad)} (rank "
                f"{self.info.rank}). This is a bug: please report it with the command."
            )
        return float(sums.sum())

    # ------------------------------------------------------------------ gradients
    def average_gradients(self, params: Iterable[nn.Parameter], loss: Tensor) -> bool:
        """Replaces each parameter's `.grad` by its mean over the ranks (one all-reduce of the
        flat gradient; a parameter without a gradient counts as zeros), in place. Returns True
        when every rank's `loss` was finite (the flag travels in the same all-reduce), so that
        every rank skips the step or none does."""
        params = [p for p in params if p.requires_grad]
        grads = [p.grad if p.grad is not None else torch.zeros_like(p) for p in params]
        nonfinite = (~torch.isfinite(loss.detach())).to(grads[0].dtype).reshape(1)
        flat = torch.cat([g.reshape(-1) for g in grads] + [nonfinite])
        if flat.device != self.comm_device:
            flat = flat.to(self.comm_device)
        dist.all_reduce(flat, op=dist.ReduceOp.SUM)
        flat = flat.to(grads[0].device)
        bad = float(flat[-1]) > 0
        flat = flat[:-1].div_(self.info.world_size)
        offset = 0
        for p in params:
            n = p.numel()
            mean = flat[offset : offset + n].view_as(p)
            if p.grad is None:
                p.grad = mean.clone()
            else:
                p.grad.copy_(mean)
            offset += n
        return not bad

    def mean_over_ranks(self, value: float) -> float:
        """The mean of `value` over the ranks (one all-reduce; every rank must call it at the same
        point), e.g. the KL a KL-adaptive learning rate reacts to."""
        t = torch.tensor([float(value)], dtype=torch.float64, device=self.comm_device)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        return float(t[0]) / self.info.world_size

    def reduce_moments(self, n: int, mean: Tensor, var: Tensor) -> tuple[int, Tensor, Tensor]:
        """A batch's sample count `n`, mean and (biased) variance (float64, the normaliser's shape)
        combined with the other ranks' (Chan et al. 1979: the pooled mean, and the pooled second
        moment minus its square), in one all-reduce. Returns all ranks' `(n, mean, var)`; the
        same on every rank."""
        k = mean.numel()
        m, v = mean.reshape(-1).double(), var.reshape(-1).double()
        t = torch.cat(
            [torch.full((1,), float(n), dtype=torch.float64, device=m.device), n * m, n * (v + m * m)]
        )
        t = t.to(self.comm_device)
        dist.all_reduce(t, op=dist.ReduceOp.SUM)
        t = t.to(mean.device)
        total = int(round(float(t[0])))
        if total == 0:
            return 0, mean, var
        g_mean = t[1 : 1 + k] / total
        g_var = (t[1 + k :] / total - g_mean * g_mean).clamp_(min=0.0)
        return total, g_mean.view_as(mean), g_var.view_as(var)

    def close(self) -> None:
        """Leaves the process group (the normalisers go back to this process's batches)."""
        if RunningMeanStd.reduce_moments == self.reduce_moments:
            RunningMeanStd.reduce_moments = None
        if dist.is_initialized():
            dist.destroy_process_group()


def join_data_parallel(model: nn.Module, learner: Any, device: torch.device) -> DataParallel | None:
    """In a run torchrun started with several ranks: joins the process group, takes rank 0's
    state (`broadcast_policy`) and makes `learner` average its gradients over the ranks; returns
    the group. None (and nothing changes) in a single-process run."""
    info = rank_info()
    if not info.distributed:
        return None
    dp = DataParallel(info, device)
    dp.broadcast_policy(model, learner)
    learner.data_parallel = dp
    return dp


def leave_data_parallel(dp: DataParallel, env_frames: int, model: nn.Module) -> None:
    """Stops this rank's training rounds at `env_frames` (this rank's), the others stopping at
    their next one; checks the ranks still hold the same weights and logs their checksum
    (`weights_checksum`, equal on every rank: tests compare it with the saved checkpoint's);
    leaves the process group."""
    dp.finish(env_frames, model)
    log.info(
        "Data parallel: rank %d stopped after %d round(s); all ranks' env frames at the stop: %d; "
        "final weights checksum %r (equal on every rank)",
        dp.info.rank, dp.rounds, dp.global_env_frames, weights_checksum(model),
    )  # fmt: skip
    dp.close()
