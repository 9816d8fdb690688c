"""rl_games' `params.network` block (`algos_torch/network_builder.py`, `A2CBuilder`) as surge's model
flags: the MLP, the conv encoder (surge's presets only), the RNN core, the action head and the
initializers (`surge.app.rl_games.translation` translates the rest of the file)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from surge.app.rl_games.envs import RlGamesKeyError
from surge.app.rl_games.reader import Node, Translator, as_number, truthy
from surge.errors import ConfigError


@dataclass
class NetInfo:
    """What the network block decided that the config block needs."""

    rnn: bool = False
    continuous: bool = False
    image: bool = False
    rnn_units: int = 0
    activation: str = ""


def _activation(t: Translator, path: str, name: Any) -> str:
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


def _initializer(t: Translator, node: Node, what: str) -> None:
    """rl_games' `initializer` of every Linear (and Conv) weight, biases zeroed
    (`network_builder.py`, `A2CBuilder.Network.__init__`)."""
    name = node.get("name", "default")
    gain = node.get("gain", None)
    scale = node.get("scale", None)
    node.get("std")
    path = node.path
    if name == "default":
        t.set("policy_initialization", "torch_default")
        ignored = (
            " (rl_games' default ignores its scale/gain too)" if scale is not None or gain is not None else ""
        )
        t.note(
            path,
            f"default: PyTorch's weights and zero biases, as surge's torch_default{ignored}",
        )
        return
    if name in ("orthogonal_initializer", "orthogonal"):
        g = as_number(f"{path}.gain", gain if gain is not None else 1.0)
        t.set("policy_initialization", "orthogonal")
        t.set("policy_init_gain", g)
        t.set("action_head_init_gain", g)  # rl_games initialises the logits layer as every Linear
        return
    if name in ("glorot_uniform_initializer", "glorot_normal_initializer"):
        g = as_number(f"{path}.gain", gain if gain is not None else 1.0)
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
        s = as_number(f"{path}.scale", scale if scale is not None else 2.0)
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


def translate_network(t: Translator, net: Node) -> NetInfo:
    out = NetInfo()
    name = net.get("name")
    if name != "actor_critic":
        raise RlGamesKeyError(
            "params.network.name",
            f"{name!r}: surge maps rl_games' actor_critic network (A2CBuilder) only.",
            "",
        )
    separate = truthy(net.get("separate", False))
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
        "params.network.value_shape",
        "value_size",
        as_number("params.network.value_shape", value_shape, int),
        1,
    )
    out.continuous = _translate_space(t, net.node("space"))

    mlp = net.node("mlp")
    units = mlp.get("units", [])
    if not isinstance(units, list) or not all(isinstance(u, int) for u in units):
        raise RlGamesKeyError("params.network.mlp.units", f"{units!r} is not a list of layer sizes.", "")
    out.activation = _activation(t, "params.network.mlp.activation", mlp.get("activation", "relu"))
    _initializer(t, mlp.node("initializer"), "mlp")
    reg = mlp.node("regularizer").get("name", "None")
    if truthy(reg):
        raise RlGamesKeyError(
            "params.network.mlp.regularizer.name", f"{reg!r}: surge has no weight regularizer.", ""
        )
    t.need("params.network.mlp.d2rl", "d2rl", truthy(mlp.get("d2rl", False)), False)
    # rl_games 1.6.5 builds no normalisation into this MLP: A2CBuilder reads `normalization` from
    # the network block, and `_build_mlp` passes `norm_func_name=None` to its sequential MLP (only
    # d2rl's D2RLNet gets it); `norm_only_first_layer` acts only with a normalisation
    d2rl = truthy(mlp.data.get("d2rl", False))
    for node, k in ((mlp, "normalization"), (mlp, "norm_only_first_layer"), (net, "normalization")):
        if not node.has(k):
            continue
        value = node.get(k)
        if k == "normalization" and node is net and d2rl and truthy(value):
            raise RlGamesKeyError(
                node.key(k),
                f"{value!r}: rl_games normalises d2rl's layers; surge's d2rl MLP has no norm.",
                "",
            )
        where = (
            "rl_games reads normalization from params.network"
            if node is mlp and k == "normalization"
            else ("rl_games 1.6.5's _build_mlp passes no normalisation to its MLP")
        )
        t.note(node.key(k), f"no effect: {where}")

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
        out.rnn_units = as_number("params.network.rnn.units", rnn.get("units"), int)
        t.set("hidden_size", out.rnn_units)
        t.set("rnn_num_layers", as_number("params.network.rnn.layers", rnn.get("layers", 1), int))
        t.need("params.network.rnn.before_mlp", "rnn_before_mlp", truthy(rnn.get("before_mlp", False)), False)
        t.need("params.network.rnn.layer_norm", "rnn_layer_norm", truthy(rnn.get("layer_norm", False)), False)
        t.need(
            "params.network.rnn.concat_input",
            "rnn_concat_input",
            truthy(rnn.get("concat_input", False)),
            False,
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

    # the model's modules (torch) load only when the probe runs
    from surge.cfg.config import Config
    from surge.models import make_actor_critic

    cfg = Config(actor_critic_share_weights=False, use_rnn=False, encoder_type="mlp", encoder_subtype="mlp")
    cfg.encoder_mlp_layers = [4]
    try:
        make_actor_critic(cfg, gym.spaces.Box(-1.0, 1.0, (3,)), gym.spaces.Discrete(2))
    except ConfigError:
        return False
    return True


def _translate_cnn(t: Translator, cnn: Node, units: list[int], activation: str) -> None:
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
    if truthy(reg):
        raise RlGamesKeyError(
            "params.network.cnn.regularizer.name", f"{reg!r}: surge has no weight regularizer.", ""
        )
    t.set("obs_scale", 255.0)  # rl_games divides uint8 frames by 255 (a2c_common `_preproc_obs`)
    t.set("obs_subtract_mean", 0.0)


def _translate_space(t: Translator, space: Node) -> bool:
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
        "none" if not truthy(mu_act) else {"swish": "silu"}.get(str(mu_act).lower(), str(mu_act).lower()),
        "none",
    )
    sigma_act = c.get("sigma_activation", "None")
    if truthy(sigma_act):
        raise RlGamesKeyError(
            "params.network.space.continuous.sigma_activation",
            f"{sigma_act!r}: surge's log-std has no activation.",
            "",
        )
    fixed = truthy(c.get("fixed_sigma", True))
    t.set("adaptive_stddev", not fixed)
    sigma = c.node("sigma_init")
    if sigma.get("name", "const_initializer") != "const_initializer":
        raise RlGamesKeyError(
            "params.network.space.continuous.sigma_init.name", "surge starts the log-std at a constant.", ""
        )
    val = sigma.get("val", None)
    value = sigma.get("value", None)
    log_std = as_number(
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
