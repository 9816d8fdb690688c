"""rl_games' YAML files as they ship (`surge train --cfg=ppo_cartpole.yaml`): its nested schema
(`params: seed / algo / model / network / config / player / env_config`) translated to surge's flat
flags, every key mapped, refused with its full path and why, or reported once in the log.

The meaning of each key is rl_games 1.6.5's: `rl_games/common/a2c_common.py` (`A2CBase.__init__`
reads `config`), `rl_games/algos_torch/a2c_discrete.py` and `a2c_continuous.py` (`calc_gradients`,
`calc_losses`: the loss `a_loss + 0.5 * c_loss * critic_coef - entropy * entropy_coef`),
`rl_games/algos_torch/network_builder.py` (`A2CBuilder`), `rl_games/common/tr_helpers.py`
(`DefaultRewardsShaper`), `rl_games/common/player.py` (the `player` block). The table of every key
is in docs/rl_games.md.

rl_games' PPO is synchronous: it collects `horizon_length` steps of `num_actors` envs with one
policy, then trains `mini_epochs` passes of `minibatch_size` minibatches on them. surge runs it as
APPO with `--with_vtrace=False` (GAE, rl_games' `tau`) and `--num_batches_to_accumulate=0` (its
synchronous mode: collection halts while the learner trains, docs/architecture.md), with one
iteration = the whole rollout (`num_batches_per_iteration = horizon_length * num_actors /
minibatch_size`).

A key whose surge flag does not exist in this build (another part of issue 21 adds it) is refused
naming that flag; the mapping looks the flag up in `Config` at translation time, so it starts to
work when the flag lands.
"""

from __future__ import annotations

import dataclasses
import math
import os
from typing import Any

from surge.cfg.rl_games_envs import RlGamesKeyError, env_from_rl_games
from surge.cfg.rl_games_network import NetInfo, translate_network
from surge.cfg.rl_games_reader import (
    NO_LIMIT,
    Node,
    Translation,
    Translator,
    as_number,
    leaves,
    surge_fields,
    truthy,
)
from surge.errors import ConfigError

__all__ = [
    "NO_LIMIT",
    "Translation",
    "is_rl_games_yaml",
    "keep_num_actors",
    "surge_fields",
    "translate",
    "worker_layout",
]

#: rl_games' Adam (`a2c_continuous.py` / `a2c_discrete.py`: `optim.Adam(..., eps=1e-08)`)
RL_GAMES_ADAM_EPS = 1e-8


def is_rl_games_yaml(data: Any) -> bool:
    """True for rl_games' nested schema: a top-level `params` mapping with its `algo`, `model`,
    `network` or `config` blocks (surge's own flat files have none of them)."""
    if not isinstance(data, dict) or not isinstance(data.get("params"), dict):
        return False
    return any(isinstance(data["params"].get(k), dict) for k in ("algo", "model", "network", "config"))


# ------------------------------------------------------------------------------ the translation


def worker_layout(num_actors: int, batched: bool, cpus: int | None = None) -> dict[str, int]:
    """rl_games' `num_actors` envs as surge workers: `num_workers` the largest divisor of
    `num_actors` not above the CPU count, each with `num_actors / num_workers` envs (a batched
    family: one EnvPool of that many `env_agents`), in 2 splits for double-buffered sampling when
    they divide evenly (throughput only: the data of a synchronous iteration is the same)."""
    cpus = max(1, cpus or os.cpu_count() or 1)
    workers = max(d for d in range(1, min(cpus, num_actors) + 1) if num_actors % d == 0)
    per_worker = num_actors // workers
    if batched:
        return {
            "num_workers": workers,
            "num_envs_per_worker": 1,
            "worker_num_splits": 1,
            "env_agents": per_worker,
        }
    splits = 2 if per_worker % 2 == 0 else 1
    return {"num_workers": workers, "num_envs_per_worker": per_worker, "worker_num_splits": splits}


def keep_num_actors(values: dict[str, Any], explicit: dict[str, Any]) -> None:
    """With `--num_workers` on the command line, keeps an rl_games file's `num_actors` (the
    product of its translated `worker_layout` in `values`): the envs per worker (`env_agents` for
    a batched family) become `num_actors / num_workers`, unless the command line gives those too.

    Raises:
        ConfigError: `num_actors` is not a multiple of `--num_workers`.
    """
    per = (
        "env_agents"
        if "env_agents" in values and values.get("num_envs_per_worker") == 1
        else "num_envs_per_worker"
    )
    if per in explicit or "num_workers" not in values or per not in values:
        return
    actors = int(values["num_workers"]) * int(values[per])
    workers = int(explicit["num_workers"])
    if workers <= 0 or actors % workers:
        raise ConfigError(
            "num_workers",
            f"the rl_games file's num_actors={actors} envs cannot be split over {workers} workers.",
            f"pass a divisor of {actors}, or --{per} as well.",
        )
    values[per] = actors // workers
    if per == "num_envs_per_worker" and "worker_num_splits" not in explicit:
        values["worker_num_splits"] = 2 if values[per] % 2 == 0 else 1


def translate(
    data: dict[str, Any],
    path: str,
    evaluation: bool = False,
    *,
    fields: dict[str, dataclasses.Field] | None = None,
    separate_ok: bool | None = None,
    collect_missing: bool = False,
) -> Translation:
    """surge's flat flags for an rl_games file (`is_rl_games_yaml`).

    Args:
        data: the parsed file.
        path: the file's path (messages).
        evaluation: `surge enjoy`: the `player` block becomes enjoy's flags.
        fields: the flags surge has (None: this build's, `surge_fields`); tests pass more to check
            the mapping of flags not merged yet.
        separate_ok: whether the model builds separate actor and critic networks (None: probe
            this build, `_separate_supported`).
        collect_missing: list the keys that wait for a flag of issue 21 in `Translation.missing`
            instead of refusing the first (benchmarks/rl_games_configs.py; the values are then
            incomplete and must not be run).

    Returns:
        the flags, the notes to log once, and the keys that depend on issue 21's flags.

    Raises:
        ConfigError: a key surge cannot honour (its full path, e.g.
            `params.config.central_value_config.network.rnn.layer_norm`, and why), an unknown key,
            or a value rl_games itself refuses (a batch not divisible by the minibatch).
    """
    try:
        return _translate(data, path, Translator(evaluation, fields, separate_ok, collect_missing))
    except RlGamesKeyError as e:
        raise RlGamesKeyError(e.field, f"{e.problem} (in {path})", e.fix) from None


def _translate(data: dict[str, Any], path: str, t: Translator) -> Translation:
    seen: set[str] = set()
    for k in data:
        if k != "params":
            raise RlGamesKeyError(
                str(k), f"a top-level key of {path} that rl_games' runner does not read.", ""
            )
    params = Node(data["params"], "params", seen)
    config = params.node("config")
    _translate_env(t, config)
    _translate_algo(t, params)
    net = translate_network(t, params.node("network"))
    _translate_config(t, config, net)
    _translate_top(t, params)
    _translate_player(t, config.node("player"))
    for p in leaves(data["params"], "params"):
        parts = p.split(".")
        if p in seen or any(".".join(parts[:i]) + "/*" in seen for i in range(1, len(parts))):
            continue
        raise RlGamesKeyError(
            p,
            f"an rl_games key surge does not map (in {path}).",
            "remove it (docs/rl_games.md lists the keys).",
        )
    return t.out


def _translate_env(t: Translator, config: Node) -> None:
    env_config = config.node("env_config")

    def ignore(key: str, why: str) -> None:
        if env_config.has(key) and env_config.key(key) not in env_config.seen:
            env_config.get(key)
            t.note(env_config.key(key), why)

    choice = env_from_rl_games(config.get("env_name"), env_config.data, env_config.get, ignore)
    t.set("env", choice.env)
    t.out.values.update(choice.flags)
    t.frameskip, t.batched, t.one_worker = choice.frameskip, choice.batched, choice.one_worker
    for n in choice.notes:
        t.out.notes.append(n)
    ignore("seed", "rl_games passes it to the env; surge seeds envs from --seed (params.seed)")
    if not choice.reads_env_config:
        for key in list(env_config.data):
            if env_config.key(key) not in env_config.seen:
                ignore(
                    key,
                    f"rl_games' creator of {config.data.get('env_name')} does not read this key, so it has no effect there either",
                )


def _translate_algo(t: Translator, params: Node) -> None:
    algo = params.node("algo")
    name = algo.get("name")
    if name not in ("a2c_discrete", "a2c_continuous"):
        raise RlGamesKeyError(
            "params.algo.name",
            f"{name!r}: only rl_games' PPO (a2c_discrete, a2c_continuous) files are translated"
            + (
                " (surge's --algo=SAC takes Stable-Baselines3's flags; rl_games' SAC keys are not mapped)"
                if name == "sac"
                else ""
            )
            + ".",
            "",
        )
    model = params.node("model").get("name")
    if model not in ("discrete_a2c", "multi_discrete_a2c", "continuous_a2c_logstd"):
        raise RlGamesKeyError(
            "params.model.name",
            f"{model!r}: surge maps discrete_a2c, multi_discrete_a2c and continuous_a2c_logstd (a "
            "Gaussian with a log-std).",
            "",
        )
    # rl_games' PPO, synchronous: one policy collects, then it trains on the whole rollout
    t.set("algo", "APPO")
    t.set("with_vtrace", False)
    t.set("num_batches_to_accumulate", 0)
    t.set("kl_loss_coeff", 0.0)
    t.set("exploration_loss", "entropy")
    t.set("adam_eps", RL_GAMES_ADAM_EPS)
    t.set("adam_beta1", 0.9)
    t.set("adam_beta2", 0.999)


def _translate_config(t: Translator, c: Node, net: NetInfo) -> None:
    frameskip, batched = t.frameskip, t.batched
    full, short = c.get("full_experiment_name"), c.get("name")
    name = full or short
    if name:
        t.set("experiment", str(name))
    if c.has("train_dir"):
        t.set("train_dir", str(c.get("train_dir")))

    # ---- batch geometry (a2c_common.py: batch_size = horizon_length * num_actors * num_agents)
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

    # ---- the loss (a2c_*.py calc_losses; common_losses.py)
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
    t.set("exploration_loss_coeff", as_number("params.config.entropy_coef", c.get("entropy_coef")))
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
    wd = as_number("params.config.weight_decay", c.get("weight_decay", 0.0) or 0.0)
    if wd:
        raise RlGamesKeyError("params.config.weight_decay", f"{wd}: surge's Adam has no weight decay.", "")

    # ---- gradients, learning rate
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
        raise RlGamesKeyError(
            "params.config.schedule_entropy", "surge does not decay the entropy coefficient.", ""
        )

    # ---- rewards (tr_helpers.DefaultRewardsShaper: clip((r + shift) * scale, min, max), log)
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
        if lo_f != -hi_f:
            raise RlGamesKeyError(
                "params.config.reward_shaper.min_val"
                if lo is not None
                else "params.config.reward_shaper.max_val",
                f"[{lo_f}, {hi_f}]: surge clips rewards to a symmetric [-reward_clip, reward_clip].",
                "",
            )
        t.set("reward_clip", hi_f)
    if truthy(shaper.get("log_val", False)):
        raise RlGamesKeyError(
            "params.config.reward_shaper.log_val", "surge does not take the log of rewards.", ""
        )

    # ---- normalisation, bootstrap, recurrence
    t.set("normalize_input", truthy(c.get("normalize_input", False)))
    if truthy(c.get("normalize_input", False)):  # RunningMeanStd updates at every training forward
        t.set("obs_normalizer_update", "minibatch")
    t.set("normalize_returns", truthy(c.get("normalize_value", False)))
    t.need("params.config.value_bootstrap", "value_bootstrap", truthy(c.get("value_bootstrap", True)), True)
    t.need(
        "params.config.zero_rnn_on_done", "zero_rnn_on_done", truthy(c.get("zero_rnn_on_done", True)), True
    )
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

    # ---- budget and stopping (an rl_games epoch is horizon_length x num_actors env steps)
    budgets = []
    epochs = as_number("params.config.max_epochs", c.get("max_epochs", -1), int)
    if epochs > 0:
        budgets.append(epochs * steps_per_epoch)
    frames = as_number("params.config.max_frames", c.get("max_frames", -1), int)
    if frames > 0:
        budgets.append(frames * frameskip)
    if budgets:
        t.set("train_for_env_steps", min(budgets))
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

    # ---- what has no effect on learning, or is refused
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
            if k == "mixed_precision" and t.supports("mixed_precision", "fp16"):
                # rl_games' autocast + GradScaler is fp16 on CUDA; on the CPU surge refuses fp16
                # before the start, naming --mixed_precision=bf16 or none (docs/mixed_precision.md)
                t.set("mixed_precision", "fp16")
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
    if c.has("central_value_config"):
        _translate_central_value(t, c.node("central_value_config"), net)
    if c.has("self_play_config"):
        _translate_self_play(t, c.node("self_play_config"))
    if c.has("self_play"):
        c.get("self_play")
        t.note(
            "params.config.self_play",
            "rl_games reads it without using it; self-play comes from self_play_config",
        )


def _translate_central_value(t: Translator, cv: Node, net: NetInfo) -> None:
    """rl_games' `central_value_config` (`algos_torch/central_value.py`, `CentralValueTrain`)."""
    p = cv.path
    t.need(p, "central_value", True)
    n = cv.node("network")
    if n.get("name", "actor_critic") != "actor_critic":
        raise RlGamesKeyError(
            f"{p}.network.name", "surge's central value is an MLP (rl_games' actor_critic).", ""
        )
    n.get("central_value")
    mlp = n.node("mlp")
    t.need(f"{p}.network.mlp.units", "central_value_mlp_layers", list(mlp.get("units", [])))
    act = mlp.get("activation", "relu")
    if {"swish": "silu"}.get(act, act) != net.activation:
        raise RlGamesKeyError(
            f"{p}.network.mlp.activation", f"{act!r}: surge's central value uses the actor's activation.", ""
        )
    init = mlp.node("initializer")
    init.get("name")
    init.get("scale")
    init.get("gain")
    t.note(init.path, "surge's central value takes the actor's initializer")
    if truthy(mlp.node("regularizer").get("name", "None")):
        raise RlGamesKeyError(f"{p}.network.mlp.regularizer.name", "surge has no weight regularizer.", "")
    if n.has("rnn"):
        rnn = n.node("rnn")
        t.need(f"{p}.network.rnn", "central_value_use_rnn", True)
        for k, flag in (("name", "rnn_type"), ("units", "hidden_size"), ("layers", "rnn_num_layers")):
            v = rnn.get(k, 1 if k == "layers" else None)
            if v != t.out.values.get(flag):
                raise RlGamesKeyError(
                    f"{p}.network.rnn.{k}", f"{v!r}: surge's central value RNN has the actor's {flag}.", ""
                )
        for k in ("layer_norm", "before_mlp"):
            if truthy(rnn.get(k, False)):
                raise RlGamesKeyError(
                    f"{p}.network.rnn.{k}", "True: surge's central value RNN has no such option.", ""
                )
    for k in n.data:
        if k not in ("name", "central_value", "mlp", "rnn"):
            raise RlGamesKeyError(
                f"{p}.network.{k}", "a central value network option surge does not map.", ""
            )
    if cv.has("learning_rate"):
        t.need(
            f"{p}.learning_rate",
            "central_value_learning_rate",
            as_number(f"{p}.learning_rate", cv.get("learning_rate")),
        )
    if cv.has("mini_epochs"):
        t.need(
            f"{p}.mini_epochs",
            "central_value_mini_epochs",
            as_number(f"{p}.mini_epochs", cv.get("mini_epochs"), int),
        )
    if cv.has("minibatch_size"):
        t.need(
            f"{p}.minibatch_size",
            "central_value_minibatch_size",
            as_number(f"{p}.minibatch_size", cv.get("minibatch_size"), int),
        )
    t.need(f"{p}.normalize_input", "central_value_normalize_input", truthy(cv.get("normalize_input", False)))
    cv_clip = truthy(cv.get("clip_value", True))
    t.need(f"{p}.clip_value", "central_value_clip_value", cv_clip)
    # rl_games' CentralValueTrain clips with its own e_clip (default 0.2) and schedules its rate
    # with its own lr_schedule (linear, else constant); surge's central value clips with
    # --ppo_clip_value and follows --lr_schedule: a file where they differ is refused
    cv_eclip = as_number(f"{p}.e_clip", cv.get("e_clip", 0.2))
    if cv_clip and t.out.values.get("ppo_clip_value") != cv_eclip:
        raise RlGamesKeyError(
            f"{p}.clip_value",
            f"True with e_clip {cv_eclip}: surge clips the central value with --ppo_clip_value "
            f"({t.out.values.get('ppo_clip_value')}, from the top-level e_clip and clip_value).",
            "use the same clipping in both blocks.",
        )
    cv_linear = cv.get("lr_schedule", None) == "linear"
    if cv_linear != (t.out.values.get("lr_schedule") == "linear_decay"):
        raise RlGamesKeyError(
            f"{p}.lr_schedule",
            f"{cv.data.get('lr_schedule')!r}: surge's central value follows the top-level schedule "
            f"(--lr_schedule={t.out.values.get('lr_schedule')}; constant under an adaptive one).",
            "give the central value the top-level schedule (linear or not in both).",
        )
    grad_norm = as_number(f"{p}.grad_norm", cv.get("grad_norm", 1.0))
    t.need(
        f"{p}.grad_norm",
        "central_value_max_grad_norm",
        grad_norm if truthy(cv.get("truncate_grads", False)) else 0.0,
    )


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


def _translate_top(t: Translator, params: Node) -> None:
    if params.has("seed"):
        t.set("seed", as_number("params.seed", params.get("seed"), int))
    if params.has("torch_threads"):
        params.get("torch_threads")
        t.note(
            "params.torch_threads",
            "surge sets threads per process with --num_torch_threads (docs/threads.md)",
        )
    if truthy(params.get("load_checkpoint", False)):
        raise RlGamesKeyError(
            "params.load_checkpoint",
            "True: surge resumes a run from its experiment folder, it does not start from an rl_games .pth.",
            "set load_checkpoint: False.",
        )
    if params.has("load_path"):
        params.get("load_path")
        t.note("params.load_path", "no effect with load_checkpoint False")


def _translate_player(t: Translator, player: Node) -> None:
    """rl_games' `player` block (`common/player.py`, `BasePlayer.__init__`) as `surge enjoy`'s flags."""
    if not player.data:
        if t.evaluation:  # rl_games' BasePlayer defaults: deterministic, no rendering
            t.set("eval_deterministic", True)
            t.set("no_render", True)
        return
    if not t.evaluation:
        for k in list(player.data):
            player.whole(k)
        t.note("params.config.player", "read by surge enjoy, not by training")
        return
    if player.has("deterministic") or player.has("determenistic"):
        key = "deterministic" if player.has("deterministic") else "determenistic"
        t.set("eval_deterministic", truthy(player.get(key)))
    else:
        t.set("eval_deterministic", True)  # rl_games' default ('determenistic', True)
    if player.has("games_num"):
        t.set("max_num_episodes", as_number("params.config.player.games_num", player.get("games_num"), int))
    # rl_games' BasePlayer: render_env = player.get('render', False)
    t.set("no_render", not truthy(player.get("render")) if player.has("render") else True)
    for k, why in (
        ("n_game_life", "surge's enjoy plays whole games (episodic life is off in evaluation)"),
        ("render_sleep", "surge renders at --fps"),
        ("print_stats", "surge's enjoy always prints episode returns"),
        ("device_name", "surge's --device picks the device"),
        ("games_to_track", "no effect in surge's enjoy"),
    ):
        if player.has(k):
            player.get(k)
            t.note(f"params.config.player.{k}", why)
