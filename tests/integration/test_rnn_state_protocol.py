"""The recurrent state through sampling: what acting stores as the hidden state of step t + 1 is
the state the model returned on step t, except after an episode end, where it is zero.

Collected with the serial sampler on `memory_cue` with a 1-step delay (3-step episodes, so every
rollout crosses several episode ends), then checked step by step against the model itself."""

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.runtime.components import build_components
from surge.runtime.serial import SerialSampler

STEPS = 10  # fewer than the rollout: nothing leaves the buffers


@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
def test_hidden_state_is_carried_between_steps_and_zeroed_after_episode_ends(tmp_path, rnn_type):
    cfg = parse_cfg(
        [
            "--env=memory_cue",
            "--memory_delay=1",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--rollout=16",
            "--recurrence=16",
            "--batch_size=64",
            "--use_rnn=True",
            f"--rnn_type={rnn_type}",
            "--hidden_size=8",
            "--seed=0",
            "--decorrelate_envs_on_one_worker=False",
        ]
    )
    c = build_components(cfg)
    sampler = SerialSampler(c)
    for _ in range(STEPS):
        sampler.step()
    buf, model = c.buffers, c.model
    used = ~torch.isnan(buf.obs[:, STEPS]).any(dim=-1)  # slots written up to step STEPS
    assert int(used.sum()) == 4
    obs, states = buf.obs[used], buf.rnn_states[used]  # [4, T+1, 3], [4, T+1, S]
    done = (buf.terminated | buf.truncated)[used]
    assert done[:, :STEPS].sum() >= 8  # 3-step episodes: three ends per agent in 10 steps
    assert torch.all(states[:, 0] == 0)
    carried = 0
    for t in range(STEPS):
        expected = model.act(obs[:, t], states[:, t]).rnn_states
        for n in range(len(obs)):
            if done[n, t]:  # the next step starts a new episode from a zero state
                assert torch.all(states[n, t + 1] == 0), (n, t)
            else:
                torch.testing.assert_close(states[n, t + 1], expected[n], msg=f"agent {n}, step {t}")
                assert states[n, t + 1].abs().max() > 1e-3  # a real state, not zeros
                carried += 1
    assert carried >= 20
    c.close()
