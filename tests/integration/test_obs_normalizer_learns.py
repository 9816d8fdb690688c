"""The observation normaliser learns in the real learner path: after the learner trained on
CartPole batches, the running mean and variance are those of every observation it trained on, as
numpy computes them over the lot, combined with the normaliser's prior (one pseudo-sample of mean
0 and variance 1) by Chan et al.'s parallel formula. The same for the central value's state
normaliser (`--central_value_normalize_input`, `occluded_payout`'s state)."""

import numpy as np
import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.learning.central_value import CV_NAME
from surge.runtime.components import build_components
from surge.runtime.serial import SerialSampler

T, N = 8, 4  # rollout, envs: one batch of 32 steps


def _with_prior(x: np.ndarray, prior_count: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """numpy's mean and (population) variance of `x` `[M, D]`, folded with `prior_count`
    pseudo-samples of mean 0 and variance 1 (Chan et al. 1979: M2 = M2_a + M2_b + delta^2 n_a n_b / n)."""
    m, n = x.shape[0], prior_count
    mean, var = x.mean(0), x.var(0)
    total = m + n
    return mean * m / total, (n * 1.0 + m * var + mean**2 * m * n / total) / total


@pytest.mark.parametrize("update", ["batch", "minibatch"])
def test_obs_normalizer_statistics_are_numpys_over_the_trained_observations(tmp_path, update):
    cfg = parse_cfg(
        [
            "--env=CartPole-v1",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            f"--num_envs_per_worker={N}",
            f"--rollout={T}",
            f"--batch_size={T * N}",
            "--num_batches_per_iteration=1",
            "--ppo_epochs=1",  # minibatch: each observation folded in once
            "--normalize_input=True",
            f"--obs_normalizer_update={update}",
            "--use_rnn=False",
            "--recurrence=1",
            "--encoder_mlp_layers",
            "16",
            "--seed=0",
        ]
    )
    c = build_components(cfg)
    try:
        sampler = SerialSampler(c)
        norm = c.learner.model.obs_normalizer
        seen = []
        for _ in range(3):
            slots = None
            while slots is None:
                sampler.step()
                slots = sampler.take()
            seen.append(c.buffers.obs[slots, :T].reshape(-1, 4).double().numpy())  # not the bootstrap step
            c.learner.train(slots)
            sampler.release(slots)
        x = np.concatenate(seen)
        assert x.shape == (3 * T * N, 4)
        mean, var = _with_prior(x)
        np.testing.assert_allclose(norm.mean.numpy(), mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(norm.var.numpy(), var, rtol=1e-5, atol=1e-6)
        assert float(norm.count) == 1 + x.shape[0]
        # and the model normalises with them: what acting sees is (obs - mean) / sqrt(var + eps)
        obs = torch.from_numpy(x[:5]).float()
        expected = np.clip((x[:5] - mean) / np.sqrt(var + norm.epsilon), -norm.clip, norm.clip)
        np.testing.assert_allclose(norm(obs).numpy(), expected, rtol=1e-4, atol=1e-5)
    finally:
        c.close()


def test_central_value_state_normalizer_statistics_are_numpys_over_the_trained_states(tmp_path):
    cfg = parse_cfg(
        ["--env=occluded_payout", f"--train_dir={tmp_path}", "--serial_mode=True", "--num_workers=1",
         f"--num_envs_per_worker={N}", "--worker_num_splits=1", f"--rollout={T}", f"--batch_size={T * N}",
         "--central_value=True", "--central_value_normalize_input=True", "--seed=1",
         "--decorrelate_envs_on_one_worker=False"]
    )  # fmt: skip
    c = build_components(cfg)
    try:
        sampler = SerialSampler(c)
        norm = c.learner.learner_modules[CV_NAME].normalizer
        seen = []
        for _ in range(2):
            slots = None
            while slots is None:
                sampler.step()
                slots = sampler.take()
            b = c.learner.prepare_batch(slots)
            states = b["cv_state"][:T]  # [T, N, S]: the batch's own steps, not the bootstrap one
            seen.append(states.reshape(-1, states.shape[-1]).double().numpy())
            c.learner.train_batch(b)
            sampler.release(slots)
        x = np.concatenate(seen)
        mean, var = _with_prior(x)
        np.testing.assert_allclose(norm.mean.numpy(), mean, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(norm.var.numpy(), var, rtol=1e-5, atol=1e-6)
        assert float(norm.count) == 1 + x.shape[0]
    finally:
        c.close()
