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
from dataclasses import dataclass, field
from typing import Any

from surge.cfg.config import EvalParams, core_fields
from surge.cfg.rl_games_envs import RlGamesKeyError, env_from_rl_games
from surge.errors import ConfigError

#: value used for "no limit" where surge's flag needs a finite number (rl_games' clip_value False,
#: reward_shaper without min_val/max_val)
NO_LIMIT = 1e30

#: rl_games' Adam (`a2c_continuous.py` / `a2c_discrete.py`: `optim.Adam(..., eps=1e-08)`)
RL_GAMES_ADAM_EPS = 1e-8


def is_rl_games_yaml(data: Any) -> bool:
    """True for rl_games' nested schema: a top-level `params` mapping with its `algo`, `model`,
    `network` or `config` blocks (surge's own flat files have none of them)."""
    if not isinstance(data, dict) or not isinstance(data.get("params"), dict):
        return False
    return any(isinstance(data["params"].get(k), dict) for k in ("algo", "model", "network", "config"))


@dataclass
class Translation:
    """An rl_games file as surge flags.

    Attributes:
        values: flat `flag -> value` (surge's `--cfg` values; command-line flags still win).
        missing: see `translate`'s `collect_missing`.
        notes: one line per key that has no effect here or only approximately, "path: why".
        needs: (rl_games key path, surge flag) for every key that needs a flag of issue 21.
    """

    values: dict[str, Any] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    needs: list[tuple[str, str]] = field(default_factory=list)
    #: with `collect_missing`: (key path, `--flag=value`) of every key that waits for a flag of
    #: issue 21 this build lacks (without it, the first one is refused)
    missing: list[tuple[str, str]] = field(default_factory=list)


def surge_fields(evaluation: bool) -> dict[str, dataclasses.Field]:
    """The flags this surge build has (core fields, and enjoy's with `evaluation`), by name."""
    out = {f.name: f for f in core_fields()}
    if evaluation:
        out.update({f.name: f for f in dataclasses.fields(EvalParams)})
    return out


class _Node:
    """One mapping of the file at `path` (`params.config`), recording the keys read (`seen`)."""

    def __init__(self, data: Any, path: str, seen: set[str]):
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise RlGamesKeyError(path, f"must be a mapping, got {data!r}.", "")
        self.data, self.path, self.seen = data, path, seen

    def key(self, name: str) -> str:
        return f"{self.path}.{name}"

    def has(self, name: str) -> bool:
        return name in self.data

    def get(self, name: str, default: Any = None) -> Any:
        self.seen.add(self.key(name))
        return self.data.get(name, default)

    def node(self, name: str) -> _Node:
        self.seen.add(self.key(name))
        return _Node(self.data.get(name), self.key(name), self.seen)

    def whole(self, name: str) -> None:
        """Marks `name` and everything under it read."""
        self.seen.add(self.key(name) + "/*")
        self.seen.add(self.key(name))


def _leaves(data: Any, path: str) -> list[str]:
    """Every key path of a mapping, depth first (a mapping's own key included)."""
    out = []
    for k, v in data.items():
        p = f"{path}.{k}"
        out.append(p)
        if isinstance(v, dict):
            out += _leaves(v, p)
    return out


def _number(path: str, v: Any, kind: type = float) -> Any:
    """`v` as a float (PyYAML reads 1e-4 as a string) or an int.

    Raises:
        ConfigError: not a finite number.
    """
    try:
        x = float(v)
    except (TypeError, ValueError):
        raise RlGamesKeyError(path, f"{v!r} is not a number.", "") from None
    if not math.isfinite(x):
        raise RlGamesKeyError(path, f"{v!r} is not a finite number.", "")
    if kind is int:
        if not x.is_integer():
            raise RlGamesKeyError(path, f"{v!r} is not an integer.", "")
        return int(x)
    return x


def _truthy(v: Any) -> bool:
    """rl_games' `if value:` of a YAML scalar (`None`, 'None', False, 0 are off)."""
    return bool(v) and str(v).lower() not in ("none", "false", "0")


class _Translator:
    def __init__(
        self,
        evaluation: bool,
        fields: dict[str, dataclasses.Field] | None,
        separate_ok: bool | None,
        collect_missing: bool = False,
    ):
        self.collect_missing = collect_missing
        self.fields = surge_fields(evaluation) if fields is None else fields
        self.evaluation = evaluation
        self.separate_ok = separate_ok
        self.out = Translation()
        self.frameskip = 1
        self.batched = False

    # ---------------------------------------------------------------- output
    def set(self, flag: str, value: Any) -> None:
        self.out.values[flag] = value

    def note(self, path: str, why: str) -> None:
        self.out.notes.append(f"{path}: {why}")

    def supports(self, flag: str, value: Any = None) -> bool:
        f = self.fields.get(flag)
        if f is None:
            return False
        choices = f.metadata.get("choices")
        return value is None or choices is None or value in choices

    def need(self, path: str, flag: str, value: Any, neutral: Any = ..., why: str = "") -> None:
        """Sets `flag` (a flag another part of issue 21 adds) to `value`; where this surge lacks it
        (or its `value` among the flag's choices), a `value` equal to `neutral` (what surge does
        without the flag) sets nothing, and any other is refused naming the flag.

        Raises:
            ConfigError: `path` needs `--flag=value`, which this surge does not have yet.
        """
        self.out.needs.append((path, flag))
        if self.supports(flag, value):
            self.set(flag, value)
            return
        if neutral is not ... and value == neutral:
            return
        if self.collect_missing:
            self.out.missing.append((path, f"--{flag}={value!r}"))
            return
        raise RlGamesKeyError(
            path,
            f"surge does not support it yet: it maps to --{flag}={value!r}, which this surge "
            f"{'has not got' if flag not in self.fields else 'does not accept'}{why} (issue 21).",
            f"remove the key{'' if neutral is ... else f' or set it to {neutral!r}'}, or update surge.",
        )


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
        return _translate(data, path, _Translator(evaluation, fields, separate_ok, collect_missing))
    except RlGamesKeyError as e:
        raise RlGamesKeyError(e.field, f"{e.problem} (in {path})", e.fix) from None


def _translate(data: dict[str, Any], path: str, t: _Translator) -> Translation:
    seen: set[str] = set()
    for k in data:
        if k != "params":
            raise RlGamesKeyError(
                str(k), f"a top-level key of {path} that rl_games' runner does not read.", ""
            )
    params = _Node(data["params"], "params", seen)
    config = params.node("config")
    _translate_env(t, config)
    _translate_algo(t, params)
    net = _translate_network(t, params.node("network"))
    _translate_config(t, config, net)
    _translate_top(t, params)
    _translate_player(t, config.node("player"))
    for p in _leaves(data["params"], "params"):
        parts = p.split(".")
        if p in seen or any(".".join(parts[:i]) + "/*" in seen for i in range(1, len(parts))):
            continue
        raise RlGamesKeyError(
            p,
            f"an rl_games key surge does not map (in {path}).",
            "remove it (docs/rl_games.md lists the keys).",
        )
    return t.out


def _translate_env(t: _Translator, config: _Node) -> None:
    env_config = config.node("env_config")

    def ignore(key: str, why: str) -> None:
        if env_config.has(key) and env_config.key(key) not in env_config.seen:
            env_config.get(key)
            t.note(env_config.key(key), why)

    choice = env_from_rl_games(config.get("env_name"), env_config.data, env_config.get, ignore)
    t.set("env", choice.env)
    t.out.values.update(choice.flags)
    t.frameskip, t.batched = choice.frameskip, choice.batched
    for n in choice.notes:
        t.out.notes.append(n)
    ignore("seed", "rl_games passes it to the env; surge seeds envs from --seed (params.seed)")
    if not choice.reads_env_config:
        for key in list(env_config.data):
            if env_config.key(key) not in env_config.seen:
                ignore(
                    key,
                    f"rl_games' creator of {config.data.get('env_name')} takes no env_config, so it has no effect there either",
                )


def _translate_algo(t: _Translator, params: _Node) -> None:
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


@dataclass
class _Net:
    """What the network block decided that the config block needs."""

    rnn: bool = False
    continuous: bool = False
    image: bool = False
    rnn_units: int = 0
    activation: str = ""


def _activation(t: _Translator, path: str, name: Any) -> str:
    table = {
        "relu": "relu",
        "elu": "elu",
        "tanh": "tanh",
        "swish": "silu",
        "gelu": "gelu",
        "selu": "selu",
        "softplus": "softplus",
        "None": "none",
    }
    if name not in table:
        raise RlGamesKeyError(
            path, f"activation {name!r} has no surge equivalent.", f"use one of {sorted(table)}."
        )
    t.need(path, "nonlinearity", table[name])
    return table[name]


def _initializer(t: _Translator, node: _Node, what: str) -> None:
    """rl_games' `initializer` of every Linear (and Conv) weight, biases zeroed
    (`network_builder.py`, `A2CBuilder.Network.__init__`)."""
    name = node.get("name", "default")
    gain = node.get("gain", None)
    scale = node.get("scale", None)
    node.get("std")
    path = node.path
    if name == "default":
        t.set("policy_initialization", "torch_default")
        if scale is not None or gain is not None:
            t.note(
                path,
                "rl_games' default initializer ignores scale/gain: PyTorch's own init, as surge's torch_default",
            )
        t.note(
            path,
            "default: PyTorch's weights as surge's torch_default (rl_games zeroes the biases, surge keeps PyTorch's)",
        )
        return
    if name in ("orthogonal_initializer", "orthogonal"):
        g = _number(f"{path}.gain", gain if gain is not None else 1.0)
        t.set("policy_initialization", "orthogonal")
        t.set("policy_init_gain", g)
        t.set("action_head_init_gain", g)  # rl_games initialises the logits layer as every Linear
        return
    if name in ("glorot_uniform_initializer", "glorot_normal_initializer"):
        g = _number(f"{path}.gain", gain if gain is not None else 1.0)
        exact = "xavier_uniform" if name == "glorot_uniform_initializer" else "xavier_normal"
        kind = exact if t.supports("policy_initialization", exact) else "xavier_uniform"
        t.set("policy_initialization", kind)
        t.set("policy_init_gain", g)
        t.set("action_head_init_gain", g)
        if kind != exact:
            t.note(
                path,
                "glorot_normal as surge's xavier_uniform: the same variance 2/(fan_in+fan_out), uniform instead of normal",
            )
        return
    if name == "variance_scaling_initializer":
        # rl_games' torch_ext.variance_scaling_initializer: truncated normal, std sqrt(scale / fan_in)
        s = _number(f"{path}.scale", scale if scale is not None else 2.0)
        has_it = t.supports("policy_initialization", "variance_scaling")
        t.set("policy_initialization", "variance_scaling" if has_it else "orthogonal")
        t.set("policy_init_gain", math.sqrt(s))
        t.set("action_head_init_gain", math.sqrt(s))
        if not has_it:
            t.note(
                path,
                f"variance_scaling (truncated normal, std sqrt({s}/fan_in)) as surge's orthogonal init with "
                f"gain sqrt({s}): the same scale, orthogonal rows instead of independent draws",
            )
        return
    if name == "kaiming_normal" and gain is None and scale is None:
        t.need(path, "policy_initialization", "kaiming_normal")
        t.set("policy_init_gain", 1.0)
        t.set("action_head_init_gain", 1.0)
        return
    raise RlGamesKeyError(f"{path}.name", f"{what} initializer {name!r} has no surge equivalent.", "")


#: rl_games' cnn convs (filters, kernel_size, strides, padding 0) -> surge's conv presets
CONV_PRESETS: dict[tuple[tuple[Any, Any, Any], ...], str] = {
    ((32, 8, 4), (64, 4, 2), (64, 3, 1)): "convnet_deepmind",
    ((32, 8, 4), (64, 4, 2), (128, 3, 2)): "convnet_simple",
    ((16, 8, 4), (32, 4, 2)): "convnet_impala",
}


def _translate_network(t: _Translator, net: _Node) -> _Net:
    out = _Net()
    name = net.get("name")
    if name != "actor_critic":
        raise RlGamesKeyError(
            "params.network.name",
            f"{name!r}: surge maps rl_games' actor_critic network (A2CBuilder) only.",
            "",
        )
    separate = _truthy(net.get("separate", False))
    t.need("params.network.separate", "actor_critic_share_weights", not separate, True)
    if separate and not (t.separate_ok if t.separate_ok is not None else _separate_supported()):
        if t.collect_missing:
            t.out.missing.append(("params.network.separate", "--actor_critic_share_weights=False"))
        else:
            raise RlGamesKeyError(
                "params.network.separate",
                "surge does not support it yet: separate actor and critic networks "
                "(--actor_critic_share_weights=False) are refused by this surge's model (issue 21).",
                "set separate: False, or update surge.",
            )
    value_shape = net.get("value_shape", 1)
    t.need(
        "params.network.value_shape", "value_size", _number("params.network.value_shape", value_shape, int), 1
    )
    out.continuous = _translate_space(t, net.node("space"))

    mlp = net.node("mlp")
    units = mlp.get("units", [])
    if not isinstance(units, list) or not all(isinstance(u, int) for u in units):
        raise RlGamesKeyError("params.network.mlp.units", f"{units!r} is not a list of layer sizes.", "")
    out.activation = _activation(t, "params.network.mlp.activation", mlp.get("activation", "relu"))
    _initializer(t, mlp.node("initializer"), "mlp")
    reg = mlp.node("regularizer").get("name", "None")
    if _truthy(reg):
        raise RlGamesKeyError(
            "params.network.mlp.regularizer.name", f"{reg!r}: surge has no weight regularizer.", ""
        )
    t.need("params.network.mlp.d2rl", "d2rl", _truthy(mlp.get("d2rl", False)), False)
    for k in ("normalization", "norm_only_first_layer"):
        if mlp.has(k):
            raise RlGamesKeyError(mlp.key(k), "surge's MLP has no layer or batch normalisation.", "")

    if net.has("cnn"):
        out.image = True
        _translate_cnn(t, net.node("cnn"), units, out.activation)
    else:
        t.set("encoder_type", "mlp")
        t.set("encoder_subtype", "mlp")
        t.set("encoder_mlp_layers", list(units))

    rnn = net.node("rnn") if net.has("rnn") else None
    t.set("use_rnn", rnn is not None)
    if rnn is not None:
        out.rnn = True
        kind = rnn.get("name")
        if kind not in ("gru", "lstm"):
            raise RlGamesKeyError("params.network.rnn.name", f"{kind!r}: surge's cores are gru and lstm.", "")
        t.set("rnn_type", kind)
        out.rnn_units = _number("params.network.rnn.units", rnn.get("units"), int)
        t.set("hidden_size", out.rnn_units)
        t.set("rnn_num_layers", _number("params.network.rnn.layers", rnn.get("layers", 1), int))
        t.need(
            "params.network.rnn.before_mlp", "rnn_before_mlp", _truthy(rnn.get("before_mlp", False)), False
        )
        t.need(
            "params.network.rnn.layer_norm", "rnn_layer_norm", _truthy(rnn.get("layer_norm", False)), False
        )
        if _truthy(rnn.get("concat_input", False)):
            raise RlGamesKeyError(
                "params.network.rnn.concat_input", "surge's core does not concatenate its input.", ""
            )
        if out.image and units and units[-1] != out.rnn_units:
            raise RlGamesKeyError(
                "params.network.rnn.units",
                f"surge's conv encoder ends in hidden_size units, the RNN's size: mlp units {units} "
                f"and rnn units {out.rnn_units} differ.",
                "",
            )
    return out


def _separate_supported() -> bool:
    """Whether this surge builds separate actor and critic networks: a tiny model is made with
    `actor_critic_share_weights=False` (a few milliseconds), so the mapping works as soon as the
    model accepts it."""
    import gymnasium as gym

    from surge.cfg.config import Config
    from surge.models import make_actor_critic

    cfg = Config(actor_critic_share_weights=False, use_rnn=False, encoder_type="mlp", encoder_subtype="mlp")
    cfg.encoder_mlp_layers = [4]
    try:
        make_actor_critic(cfg, gym.spaces.Box(-1.0, 1.0, (3,)), gym.spaces.Discrete(2))
    except ConfigError:
        return False
    return True


def _translate_cnn(t: _Translator, cnn: _Node, units: list[int], activation: str) -> None:
    kind = cnn.get("type", "conv2d")
    if kind != "conv2d":
        raise RlGamesKeyError("params.network.cnn.type", f"{kind!r}: surge's conv encoders are conv2d.", "")
    convs = cnn.get("convs")
    if not isinstance(convs, list):
        raise RlGamesKeyError("params.network.cnn.convs", "a list of conv layers is expected.", "")
    layers: list[tuple[Any, Any, Any]] = []
    for i, c in enumerate(convs):
        if (
            not isinstance(c, dict)
            or c.get("padding", 0) != 0
            or set(c) - {"filters", "kernel_size", "strides", "padding"}
        ):
            raise RlGamesKeyError(
                f"params.network.cnn.convs[{i}]", f"{c!r}: surge's conv presets have no padding.", ""
            )
        layers.append((c.get("filters"), c.get("kernel_size"), c.get("strides")))
    preset = CONV_PRESETS.get(tuple(layers))
    if preset is None:
        raise RlGamesKeyError(
            "params.network.cnn.convs",
            f"{layers} (filters, kernel, stride) is none of surge's conv encoders: "
            + ", ".join(f"{v} {list(k)}" for k, v in CONV_PRESETS.items()),
            "",
        )
    t.set("encoder_type", "conv")
    t.set("encoder_subtype", preset)
    if cnn.get("activation", activation) != {"silu": "swish"}.get(activation, activation):
        raise RlGamesKeyError(
            "params.network.cnn.activation",
            "surge's encoder has one activation: the mlp's and the cnn's differ.",
            "",
        )
    if len(set(units)) > 1:
        raise RlGamesKeyError(
            "params.network.mlp.units",
            f"{units}: surge's layers after the convs all have hidden_size units.",
            "",
        )
    t.set("encoder_extra_fc_layers", len(units))
    if units:
        t.set("hidden_size", units[0])
    # the frames arrive as channels-first uint8; rl_games' permute_input only reorders HWC input
    permute = cnn.get("permute_input", True)
    t.note(
        "params.network.cnn.permute_input",
        f"{permute}: surge's image envs give channels-first frames, no permute needed",
    )
    init = cnn.node("initializer")
    mlp_policy = t.out.values.get("policy_initialization")
    if init.get("name", "default") == "default" and mlp_policy != "torch_default":
        t.set("encoder_initialization", "torch_default")
        t.note(
            init.path,
            "default: the conv encoder (its fc layers included) keeps PyTorch's init, the heads the mlp's initializer",
        )
    else:
        init.get("gain")
        init.get("scale")
        t.note(init.path, f"surge's conv layers take the mlp initializer ({mlp_policy})")
    reg = cnn.node("regularizer").get("name", "None")
    if _truthy(reg):
        raise RlGamesKeyError(
            "params.network.cnn.regularizer.name", f"{reg!r}: surge has no weight regularizer.", ""
        )
    t.set("obs_scale", 255.0)  # rl_games divides uint8 frames by 255 (a2c_common `_preproc_obs`)
    t.set("obs_subtract_mean", 0.0)


def _translate_space(t: _Translator, space: _Node) -> bool:
    """The action head; True for a continuous (Gaussian) one."""
    if space.has("discrete") or space.has("multi_discrete"):
        space.get("discrete")
        space.get("multi_discrete")
        return False
    if not space.has("continuous"):
        raise RlGamesKeyError("params.network.space", "expected discrete, multi_discrete or continuous.", "")
    c = space.node("continuous")
    mu_act = c.get("mu_activation", "None")
    t.need(
        "params.network.space.continuous.mu_activation",
        "mu_activation",
        "none" if not _truthy(mu_act) else str(mu_act).lower(),
        "none",
    )
    sigma_act = c.get("sigma_activation", "None")
    if _truthy(sigma_act):
        raise RlGamesKeyError(
            "params.network.space.continuous.sigma_activation",
            f"{sigma_act!r}: surge's log-std has no activation.",
            "",
        )
    fixed = _truthy(c.get("fixed_sigma", True))
    t.set("adaptive_stddev", not fixed)
    sigma = c.node("sigma_init")
    if sigma.get("name", "const_initializer") != "const_initializer":
        raise RlGamesKeyError(
            "params.network.space.continuous.sigma_init.name", "surge starts the log-std at a constant.", ""
        )
    val = sigma.get("val", None)
    value = sigma.get("value", None)
    log_std = _number(
        "params.network.space.continuous.sigma_init.val", val if val is not None else (value or 0.0)
    )
    t.set("initial_stddev", math.exp(log_std))
    if not fixed:
        t.note(
            sigma.path,
            "fixed_sigma False: rl_games' sigma layer starts with constant weights, surge's adaptive std "
            "head starts from its own init and initial_stddev",
        )
    mu = c.node("mu_init")
    mu.get("name")
    mu.get("scale")
    mu.get("gain")
    mu.get("std")
    t.note(mu.path, "the mean layer is initialised as surge's action head (action_head_init_gain)")
    return True


def _translate_config(t: _Translator, c: _Node, net: _Net) -> None:
    frameskip, batched = t.frameskip, t.batched
    full, short = c.get("full_experiment_name"), c.get("name")
    name = full or short
    if name:
        t.set("experiment", str(name))
    if c.has("train_dir"):
        t.set("train_dir", str(c.get("train_dir")))

    # ---- batch geometry (a2c_common.py: batch_size = horizon_length * num_actors * num_agents)
    actors = _number("params.config.num_actors", c.get("num_actors"), int)
    horizon = _number("params.config.horizon_length", c.get("horizon_length"), int)
    if c.has("minibatch_size"):
        minibatch = _number("params.config.minibatch_size", c.get("minibatch_size"), int)
        if c.has("minibatch_size_per_env"):
            c.get("minibatch_size_per_env")
            t.note("params.config.minibatch_size_per_env", "rl_games uses minibatch_size when both are given")
    elif c.has("minibatch_size_per_env"):
        minibatch = actors * _number(
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
    t.set("ppo_epochs", _number("params.config.mini_epochs", c.get("mini_epochs"), int))
    t.out.values.update(worker_layout(actors, batched))
    steps_per_epoch = horizon * actors * frameskip  # env frames of one rl_games epoch

    # ---- the loss (a2c_*.py calc_losses; common_losses.py)
    t.set("gamma", _number("params.config.gamma", c.get("gamma")))
    t.set("gae_lambda", _number("params.config.tau", c.get("tau")))
    e_clip = _number("params.config.e_clip", c.get("e_clip"))
    t.set("ppo_clip_ratio", e_clip)
    t.note(
        "params.config.e_clip",
        f"surge clips the ratio to [1/(1+e), 1+e] (Sample Factory), rl_games to [1-e, 1+e]: the lower bound is "
        f"{1 / (1 + e_clip):.3f} instead of {1 - e_clip:.3f}",
    )
    if _truthy(c.get("ppo", True)) is False:
        raise RlGamesKeyError(
            "params.config.ppo", "False (no ratio clipping): use surge's --algo=A2C instead.", ""
        )
    # rl_games clips the value change by e_clip when clip_value is True (common_losses.critic_loss)
    t.set("ppo_clip_value", e_clip if _truthy(c.get("clip_value", False)) else NO_LIMIT)
    t.set("value_loss_coeff", 0.5 * _number("params.config.critic_coef", c.get("critic_coef")))
    t.set("exploration_loss_coeff", _number("params.config.entropy_coef", c.get("entropy_coef")))
    if _truthy(c.get("use_smooth_clamp", False)):
        t.note(
            "params.config.use_smooth_clamp",
            "True: rl_games replaces the ratio's hard clip by a sigmoid (common_losses.smooth_clamp); surge keeps the hard clip",
        )
    t.set("normalize_advantage", _truthy(c.get("normalize_advantage", True)))
    if _truthy(c.get("normalize_advantage", True)):
        t.note(
            "params.config.normalize_advantage",
            "surge normalises advantages per minibatch, rl_games once over the whole batch (a2c_common prepare_dataset)",
        )
    if _truthy(c.get("normalize_rms_advantage", False)):
        raise RlGamesKeyError(
            "params.config.normalize_rms_advantage", "surge has no running advantage normaliser.", ""
        )
    bounds = _number("params.config.bounds_loss_coef", c.get("bounds_loss_coef", 0.0) or 0.0)
    t.need("params.config.bounds_loss_coef", "bounds_loss_coef", bounds, 0.0)
    if c.has("bound_loss_type"):
        kind = c.get("bound_loss_type")
        if bounds:
            t.need("params.config.bound_loss_type", "bound_loss_type", kind)
        else:
            t.note("params.config.bound_loss_type", "no effect with bounds_loss_coef 0")
    wd = _number("params.config.weight_decay", c.get("weight_decay", 0.0) or 0.0)
    if wd:
        raise RlGamesKeyError("params.config.weight_decay", f"{wd}: surge's Adam has no weight decay.", "")

    # ---- gradients, learning rate
    lr = _number("params.config.learning_rate", c.get("learning_rate"))
    t.set("learning_rate", lr)
    truncate = _truthy(c.get("truncate_grads", False))
    grad_norm = _number("params.config.grad_norm", c.get("grad_norm", 0.0))
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
            "kl_adaptive_minibatch" if kind == "legacy" else "kl_adaptive_epoch",
        )
        t.need(
            "params.config.kl_threshold",
            "lr_schedule_kl_threshold",
            _number("params.config.kl_threshold", kl),
        )
    else:
        if schedule == "linear":
            has_budget = (
                _number("params.config.max_epochs", c.data.get("max_epochs", -1), int) > 0
                or _number("params.config.max_frames", c.data.get("max_frames", -1), int) > 0
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
    if _truthy(c.get("schedule_entropy", False)):
        raise RlGamesKeyError(
            "params.config.schedule_entropy", "surge does not decay the entropy coefficient.", ""
        )

    # ---- rewards (tr_helpers.DefaultRewardsShaper: clip((r + shift) * scale, min, max), log)
    shaper = c.node("reward_shaper")
    t.set("reward_scale", _number("params.config.reward_shaper.scale_value", shaper.get("scale_value", 1.0)))
    shift = _number("params.config.reward_shaper.shift_value", shaper.get("shift_value", 0.0))
    t.need("params.config.reward_shaper.shift_value", "reward_shift", shift, 0.0)
    lo, hi = shaper.get("min_val"), shaper.get("max_val")
    if lo is None and hi is None:
        t.set("reward_clip", NO_LIMIT)
    else:
        lo_f = _number("params.config.reward_shaper.min_val", lo) if lo is not None else -math.inf
        hi_f = _number("params.config.reward_shaper.max_val", hi) if hi is not None else math.inf
        if lo_f != -hi_f:
            raise RlGamesKeyError(
                "params.config.reward_shaper.min_val"
                if lo is not None
                else "params.config.reward_shaper.max_val",
                f"[{lo_f}, {hi_f}]: surge clips rewards to a symmetric [-reward_clip, reward_clip].",
                "",
            )
        t.set("reward_clip", hi_f)
    if _truthy(shaper.get("log_val", False)):
        raise RlGamesKeyError(
            "params.config.reward_shaper.log_val", "surge does not take the log of rewards.", ""
        )

    # ---- normalisation, bootstrap, recurrence
    t.set("normalize_input", _truthy(c.get("normalize_input", False)))
    t.set("normalize_returns", _truthy(c.get("normalize_value", False)))
    t.need("params.config.value_bootstrap", "value_bootstrap", _truthy(c.get("value_bootstrap", True)), True)
    t.need(
        "params.config.zero_rnn_on_done", "zero_rnn_on_done", _truthy(c.get("zero_rnn_on_done", True)), True
    )
    # rl_games' clip_actions (default True, a2c_common ContinuousA2CBase.preprocess_actions): the
    # action is clamped to [-1, 1] and rescaled to the space's [low, high]; False: sent unchanged
    clip = _truthy(c.get("clip_actions", True))
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
    seq = _number(f"params.config.{seq_key}", c.get(seq_key, 4), int)
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
    epochs = _number("params.config.max_epochs", c.get("max_epochs", -1), int)
    if epochs > 0:
        budgets.append(epochs * steps_per_epoch)
    frames = _number("params.config.max_frames", c.get("max_frames", -1), int)
    if frames > 0:
        budgets.append(frames * frameskip)
    if budgets:
        t.set("train_for_env_steps", min(budgets))
    if c.has("score_to_win"):
        t.need(
            "params.config.score_to_win",
            "score_to_win",
            _number("params.config.score_to_win", c.get("score_to_win")),
        )
    if c.has("games_to_track"):
        t.set("stats_avg", _number("params.config.games_to_track", c.get("games_to_track"), int))
    else:
        t.set("stats_avg", 100)  # rl_games' games_to_track default
    if c.has("save_best_after"):
        t.set(
            "save_best_after",
            _number("params.config.save_best_after", c.get("save_best_after"), int) * steps_per_epoch,
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
        ("mixed_precision", "surge has no mixed precision flag yet (issue 21)"),
        ("ignore_dead_batches", "surge has no such option"),
        ("freeze_critic", "surge has no such option"),
        ("population_based_training", "surge's PBT takes its own flags (--with_pbt, docs/population.md)"),
        ("use_action_masks", "surge reads masks from an env's action_mask observation (docs/policies.md)"),
    ):
        if _truthy(c.get(k, False)):
            if k == "mixed_precision" and t.supports("mixed_precision", "bf16"):
                t.set("mixed_precision", "bf16")
                continue
            if k == "use_action_masks":
                t.note(f"params.config.{k}", fix)
                continue
            raise RlGamesKeyError(f"params.config.{k}", f"True is not supported: {fix}.", "")
    epochs_reset = _number("params.config.epochs_between_resets", c.get("epochs_between_resets", 0), int)
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


def _translate_central_value(t: _Translator, cv: _Node, net: _Net) -> None:
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
    if _truthy(mlp.node("regularizer").get("name", "None")):
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
            if _truthy(rnn.get(k, False)):
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
            _number(f"{p}.learning_rate", cv.get("learning_rate")),
        )
    if cv.has("mini_epochs"):
        t.need(
            f"{p}.mini_epochs",
            "central_value_mini_epochs",
            _number(f"{p}.mini_epochs", cv.get("mini_epochs"), int),
        )
    if cv.has("minibatch_size"):
        t.need(
            f"{p}.minibatch_size",
            "central_value_minibatch_size",
            _number(f"{p}.minibatch_size", cv.get("minibatch_size"), int),
        )
    t.need(f"{p}.normalize_input", "central_value_normalize_input", _truthy(cv.get("normalize_input", False)))
    t.need(f"{p}.clip_value", "central_value_clip_value", _truthy(cv.get("clip_value", True)))
    grad_norm = _number(f"{p}.grad_norm", cv.get("grad_norm", 1.0))
    t.need(
        f"{p}.grad_norm",
        "central_value_max_grad_norm",
        grad_norm if _truthy(cv.get("truncate_grads", False)) else 0.0,
    )


def _translate_self_play(t: _Translator, sp: _Node) -> None:
    """rl_games' `self_play_config` (`common/a2c_common.py`, `SelfPlayManager`) as surge's self-play flags."""
    t.set("self_play", True)
    for key, flag, kind in (
        ("update_score", "self_play_update_score", float),
        ("games_to_check", "self_play_games_to_check", int),
        ("env_update_num", "self_play_env_update_num", int),
    ):
        if sp.has(key):
            t.set(flag, _number(f"{sp.path}.{key}", sp.get(key), kind))
    if sp.has("check_scores"):
        t.set("self_play_check_scores", _truthy(sp.get("check_scores")))


def _translate_top(t: _Translator, params: _Node) -> None:
    if params.has("seed"):
        t.set("seed", _number("params.seed", params.get("seed"), int))
    if params.has("torch_threads"):
        params.get("torch_threads")
        t.note(
            "params.torch_threads",
            "surge sets threads per process with --num_torch_threads (docs/threads.md)",
        )
    if _truthy(params.get("load_checkpoint", False)):
        raise RlGamesKeyError(
            "params.load_checkpoint",
            "True: surge resumes a run from its experiment folder, it does not start from an rl_games .pth.",
            "set load_checkpoint: False.",
        )
    if params.has("load_path"):
        params.get("load_path")
        t.note("params.load_path", "no effect with load_checkpoint False")


def _translate_player(t: _Translator, player: _Node) -> None:
    """rl_games' `player` block (`common/player.py`, `BasePlayer.__init__`) as `surge enjoy`'s flags."""
    if not player.data:
        return
    if not t.evaluation:
        for k in list(player.data):
            player.whole(k)
        t.note("params.config.player", "read by surge enjoy, not by training")
        return
    if player.has("deterministic") or player.has("determenistic"):
        key = "deterministic" if player.has("deterministic") else "determenistic"
        t.set("eval_deterministic", _truthy(player.get(key)))
    else:
        t.set("eval_deterministic", True)  # rl_games' default ('determenistic', True)
    if player.has("games_num"):
        t.set("max_num_episodes", _number("params.config.player.games_num", player.get("games_num"), int))
    if player.has("render"):
        t.set("no_render", not _truthy(player.get("render")))
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
