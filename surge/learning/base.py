"""What every learner shares: the optimizer and learning-rate schedule, `policy_version`, the policy
it trains, and turning a set of finished trajectory slots into a time-major batch with the samples
it must not learn from masked out (inactive agents, other policies' steps in a trajectory whose
policy changed at an episode boundary, samples older than `max_policy_lag`). Algorithms subclass `LearnerBase` (`surge.algorithms.appo.learner` for APPO,
`surge.algorithms.a2c.declaration`)."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor, nn

from surge.cfg.config import Config
from surge.cfg.policy_hyperparams import PolicyHyperparams
from surge.data.device_copy import device_copy_for
from surge.data.trajectory import TrajectoryBuffers, tree_map
from surge.data.trajectory_batch import TrajectoryBatch
from surge.learning.amp import make_grad_scaler
from surge.learning.kl_adaptive import KLAdaptiveLR
from surge.learning.popart import preserve_outputs
from surge.learning.returns import gae
from surge.learning.reward_shaping import shaped_rewards
from surge.models.actor_critic import ActorCritic

#: what the learners take as a batch: `prepare_batch`'s `TrajectoryBatch`, or a dict of the same
#: names (plug-ins, tests and benchmarks build them); the shared steps here read either by name
Batch = TrajectoryBatch | dict[str, Any]


def _never() -> bool:
    return False


def exploration_coeff(cfg: Config, env_frames: int, base: float) -> float:
    """The exploration loss's coefficient at `env_frames`: `base` (the policy's
    exploration_loss_coeff), or under `--exploration_loss_schedule=linear_decay` rl_games'
    `LinearScheduler` with `apply_to_entropy` (common/schedulers.py): `min + (base - min) *
    max(0, 1 - env_frames / train_for_env_steps)`, min = exploration_loss_coeff_min."""
    if cfg.exploration_loss_schedule != "linear_decay":
        return base
    low = cfg.exploration_loss_coeff_min
    return low + (base - low) * max(0.0, 1.0 - env_frames / max(1, cfg.train_for_env_steps))


def learning_rate(cfg: Config, env_frames: int, base_lr: float | None = None) -> float:
    """Learning rate at `env_frames` under `cfg.lr_schedule` (constant or linear decay to 0 at
    `train_for_env_steps`), from `base_lr` (default `cfg.learning_rate`; a learner passes its
    policy's own, `PolicyHyperparams.learning_rate`). The `kl_adaptive_*` schedules are no function
    of env frames: the learner keeps their rate (`LearnerBase.kl_lr`); here they give `base_lr`."""
    lr = cfg.learning_rate if base_lr is None else base_lr
    if cfg.lr_schedule == "linear_decay":
        return lr * max(0.0, 1.0 - env_frames / max(1, cfg.train_for_env_steps))
    return lr


#: optimizer param-group flags that choose an implementation, not the update rule
_IMPL_FLAGS = ("fused", "foreach", "capturable", "differentiable")


def _adam_impl(device: torch.device) -> dict[str, Any]:
    """The fused Adam kernel where torch has one (CPU, CUDA). torch's default on CPU is the
    per-tensor loop, several times slower per step for the Nature CNN actor-critic (timings in
    docs/benchmarks.md). Same update rule (Kingma & Ba 2015, Algorithm 1)."""
    return {"fused": True, "foreach": None} if device.type in ("cpu", "cuda") else {"fused": None}


def make_adam(
    model: nn.Module, cfg: Config, device: torch.device, hp: PolicyHyperparams | None = None
) -> torch.optim.Adam:
    """Adam over `model`'s parameters with `learning_rate`, `adam_beta1/2` (the policy's own `hp`,
    default the cfg's), `adam_eps` and `adam_weight_decay`."""
    hp = hp or PolicyHyperparams.from_cfg(cfg)
    return torch.optim.Adam(
        model.parameters(),
        lr=hp.learning_rate,
        betas=(hp.adam_beta1, hp.adam_beta2),
        eps=cfg.adam_eps,
        weight_decay=cfg.adam_weight_decay,
        **_adam_impl(device),
    )


class LearnerBase:
    """Owns the optimizer and `policy_version` of one policy; trains `model` on trajectories from
    `buffers`. Subclasses implement `train_batch`.

    Args:
        cfg: the run's config.
        model: the policy's acting module (`ModelParts.acting`; the actor-critic for APPO and A2C;
            shared with inference in the serial placement).
        buffers: the trajectory buffers slots index into.
        device: where learning runs.
        policy_id: the policy this learner trains; its batches hold the trajectories it acted in,
            and steps another policy acted on in them are masked out.
        learner_modules: the learner-only modules (`ModelParts.learner_modules`: critics, target
            networks), `self.learner_modules`; the checkpoint saves them under "learner_modules".

    `self.hp` holds the policy's own hyper-parameters (`PolicyHyperparams`, from the cfg and
    `--policy_hyperparams`); the learner reads them there, never from `cfg`, and
    `set_hyperparams` changes them while the run goes on.
    """

    def __init__(
        self,
        cfg: Config,
        model: ActorCritic,
        buffers: TrajectoryBuffers,
        device: torch.device,
        policy_id: int = 0,
        learner_modules: dict[str, nn.Module] | None = None,
    ):
        self.cfg, self.model, self.buffers, self.device = cfg, model, buffers, device
        self.policy_id = policy_id
        self.learner_modules: dict[str, nn.Module] = dict(learner_modules or {})
        self.hp = PolicyHyperparams.from_cfg(cfg, policy_id)
        self.optimizer = make_adam(model, cfg, device, self.hp)
        #: PopArt's output-preserving rescale of the value head when the returns statistics move
        #: (`_normalized_targets`); an algorithm's learner turns it on (A2C's `--popart`)
        self.popart = False
        #: every optimizer of the learner by name, saved, restored and rolled back together; an
        #: algorithm with several (actor, critic, entropy temperature) adds them here.
        #: `self.optimizer` is the main one ("model": Adam over the acting module for APPO/A2C)
        self.optimizers: dict[str, torch.optim.Optimizer] = {"model": self.optimizer}
        #: learning-rate schedulers (`torch.optim.lr_scheduler`) an algorithm steps itself, by name;
        #: saved, restored and rolled back with the optimizers. The default schedule of
        #: `--lr_schedule` is a function of env frames (`set_learning_rate`), not one of these
        self.schedulers: dict[str, Any] = {}
        #: the KL-adaptive learning rate (`--lr_schedule=kl_adaptive_*`, `surge.learning.kl_adaptive`),
        #: None under the other schedules; saved in `state_dict` as "kl_adaptive_lr"
        self.kl_lr: KLAdaptiveLR | None = None
        if cfg.lr_schedule in ("kl_adaptive_minibatch", "kl_adaptive_epoch"):
            self.kl_lr = KLAdaptiveLR(
                self.hp.learning_rate,
                cfg.lr_schedule_kl_threshold,
                cfg.lr_adaptive_min,
                cfg.lr_adaptive_max,
                per_epoch=cfg.lr_schedule == "kl_adaptive_epoch",
            )
        #: whether `train_batch` computes its diagnostic statistics (losses, entropy, KL estimates,
        #: clip fraction, means, policy lag); the async learner process turns it off for batches
        #: whose statistics would not be reported, as Sample Factory 2 computes its summaries only
        #: when due (`Learner._should_save_summaries`). The optimizer steps are the same either way;
        #: what the run needs (lr, policy_version, samples, skipped_updates, stopped_early, kl under
        #: a KL-adaptive rate) is always returned. A learner that ignores it returns all of them.
        self.diagnostics = True
        self.policy_version = 0
        self.skipped_updates = 0  # optimizer steps skipped so far (non-finite loss or gradient)
        self.last_step_skipped = False  # whether the last `apply_gradients` skipped its step
        #: `--mixed_precision=fp16`: dynamic loss scaling (`surge.learning.amp`), None otherwise
        self.grad_scaler = make_grad_scaler(getattr(cfg, "mixed_precision", "none"), device)
        #: the process group of a data-parallel run (`surge.runtime.data_parallel.DataParallel`,
        #: set by the placement): gradients are averaged over the ranks; None: a single learner
        self.data_parallel: Any = None
        # polled between optimizer steps: True = the run is stopping, leave the batch in training
        # (Ctrl+C / SIGTERM; the placements set it)
        self.should_stop: Callable[[], bool] = _never

    def state_dict(self) -> dict[str, Any]:
        """Every optimizer's state (`optimizers`: {name: its `state_dict()`}), every scheduler's
        (`schedulers`, when the learner has any), `policy_version` and
        the policy's hyper-parameters (`hyperparams`, a dict of floats), the KL-adaptive learning
        rate (`kl_adaptive_lr`, under `--lr_schedule=kl_adaptive_*`), the GradScaler's scale and
        counters (`grad_scaler`, under `--mixed_precision=fp16`); the acting module's and the
        learner modules' states are saved beside it (`surge.runtime.placement.policy_state`)."""
        out = {
            "optimizers": {name: opt.state_dict() for name, opt in self.optimizers.items()},
            "policy_version": self.policy_version,
            "hyperparams": self.hp.to_dict(),
        }
        if self.schedulers:
            out["schedulers"] = {name: sched.state_dict() for name, sched in self.schedulers.items()}
        if self.kl_lr is not None:
            out["kl_adaptive_lr"] = self.kl_lr.state_dict()
        if self.grad_scaler is not None:
            out["grad_scaler"] = self.grad_scaler.state_dict()
        return out

    def load_state_dict(self, state: dict[str, Any], keep_version: bool = False) -> None:
        """Restores `state_dict`'s state. A checkpoint written before several optimizers were
        saved (one "optimizer") restores the main one; an optimizer the state does not name keeps
        its fresh state; one written before hyper-parameters were saved keeps the current ones.
        `keep_version`: `policy_version` is not taken from `state` but incremented
        (`ReplacePolicy`: the policy's version keeps increasing, so the lag of its samples in
        flight never goes negative).

        Raises:
            KeyError: the state names an optimizer or scheduler this learner does not have.
        """
        saved = state.get("optimizers")
        if saved is None:
            saved = {"model": state["optimizer"]} if "optimizer" in state else {}
        unknown = set(saved) - set(self.optimizers)
        if unknown:
            raise KeyError(
                f"the learner state holds optimizer(s) {sorted(unknown)} this learner does not have "
                f"(it has {sorted(self.optimizers)})"
            )
        for name, opt_state in saved.items():
            opt = self.optimizers[name]
            # the implementation flags stay this process's (a checkpoint's own would undo
            # `make_adam`'s fused kernel, or an algorithm's choice for its other optimizers)
            impl = [{k: g[k] for k in _IMPL_FLAGS if k in g} for g in opt.param_groups]
            opt.load_state_dict(opt_state)
            for group, flags in zip(opt.param_groups, impl, strict=True):
                group.update(flags)
        for name, sched_state in (state.get("schedulers") or {}).items():
            if name not in self.schedulers:
                raise KeyError(f"the learner state holds a scheduler {name!r} this learner does not have")
            self.schedulers[name].load_state_dict(sched_state)
        if "hyperparams" in state:
            self.set_hyperparams(state["hyperparams"])
        if self.kl_lr is not None and "kl_adaptive_lr" in state:
            # after the hyper-parameters, whose learning_rate would restart the adaptation
            self.kl_lr.load_state_dict(state["kl_adaptive_lr"])
            self._set_lr(self.kl_lr.lr)
        if self.grad_scaler is not None and "grad_scaler" in state:  # else it starts afresh
            self.grad_scaler.load_state_dict(state["grad_scaler"])
        self.policy_version = self.policy_version + 1 if keep_version else int(state["policy_version"])

    def set_hyperparams(self, values: dict[str, Any]) -> dict[str, tuple[float, float]]:
        """Changes the policy's hyper-parameters (`PolicyHyperparams` names; the others keep
        their values) from the next optimizer step on; Adam's betas and learning rate at once.
        Returns `{name: (old, new)}` of the values that changed.

        Raises:
            ValueError: an unknown name or a value out of range (nothing changed).
        """
        changed = self.hp.update(values)
        if self.kl_lr is not None and "learning_rate" in changed:
            # a new learning_rate (PBT, a command) restarts the KL adaptation from it
            self.kl_lr.lr = self.hp.learning_rate
        for group in self.optimizer.param_groups:
            group["betas"] = (self.hp.adam_beta1, self.hp.adam_beta2)
            group["lr"] = self.hp.learning_rate if self.kl_lr is None else self.kl_lr.lr
        return changed

    def _set_lr(self, lr: float) -> None:
        for group in self.optimizer.param_groups:
            group["lr"] = lr

    def set_learning_rate(self, env_frames: int) -> float:
        """Sets the optimizer's learning rate for `env_frames` (the schedule, from the policy's
        own `hp.learning_rate`; the KL-adaptive one's current rate); returns it."""
        if self.kl_lr is not None:
            lr = self.kl_lr.lr
        else:
            lr = learning_rate(self.cfg, env_frames, self.hp.learning_rate)
        self._set_lr(lr)
        return lr

    def adapt_learning_rate(self, kl: float) -> float:
        """KL-adaptive schedules: applies rl_games' rule to the measured `kl` (`KLAdaptiveLR.update`)
        and sets the optimizer's rate; returns it. In a data-parallel run the rule sees the mean of
        the ranks' KLs, so every rank sets the same rate (rl_games' a2c_common.py, `train_epoch`:
        `av_kls` all-reduced and divided by the number of ranks)."""
        assert self.kl_lr is not None
        if self.data_parallel is not None:
            kl = self.data_parallel.mean_over_ranks(kl)
        lr = self.kl_lr.update(kl)
        self._set_lr(lr)
        return lr

    # ---------------------------------------------------------------------------------------
    def prepare_batch(self, slots: Tensor) -> TrajectoryBatch:
        """Copies the trajectories in `slots` `[N]` out of the buffers into a time-major batch on the
        learning device (`TrajectoryBatch`, `[T(+1), N, ...]`); the slots can be reused as soon as
        this returns. Touches no model state, so it may run in another thread than `train_batch`.

        Sets obs `[T+1, N, ...]`, rnn_states `[T+1, N, state]`, actions `[T, N, ...]`, rewards
        `[T, N]` float32 (scaled by `reward_scale` after `reward_shift`, clipped to `reward_clip`,
        with `reward_log` their log: `shaped_rewards`), terminated `[T, N]` float32 and truncated `[T, N]` float32 (the env's
        flags, 0/1, kept apart: `surge.learning.returns` reads both, a recurrent core resets on
        either), is_active `[T, N]` bool, behavior_version `[T, N]` int64 and, with several
        policies, acting_policy `[T, N]` int8; the algorithm's own buffer fields go to the field
        of their name (behavior_log_probs) or to `extra` under their buffer names (an algorithm's
        learner renames them: APPO's and A2C's `values` -> old_values).
        """
        cfg, dev = self.cfg, self.device
        copier = device_copy_for(self.buffers, dev) if dev.type == "cuda" else None
        if copier is not None:  # straight from the buffers to the device (surge.data.device_copy)
            d = {k: tree_map(lambda x: x.transpose(0, 1), v) for k, v in copier.copy(slots).items()}
        else:
            data = self.buffers.gather(slots, pin_memory=dev.type == "cuda")
            # `.to` keeps the strides, so the time-major view is taken on the device (a view either way)
            d = {
                k: tree_map(lambda x: x.to(dev, non_blocking=True).transpose(0, 1), v)
                for k, v in data.items()
            }
        acting = d.pop("policy_id")
        b = TrajectoryBatch(
            obs=d.pop("obs"),
            rnn_states=d.pop("rnn_states"),
            actions=d.pop("actions"),
            rewards=shaped_rewards(
                d.pop("rewards"),
                cfg.reward_shift,
                cfg.reward_scale,
                cfg.reward_clip,
                cfg.reward_clip_low,
                cfg.reward_log,
            ),
            terminated=d.pop("terminated").float(),
            truncated=d.pop("truncated").float(),
            is_active=d.pop("is_active"),
            behavior_version=d.pop("policy_version"),
            acting_policy=acting if cfg.num_policies > 1 else None,
        )
        for name, value in d.items():  # the algorithm's own fields
            b[name] = value
        return b

    def _mask_stale(self, b: Batch) -> None:
        """Adds `own_active` `[T, N]` bool (active steps this learner's policy acted on), `valids`
        `[T, N]` float32 (those whose lag <= max_policy_lag), their share `valid_fraction` (a scalar
        tensor) and `lag` (learner version - acting version) of this policy's samples: `[T, N]`, or `[n]` with several policies. With several
        policies a batch holds only trajectories this policy acted in (`surge.data.routing`); one
        whose policy changed at an episode boundary also holds another policy's steps, masked here."""
        lag = self.policy_version - b.pop("behavior_version")
        own_active = b.pop("is_active")
        if "acting_policy" in b:
            own = b.pop("acting_policy") == self.policy_id
            own_active = own_active & own
            lag_own = lag[own] if bool(own.any()) else lag[:0]
        else:
            lag_own = lag
        b["own_active"] = own_active
        b["valids"] = (own_active & (lag <= self.cfg.max_policy_lag)).float()
        b["valid_fraction"] = b["valids"].mean()
        b["lag"] = lag_own.float()

    @staticmethod
    def lag_stats(b: Batch) -> dict[str, float]:
        """valid_fraction (the share of the batch's samples trained on: this policy's, active, not
        too stale; 1 when no trajectory changed policy and nothing was masked) and
        policy_lag_min/avg/max (policy versions) over the batch's samples of this policy."""
        lag = b["lag"]
        if not lag.numel():
            return {"valid_fraction": float(b["valid_fraction"])}
        return {
            "valid_fraction": float(b["valid_fraction"]),
            "policy_lag_min": float(lag.min()),
            "policy_lag_avg": float(lag.mean()),
            "policy_lag_max": float(lag.max()),
        }

    def _denormalized(self, values: Tensor) -> Tensor:
        """Critic outputs in return units (they are normalised when `normalize_returns`)."""
        norm = getattr(self.model, "returns_normalizer", None)
        return values if norm is None else norm.denormalize(values)

    def _normalized_targets(self, targets: Tensor, valids: Tensor) -> Tensor:
        """Folds the valid targets into the returns statistics and normalises them (if enabled).
        With `self.popart` (A2C's `--popart`), the value head is rescaled so that the critic's
        outputs in return units do not move with the statistics (`surge.learning.popart`)."""
        norm = getattr(self.model, "returns_normalizer", None)
        if norm is None:
            return targets
        if self.popart:
            mean0, std0 = norm.mean.float().clone(), (norm.var.float() + norm.epsilon).sqrt()
        norm.update(targets[(valids > 0) & torch.isfinite(targets)])  # a NaN would stay in the statistics
        mean, std = norm.derived()  # float32 (mean, sqrt(var + eps)), cached for the next denormalize
        if self.popart:
            preserve_outputs(self.model.value_head, mean0, std0, mean, std)
        return (targets - mean) / std

    @torch.no_grad()
    def _gae_targets(self, b: Batch) -> tuple[Tensor, Tensor]:
        """Advantages and value targets `[T, N]` from behavior values and a fresh bootstrap value
        (GAE, Schulman et al. 2016, eq. 16; a truncated step is bootstrapped with its own value
        under `value_bootstrap`, else with 0 as a terminated one).
        `b["boot_values"]` `[1, N]`, when set, is the bootstrap value (the central value's)."""
        hp, T = self.hp, b["rewards"].shape[0]
        last_obs = tree_map(lambda x: x[T : T + 1], b["obs"])
        zeros = torch.zeros_like(b["terminated"][:1])
        boot = b.pop("boot_values", None)  # `[1, N]`, set by a learner whose values come from elsewhere
        if boot is None:
            _, boot = self.model.evaluate(last_obs, b["rnn_states"][T : T + 1], zeros, 1)
        old = self._denormalized(b["old_values"])
        values = torch.cat([old, self._denormalized(boot)], dim=0)
        adv, targets = gae(
            b["rewards"],
            values,
            b["terminated"],
            hp.gamma,
            hp.gae_lambda,
            truncated=b["truncated"],
            truncation_values=old if self.cfg.value_bootstrap else None,
        )
        return adv, self._normalized_targets(targets, b["valids"])

    def _update_obs_normalizer(self, b: Batch) -> None:
        """Folds the observations of the batch's `own_active` steps (`_mask_stale`) into the
        observation normaliser's statistics (if enabled): not another policy's, not inactive ones
        (e.g. a non-finite observation replaced by 0), not the bootstrap step."""
        norm: Any = getattr(self.model, "obs_normalizer", None)
        if norm is None:
            return
        obs = tree_map(lambda x: x[:-1], b["obs"])  # [T, N, ...]
        mask = b["own_active"]
        if not bool(mask.all()):
            obs = tree_map(lambda x: x[mask], obs)  # [n, ...]
        norm.update(obs)

    @staticmethod
    def normalize_advantages(adv: Tensor, valids: Tensor) -> Tensor:
        """Advantages `[...]` standardised to zero mean and unit std over the valid samples
        (`valids` `[...]` float32, 1 = valid), as in PPO's reference implementation (baselines)."""
        count = valids.sum().clamp(min=1.0)
        mean = (adv * valids).sum() / count
        std = (((adv - mean) ** 2 * valids).sum() / count).sqrt()
        return (adv - mean) / (std + 1e-8)

    def apply_gradients(self, loss: Tensor) -> Tensor:
        """Backpropagates `loss` (a scalar), clips the gradient's global L2 norm to
        `max_grad_norm` (0: no clipping), takes one optimizer step and increments `policy_version`.
        Returns the gradient norm before clipping (scalar tensor).

        A non-finite loss or gradient norm (NaN or inf) skips the step instead: the weights, Adam's
        moments and `policy_version` stay as they were, `skipped_updates` counts it and
        `last_step_skipped` is True (the learners report it as the `skipped_updates` statistic).
        The check costs one host synchronisation per step.

        In a data-parallel run (`data_parallel` set) the gradient is averaged over the ranks before
        it is clipped, and the step is skipped on every rank when any rank's loss or the averaged
        gradient is non-finite (`DataParallel.average_gradients`).

        Under `--mixed_precision=fp16` the loss is scaled by the GradScaler before `backward` and
        the gradients unscaled (after the all-reduce) before clipping; a step skipped for an
        overflow is counted in `skipped_updates` like any other, and the scale is halved."""
        self.optimizer.zero_grad(set_to_none=True)
        scaler = self.grad_scaler
        (loss if scaler is None else scaler.scale(loss)).backward()
        all_finite = True  # every rank's loss (data-parallel runs)
        if self.data_parallel is not None:
            all_finite = self.data_parallel.average_gradients(self.model.parameters(), loss)
        if scaler is not None:  # fp16: unscaled after the all-reduce, before clipping
            scaler.unscale_(self.optimizer)
        max_norm = self.hp.max_grad_norm if self.hp.max_grad_norm > 0 else float("inf")
        if self.data_parallel is None and not loss.is_cuda:  # two host reads: fewer ops on the CPU
            grads = [g for p in self.model.parameters() if (g := p.grad) is not None]
            grad_norm = nn.utils.get_total_norm(grads)
            norm = float(grad_norm)
            # clip_grad_norm_ multiplies by min(1, max_norm / norm) even when that is 1 (to spare
            # an accelerator a sync); the host has the norm here, so an unclipped step skips that
            # pass over every gradient (a multiplication by 1.0: the same weights either way)
            if norm > max_norm:
                nn.utils.clip_grads_with_norm_(self.model.parameters(), max_norm, grad_norm)
            self.last_step_skipped = not (math.isfinite(float(loss.detach())) and math.isfinite(norm))
        elif self.data_parallel is None:  # one device sync instead of two
            grad_norm = nn.utils.clip_grad_norm_(self.model.parameters(), max_norm)
            self.last_step_skipped = not bool(torch.isfinite(loss.detach()) & torch.isfinite(grad_norm))
        else:
            grad_norm = nn.utils.clip_grad_norm_(self.model.parameters(), max_norm)
            self.last_step_skipped = not (all_finite and bool(torch.isfinite(grad_norm)))
        if self.last_step_skipped:
            self.optimizer.zero_grad(set_to_none=True)
            self.skipped_updates += 1
            if scaler is not None:  # the scaler saw the inf gradients in `unscale_`: halves its scale
                scaler.update()
            return grad_norm
        if scaler is None:
            self.optimizer.step()
        else:
            scaler.step(self.optimizer)
            scaler.update()
        self.policy_version += 1
        return grad_norm

    def skip_stats(self, skipped: int) -> dict[str, float]:
        """The statistics of skipped optimizer steps: `skipped_updates` in this batch and
        `skipped_updates_total` so far (`apply_gradients`)."""
        return {"skipped_updates": float(skipped), "skipped_updates_total": float(self.skipped_updates)}

    def train(self, slots: Tensor, env_frames: int = 0) -> dict[str, float]:
        """`train_batch(prepare_batch(slots))`; the caller returns the slots to the pool afterwards."""
        return self.train_batch(self.prepare_batch(slots), env_frames)

    def train_batch(self, b: Batch, env_frames: int = 0) -> dict[str, float]:
        """On-policy learners: trains on a batch from `prepare_batch`; returns mean statistics
        (algorithm-specific)."""
        raise NotImplementedError(f"{type(self).__name__} is not an on-policy learner")

    def observe(self, b: Batch) -> None:
        """Replay learners (`Feed.REPLAY`): copies a block's batch from `prepare_batch` into the
        replay buffer. The placement releases the block as soon as this returns."""
        raise NotImplementedError(f"{type(self).__name__} is not a replay learner")

    def train_replay(self, env_frames: int = 0) -> dict[str, float] | None:
        """Replay learners: the updates due after the last `observe` (the algorithm's replay ratio);
        their mean statistics, or None when none was due."""
        raise NotImplementedError(f"{type(self).__name__} is not a replay learner")
