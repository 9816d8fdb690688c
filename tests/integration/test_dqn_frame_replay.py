"""DQN on Atari stores each stacked frame once (`--replay_frame_storage`, surge.replay.frames):
the learner samples the same observations as a replay that stores them whole, its memory estimate
follows what the replay allocates, and observations that are not such stacks are refused."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
import torch

pytest.importorskip("ale_py")
pytest.importorskip("cv2")

from surge.algorithms.dqn.declaration import dqn_replay_bytes  # noqa: E402
from surge.algorithms.dqn.learner import DQNLearner  # noqa: E402
from surge.algorithms.dqn.model import make_dqn_parts  # noqa: E402
from surge.app.resolve import parse_cfg  # noqa: E402
from surge.envs.registry import make_env  # noqa: E402
from surge.replay.frames import FrameObs  # noqa: E402
from surge.replay.obs_store import PlainObs  # noqa: E402

T, N = 40, 2


def _learner(tmp_path, *flags: str) -> DQNLearner:
    cfg = parse_cfg(
        [
            "--env=atari_breakout",
            "--algo=DQN",
            f"--train_dir={tmp_path}",
            "--train_for_env_steps=100000",
            "--replay_size=400",
            "--n_step_return=3",
            "--batch_size=64",
            "--atari_max_episode_frames=200",  # 50-step games: truncations inside the blocks
            "--seed=0",
            *flags,
        ]
    )
    env = make_env(cfg)
    parts = make_dqn_parts(cfg, env.observation_space, env.action_space)
    env.close()
    return DQNLearner(
        cfg, parts.acting, None, torch.device("cpu"), 0, learner_modules=parts.learner_modules, num_columns=N
    )


def _breakout_blocks(cfg, blocks: int) -> list[dict]:
    """Blocks `[T, N]` of real Breakout through surge's Atari wrappers, random actions."""
    envs = [make_env(cfg) for _ in range(N)]
    rng = np.random.default_rng(0)
    obs = np.stack([np.asarray(e.reset(seed=i)[0][0]) for i, e in enumerate(envs)])
    out = []
    for _ in range(blocks):
        o = np.zeros((T + 1, *obs.shape), np.uint8)
        r, term, trunc = np.zeros((T, N), np.float32), np.zeros((T, N), bool), np.zeros((T, N), bool)
        a = rng.integers(0, envs[0].action_space.n, (T, N))
        o[0] = obs
        for i, e in enumerate(envs):
            for t in range(T):
                ob, rew, te, tr, _ = e.step([int(a[t, i])])
                o[t + 1, i], r[t, i], term[t, i], trunc[t, i] = ob[0], rew[0], te[0], tr[0]
        obs = o[-1]
        out.append(
            {
                "obs": torch.from_numpy(o),
                "actions": torch.from_numpy(a),
                "rewards": torch.from_numpy(r),
                "dones": torch.from_numpy(term | trunc).float(),
                "trunc": torch.from_numpy(trunc & ~term).float(),
                "is_active": torch.ones(T, N, dtype=torch.bool),
                "behavior_version": torch.zeros(T, N, dtype=torch.int64),
                "actor_ids": torch.arange(N),
            }
        )
    for e in envs:
        e.close()
    return out


def test_frame_storage_samples_what_whole_storage_samples(tmp_path):
    frames = _learner(tmp_path / "f")
    whole = _learner(tmp_path / "w", "--replay_frame_storage=False")
    assert isinstance(frames.replay.ring.obs, FrameObs) and frames.frame_stack == 4
    assert isinstance(whole.replay.ring.obs, PlainObs) and whole.frame_stack == 0
    blocks = _breakout_blocks(frames.cfg, 16)  # 640 steps per column: the ~200-row rings wrap
    assert any(bool(b["trunc"].any()) for b in blocks)
    assert any(bool((b["dones"] > b["trunc"]).any()) for b in blocks)
    # every observation each column was shown, by step (the last one the pending bootstrap)
    shown = torch.cat([blocks[0]["obs"][:1]] + [b["obs"][1:] for b in blocks])  # [S+1, N, 4, 84, 84]
    for i, b in enumerate(blocks):
        frames.observe(b)
        whole.observe(b)
        if i not in (2, 9, 15):
            continue
        steps = (i + 1) * T
        for learner in (frames, whole):
            s = learner.sample()
            C = learner.replay.ring.capacity
            last = (s["rows"] + s["n_steps"] - 1) % C
            # a window that ends truncated bootstraps from its last step's own observation
            truncated = learner.replay.ring.truncated[last, s["columns"]].long()
            for key, rows in (("obs", s["rows"]), ("next_obs", (last + 1 - truncated) % C)):
                g = steps - (steps - rows) % C  # the step each ring row holds now
                expected = shown[g, s["columns"]]
                keep = (key == "obs") | (s["discounts"] > 0)  # after a termination next_obs is unused
                assert torch.equal(s[key][keep], expected[keep]), (learner.frame_stack, key, i)
            assert s["obs"].shape == (64, 4, 84, 84) and s["obs"].dtype == torch.uint8
    assert frames.replay.ring.nbytes() < 0.3 * whole.replay.ring.nbytes()


def test_the_memory_estimate_follows_the_storage(tmp_path):
    for flags, kind in (((), FrameObs), (("--replay_frame_storage=False",), PlainObs)):
        learner = _learner(tmp_path / kind.__name__, *flags)
        learner.observe(_breakout_blocks(learner.cfg, 1)[0])
        info = SimpleNamespace(observation_space=make_env(learner.cfg).observation_space)
        estimate, allocated = dqn_replay_bytes(learner.cfg, info), learner.replay.ring.nbytes()
        assert 0.8 < estimate / allocated < 1.25, (kind, estimate, allocated)


def test_observations_that_are_not_reset_padded_stacks_are_refused():
    """EnvPool pads a reset stack with zeros; frame storage would rebuild it with the reset frame."""
    store = FrameObs(16, 1, 4)
    rng = np.random.default_rng(0)
    newest = torch.from_numpy(rng.integers(1, 255, (4, 1, 5, 5), dtype=np.uint8))
    obs = torch.zeros(4, 1, 4, 5, 5, dtype=torch.uint8)
    for t in range(4):  # zero-padded from a reset at row 0
        obs[t, 0, 3 - t :] = newest[: t + 1, 0]
    starts = torch.zeros(4, 1, dtype=torch.bool)
    starts[0] = True
    store.check_stacks(obs[1:], starts[1:])  # mid-episode rows of a zero-padded stack do shift by one
    obs[2, 0] = newest[2, 0]  # now row 2 claims an episode start but is not a repeated frame
    obs[2, 0, :3] = 0
    starts[2] = True
    with pytest.raises(ValueError, match="--replay_frame_storage=False"):
        store.check_stacks(obs, starts)
    shuffled = obs.flip(2)  # newest frame first
    with pytest.raises(ValueError, match="does not share its first frames"):
        store.check_stacks(shuffled, torch.zeros(4, 1, dtype=torch.bool))
