"""`surge export` (issue 21, item 4): policies built by surge's model factory from a Config (no
training), written as ONNX and run in onnxruntime, give the torch model's outputs within 1e-5 on
random observations of a batch other than the one traced (the dynamic batch axis); observation
normalisation is part of the file (checked against the normalisation formula by hand); masked
actions are never chosen; TorchScript files give the same."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest
import torch

from surge.cfg.config import Config
from surge.errors import ConfigError
from surge.export.check import check_file, run_file
from surge.export.write import export_model
from surge.models.actor_critic import make_actor_critic

TOL = 1e-5
ATARI = gym.spaces.Box(0, 255, (4, 84, 84), np.uint8)  # surge's Atari frames: 4 stacked 84x84, channels first
VEC = gym.spaces.Box(-3.0, 3.0, (5,), np.float32)


def _model(obs_space, action_space, **model_flags):
    """A freshly initialised actor-critic from surge's factory, its normaliser statistics (when on)
    set to random non-trivial values so the normalisation is visible in the outputs."""
    cfg = Config(env="export_test", hidden_size=32, encoder_mlp_layers=[32, 32], **model_flags)
    torch.manual_seed(0)
    model = make_actor_critic(cfg, obs_space, action_space).eval()
    g = torch.Generator().manual_seed(1)
    for name, buf in model.named_buffers():
        if name.endswith(".mean"):
            buf.copy_(torch.rand(buf.shape, generator=g, dtype=buf.dtype))
        elif name.endswith(".var"):
            buf.copy_(0.25 + torch.rand(buf.shape, generator=g, dtype=buf.dtype))
    return model


def _export_and_check(tmp_path, model, obs_space, fmt="onnx"):
    path = tmp_path / ("policy.onnx" if fmt == "onnx" else "policy.pt")
    policy = export_model(model, obs_space, fmt, path)
    diffs = check_file(policy, path, fmt)
    assert max(diffs.values()) <= TOL, diffs
    return policy, path


CASES = {
    "mlp_discrete": (
        VEC,
        gym.spaces.Discrete(4),
        dict(encoder_type="mlp", encoder_subtype="mlp", use_rnn=False),
    ),
    "mlp_continuous": (
        VEC,
        gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
        dict(encoder_type="mlp", encoder_subtype="mlp", use_rnn=False),
    ),
    "conv_atari": (ATARI, gym.spaces.Discrete(6), dict(encoder_type="conv", use_rnn=False, obs_scale=255.0)),
    "conv_atari_gru": (
        ATARI,
        gym.spaces.Discrete(6),
        dict(encoder_type="conv", use_rnn=True, obs_scale=255.0),
    ),
    "mlp_lstm_continuous": (
        VEC,
        gym.spaces.Box(-1.0, 1.0, (2,), np.float32),
        dict(encoder_type="mlp", encoder_subtype="mlp", use_rnn=True, rnn_type="lstm"),
    ),
    "mlp_gru_discrete": (
        VEC,
        gym.spaces.Discrete(3),
        dict(encoder_type="mlp", encoder_subtype="mlp", use_rnn=True, rnn_type="gru", rnn_num_layers=2),
    ),
    "conv_lstm_continuous": (  # CarRacing-like frames, continuous actions
        gym.spaces.Box(0, 255, (3, 64, 64), np.uint8),
        gym.spaces.Box(-1.0, 1.0, (3,), np.float32),
        dict(encoder_type="conv", use_rnn=True, rnn_type="lstm", obs_scale=255.0),
    ),
    "mlp_tuple_mixed": (  # Doom-like: a discrete head and a continuous one
        VEC,
        gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.Box(-1.0, 1.0, (2,), np.float32))),
        dict(encoder_type="mlp", encoder_subtype="mlp", use_rnn=False),
    ),
    "mlp_multidiscrete": (
        VEC,
        gym.spaces.MultiDiscrete([3, 2, 4]),
        dict(encoder_type="mlp", encoder_subtype="mlp", use_rnn=False),
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_onnx_matches_torch(tmp_path, case):
    obs_space, action_space, flags = CASES[case]
    model = _model(obs_space, action_space, normalize_input=True, **flags)
    policy, path = _export_and_check(tmp_path, model, obs_space)
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    recurrent = flags["use_rnn"]
    assert names == (["obs", "rnn_states_in"] if recurrent else ["obs"])
    outputs = [o.name for o in session.get_outputs()]
    assert outputs == ["actions", "logits", "values"] + (["rnn_states_out"] if recurrent else [])
    assert all(i.shape[0] == "batch" for i in session.get_inputs())  # dynamic batch axis
    if isinstance(action_space, gym.spaces.Box):  # actions are the Gaussian's mean: logits' first half
        x = policy.example_inputs(3, seed=5)
        actions, logits = run_file(path, "onnx", policy.input_names, x)[:2]
        np.testing.assert_array_equal(actions, logits[:, : action_space.shape[0]])


def test_torchscript_matches_torch(tmp_path):
    obs_space, action_space, flags = CASES["mlp_lstm_continuous"]
    _export_and_check(
        tmp_path, _model(obs_space, action_space, normalize_input=True, **flags), obs_space, "torchscript"
    )
    obs_space, action_space, flags = CASES["conv_atari"]
    _export_and_check(
        tmp_path, _model(obs_space, action_space, normalize_input=True, **flags), obs_space, "torchscript"
    )


def test_obs_normalisation_is_in_the_file(tmp_path):
    """The file fed raw observations equals the same weights without a normaliser fed
    observations normalised by hand, ((x - mean) / sqrt(var + 1e-5)) clipped to ±5 (Sample
    Factory 2's / rl_games' RunningMeanStd formula)."""
    flags = dict(encoder_type="mlp", encoder_subtype="mlp", use_rnn=False)
    with_norm = _model(VEC, gym.spaces.Discrete(4), normalize_input=True, **flags)
    without = _model(VEC, gym.spaces.Discrete(4), normalize_input=False, **flags)
    weights = {k: v for k, v in with_norm.state_dict().items() if not k.startswith("obs_normalizer")}
    without.load_state_dict(weights)
    policy = export_model(with_norm, VEC, "onnx", tmp_path / "p.onnx")
    obs = 4.0 * np.random.default_rng(0).standard_normal((9, 5)).astype(np.float32)  # some beyond the clip
    actions, logits, values = run_file(
        tmp_path / "p.onnx", "onnx", policy.input_names, [torch.as_tensor(obs)]
    )
    n = with_norm.obs_normalizer
    mean, var = n.mean.numpy(), n.var.numpy()
    by_hand = np.clip((obs - mean) / np.sqrt(var + 1e-5), -5, 5).astype(np.float32)
    ref = without.act(torch.as_tensor(by_hand), torch.zeros(9, 0), deterministic=True)
    np.testing.assert_allclose(values, ref.values.numpy(), atol=TOL)
    np.testing.assert_allclose(logits, ref.logits.numpy(), atol=TOL)


def test_image_normalisation_with_obs_scale_is_in_the_file(tmp_path):
    """Images: ((x / 255 - mean) / sqrt(var + 1e-5)) clipped to ±5, per pixel (Sample Factory 2's
    obs_scale then normalize_input)."""
    space = gym.spaces.Box(0, 255, (1, 12, 12), np.uint8)
    flags = dict(encoder_type="mlp", encoder_subtype="mlp", use_rnn=False)
    with_norm = _model(space, gym.spaces.Discrete(2), normalize_input=True, obs_scale=255.0, **flags)
    without = _model(space, gym.spaces.Discrete(2), normalize_input=False, obs_scale=1.0, **flags)
    without.load_state_dict(
        {k: v for k, v in with_norm.state_dict().items() if not k.startswith("obs_normalizer")}
    )
    policy = export_model(with_norm, space, "onnx", tmp_path / "p.onnx")
    obs = np.stack([space.sample() for _ in range(4)])
    _, _, values = run_file(tmp_path / "p.onnx", "onnx", policy.input_names, [torch.as_tensor(obs)])
    n = with_norm.obs_normalizer
    by_hand = np.clip((obs / 255.0 - n.mean.numpy()) / np.sqrt(n.var.numpy() + 1e-5), -5, 5).astype(
        np.float32
    )
    ref = without.act(torch.as_tensor(by_hand), torch.zeros(4, 0), deterministic=True)
    np.testing.assert_allclose(values, ref.values.numpy(), atol=TOL)


def test_masked_discrete_never_chooses_an_illegal_action(tmp_path):
    space = gym.spaces.Dict(
        {"observation": VEC, "action_mask": gym.spaces.Box(0, 1, (7,), np.int8)}  # surge's mask entry
    )
    model = _model(
        space,
        gym.spaces.Discrete(7),
        normalize_input=True,
        encoder_type="mlp",
        encoder_subtype="mlp",
        use_rnn=True,
    )
    policy, path = _export_and_check(tmp_path, model, space)
    assert policy.input_names == ["obs", "action_mask", "rnn_states_in"]
    b = 200
    rng = np.random.default_rng(3)
    mask = (rng.random((b, 7)) < 0.3).astype(np.int8)
    mask[np.arange(b), rng.integers(0, 7, b)] = 1  # at least one legal action per row
    obs = rng.standard_normal((b, 5)).astype(np.float32)
    rnn = rng.standard_normal((b, model.rnn_state_size)).astype(np.float32)
    actions, logits, *_ = run_file(
        path, "onnx", policy.input_names, [torch.as_tensor(x) for x in (obs, mask, rnn)]
    )
    assert mask[np.arange(b), actions].all()
    assert (logits[mask == 0] <= -1e7).all()
    # the unmasked best action is often illegal: the mask, not luck, keeps the choice legal
    unmasked = run_file(
        path, "onnx", policy.input_names, [torch.as_tensor(x) for x in (obs, np.ones_like(mask), rnn)]
    )[0]
    assert (mask[np.arange(b), unmasked] == 0).sum() > 50


def test_dict_observations_are_named_inputs(tmp_path):
    space = gym.spaces.Dict({"pos": VEC, "vel": gym.spaces.Box(-1.0, 1.0, (2,), np.float32)})
    model = _model(
        space,
        gym.spaces.Discrete(3),
        normalize_input=True,
        encoder_type="mlp",
        encoder_subtype="mlp",
        use_rnn=False,
    )
    policy, _ = _export_and_check(tmp_path, model, space)
    assert policy.input_names == ["obs_pos", "obs_vel"]


def test_unknown_format_is_refused(tmp_path):
    obs_space, action_space, flags = CASES["mlp_discrete"]
    with pytest.raises(ConfigError, match="--format: unknown format 'tflite'"):
        export_model(_model(obs_space, action_space, **flags), obs_space, "tflite", tmp_path / "p")
