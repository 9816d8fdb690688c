"""R2D2's learner."""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor

from surge.algorithms.dqn.networks import QNetwork
from surge.algorithms.r2d2.params import R2D2Params
from surge.learning.q_learning import inverse_value_rescale, nstep_returns, value_rescale
from surge.learning.replay_learner import (
    ReplayLearnerBase,
)
from surge.learning.target_networks import polyak_update
from surge.replay.samples import SequenceSample
from surge.replay.sequence import SequenceReplay


class R2D2Learner(ReplayLearnerBase):
    """One update of the loss of `surge.algorithms.r2d2.declaration`'s docstring per `update`, on `--batch_size` sequences of a
    `SequenceReplay`; the target network is `learner_modules["target"]`."""

    params_type = R2D2Params
    params: R2D2Params
    replay: SequenceReplay  # type: ignore[assignment]
    stores_rnn_states = True

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        self.target: QNetwork = self.learner_modules["target"]  # type: ignore[assignment]
        self.target_syncs = 0

    @property
    def online(self) -> QNetwork:
        return self.model.q  # type: ignore[return-value]

    def make_replay(self) -> SequenceReplay:  # type: ignore[override]
        """A `SequenceReplay` of about `--replay_size` steps over `num_columns` columns (rows per
        column a multiple of `--store_rnn_state_interval`, at least a sequence plus a rollout
        plus one interval); priorities with `--pri_alpha`, or all equal (alpha 0) without
        `--prioritized_replay`."""
        p = self.params
        stride = p.store_rnn_state_interval
        seq = p.burn_in + p.sequence_length + p.n_step_return - 1
        history = max(self.frame_stack - 1, 0)
        rows = max(-(-p.replay_size // self.num_columns) + 1, seq + self.cfg.rollout + 1 + stride) + history
        rows = -(-rows // stride) * stride
        return SequenceReplay(
            rows,
            self.num_columns,
            p.burn_in,
            p.sequence_length,
            stride,
            lookahead=p.n_step_return - 1,
            frame_stack=self.frame_stack,
            alpha=p.pri_alpha if p.prioritized_replay else 0.0,
            beta0=p.pri_beta_init,
            beta_steps=p.pri_beta_steps,
            eta=p.priority_eta,
        )

    def updates_due(self) -> int:
        """`ReplayLearnerBase.updates_due`, or 0 while no sequence is complete yet."""
        if self.replay.priorities.tree.total <= 0:
            return 0
        return super().updates_due()

    def sample(self) -> SequenceSample:
        """`batch_size` sequences (`SequenceReplay.sample`) on `self.device`, with lag `[L, B]`
        (policy versions of the learning steps)."""
        p, ring = self.params, self.replay.ring
        s = self.replay.sample(self.cfg.batch_size, self.generator, env_steps=self.env_steps)
        k = torch.arange(p.burn_in, p.burn_in + p.sequence_length)[:, None]
        rows = (s.starts[None] + k) % ring.capacity
        s.lag = (self.policy_version - self.versions[rows, s.columns[None].expand_as(rows)]).float()
        return s.map(lambda x: x.to(self.device, non_blocking=True))

    def sync_target(self) -> bool:
        """Updates the target network when `env_steps` crossed a multiple of
        `target_update_interval` since the last update; True if it did."""
        k = self.env_steps // self.params.target_update_interval
        if k <= self.target_syncs:
            return False
        polyak_update(self.target, self.online, self.params.target_update_tau)
        self.target_syncs = k
        return True

    def train_replay(self, env_frames: int = 0) -> dict[str, float] | None:
        """The target update due, then `ReplayLearnerBase.train_replay`, plus target_updates."""
        self.sync_target()
        out = super().train_replay(env_frames)
        if out is not None:
            out["target_updates"] = float(self.target_syncs)
        return out

    def losses(self, s: SequenceSample) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """(loss scalar, |δ| `[L, B]` without gradient, mask `[L, B]` bool of the learning steps
        that count, Q(s_t, a_t) `[L, B]` without gradient) of a sample of `sample`; see the module
        docstring. L = `--sequence_length`."""
        p = self.params
        b, L, n = p.burn_in, p.sequence_length, p.n_step_return
        term, trunc = s.terminated.bool(), s.truncated.bool()
        S, B = term.shape
        dones = torch.zeros(S + 1, B, device=term.device)
        dones[:S] = (term | trunc).float()
        states = s.rnn_states[None]
        out = self.online.sequence(s.obs, states, dones, b)  # rows b .. S
        with torch.no_grad():
            tgt = self.target.sequence(s.obs, states, dones, b)
        # n-step windows of the learning steps b .. b+L-1: [L*B, n], row-major over (t, i)
        win = torch.arange(n, device=term.device)[None] + torch.arange(b, b + L, device=term.device)[:, None]
        rew = s.rewards[win].permute(0, 2, 1).reshape(L * B, n)
        te = term[win].permute(0, 2, 1).reshape(L * B, n)
        tr = trunc[win].permute(0, 2, 1).reshape(L * B, n)
        returns, discounts, used = nstep_returns(rew, te, tr, self.hp.gamma)
        trunc_last = tr.gather(1, (used - 1).clamp(min=0)[:, None]).squeeze(1) & (discounts > 0)
        j = torch.arange(L, device=term.device).repeat_interleave(B)
        col = torch.arange(B, device=term.device).repeat(L)
        nxt = j + used - trunc_last.long()  # the bootstrap row, relative to b
        with torch.no_grad():
            q_next_t = tgt.q_values[nxt, col]
            if p.double_dqn:
                select = out.q_values.detach()[nxt, col]
            else:
                select = q_next_t
            if out.action_mask is not None:
                select = select.masked_fill(~out.action_mask[nxt, col].bool(), float("-inf"))
            boot = q_next_t.gather(1, select.argmax(1, keepdim=True)).squeeze(1)
            boot = torch.where(discounts == 0, torch.zeros_like(boot), boot)
            if p.value_rescale:
                eps = p.value_rescale_eps
                y = value_rescale(returns + discounts * inverse_value_rescale(boot, eps), eps)
            else:
                y = returns + discounts * boot
            y = y.view(L, B)
            active = s.is_active[win].permute(0, 2, 1).reshape(L * B, n)
            inside = torch.arange(n, device=term.device)[None] < used[:, None]
            mask = (active | ~inside).all(1).view(L, B)
        actions = s.actions[b : b + L].long().reshape(L, B)
        q_taken = out.q_values[:L].gather(2, actions[..., None]).squeeze(2)
        delta = y - q_taken
        if p.r2d2_loss == "huber":
            per = F.huber_loss(q_taken, y, reduction="none")
        else:
            per = 0.5 * delta**2
        m = mask.float()
        loss = (per * s.is_weights[None] * m).sum() / m.sum().clamp(min=1.0)
        return loss, delta.detach().abs(), mask, q_taken.detach()

    def update(self, samples: SequenceSample) -> dict[str, float]:
        """One Adam step on `losses` (`apply_gradients`), then the sampled sequences' priorities
        (`SequenceReplay.update_priorities`: η·max + (1 − η)·mean of |δ| over the masked steps)."""
        loss, td_abs, mask, q_taken = self.losses(samples)
        grad_norm = self.apply_gradients(loss)
        self.replay.update_priorities(samples.indices.cpu(), td_abs.cpu(), mask.cpu())
        m = mask.float()
        n = m.sum().clamp(min=1.0)
        return {
            "loss": float(loss.detach()),
            "q_mean": float((q_taken * m).sum() / n),
            "td_abs_mean": float((td_abs * m).sum() / n),
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
