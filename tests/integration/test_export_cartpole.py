"""`surge export` end to end (issue 21, item 4): CartPole trained for 3000 env steps in the serial
placement, exported with `surge export --check` as ONNX and TorchScript; the check passes and the
ONNX file, run by onnxruntime alone, plays CartPole's observations to actions."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import onnxruntime as ort
import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.cli import main as surge_main


@pytest.mark.slow
def test_trained_cartpole_exports_and_the_check_passes(tmp_path, capsys):
    cfg = parse_cfg(
        [
            "--env=cartpole",
            "--experiment=exp",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--seed=0",
            "--train_for_env_steps=3000",
            "--normalize_input=True",
            "--use_rnn=True",
            "--hidden_size=32",
            "--encoder_mlp_layers",
            "32",
            "--num_torch_threads=1",
        ]
    )
    assert train(cfg) == "done"
    out = tmp_path / "cartpole.onnx"
    argv = [
        "export",
        "--experiment=exp",
        f"--train_dir={tmp_path}",
        "--format=onnx",
        f"--output={out}",
        "--check",
    ]
    assert surge_main(argv) == 0
    printed = capsys.readouterr().out
    assert "check passed" in printed and "inputs:  obs, rnn_states_in" in printed
    # the file alone: observations -> actions, the recurrent state carried by the caller
    session = ort.InferenceSession(str(out), providers=["CPUExecutionProvider"])
    meta = session.get_modelmeta().custom_metadata_map
    assert meta["surge_env"] == "cartpole" and meta["surge_algo"] == "APPO"
    assert (meta["clip_actions"], meta["rescale_actions"], meta["zero_rnn_on_done"]) == (
        "True",
        "False",
        "True",
    )
    assert meta["inputs"] == '["obs", "rnn_states_in"]' and "checkpoint_p0" in meta["surge_checkpoint"]
    env = gym.make("CartPole-v1")
    obs, _ = env.reset(seed=0)
    state = np.zeros((1, session.get_inputs()[1].shape[1]), np.float32)
    for _ in range(20):
        actions, _, values, state = session.run(
            None, {"obs": obs[None].astype(np.float32), "rnn_states_in": state}
        )
        assert actions.shape == (1,) and actions[0] in (0, 1) and np.isfinite(values).all()
        obs, _, term, trunc, _ = env.step(int(actions[0]))
        if term or trunc:
            break
    # TorchScript, default output path inside the experiment folder
    assert (
        surge_main(
            ["export", "--experiment=exp", f"--train_dir={tmp_path}", "--format=torchscript", "--check=True"]
        )
        == 0
    )
    assert (tmp_path / "exp" / "export" / "policy_p0.pt").is_file()
    assert "check passed" in capsys.readouterr().out
