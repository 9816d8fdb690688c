"""Every placement drives the same loop classes (issue 56, "one run loop"): a short cartpole run in
the serial placement, the async one, the async one acting in the rollout workers, and with a Ray
sampler node takes rollout, inference and training steps with `RolloutLoop`, `InferenceLoop` and
`LearnerLoop`. Each loop logs its first step with its process id (`surge_log.txt`), which the test
reads: in the serial placement all three run in the main process, in the async one each role in
its own process."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from surge.app.resolve import parse_cfg
from surge.app.training_run import train

ROOT = Path(__file__).resolve().parents[2]
PLACEMENTS = {
    "serial": ["--serial_mode=True"],
    "async": [],
    "async_acting_in_workers": ["--policy_workers_per_policy=0"],
}
LOOPS = ("RolloutLoop", "InferenceLoop", "LearnerLoop")


def _first_steps(log: str) -> dict[str, set[int]]:
    """Each loop class -> the process ids that logged its first step."""
    found: dict[str, set[int]] = {name: set() for name in LOOPS}
    for name, pid in re.findall(r"(RolloutLoop|InferenceLoop|LearnerLoop): first step \(pid (\d+)", log):
        found[name].add(int(pid))
    return found


@pytest.mark.parametrize(
    "placement",  # the async runs start processes: slow (7 s each on an idle machine)
    [pytest.param(p, marks=[pytest.mark.slow] if p != "serial" else []) for p in PLACEMENTS],
)
def test_each_placement_drives_the_same_loop_classes(tmp_path, placement):
    args = [
        "--env=cartpole",
        "--experiment=loops",
        f"--train_dir={tmp_path}",
        "--num_workers=2",
        "--num_envs_per_worker=2",
        "--rollout=16",
        "--batch_size=64",
        "--train_for_env_steps=2000",
        "--decorrelate_experience_max_seconds=0",
        "--set_workers_cpu_affinity=False",
        "--seed=0",
        *PLACEMENTS[placement],
    ]
    assert train(parse_cfg(args)) == "done"
    found = _first_steps((tmp_path / "loops" / "surge_log.txt").read_text())
    for name in LOOPS:
        assert found[name], f"{name} took no step in the {placement} placement"
    main = os.getpid()
    if placement == "serial":  # one process: a small scheduler calls the three loops in turn
        assert all(pids == {main} for pids in found.values()), found
        return
    # async: each role in its own processes; the rollout loops step in the two workers' processes
    # (one of them only, on a loaded machine, when the other starts after the budget is spent)
    assert main not in set().union(*found.values()), found
    assert 1 <= len(found["RolloutLoop"]) <= 2, found
    assert found["LearnerLoop"].isdisjoint(found["RolloutLoop"]), found
    if placement == "async":  # inference in its own process
        assert found["InferenceLoop"].isdisjoint(found["RolloutLoop"] | found["LearnerLoop"]), found
    else:  # acting in the rollout workers: their own InferenceLoops, none elsewhere
        assert found["InferenceLoop"] == found["RolloutLoop"], found


@pytest.mark.slow
def test_the_ray_sampler_node_drives_the_same_loop_classes(tmp_path):
    """A local Ray instance (one sampler node): the node's rollout and inference processes step
    with `RolloutLoop` and `InferenceLoop` (their lines come through Ray's log forwarding, prefixed
    with the `SamplerNode` actor), the head's learner process with `LearnerLoop`."""
    pytest.importorskip("ray")
    cmd = [
        sys.executable,
        "-m",
        "surge.train",
        "--env=cartpole",
        "--experiment=loops",
        f"--train_dir={tmp_path}",
        "--distributed=ray",
        "--num_workers=2",
        "--num_envs_per_worker=2",
        "--train_for_env_steps=3000",
        "--decorrelate_experience_max_seconds=0",
        "--set_workers_cpu_affinity=False",
        "--num_torch_threads=1",
    ]
    env = {**os.environ, "PYTHONPATH": str(ROOT), "RAY_AUTH_MODE": "disabled"}
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env, cwd=ROOT)
    out = run.stdout + run.stderr
    assert run.returncode == 0, out[-3000:]
    node = _first_steps("\n".join(line for line in out.splitlines() if "SamplerNode pid=" in line))
    assert node["RolloutLoop"] and node["InferenceLoop"], out[-3000:]
    assert _first_steps(out)["LearnerLoop"], out[-3000:]
