"""`ActContext` (issue 20, the seams): inference passes each acting agent's stable global actor id
`(worker * num_envs_per_worker + env) * num_agents + agent`, the run's number of actors and its env
frames to the algorithm's `act`, in the serial placement; the ids follow the agents across rollouts
(new slots) and with several splits."""

import json

import torch

from surge.algorithms.appo.declaration import APPO
from surge.app.resolve import parse_cfg
from surge.learning.algorithm import ActContext, Algorithm, register_algorithm, sampled_act
from surge.runtime.serial import SerialPlacement

SEEN: list[tuple[torch.Tensor, int, int, torch.Tensor]] = []


def _recording_act(model, obs, rnn_states, ctx: ActContext):
    assert ctx.actor_ids is not None
    SEEN.append((ctx.actor_ids.clone(), ctx.num_actors, ctx.env_frames, obs.clone()))
    return sampled_act(model, obs, rnn_states, ctx)


register_algorithm(
    Algorithm(
        name="TEST_CTX_APPO",
        description="APPO whose act records its context",
        step_fields=APPO.step_fields,
        act=_recording_act,
        make_learner=APPO.make_learner,
        validate=APPO.validate,
        params=APPO.params,
    )
)


def test_act_gets_stable_actor_ids_num_actors_and_env_frames(tmp_path):
    W, E, S = 2, 4, 2  # workers, envs per worker, splits
    cfg = parse_cfg(
        [
            "--env=CartPole-v1",
            "--algo=TEST_CTX_APPO",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            f"--num_workers={W}",
            f"--num_envs_per_worker={E}",
            f"--worker_num_splits={S}",
            "--rollout=4",
            "--recurrence=4",
            "--batch_size=16",
            "--use_rnn=False",
            "--encoder_type=mlp",
            "--encoder_subtype=mlp",
            "--encoder_mlp_layers",
            "8",
            "--decorrelate_experience_max_seconds=0",
            "--seed=1",
        ]
    )
    placement = SerialPlacement(cfg, [], [None])
    placement.start()
    c = placement.c
    SEEN.clear()
    placement.set_env_frames(1234)
    for _ in range(13):  # more than 3 rollouts of 4 steps: every split moved to new slots
        placement.step()
    # the id table: each split's slots carry its agents' ids, in the naive order of the docstring
    per_split = E // S
    for w_idx, w in enumerate(c.workers):
        for s_idx, split in enumerate(w.splits):
            envs = [w_idx * E + s_idx * per_split + e for e in range(per_split)]
            assert c.buffers.actor_ids[split.slots].tolist() == envs  # one agent per CartPole env
    ids = torch.cat([ids for ids, *_ in SEEN])
    assert sorted(set(ids.tolist())) == list(range(W * E))
    assert all(n == W * E for _, n, _, _ in SEEN)
    assert all(f == 1234 for *_, f, _ in SEEN)
    # the observation the act saw for an id is the observation of that env at that step
    last_ids, _, _, last_obs = SEEN[-1]
    for i, obs in zip(last_ids.tolist(), last_obs, strict=True):
        w_idx, env = divmod(i, E)
        split = c.workers[w_idx].splits[env // per_split]
        slot, t = split.slots[env % per_split], split.t - 1  # the step advanced t after acting
        if t >= 0:
            assert torch.equal(c.buffers.obs[slot, t], obs)
    placement.close()


def test_deterministic_context_acts_with_the_distribution_mode(tmp_path):
    from surge.algorithms.a2c.declaration import a2c_act
    from surge.models.actor_critic import make_actor_critic

    cfg = parse_cfg(["--env=CartPole-v1", f"--train_dir={tmp_path}", "--use_rnn=False"])
    import gymnasium as gym

    env = gym.make("CartPole-v1")
    model = make_actor_critic(cfg, env.observation_space, env.action_space)
    obs, rnn = torch.randn(256, 4) * 3, torch.zeros(256, 0)
    with torch.no_grad():
        logits = model.act(obs, rnn).logits
        for act in (sampled_act, a2c_act):
            out = act(model, obs, rnn, ActContext(deterministic=True))
            assert torch.equal(out["actions"], logits.argmax(-1))  # the mode of the categorical


def test_a_resumed_run_acts_from_its_env_frame_not_from_zero(tmp_path):
    """The review of the seams: `ActContext.env_frames` was 0 for a resumed run until its first
    report, so an exploration schedule (DQN's epsilon) restarted from its initial value."""
    from surge.app.training_run import train

    def argv(budget: int) -> list[str]:
        return [
            "--env=CartPole-v1",
            "--algo=TEST_CTX_APPO",
            "--experiment=resume_ctx",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--rollout=8",
            "--recurrence=8",
            "--batch_size=16",
            "--use_rnn=False",
            "--decorrelate_experience_max_seconds=0",
            "--num_torch_threads=1",
            f"--train_for_env_steps={budget}",
        ]

    assert train(parse_cfg(argv(400))) == "done"
    assert json.loads((tmp_path / "resume_ctx" / "cfg.json").read_text())["algo"] == "TEST_CTX_APPO"
    (tmp_path / "resume_ctx" / "done").unlink()  # as a run stopped by Ctrl+C: resumable
    SEEN.clear()
    assert train(parse_cfg(argv(800))) == "done"
    first_frames = SEEN[0][2]
    assert first_frames >= 400, f"the resumed run's first act saw env_frames={first_frames}"
