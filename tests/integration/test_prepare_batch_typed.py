"""`prepare_batch` of APPO and A2C gives a `TrajectoryBatch` whose fields are the buffers' rows of
its slots, time-major, with the shapes and dtypes of its docstring."""

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.data.trajectory_batch import TrajectoryBatch
from surge.runtime.components import build_components
from tests.integration.serial_batches import first_batch


@pytest.mark.parametrize("algo", ["APPO", "A2C"])
def test_prepare_batch_is_the_buffers_rows_time_major(tmp_path, algo):
    cfg = parse_cfg(
        [
            f"--algo={algo}",
            "--env=CartPole-v1",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--rollout=8",
            "--batch_size=32",
            "--use_rnn=False",
            "--recurrence=1",
            "--encoder_type=mlp",
            "--encoder_mlp_layers",
            "16",
        ]
    )
    c = build_components(cfg)
    try:
        _, slots = first_batch(c)
        buf = c.learner.buffers
        b = c.learner.prepare_batch(slots)
        assert isinstance(b, TrajectoryBatch)
        T, N = cfg.rollout, len(slots)
        # reference: each slot's row of each buffer, one by one, stacked on dim 1
        rows = lambda t: torch.stack([t[int(s)] for s in slots], dim=1)  # noqa: E731
        assert torch.equal(b.obs, rows(buf.obs)) and b.obs.shape == (T + 1, N, 4)
        assert torch.equal(b.actions, rows(buf.actions))
        assert torch.equal(b.old_values, rows(buf.values)) and b.old_values.dtype == torch.float32
        assert torch.equal(b.terminated, rows(buf.terminated).float()) and b.terminated.shape == (T, N)
        assert b.truncated.dtype == torch.float32 and b.is_active.dtype == torch.bool
        assert torch.equal(b.behavior_version, rows(buf.policy_version))
        assert b.rnn_states.shape[:2] == (T + 1, N) and b.rewards.shape == (T, N)
        assert b.acting_policy is None and b.extra == {}  # one policy; every buffer field has its place
        if algo == "APPO":
            assert torch.equal(b.logits, rows(buf.action_logits)) and b.logits.shape[:2] == (T, N)
            assert torch.equal(b.behavior_log_probs, rows(buf.behavior_log_probs))
    finally:
        c.close()
