"""What training one batch changes, copied so that a batch a stop interrupts can be undone (the
serial placement's exact resume): `BatchSnapshot`, used by `surge.runtime.learner_loop.LearnerLoop`.
"""

from __future__ import annotations

import copy
from typing import Any

import torch

from surge.learning.base import LearnerBase
from surge.runtime.checkpoint import rng_state, set_rng_state


class _OptimizerSnapshot:
    """One optimizer's per-parameter state and param groups, copied into tensors allocated once."""

    def __init__(self) -> None:
        self.state: list[dict[str, Any] | None] = []  # per parameter: its state (Adam's moments), or None
        self.param_groups: list[dict[str, Any]] = []

    def take(self, opt: torch.optim.Optimizer) -> None:
        params = [p for g in opt.param_groups for p in g["params"]]
        if len(self.state) != len(params):
            self.state = [None] * len(params)
        for i, p in enumerate(params):
            state = opt.state.get(p)
            if not state:
                self.state[i] = None
                continue
            old = self.state[i] or {}
            self.state[i] = {
                k: BatchSnapshot._copy(old.get(k), v) if isinstance(v, torch.Tensor) else copy.deepcopy(v)
                for k, v in state.items()
            }
        self.param_groups = [{k: v for k, v in g.items() if k != "params"} for g in opt.param_groups]

    def restore(self, opt: torch.optim.Optimizer) -> None:
        params = [p for g in opt.param_groups for p in g["params"]]
        for p, saved in zip(params, self.state, strict=True):
            if saved is None:
                opt.state.pop(p, None)
                continue
            state = opt.state[p]
            for k, v in saved.items():
                if isinstance(v, torch.Tensor) and isinstance(state.get(k), torch.Tensor):
                    state[k].copy_(v)
                else:
                    state[k] = v.clone() if isinstance(v, torch.Tensor) else copy.deepcopy(v)
        for g, saved_group in zip(opt.param_groups, self.param_groups, strict=True):
            g.update(saved_group)


class BatchSnapshot:
    """What training one batch changes: the acting module's state (weights, normalisers), every
    learner module's (critics, target networks), every optimizer's and scheduler's state
    (`LearnerBase.optimizers`, `LearnerBase.schedulers`), the KL-adaptive learning rate,
    `policy_version` and the RNG streams, copied into tensors allocated once (a copy per batch of
    3x the parameters' bytes with Adam, no allocation), so a batch a stop interrupts can be undone."""

    def __init__(self) -> None:
        self.model: dict[str, torch.Tensor] = {}
        self.modules: dict[str, dict[str, torch.Tensor]] = {}  # learner module -> its state
        self.optimizers: dict[str, _OptimizerSnapshot] = {}
        self.schedulers: dict[str, dict[str, Any]] = {}  # scheduler -> its state_dict (a few numbers)
        self.policy_version = self.skipped_updates = 0
        self.kl_lr: dict[str, Any] | None = None  # the KL-adaptive rate's state (`LearnerBase.kl_lr`)
        self.rng: dict[str, Any] = {}

    @staticmethod
    def _copy(dst: torch.Tensor | None, src: torch.Tensor) -> torch.Tensor:
        if dst is None or dst.shape != src.shape or dst.dtype != src.dtype:
            return src.detach().clone()
        return dst.copy_(src)

    def _copy_state(self, dst: dict[str, torch.Tensor], module: torch.nn.Module) -> None:
        for k, v in module.state_dict().items():
            dst[k] = self._copy(dst.get(k), v)

    def take(self, model: torch.nn.Module, learner: LearnerBase) -> None:
        self._copy_state(self.model, model)
        for name, module in learner.learner_modules.items():
            self._copy_state(self.modules.setdefault(name, {}), module)
        for name, opt in learner.optimizers.items():
            self.optimizers.setdefault(name, _OptimizerSnapshot()).take(opt)
        self.schedulers = {name: copy.deepcopy(s.state_dict()) for name, s in learner.schedulers.items()}
        self.policy_version, self.skipped_updates = learner.policy_version, learner.skipped_updates
        self.kl_lr = learner.kl_lr.state_dict() if learner.kl_lr is not None else None
        self.rng = rng_state()

    def restore(self, model: torch.nn.Module, learner: LearnerBase) -> None:
        model.load_state_dict(self.model)
        for name, module in learner.learner_modules.items():
            module.load_state_dict(self.modules[name])
        for name, opt in learner.optimizers.items():
            self.optimizers[name].restore(opt)
        for name, sched in learner.schedulers.items():
            sched.load_state_dict(copy.deepcopy(self.schedulers[name]))
        learner.policy_version, learner.skipped_updates = self.policy_version, self.skipped_updates
        if learner.kl_lr is not None and self.kl_lr is not None:
            learner.kl_lr.load_state_dict(self.kl_lr)  # the optimizer's lr came back with its groups
        set_rng_state(self.rng)
