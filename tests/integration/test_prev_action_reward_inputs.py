"""`--use_prev_action_reward`: what the model is fed is each env's previous action and reward,
zero at an episode's start, as a plain loop over the same gymnasium env computes them.

The serial sampler plays real gymnasium envs (CartPole-v1: Discrete actions, episodes that end
within the steps played; Pendulum-v1: Box actions and rewards that vary); every acting call's
core input is recorded. A naive loop then replays each env from its seed with the stored actions
and checks, step by step: the observation (it is the same episode), the stored previous action
and reward, and the last A + 1 features of the core input that acting computed for that
observation (the previous action, one-hot for Discrete, then the previous reward). The learner's
recomputation (`ActorCritic.evaluate` on the stored trajectories) gives the values (and APPO's
logits) acting gave. APPO and A2C, with and without an RNN.
"""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.runtime.components import build_components
from surge.runtime.serial import SerialSampler

STEPS = 60  # fewer than the rollout: nothing leaves the buffers
SEED = 3
ENVS = 2
ENV_ARGS = {
    "CartPole-v1": [],
    "Pendulum-v1": ["--clip_actions=False"],  # the env gets the sampled action as stored
}


def _naive(env_id: str, first_obs: np.ndarray, actions: np.ndarray):
    """Replays the env whose seeded reset gave `first_obs` (surge seeds env k with
    `SEED * 100003 + k`; the one that matches is used) with `actions` `[STEPS, ...]`: the
    observations `[STEPS, ...]`, previous actions `[STEPS, A]` and rewards `[STEPS]` of each step,
    and how many episodes ended."""
    env = gym.make(env_id)
    for k in range(ENVS):
        obs, _ = env.reset(seed=SEED * 100003 + k)
        if np.array_equal(obs, first_obs):
            break
    else:
        raise AssertionError("no seed gives the stored first observation")
    discrete = isinstance(env.action_space, gym.spaces.Discrete)
    width = env.action_space.n if discrete else int(np.prod(env.action_space.shape))
    prev_a, prev_r = np.zeros(width, np.float32), 0.0
    seen_obs, seen_a, seen_r, ends = [], [], [], 0
    for t in range(STEPS):
        seen_obs.append(obs)
        seen_a.append(prev_a)
        seen_r.append(prev_r)
        obs, reward, terminated, truncated, _ = env.step(actions[t])
        if terminated or truncated:
            obs, _ = env.reset()
            prev_a, prev_r, ends = np.zeros(width, np.float32), 0.0, ends + 1
        else:
            prev_a = np.eye(width, dtype=np.float32)[int(actions[t])] if discrete else np.float32(actions[t])
            prev_r = float(reward)
    return np.stack(seen_obs), np.stack(seen_a), np.array(seen_r, np.float32), ends


@pytest.mark.parametrize("algo", ["APPO", "A2C"])
@pytest.mark.parametrize("use_rnn", [True, False])
@pytest.mark.parametrize("env_id", list(ENV_ARGS))
def test_the_model_sees_the_previous_action_and_reward_zeroed_at_episode_starts(
    tmp_path, env_id, use_rnn, algo
):
    cfg = parse_cfg(
        [
            f"--env={env_id}",
            f"--algo={algo}",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            f"--num_envs_per_worker={ENVS}",
            "--worker_num_splits=1",
            "--rollout=64",
            "--recurrence=64",
            "--batch_size=128",
            f"--use_rnn={use_rnn}",
            "--hidden_size=8",
            f"--seed={SEED}",
            "--decorrelate_envs_on_one_worker=False",
            "--use_prev_action_reward=True",
            *ENV_ARGS[env_id],
        ]
    )
    c = build_components(cfg)
    model = c.model
    calls: list[tuple[torch.Tensor, torch.Tensor]] = []  # (raw obs [B, ...], core input [B, F])
    act, step = model.act, model.core.step

    def recording_act(obs, *args, **kwargs):
        calls.append((obs["obs"].clone(), None))
        return act(obs, *args, **kwargs)

    def recording_step(x, state):
        calls[-1] = (calls[-1][0], x.clone())
        return step(x, state)

    model.act, model.core.step = recording_act, recording_step
    sampler = SerialSampler(c)
    for _ in range(STEPS):
        sampler.step()
    buf = c.buffers
    used = torch.nonzero(~torch.isnan(buf.obs["obs"][:, STEPS]).any(dim=-1)).flatten()
    assert len(used) == ENVS
    assert len(calls) == STEPS
    width = buf.obs["prev_action"].shape[-1]
    total_ends = 0
    for slot in used.tolist():
        actions = buf.actions[slot, :STEPS].numpy()
        obs, prev_a, prev_r, ends = _naive(env_id, buf.obs["obs"][slot, 0].numpy(), actions)
        total_ends += ends
        np.testing.assert_array_equal(buf.obs["obs"][slot, :STEPS].numpy(), obs)
        np.testing.assert_array_equal(buf.obs["prev_action"][slot, :STEPS].numpy(), prev_a)
        np.testing.assert_array_equal(buf.obs["prev_reward"][slot, :STEPS, 0].numpy(), prev_r)
        for t, (seen, core_in) in enumerate(calls):
            row = int(torch.nonzero((seen == torch.from_numpy(obs[t])).all(dim=-1)).flatten()[0])
            tail = core_in[row, -(width + 1) :].numpy()
            np.testing.assert_array_equal(tail[:width], prev_a[t], err_msg=f"slot {slot}, step {t}")
            assert tail[width] == prev_r[t], (slot, t)
    if env_id == "CartPole-v1":
        assert total_ends >= 3  # episode starts inside the steps checked
    # the learner recomputes the policy from the stored inputs: the values (and APPO's logits)
    # acting wrote
    obs_tm = {k: v[used, :STEPS].transpose(0, 1) for k, v in buf.obs.items()}
    states = buf.rnn_states[used, :STEPS].transpose(0, 1)
    dones = (buf.terminated | buf.truncated)[used, :STEPS].transpose(0, 1).float()
    model.act = act
    with torch.no_grad():
        logits, values = model.evaluate(obs_tm, states, dones, STEPS)
    torch.testing.assert_close(values, buf.values[used, :STEPS].transpose(0, 1), rtol=1e-5, atol=1e-5)
    if algo == "APPO":
        stored = buf.action_logits[used, :STEPS].transpose(0, 1)
        torch.testing.assert_close(logits, stored, rtol=1e-5, atol=1e-5)
    c.close()
