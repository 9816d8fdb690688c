"""Config-only checks of the actor-critic network flags (`surge.app.preflight.validate_cfg` runs
them before any process starts; checks that need the spaces run where the model is built, in
`ActorCritic.__init__`, also before any process starts)."""

from __future__ import annotations

from surge.cfg.config import Config
from surge.errors import ConfigError

#: ModelParams flags only `ActorCritic` reads: an off-policy algorithm lists them in its
#: `Algorithm.unused_params` (the run's log then reports them when they are set)
ACTOR_CRITIC_MODEL_PARAMS = (
    "actor_critic_share_weights",
    "mu_activation",
    "rnn_before_mlp",
    "rnn_layer_norm",
    "rnn_concat_input",
    "value_size",
)


def check_model_flags(cfg: Config) -> None:
    """Refuses network flags that cannot act: `value_size != 1` (multi-head values are not
    supported yet), `rnn_before_mlp` / `rnn_layer_norm` / `rnn_concat_input` without `use_rnn`, `rnn_before_mlp` or
    `d2rl` with a custom encoder (surge cannot reach its layers).

    Raises:
        ConfigError: naming the flag and the fix.
    """
    if int(cfg.value_size) != 1:
        raise ConfigError(
            "value_size",
            f"multi-head values (value_size={cfg.value_size}) need vector rewards from the env and "
            "returns over each head in the learners; surge does not support them yet.",
            "pass --value_size=1 (one value head).",
        )
    for name in ("rnn_before_mlp", "rnn_layer_norm", "rnn_concat_input"):
        if getattr(cfg, name) and not cfg.use_rnn:
            raise ConfigError(
                name,
                "acts on the RNN core, and --use_rnn=False builds none.",
                f"pass --use_rnn=True, or --{name}=False.",
            )
    for name in ("rnn_before_mlp", "d2rl"):
        if getattr(cfg, name) and cfg.encoder_custom:
            raise ConfigError(
                name,
                f"acts on surge's own MLP layers; --encoder_custom={cfg.encoder_custom} builds its own.",
                f"pass --{name}=False, or build the option into the custom encoder.",
            )
