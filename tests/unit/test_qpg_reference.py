"""One update of the SAC, TD3 and DDPG learners against references written from the papers.

Each learner is built as a run builds it (its `make_model` and `make_learner` on Pendulum's spaces)
and `update` is called on a fixed minibatch of B transitions, some of them terminal (discount 0).
What each optimizer is given is recorded at its `step` (the gradients, and the networks as they are
at that moment); every expected value comes from a naive per-sample loop in this file, over copies
of the networks taken before the update:
- TD3 (Fujimoto et al. 2018, Algorithm 1): target smoothing `clip(μ'(s') + clip(σξ, −c, c), −1, 1)`,
  `y = r + d·min(Q'1, Q'2)`, critic loss `Σ_k mean (Q_k − y)²`, the actor (`−mean Q1(s, μ(s))`,
  with the critic as stepped) and the targets only at every `policy_delay`-th update;
- DDPG (Lillicrap et al. 2016, Algorithm 1): `y = r + d·Q'(s', μ'(s'))`, the actor every update;
- SAC (Haarnoja et al. 2018, eqs. 5, 7, 8, 18): the temperature loss, the soft target with
  α = exp(log α) before its step, `½ Σ_k mean (Q_k − y)²`, `mean α log π − min Q`;
  log π of a tanh-squashed Gaussian written out per sample as
  `Σ_d log N(u_d; μ_d, σ_d) − log(1 − tanh² u_d)`.
The draws ξ are the learner's generator's, replayed from its state before the update.
"""

from __future__ import annotations

import copy
import math

import gymnasium as gym
import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.data.trajectory import TrajectoryBuffers
from surge.learning.algorithm import get_algorithm
from surge.replay.samples import TransitionSample

B, GAMMA = 16, 0.9


def _learner(tmp_path, algo, *extra):
    cfg = parse_cfg(
        [
            "--env=Pendulum-v1",
            f"--algo={algo}",
            f"--train_dir={tmp_path}",
            "--worker_num_splits=1",
            "--num_workers=1",
            "--num_envs_per_worker=1",
            "--net_arch",
            "16",
            "16",
            f"--batch_size={B}",
            "--seed=0",
            *extra,
        ]
    )
    env = gym.make("Pendulum-v1")
    a = get_algorithm(algo)
    torch.manual_seed(0)
    parts = a.make_model(cfg, env.observation_space, env.action_space)
    buffers = TrajectoryBuffers(2, 1, env.observation_space, env.action_space, 0)
    learner = a.make_learner(
        cfg, parts.acting, buffers, torch.device("cpu"), 0, learner_modules=parts.learner_modules
    )
    return learner


def _batch():
    g = torch.Generator().manual_seed(1)
    discounts = torch.full((B,), GAMMA)
    discounts[::5] = 0.0  # terminated steps do not bootstrap
    return {
        "obs": torch.randn(B, 3, generator=g),
        "next_obs": torch.randn(B, 3, generator=g),
        "actions": torch.rand(B, 1, generator=g) * 2 - 1,
        "returns": torch.randn(B, generator=g),
        "discounts": discounts,
    }


def _record(learner):
    """Wraps each optimizer's step: {name: (grads, copies of every module at that moment)}."""
    seen: dict[str, tuple[list[torch.Tensor], dict]] = {}
    for name, opt in learner.optimizers.items():
        params = [p for group in opt.param_groups for p in group["params"]]
        step = opt.step

        def wrapped(*args, _name=name, _params=params, _step=step, **kwargs):
            mods = {k: copy.deepcopy(m) for k, m in learner.learner_modules.items()}
            mods["actor"] = copy.deepcopy(learner.model)
            seen[_name] = ([p.grad.clone() for p in _params], mods)
            return _step(*args, **kwargs)

        opt.step = wrapped
    return seen


def _grads(loss, module_or_params):
    params = (
        list(module_or_params.parameters()) if hasattr(module_or_params, "parameters") else module_or_params
    )
    return torch.autograd.grad(loss, params)


def _close(got, want):
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-6)


def _one(x, i):
    return x[i : i + 1]


def _update(learner, batch):
    """`update` as `train_replay` calls it: the samples hold actions in the env's units
    (Pendulum's [-2, 2]), normalised by the learner (the cells and weights are not read)."""
    cells = torch.zeros(B, dtype=torch.int64)
    samples = TransitionSample(
        **{**batch, "actions": 2.0 * batch["actions"]},
        n_steps=torch.ones(B, dtype=torch.int64),
        rows=cells,
        columns=cells,
        indices=cells,
        is_weights=torch.ones(B),
    )
    stats = learner.update(samples)
    learner.updates += 1
    return stats


@pytest.mark.parametrize("algo", ["TD3", "DDPG"])
def test_td3_and_ddpg_update_matches_the_papers(tmp_path, algo):
    sigma, clip, tau = 0.3, 0.4, 0.1
    learner = _learner(
        tmp_path,
        algo,
        f"--tau={tau}",
        *(
            [f"--target_policy_noise={sigma}", f"--target_noise_clip={clip}", "--policy_delay=2"]
            if algo == "TD3"
            else []
        ),
    )
    learner.hp.gamma = GAMMA
    b = _batch()
    before = {k: copy.deepcopy(m) for k, m in learner.learner_modules.items()}
    before["actor"] = copy.deepcopy(learner.model)
    gen_state = learner.generator.get_state()
    seen = _record(learner)
    _update(learner, b)

    # the critic: a naive loop over the minibatch with the pre-update networks
    xi = torch.randn((B, 1), generator=torch.Generator().set_state(gen_state))
    critic = before["critic"]
    loss = torch.zeros(())
    for i in range(B):
        s2 = _one(b["next_obs"], i)
        with torch.no_grad():
            a2 = before["actor_target"](s2).actions[0]
            if algo == "TD3":
                eps = min(max(float(sigma * xi[i, 0]), -clip), clip)
                a2 = torch.clamp(a2 + eps, -1.0, 1.0)
                q1t, q2t = before["critic_target"](s2, a2[None])
                y = b["returns"][i] + b["discounts"][i] * min(float(q1t), float(q2t))
            else:
                y = b["returns"][i] + b["discounts"][i] * float(before["critic_target"](s2, a2[None]))
        out = critic(_one(b["obs"], i), _one(b["actions"], i))
        qs = out if isinstance(out, tuple) else (out,)
        for q in qs:
            loss = loss + (q[0] - y) ** 2 / B
    _close(seen["critic"][0], _grads(loss, critic))

    if algo == "TD3":  # the first update is a critic update only: actor and targets wait
        assert "model" not in seen
        for k in ("actor_target", "critic_target"):
            for p, q in zip(learner.learner_modules[k].parameters(), before[k].parameters(), strict=True):
                assert torch.equal(p, q)
        before = {k: copy.deepcopy(m) for k, m in learner.learner_modules.items()}
        seen.clear()
        _update(learner, b)
    # the actor, with the critic as the critic's step left it
    stepped = seen["model"][1]
    actor = copy.deepcopy(seen["model"][1]["actor"])
    loss = torch.zeros(())
    for i in range(B):
        s = _one(b["obs"], i)
        out = stepped["critic"](s, actor(s).actions)
        q1 = out[0] if isinstance(out, tuple) else out
        loss = loss - q1[0] / B
    _close(seen["model"][0], _grads(loss, actor))
    # the targets: θ' <- τθ + (1 - τ)θ' after the steps
    for k, src in (("critic_target", "critic"), ("actor_target", None)):
        source = learner.model if src is None else learner.learner_modules[src]
        for p, old, s in zip(
            learner.learner_modules[k].parameters(), before[k].parameters(), source.parameters(), strict=True
        ):
            torch.testing.assert_close(p, tau * s + (1 - tau) * old)


def _log_prob(u, mean, log_std):
    """Σ_d [log N(u_d; μ_d, σ_d) − log(1 − tanh²(u_d))] for one sample, in float64."""
    u, mean, log_std = u.double(), mean.double(), log_std.double()
    total = torch.zeros((), dtype=torch.float64)
    for d in range(u.shape[0]):
        sd = log_std[d].exp()
        total = total - 0.5 * ((u[d] - mean[d]) / sd) ** 2 - log_std[d] - 0.5 * math.log(2 * math.pi)
        total = total - torch.log1p(-(torch.tanh(u[d]) ** 2))
    return total


def test_sac_update_matches_the_paper(tmp_path):
    tau = 0.2
    learner = _learner(tmp_path, "SAC", f"--tau={tau}", "--ent_coef=auto_0.5")
    learner.hp.gamma = GAMMA
    b = _batch()
    before = {k: copy.deepcopy(m) for k, m in learner.learner_modules.items()}
    actor0 = copy.deepcopy(learner.model)
    gen = torch.Generator().set_state(learner.generator.get_state())
    seen = _record(learner)
    stats = _update(learner, b)
    xi = torch.randn((B, 1), generator=gen)  # the fresh actions' draws, then the next actions'
    xi_next = torch.randn((B, 1), generator=gen)
    log_alpha = before["log_alpha"].value.detach().clone().requires_grad_(True)
    alpha = math.exp(float(log_alpha))
    assert abs(alpha - 0.5) < 1e-6 and stats["ent_coef"] == pytest.approx(0.5)
    target_entropy = -1.0  # -dim(A)

    def fresh(actor, i, noise):
        mean, log_std = actor.distribution_params(
            _one(b["obs"], i) if noise is xi else _one(b["next_obs"], i)
        )
        u = mean[0] + log_std[0].exp() * noise[i]
        return torch.tanh(u), _log_prob(u, mean[0], log_std[0]).float()

    # the temperature (eq. 18)
    loss = torch.zeros(())
    for i in range(B):
        _, lp = fresh(actor0, i, xi)
        loss = loss - log_alpha * (float(lp) + target_entropy) / B
    _close(seen["ent_coef"][0], _grads(loss, [log_alpha]))
    # the critics (eq. 5 with the soft target of eq. 3, clipped double Q)
    critic = before["critic"]
    loss = torch.zeros(())
    for i in range(B):
        with torch.no_grad():
            a2, lp2 = fresh(actor0, i, xi_next)
            q1t, q2t = before["critic_target"](_one(b["next_obs"], i), a2[None])
            y = b["returns"][i] + b["discounts"][i] * (min(float(q1t), float(q2t)) - alpha * float(lp2))
        q1, q2 = critic(_one(b["obs"], i), _one(b["actions"], i))
        loss = loss + 0.5 * ((q1[0] - y) ** 2 + (q2[0] - y) ** 2) / B
    _close(seen["critic"][0], _grads(loss, critic))
    # the actor (eq. 7), against the stepped critics
    stepped = seen["model"][1]["critic"]
    actor = copy.deepcopy(actor0)
    loss = torch.zeros(())
    for i in range(B):
        a, lp = fresh(actor, i, xi)
        q1, q2 = stepped(_one(b["obs"], i), a[None])
        loss = loss + (alpha * lp - torch.minimum(q1[0], q2[0])) / B
    _close(seen["model"][0], _grads(loss, actor))
    for p, old, s in zip(
        learner.learner_modules["critic_target"].parameters(),
        before["critic_target"].parameters(),
        learner.learner_modules["critic"].parameters(),
        strict=True,
    ):
        torch.testing.assert_close(p, tau * s + (1 - tau) * old)
    # the temperature went the way the entropy asks: up when the entropy is under the target
    entropy = -sum(float(fresh(actor0, i, xi)[1]) for i in range(B)) / B
    moved = float(learner.learner_modules["log_alpha"].value) - math.log(0.5)
    assert moved * (target_entropy - entropy) > 0


def test_non_box_action_spaces_are_refused(tmp_path):
    from surge.errors import ConfigError
    from surge.learning.qpg_common import check_box

    for algo in ("SAC", "TD3", "DDPG"):
        with pytest.raises(ConfigError) as e:
            check_box(gym.spaces.Discrete(3), algo)
        assert e.value.field == "algo" and "Box" in str(e.value)
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=CartPole-v1", "--algo=SAC", f"--train_dir={tmp_path}"])
    assert e.value.field == "algo"


@pytest.mark.parametrize(
    "flag,field",
    [
        ("--tau=0", "tau"),
        ("--ent_coef=autox", "ent_coef"),
        ("--policy_delay=0", "policy_delay"),
        ("--replay_ratio=0", "replay_ratio"),
    ],
)
def test_bad_flags_are_refused_with_the_field(tmp_path, flag, field):
    from surge.errors import ConfigError

    algo = "SAC" if field == "ent_coef" else "TD3"
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=Pendulum-v1", f"--algo={algo}", f"--train_dir={tmp_path}", flag])
    assert e.value.field == field


def test_acting_random_then_noisy_or_sampled_and_eval_deterministic(tmp_path):
    """Before `learning_starts` env steps: uniform in the Box (Pendulum's [-2, 2]); then TD3 adds
    N(0, 0.1²) in [-1, 1] units to μ(s) (Fujimoto et al. 2018, Algorithm 1), SAC samples
    tanh(mean + std ξ); eval_act is μ(s) / tanh(mean) in the env's units, whatever the context."""
    from surge.learning.algorithm import ActContext

    obs = torch.randn(4000, 3)
    empty = torch.zeros(4000, 0)
    for algo in ("TD3", "SAC"):
        learner = _learner(tmp_path, algo, "--learning_starts=500")
        a = get_algorithm(algo)
        actor = learner.model
        early = a.act(actor, obs, empty, ActContext(env_frames=499))["actions"]
        assert early.shape == (4000, 1) and float(early.min()) >= -2.0 and float(early.max()) <= 2.0
        assert abs(float(early.mean())) < 0.1 and abs(float(early.std()) - 4 / math.sqrt(12)) < 0.05
        with torch.no_grad():
            if algo == "TD3":
                mode = actor(obs).actions
            else:
                mode = torch.tanh(actor.distribution_params(obs)[0])
        det = a.evaluation_act(actor, obs, empty, ActContext(env_frames=10**6))["actions"]
        torch.testing.assert_close(det, 2.0 * mode)
        late = a.act(actor, obs, empty, ActContext(env_frames=500))["actions"] / 2.0
        if algo == "TD3":
            inside = mode.abs() < 0.6  # no clipping at 4 std
            noise = (late - mode)[inside]
            assert abs(float(noise.std()) - 0.1) < 0.01 and abs(float(noise.mean())) < 0.01
        else:
            mean, log_std = (x.detach() for x in actor.distribution_params(obs))
            u = torch.atanh(late.clamp(-0.999999, 0.999999))
            z = (u - mean) / log_std.exp()  # standard normal if sampled from the policy
            assert abs(float(z.mean())) < 0.1 and abs(float(z.std()) - 1.0) < 0.1
