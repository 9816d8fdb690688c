"""DQN's learner."""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor

from surge.algorithms.dqn.categorical import categorical_loss, categorical_projection, select_next_probs
from surge.algorithms.dqn.networks import QNetwork
from surge.algorithms.dqn.params import DQNParams
from surge.learning.q_learning import double_q_target, q_max_target, td_loss
from surge.learning.replay_learner import (
    ReplayLearnerBase,
)
from surge.learning.target_networks import polyak_update
from surge.replay.samples import TransitionSample


class DQNLearner(ReplayLearnerBase):
    """One update of the loss of `surge.algorithms.dqn.declaration`'s docstring per `update`; the target network is
    `learner_modules["target"]`."""

    params_type = DQNParams
    params: DQNParams

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.target: QNetwork = self.learner_modules["target"]  # type: ignore[assignment]
        self.target_syncs = 0  # target updates so far (env_steps // target_update_interval)

    @property
    def online(self) -> QNetwork:
        return self.model.q  # type: ignore[return-value]

    def sync_target(self) -> bool:
        """Updates the target network when `env_steps` crossed a multiple of
        `target_update_interval` since the last update (once however many it crossed); True if it did."""
        k = self.env_steps // self.params.target_update_interval
        if k <= self.target_syncs:
            return False
        polyak_update(self.target, self.online, self.params.target_update_tau)
        self.target_syncs = k
        return True

    def train_replay(self, env_frames: int = 0) -> dict[str, float] | None:
        """The target update due (`sync_target`), then `ReplayLearnerBase.train_replay`, plus
        epsilon (the schedule's at `env_frames`; not reported with `--per_actor_eps`, where each
        actor has its own, constant one) and target_updates."""
        self.sync_target()
        out = super().train_replay(env_frames)
        if out is not None:
            out.update(target_updates=float(self.target_syncs))
            if not self.model.per_actor:
                out.update(epsilon=float(self.model.eps(env_frames)))  # type: ignore[operator]
        return out

    def losses(self, s: TransitionSample) -> tuple[Tensor, Tensor, Tensor]:
        """(loss scalar, priorities `[B]` without gradient, Q(s, a) `[B]` without gradient) of a
        sample of `ReplayLearnerBase.sample` (obs, actions, returns, discounts, next_obs,
        is_weights); see `surge.algorithms.dqn.declaration`."""
        p = self.params
        actions = s.actions.long().reshape(-1)
        rows = torch.arange(actions.shape[0], device=actions.device)
        out = self.online(s.obs)
        with torch.no_grad():
            nxt = self.target(s.next_obs)
            select = self.online(s.next_obs).q_values if p.double_dqn else nxt.q_values
            mask = nxt.action_mask
        if p.categorical:
            assert out.log_probs is not None and nxt.log_probs is not None
            if mask is not None:
                select = select.masked_fill(~mask.bool(), float("-inf"))
            next_probs = select_next_probs(nxt.log_probs.exp(), select)
            m = categorical_projection(next_probs, s.returns, s.discounts, p.v_min, p.v_max)
            c = categorical_loss(out.log_probs[rows, actions], m, s.is_weights)
            return c.loss, c.kl, out.q_values.detach()[rows, actions]
        if p.double_dqn:
            y = double_q_target(select, nxt.q_values, s.returns, s.discounts, mask)
        else:
            y = q_max_target(nxt.q_values, s.returns, s.discounts, mask)
        q_taken = out.q_values[rows, actions]
        t = td_loss(q_taken, y, s.is_weights, p.dqn_loss)
        return t.loss, t.abs_td_errors, q_taken.detach()

    def priorities(self, errors: Tensor) -> Tensor:
        """The new priorities `[B]` of a sample from `losses`' errors `[B]`: |TD errors| clipped at
        `--priority_clip` (scalar head with the Huber loss; 0: unclipped), else unchanged (C51's KL;
        the mse loss, whose gradient is not clipped either, as rlpyt clamps only with its Huber loss)."""
        clip = self.params.priority_clip
        if self.params.categorical or self.params.dqn_loss != "huber" or clip <= 0:
            return errors
        return errors.clamp(max=clip)

    def update(self, samples: TransitionSample) -> dict[str, float]:
        """One Adam step on `losses` (`apply_gradients`: clipping, non-finite skip,
        policy_version); sets samples.td_errors (`priorities`) for prioritized replay.
        td_abs_mean is the mean error before clipping."""
        loss, errors, q_taken = self.losses(samples)
        grad_norm = self.apply_gradients(loss)
        samples.td_errors = self.priorities(errors)
        return {
            "loss": float(loss.detach()),
            "q_mean": float(q_taken.mean()),
            "td_abs_mean": float(errors.mean()),
            "grad_norm": float(grad_norm),
        }

    def state_dict(self) -> dict[str, Any]:
        """`ReplayLearnerBase.state_dict` plus target_syncs."""
        out = super().state_dict()
        out["target_syncs"] = self.target_syncs
        return out

    def load_state_dict(self, state: dict[str, Any], keep_version: bool = False) -> None:
        super().load_state_dict(state, keep_version)
        if not keep_version and "target_syncs" in state:
            self.target_syncs = int(state["target_syncs"])
