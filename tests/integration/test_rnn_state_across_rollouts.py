"""The recurrent state across rollouts: the hidden state a slot starts its rollout k + 1 with is the
state the model returned on the last step of rollout k (zero only where that step ended the
episode), in the real rollout worker (serial sampler, `memory_cue`, GRU and LSTM).

`test_rnn_state_protocol.py` checks the steps within one rollout; this one checks the hand-over
between rollouts (`TrajectoryBuffers.start_next`), which a rollout-local check never reaches."""

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.runtime.components import build_components
from surge.runtime.serial import SerialSampler

T = 4  # the rollout; memory_cue's episodes with --memory_delay=1 last 3 steps


@pytest.mark.parametrize("rnn_type", ["gru", "lstm"])
def test_hidden_state_is_carried_from_one_rollout_to_the_next(tmp_path, rnn_type):
    cfg = parse_cfg(
        [
            "--env=memory_cue",
            "--memory_delay=1",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            f"--rollout={T}",
            f"--recurrence={T}",
            "--batch_size=64",
            "--use_rnn=True",
            f"--rnn_type={rnn_type}",
            "--hidden_size=8",
            "--seed=0",
            "--decorrelate_envs_on_one_worker=False",
        ]
    )
    c = build_components(cfg)
    try:
        sampler = SerialSampler(c)
        split = c.workers[0].splits[0]
        buf, model = c.buffers, c.model
        carried = zeroed = 0
        for _ in range(3):  # three rollouts: two hand-overs
            old = split.slots.clone()
            for _ in range(T):
                sampler.step()
            new = split.slots
            assert not torch.equal(old, new)  # the split moved on to fresh slots
            # the reference: the model's own next state from the last step of the old rollout
            expected = model.act(buf.obs[old, T - 1], buf.rnn_states[old, T - 1]).rnn_states
            done = (buf.terminated | buf.truncated)[old, T - 1]
            for n in range(len(old)):
                start = buf.rnn_states[new[n], 0]
                if done[n]:  # a new episode starts from a zero state
                    assert torch.all(start == 0), n
                    zeroed += 1
                else:
                    torch.testing.assert_close(start, expected[n], msg=f"agent {n}")
                    assert start.abs().max() > 1e-3  # a real state, not zeros
                    carried += 1
        assert carried >= 4 and zeroed >= 1  # both cases met (episodes end on global step 11)
    finally:
        c.close()
