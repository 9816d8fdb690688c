"""Frame-based storage (surge.replay.frames): stacks rebuilt at sampling equal the observations a
real ALE game gave through surge's Atari wrappers, across life losses (terminated), time limits
(truncated), block boundaries and the ring's wrap-around; about one frame is stored per step."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from replay_streams import Stream, naive_n_step

pytest.importorskip("ale_py")
pytest.importorskip("cv2")

from surge.cfg.config import Config  # noqa: E402
from surge.envs.atari import AtariParams  # noqa: E402
from surge.envs.registry import make_env  # noqa: E402
from surge.replay import PrioritizedReplay, UniformReplay  # noqa: E402

F = 4


def run_breakout(num_envs: int, steps: int, T: int, seed: int = 0):
    """Blocks `[T, num_envs]` from Breakout (episodic life, 300-frame (75-step) time limit, random actions),
    and each column's observations by step (the last is the bootstrap observation)."""
    cfg = Config(env="atari_breakout", env_params=AtariParams(atari_max_episode_frames=300))
    envs = [make_env(cfg) for _ in range(num_envs)]
    rng = np.random.default_rng(seed)
    obs = [np.asarray(e.reset(seed=seed + i)[0][0]) for i, e in enumerate(envs)]
    history: list[list[np.ndarray]] = [[o] for o in obs]
    blocks = []
    for _ in range(steps // T):
        o = np.zeros((T + 1, num_envs, F, 84, 84), np.uint8)
        r = np.zeros((T, num_envs), np.float32)
        term = np.zeros((T, num_envs), bool)
        trunc = np.zeros((T, num_envs), bool)
        a = rng.integers(0, envs[0].action_space.n, (T, num_envs))
        for i, e in enumerate(envs):
            o[0, i] = history[i][-1]
            for t in range(T):
                ob, rew, te, tr, _ = e.step([int(a[t, i])])
                o[t + 1, i], r[t, i], term[t, i], trunc[t, i] = ob[0], rew[0], te[0], tr[0]
                history[i].append(np.asarray(ob[0]))
        blocks.append(
            {
                "obs": torch.from_numpy(o),
                "actions": torch.from_numpy(a),
                "rewards": torch.from_numpy(r),
                "terminated": torch.from_numpy(term),
                "truncated": torch.from_numpy(trunc),
                "is_active": torch.ones(T, num_envs, dtype=torch.bool),
            }
        )
    for e in envs:
        e.close()
    return blocks, history


@pytest.fixture(scope="module")
def breakout():
    return run_breakout(num_envs=2, steps=320, T=10)


def test_rebuilt_stacks_equal_the_env_observations(breakout):
    blocks, history = breakout
    terms = sum(int(b["terminated"].sum()) for b in blocks)
    truncs = sum(int(b["truncated"].sum()) for b in blocks)
    assert terms >= 2 and truncs >= 2, f"the run needs both episode ends ({terms}, {truncs})"
    cap = 128
    replay = UniformReplay(cap, 2, n_step=3, gamma=0.99, frame_stack=F)
    for b in blocks:
        replay.append(b, torch.tensor([0, 1]))
    ring = replay.ring
    checked = invalid = 0
    for c in range(2):
        n = len(history[c]) - 1  # steps
        for g in range(n - (cap - 1), n + 1):  # stored steps and the pending observation
            row = torch.tensor([g % cap])
            col = torch.tensor([c])
            if not bool(ring.obs.valid(ring, row, col)[0]):
                invalid += 1
                assert g < n - (cap - 1) + F - 1, "only the oldest rows lose their history"
                continue
            np.testing.assert_array_equal(ring.obs.read(row, col)[0].numpy(), history[c][g])
            checked += 1
    assert checked >= 2 * (cap - F)
    out = replay.sample(256, torch.Generator().manual_seed(0))
    streams = [Stream() for _ in range(2)]
    for b in blocks:
        for c in range(2):
            streams[c].rewards += b["rewards"][:, c].tolist()
            streams[c].terminated += b["terminated"][:, c].tolist()
            streams[c].truncated += b["truncated"][:, c].tolist()
            streams[c].active += b["is_active"][:, c].tolist()
    kinds = set()
    for i in range(256):
        c, row = int(out["columns"][i]), int(out["rows"][i])
        n = len(history[c]) - 1
        g = next(g for g in range(n - (cap - 1), n) if g % cap == row)
        np.testing.assert_array_equal(out["obs"][i].numpy(), history[c][g])
        # the naive window (replay_streams.naive_n_step) over the env's own flags
        G, disc, nxt, L = naive_n_step(streams[c], g, 3, 0.99)
        assert int(out["n_steps"][i]) == L and float(out["discounts"][i]) == pytest.approx(disc)
        kinds.add("terminated" if disc == 0 else "truncated" if nxt == g + L - 1 else "full")
        np.testing.assert_array_equal(out["next_obs"][i].numpy(), history[c][nxt])
    assert kinds == {"truncated", "terminated", "full"}


def test_about_one_frame_per_step(breakout):
    blocks, _ = breakout
    replay = PrioritizedReplay(256, 2, n_step=3, frame_stack=F)
    for b in blocks:
        replay.append(b, torch.tensor([0, 1]))
    per_row = replay.ring.nbytes() / (256 * 2)
    assert per_row < 1.01 * 84 * 84, per_row  # frame 7056 B + flags, reward, action, episode id


def test_a_stream_starting_mid_episode_waits_for_its_history(breakout):
    """A block that does not continue its column (new_episode) and whose first stack is not a
    reset stack: its first F-1 rows cannot be rebuilt and are not sampled; later rows are exact."""
    blocks, history = breakout
    replay = UniformReplay(64, 2, n_step=1, frame_stack=F)
    # column 0 starts with block 3 (mid-episode), column 1 from the first block
    first = 3
    assert not (blocks[first]["obs"][0, 0] == blocks[first]["obs"][0, 0, -1:]).all()
    for k, b in enumerate(blocks[: first + 3]):
        cols = [1] if k < first else [0, 1]
        sub = {key: v[:, [1]] for key, v in b.items()} if k < first else b
        replay.append(sub, torch.tensor(cols), torch.tensor([k == first] + [False] * (len(cols) - 1)))
    ring = replay.ring
    rows = torch.arange(31)
    valid = ring.obs.valid(ring, rows, torch.zeros(31, dtype=torch.int64))
    assert valid.tolist() == [False] * (F - 1) + [True] * (31 - F + 1)
    got = ring.obs.read(rows[F - 1 :], torch.zeros(31 - F + 1, dtype=torch.int64)).numpy()
    np.testing.assert_array_equal(got, np.stack(history[0][first * 10 + F - 1 : first * 10 + 31]))
