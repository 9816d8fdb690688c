"""surge's network options against rl_games 1.6.5's own network (`algos_torch/network_builder.py`,
`A2CBuilder.Network`) given the same weights: the same option set must compute the same outputs."""

import re

import gymnasium as gym
import pytest
import torch
from rl_games.algos_torch.network_builder import A2CBuilder

from surge.cfg.config import Config
from surge.models.actor_critic import ActorCritic


def _rl_games_params(separate, rnn, d2rl, activation, space):
    params = {
        "separate": separate,
        "mlp": {
            "units": [16, 12],
            "activation": activation,
            "initializer": {"name": "default"},
            "d2rl": d2rl,
        },
        "space": space,
    }
    if rnn:
        params["rnn"] = {"name": "gru", "units": 8, "layers": 1, "before_mlp": True, "layer_norm": True}
    return params


CONTINUOUS = {
    "continuous": {
        "mu_activation": "tanh",
        "sigma_activation": "None",
        "mu_init": {"name": "default"},
        "sigma_init": {"name": "const_initializer", "val": 0},
        "fixed_sigma": True,
    }
}
DISCRETE = {"discrete": {}}

#: rl_games' parameter names -> surge's, for each case (the RNN runs before the MLP there)
RNN_NAMES = [
    (r"^actor_mlp\.", "post_core.1."),
    (r"^critic_mlp\.", "critic_post_core.1."),
    (r"^a_rnn\.rnn\.", "core.rnn."),
    (r"^c_rnn\.rnn\.", "critic_core.rnn."),
    (r"^a_layer_norm\.", "post_core.0."),
    (r"^c_layer_norm\.", "critic_post_core.0."),
]
FF_NAMES = [(r"^actor_mlp\.", "encoder.net.")]
HEADS = [
    (r"^mu\.", "policy_head."),
    (r"^logits\.", "policy_head."),
    (r"^value\.", "value_head."),
    (r"^sigma$", "log_std"),
]


def _copy_into_surge(ref, ours, names):
    state = {}
    for k, v in ref.state_dict().items():
        for pattern, repl in names + HEADS:
            k = re.sub(pattern, repl, k)
        state[k] = v
    ours.load_state_dict(state, strict=True)


@pytest.mark.parametrize(
    "case",
    [
        dict(separate=True, rnn=True, d2rl=True, activation="swish", space=CONTINUOUS),
        dict(separate=False, rnn=False, d2rl=True, activation="gelu", space=DISCRETE),
    ],
)
def test_same_weights_same_outputs_as_rl_games(case):
    torch.manual_seed(0)
    continuous = "continuous" in case["space"]
    action_space = gym.spaces.Box(-1, 1, (2,)) if continuous else gym.spaces.Discrete(3)
    ref = A2CBuilder.Network(
        _rl_games_params(**case), actions_num=2 if continuous else 3, input_shape=(4,), num_seqs=5
    )
    cfg = Config()
    cfg.encoder_mlp_layers, cfg.hidden_size = [16, 12], 8
    cfg.actor_critic_share_weights = not case["separate"]
    cfg.use_rnn = cfg.rnn_before_mlp = cfg.rnn_layer_norm = case["rnn"]
    cfg.d2rl, cfg.nonlinearity = case["d2rl"], {"swish": "silu"}.get(case["activation"], case["activation"])
    if continuous:
        cfg.mu_activation, cfg.adaptive_stddev = "tanh", False
    ours = ActorCritic(cfg, gym.spaces.Box(-1, 1, (4,)), action_space)
    with torch.no_grad():  # random LayerNorm affine and log-std, so they take part in the check
        for name, p in ref.named_parameters():
            if "layer_norm" in name or name == "sigma":
                p.normal_()
    _copy_into_surge(ref, ours, RNN_NAMES if case["rnn"] else FF_NAMES)
    obs = 3 * torch.randn(5, 4)
    states = torch.randn(5, ours.rnn_state_size)
    out = ours.act(obs, states)
    # the same values in rl_games' layout: each GRU's state [layers, B, units]
    feed = {"obs": obs, "seq_length": 1}
    if case["rnn"]:
        feed["rnn_states"] = (states[:, :8].unsqueeze(0), states[:, 8:].unsqueeze(0))
    with torch.no_grad():
        ref_out = ref(feed)
    if continuous:
        mu, sigma, value, ref_states = ref_out
        torch.testing.assert_close(out.logits, torch.cat([mu, sigma], dim=-1))
    else:
        logits, value, ref_states = ref_out
        torch.testing.assert_close(out.logits, logits)
    torch.testing.assert_close(out.values, value.squeeze(-1))
    if case["rnn"]:
        torch.testing.assert_close(out.rnn_states, torch.cat([s.squeeze(0) for s in ref_states], dim=1))
