"""The `params.config` block of an rl_games PPO file (`rl_games/common/a2c_common.py`,
`A2CBase.__init__`) as surge's APPO flags, one function per group of keys, called in the file's
order so that notes and the first refusal come out as before.
"""

from __future__ import annotations

import math

from surge.app.rl_games.central_value import translate_central_value
from surge.app.rl_games.envs import RlGamesKeyError
from surge.app.rl_games.network import NetInfo
from surge.app.rl_games.reader import NO_LIMIT, Node, Translator, as_number, truthy
from surge.app.rl_games.workers import worker_layout


def translate_config(t: Translator, c: Node, net: NetInfo) -> None:
    """Translates `params.config` (`c`) into `t`, after the env, the algo and the network.

    Raises:
        RlGamesKeyError: a key surge cannot honour (its full path and why), or a value rl_games
            itself refuses (a batch not divisible by the minibatch).
    """
    full, short = c.get("full_experiment_name"), c.get("name")
    name = full or short
    if name:
        t.set("experiment", str(name))
    if c.has("train_dir"):
        t.set("train_dir", str(c.get("train_dir")))
    horizon, steps_per_epoch = _batch_geometry(t, c)
    _loss(t, c)
    _learning_rate(t, c, net)
    _reward_shaper(t, c)
    _normalisation(t, c)
    _clip_actions(t, c, net)
    _recurrence(t, c, net, horizon)
    _budget(t, c, steps_per_epoch)
    _no_effect_or_refused(t, c)
    if c.has("central_value_config"):
        translate_central_value(t, c.node("central_value_config"), net)
    if c.has("self_play_config"):
        _translate_self_play(t, c.node("self_play_config"))
    if c.has("self_play"):
        c.get("self_play")
        t.note(
            "params.config.self_play",
            "rl_games reads it without using it; self-play comes from self_play_config",
        )


def _batch_geometry(t: Translator, c: Node) -> tuple[int, int]:
    """The batch geometry (a2c_common.py: batch_size = horizon_length * num_actors * num_agents).

    Returns:
        `horizon_length`, and the env frames of one rl_games epoch.
    """
    frameskip, batched = t.frameskip, t.batched
    actors = as_number("params.config.num_actors", c.get("num_actors"), int)
    horizon = as_number("params.config.horizon_length", c.get("horizon_length"), int)
    if c.has("minibatch_size"):
        minibatch = as_number("params.config.minibatch_size", c.get("minibatch_size"), int)
        if c.has("minibatch_size_per_env"):
            c.get("minibatch_size_per_env")
            t.note("params.config.minibatch_size_per_env", "rl_games uses minibatch_size when both are given")
    elif c.has("minibatch_size_per_env"):
        minibatch = actors * as_number(
            "params.config.minibatch_size_per_env", c.get("minibatch_size_per_env"), int
        )
    else:
        raise RlGamesKeyError(
            "params.config.minibatch_size", "rl_games needs minibatch_size or minibatch_size_per_env.", ""
        )
    if minibatch <= 0 or (horizon * actors) % minibatch:
        raise RlGamesKeyError(
            "params.config.minibatch_size",
            f"the batch horizon_length x num_actors = {horizon * actors} is not a multiple of the minibatch {minibatch} "
            "(rl_games refuses it too).",
            "",
        )
    t.set("rollout", horizon)
    t.set("batch_size", minibatch)
    t.set("num_batches_per_iteration", horizon * actors // minibatch)
    t.set("ppo_epochs", as_number("params.config.mini_epochs", c.get("mini_epochs"), int))
    t.out.values.update(worker_layout(actors, batched, cpus=1 if t.one_worker else None))
    steps_per_epoch = horizon * actors * frameskip  # env frames of one rl_games epoch
    return horizon, steps_per_epoch


def _loss(t: Translator, c: Node) -> None:
    """The loss (a2c_*.py calc_losses; common_losses.py)."""
    t.set("gamma", as_number("params.config.gamma", c.get("gamma")))
    t.set("gae_lambda", as_number("params.config.tau", c.get("tau")))
    e_clip = as_number("params.config.e_clip", c.get("e_clip"))
    t.set("ppo_clip_ratio", e_clip)
    t.set("ppo_clip_lower", "symmetric")  # common_losses.actor_loss: clamp(ratio, 1 - e_clip, 1 + e_clip)
    if truthy(c.get("ppo", True)) is False:
        raise RlGamesKeyError(
            "params.config.ppo", "False (no ratio clipping): use surge's --algo=A2C instead.", ""
        )
    # rl_games clips the value change by e_clip when clip_value is True (common_losses.critic_loss)
    t.set("ppo_clip_value", e_clip if truthy(c.get("clip_value", False)) else NO_LIMIT)
    t.set("value_loss_coeff", 0.5 * as_number("params.config.critic_coef", c.get("critic_coef")))
    entropy_coef = as_number("params.config.entropy_coef", c.get("entropy_coef"))
    if entropy_coef < 0:  # surge's range of --exploration_loss_coeff, refused here with the key's path
        raise RlGamesKeyError(
            "params.config.entropy_coef",
            f"{entropy_coef}: rl_games then rewards low entropy; surge's --exploration_loss_coeff is >= 0 "
            "(an entropy bonus only).",
            "set entropy_coef: 0 or above.",
        )
    t.set("exploration_loss_coeff", entropy_coef)
    if truthy(c.get("use_smooth_clamp", False)):
        t.note(
            "params.config.use_smooth_clamp",
            "True: rl_games replaces the ratio's hard clip by a sigmoid (common_losses.smooth_clamp); surge keeps the hard clip",
        )
    t.set("normalize_advantage", truthy(c.get("normalize_advantage", True)))
    if truthy(c.get("normalize_advantage", True)):  # a2c_common prepare_dataset: once over the batch
        t.set("normalize_advantage_over", "batch")
    if truthy(c.get("normalize_rms_advantage", False)):
        raise RlGamesKeyError(
            "params.config.normalize_rms_advantage", "surge has no running advantage normaliser.", ""
        )
    bounds = as_number("params.config.bounds_loss_coef", c.get("bounds_loss_coef", 0.0) or 0.0)
    t.need("params.config.bounds_loss_coef", "bounds_loss_coef", bounds, 0.0)
    if c.has("bound_loss_type"):
        kind = c.get("bound_loss_type")
        if bounds:
            t.need("params.config.bound_loss_type", "bound_loss_type", kind)
        else:
            t.note("params.config.bound_loss_type", "no effect with bounds_loss_coef 0")
    # rl_games' optim.Adam(..., weight_decay=self.weight_decay): an L2 term in Adam's gradient
    wd = as_number("params.config.weight_decay", c.get("weight_decay", 0.0) or 0.0)
    t.need("params.config.weight_decay", "adam_weight_decay", wd, 0.0)


def _learning_rate(t: Translator, c: Node, net: NetInfo) -> None:
    """Gradients, learning rate and its schedule."""
    lr = as_number("params.config.learning_rate", c.get("learning_rate"))
    t.set("learning_rate", lr)
    truncate = truthy(c.get("truncate_grads", False))
    grad_norm = as_number("params.config.grad_norm", c.get("grad_norm", 0.0))
    t.set("max_grad_norm", grad_norm if truncate else 0.0)
    schedule = c.get("lr_schedule")
    kind = c.get("schedule_type", "legacy")
    kl = c.get("kl_threshold")
    if schedule == "adaptive":
        if kind not in ("legacy", "standard"):
            raise RlGamesKeyError(
                "params.config.schedule_type", f"{kind!r}: rl_games knows legacy and standard.", ""
            )
        t.need(
            "params.config.lr_schedule",
            "lr_schedule",
            # rl_games' discrete agent (a2c_common.py DiscreteA2CBase.train_epoch) applies the rule
            # once per mini-epoch whatever schedule_type says; the continuous one per minibatch
            # under legacy (its default)
            "kl_adaptive_minibatch" if kind == "legacy" and net.continuous else "kl_adaptive_epoch",
        )
        t.need(
            "params.config.kl_threshold",
            "lr_schedule_kl_threshold",
            as_number("params.config.kl_threshold", kl),
        )
    else:
        if schedule == "linear":
            has_budget = (
                as_number("params.config.max_epochs", c.data.get("max_epochs", -1), int) > 0
                or as_number("params.config.max_frames", c.data.get("max_frames", -1), int) > 0
            )
            if has_budget:
                t.set("lr_schedule", "linear_decay")
                t.note(
                    "params.config.lr_schedule",
                    "linear: surge decays to 0 over train_for_env_steps, rl_games to its min_lr (1e-6) over the same budget",
                )
            else:
                t.set("lr_schedule", "constant")
                t.note(
                    "params.config.lr_schedule",
                    "linear without max_epochs/max_frames: rl_games keeps the rate constant",
                )
        else:
            t.set("lr_schedule", "constant")
            if schedule not in (None, "None", "none", "identity"):
                t.note(
                    "params.config.lr_schedule",
                    f"{schedule!r} is neither adaptive nor linear: rl_games keeps the rate constant",
                )
        if kl is not None:
            t.note(
                "params.config.kl_threshold",
                "no effect without lr_schedule adaptive (rl_games reads it only there)",
            )
        if c.has("schedule_type"):
            t.note("params.config.schedule_type", "no effect without lr_schedule adaptive")
    if truthy(c.get("schedule_entropy", False)):
        # rl_games' LinearScheduler(apply_to_entropy=...) exists only for lr_schedule linear with a
        # budget (a2c_common.py); elsewhere (IdentityScheduler, AdaptiveScheduler) the key is inert
        if t.out.values.get("lr_schedule") == "linear_decay":
            t.need("params.config.schedule_entropy", "exploration_loss_schedule", "linear_decay", "constant")
            t.need("params.config.schedule_entropy", "exploration_loss_coeff_min", 1e-4)
            t.note(
                "params.config.schedule_entropy",
                "surge decays the entropy coefficient to 1e-4 over train_for_env_steps, once per batch, "
                "as rl_games over its epochs (its update comes after each epoch's training)",
            )
        else:
            t.note(
                "params.config.schedule_entropy",
                "no effect: rl_games decays entropy only with lr_schedule linear and a budget",
            )


def _reward_shaper(t: Translator, c: Node) -> None:
    """Rewards (tr_helpers.DefaultRewardsShaper: clip((r + shift) * scale, min, max), log)."""
    shaper = c.node("reward_shaper")
    t.set(
        "reward_scale", as_number("params.config.reward_shaper.scale_value", shaper.get("scale_value", 1.0))
    )
    shift = as_number("params.config.reward_shaper.shift_value", shaper.get("shift_value", 0.0))
    t.need("params.config.reward_shaper.shift_value", "reward_shift", shift, 0.0)
    lo, hi = shaper.get("min_val"), shaper.get("max_val")
    if lo is None and hi is None:
        t.set("reward_clip", NO_LIMIT)
    else:
        lo_f = as_number("params.config.reward_shaper.min_val", lo) if lo is not None else -math.inf
        hi_f = as_number("params.config.reward_shaper.max_val", hi) if hi is not None else math.inf
        if lo_f >= hi_f:
            raise RlGamesKeyError(
                "params.config.reward_shaper.min_val",
                f"[{lo_f}, {hi_f}]: no reward passes a clip whose min_val is not below its max_val.",
                "",
            )
        # an infinite end is surge's finite NO_LIMIT (its flags take finite numbers)
        t.set("reward_clip", min(hi_f, NO_LIMIT))
        if lo_f != -hi_f:
            t.need("params.config.reward_shaper.min_val", "reward_clip_low", max(lo_f, -NO_LIMIT))
    if truthy(shaper.get("log_val", False)):
        t.set("reward_log", True)  # log of the shaped reward, after the clip (rl_games' order)


def _normalisation(t: Translator, c: Node) -> None:
    """Input and value normalisation, bootstrap on truncation, recurrent state on done."""
    t.set("normalize_input", truthy(c.get("normalize_input", False)))
    if truthy(c.get("normalize_input", False)):  # RunningMeanStd updates at every training forward
        t.set("obs_normalizer_update", "minibatch")
    t.set("normalize_returns", truthy(c.get("normalize_value", False)))
    t.need("params.config.value_bootstrap", "value_bootstrap", truthy(c.get("value_bootstrap", True)), True)
    t.need(
        "params.config.zero_rnn_on_done", "zero_rnn_on_done", truthy(c.get("zero_rnn_on_done", True)), True
    )


def _clip_actions(t: Translator, c: Node, net: NetInfo) -> None:
    """rl_games' `clip_actions` for Box actions."""
    # rl_games' clip_actions (default True, a2c_common ContinuousA2CBase.preprocess_actions): the
    # action is clamped to [-1, 1] and rescaled to the space's [low, high]; False: sent unchanged
    clip = truthy(c.get("clip_actions", True))
    if not net.continuous:
        if c.has("clip_actions"):
            t.note(
                "params.config.clip_actions",
                "no effect with discrete actions (rl_games reads it for Box actions)",
            )
    elif t.supports("clip_actions") and t.supports("rescale_actions"):
        t.set("clip_actions", clip)
        t.set("rescale_actions", clip)
    elif clip:
        t.note(
            "params.config.clip_actions",
            "True in rl_games (its default): it clamps actions to [-1, 1] and rescales them to the space's "
            "[low, high]; this surge has no --rescale_actions and clips them to [low, high]: the same for "
            "[-1, 1] boxes (HalfCheetah, LunarLanderContinuous), a different action scale for others "
            "(Pendulum's [-2, 2])",
        )
    else:
        t.need("params.config.clip_actions", "clip_actions", False)


def _recurrence(t: Translator, c: Node, net: NetInfo, horizon: int) -> None:
    """The sequence length of a recurrent network (`seq_length`, `seq_len`)."""
    seq_key = "seq_length" if c.has("seq_length") else "seq_len"
    seq = as_number(f"params.config.{seq_key}", c.get(seq_key, 4), int)
    if c.has("bptt_length"):
        c.get("bptt_length")
        t.note("params.config.bptt_length", "rl_games does not use it (a2c_common: 'not used right now')")
    if net.rnn:
        if horizon % seq:
            raise RlGamesKeyError(
                f"params.config.{seq_key}", f"{seq} does not divide horizon_length {horizon}.", ""
            )
        t.set("recurrence", seq)
    else:
        t.set("recurrence", 1)
        if c.has(seq_key):
            t.note(
                f"params.config.{seq_key}",
                "no effect without an rnn (minibatches of single steps, as rl_games)",
            )


#: surge's `--train_for_env_steps` default (`surge.cfg.core_sections`): in effect no budget
NO_BUDGET = int(1e10)


def _budget(t: Translator, c: Node, steps_per_epoch: int) -> None:
    """Budget and stopping (an rl_games epoch is horizon_length x num_actors env steps)."""
    frameskip = t.frameskip
    budgets = []
    epochs = as_number("params.config.max_epochs", c.get("max_epochs", -1), int)
    if epochs > 0:
        budgets.append(epochs * steps_per_epoch)
    frames = as_number("params.config.max_frames", c.get("max_frames", -1), int)
    if frames > 0:
        budgets.append(frames * frameskip)
    if budgets:
        t.set("train_for_env_steps", min(budgets))
    elif c.has("score_to_win"):
        # rl_games without max_epochs / max_frames (-1) trains until score_to_win: no budget, not
        # the 1M env steps surge picks for a vector observation (ppo_cartpole_masked_velocity_rnn.yaml
        # reached its 500 after 1.58M env frames)
        t.set("train_for_env_steps", NO_BUDGET)
        t.note(
            "params.config.score_to_win",
            "without max_epochs or max_frames rl_games trains until it: no --train_for_env_steps budget "
            "(pass one to stop earlier)",
        )
    if c.has("score_to_win"):
        t.need(
            "params.config.score_to_win",
            "score_to_win",
            as_number("params.config.score_to_win", c.get("score_to_win")),
        )
    if c.has("games_to_track"):
        t.set("stats_avg", as_number("params.config.games_to_track", c.get("games_to_track"), int))
    else:
        t.set("stats_avg", 100)  # rl_games' games_to_track default
    if c.has("save_best_after"):
        t.set(
            "save_best_after",
            as_number("params.config.save_best_after", c.get("save_best_after"), int) * steps_per_epoch,
        )


def _no_effect_or_refused(t: Translator, c: Node) -> None:
    """The keys that have no effect on learning (noted), or features surge does not have (refused)."""
    reported = {
        "device": "surge's --device (cpu|gpu) picks the device; pass --device=gpu for CUDA",
        "use_diagnostics": "surge always logs its learner statistics (docs/metrics.md)",
        "print_stats": "surge prints progress every --report_interval_sec",
        "save_frequency": "surge saves a checkpoint every --save_every_sec seconds, not every N epochs",
        "use_experimental_cv": "only used with central_value_config, which surge maps without it",
    }
    for k, why in reported.items():
        if c.has(k):
            c.get(k)
            t.note(f"params.config.{k}", why)
    for k, fix in (
        ("multi_gpu", "surge's data-parallel learners run under torchrun (issue 21)"),
        ("mixed_precision", "this surge has no --mixed_precision=fp16"),
        ("ignore_dead_batches", "surge has no such option"),
        ("freeze_critic", "surge has no such option"),
        ("population_based_training", "surge's PBT takes its own flags (--with_pbt, docs/population.md)"),
        ("use_action_masks", "surge reads masks from an env's action_mask observation (docs/policies.md)"),
    ):
        if k == "mixed_precision" and c.has(k) and not truthy(c.get(k)) and t.supports(k, "none"):
            # rl_games' False is float32; surge's default (auto) would pick bf16 on some CPUs
            t.set("mixed_precision", "none")
            continue
        if truthy(c.get(k, False)):
            if k == "mixed_precision" and t.supports("mixed_precision", "bf16"):
                _translate_mixed_precision(t)
                continue
            if k == "use_action_masks":
                t.note(f"params.config.{k}", fix)
                continue
            raise RlGamesKeyError(f"params.config.{k}", f"True is not supported: {fix}.", "")
    epochs_reset = as_number("params.config.epochs_between_resets", c.get("epochs_between_resets", 0), int)
    if epochs_reset:
        raise RlGamesKeyError(
            "params.config.epochs_between_resets", "surge does not reset its envs every N epochs.", ""
        )
    for k in ("rnd_config", "features", "vec_env", "env_info"):
        if c.has(k):
            c.whole(k)
            raise RlGamesKeyError(f"params.config.{k}", "an rl_games feature surge does not have.", "")


def _translate_self_play(t: Translator, sp: Node) -> None:
    """rl_games' `self_play_config` (`common/a2c_common.py`, `SelfPlayManager`) as surge's self-play flags."""
    t.set("self_play", True)
    for key, flag, kind in (
        ("update_score", "self_play_update_score", float),
        ("games_to_check", "self_play_games_to_check", int),
        ("env_update_num", "self_play_env_update_num", int),
    ):
        if sp.has(key):
            t.set(flag, as_number(f"{sp.path}.{key}", sp.get(key), kind))
    if sp.has("check_scores"):
        t.set("self_play_check_scores", truthy(sp.get("check_scores")))


def _translate_mixed_precision(t: Translator) -> None:
    """rl_games' `mixed_precision: True` as it runs in rl_games 1.6.5: the PPO losses under
    `torch.amp.autocast('cuda', dtype=torch.bfloat16)` (a2c_continuous.py and a2c_discrete.py
    `calc_gradients`), i.e. bf16 on a CUDA GPU; on the CPU that autocast does not touch the tensors
    and `GradScaler('cuda')` disables itself, so rl_games trains in float32. `--mixed_precision=
    bf16_cuda` does the same by the run's `--device`, which the command line may still set."""
    t.set("mixed_precision", "bf16_cuda")
    t.note(
        "params.config.mixed_precision",
        "True: rl_games 1.6.5 autocasts its PPO losses to bfloat16 on CUDA only: --mixed_precision=bf16_cuda "
        "(bf16 with --device=gpu, float32 on the CPU)",
    )
