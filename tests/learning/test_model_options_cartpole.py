"""Learning test of the network options of issue 21: a separate critic (its own encoder, GRU and
RNN state), SiLU and D2RL together train CartPole-v1 in the serial placement."""

import numpy as np
import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.enjoy import enjoy

# fmt: off
HYPERPARAMS = [
    "--serial_mode=True", "--num_workers=2", "--num_envs_per_worker=8", "--train_for_env_steps=30000",
    "--seed=1", "--encoder_type=mlp", "--encoder_subtype=mlp", "--encoder_mlp_layers", "64", "64",
    "--hidden_size=64", "--use_rnn=True", "--recurrence=16", "--rollout=16", "--with_vtrace=False",
    "--batch_size=256", "--num_batches_per_iteration=1", "--ppo_epochs=4", "--learning_rate=1e-3",
    "--max_grad_norm=0.5", "--exploration_loss_coeff=0.01", "--num_torch_threads=1",
    "--actor_critic_share_weights=False", "--nonlinearity=silu", "--d2rl=True",
]
# fmt: on


@pytest.mark.slow
def test_separate_actor_critic_with_silu_and_d2rl_trains_cartpole(tmp_path):
    args = ["--env=CartPole-v1", "--experiment=cp", f"--train_dir={tmp_path}"]
    assert train(parse_cfg([*args, *HYPERPARAMS])) == "done"
    checkpoint = sorted((tmp_path / "cp" / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    weights = torch.load(checkpoint, weights_only=True)["model"]
    assert "critic_core.rnn.weight_hh_l0" in weights and "encoder.net.linears.1.weight" in weights
    ev = parse_cfg(
        [*args, "--max_num_episodes=5", "--no_render=True", "--eval_deterministic=True"], evaluation=True
    )
    returns = enjoy(ev)["returns"]
    # a uniformly random policy averages about 22 on CartPole-v1
    assert np.mean(returns) >= 150, returns
