"""Where Sample Factory's PPO (surge's defaults) and rl_games' differ, as flags, on real CartPole
batches against rl_games 1.6.5's own code: `--obs_normalizer_update=minibatch` (its
`RunningMeanStd` updated by every training forward pass) and `--normalize_advantage_over=batch`
(its `prepare_dataset` normalising the batch's advantages once). The ratio clip
(`--ppo_clip_lower=symmetric`) is checked against `common_losses.actor_loss` in
tests/unit/test_ppo_loss.py."""

import pytest
import torch
from serial_batches import first_batch

from surge.algorithms.appo import learner as learner_module
from surge.app.resolve import parse_cfg
from surge.errors import ConfigError
from surge.runtime.components import build_components

EPOCHS = 3


def _components(tmp_path, *extra):
    cfg = parse_cfg(
        [
            "--env=CartPole-v1",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--worker_num_splits=1",
            "--rollout=16",
            "--batch_size=16",
            f"--ppo_epochs={EPOCHS}",
            "--with_vtrace=False",
            "--use_rnn=False",
            "--recurrence=1",
            "--seed=3",
            "--encoder_mlp_layers",
            "16",
            "--hidden_size=16",
            *extra,
        ]
    )
    return build_components(cfg)


@pytest.mark.parametrize("update", ["minibatch", "batch"])
def test_obs_normalizer_statistics_match_rl_games_running_mean_std(tmp_path, update):
    """minibatch: after a batch trained for EPOCHS epochs, surge's statistics equal those of rl_games'
    RunningMeanStd (training mode) fed the same observations EPOCHS times; batch: fed once."""
    rms = pytest.importorskip("rl_games.algos_torch.running_mean_std")
    c = _components(tmp_path, "--normalize_input=True", f"--obs_normalizer_update={update}")
    sampler, slots = first_batch(c)
    b = c.learner.prepare_batch(slots)
    obs = b["obs"][:-1].reshape(-1, 4).double().clone()  # [T*N, 4], every step valid (one policy)
    assert bool(b["is_active"].all())
    c.learner.train_batch(b)
    ref = rms.RunningMeanStd((4,)).double().train()
    for _ in range(EPOCHS if update == "minibatch" else 1):
        ref(obs)
    norm = c.model.obs_normalizer
    torch.testing.assert_close(norm.count, ref.count)
    # surge takes a batch's moments in float32 (`RunningMeanStd.update`; rl_games here in float64):
    # a mean near 0 then differs by float32 rounding of the observations' scale, not of the mean's
    f32 = 4 * torch.finfo(torch.float32).eps * float(obs.abs().max())
    torch.testing.assert_close(norm.mean, ref.running_mean, rtol=1e-6, atol=f32)
    torch.testing.assert_close(norm.var, ref.running_var, rtol=1e-5, atol=f32**2)
    sampler.release(slots)
    c.close()


@pytest.mark.parametrize("over", ["batch", "minibatch"])
def test_advantages_normalised_over_the_batch_or_each_minibatch(tmp_path, monkeypatch, over):
    """batch: the advantages the loss reads in an epoch are the batch's GAE advantages standardised
    once (rl_games' a2c_common.prepare_dataset: (a - mean) / (std + 1e-8)), so single minibatches
    are not standardised; minibatch: each minibatch's are."""
    c = _components(
        tmp_path, "--normalize_input=False", "--normalize_returns=False", f"--normalize_advantage_over={over}"
    )
    seen = []
    loss = learner_module.ppo_loss

    def record(dist, behavior_dist, actions, blp, advantages, *args, **kwargs):
        seen.append(advantages.detach().clone())
        return loss(dist, behavior_dist, actions, blp, advantages, *args, **kwargs)

    monkeypatch.setattr(learner_module, "ppo_loss", record)
    sampler, slots = first_batch(c)
    b = c.learner.prepare_batch(slots)
    bc = {k: v.clone() if isinstance(v, torch.Tensor) else v for k, v in b.items()}
    c.learner._mask_stale(bc)
    raw, _ = c.learner._gae_targets(bc)  # [T, N], before any step
    c.learner.train_batch(b)
    per_epoch = len(seen) // EPOCHS
    assert per_epoch == raw.numel() // 16
    first_epoch = torch.cat(seen[:per_epoch])
    if over == "batch":
        ref = (raw - raw.mean()) / (raw.std(unbiased=False) + 1e-8)
        torch.testing.assert_close(first_epoch.sort().values, ref.flatten().sort().values)
        assert max(abs(float(a.mean())) for a in seen) > 0.05  # a minibatch is not standardised
    else:
        for a in seen:
            assert abs(float(a.mean())) < 1e-5 and float(a.std(unbiased=False)) == pytest.approx(
                1.0, abs=1e-4
            )
    sampler.release(slots)
    c.close()


@pytest.mark.parametrize(
    "flags, field",
    [
        (["--with_vtrace=True", "--normalize_advantage_over=batch"], "normalize_advantage_over"),
        (["--normalize_input=False", "--obs_normalizer_update=minibatch"], "obs_normalizer_update"),
    ],
)
def test_combinations_that_cannot_act_are_refused_naming_the_flag(tmp_path, flags, field):
    with pytest.raises(ConfigError, match=field):
        parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", "--serial_mode=True", *flags])
