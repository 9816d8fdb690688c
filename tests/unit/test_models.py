"""Models: encoders per obs space, RNN sequence == step-by-step with resets, act/evaluate agree."""

import gymnasium as gym
import numpy as np
import pytest
import torch

from surge.cfg.config import Config
from surge.models.actor_critic import ActorCritic
from surge.models.cores import RnnCore, cell_step


def _cfg(**kw):
    cfg = Config()
    for k, v in kw.items():
        setattr(cfg, k, v)
    return cfg


def _stepped(core, x, stored, dones, R):
    """The reference: one step at a time, zeros after a done, the stored state at chunk starts."""
    state = stored[0]
    ref = []
    for t in range(x.shape[0]):
        if t % R == 0:
            state = stored[t].detach()
        out, state = core.step(x[t], state)
        ref.append(out)
        state = state * (1 - dones[t]).unsqueeze(1)
    return torch.stack(ref)


@pytest.mark.parametrize("rnn_type,layers", [("gru", 1), ("lstm", 1), ("gru", 2), ("lstm", 2)])
@pytest.mark.parametrize(
    "T,B,R,p_done",
    [(8, 3, 4, 0.0), (8, 3, 4, 0.2), (10, 5, 4, 0.3), (32, 16, 32, 0.05), (12, 4, 12, 0.6), (6, 2, 6, 1.0)],
)
@pytest.mark.parametrize("path", ["sequence", "packed", "split"])
def test_rnn_sequence_matches_stepping_with_resets_and_chunk_states(rnn_type, layers, T, B, R, p_done, path):
    """Outputs and gradients (input, weights) of `sequence` and of both its paths (one packed call,
    one call per time range) against the naive step loop."""
    torch.manual_seed(T * 100 + B)
    core = RnnCore(6, 8, rnn_type, layers)
    x = torch.randn(T, B, 6, requires_grad=True)
    dones = (torch.rand(T, B) < p_done).float()
    dones[2 % T, 0] = 1.0
    stored = torch.randn(T, B, core.state_size)
    ref = _stepped(core, x, stored, dones, R)
    w = torch.randn_like(ref)
    ref_grads = torch.autograd.grad((ref * w).sum(), [x, *core.parameters()])
    if path == "packed":
        got = core.sequence_packed(x, stored, dones.numpy(), R)
    elif path == "split":
        ends = {t + 1 for t in range(T - 1) if dones[t].any()}
        got = core.sequence_split(x, stored, dones, R, sorted(set(range(0, T, R)) | ends))
    else:
        got = core.sequence(x, stored, dones, R)
    torch.testing.assert_close(got, ref, rtol=1e-5, atol=1e-5)
    got_grads = torch.autograd.grad((got * w).sum(), [x, *core.parameters()])
    for g, r in zip(got_grads, ref_grads, strict=True):
        torch.testing.assert_close(g, r, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize(
    "obs_space,encoder_kw",
    [
        (
            gym.spaces.Box(0, 255, (4, 84, 84), np.uint8),
            {"encoder_subtype": "convnet_deepmind", "obs_scale": 255.0},
        ),
        (gym.spaces.Box(0, 255, (3, 64, 64), np.uint8), {"encoder_subtype": "convnet_simple"}),
        (gym.spaces.Box(0, 255, (3, 64, 64), np.uint8), {"encoder_type": "resnet"}),
        (gym.spaces.Box(0, 255, (3, 72, 128), np.uint8), {"encoder_subtype": "convnet_impala"}),
        (gym.spaces.Box(-1, 1, (7,), np.float32), {}),
        (
            gym.spaces.Dict(
                {
                    "img": gym.spaces.Box(0, 255, (3, 36, 36), np.uint8),
                    "measurements": gym.spaces.Box(-1, 1, (5,), np.float32),
                }
            ),
            {},
        ),
    ],
)
@pytest.mark.parametrize("use_rnn", [False, True])
def test_act_and_evaluate_agree_for_every_encoder(obs_space, encoder_kw, use_rnn):
    torch.manual_seed(0)
    cfg = _cfg(use_rnn=use_rnn, hidden_size=32, encoder_mlp_layers=[16], **encoder_kw)
    action_space = gym.spaces.Discrete(3)
    model = ActorCritic(cfg, obs_space, action_space)
    T, B = 3, 2

    def sample_obs():
        o = obs_space.sample()
        return {k: torch.as_tensor(v) for k, v in o.items()} if isinstance(o, dict) else torch.as_tensor(o)

    seq = [[sample_obs() for _ in range(B)] for _ in range(T)]

    def stack(items):
        if isinstance(items[0], dict):
            return {k: torch.stack([i[k] for i in items]) for k in items[0]}
        return torch.stack(items)

    state = torch.zeros(B, model.rnn_state_size)
    states, logits_step, values_step = [], [], []
    for t in range(T):
        states.append(state)
        out = model.act(stack(seq[t]), state)
        logits_step.append(out.logits)
        values_step.append(out.values)
        state = out.rnn_states
        assert out.actions.shape == (B,) and out.log_probs.shape == (B,)
    obs_tb = stack([stack(s) for s in seq])
    logits, values = model.evaluate(obs_tb, torch.stack(states), torch.zeros(T, B), recurrence=T)
    assert logits.shape == (T, B, 3) and values.shape == (T, B)
    torch.testing.assert_close(logits, torch.stack(logits_step), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(values, torch.stack(values_step), rtol=1e-4, atol=1e-5)


def test_gaussian_policy_and_input_normalisation():
    cfg = _cfg(use_rnn=False, normalize_input=True, adaptive_stddev=False, initial_stddev=0.5)
    model = ActorCritic(
        cfg, gym.spaces.Box(-10, 10, (4,), np.float32), gym.spaces.Box(-1, 1, (2,), np.float32)
    )
    data = torch.randn(1000, 4) * 3 + 5
    model.obs_normalizer.update(data[:400])
    model.obs_normalizer.update(data[400:])
    # the statistics of the data and one prior pseudo-sample (mean 0, variance 1), as SF / rl_games
    n, m, v = 1000, data.mean(0), data.var(0, unbiased=False)
    torch.testing.assert_close(model.obs_normalizer.mean.float(), m * n / (n + 1), atol=1e-4, rtol=0)
    expected_var = (1 + n * v + m.pow(2) * n / (n + 1)) / (n + 1)
    torch.testing.assert_close(model.obs_normalizer.var.float(), expected_var, atol=1e-4, rtol=1e-4)
    out = model.act(data[:8], torch.zeros(8, 0))
    assert out.actions.shape == (8, 2) and out.actions.dtype == torch.float32
    torch.testing.assert_close(out.logits[:, 2:].exp(), torch.full((8, 2), 0.5))


def test_spectral_norm_bounds_the_largest_singular_value():
    cfg = _cfg(use_rnn=False, use_spectral_norm=True, encoder_mlp_layers=[32, 32])
    model = ActorCritic(cfg, gym.spaces.Box(-1, 1, (6,), np.float32), gym.spaces.Discrete(2))
    for _ in range(20):  # power iterations run in training mode
        model.act(torch.randn(4, 6), torch.zeros(4, 0))
    lin = model.encoder.net[0]
    assert torch.linalg.matrix_norm(lin.weight.detach(), ord=2) <= 1.05


def test_normalize_input_standardises_images_per_pixel_and_dict_keys():
    import gymnasium as gym

    from surge.models.normalization import DictNormalizer, ImageNormalizer, make_obs_normalizer

    image = gym.spaces.Box(0, 255, (3, 4, 5), np.uint8)
    space = gym.spaces.Dict({"obs": image, "measurements": gym.spaces.Box(-1, 1, (6,), np.float32)})
    norm = make_obs_normalizer(space, 0.0, 255.0)
    assert isinstance(norm, DictNormalizer) and isinstance(norm.normalizers["obs"], ImageNormalizer)
    g = torch.Generator().manual_seed(0)
    scales = torch.linspace(0.1, 1, 5)  # a different spread per pixel column
    batches = [
        (
            torch.randint(0, 256, (200, 3, 4, 5), generator=g).float() * scales,
            torch.randn(200, 6, generator=g) * 3 + 1,
        )
        for _ in range(20)
    ]
    for pixels, vectors in batches:
        norm.update({"obs": pixels, "measurements": vectors})
    pixels = torch.cat([p for p, _ in batches])
    vectors = torch.cat([v for _, v in batches])
    out = norm({"obs": pixels, "measurements": vectors})
    # per pixel: the statistics of the scaled pixels and one prior pseudo-sample (mean 0, variance 1)
    x, n = pixels / 255.0, pixels.shape[0]
    mean = x.mean(0) * n / (n + 1)
    var = (1 + n * x.var(0, unbiased=False) + x.mean(0).pow(2) * n / (n + 1)) / (n + 1)
    expected = ((x - mean) / (var + 1e-5).sqrt()).clamp(-5, 5)
    torch.testing.assert_close(out["obs"], expected, atol=1e-3, rtol=1e-3)
    torch.testing.assert_close(out["measurements"].mean(0), torch.zeros(6), atol=1e-2, rtol=0)
    torch.testing.assert_close(out["measurements"].std(0, unbiased=False), torch.ones(6), atol=1e-2, rtol=0)


def test_image_normalizer_scales_first_and_its_prior_damps_pixels_that_barely_vary():
    from surge.models.normalization import ImageNormalizer

    frames = torch.full((200, 1, 2, 2), 100, dtype=torch.uint8)
    frames[:, 0, 1, 1] = torch.randint(0, 256, (200,), dtype=torch.uint8)
    norm = ImageNormalizer((1, 2, 2), subtract_mean=0.0, scale=255.0)
    norm.update(frames)
    # statistics live on [0, 1] pixels (Sample Factory applies obs_scale before normalising)
    assert (
        0.3 < float(norm.mean[0, 1, 1]) < 0.7
        and abs(float(norm.mean[0, 0, 0]) - 100 / 255 * 200 / 201) < 1e-6
    )
    changed = frames[:1].clone()
    changed[0, 0, 0, 0] = 110  # ten grey levels on a pixel that never moved
    z = norm(changed)[0, 0, 0, 0]
    # the prior keeps its std near sqrt(1/201) of the [0, 1] range instead of 0: no jump to the clip
    assert 0.3 < float(z - norm(frames[:1])[0, 0, 0, 0]) < 1.0


def test_action_head_init_gain_sets_how_far_from_uniform_the_policy_starts():
    space = gym.spaces.Box(-1, 1, (8,), np.float32)
    obs = torch.randn(256, 8)
    spread = {}
    for gain in (0.01, 1.0):
        torch.manual_seed(0)
        model = ActorCritic(_cfg(use_rnn=False, action_head_init_gain=gain), space, gym.spaces.Discrete(4))
        logits = model.act(obs, torch.zeros(256, model.rnn_state_size)).logits
        spread[gain] = float(logits.std())
    assert spread[0.01] < 0.01 < 0.1 < spread[1.0]


def test_encoder_initialization_torch_default_keeps_pytorchs_init_in_the_encoder_only():
    space = gym.spaces.Box(0, 255, (3, 72, 128), np.uint8)
    stds = {}
    for how in ("policy_initialization", "torch_default"):
        torch.manual_seed(0)
        cfg = _cfg(encoder_type="conv", encoder_subtype="convnet_simple", encoder_initialization=how)
        model = ActorCritic(cfg, space, gym.spaces.Discrete(4))
        conv = next(m for m in model.encoder.modules() if isinstance(m, torch.nn.Conv2d))
        stds[how] = float(conv.weight.std())
        assert float(conv.bias.abs().max()) == 0.0
        w = model.value_head.weight.detach()  # the heads stay orthogonal (gain 1) either way
        torch.testing.assert_close(w @ w.T, torch.ones(1, 1))
    fan_in = 3 * 8 * 8
    # PyTorch's kaiming_uniform(a=sqrt(5)) has std 1/sqrt(3 fan_in); orthogonal rows have norm 1
    assert abs(stds["torch_default"] * (3 * fan_in) ** 0.5 - 1) < 0.05
    assert abs(stds["policy_initialization"] * fan_in**0.5 - 1) < 0.05


@pytest.mark.parametrize("subtract_mean,scale", [(0.0, 255.0), (128.0, 128.0), (0.0, 1.0)])
def test_image_encoder_input_scaling_leaves_the_caller_s_tensor_alone(subtract_mean, scale):
    from surge.models.encoders import ConvEncoder

    enc = ConvEncoder(
        _cfg(obs_subtract_mean=subtract_mean, obs_scale=scale), (3, 36, 36), "convnet_simple", torch.nn.ELU
    )
    u8 = torch.randint(0, 256, (2, 3, 36, 36), dtype=torch.uint8)
    as_float = u8.float()
    for obs in (u8, as_float):
        before = obs.clone()
        torch.testing.assert_close(enc._scale(obs), (u8.float() - subtract_mean) / scale)
        assert torch.equal(obs, before)  # a float input must not be scaled in place


@pytest.mark.parametrize("subtype", ["convnet_deepmind", "resnet_impala"])
def test_channels_last_conv_weights_compute_what_nchw_ones_do_and_checkpoints_load_both_ways(subtype):
    space = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)
    kw = {"encoder_type": "resnet" if subtype == "resnet_impala" else "conv", "encoder_subtype": subtype}
    torch.manual_seed(0)
    model = ActorCritic(_cfg(obs_scale=255.0, use_rnn=False, **kw), space, gym.spaces.Discrete(6))
    convs = [m.weight for m in model.modules() if isinstance(m, torch.nn.Conv2d)]
    assert convs and all(w.is_contiguous(memory_format=torch.channels_last) for w in convs)
    assert not all(w.is_contiguous() for w in convs)  # the NHWC order really is in use
    nchw = ActorCritic(_cfg(obs_scale=255.0, use_rnn=False, **kw), space, gym.spaces.Discrete(6))
    nchw = nchw.to(memory_format=torch.contiguous_format)
    nchw.load_state_dict(model.state_dict())  # an NHWC checkpoint into NCHW weights
    obs = torch.randint(0, 256, (5, 4, 84, 84), dtype=torch.uint8)
    h = torch.zeros(5, model.rnn_state_size)
    with torch.no_grad():
        a, b = model.encoder(obs), nchw.encoder(obs)
    torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)
    model2 = ActorCritic(_cfg(obs_scale=255.0, use_rnn=False, **kw), space, gym.spaces.Discrete(6))
    model2.load_state_dict(nchw.state_dict())  # and an NCHW one into NHWC weights
    with torch.no_grad():
        got, ref = model2.act(obs, h, deterministic=True), model.act(obs, h, deterministic=True)
    for field in ("actions", "log_probs", "values", "logits"):
        torch.testing.assert_close(getattr(got, field), getattr(ref, field), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("kind", ["gru", "lstm"])
@pytest.mark.parametrize("layers", [1, 2])
def test_the_cell_step_a_gpu_takes_equals_the_rnn_modules_step(kind, layers):
    # surge.models.cores.cell_step (RnnCore.step on a GPU, for CUDA graphs) against nn.GRU / nn.LSTM
    torch.manual_seed(0)
    rnn = (torch.nn.LSTM if kind == "lstm" else torch.nn.GRU)(6, 5, num_layers=layers)
    x = torch.randn(7, 6)
    h = torch.randn(layers, 7, 5)
    state = (h, torch.randn(layers, 7, 5)) if kind == "lstm" else h
    out, new = cell_step(rnn, x, state)
    ref_out, ref_new = rnn(x.unsqueeze(0), state)
    assert torch.allclose(out, ref_out.squeeze(0), atol=1e-6)
    for a, b in zip(new if kind == "lstm" else [new], ref_new if kind == "lstm" else [ref_new], strict=True):
        assert a.shape == b.shape and torch.allclose(a, b, atol=1e-6)
