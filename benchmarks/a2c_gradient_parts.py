"""Which loss term drives which weights in one A2C update on CartPole-v1 (issue 20's stability study,
docs/logs/a2c_stability_2026-11-24_critic.md).

Collects one A2C batch (16 CartPole-v1 envs x `--rollout` steps, sampled actions) with the model of a
checkpoint (or a fresh one), computes A2C's targets as `A2CLearner` does (n-step returns, truncated
episodes bootstrapped) and prints, per parameter group (actor encoder, policy head, value head,
critic encoder when separate), the L2 norm of the gradient of each term of `a2c_loss`: the policy
term, `value_loss_coeff x` the value term, the entropy term. On weights both heads read (the shared
encoder) the ratio value/policy is what Adam's per-parameter step follows.

    PYTHONPATH=. python benchmarks/a2c_gradient_parts.py [--checkpoint=PATH.pth] [surge flags...]
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np
import torch

from surge.algorithms.a2c.loss import a2c_loss
from surge.app.resolve import parse_cfg
from surge.learning.returns import gae
from surge.models.actor_critic import make_actor_critic


def collect(model, envs: gym.vector.VectorEnv, T: int, seed: int) -> dict[str, torch.Tensor]:
    """One rollout `[T, N]` of obs, actions, rewards, dones, trunc, values and the bootstrap obs."""
    obs, _ = envs.reset(seed=seed)
    hidden = torch.zeros(envs.num_envs, model.rnn_state_size)
    out: dict[str, list] = {k: [] for k in ("obs", "actions", "rewards", "dones", "trunc", "values")}
    with torch.no_grad():
        for _ in range(T):
            o = torch.as_tensor(obs, dtype=torch.float32)
            act = model.act(o, hidden)
            obs, r, term, trunc, _ = envs.step(act.actions.numpy())
            for k, v in zip(out, (o, act.actions, r, term | trunc, trunc & ~term, act.values), strict=True):
                out[k].append(torch.as_tensor(np.asarray(v)).float() if k != "obs" else v)
    b = {k: torch.stack(v) for k, v in out.items()}
    b["actions"] = b["actions"].long()
    b["last_obs"] = torch.as_tensor(obs, dtype=torch.float32)
    return b


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--checkpoint", default="")
    p.add_argument("--warmup_rounds", type=int, default=20, help="rollouts run first (episodes mid-way)")
    args, flags = p.parse_known_args()
    cfg = parse_cfg(["--env=CartPole-v1", "--algo=A2C", "--seed=1", *flags])
    torch.manual_seed(cfg.seed)
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * 16)
    model = make_actor_critic(cfg, envs.single_observation_space, envs.single_action_space)
    if args.checkpoint:
        model.load_state_dict(torch.load(args.checkpoint, weights_only=True)["model"])
    b = collect(model, envs, cfg.rollout * (args.warmup_rounds + 1), cfg.seed)
    b = {k: v[-cfg.rollout :] if k != "last_obs" else v for k, v in b.items()}
    T, N = b["rewards"].shape
    with torch.no_grad():
        boot = model.act(b["last_obs"], torch.zeros(N, model.rnn_state_size)).values
    norm = model.returns_normalizer  # None unless --normalize_returns: values in normalised units
    raw = (lambda v: v) if norm is None else norm.denormalize
    old_values = raw(b["values"])
    adv, targets = gae(
        b["rewards"],
        torch.cat([old_values, raw(boot)[None]]),
        b["dones"] - b["trunc"],  # terminated
        cfg.gamma,
        cfg.gae_lambda,
        truncated=b["trunc"],
        truncation_values=old_values,
    )
    if norm is not None:  # the learner regresses the normalised critic on normalised targets
        targets = (targets - norm.mean.float()) / (norm.var.float() + norm.epsilon).sqrt()
    logits, values = model.evaluate(b["obs"], torch.zeros(T, N, model.rnn_state_size), b["dones"], 1)
    dist = model.distribution(logits.reshape(T * N, -1))
    _, parts = a2c_loss(
        dist.log_prob(b["actions"].reshape(-1)),
        dist.entropy(),
        values.reshape(-1),
        adv.reshape(-1),
        targets.reshape(-1),
        torch.ones(T * N),
        cfg.value_loss_coeff,
        cfg.exploration_loss_coeff,
    )
    # the terms again, with their graph (a2c_loss returns detached parts)
    count = T * N
    terms = {
        "policy": -(dist.log_prob(b["actions"].reshape(-1)) * adv.reshape(-1)).sum() / count,
        "value": cfg.value_loss_coeff * 0.5 * ((values.reshape(-1) - targets.reshape(-1)) ** 2).sum() / count,
        "entropy": -cfg.exploration_loss_coeff * dist.entropy().mean(),
    }
    groups = {
        "encoder (actor)": list(model.encoder.parameters()),
        "policy_head": list(model.policy_head.parameters()),
        "value_head": list(model.value_head.parameters()),
    }
    if getattr(model, "critic_encoder", None) is not None:
        groups["critic_encoder"] = list(model.critic_encoder.parameters())
    norms: dict[str, dict[str, float]] = {g: {} for g in groups}
    for name, term in terms.items():
        grads = torch.autograd.grad(term, list(model.parameters()), retain_graph=True, allow_unused=True)
        by_param = dict(zip([id(q) for q in model.parameters()], grads, strict=True))
        for g, params in groups.items():
            gs = [by_param[id(q)] for q in params if by_param[id(q)] is not None]
            norms[g][name] = float(torch.sqrt(sum((x**2).sum() for x in gs))) if gs else 0.0
    share = "shared" if cfg.actor_critic_share_weights else "separate"
    print(
        f"{share} networks, normalize_returns={cfg.normalize_returns}, rollout={cfg.rollout}; "
        f"episode return in batch: {b['rewards'].sum() / max(1.0, float(b['dones'].sum())):.1f}/episode end; "
        f"value_mean={values.mean():.2f} target_mean={targets.mean():.2f} |adv| mean={adv.abs().mean():.2f}; "
        f"value_loss={parts['value_loss']:.3g} policy_loss={parts['policy_loss']:.3g}"
    )
    print(f"{'group':18s} {'policy':>10s} {'value':>10s} {'entropy':>10s} {'value/policy':>13s}")
    for g, n in norms.items():
        ratio = n["value"] / n["policy"] if n["policy"] else float("inf")
        print(f"{g:18s} {n['policy']:10.4g} {n['value']:10.4g} {n['entropy']:10.4g} {ratio:13.3g}")


if __name__ == "__main__":
    main()
