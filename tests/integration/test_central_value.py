"""The central value (asymmetric actor-critic, `surge.learning.central_value`) on
`occluded_payout` (surge.envs.occluded_payout: the state holds a hidden loan the actor never sees).

Expected values come from naive loops written here (GAE, Schulman et al. 2016 eq. 16; rl_games'
`default_critic_loss`; torch's plain Adam), never from the learner's own output."""

from __future__ import annotations

import copy
import math

import gymnasium as gym
import pytest
import torch
from serial_batches import first_batch

from surge.algorithms.appo.config import APPOParams
from surge.app.notes import config_notes
from surge.app.preflight import validate_cfg
from surge.app.resolve import parse_cfg
from surge.cfg.config import algo_params
from surge.errors import ConfigError
from surge.learning.central_value import CV_NAME, actor_obs, actor_observation_space
from surge.runtime.components import build_components
from surge.runtime.placement import checkpoint_state, restore_policy

GAMMA, LAMBDA = 0.97, 0.9


def _cfg(tmp_path, *extra):
    return parse_cfg(
        [
            "--env=occluded_payout",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--worker_num_splits=1",
            "--rollout=8",
            "--batch_size=32",
            "--seed=1",
            f"--gamma={GAMMA}",
            f"--gae_lambda={LAMBDA}",
            "--central_value=True",
            "--decorrelate_envs_on_one_worker=False",
            *extra,
        ]
    )


def test_refusals(tmp_path):
    with pytest.raises(ConfigError) as e:
        validate_cfg(parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", "--central_value=True"]))
    assert e.value.field == "central_value" and "'state'" in str(e.value) and "Box" in str(e.value)
    with pytest.raises(ConfigError) as e:
        validate_cfg(_cfg(tmp_path, "--central_value_state_key=privileged"))
    assert "'privileged'" in str(e.value)
    with pytest.raises(ConfigError) as e:
        validate_cfg(_cfg(tmp_path, "--algo=A2C"))
    assert e.value.field == "central_value" and "A2C" in str(e.value)
    with pytest.raises(ConfigError) as e:
        validate_cfg(_cfg(tmp_path, "--central_value_use_rnn=True"))
    assert e.value.field == "central_value_use_rnn"
    with pytest.raises(ConfigError) as e:
        validate_cfg(_cfg(tmp_path, "--central_value_minibatch_size=0"))
    assert e.value.field == "central_value_minibatch_size"
    validate_cfg(_cfg(tmp_path))  # accepted
    # its flags without --central_value are reported, not silently ignored
    notes = config_notes(_cfg(tmp_path, "--central_value=False", "--central_value_mini_epochs=7"))
    assert "--central_value_mini_epochs has no effect without --central_value=True." in notes
    assert (
        parse_cfg(["--env=occluded_payout", "--central_value_learning_rate=3e-4"]).central_value_learning_rate
        == 3e-4
    )


def test_actor_is_built_without_the_state_and_inference_never_reads_it(tmp_path):
    c = build_components(_cfg(tmp_path))
    obs_space = c.layout.info.observation_space
    assert isinstance(obs_space, gym.spaces.Dict) and set(obs_space.spaces) == {"obs", "state"}
    # the actor's encoder takes the bare obs entry (5 features), not the state (7)
    first = next(m for m in c.model.encoder.modules() if isinstance(m, torch.nn.Linear))
    assert first.in_features == obs_space["obs"].shape[0]
    buf = c.layout.buffers
    n = buf.obs["obs"].shape[0]
    buf.obs["obs"][:, 0] = torch.rand(n, 5)
    buf.obs["state"].fill_(math.nan)  # the buffers still store the state; acting must not read it
    c.inference.infer([(slice(0, n), 0)])
    assert torch.isfinite(buf.behavior_log_probs[:, 0]).all()
    assert torch.isfinite(buf.values[:, 0]).all()
    assert ((buf.actions[:, 0] >= 0) & (buf.actions[:, 0] < 4)).all()
    c.close()


def test_actor_space_keeps_the_other_entries():
    box = gym.spaces.Box(0.0, 1.0, (3,))
    mask = gym.spaces.Box(0, 1, (2,), dtype=bool)
    space = gym.spaces.Dict({"obs": box, "action_mask": mask, "state": gym.spaces.Box(-1.0, 1.0, (5,))})
    assert actor_observation_space(space, "state") == gym.spaces.Dict({"obs": box, "action_mask": mask})
    assert actor_observation_space(gym.spaces.Dict({"obs": box, "state": box}), "state") == box
    obs = {
        "obs": torch.zeros(2, 3),
        "action_mask": torch.ones(2, 2, dtype=torch.bool),
        "state": torch.ones(2, 5),
    }
    assert set(actor_obs(obs, "state")) == {"obs", "action_mask"}


def _ended(b):
    """`[T, N]` float32: 1 where the episode terminated or was truncated (prepare_batch keeps them apart)."""
    return torch.maximum(b["terminated"], b["truncated"])


def _naive_gae(rewards, values, dones, gamma, lam):
    """`rewards`, `dones` `[T, N]`, `values` `[T+1, N]` -> targets `[T, N]` (GAE's returns)."""
    T, N = rewards.shape
    targets = torch.zeros(T, N)
    for n in range(N):
        adv = 0.0
        for t in reversed(range(T)):
            nonterminal = 1.0 - float(dones[t, n])
            delta = float(rewards[t, n]) + gamma * float(values[t + 1, n]) * nonterminal - float(values[t, n])
            adv = delta + gamma * lam * nonterminal * adv
            targets[t, n] = adv + float(values[t, n])
    return targets


def test_targets_and_central_value_update_match_a_naive_computation(tmp_path):
    cfg = _cfg(
        tmp_path,
        "--central_value_mini_epochs=1",
        "--central_value_minibatch_size=1000",  # one step over the whole batch
        "--central_value_learning_rate=0.01",
        "--central_value_max_grad_norm=0.5",
        "--ppo_epochs=1",
        "--normalize_returns=False",  # targets in return units, as the naive loop computes them
    )
    c = build_components(cfg)
    learner = c.learner
    _, slots = first_batch(c)
    b = learner.prepare_batch(slots)
    ref = copy.deepcopy(b)
    cv0 = copy.deepcopy(learner.learner_modules[CV_NAME])
    actor_value_head = [p.detach().clone() for p in c.model.value_head.parameters()]
    stats = learner.train_batch(b)

    states = ref["cv_state"]  # [T+1, N, 7], split from the actor's obs by prepare_batch
    assert ref["obs"].shape[-1] == 5  # the actor's part: the bare obs entry
    T, N = ref["rewards"].shape
    with torch.no_grad():
        values = torch.stack(
            [torch.stack([cv0(states[t, n][None])[0] for n in range(N)]) for t in range(T + 1)]
        )
    targets = _naive_gae(ref["rewards"], values, _ended(ref), GAMMA, LAMBDA)
    torch.testing.assert_close(b["targets"], targets, atol=1e-5, rtol=1e-5)

    # one plain-Adam step on rl_games' clipped critic loss (v == v_old at the first step), masked mean
    opt = torch.optim.Adam(
        cv0.parameters(), lr=0.01, betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps
    )
    v = cv0(states[:T].reshape(T * N, -1))
    old = values[:T].reshape(-1)
    clipped = old + (v - old).clamp(
        -algo_params(cfg, APPOParams).ppo_clip_value, algo_params(cfg, APPOParams).ppo_clip_value
    )
    per = torch.max((v - targets.reshape(-1)) ** 2, (clipped - targets.reshape(-1)) ** 2)
    loss = per.mean()  # every sample is valid
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(cv0.parameters(), 0.5)
    opt.step()
    assert stats["cv_loss"] == pytest.approx(float(loss.detach()), rel=1e-5)
    for got, want in zip(learner.learner_modules[CV_NAME].parameters(), cv0.parameters(), strict=True):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    # the actor's value head is not trained
    for before, p in zip(actor_value_head, c.model.value_head.parameters(), strict=True):
        assert torch.equal(before, p)
    c.close()


def _naive_vtrace(rewards, values, dones, log_rhos, gamma, rho_bar, c_bar):
    """IMPALA eq. 1 per trajectory, backwards: `v_t = V_t + ρ_t δ_t + γ_t c_t (v_{t+1} - V_{t+1})`."""
    T, N = rewards.shape
    targets = torch.zeros(T, N)
    for n in range(N):
        nxt = 0.0  # v_{t+1} - V_{t+1}
        for t in reversed(range(T)):
            ratio = math.exp(float(log_rhos[t, n]))
            g = gamma * (1.0 - float(dones[t, n]))
            delta = min(rho_bar, ratio) * (
                float(rewards[t, n]) + g * float(values[t + 1, n]) - float(values[t, n])
            )
            nxt = delta + g * min(c_bar, ratio) * nxt
            targets[t, n] = float(values[t, n]) + nxt
    return targets


def test_vtrace_central_value_trains_on_the_updated_policys_targets(tmp_path):
    """V-trace: the central value's one Adam step equals a plain-Adam step on rl_games' critic loss
    over naive V-trace targets from the updated policy's log-probs and its own values."""
    cfg = _cfg(
        tmp_path,
        "--with_vtrace=True",
        "--recurrence=8",
        "--central_value_mini_epochs=1",
        "--central_value_minibatch_size=1000",
        "--central_value_learning_rate=0.01",
        "--central_value_max_grad_norm=0",
        "--ppo_epochs=2",
        "--normalize_returns=False",
        "--vtrace_rho=1.2",
        "--vtrace_c=0.9",
    )
    validate_cfg(cfg)
    c = build_components(cfg)
    learner = c.learner
    _, slots = first_batch(c)
    b = learner.prepare_batch(slots)
    ref = copy.deepcopy(b)
    cv0 = copy.deepcopy(learner.learner_modules[CV_NAME])
    learner.train_batch(b)
    states, T = ref["cv_state"], ref["rewards"].shape[0]
    N = ref["rewards"].shape[1]
    with torch.no_grad():
        values = cv0(states.reshape((T + 1) * N, -1)).reshape(T + 1, N)
        dones_in = torch.cat([_ended(ref), torch.zeros(1, N)])
        logits, _ = c.model.evaluate(ref["obs"], ref["rnn_states"], dones_in, 8)  # the updated policy
        log_rhos = c.model.distribution(logits[:T]).log_prob(ref["actions"]) - ref["behavior_log_probs"]
    assert float(log_rhos.abs().max()) > 1e-3  # the policy moved: the ratios matter
    targets = _naive_vtrace(ref["rewards"], values, _ended(ref), log_rhos, GAMMA, 1.2, 0.9)
    opt = torch.optim.Adam(
        cv0.parameters(), lr=0.01, betas=(cfg.adam_beta1, cfg.adam_beta2), eps=cfg.adam_eps
    )
    v = cv0(states[:T].reshape(T * N, -1))
    old = values[:T].reshape(-1)
    clipped = old + (v - old).clamp(
        -algo_params(cfg, APPOParams).ppo_clip_value, algo_params(cfg, APPOParams).ppo_clip_value
    )
    loss = torch.max((v - targets.reshape(-1)) ** 2, (clipped - targets.reshape(-1)) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    for got, want in zip(learner.learner_modules[CV_NAME].parameters(), cv0.parameters(), strict=True):
        torch.testing.assert_close(got, want, atol=1e-6, rtol=1e-5)
    c.close()


def test_checkpoint_restores_the_central_value_and_its_optimizer(tmp_path):
    c = build_components(_cfg(tmp_path))
    sampler, slots = first_batch(c)
    c.learner.train(slots)
    sampler.release(slots)
    state = checkpoint_state(c.model, c.learner, {})
    assert CV_NAME in state["learner_modules"] and CV_NAME in state["learner"]["optimizers"]
    c2 = build_components(_cfg(tmp_path / "b"))
    restore_policy(c2.model, c2.learner, state)
    cv1, cv2 = c.learner.learner_modules[CV_NAME], c2.learner.learner_modules[CV_NAME]
    for a, b in zip(cv1.state_dict().values(), cv2.state_dict().values(), strict=True):
        assert torch.equal(a, b)
    o1, o2 = c.learner.optimizers[CV_NAME].state_dict(), c2.learner.optimizers[CV_NAME].state_dict()
    assert o1["state"] and set(o1["state"]) == set(o2["state"])
    for k in o1["state"]:
        for name in ("exp_avg", "exp_avg_sq", "step"):
            assert torch.equal(o1["state"][k][name], o2["state"][k][name])
    c.close()
    c2.close()


def test_multi_agent_env_sharing_one_state(tmp_path):
    """occluded_payout_duo: both agents' trajectories carry the same state; the central value
    trains on every agent step."""
    c = build_components(_cfg(tmp_path, "--env=occluded_payout_duo"))
    assert c.layout.info.num_agents == 2
    _, slots = first_batch(c)
    b = c.learner.prepare_batch(slots)
    states = b["cv_state"]
    assert states.shape[-1] == 11
    # trajectories of the two agents of one env, same steps: same state, different own obs
    actor_ids = c.layout.buffers.actor_ids[slots]
    pairs = [
        (i, j)
        for i in range(len(slots))
        for j in range(len(slots))
        if actor_ids[i] // 2 == actor_ids[j] // 2 and i < j
    ]
    assert pairs
    for i, j in pairs:
        assert torch.equal(states[:, i], states[:, j])
    stats = c.learner.train(slots)
    assert math.isfinite(stats["cv_loss"])
    c.close()


@pytest.mark.slow
def test_a_trained_checkpoint_resumes_and_plays_with_surge_enjoy(tmp_path, monkeypatch):
    """End to end: the checkpoint of a run holds the central value and its optimizer, a resumed run
    loads them, `surge enjoy` plays the actor on the env's Dict observation (state dropped) and
    `surge export` writes the actor with the actor's observation as its only input."""
    from surge.app.training_run import train
    from surge.cli import main as surge_main
    from surge.runtime.checkpoint import CheckpointManager
    from surge.runtime.experiment_folder import ExperimentFolder

    flags = ["--env=occluded_payout", f"--train_dir={tmp_path}", "--experiment=cv", "--serial_mode=True"]
    flags += ["--num_workers=1", "--num_torch_threads=1", "--central_value=True", "--seed=0"]
    threads = torch.get_num_threads()
    try:
        assert train(parse_cfg([*flags, "--train_for_env_steps=512"])) == "done"
        cfg = parse_cfg([*flags, "--train_for_env_steps=1024"])
        folder = ExperimentFolder(cfg)
        state = CheckpointManager(folder.checkpoints(0)).load("latest")
        assert state is not None and CV_NAME in state["learner_modules"]
        assert state["learner"]["optimizers"][CV_NAME]["state"]  # Adam's moments saved
        folder.done_file.unlink()
        assert train(cfg) == "done"  # resumes from it
        resumed = CheckpointManager(folder.checkpoints(0)).load("latest")
        assert resumed is not None and resumed["env_steps"] > state["env_steps"]
        assert resumed["learner"]["policy_version"] > state["learner"]["policy_version"]
    finally:
        torch.set_num_threads(threads)
    monkeypatch.delenv("DISPLAY", raising=False)
    argv = ["enjoy", "--env=occluded_payout", f"--train_dir={tmp_path}", "--experiment=cv"]
    assert surge_main([*argv, "--max_num_episodes=2", "--no_render"]) == 0
    # `surge export`: the exported actor's only input is the actor's observation, not the state
    out = tmp_path / "cv.onnx"
    assert (
        surge_main(
            [
                "export",
                f"--train_dir={tmp_path}",
                "--experiment=cv",
                "--format=onnx",
                f"--output={out}",
                "--check",
            ]
        )
        == 0
    )
    import onnxruntime as ort

    inputs = [i.name for i in ort.InferenceSession(str(out), providers=["CPUExecutionProvider"]).get_inputs()]
    assert inputs == ["obs"], inputs
