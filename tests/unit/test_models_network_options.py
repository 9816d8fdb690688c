"""The network options of issue 21 (rl_games' A2CBuilder options under surge's flags): a separate
critic, D2RL, rnn_before_mlp, rnn_layer_norm, mu_activation, activations and named initializers.
References: rl_games' own D2RLNet and variance_scaling_initializer, naive loops, the papers'
formulas, and the parameter names and shapes today's default model had (printed from main's
ActorCritic before these options)."""

import math

import gymnasium as gym
import pytest
import torch
from rl_games.algos_torch import torch_ext
from rl_games.algos_torch.d2rl import D2RLNet
from torch import nn

from surge.cfg.config import Config
from surge.errors import ConfigError
from surge.models.actor_critic import ActorCritic
from surge.models.d2rl import D2RLMlp
from surge.models.initializers import init_weight
from surge.models.model_checks import check_model_flags
from surge.runtime.memory_estimate import rnn_state_floats

VEC = gym.spaces.Box(-1.0, 1.0, (4,))
DISCRETE = gym.spaces.Discrete(3)
BOX = gym.spaces.Box(-1.0, 1.0, (2,))


def _cfg(**kw):
    cfg = Config()
    cfg.encoder_mlp_layers, cfg.hidden_size = [16, 16], 8
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


def _model(obs_space=VEC, action_space=DISCRETE, seed=0, **kw):
    torch.manual_seed(seed)
    return ActorCritic(_cfg(**kw), obs_space, action_space)


# names and shapes of main's ActorCritic (commit edaecd6) for these two configs
OLD_RNN = {
    "obs_normalizer.mean": (4,), "obs_normalizer.var": (4,), "obs_normalizer.count": (),
    "returns_normalizer.mean": (), "returns_normalizer.var": (), "returns_normalizer.count": (),
    "encoder.net.0.weight": (16, 4), "encoder.net.0.bias": (16,), "encoder.net.2.weight": (16, 16),
    "encoder.net.2.bias": (16,), "core.rnn.weight_ih_l0": (24, 16), "core.rnn.weight_hh_l0": (24, 8),
    "core.rnn.bias_ih_l0": (24,), "core.rnn.bias_hh_l0": (24,), "policy_head.weight": (2, 8),
    "policy_head.bias": (2,), "value_head.weight": (1, 8), "value_head.bias": (1,),
}  # fmt: skip
OLD_FF_GAUSSIAN = {
    "log_std": (3,), "encoder.net.0.weight": (16, 4), "encoder.net.0.bias": (16,),
    "encoder.net.2.weight": (16, 16), "encoder.net.2.bias": (16,), "policy_head.weight": (3, 16),
    "policy_head.bias": (3,), "value_head.weight": (1, 16), "value_head.bias": (1,),
}  # fmt: skip


@pytest.mark.parametrize(
    "kw, action_space, old",
    [
        (dict(normalize_input=True, normalize_returns=True), gym.spaces.Discrete(2), OLD_RNN),
        (dict(adaptive_stddev=False, use_rnn=False), gym.spaces.Box(-1, 1, (3,)), OLD_FF_GAUSSIAN),
    ],
)
def test_shared_default_keeps_parameter_names_so_old_checkpoints_load(kw, action_space, old):
    model = _model(action_space=action_space, **kw)
    assert {k: tuple(v.shape) for k, v in model.state_dict().items()} == old
    checkpoint = {k: torch.randn(shape) for k, shape in old.items()}
    model.load_state_dict(checkpoint, strict=True)
    assert all(torch.equal(model.state_dict()[k], v) for k, v in checkpoint.items())


def _policy_and_value(model, T=5, B=3):
    torch.manual_seed(1)
    obs = torch.randn(T, B, 4)
    states = torch.randn(T, B, model.rnn_state_size)
    dones = (torch.rand(T, B) < 0.3).float()
    return model.evaluate(obs, states, dones, recurrence=T)


def _grads(model, loss):
    model.zero_grad(set_to_none=True)
    loss.backward()
    return {n: p.grad for n, p in model.named_parameters()}


@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
def test_separate_critic_gets_no_policy_gradient_and_actor_no_value_gradient(rnn_type):
    model = _model(actor_critic_share_weights=False, rnn_type=rnn_type)
    critic = ("critic_encoder.", "critic_core.", "value_head.")
    logits, values = _policy_and_value(model)
    grads = _grads(model, torch.log_softmax(logits, -1)[..., 0].sum())
    assert all(g is None for n, g in grads.items() if n.startswith(critic))
    assert all(g is not None and g.abs().sum() > 0 for n, g in grads.items() if not n.startswith(critic))
    logits, values = _policy_and_value(model)
    grads = _grads(model, (values**2).sum())
    assert all(g is not None and g.abs().sum() > 0 for n, g in grads.items() if n.startswith(critic))
    assert all(g is None for n, g in grads.items() if not n.startswith(critic))


def test_shared_weights_value_gradient_reaches_the_encoder():
    model = _model()
    _, values = _policy_and_value(model)
    grads = _grads(model, (values**2).sum())
    assert grads["encoder.net.0.weight"].abs().sum() > 0 and grads["policy_head.weight"] is None


def test_separate_state_is_actor_then_critic():
    model = _model(actor_critic_share_weights=False, rnn_type="lstm")
    n = 2 * 8  # one LSTM layer: h and c of width hidden_size
    assert (
        model.rnn_state_size
        == 2 * n
        == rnn_state_floats(_cfg(actor_critic_share_weights=False, rnn_type="lstm"))
    )
    obs, states = torch.randn(6, 4), torch.randn(6, 2 * n)
    out = model.act(obs, states)
    # reference: each stream run by hand on its own half of the state
    a_x, a_s = model.core.step(model.encoder(obs), states[:, :n])
    c_x, c_s = model.critic_core.step(model.critic_encoder(obs), states[:, n:])
    torch.testing.assert_close(out.logits, model.policy_head(a_x))
    torch.testing.assert_close(out.values, model.value_head(c_x).squeeze(-1))
    torch.testing.assert_close(out.rnn_states, torch.cat([a_s, c_s], 1))


def _stepwise(model, obs, states0, dones):
    """Naive reference of `evaluate`: `act` step by step, the state zeroed after an episode end."""
    state, logits, values = states0, [], []
    for t in range(obs.shape[0]):
        out = model.act(obs[t], state)
        logits.append(out.logits)
        values.append(out.values)
        state = out.rnn_states * (1.0 - dones[t]).unsqueeze(1)
    return torch.stack(logits), torch.stack(values)


@pytest.mark.parametrize(
    "kw",
    [
        dict(actor_critic_share_weights=False),
        dict(actor_critic_share_weights=False, rnn_type="lstm", rnn_before_mlp=True, rnn_layer_norm=True),
        dict(rnn_before_mlp=True),
        dict(rnn_before_mlp=True, d2rl=True, rnn_layer_norm=True, nonlinearity="gelu"),
    ],
)
def test_evaluate_over_trajectories_equals_stepwise_act(kw):
    model = _model(**kw)
    T, B = 6, 4
    torch.manual_seed(2)
    obs, dones = torch.randn(T, B, 4), (torch.rand(T, B) < 0.25).float()
    states = torch.randn(T, B, model.rnn_state_size)
    with torch.no_grad():
        logits, values = model.evaluate(obs, states, dones, recurrence=T)
    ref_logits, ref_values = _stepwise(model, obs, states[0], dones)
    torch.testing.assert_close(logits, ref_logits)
    torch.testing.assert_close(values, ref_values)


def test_rnn_before_mlp_layer_widths():
    model = _model(rnn_before_mlp=True, encoder_mlp_layers=[16, 12])
    assert model.core.rnn.input_size == 4  # the flattened observation
    linears = [m for m in model.post_core.modules() if isinstance(m, nn.Linear)]
    assert [(m.in_features, m.out_features) for m in linears] == [(8, 16), (16, 12)]
    assert model.policy_head.in_features == 12
    image = gym.spaces.Box(0, 255, (3, 64, 64), dtype="uint8")
    conv = _model(image, rnn_before_mlp=True, encoder_extra_fc_layers=1)
    # convnet_simple on 64x64: 128 channels of 2x2 (64 -> 15 -> 6 -> 2 with kernels 8, 4, 3, strides 4, 2, 2)
    assert conv.core.rnn.input_size == 128 * 2 * 2
    assert [m.in_features for m in conv.post_core.modules() if isinstance(m, nn.Linear)] == [8]


def test_rnn_layer_norm_normalises_the_core_output():
    model = _model(rnn_layer_norm=True, use_rnn=True)
    obs, states = torch.randn(5, 4), torch.randn(5, model.rnn_state_size)
    x, _ = model.core.step(model.encoder(obs), states)
    with torch.no_grad():
        model.post_core[0].weight.normal_()
        model.post_core[0].bias.normal_()
    ln = model.post_core[0]
    ref = (x - x.mean(-1, keepdim=True)) / torch.sqrt(x.var(-1, unbiased=False, keepdim=True) + ln.eps)
    torch.testing.assert_close(model.act(obs, states).logits, model.policy_head(ref * ln.weight + ln.bias))


def test_d2rl_matches_rl_games_d2rlnet_with_the_same_weights():
    torch.manual_seed(0)
    ours = D2RLMlp(5, [8, 8, 6], nn.ELU)
    assert [(m.in_features, m.out_features) for m in ours.linears] == [(5, 8), (13, 8), (13, 6)]
    ref = D2RLNet(5, [8, 8, 6], [nn.ELU() for _ in range(3)])
    for a, b in zip(ours.linears, ref.linears, strict=True):
        b.load_state_dict(a.state_dict())
    x = torch.randn(7, 5)
    torch.testing.assert_close(ours(x), ref(x))
    # time-major input [T, B, F] (evaluate's post-core layers)
    torch.testing.assert_close(ours(x.view(7, 1, 5)).view(7, 6), ref(x))


def test_d2rl_flag_builds_the_dense_encoder():
    model = _model(d2rl=True, use_rnn=False, encoder_mlp_layers=[16, 16, 16])
    assert isinstance(model.encoder.net, D2RLMlp)
    assert [m.in_features for m in model.encoder.net.linears] == [4, 20, 20]


@pytest.mark.parametrize(
    "name, ref",
    [
        ("silu", lambda x: x * torch.sigmoid(x)),
        ("gelu", lambda x: 0.5 * x * (1 + torch.erf(x / math.sqrt(2)))),
    ],
)
def test_nonlinearity_silu_and_gelu(name, ref):
    model = _model(nonlinearity=name, use_rnn=False, encoder_mlp_layers=[16])
    lin = model.encoder.net[0]
    x = torch.randn(3, 4)
    torch.testing.assert_close(model.encoder(x), ref(lin(x)))


@pytest.mark.parametrize("adaptive", [True, False])
def test_mu_activation_tanh_bounds_the_mean(adaptive):
    model = _model(action_space=BOX, mu_activation="tanh", adaptive_stddev=adaptive, use_rnn=False)
    with torch.no_grad():
        model.policy_head.weight.mul_(1e3)
    obs = 10 * torch.randn(64, 4)
    logits = model.act(obs, torch.zeros(64, 0)).logits
    raw = model.policy_head(model.encoder(obs))
    mean, log_std = logits[:, :2], logits[:, 2:]
    assert mean.abs().max() <= 1.0 and raw[:, :2].abs().max() > 1.0
    torch.testing.assert_close(mean, torch.tanh(raw[:, :2]))
    torch.testing.assert_close(log_std, raw[:, 2:] if adaptive else model.log_std.expand(64, 2))


def test_refusals():
    with pytest.raises(ConfigError, match="mu_activation"):
        _model(mu_activation="tanh")  # discrete actions
    with pytest.raises(ConfigError, match="value_size"):
        check_model_flags(_cfg(value_size=2))
    with pytest.raises(ConfigError, match="value_size"):
        _model(value_size=3)
    for name in ("rnn_before_mlp", "rnn_layer_norm"):
        with pytest.raises(ConfigError, match=name):
            check_model_flags(_cfg(**{name: True, "use_rnn": False}))
    for name in ("rnn_before_mlp", "d2rl"):
        with pytest.raises(ConfigError, match=name):
            check_model_flags(_cfg(**{name: True, "encoder_custom": "mine"}))
    with pytest.raises(ConfigError, match="rnn_before_mlp"):
        _model(gym.spaces.Dict({"a": VEC, "b": VEC}), rnn_before_mlp=True)


def _std_of_first_layer(name, gain=1.0, width=512):
    torch.manual_seed(0)
    model = ActorCritic(
        _cfg(
            policy_initialization=name,
            policy_init_gain=gain,
            use_rnn=False,
            encoder_mlp_layers=[width, width],
        ),
        gym.spaces.Box(-1, 1, (width,)),
        DISCRETE,
    )
    return model.encoder.net[2].weight  # [width, width]


def test_named_initializers_have_the_papers_scales():
    n = 512
    # Glorot & Bengio 2010: std gain * sqrt(2 / (fan_in + fan_out))
    assert _std_of_first_layer("xavier_normal", 2.0).std().item() == pytest.approx(
        2 * math.sqrt(2 / (2 * n)), rel=0.02
    )
    # He et al. 2015, eq. 10: std sqrt(2 / fan_in), times gain
    assert _std_of_first_layer("kaiming_normal").std().item() == pytest.approx(math.sqrt(2 / n), rel=0.02)
    assert _std_of_first_layer("kaiming_normal", 0.5).std().item() == pytest.approx(
        0.5 * math.sqrt(2 / n), rel=0.02
    )
    w = _std_of_first_layer("uniform", 0.1)
    assert w.abs().max() <= 0.1 and w.std().item() == pytest.approx(0.1 / math.sqrt(3), rel=0.02)


def test_variance_scaling_matches_rl_games():
    ours, ref = torch.empty(512, 256), torch.empty(512, 256)
    init_weight(ours, "variance_scaling", math.sqrt(2.0))  # rl_games' default scale 2 is gain sqrt(2)
    torch_ext.variance_scaling_initializer(ref, mode="fan_in", scale=2.0)
    assert ours.abs().max() <= 2.0 and ours.mean().abs() < 1e-3
    assert ours.std().item() == pytest.approx(ref.std().item(), rel=0.02)
    assert ours.std().item() == pytest.approx(math.sqrt(2.0 / 256), rel=0.02)


@pytest.mark.parametrize(
    "flags, field",
    [
        (["--value_size=2"], "value_size"),
        (["--use_rnn=False", "--rnn_layer_norm=True"], "rnn_layer_norm"),
        (["--use_rnn=False", "--rnn_before_mlp=True"], "rnn_before_mlp"),
    ],
)
def test_command_line_refuses_before_any_process_starts(tmp_path, flags, field):
    from surge.app.resolve import parse_cfg

    with pytest.raises(ConfigError) as err:
        parse_cfg(["--env=CartPole-v1", "--experiment=x", f"--train_dir={tmp_path}", *flags])
    assert err.value.field == field
