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

The translation is split by block: `rl_games_envs` (the env), `rl_games_network` (`params.network`),
`rl_games_ppo` (`params.config`), `rl_games_central_value` (its `central_value_config`),
`rl_games_workers` (the worker layout), `rl_games_reader` (the file's nodes, the translator).

A key whose surge flag does not exist in this build (another part of issue 21 adds it) is refused
naming that flag; the mapping looks the flag up in `Config` at translation time, so it starts to
work when the flag lands.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from surge.app.rl_games.envs import RlGamesKeyError, env_from_rl_games
from surge.app.rl_games.network import translate_network
from surge.app.rl_games.ppo import translate_config
from surge.app.rl_games.reader import (
    NO_LIMIT,
    Node,
    Translation,
    Translator,
    as_number,
    leaves,
    surge_fields,
    truthy,
)
from surge.app.rl_games.workers import keep_num_actors, worker_layout

__all__ = [
    "NO_LIMIT",
    "Translation",
    "is_rl_games_yaml",
    "keep_num_actors",
    "surge_fields",
    "translate",
    "worker_layout",
]

#: the model names rl_games 1.6.5's ModelBuilder registers (`algos_torch/model_builder.py`)
RL_GAMES_MODELS = (
    "discrete_a2c",
    "multi_discrete_a2c",
    "continuous_a2c",
    "continuous_a2c_logstd",
    "soft_actor_critic",
    "central_value",
    "continuous_a2c_tanh",
)

#: rl_games' Adam (`a2c_continuous.py` / `a2c_discrete.py`: `optim.Adam(..., eps=1e-08)`)
RL_GAMES_ADAM_EPS = 1e-8


def is_rl_games_yaml(data: Any) -> bool:
    """True for rl_games' nested schema: a top-level `params` mapping with its `algo`, `model`,
    `network` or `config` blocks (surge's own flat files have none of them)."""
    if not isinstance(data, dict) or not isinstance(data.get("params"), dict):
        return False
    return any(isinstance(data["params"].get(k), dict) for k in ("algo", "model", "network", "config"))


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
    translate_config(t, config, net)
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
    if model not in RL_GAMES_MODELS:
        raise RlGamesKeyError(
            "params.model.name",
            f"{model!r} is not a model rl_games 1.6.5 registers (algos_torch/model_builder.py: "
            f"{', '.join(RL_GAMES_MODELS)}), so rl_games itself cannot run this file.",
            "",
        )
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
    # rl_games' own loop: one process collects, then trains. Synchronous PPO gains nothing from
    # collecting in other processes while the learner waits, and pays each step's round trip
    # (ppo_cartpole.yaml: 1.18x rl_games serial, 0.68x async, docs/benchmarks.md "Peers");
    # --serial_mode=False on the command line still takes the multi-process placement.
    t.set("serial_mode", True)
    t.note(
        "params.algo",
        "runs in the serial placement, one process collecting then training as rl_games does "
        "(--serial_mode=False: rollout and inference processes of their own)",
    )
    t.set("kl_loss_coeff", 0.0)
    t.set("exploration_loss", "entropy")
    t.set("adam_eps", RL_GAMES_ADAM_EPS)
    t.set("adam_beta1", 0.9)
    t.set("adam_beta2", 0.999)


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
