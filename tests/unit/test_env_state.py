"""Saving an env's whole state (`surge.sampling.env_state`): an env of the same factory restored
from it steps exactly as the original would; envs holding objects whose state Python cannot see
are refused naming them; the state is plain values, so loading it runs no code."""

import io

import numpy as np
import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.envs.registry import make_env
from surge.sampling.env_state import EnvStateRefused, EnvStateUnsupported, restore_env_state, save_env_state


def _steps_alike(env, restored, steps: int) -> None:
    for i in range(steps):
        action = np.array([env.action_space.sample() for _ in range(env.num_agents)])
        a, b = env.step(action), restored.step(action)
        assert np.array_equal(a[0][0], b[0][0]), f"step {i}: observations differ"
        for x, y in zip(a[1:4], b[1:4], strict=True):
            assert np.array_equal(x, y), f"step {i}: reward or episode end differs"


def _through_file(state):
    """`state` written with torch.save and read back as surge reads sampler_state.pth."""
    buf = io.BytesIO()
    torch.save(state, buf)
    buf.seek(0)
    return torch.load(buf, weights_only=True)


@pytest.mark.parametrize(
    "name,steps,extra",
    [
        ("cartpole", 2000, []),
        ("pendulum", 500, []),
        ("atari_breakout", 400, []),
        (
            "cartpole",
            1000,
            ["--batched_sampling=True", "--num_envs_per_worker=4"],
        ),  # gymnasium's SyncVectorEnv
    ],
)
def test_a_restored_env_continues_as_the_original(name, steps, extra):
    if name.startswith("atari"):
        pytest.importorskip("ale_py")
    cfg = parse_cfg([f"--env={name}", *extra])
    env = make_env(cfg)
    env.reset(seed=5)
    env.action_space.seed(5)
    for _ in range(37):  # in the middle of an episode (and its random generator's stream)
        env.step(np.array([env.action_space.sample() for _ in range(env.num_agents)]))
    restored = make_env(cfg)  # a fresh env, as a resumed run makes it (not reset, other seed)
    restore_env_state(restored, _through_file(save_env_state(env)))
    _steps_alike(env, restored, steps)  # episode ends and seeded-generator resets included
    env.close()
    restored.close()


@pytest.mark.parametrize(
    "name,module,why",
    [
        ("mujoco_halfcheetah", "mujoco", r"\.model is a mujoco.*MjModel"),
        ("LunarLander-v3", "Box2D", r"\.world.*SwigPyObject"),
    ],
)
def test_an_env_holding_a_c_object_is_refused_naming_it(name, module, why):
    pytest.importorskip(module)
    env = make_env(parse_cfg([f"--env={name}"]))
    env.reset(seed=0)
    with pytest.raises(EnvStateUnsupported, match=why):
        save_env_state(env)
    env.close()


def test_a_pickled_env_state_of_an_older_surge_is_refused_unread(tmp_path):
    marker = tmp_path / "ran"
    env = make_env(parse_cfg(["--env=cartpole"]))

    class Evil:
        def __reduce__(self):
            return (open, (str(marker), "w"))

    import pickle

    old = torch.frombuffer(bytearray(pickle.dumps(Evil())), dtype=torch.uint8)
    with pytest.raises(EnvStateRefused, match="pickle"):
        restore_env_state(env, old)
    assert not marker.exists()


def test_a_state_of_another_env_is_refused_and_leaves_the_env_untouched():
    cartpole, pendulum = make_env(parse_cfg(["--env=cartpole"])), make_env(parse_cfg(["--env=pendulum"]))
    cartpole.reset(seed=1)
    before = save_env_state(cartpole)
    with pytest.raises(EnvStateRefused, match="CartPoleEnv|PendulumEnv"):
        restore_env_state(cartpole, save_env_state(pendulum))
    after = save_env_state(cartpole)
    assert torch.equal(_ndarray_bytes(before), _ndarray_bytes(after))


def _ndarray_bytes(state) -> torch.Tensor:
    """Every array of a saved env state, concatenated (a fingerprint of the env's numeric state)."""
    out = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("k") == "ndarray":
                out.append(node["data"])
            for v in node.values():
                walk(v)
        elif isinstance(node, (list, tuple)):
            for v in node:
                walk(v)

    walk(state)
    return torch.cat(out)


def test_a_corrupted_env_state_is_refused_never_crashes_or_half_applies():
    """Each of 400 random corruptions of a saved CartPole (an entry replaced by junk: another kind,
    class, type, shape, a deep nesting) either restores or raises EnvStateRefused; a refused one
    leaves the env as it was."""
    import copy
    import random

    cfg = parse_cfg(["--env=cartpole"])
    env = make_env(cfg)
    env.reset(seed=2)
    saved = _through_file(save_env_state(env))
    slots = []

    def walk(node):
        if isinstance(node, dict):
            slots.extend((node, k) for k in node)
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            slots.extend((node, i) for i in range(len(node)))
            for v in node:
                walk(v)
        elif isinstance(node, tuple):
            for v in node:
                walk(v)

    walk(saved)
    deep: list = []
    for _ in range(5000):
        deep = [deep]
    junk = [
        None,
        "x",
        -1,
        2.5,
        [1],
        (1, 2),
        {"k": "object"},
        {"k": "bogus"},
        {"k": "ref", "path": "nowhere"},
        {"k": "ndarray", "dtype": "|O", "shape": [1], "data": torch.zeros(8, dtype=torch.uint8)},
        {"k": "ndarray", "dtype": "<f8", "shape": ["a"], "data": torch.zeros(8, dtype=torch.uint8)},
        {"k": "same", "what": "function os.system"},
        {"k": "npscalar", "dtype": "<i3", "value": 1},
        {"k": "object", "type": "builtins.object", "attrs": {"__class__": 1}},
        torch.zeros(3),
        deep,
    ]
    rng = random.Random(0)
    target = make_env(cfg)
    before = save_env_state(target)
    refused = 0
    for _ in range(400):
        state = copy.deepcopy(saved) if rng.random() < 0.02 else _mutated(saved, slots, rng.choice(junk), rng)
        try:
            restore_env_state(target, state)
            target, before = make_env(cfg), None  # restored: start again from a fresh env
            before = save_env_state(target)
        except EnvStateRefused:
            refused += 1
            assert torch.equal(_ndarray_bytes(save_env_state(target)), _ndarray_bytes(before))
    assert refused > 200


def _mutated(saved, slots, value, rng):
    """A copy of `saved` with one entry (chosen among `slots`, positions in `saved`) set to `value`."""
    import copy

    i = rng.randrange(len(slots))
    memo: dict = {}
    out = copy.deepcopy(saved, memo)
    container, key = slots[i]
    copy_container = memo.get(id(container), container)
    copy_container[key] = value
    return out
