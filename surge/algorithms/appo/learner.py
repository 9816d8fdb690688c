"""The APPO learner: turns a set of finished trajectory slots into PPO/APPO updates.

Two estimators, as in Sample Factory:
- V-trace (`with_vtrace`, requires rollout == recurrence): the unit of a minibatch is a whole
  trajectory of T steps plus its bootstrap observation; targets and advantages are computed inside
  every minibatch from the current policy's (detached) values and log-probs (Espeholt et al. 2018).
- GAE: advantages and targets are computed once per batch from the behavior values and a bootstrap
  value of the current model; the unit of a minibatch is a chunk of `recurrence` steps (a single
  step without an RNN, so samples are shuffled individually).
Every optimizer step increments `policy_version`.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

from surge.algorithms.appo.bounds_loss import action_bounds_loss
from surge.algorithms.appo.config import APPOParams
from surge.algorithms.appo.ppo_loss import PPOLossConfig, masked_mean, ppo_loss
from surge.algorithms.appo.units import PPOUnits
from surge.cfg.config import algo_params
from surge.cfg.policy_roles import learning_policies
from surge.data.trajectory import tree_map
from surge.data.trajectory_batch import TrajectoryBatch
from surge.learning.amp import autocast_fresh, resolve_mixed_precision
from surge.learning.base import Batch, LearnerBase, exploration_coeff, learning_rate
from surge.learning.central_value import CV_NAME, CentralValue, CentralValueTrainer, split_state
from surge.learning.returns import vtrace


def to_chunks(x: Tensor, length: int) -> Tensor:
    """`[T, N, ...]` -> `[length, (T // length) · N, ...]`: consecutive chunks of `length` steps."""
    T, N = x.shape[:2]
    k = T // length
    return x.reshape(k, length, N, *x.shape[2:]).transpose(0, 1).reshape(length, k * N, *x.shape[2:])


def _columns(idx: Tensor) -> Callable[[Tensor], Tensor]:
    """`x -> x[:, idx]`: the minibatch's units of a `[L, units, ...]` tensor (contiguous).

    On the CPU, a tensor with large rows (observations) is gathered by `index_select` on its units
    dimension, then made time-major: torch's advanced indexing copies image rows element by
    element, about 4x slower (22 ms for 8 Atari trajectories of 128 steps)."""

    def pick(x: Tensor) -> Tensor:
        if x.device.type == "cpu" and x.dim() > 2 and math.prod(x.shape[2:]) >= _ROW_GATHER_MIN:
            return torch.index_select(x.transpose(0, 1), 0, idx).transpose(0, 1).contiguous()
        return x[:, idx]

    return pick


_ROW_GATHER_MIN = 1024  # elements per row from which `_columns` gathers by index_select


def mean_stats(steps: list[dict[str, Tensor]]) -> dict[str, float]:
    """Each statistic's mean over the steps: `steps` holds one dict of scalar tensors per optimizer
    step, all with the same keys. Every value is the float32 mean of that key's values in step
    order, as `float(torch.stack([s[k] for s in steps]).mean())` gives it, but in 3 + len(steps)
    torch ops and one host read instead of 3 per key (a learner's fixed cost per batch)."""
    if not steps or not steps[0]:
        return {}
    keys = list(steps[0])
    first = steps[0][keys[0]]
    if any(v.dtype != first.dtype or v.device != first.device for s in steps for v in s.values()):
        return {k: float(torch.stack([s[k] for s in steps]).mean()) for k in keys}
    # [keys, steps] contiguous: each row reduced as the one-key stack was
    table = torch.stack([torch.stack([s[k] for k in keys]) for s in steps], dim=1).contiguous()
    return dict(zip(keys, table.mean(dim=1).tolist(), strict=True))


def _policy_fields(b: TrajectoryBatch) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """(behavior_log_probs, old_values, logits, rnn_resets, valids) of a batch in training
    (`prepare_batch`'s, `train_batch`'s and `_mask_stale`'s fields)."""
    blp, old, logits, resets, valids = b.behavior_log_probs, b.old_values, b.logits, b.rnn_resets, b.valids
    assert blp is not None and old is not None and logits is not None
    assert resets is not None and valids is not None
    return blp, old, logits, resets, valids


class Learner(LearnerBase):
    """APPO / PPO learner of one policy (see the module docstring and `LearnerBase` for the args).

    With `--central_value` (`surge.learning.central_value`): the batch's states are split from the
    actor's observations, GAE's values and bootstrap come from the central value (learner module
    "central_value", its Adam the optimizer "central_value"), the PPO loss's value term has
    coefficient 0, and the central value is trained on the GAE targets after the policy update."""

    def __init__(self, *args: Any, **kwargs: Any):
        super().__init__(*args, **kwargs)
        #: APPO's own flags (`--help` section "algorithm APPO"), read once here
        self.appo = algo_params(self.cfg, APPOParams)
        # a Gaussian head's logits `[L, n, num_logits]` at the last step's forward pass, the KL
        # reference of its units at their next pass (`--lr_schedule=kl_adaptive_*`), else None
        self._kl_ref_update: Tensor | None = None
        #: env frames of the batch in training (`train_batch`), for `--exploration_loss_schedule`
        self._env_frames = 0
        self.cv: CentralValueTrainer | None = None
        if self.cfg.central_value:
            module = self.learner_modules[CV_NAME]
            assert isinstance(module, CentralValue)
            self.cv = CentralValueTrainer(
                self.cfg, module, self.device, (self.hp.adam_beta1, self.hp.adam_beta2)
            )
            self.optimizers[CV_NAME] = self.cv.optimizer
        #: `--mixed_precision` as this process runs it (`auto` resolved: none, bf16 or fp16)
        self.mixed_precision, why = resolve_mixed_precision(
            self.cfg.mixed_precision, self.cfg.algo, self.device, self.model
        )
        # once per run (every policy's model resolves alike), by the first policy that learns:
        # a frozen policy 0 (--frozen_policies, --self_play) has no learner to say it
        if self.policy_id == learning_policies(self.cfg)[0]:
            logging.getLogger("surge").info("Learner: %s", why)
        #: a fresh autocast context per forward pass (a no-op for `none`), with no kept cast of
        #: the weights used or left behind (they change at every optimizer step)
        self._autocast = functools.partial(autocast_fresh, self.mixed_precision, self.device)

    def set_hyperparams(self, values: dict[str, Any]) -> dict[str, tuple[float, float]]:
        """`LearnerBase.set_hyperparams`; Adam's betas of the central value follow the policy's
        (its learning rate is set per batch)."""
        changed = super().set_hyperparams(values)
        if self.cv is not None:
            for group in self.cv.optimizer.param_groups:
                group["betas"] = (self.hp.adam_beta1, self.hp.adam_beta2)
        return changed

    @property
    def loss_cfg(self) -> PPOLossConfig:
        """The PPO loss's settings, from the policy's own hyper-parameters (`self.hp`); the value
        term's coefficient is 0 with a central value (the actor's value head is not trained)."""
        cfg, hp = self.cfg, self.hp
        return PPOLossConfig(
            hp.ppo_clip_ratio,
            hp.ppo_clip_value,
            0.0 if self.cv is not None else hp.value_loss_coeff,
            cfg.exploration_loss,
            exploration_coeff(cfg, self._env_frames, hp.exploration_loss_coeff),
            self.appo.kl_loss_coeff,
            self.appo.ppo_clip_lower == "symmetric",
        )

    def prepare_batch(self, slots: Tensor) -> TrajectoryBatch:
        """`LearnerBase.prepare_batch` with APPO's fields named as the loss reads them: behavior
        values as old_values `[T, N]`, action_logits as logits `[T, N, num_logits]`."""
        b = super().prepare_batch(slots)
        if self.cv is not None:  # the state `[T+1, N, ...]` goes to b.cv_state
            split_state(b, self.cfg.central_value_state_key)
        b.old_values = b.extra.pop("values")
        b.logits = b.extra.pop("action_logits")
        return b

    def train_batch(self, b: Batch, env_frames: int = 0) -> dict[str, float]:
        """Trains `ppo_epochs` passes over a batch from `prepare_batch`.

        Args:
            b: the batch (consumed; a dict of its names is taken as `TrajectoryBatch.from_mapping`
                gives it, and is not completed in place).
            env_frames: total env frames so far (for the learning-rate schedule).
        Returns:
            mean statistics of the minibatches whose optimizer step was applied (losses, entropy,
            approx_kl, clip_fraction, grad_norm, lr (the rate after the batch's last step), kl (the
            exact KL(current || behavior), under `--lr_schedule=kl_adaptive_*`), bounds_loss (with
            `--bounds_loss_coef` > 0), policy_lag_min/avg/max in policy versions,
            skipped_updates: steps skipped for a non-finite loss or gradient, ...); with
            `self.diagnostics` False only lr, kl, policy_version, samples, skipped_updates(_total)
            and the stopping fields (the central value's own statistics still come); when
            `should_stop()` turned True between two steps, the rest of the batch is left and
            stopped_early = 1 with steps_taken and steps_planned.
        """
        cfg = self.cfg
        b = TrajectoryBatch.from_mapping(b)
        lr = self.set_learning_rate(env_frames)
        self._env_frames = env_frames  # the exploration coefficient's schedule (`loss_cfg`)
        kl_lr = self.kl_lr
        # where the core resets its state `[T, N]`: after an episode end (terminated or truncated),
        # or nowhere with --zero_rnn_on_done=False (the state carries over, as acting did)
        if cfg.zero_rnn_on_done:
            b.rnn_resets = torch.maximum(b.terminated, b.truncated)
        else:
            b.rnn_resets = torch.zeros_like(b.terminated)
        self._mask_stale(b)
        if self.appo.obs_normalizer_update == "batch":  # else at each minibatch (`_step`)
            self._update_obs_normalizer(b)
        T, N = b.rewards.shape
        if self.cv is not None:
            cv_state, b.cv_state = b.cv_state, None
            assert cv_state is not None and b.own_active is not None  # prepare_batch, _mask_stale
            self.cv.update_normalizer(cv_state[:T], b.own_active)
            cv_values = self.cv.values(cv_state)  # [T+1, N]
            b.old_values, b.boot_values = cv_values[:T], cv_values[T:]
            if self.appo.with_vtrace:  # each minibatch's V-trace reads the central value's values
                b.cv_values = cv_values
        if self.appo.with_vtrace:
            units = self._vtrace_units(b)
            unit_len = T
        else:
            units = self._gae_units(b)
            unit_len = cfg.recurrence
        # units (BPTT chunks, single samples without an RNN, whole trajectories for V-trace) with no
        # step to learn from, e.g. another policy's part of a trajectory that changed policy at an
        # episode boundary, are left out: their loss terms are zero, and passes over them would make
        # a population's learners cost more than their own samples
        keep = units.valids.any(dim=0)
        # data-parallel ranks must take the same number of optimizer steps: all units are kept
        if self.data_parallel is None and not bool(keep.all()) and bool(keep.any()):
            units = units.map(_columns(keep.nonzero().flatten()))
        num_units = units.valids.shape[1]
        if kl_lr is not None and getattr(self.model, "is_gaussian", False):
            # rl_games' continuous agent (a2c_common.py ContinuousA2CBase.train_epoch,
            # dataset.update_mu_sigma) measures each minibatch's KL against the mean and sigma that
            # minibatch had at its previous pass (the behavior policy's at the first), not against
            # the behavior policy: the reference logits `[L, num_units, num_logits]` are overwritten
            # after every step. A discrete head keeps the behavior policy (its old log-probs never change)
            units = units.replace(kl_ref_logits=units.logits.clone())
        per_mb = max(1, cfg.batch_size // unit_len)
        stats: list[dict[str, Tensor]] = []
        skipped: list[dict[str, Tensor]] = []  # of steps skipped for a non-finite loss or gradient
        planned = cfg.ppo_epochs * -(-num_units // per_mb)
        # one minibatch per epoch: all units in their order, not gathered into a shuffled copy (the
        # loss is a mean over the units; only the rounding of its sums depends on their order)
        whole = per_mb >= num_units
        for _ in range(cfg.ppo_epochs):
            perm = None if whole else torch.randperm(num_units, device=self.device)
            epoch_kls: list[Tensor] = []
            for start in range(0, num_units, per_mb):
                if self.should_stop():  # the run is stopping: leave the rest of the batch
                    break
                if perm is None:
                    idx: Tensor | slice = slice(None)
                    mb = units
                else:
                    idx = perm[start : start + per_mb]
                    mb = units.map(_columns(idx))
                step_stats = self._step(mb, vtrace_mode=self.appo.with_vtrace)
                (skipped if self.last_step_skipped else stats).append(step_stats)
                if kl_lr is not None and units.kl_ref_logits is not None and self._kl_ref_update is not None:
                    units.kl_ref_logits[:, idx] = self._kl_ref_update
                if kl_lr is not None and not self.last_step_skipped:  # rl_games' adaptive rule
                    if kl_lr.per_epoch:
                        epoch_kls.append(step_stats["kl"])
                    else:
                        lr = self.adapt_learning_rate(float(step_stats["kl"]))
            else:
                if kl_lr is not None and kl_lr.per_epoch and epoch_kls:
                    lr = self.adapt_learning_rate(float(torch.stack(epoch_kls).mean()))
                continue
            break
        shown = stats or skipped  # the applied steps' statistics (all NaN ones when every step was skipped)
        out = mean_stats(shown)
        if self.cv is not None and not self.should_stop():
            # constant or linearly decayed from its own base rate; a kl_adaptive schedule leaves it
            # constant: rl_games 1.6.5 does not pass the adapted rate on (a2c_common.py, the
            # `central_value_net.update_lr(lr)` call is commented out)
            cv_lr = learning_rate(cfg, env_frames, self.cv.base_lr(self.hp.learning_rate))
            targets = self._cv_vtrace_targets(b) if self.appo.with_vtrace else b.targets
            assert cv_state is not None and targets is not None
            assert b.old_values is not None and b.valids is not None
            out.update(self.cv.train(cv_state[:T], b.old_values, targets, b.valids, cv_lr))
        out.update(self.skip_stats(len(skipped)))
        if len(stats) + len(skipped) < planned:
            out.update(
                stopped_early=1.0, steps_taken=float(len(stats) + len(skipped)), steps_planned=float(planned)
            )
        out.update(
            lr=lr,
            policy_version=float(self.policy_version),
            samples=float(T * N),
        )
        if self.diagnostics:
            out.update(self.lag_stats(b))
        return out

    @torch.no_grad()
    def _cv_vtrace_targets(self, b: TrajectoryBatch) -> Tensor:
        """The central value's V-trace targets `[T, N]` after the policy update: IMPALA eq. 1 over
        the whole batch with the updated policy's log-probs and the central value's values of the
        batch (`b.cv_values`, as the policy's minibatches used them), normalised with the returns
        statistics as they are (the minibatches already folded their targets in)."""
        cfg, model, T = self.cfg, self.model, b.rewards.shape[0]
        resets = b.rnn_resets  # as `_step` (`--zero_rnn_on_done`)
        assert resets is not None and b.behavior_log_probs is not None and b.cv_values is not None
        resets_in = torch.cat([resets, torch.zeros_like(resets[:1])], dim=0)
        logits, _ = model.evaluate(b.obs, b.rnn_states, resets_in, cfg.recurrence)
        log_rhos = model.distribution(logits[:T]).log_prob(b.actions) - b.behavior_log_probs
        v = self._denormalized(b.cv_values)
        targets, _ = vtrace(
            b.rewards,
            v,
            b.terminated,
            log_rhos,
            self.hp.gamma,
            self.appo.vtrace_rho,
            self.appo.vtrace_c,
            truncated=b.truncated,
            truncation_values=v[:T] if cfg.value_bootstrap else None,
        )
        norm = getattr(model, "returns_normalizer", None)
        if norm is None:
            return targets
        return (targets - norm.mean.float()) / (norm.var.float() + norm.epsilon).sqrt()

    def _vtrace_units(self, b: TrajectoryBatch) -> PPOUnits:
        """The batch's trajectories as V-trace's units (`PPOUnits`, `L = T`)."""
        blp, old, logits, resets, valids = _policy_fields(b)
        return PPOUnits(
            obs=b.obs,
            rnn_states=b.rnn_states,
            actions=b.actions,
            behavior_log_probs=blp,
            old_values=old,
            logits=logits,
            rnn_resets=resets,
            valids=valids,
            rewards=b.rewards,
            terminated=b.terminated,
            truncated=b.truncated,
            cv_values=b.cv_values,  # `[T+1, N]`, with a central value
        )

    def _gae_units(self, b: TrajectoryBatch) -> PPOUnits:
        """GAE's advantages and targets over the batch, then the batch in chunks of `recurrence`
        steps (`PPOUnits`, `L = recurrence`); sets `b.targets` `[T, N]` (the central value's)."""
        adv, targets = self._gae_targets(b)
        b.targets = targets  # `[T, N]` (the central value trains on them)
        blp, old, logits, resets, valids = _policy_fields(b)
        if self.cfg.normalize_advantage and self.appo.normalize_advantage_over == "batch":
            adv = self.normalize_advantages(adv, valids)  # rl_games' prepare_dataset: once per batch
        T, L = b.rewards.shape[0], self.cfg.recurrence
        return PPOUnits(
            obs=tree_map(lambda x: to_chunks(x[:T], L), b.obs),
            rnn_states=to_chunks(b.rnn_states[:T], L),
            actions=to_chunks(b.actions, L),
            behavior_log_probs=to_chunks(blp, L),
            old_values=to_chunks(old, L),
            logits=to_chunks(logits, L),
            rnn_resets=to_chunks(resets, L),
            valids=to_chunks(valids, L),
            advantages=to_chunks(adv, L),
            targets=to_chunks(targets, L),
        )

    def _update_obs_normalizer_minibatch(self, mb: PPOUnits, L: int) -> None:
        """`--obs_normalizer_update=minibatch`: folds the minibatch's valid observations (its first
        `L` steps `[L, n, ...]`, not V-trace's bootstrap step) into the observation normaliser before
        its forward pass, as rl_games' `RunningMeanStd` does in training mode (running_mean_std.py
        `forward`, called by every training forward of a2c_continuous.py `calc_gradients`)."""
        norm: Any = getattr(self.model, "obs_normalizer", None)
        if norm is None:
            return
        mask = mb.valids > 0  # [L, n]
        norm.update(tree_map(lambda x: x[:L][mask], mb.obs))

    def _step(self, mb: PPOUnits, vtrace_mode: bool) -> dict[str, Tensor]:
        cfg, model = self.cfg, self.model
        L = mb.valids.shape[0]
        # where the core resets its state: episode ends, or nowhere with --zero_rnn_on_done=False
        resets = mb.rnn_resets
        if self.appo.obs_normalizer_update == "minibatch":
            self._update_obs_normalizer_minibatch(mb, L)
        # --mixed_precision: the forward pass under autocast; the logits and values the loss reads
        # are cast back to float32 (V-trace, the targets and the loss's reductions stay float32)
        with self._autocast():
            if vtrace_mode:
                resets_in = torch.cat([resets, torch.zeros_like(resets[:1])], dim=0)
                logits, values_all = model.evaluate(mb.obs, mb.rnn_states, resets_in, cfg.recurrence)
            else:
                logits, values = model.evaluate(mb.obs, mb.rnn_states, resets, cfg.recurrence)
        if vtrace_mode:
            logits, values_all = logits.float(), values_all.float()
            logits, values = logits[:L], values_all[:L]
        else:
            logits, values = logits.float(), values.float()
        if vtrace_mode:
            with torch.no_grad():
                # the central value's values when it is on (`[T+1, units]`), else the critic's own
                v = self._denormalized(values_all.detach() if mb.cv_values is None else mb.cv_values)
                assert mb.rewards is not None and mb.terminated is not None  # V-trace's units
                log_rhos = model.distribution(logits).log_prob(mb.actions) - mb.behavior_log_probs
                targets, adv = vtrace(
                    mb.rewards,
                    v,
                    mb.terminated,
                    log_rhos,
                    self.hp.gamma,
                    self.appo.vtrace_rho,
                    self.appo.vtrace_c,
                    truncated=mb.truncated,
                    truncation_values=v[:L] if cfg.value_bootstrap else None,
                )
                targets = self._normalized_targets(targets, mb.valids)
        else:
            assert mb.targets is not None and mb.advantages is not None  # GAE's units
            targets, adv = mb.targets, mb.advantages
        valids = mb.valids
        if cfg.normalize_advantage and (vtrace_mode or self.appo.normalize_advantage_over == "minibatch"):
            adv = self.normalize_advantages(adv, valids)
        flat = lambda x: x.reshape(-1, *x.shape[2:])  # noqa: E731
        dist, behavior_dist = model.distribution(flat(logits)), model.distribution(flat(mb.logits))
        flat_valids = flat(valids)
        loss, stats = ppo_loss(
            dist,
            behavior_dist,
            flat(mb.actions),
            flat(mb.behavior_log_probs),
            flat(adv),
            flat(values),
            flat(mb.old_values),
            flat(targets),
            flat_valids,
            self.loss_cfg,
            with_stats=self.diagnostics,
        )
        if self.appo.bounds_loss_coef > 0.0:  # Gaussian heads only (refused for others before the start)
            count = flat_valids.sum().clamp(min=1.0)
            b_loss = masked_mean(
                action_bounds_loss(dist.mode(), self.appo.bound_loss_type), flat_valids, count
            )
            b_loss = b_loss * self.appo.bounds_loss_coef
            loss = loss + b_loss
            stats["bounds_loss"] = b_loss.detach()
        if self.kl_lr is not None:
            with torch.no_grad():  # KL(current || reference) as rl_games' policy_kl (kl_adaptive)
                count = flat_valids.sum().clamp(min=1.0)
                ref = mb.kl_ref_logits
                ref_dist = behavior_dist if ref is None else model.distribution(flat(ref))
                stats["kl"] = masked_mean(dist.kl(ref_dist), flat_valids, count)
                self._kl_ref_update = None if ref is None else logits.detach()
        grad_norm = self.apply_gradients(loss)
        if not self.diagnostics:
            return stats
        stats.update(
            loss=loss.detach(),
            grad_norm=grad_norm.detach(),
            adv_mean=adv.mean().detach(),
            value_mean=values.mean().detach(),
            target_mean=targets.mean().detach(),
        )
        return stats
