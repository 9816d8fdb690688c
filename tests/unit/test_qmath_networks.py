"""The off-policy networks: QNetwork heads (plain, dueling, categorical, recurrent with burn-in),
the continuous actors and the Q-critics."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from surge.algorithms.dqn.networks import QNetwork
from surge.cfg.config import Config
from surge.errors import EnvError
from surge.models.continuous_networks import ContinuousActor, QCritic, TwinQCritic
from surge.models.squashed_gaussian import squashed_gaussian_log_prob

VEC = gym.spaces.Box(-1.0, 1.0, (5,), np.float32)
ACTIONS = gym.spaces.Discrete(4)


def _cfg(**kw):
    cfg = Config()
    cfg.encoder_mlp_layers, cfg.hidden_size, cfg.nonlinearity = [32, 32], 16, "relu"
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


def test_plain_head_shapes_and_an_atari_conv_encoder():
    torch.manual_seed(0)
    net = QNetwork(_cfg(), VEC, ACTIONS)
    out = net(torch.randn(7, 5))
    assert out.q_values.shape == (7, 4) and out.log_probs is None and out.rnn_states.shape == (7, 0)
    atari = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    cfg = _cfg(
        encoder_subtype="convnet_deepmind", obs_scale=255.0, hidden_size=512, encoder_extra_fc_layers=1
    )
    conv = QNetwork(cfg, atari, gym.spaces.Discrete(6))
    q = conv(torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8)).q_values
    assert q.shape == (3, 6) and torch.isfinite(q).all()


def test_dueling_head_satisfies_wang_et_al_eq_9():
    torch.manual_seed(1)
    net = QNetwork(_cfg(), VEC, ACTIONS, dueling=True, head_sizes=(8,))
    obs = torch.randn(6, 5)
    q = net(obs).q_values
    feats, _ = net.features(obs)
    value = net.value_out(net.value_head(feats)).squeeze(-1)
    adv = net.out(net.head(feats))
    # Q = V + (A − mean A): the mean over actions of Q is V, and Q − V is the centred advantage
    torch.testing.assert_close(q.mean(dim=1), value)
    torch.testing.assert_close(q - value[:, None], adv - adv.mean(dim=1, keepdim=True))


def test_dueling_gradient_into_the_trunk_is_scaled():
    torch.manual_seed(2)
    obs = torch.randn(6, 5)
    grads = []
    for scale in (1.0, 0.5):
        torch.manual_seed(3)
        net = QNetwork(_cfg(), VEC, ACTIONS, dueling=True, dueling_grad_scale=scale)
        net(obs).q_values.sum().backward()
        grads.append(next(net.features.parameters()).grad.clone())
    torch.testing.assert_close(grads[1], 0.5 * grads[0])


def _paper_dueling_parameters(actions: int) -> int:
    """Wang et al. 2016, section 4: the Nature DQN's three convolutions (32 8x8 stride 4, 64 4x4
    stride 2, 64 3x3 stride 1 on 4x84x84, 64x7x7 = 3136 outputs), then a value stream (512 units ->
    1) and an advantage stream (512 units -> A)."""
    conv = (4 * 32 * 8 * 8 + 32) + (32 * 64 * 4 * 4 + 64) + (64 * 64 * 3 * 3 + 64)
    streams = 2 * (3136 * 512 + 512)
    return conv + streams + (512 * actions + actions) + (512 + 1)


def test_dueling_network_on_atari_is_wang_et_al_s():
    atari = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    cfg = _cfg(
        encoder_subtype="convnet_deepmind", obs_scale=255.0, hidden_size=512, encoder_extra_fc_layers=1
    )
    net = QNetwork(cfg, atari, gym.spaces.Discrete(4), dueling=True)
    # the convolutions are shared; no fully connected layer before the streams split
    assert not any(isinstance(m, torch.nn.Linear) for m in net.features.modules())
    assert net.features.out_size == 3136
    for stream in (net.head, net.value_head):
        linears = [m for m in stream.modules() if isinstance(m, torch.nn.Linear)]
        assert [(m.in_features, m.out_features) for m in linears] == [(3136, 512)]
    assert sum(p.numel() for p in net.parameters()) == _paper_dueling_parameters(4)
    # the plain network keeps its shared 512-unit layer
    plain = QNetwork(cfg, atari, gym.spaces.Discrete(4))
    assert plain.features.out_size == 512
    obs = torch.randint(0, 256, (3, 4, 84, 84), dtype=torch.uint8)
    q = net(obs).q_values
    feats, _ = net.features(obs)
    value = net.value_out(net.value_head(feats)).squeeze(-1)
    adv = net.out(net.head(feats))
    torch.testing.assert_close(q, value[:, None] + adv - adv.mean(dim=1, keepdim=True))


def test_dueling_streams_of_a_vector_encoder_take_its_last_layer():
    net = QNetwork(_cfg(), VEC, ACTIONS, dueling=True)  # encoder_mlp_layers [32, 32]
    assert net.features.out_size == 32
    for stream in (net.head, net.value_head):
        linears = [m for m in stream.modules() if isinstance(m, torch.nn.Linear)]
        assert [(m.in_features, m.out_features) for m in linears] == [(32, 32)]
    recurrent = QNetwork(_cfg(rnn_type="gru"), VEC, ACTIONS, use_rnn=True, dueling=True)
    assert not any(isinstance(m, torch.nn.Linear) for m in recurrent.head.modules())  # R2D2: after the core


def test_a_moved_stream_layer_keeps_spectral_norm_and_d2rl_stays_unsplit():
    net = QNetwork(_cfg(use_spectral_norm=True), VEC, ACTIONS, dueling=True)
    for stream in (net.head, net.value_head):
        (linear,) = [m for m in stream.modules() if isinstance(m, torch.nn.Linear)]
        assert torch.nn.utils.parametrize.is_parametrized(linear, "weight")
    d2rl = QNetwork(_cfg(d2rl=True), VEC, ACTIONS, dueling=True)
    assert d2rl.features.out_size == 32  # the D2RL encoder keeps both layers; the streams are linear
    assert not any(isinstance(m, torch.nn.Linear) for m in d2rl.head.modules())


@pytest.mark.parametrize("dueling", [False, True])
def test_categorical_head_gives_distributions_and_their_expectations(dueling):
    torch.manual_seed(4)
    net = QNetwork(_cfg(), VEC, ACTIONS, num_atoms=11, v_min=-5.0, v_max=5.0, dueling=dueling)
    out = net(torch.randn(3, 5))
    assert out.log_probs.shape == (3, 4, 11)
    p = out.log_probs.detach().exp()
    torch.testing.assert_close(p.sum(-1), torch.ones(3, 4))
    z = [-5.0 + i for i in range(11)]
    for b in range(3):
        for a in range(4):
            ref = sum(float(p[b, a, i]) * z[i] for i in range(11))
            assert out.q_values[b, a].item() == pytest.approx(ref, abs=1e-5)


def _stepped(net, obs, state, dones):
    """Reference: one `forward` per step, the state zeroed after a done."""
    outs = []
    for t in range(obs.shape[0]):
        o = net(obs[t], state)
        outs.append(o.q_values)
        state = o.rnn_states * (1.0 - dones[t]).unsqueeze(1)
    return torch.stack(outs)


@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
@pytest.mark.parametrize("burn_in", [0, 3])
def test_recurrent_sequence_with_burn_in_matches_stepping(rnn_type, burn_in):
    torch.manual_seed(5)
    net = QNetwork(_cfg(rnn_type=rnn_type), VEC, ACTIONS, use_rnn=True, dueling=True)
    T, B = 8, 3
    obs = torch.randn(T, B, 5)
    dones = torch.zeros(T, B)
    dones[1, 0] = 1.0  # inside the burn-in
    dones[5, 2] = 1.0  # after it
    stored = torch.randn(T, B, net.rnn_state_size)
    with torch.no_grad():
        ref = _stepped(net, obs, stored[0], dones)[burn_in:]
    obs.requires_grad_(True)
    out = net.sequence(obs, stored, dones, burn_in=burn_in)
    assert out.q_values.shape == (T - burn_in, B, 4)
    torch.testing.assert_close(out.q_values, ref, atol=1e-5, rtol=1e-5)
    out.q_values.sum().backward()
    assert net.core.rnn.weight_hh_l0.grad.abs().sum() > 0
    # the burn-in steps only warm the state up: no gradient reaches their observations
    assert obs.grad is not None and obs.grad[burn_in:].abs().sum() > 0
    assert obs.grad[:burn_in].abs().sum() == 0
    with pytest.raises(ValueError, match="burn_in"):
        net.sequence(obs, stored, dones, burn_in=T)


def test_action_mask_entry_is_split_off_and_returned():
    space = gym.spaces.Dict({"observation": VEC, "action_mask": gym.spaces.Box(0, 1, (4,), np.int8)})
    net = QNetwork(_cfg(), space, ACTIONS)
    mask = torch.tensor([[1, 0, 1, 1]], dtype=torch.int8)
    out = net({"observation": torch.randn(1, 5), "action_mask": mask})
    assert torch.equal(out.action_mask, mask) and out.q_values.shape == (1, 4)


def test_q_network_refuses_continuous_actions():
    with pytest.raises(EnvError, match="Discrete"):
        QNetwork(_cfg(), VEC, gym.spaces.Box(-1, 1, (2,)))


BOX = gym.spaces.Box(np.array([-2.0, 0.0], np.float32), np.array([2.0, 10.0], np.float32))


def test_actors_act_in_minus_one_one_and_rescale_to_the_box():
    torch.manual_seed(6)
    obs = torch.randn(64, 5) * 10
    for gaussian in (False, True):
        actor = ContinuousActor(_cfg(), VEC, BOX, gaussian=gaussian)
        out = actor(obs)
        assert out.actions.shape == (64, 2) and out.actions.abs().max() <= 1.0
        env = actor.to_env(out.actions)
        assert (
            (env[:, 0] >= -2).all()
            and (env[:, 0] <= 2).all()
            and (env[:, 1] >= 0).all()
            and (env[:, 1] <= 10).all()
        )
        torch.testing.assert_close(actor.from_env(env), out.actions)
        assert (out.log_probs is not None) == gaussian
    ends = ContinuousActor(_cfg(), VEC, BOX).to_env(torch.tensor([[-1.0, -1.0], [1.0, 1.0]]))
    assert ends.tolist() == [[-2.0, 0.0], [2.0, 10.0]]


def test_gaussian_actor_is_the_squashed_gaussian_of_its_heads():
    torch.manual_seed(7)
    actor = ContinuousActor(_cfg(), VEC, BOX, gaussian=True)
    obs = torch.randn(16, 5)
    mean, log_std = actor.distribution_params(obs)
    det = actor(obs, deterministic=True)
    torch.testing.assert_close(det.actions, torch.tanh(mean))
    torch.testing.assert_close(det.log_probs, squashed_gaussian_log_prob(mean, mean, log_std))
    assert log_std.min() >= -20 and log_std.max() <= 2
    sizes = [m.out_features for m in actor.mlp if isinstance(m, torch.nn.Linear)]
    assert sizes == [256, 256]  # SB3's and the papers' default
    assert actor.mlp[0].in_features == 5  # vector observations are fed as they are


def test_actor_refuses_unbounded_or_discrete_actions():
    with pytest.raises(EnvError, match="infinite"):
        ContinuousActor(_cfg(), VEC, gym.spaces.Box(-np.inf, np.inf, (2,)))
    with pytest.raises(EnvError, match="Box"):
        QCritic(_cfg(), VEC, ACTIONS)


def test_twin_critics_are_independent():
    torch.manual_seed(8)
    twin = TwinQCritic(_cfg(), VEC, BOX, hidden_sizes=(32, 32))
    obs, act = torch.randn(9, 5), torch.rand(9, 2) * 2 - 1
    q1, q2 = twin(obs, act)
    assert q1.shape == q2.shape == (9,)
    assert not torch.allclose(q1, q2)
    torch.testing.assert_close(twin.q1(obs, act), q1)
    ids1 = {id(p) for p in twin.q1_net.parameters()}
    assert not ids1 & {id(p) for p in twin.q2_net.parameters()}
    q1.sum().backward()
    assert all(p.grad is None for p in twin.q2_net.parameters())
