"""One A2C update, at the learner's call sites, against a reference written from rlpyt's A2C and the
papers.

An `A2CLearner` is built directly with a small feed-forward actor-critic and a stub of the
trajectory buffers that hands out one constructed batch: T = 8 steps of N = 6 agents, with episodes
that terminate, are truncated by a time limit, or run past the rollout; behaviour values far from
the current critic's; a few inactive samples and a few older than `max_policy_lag`.
`learner.train(slots)` then runs `prepare_batch` -> `train_batch` -> `apply_gradients` exactly as
in a training run. The gradient it applies is read from the parameters' `.grad`; the step from the
parameters themselves.

Every expected value comes from this file:
- returns: rlpyt's `discount_return` (gae_lambda = 1) as an explicit sum,
  `R_t = Σ_{k=t}^{end} γ^{k-t} r'_k (+ γ^{T-t} V(x_T)` when the episode runs past the rollout),
  and GAE (Schulman et al. 2016, eq. 16) for λ < 1, over the behaviour values `V_old` with the
  current critic's value of the bootstrap observation `x_T`; a truncated step's reward is
  `r'_t = r_t + γ V_old(x_t)` (Pardo et al. 2018, "Time limits in RL"; rl_games' value bootstrap),
  a terminated one is `r_t`; advantages `A_t = R_t - V_old(x_t)` (rlpyt `PolicyGradientAlgo.process_returns`);
- the loss: rlpyt's `A2C.loss` (Mnih et al. 2016, Algorithm S3), per sample, by hand with torch's
  Categorical: `-log π(a_t|x_t) A_t + c_v · 0.5 (V(x_t) - R_t)² - c_e · H(π(·|x_t))`, the mean over
  valid samples, the advantages constants (no gradient through the critic into the policy term),
  optionally standardised over the valid samples;
- the step: the gradient's global norm clipped to `max_grad_norm`, then one step of torch's own
  (non-fused) Adam; `policy_version` + 1.
"""

from __future__ import annotations

import copy

import gymnasium as gym
import numpy as np
import pytest
import torch

from surge.algorithms.a2c.learner import A2CLearner
from surge.app.resolve import parse_cfg
from surge.models.actor_critic import ActorCritic

T, N, OBS, ACTS = 8, 6, 4, 3
GAMMA = 0.9
MAX_LAG = 3
OBS_SPACE = gym.spaces.Box(-5.0, 5.0, (OBS,), np.float32)
ACTION_SPACE = gym.spaces.Discrete(ACTS)


def _cfg(tmp_path, *extra):
    return parse_cfg(
        [
            "--env=cartpole",
            "--algo=A2C",
            f"--train_dir={tmp_path}",
            "--seed=0",
            "--use_rnn=False",
            f"--rollout={T}",
            "--recurrence=1",
            "--encoder_type=mlp",
            "--encoder_subtype=mlp",
            "--encoder_mlp_layers",
            "16",
            "--nonlinearity=tanh",
            "--normalize_input=False",
            "--normalize_returns=False",
            f"--gamma={GAMMA}",
            "--reward_scale=0.5",
            "--reward_clip=10",
            "--value_loss_coeff=0.7",
            "--exploration_loss_coeff=0.3",  # the entropy term weighs in the gradient
            f"--batch_size={T * N}",
            "--learning_rate=0.01",
            f"--max_policy_lag={MAX_LAG}",
            *extra,
        ]
    )


class StubBuffers:
    """Stands in for `TrajectoryBuffers`: `gather(slots)` returns the constructed trajectories
    `[N, T(+1), ...]` (the layout of the real buffers), whatever slots are asked for."""

    def __init__(self, data: dict[str, torch.Tensor]):
        self.data = data

    def gather(self, slots: torch.Tensor, pin_memory: bool = False) -> dict[str, torch.Tensor]:
        return {k: v.pin_memory() if pin_memory else v.clone() for k, v in self.data.items()}


LEARNER_VERSION = 5  # the learner's policy_version when it trains on the batch


def _batch(seed: int = 0) -> dict[str, torch.Tensor]:
    """One constructed batch in the buffers' layout (see the module docstring)."""
    g = torch.Generator().manual_seed(seed)
    term = torch.zeros(N, T, dtype=torch.bool)
    trunc = torch.zeros(N, T, dtype=torch.bool)
    term[0, 4] = True  # a 5-step episode terminates, the next runs past the rollout
    trunc[1, 3] = trunc[1, 7] = True  # truncated after 4 steps, and on the rollout's last step
    term[2, 2], trunc[2, 6] = True, True
    term[3, 5], trunc[3, 5] = True, True  # both flags: a termination (nothing to bootstrap)
    is_active = torch.ones(N, T, dtype=torch.bool)
    is_active[2, 0] = is_active[5, 3] = False
    version = torch.full((N, T), LEARNER_VERSION - 1, dtype=torch.int64)
    version[4, :3] = LEARNER_VERSION - MAX_LAG - 1  # too stale: masked out
    return {
        "obs": torch.randn(N, T + 1, OBS, generator=g),
        "rnn_states": torch.zeros(N, T + 1, 0),
        "actions": torch.randint(0, ACTS, (N, T), generator=g),
        "values": 2.0 * torch.randn(N, T, generator=g),  # behaviour values, far from the fresh ones
        "rewards": 3.0 * torch.randn(N, T, generator=g),
        "terminated": term,
        "truncated": trunc,
        "is_active": is_active,
        "policy_id": torch.zeros(N, T, dtype=torch.int8),
        "policy_version": version,
    }


def _valid(data) -> torch.Tensor:
    """`[N, T]` bool: active and at most `MAX_LAG` versions old."""
    return data["is_active"] & (LEARNER_VERSION - data["policy_version"] <= MAX_LAG)


def _learner(cfg, data) -> A2CLearner:
    torch.manual_seed(0)
    learner = A2CLearner(
        cfg, ActorCritic(cfg, OBS_SPACE, ACTION_SPACE), StubBuffers(data), torch.device("cpu")
    )
    learner.policy_version = LEARNER_VERSION
    return learner


def _forward(model, data):
    """The current policy's logits `[N, T, A]` and values `[N, T+1]` (no RNN: one observation at
    a time)."""
    logits, values = model.evaluate(
        data["obs"].transpose(0, 1), data["rnn_states"].transpose(0, 1), torch.zeros(T + 1, N), 1
    )
    return logits.transpose(0, 1)[:, :T], values.transpose(0, 1)


def naive_returns(cfg, data, bootstrap: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Returns and advantages `[N, T]` float64 (module docstring): GAE's explicit sum
    `A_t = Σ_k (γλ)^{k-t} δ_k`, `δ_k = r'_k + γ V_{k+1} - V_k` (no V_{k+1} at an episode's end), which
    for λ = 1 is the n-step return minus `V_old(x_t)`; `R_t = A_t + V_old(x_t)`."""
    r = np.clip(
        data["rewards"].numpy().astype(np.float64) * cfg.reward_scale, -cfg.reward_clip, cfg.reward_clip
    )
    term, trunc = data["terminated"].numpy(), data["truncated"].numpy()
    done, time_out = term | trunc, trunc & ~term
    old = data["values"].numpy().astype(np.float64)
    v = np.concatenate([old, bootstrap[:, None]], axis=1)
    adv = np.zeros((N, T))
    for n in range(N):
        for t in range(T):
            total, coef = 0.0, 1.0
            for k in range(t, T):
                reward = r[n, k] + cfg.gamma * old[n, k] * time_out[n, k]
                nxt = 0.0 if done[n, k] else v[n, k + 1]
                total += coef * (reward + cfg.gamma * nxt - v[n, k])
                if done[n, k]:
                    break
                coef *= cfg.gamma * cfg.gae_lambda
            adv[n, t] = total
    return adv + old, adv


def naive_nstep_returns(cfg, data, bootstrap: np.ndarray) -> np.ndarray:
    """rlpyt's `discount_return` (gae_lambda = 1) written out: `R_t = Σ_{k=t}^{end} γ^{k-t} r'_k`,
    plus `γ^{T-t} V(x_T)` when the episode runs past the rollout. `[N, T]` float64."""
    r = np.clip(
        data["rewards"].numpy().astype(np.float64) * cfg.reward_scale, -cfg.reward_clip, cfg.reward_clip
    )
    term, trunc = data["terminated"].numpy(), data["truncated"].numpy()
    old = data["values"].numpy().astype(np.float64)
    out = np.zeros((N, T))
    for n in range(N):
        for t in range(T):
            total, disc, ended = 0.0, 1.0, False
            for k in range(t, T):
                total += disc * (r[n, k] + cfg.gamma * old[n, k] * (trunc[n, k] and not term[n, k]))
                if term[n, k] or trunc[n, k]:
                    ended = True
                    break
                disc *= cfg.gamma
            out[n, t] = total if ended else total + disc * bootstrap[n]
    return out


def naive_a2c_loss(cfg, model, data, returns: np.ndarray, adv: np.ndarray) -> torch.Tensor:
    """rlpyt's `A2C.loss`, one sample at a time (module docstring)."""
    logits, values = _forward(model, data)
    dist = torch.distributions.Categorical(logits=logits)
    log_probs, entropy = dist.log_prob(data["actions"]), dist.entropy()
    valid = _valid(data)
    adv_t = torch.as_tensor(adv, dtype=torch.float32)
    returns_t = torch.as_tensor(returns, dtype=torch.float32)
    if cfg.normalize_advantage:
        a = adv_t[valid]
        adv_t = (adv_t - a.mean()) / (a.std(unbiased=False) + 1e-8)
    terms = []
    for n in range(N):
        for t in range(T):
            if valid[n, t]:
                policy = -log_probs[n, t] * adv_t[n, t]
                value = cfg.value_loss_coeff * 0.5 * (values[n, t] - returns_t[n, t]) ** 2
                terms.append(policy + value - cfg.exploration_loss_coeff * entropy[n, t])
    return torch.stack(terms).mean()


PRIOR_VAR, NORM_EPS = 1.0, 1e-5  # a fresh returns normaliser: one pseudo-sample of mean 0, variance 1


def _reference_gradient(cfg, model, data) -> None:
    """Fills `model`'s `.grad` with the reference loss's gradient (on a copy's own forward pass).

    With `normalize_returns` the critic's outputs (the behaviour values, the bootstrap value) are
    normalised: the returns and advantages are computed from them in return units (`v · σ + μ` of
    the fresh normaliser, μ = 0, σ = √(1 + ε)); the normaliser then takes in the valid returns
    (Chan et al.'s parallel mean and variance, the prior counting as one sample) and the critic
    is trained on `(R - μ') / √(σ'² + ε)`, the advantages staying in return units."""
    with torch.no_grad():
        bootstrap = _forward(model, data)[1][:, T].numpy().astype(np.float64)
    if cfg.normalize_returns:
        scale = np.sqrt(PRIOR_VAR + NORM_EPS)
        data = {**data, "values": data["values"] * scale}
        bootstrap = bootstrap * scale
    returns, adv = naive_returns(cfg, data, bootstrap)
    if cfg.gae_lambda == 1.0:  # the two written-out references agree (rlpyt's n-step return)
        np.testing.assert_allclose(returns, naive_nstep_returns(cfg, data, bootstrap), rtol=1e-9, atol=1e-9)
    if cfg.normalize_returns:
        valid = _valid(data).numpy()
        r = returns[valid]
        n, total = len(r), 1.0 + len(r)
        mean = r.mean() * n / total
        var = (PRIOR_VAR + r.var() * n + r.mean() ** 2 * n / total) / total
        returns = (returns - mean) / np.sqrt(var + NORM_EPS)
        if cfg.algo_params.popart:  # van Hasselt et al. 2016, eq. 6-7, from the old (mu, sigma) to the new
            sigma0, mu0, sigma1 = np.sqrt(PRIOR_VAR + NORM_EPS), 0.0, np.sqrt(var + NORM_EPS)
            with torch.no_grad():
                head = model.value_head
                head.weight.copy_(head.weight.double() * sigma0 / sigma1)
                head.bias.copy_((sigma0 * head.bias.double() + mu0 - mean) / sigma1)
    naive_a2c_loss(cfg, model, data, returns, adv).backward()


@pytest.mark.parametrize(("normalize_returns", "popart"), [(False, False), (True, False), (True, True)])
@pytest.mark.parametrize("normalize_advantage", [False, True])
@pytest.mark.parametrize("gae_lambda", [1.0, 0.8])
def test_one_a2c_update_applies_the_gradient_of_the_reference_loss(
    tmp_path, gae_lambda, normalize_advantage, normalize_returns, popart
):
    """The gradient one learner step applies (`.grad`, no clipping) equals that of the written-out
    A2C loss. Guards the returns (n-step or GAE, episode ends, the time-out bootstrap), the
    advantages' baseline and their being constants, the loss's signs and coefficients, the
    masking of inactive and too-stale samples, the critic's targets in normalised units and, with
    `--popart`, the value head rescaled to the new statistics before the loss (written out here)."""
    data = _batch(seed=1)
    cfg = _cfg(
        tmp_path,
        f"--gae_lambda={gae_lambda}",
        f"--normalize_advantage={normalize_advantage}",
        f"--normalize_returns={normalize_returns}",
        f"--popart={popart}",
        "--max_grad_norm=0",
    )
    learner = _learner(cfg, data)
    reference = copy.deepcopy(learner.model)
    _reference_gradient(cfg, reference, data)
    assert (~_valid(data)).sum() >= 5  # masking is exercised
    learner.train(torch.arange(N))
    for (name, p), q in zip(learner.model.named_parameters(), reference.parameters(), strict=True):
        assert q.grad is not None and float(q.grad.abs().max()) > 0, name
        torch.testing.assert_close(
            p.grad, q.grad, rtol=2e-3, atol=1e-5, msg=lambda m, name=name: f"{name}: {m}"
        )


@pytest.mark.parametrize(("max_grad_norm", "clipped"), [(0.2, True), (1e3, False)])
def test_one_a2c_update_is_one_clipped_adam_step(tmp_path, max_grad_norm, clipped):
    """One `train` call is one optimizer step (`policy_version` + 1) whose parameters equal those of
    torch's Adam after clipping the reference gradient to `max_grad_norm`: with a limit several
    times below the batch's gradient norm (the clip is exercised), and with one far above it (the
    gradient is applied as it is: the learner skips the multiplication by 1 there)."""
    data = _batch(seed=2)
    cfg = _cfg(tmp_path, f"--max_grad_norm={max_grad_norm}", "--adam_eps=1e-8")
    learner = _learner(cfg, data)
    reference = copy.deepcopy(learner.model)
    _reference_gradient(cfg, reference, data)
    norm = torch.nn.utils.clip_grad_norm_(reference.parameters(), cfg.max_grad_norm)
    if clipped:
        assert float(norm) > 3 * cfg.max_grad_norm
    else:
        assert 0 < float(norm) < cfg.max_grad_norm / 3
    opt = torch.optim.Adam(
        reference.parameters(), lr=cfg.learning_rate, betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps
    )
    opt.step()
    stats = learner.train(torch.arange(N))
    assert learner.policy_version == LEARNER_VERSION + 1
    assert stats["grad_norm"] == pytest.approx(float(norm), rel=1e-4)
    for (name, p), q in zip(learner.model.named_parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(p, q, rtol=1e-4, atol=1e-6, msg=lambda m, name=name: f"{name}: {m}")


def test_a2c_bootstraps_a_truncated_step_and_not_a_terminated_one(tmp_path, monkeypatch):
    """Agent 0's episode is cut by a time limit at step 3, agent 1's terminates there: the return
    of that step is `r + γ V_old(x_3)` after the time-out and `r` after the termination; the
    advantage is the return minus `V_old(x_3)`. Read where the learner hands them to `a2c_loss`."""
    import surge.algorithms.a2c.learner as a2c_module

    data = _batch(seed=3)
    data["terminated"][:2], data["truncated"][:2] = False, False
    data["truncated"][0, 3], data["terminated"][1, 3] = True, True
    cfg = _cfg(tmp_path, "--gae_lambda=1.0", "--normalize_advantage=False")
    learner = _learner(cfg, data)
    seen: dict[str, torch.Tensor] = {}
    real = a2c_module.a2c_loss

    def spy(log_probs, entropy, values, advantages, targets, *rest):
        seen["adv"], seen["targets"] = advantages.detach().reshape(T, N), targets.detach().reshape(T, N)
        return real(log_probs, entropy, values, advantages, targets, *rest)

    monkeypatch.setattr(a2c_module, "a2c_loss", spy)
    learner.train(torch.arange(N))
    for agent, truncated in ((0, True), (1, False)):
        r = data["rewards"][agent, 3].item() * cfg.reward_scale
        v_old = data["values"][agent, 3].item()
        expected = r + GAMMA * v_old * truncated
        if truncated:
            assert GAMMA * abs(v_old) > 0.1  # the bootstrap term is not vacuous
        assert seen["targets"][3, agent].item() == pytest.approx(expected, rel=1e-5, abs=1e-5)
        assert seen["adv"][3, agent].item() == pytest.approx(expected - v_old, rel=1e-5, abs=1e-5)
