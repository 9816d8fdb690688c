"""rl_games' `central_value_config` block (`algos_torch/central_value.py`, `CentralValueTrain`) as
surge's `--central_value*` flags; what surge's central value shares with the actor (activation,
initializer, RNN, clipping, schedule) must agree with the top-level keys or is refused.
"""

from __future__ import annotations

from surge.app.rl_games.envs import RlGamesKeyError
from surge.app.rl_games.network import NetInfo
from surge.app.rl_games.reader import Node, Translator, as_number, truthy


def translate_central_value(t: Translator, cv: Node, net: NetInfo) -> None:
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
