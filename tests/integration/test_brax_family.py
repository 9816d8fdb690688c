"""The brax_ family: a batch of Brax envs stepped in one jitted call, arrays through DLPack,
brax's auto-reset and its truncation flag. Skipped where brax is not installed (it is not in the
CI venv: `pip install -e ".[brax]"` in a venv of its own, docs/brax.md)."""

import importlib.util

import numpy as np
import pytest

from surge.app.resolve import parse_cfg
from surge.envs.registry import check_env_name, make_env
from surge.errors import ConfigError, EnvError

HAS_BRAX = importlib.util.find_spec("brax") is not None and importlib.util.find_spec("jax") is not None
needs_brax = pytest.mark.skipif(not HAS_BRAX, reason='brax/jax not installed: pip install "surge-rl[brax]"')

N = 4
EPISODE = 6
#: the spring pipeline compiles in seconds on CPU (generalized: ~20 s)
ARGS = ["--env=brax_ant", f"--env_agents={N}", "--seed=3", "--brax_backend=spring", "--train_dir=/tmp/unused"]


def test_unknown_brax_name_is_refused_without_brax():
    with pytest.raises(ConfigError, match="brax_ant"):
        check_env_name("brax_antt")


@pytest.mark.skipif(HAS_BRAX, reason="brax is installed: the missing-extra error cannot happen")
def test_missing_brax_names_the_extra():
    with pytest.raises(EnvError, match=r"surge-rl\[brax\]"):
        make_env(parse_cfg(ARGS))


@pytest.fixture(scope="module")
def env():
    e = make_env(parse_cfg([*ARGS, f"--brax_episode_length={EPISODE}"]))
    yield e
    e.close()


@needs_brax
@pytest.mark.slow
def test_steps_shapes_dtypes_and_auto_reset(env):
    import jax

    obs0, _ = env.reset(seed=3)
    assert obs0.shape == (N, 27) and obs0.dtype == np.float32  # brax's Ant: 27 observations, 8 actions
    assert env.action_space.shape == (8,) and env.observation_space.shape == (27,)
    # reference: brax's own reset of the same keys, outside surge
    ref = jax.jit(env.env.reset)(jax.random.split(jax.random.PRNGKey(3), N))
    np.testing.assert_allclose(obs0, np.asarray(ref.obs))
    rng = np.random.default_rng(0)
    ret, length = np.zeros(N), np.zeros(N, dtype=int)
    ended, reported = [], []
    for t in range(EPISODE):
        a = rng.uniform(-1, 1, (N, 8)).astype(np.float32)
        obs, rew, term, trunc, info = env.step(a)
        assert obs.shape == (N, 27) and obs.dtype == np.float32
        assert rew.shape == (N,) and rew.dtype == np.float32
        assert term.dtype == bool and trunc.dtype == bool and not (term & trunc).any()
        ret += rew
        length += 1
        done = term | trunc
        # auto-reset: an ended env's obs is already its episode's first obs (brax's first_obs)
        np.testing.assert_allclose(obs[done], obs0[done])
        ended += [(i, ret[i], length[i]) for i in np.flatnonzero(done)]
        reported += info.episodes
        if t == EPISODE - 1:  # every env still running hits episode_length: truncated, not terminated
            assert (trunc | term).all() and trunc[~term].all()
        ret[done], length[done] = 0.0, 0
    # episode statistics: a naive running sum of the rewards returned, per env
    assert len(reported) == len(ended) >= N
    for (i, r, n), (ei, er, en) in zip(reported, ended, strict=True):
        assert (i, n) == (ei, en) and r == pytest.approx(er, rel=1e-5, abs=1e-5)


@needs_brax
def test_dlpack_shares_memory_on_cpu():
    import jax

    from surge.envs.brax_batched import jax_to_numpy, numpy_to_jax

    if jax.devices()[0].platform != "cpu":
        pytest.skip("zero-copy to numpy holds on CPU only (a GPU array is copied to the host)")
    import torch

    a = torch.arange(32, dtype=torch.float32).reshape(4, 8).numpy()  # torch allocates 64-byte aligned
    j = numpy_to_jax(a)
    assert j.unsafe_buffer_pointer() == a.ctypes.data  # JAX aliases an aligned buffer (via torch)
    odd = np.frombuffer(np.arange(33, dtype=np.float32).tobytes(), np.float32)[1:].reshape(4, 8)
    np.testing.assert_array_equal(np.asarray(numpy_to_jax(odd)), odd)  # unaligned: JAX copies it
    x = jax.numpy.ones((4, 27)) * 2
    n = jax_to_numpy(x)
    assert n.ctypes.data == x.unsafe_buffer_pointer() and (n == 2).all()


@needs_brax
@pytest.mark.slow
def test_surge_trains_on_brax_ant(tmp_path):
    from surge.app.training_run import TrainingRun

    cfg = parse_cfg(
        [
            *ARGS[:-1],
            f"--train_dir={tmp_path}",
            "--experiment=b",
            "--serial_mode=True",
            "--num_workers=1",
            "--rollout=16",
            "--batch_size=64",
            "--num_batches_per_iteration=1",
            "--ppo_epochs=1",
            "--brax_episode_length=50",
            "--train_for_env_steps=1000",
            "--decorrelate_experience_max_seconds=0",
            "--num_torch_threads=1",
        ]
    )
    run = TrainingRun(cfg)
    assert run.run() == "done"
    m = run.monitor
    assert m.env_steps >= 1000 and m.episodes > 0
