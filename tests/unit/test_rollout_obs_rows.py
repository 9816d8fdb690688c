"""A rollout worker writes each agent's observation straight into its row of the buffers
(`surge.sampling.obs_writer.ObsWriter.write`, a Box space with contiguous slots): what the stacked write
wrote, and an observation of another shape is refused, where numpy alone would broadcast some."""

import numpy as np
import pytest

from surge.app.resolve import parse_cfg
from surge.errors import EnvError
from surge.runtime.components import build_components
from surge.sampling.obs_writer import ROW_COPY_MIN_BYTES


def _worker(row_copy_min_bytes=0):
    """A CartPole rollout worker; its 16-byte states go row by row with the size limit at 0."""
    flags = ["--env=CartPole-v1", "--num_workers=1", "--num_envs_per_worker=8", "--worker_num_splits=2"]
    with pytest.MonkeyPatch.context() as m:
        m.setattr("surge.sampling.obs_writer.ROW_COPY_MIN_BYTES", row_copy_min_bytes)
        c = build_components(parse_cfg([*flags, "--rollout=4", "--batch_size=16", "--seed=3"]))
    w = c.workers[0]
    w.reset()
    return c, w


def test_small_observations_are_stacked_large_ones_copied_row_by_row():
    assert _worker(ROW_COPY_MIN_BYTES)[1].obs_writer.rows is None  # CartPole's 16 B: stacked
    assert _worker(16)[1].obs_writer.rows is not None


def _step(w, s):
    w.policy_request(s)
    w.buffers.actions[w.splits[s].index, w.splits[s].t] = 0
    w.advance(s)


def test_rows_written_one_by_one_equal_the_stacked_write():
    c, w = _worker()
    assert w.obs_writer.rows is not None
    for _ in range(3):
        for s in range(2):
            split, t = w.splits[s], w.splits[s].t
            seen = []
            for env in split.envs:  # record what each env returned
                step_one = env.step_one

                def spy(action, step_one=step_one, seen=seen):
                    out = step_one(action)
                    seen.append(np.array(out[0]))
                    return out

                env.step_one = spy
            _step(w, s)
            for env in split.envs:
                del env.step_one
            expected = np.stack(seen).astype(np.float32)
            np.testing.assert_array_equal(w.buffers.obs[split.index, t + 1].numpy(), expected)


@pytest.mark.parametrize("shape", [(1,), (5,), (2, 4)])
def test_an_observation_of_another_shape_is_refused_naming_the_space(shape):
    c, w = _worker()
    env = w.splits[0].envs[3]
    step_one = env.step_one
    env.step_one = lambda a: (np.zeros(shape, np.float32), *step_one(a)[1:])
    w.policy_request(0)
    with pytest.raises(EnvError, match="observation_space"):
        w.advance(0)
