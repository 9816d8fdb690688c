"""rl_games' `ppo_cartpole_masked_velocity_rnn.yaml` as surge runs it: the env (rl_games'
`MaskVelocityWrapper` over CartPole-v1 as surge's named wrapper) and the network block (separate
actor and critic, a 2-layer LSTM reading the MLP's output beside the observation, a LayerNorm on its
output; the block's MLP normalization, which rl_games 1.6.5 does not build) against rl_games 1.6.5's
own code."""

from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
import rl_games
import torch
from rl_games.algos_torch.network_builder import A2CBuilder
from rl_games.common.wrappers import MaskVelocityWrapper

from surge.app.rl_games.translation import translate
from surge.cfg.config import Config
from surge.cfg.yaml_files import read_yaml
from surge.envs.masked_velocity import MaskCartPoleVelocity, MaskVelocity
from surge.envs.registry import resolve_wrapper
from surge.models.actor_critic import ActorCritic

FILE = Path(rl_games.__file__).parent / "configs" / "ppo_cartpole_masked_velocity_rnn.yaml"


def test_the_file_translates_to_cartpole_with_the_wrapper_and_the_network_flags():
    v = translate(read_yaml(str(FILE)), FILE.name).values
    assert v["env"] == "CartPole-v1"
    assert v["env_wrappers"] == ["surge.envs.masked_velocity:MaskCartPoleVelocity"]
    assert resolve_wrapper(v["env_wrappers"][0]) is MaskCartPoleVelocity
    # the file's network block: rnn lstm 2 layers of 64 with concat_input and layer_norm, separate: True
    assert (v["rnn_concat_input"], v["rnn_layer_norm"]) == (True, True)
    assert (v["rnn_type"], v["rnn_num_layers"], v["hidden_size"]) == ("lstm", 2, 64)
    assert v["actor_critic_share_weights"] is False
    assert v["score_to_win"] == 500.0


def test_the_wrapper_masks_as_rl_games_does():
    ours = MaskCartPoleVelocity(gym.make("CartPole-v1"))
    ref = MaskVelocityWrapper(gym.make("CartPole-v1"), "CartPole-v1")
    obs, _ = ours.reset(seed=3)
    raw = ours.unwrapped.state  # the unmasked state behind the observation
    assert np.any(np.asarray(raw)[[1, 3]] != 0)
    np.testing.assert_allclose(obs, ref.observation(np.asarray(raw, dtype=np.float32)), rtol=0, atol=0)
    for _ in range(5):
        obs, *_ = ours.step(ours.action_space.sample())
        np.testing.assert_array_equal(obs[[1, 3]], 0.0)
        np.testing.assert_allclose(obs[[0, 2]], np.asarray(ours.unwrapped.state, dtype=np.float32)[[0, 2]])
    assert obs.dtype == ours.observation_space.dtype


def test_a_task_without_a_mask_is_refused():
    with pytest.raises(ValueError, match="no velocity mask"):
        MaskVelocity(gym.make("Acrobot-v1"), "Acrobot-v1")


def _rl_games_params():
    # the file's block, with its normalisation keys where rl_games reads them too
    return {
        "separate": True,
        "normalization": "layer_norm",
        "space": {"discrete": {}},
        "mlp": {
            "units": [16, 16],
            "activation": "relu",
            "normalization": "layer_norm",
            "norm_only_first_layer": True,
            "initializer": {"name": "default"},
        },
        "rnn": {
            "name": "lstm",
            "units": 8,
            "layers": 2,
            "before_mlp": False,
            "concat_input": True,
            "layer_norm": True,
        },
    }


#: rl_games' parameter names -> surge's (the encoder wrapped in ConcatInput, the RNN's LayerNorm
#: as the post-core layer)
NAMES = [
    (r"^actor_mlp\.", "encoder.inner.net."),
    (r"^critic_mlp\.", "critic_encoder.inner.net."),
    (r"^a_rnn\.rnn\.", "core.rnn."),
    (r"^c_rnn\.rnn\.", "critic_core.rnn."),
    (r"^a_layer_norm\.", "post_core.0."),
    (r"^c_layer_norm\.", "critic_post_core.0."),
    (r"^logits\.", "policy_head."),
    (r"^value\.", "value_head."),
]


def test_mlp_normalization_is_a_note_as_rl_games_builds_none():
    data = read_yaml(str(FILE))
    notes = translate(data, FILE.name).notes
    assert any(n.startswith("params.network.mlp.normalization: no effect") for n in notes)
    assert any(n.startswith("params.network.mlp.norm_only_first_layer: no effect") for n in notes)
    data["params"]["network"]["normalization"] = "layer_norm"
    assert any(
        n.startswith("params.network.normalization: no effect") for n in translate(data, FILE.name).notes
    )


def test_same_weights_same_outputs_as_rl_games():
    import re

    torch.manual_seed(0)
    ref = A2CBuilder.Network(_rl_games_params(), actions_num=2, input_shape=(4,), num_seqs=5)
    cfg = Config()
    cfg.encoder_mlp_layers, cfg.hidden_size, cfg.nonlinearity = [16, 16], 8, "relu"
    cfg.actor_critic_share_weights = False
    cfg.use_rnn, cfg.rnn_type, cfg.rnn_num_layers = True, "lstm", 2
    cfg.rnn_layer_norm, cfg.rnn_concat_input = True, True
    ours = ActorCritic(cfg, gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2))
    with torch.no_grad():  # random LayerNorm affine parameters, so they take part in the check
        for name, p in ref.named_parameters():
            if "layer_norm" in name:
                p.normal_()
    state = {}
    for k, v in ref.state_dict().items():
        for pattern, repl in NAMES:
            k = re.sub(pattern, repl, k)
        state[k] = v
    ours.load_state_dict(state, strict=True)
    obs = 3 * torch.randn(5, 4)
    states = torch.randn(5, ours.rnn_state_size)
    out = ours.act(obs, states)
    # surge's state of one stream is [h of each layer, c of each layer]; rl_games' (h, c) [layers, B, units]
    a, c = states[:, :32].view(5, 2, 2, 8), states[:, 32:].view(5, 2, 2, 8)
    feed = {
        "obs": obs,
        "seq_length": 1,
        "rnn_states": tuple(s[:, i].transpose(0, 1).contiguous() for s in (a, c) for i in (0, 1)),
    }
    with torch.no_grad():
        logits, value, ref_states = ref(feed)
    torch.testing.assert_close(out.logits, logits)
    torch.testing.assert_close(out.values, value.squeeze(-1))
    got = torch.cat(
        [
            torch.stack(ref_states[:2], 1).permute(2, 1, 0, 3).reshape(5, -1),
            torch.stack(ref_states[2:], 1).permute(2, 1, 0, 3).reshape(5, -1),
        ],
        dim=1,
    )
    torch.testing.assert_close(out.rnn_states, got)


def test_without_max_epochs_the_run_has_no_budget_and_stops_on_score_to_win(tmp_path):
    """rl_games' `max_epochs` and `max_frames` default to -1, no limit (a2c_common.py,
    `A2CBase.__init__`: `self.config.get('max_epochs', -1)`), so the file trains until score_to_win;
    surge's 1M default for vector observations stopped it with a mean return of 483."""
    from surge.app.resolve import parse_cfg

    cfg = parse_cfg([f"--cfg={FILE}", f"--train_dir={tmp_path}"])
    assert cfg.train_for_env_steps == int(1e10) and cfg.score_to_win == 500.0
    cfg = parse_cfg([f"--cfg={FILE}", f"--train_dir={tmp_path}", "--train_for_env_steps=5000"])
    assert cfg.train_for_env_steps == 5000
