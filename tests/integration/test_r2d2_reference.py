"""One R2D2 update against a naive per-sample loop written from the paper (Kapturowski et al. 2019;
issue 20: every algorithm has a fast reference-gradient test).

For each sampled sequence, by hand: the recurrent Q-network is stepped one observation at a time
from the state stored with the sequence's first step (random here, so a learner that ignores it
fails), the state zeroed after each episode end; the first `burn_in` steps without gradient, for
the online and the target network; the n-step return of each learning step by a loop over its
window (stopping at a termination, or at a truncation that bootstraps from its own observation);
the double-Q target `h(G + γ^k h⁻¹(Q'(s', argmax Q(s', ·))))` with h and h⁻¹ as the paper (and
Pohlen et al. 2018, Prop. A.2) write them, in float64; the loss `mean w_i ½ δ²` with the
importance weights `(N P(i))^-β / max w`; the priority `η max|δ| + (1 − η) mean|δ|`."""

import copy
import math

import gymnasium as gym
import numpy as np
import pytest
import torch

from surge.algorithms.r2d2.learner import R2D2Learner
from surge.algorithms.r2d2.model import make_r2d2_parts
from surge.app.resolve import parse_cfg

T, N_COLS, GAMMA, BURN_IN, LEARN, N_STEP, ETA, EPS = 16, 2, 0.9, 2, 3, 2, 0.8, 1e-2


def _learner(tmp_path, *flags):
    cfg = parse_cfg(
        [
            "--env=CartPole-v1",
            "--algo=R2D2",
            f"--train_dir={tmp_path}",
            f"--gamma={GAMMA}",
            "--batch_size=8",
            "--encoder_mlp_layers",
            "16",
            "--hidden_size=8",
            "--rnn_type=gru",
            f"--burn_in={BURN_IN}",
            f"--sequence_length={LEARN}",
            f"--n_step_return={N_STEP}",
            "--store_rnn_state_interval=2",
            f"--priority_eta={ETA}",
            f"--value_rescale_eps={EPS}",
            "--replay_size=64",
            f"--rollout={T}",
            f"--recurrence={T}",
            "--seed=0",
            *flags,
        ]
    )
    torch.manual_seed(0)
    parts = make_r2d2_parts(cfg, gym.spaces.Box(-5, 5, (4,)), gym.spaces.Discrete(3))
    learner = R2D2Learner(
        cfg,
        parts.acting,
        None,
        torch.device("cpu"),
        0,
        learner_modules=parts.learner_modules,
        num_columns=N_COLS,
    )
    with torch.no_grad():  # a target network that differs from the online one
        for p in learner.target.parameters():
            p.add_(0.1 * torch.randn_like(p))
    return learner


def _block(state_size):
    g = torch.Generator().manual_seed(1)
    term = torch.zeros(T, N_COLS)
    trunc = torch.zeros(T, N_COLS)
    term[5, 0] = 1  # column 0 terminates at step 5
    trunc[8, 1] = 1  # column 1 is truncated at step 8 (bootstraps from its own observation)
    return {
        "obs": torch.randn(T + 1, N_COLS, 4, generator=g),
        "rnn_states": torch.randn(T + 1, N_COLS, state_size, generator=g),
        "actions": torch.randint(3, (T, N_COLS), generator=g),
        "rewards": 3 * torch.randn(T, N_COLS, generator=g),
        "dones": torch.maximum(term, trunc),
        "trunc": trunc,
        "is_active": torch.ones(T, N_COLS, dtype=torch.bool),
        "behavior_version": torch.zeros(T, N_COLS, dtype=torch.int64),
        "actor_ids": torch.arange(N_COLS),
    }


def h(x):
    return math.copysign(math.sqrt(abs(x) + 1) - 1, x) + EPS * x


def h_inv(z):
    return math.copysign(((math.sqrt(1 + 4 * EPS * (abs(z) + 1 + EPS)) - 1) / (2 * EPS)) ** 2 - 1, z)


def _unroll(net, b, start, c, steps, grad_from):
    """Q-values `[steps + 1, A]` of rows start .. start+steps of column c, stepping the network one
    observation at a time from the stored state; no gradient before row start+grad_from."""
    state = b["rnn_states"][start, c][None]
    qs = []
    for k in range(steps + 1):
        ctx = torch.enable_grad() if k >= grad_from else torch.no_grad()
        with ctx:
            out = net(b["obs"][start + k, c][None], state)
        qs.append(out.q_values[0])
        state = out.rnn_states
        if k < steps and b["dones"][start + k, c]:
            state = torch.zeros_like(state)
    return qs


def _window(b, t, c):
    """(G, discount, bootstrap row) of step t of column c, by hand."""
    G = 0.0
    for k in range(N_STEP):
        G += GAMMA**k * float(b["rewards"][t + k, c])
        if b["dones"][t + k, c] and not b["trunc"][t + k, c]:
            return G, 0.0, t + k + 1
        if b["trunc"][t + k, c]:
            return G, GAMMA ** (k + 1), t + k
    return G, GAMMA**N_STEP, t + N_STEP


@pytest.mark.parametrize("prioritized", [False, True])
def test_r2d2_update_matches_naive_loop(tmp_path, prioritized):
    learner = _learner(
        tmp_path, f"--prioritized_replay={prioritized}", "--pri_alpha=0.7", "--pri_beta_init=0.5"
    )
    b = _block(learner.online.rnn_state_size)
    learner.observe(b)
    replay = learner.replay
    if prioritized:  # unequal priorities: importance weights other than 1
        leaves = np.nonzero(replay.priorities.tree.leaves() > 0)[0]
        replay.priorities.update(leaves, np.random.default_rng(2).uniform(0.1, 3.0, len(leaves)))
    s = learner.sample()
    ref_q = copy.deepcopy(learner.online)
    target = learner.target

    loss, td_abs, mask, _ = learner.losses(s)
    learner.optimizer.zero_grad()
    loss.backward()
    got = [p.grad.clone() for p in learner.online.parameters()]
    assert bool(mask.all())

    steps = BURN_IN + LEARN + N_STEP - 1
    B = len(s["starts"])
    terms, mixes = [], []
    tree = replay.priorities.tree
    p_alpha = tree.get(s["indices"].numpy())
    beta = replay.priorities.beta(learner.env_steps)
    w_all = (tree.num_nonzero * p_alpha / tree.total) ** (-beta)
    for i in range(B):
        st, c = int(s["starts"][i]), int(s["columns"][i])
        q_on = _unroll(ref_q, b, st, c, steps, BURN_IN)
        with torch.no_grad():
            q_tg = _unroll(target, b, st, c, steps, steps + 1)
        w = float(w_all[i] / w_all.max()) if prioritized else 1.0
        assert math.isclose(float(s["is_weights"][i]), w, rel_tol=1e-5)
        deltas = []
        for j in range(LEARN):
            t = st + BURN_IN + j
            G, disc, nxt = _window(b, t, c)
            k = nxt - st
            a_star = int(q_on[k].detach().argmax())
            y = h(G + disc * h_inv(float(q_tg[k][a_star]))) if disc else h(G)
            q = q_on[BURN_IN + j][int(b["actions"][t, c])]
            delta = y - q
            terms.append(w * 0.5 * delta**2)
            deltas.append(abs(float(delta.detach())))
            assert math.isclose(float(td_abs[j, i]), deltas[-1], rel_tol=1e-4, abs_tol=1e-5)
        mixes.append(ETA * max(deltas) + (1 - ETA) * sum(deltas) / LEARN)
    ref_loss = torch.stack(terms).sum() / (LEARN * B)
    ref_loss.backward()
    assert torch.allclose(loss, ref_loss.float(), rtol=1e-5, atol=1e-6)
    for g, r in zip(got, [p.grad for p in ref_q.parameters()], strict=True):
        assert torch.allclose(g, r, rtol=1e-4, atol=1e-6)

    # the priorities written back: (eta max + (1 - eta) mean + eps)^alpha per sequence
    learner.update(s)
    alpha = 0.7 if prioritized else 0.0
    idx = s["indices"].tolist()
    for i in range(B):
        if idx.count(idx[i]) == 1:
            want = (mixes[i] + replay.priorities.eps) ** alpha
            assert math.isclose(float(tree.get(np.array([idx[i]]))[0]), want, rel_tol=1e-4)
    if prioritized:
        assert not bool(torch.all(s["is_weights"] == 1.0))
