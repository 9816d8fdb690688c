"""rl_games' PPO options in the learner and the rollout worker, on real batches of tiny envs: the
KL-adaptive learning rate (its rule replayed on the KLs the learner measured, its direction, its
state in checkpoints and under a new learning_rate), value_bootstrap under GAE and V-trace,
reward_shift, zero_rnn_on_done in acting and learning, the bounds loss, rescaled actions."""

import gymnasium as gym
import numpy as np
import pytest
import torch
from serial_batches import first_batch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.envs.registry import register_env
from surge.errors import ConfigError
from surge.runtime.components import build_components
from surge.runtime.serial import SerialSampler


class _OneStep(gym.Env):
    """One-step episodes ending in truncation (`truncate`) or termination; reward = action (Discrete)
    or -sum(a^2) (Box, `box=True`). Remembers the last action it got."""

    def __init__(self, truncate=False, box=False):
        self.truncate, self.box = truncate, box
        self.observation_space = gym.spaces.Box(0, 1, (2,), np.float32)
        self.action_space = gym.spaces.Box(0.0, 10.0, (2,), np.float32) if box else gym.spaces.Discrete(2)
        self.last_action = None

    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        return np.ones(2, np.float32), {}

    def step(self, action):
        self.last_action = np.array(action, dtype=np.float32)
        r = -float(np.sum(np.square(action))) if self.box else float(action)
        return np.ones(2, np.float32), r, not self.truncate, self.truncate, {}


register_env("ppo_opts_bandit", lambda name, cfg, render_mode=None: _OneStep())
register_env("ppo_opts_trunc", lambda name, cfg, render_mode=None: _OneStep(truncate=True))
register_env("ppo_opts_box", lambda name, cfg, render_mode=None: _OneStep(box=True))

FF = ["--with_vtrace=False", "--use_rnn=False", "--recurrence=1"]
# a batch of the 4 envs' trajectories (32 samples) in 4 minibatches of 8 (`--batch_size=8`)
FOUR_MB = ["--num_batches_per_iteration=4"]


def _components(tmp_path, *extra, env="ppo_opts_bandit"):
    cfg = parse_cfg(
        [
            f"--env={env}",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--worker_num_splits=1",
            "--rollout=8",
            "--batch_size=8",
            "--learning_rate=0.001",
            "--seed=1",
            "--encoder_type=mlp",
            "--encoder_mlp_layers",
            "16",
            "--hidden_size=16",
            "--normalize_returns=False",
            "--normalize_input=False",
            "--reward_scale=1",
            *extra,
        ]
    )
    return cfg, build_components(cfg)


def _naive_rule(lr, kl, thr, lo=1e-6, hi=1e-2):
    if kl > 2 * thr:
        return max(lr / 1.5, lo)
    if kl < 0.5 * thr:
        return min(lr * 1.5, hi)
    return lr


def _record_kls(learner):
    """Wraps the learner's `_step` and `adapt_learning_rate`: the per-minibatch KLs it measured and
    the KLs the rule was applied to."""
    step_kls, applied = [], []
    step, adapt = learner._step, learner.adapt_learning_rate

    def rec_step(mb, vtrace_mode):
        out = step(mb, vtrace_mode)
        step_kls.append(float(out["kl"]))
        return out

    def rec_adapt(kl):
        applied.append(kl)
        return adapt(kl)

    learner._step, learner.adapt_learning_rate = rec_step, rec_adapt
    return step_kls, applied


@pytest.mark.parametrize("schedule", ["kl_adaptive_minibatch", "kl_adaptive_epoch"])
@pytest.mark.parametrize("threshold", [1e3, 1e-9])
def test_kl_adaptive_rate_follows_rl_games_rule_on_a_real_batch(tmp_path, schedule, threshold):
    cfg, c = _components(
        tmp_path,
        *FF,
        *FOUR_MB,
        f"--lr_schedule={schedule}",
        f"--lr_schedule_kl_threshold={threshold}",
        "--ppo_epochs=2",
    )
    sampler, slots = first_batch(c)
    step_kls, applied = _record_kls(c.learner)
    stats = c.learner.train(slots)
    assert len(step_kls) == 2 * 4  # 2 epochs of 32 samples in minibatches of 8
    if schedule == "kl_adaptive_minibatch":
        assert applied == step_kls
    else:  # one update per epoch, on the mean of its minibatches' KLs
        assert applied == pytest.approx([np.mean(step_kls[:4]), np.mean(step_kls[4:])])
    lr = 1e-3
    for kl in applied:
        lr = _naive_rule(lr, kl, threshold)
    assert c.learner.optimizer.param_groups[0]["lr"] == pytest.approx(lr)
    assert stats["lr"] == pytest.approx(lr) and "kl" in stats
    # the direction: a KL far below the target raises the rate, far above lowers it (the first
    # minibatch of a batch is on-policy, KL 0, and raises it once)
    if threshold > 1:
        assert lr == pytest.approx(min(1e-3 * 1.5 ** len(applied), 1e-2))
    elif schedule == "kl_adaptive_minibatch":
        assert step_kls[0] == 0.0 and all(k > 2e-9 for k in step_kls[1:])
        assert lr == pytest.approx(1e-3 * 1.5 / 1.5**7)
    else:
        assert lr == pytest.approx(1e-3 / 1.5**2)
    sampler.release(slots)
    c.close()


def test_kl_adaptive_rate_is_learner_state_and_a_new_learning_rate_restarts_it(tmp_path):
    args = (*FF, *FOUR_MB, "--lr_schedule=kl_adaptive_minibatch", "--lr_schedule_kl_threshold=1000")
    _, c = _components(tmp_path, *args)
    sampler, slots = first_batch(c)
    c.learner.train(slots)
    state = c.learner.state_dict()
    assert (
        state["kl_adaptive_lr"]["lr"] == pytest.approx(1e-3 * 1.5**4)
        and state["kl_adaptive_lr"]["updates"] == 4
    )
    _, fresh = _components(tmp_path / "b", *args)
    assert fresh.learner.optimizer.param_groups[0]["lr"] == pytest.approx(1e-3)
    fresh.learner.load_state_dict(state)  # resume, or PBT's ReplacePolicy copying another policy
    assert fresh.learner.kl_lr.lr == pytest.approx(1e-3 * 1.5**4)
    assert fresh.learner.set_learning_rate(0) == pytest.approx(1e-3 * 1.5**4)
    assert fresh.learner.optimizer.param_groups[0]["lr"] == pytest.approx(1e-3 * 1.5**4)
    fresh.learner.set_hyperparams({"gamma": 0.9})  # another hyper-parameter leaves the rate
    assert fresh.learner.kl_lr.lr == pytest.approx(1e-3 * 1.5**4)
    fresh.learner.set_hyperparams({"learning_rate": 2e-3})  # PBT's or a command's new rate
    assert fresh.learner.kl_lr.lr == 2e-3 and fresh.learner.optimizer.param_groups[0]["lr"] == 2e-3
    sampler.release(slots)
    c.close()
    fresh.close()


@pytest.mark.parametrize("bootstrap", [True, False])
def test_value_bootstrap_under_gae(tmp_path, bootstrap):
    """Every step is truncated (one-step episodes cut by a time limit): the GAE target is the reward
    plus gamma x the step's own behavior value with value_bootstrap, the reward alone without."""
    _, c = _components(tmp_path, *FF, "--gamma=0.9", f"--value_bootstrap={bootstrap}", env="ppo_opts_trunc")
    sampler, slots = first_batch(c)
    b = c.learner.prepare_batch(slots)
    assert bool(((b["truncated"] == 1) & (b["terminated"] == 0)).all())
    c.learner._mask_stale(b)
    _, targets = c.learner._gae_targets(b)
    expected = b["rewards"] + (0.9 * b["old_values"] if bootstrap else 0.0)
    torch.testing.assert_close(targets, expected)
    sampler.release(slots)
    c.close()


@pytest.mark.parametrize("bootstrap", [True, False])
def test_value_bootstrap_under_vtrace(tmp_path, bootstrap):
    """V-trace, one minibatch of the whole on-policy batch: every step is done, so the target is
    the (bootstrapped) reward; the value is the current model's."""
    _, c = _components(
        tmp_path,
        "--with_vtrace=True",
        "--use_rnn=False",
        "--recurrence=8",
        "--batch_size=32",
        "--gamma=0.9",
        f"--value_bootstrap={bootstrap}",
        env="ppo_opts_trunc",
    )
    sampler, slots = first_batch(c)
    b = c.learner.prepare_batch(slots)
    with torch.no_grad():
        _, v = c.model.evaluate(
            b["obs"][:-1], b["rnn_states"][:-1], torch.maximum(b["terminated"], b["truncated"]), 8
        )
    expected = b["rewards"] + (0.9 * v if bootstrap else 0.0)
    stats = c.learner.train_batch(b)
    assert stats["target_mean"] == pytest.approx(float(expected.mean()), rel=1e-5)
    sampler.release(slots)
    c.close()


def test_reward_shift_is_applied_before_scale_and_clip_as_rl_games_shaper(tmp_path):
    from rl_games.common.tr_helpers import DefaultRewardsShaper

    _, c = _components(tmp_path, *FF, "--reward_shift=-0.25", "--reward_scale=4", "--reward_clip=2")
    sampler, slots = first_batch(c)
    raw = c.buffers.gather(slots)["rewards"].transpose(0, 1).clone()  # actions 0/1
    b = c.learner.prepare_batch(slots)
    ref = DefaultRewardsShaper(scale_value=4, shift_value=-0.25, min_val=-2, max_val=2)(raw)
    torch.testing.assert_close(b["rewards"], ref)
    assert set(b["rewards"].unique().tolist()) <= {-1.0, 2.0}
    sampler.release(slots)
    c.close()


def test_reward_log_takes_the_log_after_shift_scale_and_clip_as_rl_games_shaper(tmp_path):
    from rl_games.common.tr_helpers import DefaultRewardsShaper

    _, c = _components(
        tmp_path, *FF, "--reward_shift=1", "--reward_scale=2", "--reward_clip=3", "--reward_log=True"
    )
    sampler, slots = first_batch(c)
    raw = c.buffers.gather(slots)["rewards"].transpose(0, 1).clone()  # actions 0/1
    b = c.learner.prepare_batch(slots)
    ref = DefaultRewardsShaper(scale_value=2, shift_value=1, min_val=-3, max_val=3, log_val=True)(raw)
    torch.testing.assert_close(b["rewards"], ref)
    # the log of what the shaper gives without log_val (rewards 0 and 1: log 2 and log min(4, 3))
    torch.testing.assert_close(b["rewards"].exp(), ((raw + 1) * 2).clamp(-3, 3))
    sampler.release(slots)
    c.close()


def test_reward_log_of_a_reward_that_is_not_positive_stops_before_training(tmp_path):
    """rl_games trains on log(0) = -inf (cartpole's rewards, 0 and 1, minus 1 here: -1 and 0); surge names
    the flags instead of training on it."""
    from surge.errors import EnvError

    _, c = _components(tmp_path, *FF, "--reward_shift=-1", "--reward_log=True")
    sampler, slots = first_batch(c)
    with pytest.raises(EnvError, match="--reward_log: a shaped reward is -?[0-9]+ <= 0.*--reward_shift"):
        c.learner.prepare_batch(slots)
    sampler.release(slots)
    c.close()


def test_exploration_schedule_sets_the_loss_coefficient_of_each_batch(tmp_path):
    _, c = _components(
        tmp_path,
        *FF,
        "--exploration_loss_coeff=0.02",
        "--exploration_loss_schedule=linear_decay",
        "--train_for_env_steps=1000",
    )
    assert c.learner.loss_cfg.exploration_loss_coeff == 0.02  # before any batch
    sampler, slots = first_batch(c)
    c.learner.train_batch(c.learner.prepare_batch(slots), env_frames=750)
    # rl_games' LinearScheduler: min + (start - min) * (1 - 750 / 1000), min 1e-4
    assert c.learner.loss_cfg.exploration_loss_coeff == pytest.approx(1e-4 + (0.02 - 1e-4) * 0.25)
    sampler.release(slots)
    c.close()


def test_reward_clip_low_is_the_lower_end_of_the_clip_as_rl_games_min_val(tmp_path):
    from rl_games.common.tr_helpers import DefaultRewardsShaper

    _, c = _components(
        tmp_path, *FF, "--reward_shift=-0.25", "--reward_scale=4", "--reward_clip=2", "--reward_clip_low=-0.5"
    )
    sampler, slots = first_batch(c)
    raw = c.buffers.gather(slots)["rewards"].transpose(0, 1).clone()  # actions 0/1
    b = c.learner.prepare_batch(slots)
    ref = DefaultRewardsShaper(scale_value=4, shift_value=-0.25, min_val=-0.5, max_val=2)(raw)
    torch.testing.assert_close(b["rewards"], ref)
    assert set(b["rewards"].unique().tolist()) <= {-0.5, 2.0}
    sampler.release(slots)
    c.close()


@pytest.mark.parametrize("zero", [True, False])
def test_zero_rnn_on_done_in_acting_and_learning(tmp_path, zero):
    _, c = _components(
        tmp_path,
        "--with_vtrace=True",
        "--use_rnn=True",
        "--recurrence=8",
        "--batch_size=32",
        f"--zero_rnn_on_done={zero}",
    )
    sampler, slots = first_batch(c)
    states = c.buffers.rnn_states[slots, 1:8]  # after steps that all ended an episode
    assert bool((states == 0).all()) == zero
    seen = []
    evaluate = c.model.evaluate

    def rec(obs, rnn_states, dones, recurrence, *a, **k):
        seen.append(dones.clone())
        return evaluate(obs, rnn_states, dones, recurrence, *a, **k)

    c.model.evaluate = rec
    c.learner.train(slots)
    assert seen and bool((seen[0][:-1] == 1).all()) == zero and bool((seen[0] == 0).all()) != zero
    sampler.release(slots)
    c.close()


@pytest.mark.parametrize("kind", ["bound", "regularisation"])
def test_bounds_loss_enters_the_loss_with_its_coefficient(tmp_path, kind):
    from surge.algorithms.appo.bounds_loss import action_bounds_loss

    _, c = _components(
        tmp_path,
        *FF,
        "--batch_size=32",
        "--bounds_loss_coef=0.5",
        f"--bound_loss_type={kind}",
        "--initial_stddev=3",
        env="ppo_opts_box",
    )
    sampler, slots = first_batch(c)
    b = c.learner.prepare_batch(slots)
    with torch.no_grad():
        logits, _ = c.model.evaluate(
            b["obs"][:-1], b["rnn_states"][:-1], torch.maximum(b["terminated"], b["truncated"]), 1
        )
    # rl_games' mu: the Gaussian head's mean, the first half of the logits; scaled x 3 to leave [-1.1, 1.1]
    mu = logits[..., :2].reshape(-1, 2)
    expected = 0.5 * float(action_bounds_loss(mu, kind).mean())
    stats = c.learner.train_batch(b)
    assert stats["bounds_loss"] == pytest.approx(expected, rel=1e-5)
    sampler.release(slots)
    c.close()


def _base_env(env):
    for _ in range(10):
        if isinstance(env, _OneStep):
            return env
        env = getattr(env, "env", None) or getattr(env, "unwrapped", None)
    raise AssertionError("the test env is not reachable through .env")


def test_rescaled_actions_reach_the_env_mapped_onto_its_bounds(tmp_path):
    from surge.sampling.env_actions import BoxActionMap

    _, c = _components(tmp_path, *FF, "--rescale_actions=True", "--initial_stddev=3", env="ppo_opts_box")
    sampler = SerialSampler(c)
    sampler.step()  # the first env step of the (only) split
    split = c.workers[0].splits[0]
    sent = c.buffers.actions[split.slots, 0].numpy()  # [4, 2] the policy's raw samples
    got = np.stack([_base_env(e).last_action for e in split.envs])
    # rl_games' clip_actions: True: clamp to [-1, 1], then rescale to [0, 10]
    np.testing.assert_allclose(got, np.clip(sent, -1, 1) * 5.0 + 5.0, rtol=1e-6)
    assert BoxActionMap(np.zeros(2), np.full(2, 10.0), True, True)(sent).shape == got.shape
    c.close()


def test_bounds_loss_on_discrete_actions_is_refused_before_the_start(tmp_path):
    cfg = parse_cfg(
        ["--env=cartpole", f"--train_dir={tmp_path}", "--serial_mode=True", "--bounds_loss_coef=0.01"]
    )
    with pytest.raises(ConfigError, match="--bounds_loss_coef"):
        train(cfg)
    assert not list(tmp_path.rglob("checkpoint_*.pth"))


def test_an_undone_batch_also_undoes_the_kl_adaptive_rate(tmp_path):
    """The serial placement undoes a batch a stop interrupted (`BatchSnapshot`): the adaptive rate
    comes back too, so a resume continues from the same rate."""
    from surge.runtime.serial import BatchSnapshot

    _, c = _components(
        tmp_path, *FF, *FOUR_MB, "--lr_schedule=kl_adaptive_minibatch", "--lr_schedule_kl_threshold=1000"
    )
    sampler, slots = first_batch(c)
    snap = BatchSnapshot()
    snap.take(c.model, c.learner)
    c.learner.train(slots)
    assert c.learner.kl_lr.lr == pytest.approx(1e-3 * 1.5**4)
    snap.restore(c.model, c.learner)
    assert c.learner.kl_lr.lr == 1e-3 and c.learner.kl_lr.updates == 0
    assert c.learner.optimizer.param_groups[0]["lr"] == 1e-3
    sampler.release(slots)
    c.close()


def test_kl_of_a_gaussian_head_is_measured_against_the_previous_pass_as_rl_games(tmp_path, monkeypatch):
    """rl_games' continuous agent overwrites a minibatch's stored mean and sigma after each pass
    (a2c_common.py ContinuousA2CBase.train_epoch, datasets.py update_mu_sigma), so pass k's KL is
    KL(pass k || pass k-1), the first pass's against the behavior policy: replayed here from the
    forward passes the learner made (one minibatch per pass, in a fixed order)."""
    _, c = _components(
        tmp_path,
        *FF,
        "--batch_size=32",
        "--ppo_epochs=3",
        "--learning_rate=0.01",
        "--lr_schedule=kl_adaptive_minibatch",
        "--lr_schedule_kl_threshold=1000",
        env="ppo_opts_box",
    )
    monkeypatch.setattr(torch, "randperm", lambda n, device=None: torch.arange(n, device=device))
    sampler, slots = first_batch(c)
    b = c.learner.prepare_batch(slots)
    behavior = b["logits"].reshape(-1, b["logits"].shape[-1]).clone()
    forwards = []
    evaluate = c.model.evaluate

    def rec_evaluate(*args, **kwargs):
        logits, values = evaluate(*args, **kwargs)
        if logits.shape[1] == 32:  # a minibatch, not the GAE bootstrap
            forwards.append(logits.detach().reshape(-1, logits.shape[-1]).clone())
        return logits, values

    c.model.evaluate = rec_evaluate
    _, applied = _record_kls(c.learner)
    c.learner.train_batch(b)
    assert len(forwards) == 3 and len(applied) == 3
    kl = lambda p, q: float(c.model.distribution(p).kl(c.model.distribution(q)).mean())  # noqa: E731
    expected = [kl(forwards[0], behavior), kl(forwards[1], forwards[0]), kl(forwards[2], forwards[1])]
    assert applied == pytest.approx(expected, rel=1e-5, abs=1e-10)
    assert kl(forwards[2], behavior) > 1.5 * expected[2]  # against the behavior policy it would differ
    sampler.release(slots)
    c.close()
