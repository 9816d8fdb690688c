"""The learner's own computation, at its call sites, against references written from the papers.

A `Learner` is built directly with a small feed-forward actor-critic and a stub of the trajectory
buffers that hands out one constructed batch: T = 8 steps of N = 6 agents, with multi-step
episodes that terminate, are truncated by a time limit, or run past the rollout; a stale behaviour
policy (its log-probs differ from the current policy's, ratios both above and below 1); a few
inactive samples. `learner.train(slots)` then runs `prepare_batch` -> `train_batch` -> `_step`
exactly as in a training run. What the learner hands to the loss is recorded by wrapping the
`ppo_loss` its module calls; the gradient it applies is read from the parameters' `.grad`.

Every expected value comes from a naive loop in this file:
- V-trace targets and advantages: Espeholt et al. 2018 (IMPALA), eq. 1 as an explicit sum, and the
  policy-gradient advantage of sec. 4.2, `ρ_s (r_s + γ v_{s+1} - V(x_s))`;
- GAE: Schulman et al. 2016, eq. 16 as an explicit sum over the episode;
- time-outs: the reward of a truncated step gets `γ V(s_t)` (rl_games' value bootstrap), and
  nothing is bootstrapped across any episode end;
- the loss: PPO's clipped surrogate (Schulman et al. 2017, eq. 7, with Sample Factory's ratio
  clipping to [1/(1+ε), 1+ε]), the clipped value loss, the entropy bonus, per-minibatch advantage
  normalisation over valid samples;
- the learning-rate schedule: linear decay to 0 at `train_for_env_steps`.
"""

from __future__ import annotations

import copy
import inspect
import sys

import gymnasium as gym
import numpy as np
import pytest
import torch

from surge.algorithms.appo.config import APPOParams
from surge.algorithms.appo.learner import Learner
from surge.app.resolve import parse_cfg
from surge.cfg.config import algo_params
from surge.models.actor_critic import ActorCritic

T, N, OBS, ACTS = 8, 6, 4, 3
GAMMA, LAM = 0.9, 0.8
OBS_SPACE = gym.spaces.Box(-5.0, 5.0, (OBS,), np.float32)
ACTION_SPACE = gym.spaces.Discrete(ACTS)


def _cfg(tmp_path, *extra):
    return parse_cfg(
        [
            "--env=cartpole",
            f"--train_dir={tmp_path}",
            "--seed=0",
            "--use_rnn=False",
            f"--rollout={T}",
            "--encoder_type=mlp",
            "--encoder_subtype=mlp",
            "--encoder_mlp_layers",
            "16",
            "--nonlinearity=tanh",
            f"--gamma={GAMMA}",
            f"--gae_lambda={LAM}",
            "--reward_scale=0.5",
            "--reward_clip=10",
            "--ppo_clip_ratio=0.2",
            "--ppo_clip_value=0.3",
            "--value_loss_coeff=0.7",
            "--exploration_loss=entropy",
            "--exploration_loss_coeff=0.05",
            "--kl_loss_coeff=0",
            "--max_grad_norm=0",  # no gradient clipping: the applied gradient is the loss's own
            f"--batch_size={T * N}",  # one minibatch per epoch
            "--ppo_epochs=1",
            "--learning_rate=0.01",
            "--max_policy_lag=100",
            *extra,
        ]
    )


GAE = ["--with_vtrace=False", "--recurrence=1"]
VTRACE = ["--with_vtrace=True", f"--recurrence={T}", "--vtrace_rho=1.0", "--vtrace_c=1.0"]


class StubBuffers:
    """Stands in for `TrajectoryBuffers`: `gather(slots)` returns the constructed trajectories
    `[N, T(+1), ...]` (the layout of the real buffers), whatever slots are asked for."""

    def __init__(self, data: dict[str, torch.Tensor]):
        self.data = data
        #: the fields by name, as `TrajectoryBuffers` has them: a CUDA learner reads their sizes to
        #: choose how its batches travel (`surge.data.device_copy`; these are all gathered)
        self.FIELDS = tuple(data)

    def __getattr__(self, name: str) -> torch.Tensor:
        if name != "data" and name in self.data:
            return self.data[name]
        raise AttributeError(name)

    def nbytes(self) -> int:
        return sum(v.numel() * v.element_size() for v in self.data.values())

    def gather(self, slots: torch.Tensor, pin_memory: bool = False) -> dict[str, torch.Tensor]:
        return {k: v.pin_memory() if pin_memory else v.clone() for k, v in self.data.items()}


def _episode_ends():
    """terminated / truncated `[N, T]`: per agent, a pattern of multi-step episodes."""
    term = torch.zeros(N, T, dtype=torch.bool)
    trunc = torch.zeros(N, T, dtype=torch.bool)
    term[0, 4] = True  # a 5-step episode terminates, the next runs past the rollout
    trunc[1, 3] = True  # truncated by a time limit after 4 steps
    trunc[1, 7] = True  # ... and again on the last step of the rollout
    term[2, 2], trunc[2, 6] = True, True
    term[3, 5], trunc[3, 5] = True, True  # both flags: a termination (nothing to bootstrap)
    # agents 4 and 5: no episode end inside the rollout (traces run over all T steps)
    return term, trunc


def _batch(seed: int = 0) -> dict[str, torch.Tensor]:
    """One constructed batch in the buffers' layout; the behaviour policy is stale and peaked, so
    that ratios π/μ lie both below and above 1 (and outside the PPO clip range)."""
    g = torch.Generator().manual_seed(seed)
    behavior_logits = 2.5 * torch.randn(N, T, ACTS, generator=g)
    mu = torch.distributions.Categorical(logits=behavior_logits)
    actions = mu.sample()
    # a few actions the behaviour policy rarely took: ratios far above 1
    actions[4, 1] = behavior_logits[4, 1].argmin()
    actions[5, 6] = behavior_logits[5, 6].argmin()
    term, trunc = _episode_ends()
    is_active = torch.ones(N, T, dtype=torch.bool)
    is_active[2, 0] = is_active[5, 3] = False
    return {
        "obs": torch.randn(N, T + 1, OBS, generator=g),
        "rnn_states": torch.zeros(N, T + 1, 0),
        "actions": actions,
        "behavior_log_probs": mu.log_prob(actions),
        "values": 2.0 * torch.randn(N, T, generator=g),  # behaviour values, far from the fresh ones
        "action_logits": behavior_logits,
        "rewards": 3.0 * torch.randn(N, T, generator=g),
        "terminated": term,
        "truncated": trunc,
        "is_active": is_active,
        "policy_id": torch.zeros(N, T, dtype=torch.int8),
        "policy_version": torch.zeros(N, T, dtype=torch.int64),
    }


def _learner(cfg, data):
    torch.manual_seed(0)
    model = ActorCritic(cfg, OBS_SPACE, ACTION_SPACE)
    return Learner(cfg, model, StubBuffers(data), torch.device("cpu"))


class LossSpy:
    """Wraps the `ppo_loss` the learner's module calls and records its arguments by name."""

    def __init__(self, monkeypatch, learner: Learner):
        module = sys.modules[type(learner).__module__]
        self.real = module.ppo_loss
        self.signature = inspect.signature(self.real)
        self.calls: list[dict] = []
        monkeypatch.setattr(module, "ppo_loss", self)

    def __call__(self, *args, **kwargs):
        bound = self.signature.bind(*args, **kwargs)
        self.calls.append(
            {k: v.detach().clone() if torch.is_tensor(v) else v for k, v in bound.arguments.items()}
        )
        return self.real(*args, **kwargs)


def _positions(recorded_blp: torch.Tensor, data) -> tuple[np.ndarray, np.ndarray]:
    """(agent, step) of each recorded sample, found by its behaviour log-prob (unique floats), so
    that the comparison does not depend on how the learner orders or shuffles samples."""
    table = data["behavior_log_probs"]  # [N, T]
    diff = (recorded_blp.reshape(-1, 1, 1) - table.unsqueeze(0)).abs()
    flat = diff.reshape(len(recorded_blp), -1).argmin(dim=1)
    assert torch.all(diff.reshape(len(recorded_blp), -1).min(dim=1).values < 1e-6)
    n, t = np.unravel_index(flat.numpy(), (N, T))
    pairs = list(zip(n.tolist(), t.tolist(), strict=True))
    assert len(set(pairs)) == len(pairs)  # no sample twice
    # every valid sample; units with none (here: an inactive step, GAE without an RNN) are left out
    valid = zip(*np.nonzero(data["is_active"].numpy()), strict=True)
    assert {(int(a), int(b)) for a, b in valid} <= set(pairs)
    return n, t


def _fresh_outputs(model, data):
    """The current policy's log π(a_t|x_t) `[N, T]` and values V(x_t) `[N, T+1]` (no RNN, so one
    observation at a time), from torch's Categorical, before any update."""
    with torch.no_grad():
        logits, values = model.evaluate(
            data["obs"].transpose(0, 1), data["rnn_states"].transpose(0, 1), torch.zeros(T + 1, N), 1
        )
    logits, values = logits.transpose(0, 1), values.transpose(0, 1)  # [N, T+1, A], [N, T+1]
    logp = torch.distributions.Categorical(logits=logits[:, :T]).log_prob(data["actions"])
    return logp.numpy().astype(np.float64), values.numpy().astype(np.float64)


def _rewards_and_dones(cfg, data):
    r = np.clip(
        data["rewards"].numpy().astype(np.float64) * cfg.reward_scale, -cfg.reward_clip, cfg.reward_clip
    )
    term, trunc = data["terminated"].numpy(), data["truncated"].numpy()
    return r, term | trunc, trunc & ~term


def naive_vtrace(cfg, data, logp, values):
    """Espeholt et al. 2018, eq. 1, term by term: `v_s = V(x_s) + Σ_{t=s}^{end} γ^{t-s}
    (Π_{i=s}^{t-1} c_i) ρ_t (r_t + γ V(x_{t+1}) - V(x_t))`, the sum stopping at the episode's end
    (no bootstrap across it) or at the rollout's end (bootstrap V(x_T)); the advantage of sec. 4.2
    `ρ_s (r_s + γ v_{s+1} - V(x_s))`, with `v_T = V(x_T)`. A truncated step's reward gets `γ V(x_t)`.
    Returns targets and advantages `[N, T]` float64."""
    r, done, trunc = _rewards_and_dones(cfg, data)
    rho = np.exp(logp - data["behavior_log_probs"].numpy().astype(np.float64))
    vs, adv = np.zeros((N, T)), np.zeros((N, T))
    for n in range(N):
        rew = [r[n, t] + cfg.gamma * values[n, t] * trunc[n, t] for t in range(T)]
        for s in range(T):
            total, disc, trace = values[n, s], 1.0, 1.0
            for t in range(s, T):
                nxt = 0.0 if done[n, t] else values[n, t + 1]
                total += (
                    disc
                    * trace
                    * min(algo_params(cfg, APPOParams).vtrace_rho, rho[n, t])
                    * (rew[t] + cfg.gamma * nxt - values[n, t])
                )
                if done[n, t]:
                    break
                disc *= cfg.gamma
                trace *= min(algo_params(cfg, APPOParams).vtrace_c, rho[n, t])
            vs[n, s] = total
        for s in range(T):
            v_next = 0.0 if done[n, s] else (vs[n, s + 1] if s + 1 < T else values[n, T])
            adv[n, s] = min(algo_params(cfg, APPOParams).vtrace_rho, rho[n, s]) * (
                rew[s] + cfg.gamma * v_next - values[n, s]
            )
    return vs, adv


def naive_gae(cfg, data, bootstrap):
    """Schulman et al. 2016, eq. 16: `A_t = Σ_l (γλ)^l δ_{t+l}` with `δ_t = r_t + γ V_{t+1} - V_t`
    over the behaviour values, summed until the episode's end; `V_T` = the fresh value of the
    bootstrap observation; a truncated step's reward gets `γ V_t`. Returns advantages and targets
    (`A_t + V_t`) `[N, T]` float64."""
    r, done, trunc = _rewards_and_dones(cfg, data)
    old = data["values"].numpy().astype(np.float64)
    v = np.concatenate([old, bootstrap[:, None]], axis=1)
    adv = np.zeros((N, T))
    for n in range(N):
        for t in range(T):
            total, coef = 0.0, 1.0
            for k in range(t, T):
                rew = r[n, k] + cfg.gamma * old[n, k] * trunc[n, k]
                nxt = 0.0 if done[n, k] else v[n, k + 1]
                total += coef * (rew + cfg.gamma * nxt - v[n, k])
                if done[n, k]:
                    break
                coef *= cfg.gamma * cfg.gae_lambda
            adv[n, t] = total
    return adv, adv + old


def _recorded(spy, data, key):
    """`[N, T]` values the loss got (NaN where a sample was left out of the loss)."""
    call = spy.calls[0]
    n, t = _positions(call["behavior_log_probs"], data)
    out = np.full((N, T), np.nan)
    out[n, t] = call[key].numpy()
    return out


def _assert_recorded(spy, data, key, ref) -> None:
    got = _recorded(spy, data, key)
    seen = ~np.isnan(got)
    np.testing.assert_allclose(got[seen], ref[seen], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("c_bar,rho_bar", [(1.0, 1.0), (0.8, 1.5)])
def test_vtrace_targets_and_advantages_match_the_paper_on_off_policy_multistep_episodes(
    tmp_path, monkeypatch, c_bar, rho_bar
):
    """Guards the learner's V-trace call: importance weights from its own log-probs, traces c,
    truncation bootstrap. Zeroing log-ratios, c̄ = 0, or truncation taken as termination fail."""
    data = _batch()
    cfg = _cfg(
        tmp_path,
        *VTRACE[:-2],
        f"--vtrace_rho={rho_bar}",
        f"--vtrace_c={c_bar}",
        "--normalize_advantage=False",
    )
    learner = _learner(cfg, data)
    logp, values = _fresh_outputs(learner.model, data)
    ratios = np.exp(logp - data["behavior_log_probs"].numpy())
    assert (ratios < 0.5).sum() > 5 and (ratios > 2.0).sum() >= 2  # really off-policy, both ways
    spy = LossSpy(monkeypatch, learner)
    learner.train(torch.arange(N))
    assert len(spy.calls) == 1
    ref_vs, ref_adv = naive_vtrace(cfg, data, logp, values)
    _assert_recorded(spy, data, "targets", ref_vs)
    _assert_recorded(spy, data, "advantages", ref_adv)


def test_gae_advantages_and_targets_match_the_paper(tmp_path, monkeypatch):
    """Guards the learner's GAE call: λ, γ, behaviour values with a fresh bootstrap value, episode
    ends and the truncation bootstrap. λ taken as 0 or 1, or truncation as termination, fail."""
    data = _batch(seed=1)
    cfg = _cfg(tmp_path, *GAE, "--normalize_advantage=False")
    learner = _learner(cfg, data)
    _, values = _fresh_outputs(learner.model, data)
    spy = LossSpy(monkeypatch, learner)
    learner.train(torch.arange(N))
    ref_adv, ref_targets = naive_gae(cfg, data, values[:, T])
    _assert_recorded(spy, data, "advantages", ref_adv)
    _assert_recorded(spy, data, "targets", ref_targets)


@pytest.mark.parametrize("estimator", ["gae", "vtrace"])
def test_a_truncated_step_is_bootstrapped_and_a_terminated_one_is_not(tmp_path, monkeypatch, estimator):
    """Agent 0's episode is cut by a time limit at step 3, agent 1's terminates there. The value
    target of a step that ends an episode is `V + ρ (r' - V)` (V-trace, ρ = min(ρ̄, π/μ)) or `r'`
    (GAE), where `r' = r + γ V(s_3)` after a time-out (Pardo et al. 2018, "Time limits in RL") and
    `r' = r` after a termination; V is the value the learner bootstraps with (the behaviour value
    for GAE, the current value for V-trace)."""
    data = _batch(seed=2)
    data["terminated"][:2], data["truncated"][:2] = False, False
    data["truncated"][0, 3], data["terminated"][1, 3] = True, True
    args = GAE if estimator == "gae" else VTRACE
    cfg = _cfg(tmp_path, *args, "--normalize_advantage=False")
    learner = _learner(cfg, data)
    logp, values = _fresh_outputs(learner.model, data)
    spy = LossSpy(monkeypatch, learner)
    learner.train(torch.arange(N))
    targets = _recorded(spy, data, "targets")
    for agent, truncated in ((0, True), (1, False)):
        r = data["rewards"][agent, 3].item() * cfg.reward_scale
        if estimator == "gae":
            v, rho = data["values"][agent, 3].item(), 1.0
            expected = r + GAMMA * v * truncated
        else:
            v = values[agent, 3]
            rho = min(
                algo_params(cfg, APPOParams).vtrace_rho,
                float(np.exp(logp[agent, 3] - data["behavior_log_probs"][agent, 3].item())),
            )
            expected = v + rho * (r + GAMMA * v * truncated - v)
        if truncated:
            assert rho * GAMMA * abs(v) > 0.02  # the bootstrap term is not vacuous
        assert targets[agent, 3] == pytest.approx(expected, rel=1e-4, abs=1e-5), (agent, truncated)


def naive_ppo_loss(cfg, model, data, adv, targets, valid):
    """The loss of one minibatch holding every sample, from torch's Categorical: clipped surrogate
    `-min(r A, clip(r, 1/(1+ε), 1+ε) A)`, value loss `max((V - v)², (V_old + clip(V - V_old, ±δ) - v)²)`
    times its coefficient, minus the entropy bonus; means over valid samples; `A` normalised to zero
    mean and unit std over the valid samples when `normalize_advantage`. adv, targets: `[N, T]`."""
    logits, values = model.evaluate(
        data["obs"].transpose(0, 1), data["rnn_states"].transpose(0, 1), torch.zeros(T + 1, N), 1
    )
    logits, values = logits.transpose(0, 1)[:, :T], values.transpose(0, 1)[:, :T]
    dist = torch.distributions.Categorical(logits=logits)
    adv = torch.as_tensor(adv, dtype=torch.float32)
    targets = torch.as_tensor(targets, dtype=torch.float32)
    valid_adv = adv[valid]
    if cfg.normalize_advantage:
        adv = (adv - valid_adv.mean()) / (valid_adv.std(unbiased=False) + 1e-8)
    terms = []
    for n in range(N):
        for t in range(T):
            if not valid[n, t]:
                continue
            eps = algo_params(cfg, APPOParams).ppo_clip_ratio
            ratio = (dist.log_prob(data["actions"])[n, t] - data["behavior_log_probs"][n, t]).exp()
            clipped = ratio.clamp(1 / (1 + eps), 1 + eps)
            policy = -torch.min(ratio * adv[n, t], clipped * adv[n, t])
            v, v_old, target = values[n, t], data["values"][n, t], targets[n, t]
            v_clip = v_old + (v - v_old).clamp(
                -algo_params(cfg, APPOParams).ppo_clip_value, algo_params(cfg, APPOParams).ppo_clip_value
            )
            value = cfg.value_loss_coeff * torch.max((v - target) ** 2, (v_clip - target) ** 2)
            terms.append(policy + value - cfg.exploration_loss_coeff * dist.entropy()[n, t])
    return torch.stack(terms).mean()


@pytest.mark.parametrize("normalize_advantage", [True, False])
@pytest.mark.parametrize("estimator", ["gae", "vtrace"])
def test_one_update_applies_the_gradient_of_the_reference_ppo_loss(tmp_path, estimator, normalize_advantage):
    """The gradient of one learner step (read from `.grad`) equals that of the naive PPO loss on the
    same batch, with targets and advantages from the naive estimators above. Guards ratio clipping,
    value clipping and advantage normalisation at the learner, together with the estimators."""
    data = _batch(seed=3)
    args = GAE if estimator == "gae" else VTRACE
    cfg = _cfg(tmp_path, *args, f"--normalize_advantage={normalize_advantage}")
    learner = _learner(cfg, data)
    reference = copy.deepcopy(learner.model)
    logp, values = _fresh_outputs(reference, data)
    if estimator == "gae":
        adv, targets = naive_gae(cfg, data, values[:, T])
    else:
        targets, adv = naive_vtrace(cfg, data, logp, values)
    valid = data["is_active"]
    loss = naive_ppo_loss(cfg, reference, data, adv, targets, valid)
    loss.backward()

    # the batch really exercises both clips: ratios outside [1/(1+ε), 1+ε] and value changes > δ
    ratios = np.exp(logp - data["behavior_log_probs"].numpy())
    eps = algo_params(cfg, APPOParams).ppo_clip_ratio
    assert ((ratios < 1 / (1 + eps)) | (ratios > 1 + eps)).mean() > 0.3
    assert (
        np.abs(values[:, :T] - data["values"].numpy()) > algo_params(cfg, APPOParams).ppo_clip_value
    ).mean() > 0.3

    learner.train(torch.arange(N))
    for (name, p), q in zip(learner.model.named_parameters(), reference.parameters(), strict=True):
        torch.testing.assert_close(
            p.grad, q.grad, rtol=2e-3, atol=1e-5, msg=lambda m, name=name: f"{name}: {m}"
        )


@pytest.mark.parametrize("schedule", ["constant", "linear_decay"])
def test_learning_rate_schedule_sets_the_step_size(tmp_path, schedule):
    """Adam's first step moves each parameter by ≈ lr (m̂/√v̂ = ±1), so the largest parameter change
    of one update measures the learning rate the learner used: lr at 3/4 of the budget is lr/4
    under linear decay (lr · (1 - frames / train_for_env_steps)), lr when constant."""
    data = _batch(seed=4)
    cfg = _cfg(tmp_path, *GAE, f"--lr_schedule={schedule}", "--train_for_env_steps=40000", "--adam_eps=1e-12")
    learner = _learner(cfg, data)
    before = [p.detach().clone() for p in learner.model.parameters()]
    stats = learner.train(torch.arange(N), env_frames=30000)
    step = max(
        float((p.detach() - b).abs().max()) for p, b in zip(learner.model.parameters(), before, strict=True)
    )
    expected = cfg.learning_rate * (1.0 - 30000 / 40000) if schedule == "linear_decay" else cfg.learning_rate
    assert step == pytest.approx(expected, rel=1e-3)
    assert stats["lr"] == pytest.approx(expected)
