"""`AsyncPlacement.close` returns the episodes the rollout workers reported after the last `step`
(issue 59: they were dropped, so a run's final statistics missed its last episodes). CartPole-v1
pays 1 per step, so each returned episode's return equals its length (the env's definition)."""

import time

import pytest

from surge.app.resolve import parse_cfg
from surge.runtime.async_placement import AsyncPlacement
from surge.runtime.checkpoint import CheckpointManager


@pytest.mark.slow
def test_episodes_finished_after_the_last_step_come_back_from_close(tmp_path):
    cfg = parse_cfg(
        [
            "--env=CartPole-v1",
            f"--train_dir={tmp_path}",
            "--num_workers=2",
            "--num_envs_per_worker=8",
            "--decorrelate_experience_max_seconds=0",
            "--set_workers_cpu_affinity=False",
            "--num_torch_threads=1",
        ]
    )
    placement = AsyncPlacement(cfg, [CheckpointManager(tmp_path / "ckpt", 2, 0)], [None])
    try:
        placement.start()
        deadline = time.time() + 120
        while time.time() < deadline and not placement.step().episodes:
            pass  # sampling: the first episodes came through `step`
        time.sleep(2.0)  # no step: the episodes finished meanwhile wait in the report queue
    finally:
        late = placement.close()
    assert late.episodes, "no episode came back from close"
    for ep in late.episodes:
        assert ep.policy_id == 0 and ep.episode_length > 0
        assert ep.episode_return == pytest.approx(ep.episode_length)
