"""One DQN update against an independent computation (issue 20: every algorithm has a fast
reference-gradient test): the learner's loss on a replay sample, and its gradient, equal a naive
loop over the stored block (n-step return by hand, the double-DQN target of van Hasselt et al.
2016 eq. 4, Huber loss; C51's projection atom by atom, Bellemare et al. 2017 Algorithm 1) with
autograd on a hand-written loss."""

import copy
import math

import gymnasium as gym
import pytest
import torch
import torch.nn.functional as F

from surge.algorithms.dqn.learner import DQNLearner
from surge.algorithms.dqn.model import make_dqn_parts
from surge.app.resolve import parse_cfg

T, N_COLS, GAMMA = 12, 2, 0.9


def _learner(tmp_path, *flags):
    cfg = parse_cfg(
        [
            "--env=CartPole-v1",
            "--algo=DQN",
            f"--train_dir={tmp_path}",
            "--train_for_env_steps=100000",  # the epsilon schedule is a fraction of it
            f"--gamma={GAMMA}",
            "--batch_size=16",
            "--encoder_mlp_layers",
            "16",
            "--seed=0",
            "--double_dqn=False",  # the naive loops' max target unless a test passes True
            *flags,
        ]
    )
    torch.manual_seed(0)
    parts = make_dqn_parts(cfg, gym.spaces.Box(-5, 5, (4,)), gym.spaces.Discrete(3))
    learner = DQNLearner(
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


def _block():
    g = torch.Generator().manual_seed(1)
    term = torch.zeros(T, N_COLS)
    trunc = torch.zeros(T, N_COLS)
    term[4, 0] = 1  # column 0 terminates at step 4
    trunc[7, 1] = 1  # column 1 is truncated at step 7 (bootstraps from its own observation)
    return {
        "obs": torch.randn(T + 1, N_COLS, 4, generator=g),
        "actions": torch.randint(3, (T, N_COLS), generator=g),
        "rewards": torch.randn(T, N_COLS, generator=g),
        "dones": torch.maximum(term, trunc),
        "trunc": trunc,
        "is_active": torch.ones(T, N_COLS, dtype=torch.bool),
        "behavior_version": torch.zeros(T, N_COLS, dtype=torch.int64),
        "actor_ids": torch.arange(N_COLS),
    }


def _naive_window(b, t, c, n):
    """(G, discount, next obs) of step t of column c, by hand."""
    G, disc = 0.0, None
    for k in range(n):
        G += GAMMA**k * float(b["rewards"][t + k, c])
        if b["dones"][t + k, c] and not b["trunc"][t + k, c]:
            return G, 0.0, b["obs"][t + k + 1, c]
        if b["trunc"][t + k, c]:
            return G, GAMMA ** (k + 1), b["obs"][t + k, c]
    disc = GAMMA**n
    return G, disc, b["obs"][t + n, c]


def _sample(learner, b):
    learner.observe(b)
    if learner.params.prioritized_replay:  # unequal priorities: importance weights other than 1
        leaves = torch.arange(T * N_COLS)
        learner.replay.update_priorities(
            leaves, torch.rand(T * N_COLS, generator=torch.Generator().manual_seed(2))
        )
    return learner.sample()


def _grads(model):
    return [p.grad.clone() for p in model.parameters()]


@pytest.mark.parametrize("prioritized", [False, True])
def test_double_n_step_update_matches_naive_loop(tmp_path, prioritized):
    learner = _learner(
        tmp_path, "--double_dqn=True", "--n_step_return=3", f"--prioritized_replay={prioritized}"
    )
    b = _block()
    s = _sample(learner, b)
    ref_q = copy.deepcopy(learner.online)
    target = learner.target

    loss, prios, _ = learner.losses(s)
    learner.optimizer.zero_grad()
    loss.backward()
    got = _grads(learner.online)

    terms = []
    for i in range(len(s["rows"])):
        t, c, a = int(s["rows"][i]), int(s["columns"][i]), int(s["actions"][i])
        assert torch.equal(s["obs"][i], b["obs"][t, c])
        G, disc, nxt = _naive_window(b, t, c, 3)
        with torch.no_grad():
            a_star = int(ref_q(nxt[None]).q_values[0].argmax())
            y = G + disc * float(target(nxt[None]).q_values[0, a_star])
        q = ref_q(b["obs"][t, c][None]).q_values[0, a]
        err = y - q
        huber = 0.5 * err**2 if abs(float(err.detach())) <= 1 else abs(err) - 0.5
        w = float(s["is_weights"][i])
        terms.append(w * huber)
        assert math.isclose(float(prios[i]), abs(float(err.detach())), rel_tol=1e-4, abs_tol=1e-5)
    ref_loss = torch.stack(terms).mean()
    ref_loss.backward()
    assert torch.allclose(loss, ref_loss, rtol=1e-5, atol=1e-6)
    for g, r in zip(got, _grads(ref_q), strict=True):
        assert torch.allclose(g, r, rtol=1e-4, atol=1e-6)
    if prioritized:
        assert not bool(torch.all(s["is_weights"] == 1.0))


def test_categorical_double_update_matches_naive_projection(tmp_path):
    v_min, v_max, atoms = -2.0, 2.0, 11
    learner = _learner(
        tmp_path, "--categorical=True", f"--num_atoms={atoms}", f"--v_min={v_min}", f"--v_max={v_max}",
        "--double_dqn=True", "--n_step_return=2", "--dueling=True",
    )  # fmt: skip
    b = _block()
    s = _sample(learner, b)
    ref_q = copy.deepcopy(learner.online)
    target = learner.target
    loss, _, _ = learner.losses(s)
    learner.optimizer.zero_grad()
    loss.backward()
    got = _grads(learner.online)

    z = [v_min + j * (v_max - v_min) / (atoms - 1) for j in range(atoms)]
    dz = (v_max - v_min) / (atoms - 1)
    terms = []
    for i in range(len(s["rows"])):
        t, c, a = int(s["rows"][i]), int(s["columns"][i]), int(s["actions"][i])
        G, disc, nxt = _naive_window(b, t, c, 2)
        with torch.no_grad():
            a_star = int(ref_q(nxt[None]).q_values[0].argmax())
            p_next = torch.softmax(target(nxt[None]).log_probs[0, a_star], 0).tolist()
        m = [0.0] * atoms
        for j in range(atoms):
            tz = min(max(G + disc * z[j], v_min), v_max)
            bj = (tz - v_min) / dz
            lo, hi = math.floor(bj), math.ceil(bj)
            if lo == hi:
                m[lo] += p_next[j]
            else:
                m[lo] += p_next[j] * (hi - bj)
                m[hi] += p_next[j] * (bj - lo)
        logits_taken = ref_q(b["obs"][t, c][None]).log_probs[0, a]
        terms.append(-(torch.tensor(m) * F.log_softmax(logits_taken, 0)).sum())
    ref_loss = torch.stack(terms).mean()
    ref_loss.backward()
    assert torch.allclose(loss, ref_loss, rtol=1e-5, atol=1e-6)
    for g, r in zip(got, _grads(ref_q), strict=True):
        assert torch.allclose(g, r, rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize(("clip", "loss"), [(1.0, "huber"), (0.5, "huber"), (0.0, "huber"), (1.0, "mse")])
def test_priorities_are_td_errors_clipped_at_priority_clip(tmp_path, clip, loss):
    """The priorities an update writes are the naive loop's |y - Q| clipped at --priority_clip
    (rlpyt's DQN clamps them at its Huber delta, 1); 0 leaves them unclipped, and so does the mse
    loss (rlpyt clamps only with its Huber loss)."""
    flags = ["--n_step_return=3", "--prioritized_replay=True", f"--dqn_loss={loss}"]
    if clip != 1.0:
        flags.append(f"--priority_clip={clip}")
    learner = _learner(tmp_path, *flags)
    b = _block()
    s = _sample(learner, b)
    ref_q, target = copy.deepcopy(learner.online), copy.deepcopy(learner.target)
    errors = []
    for i in range(len(s["rows"])):
        t, c, a = int(s["rows"][i]), int(s["columns"][i]), int(s["actions"][i])
        G, disc, nxt = _naive_window(b, t, c, 3)
        with torch.no_grad():
            y = G + disc * float(target(nxt[None]).q_values[0].max())
            errors.append(abs(y - float(ref_q(b["obs"][t, c][None]).q_values[0, a])))
    stats = learner.update(s)
    expected = [min(e, clip) if clip > 0 and loss == "huber" else e for e in errors]
    assert max(errors) > 1.0  # the sample has errors the clip acts on
    for got, want in zip(s["td_errors"].tolist(), expected, strict=True):
        assert math.isclose(got, want, rel_tol=1e-4, abs_tol=1e-5)
    assert math.isclose(stats["td_abs_mean"], sum(errors) / len(errors), rel_tol=1e-4)
