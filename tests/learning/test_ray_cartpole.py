"""`--distributed=ray` on a Ray cluster of two nodes on this machine (`ray_two_nodes`: a head and a
second node with the custom resource `sampler_node`, which only the sampler node's actor requests,
so it runs there): (a) APPO solves CartPole-v1 with its experience from the second node
(deterministic evaluation of the final checkpoint >= 475, the existing CartPole test's flags and
budget); (b) killing the sampler node's processes mid-run (the actor and its rollout and inference
workers) loses only the blocks it had not shipped: Ray restarts it, it starts its workers again,
and training goes on to the end of the budget. One cluster for both (its start is most of the
time of a short run)."""

import os
import re
import signal
import threading
import time

import numpy as np
import pytest

pytest.importorskip("ray")

import ray_two_nodes  # noqa: E402
from test_cartpole import HYPERPARAMS  # noqa: E402

from surge.app.resolve import parse_cfg  # noqa: E402
from surge.app.training_run import train  # noqa: E402
from surge.enjoy import enjoy  # noqa: E402
from surge.runtime.checkpoint import CheckpointManager  # noqa: E402
from tests.play_checkpoint import CARTPOLE_SOLVED_EPISODES  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    before = os.environ.get("RAY_AUTH_MODE")
    os.environ["RAY_AUTH_MODE"] = "disabled"  # the driver's side of the cluster's setting
    c = ray_two_nodes.TwoNodeCluster()
    try:
        yield c.start()
    finally:
        c.stop()
        if before is None:
            os.environ.pop("RAY_AUTH_MODE", None)
        else:
            os.environ["RAY_AUTH_MODE"] = before


def ray_args(cluster, tmp_path, name):
    # fmt: off
    return [
        "--env=CartPole-v1", f"--experiment={name}", f"--train_dir={tmp_path}", "--distributed=ray",
        f"--ray_address={cluster.address}", f"--ray_node_resource={ray_two_nodes.SAMPLER_RESOURCE}",
        "--num_torch_threads=1", "--decorrelate_experience_max_seconds=0",
        "--set_workers_cpu_affinity=False",
    ]
    # fmt: on


def _watch(cluster, seen: list[int], stop: threading.Event) -> None:
    while not stop.wait(1.0):
        seen += cluster.sampler_node_pids()


@pytest.mark.slow
@pytest.mark.parametrize(
    "acting", [[], ["--policy_workers_per_policy=0"]], ids=["inference_workers", "acting_in_workers"]
)
def test_cartpole_reaches_475_with_its_sampler_node_on_the_second_node(cluster, tmp_path, acting):
    """Also with the sampler node's rollout workers acting themselves (no inference processes on
    the node; each reloads the weights the node receives from the learner)."""
    seen: list[int] = []
    stop = threading.Event()
    watcher = threading.Thread(target=_watch, args=(cluster, seen, stop), daemon=True)
    watcher.start()
    try:
        assert (
            train(
                parse_cfg([*ray_args(cluster, tmp_path, "cp"), *HYPERPARAMS, *acting, "--score_to_win=475"])
            )
            == "done"
        )
    finally:
        stop.set()
        watcher.join(5)
    assert seen, "no SamplerNode process ran under the second node's raylet"
    args = ["--env=CartPole-v1", "--experiment=cp", f"--train_dir={tmp_path}"]
    ev = parse_cfg(
        [
            *args,
            f"--max_num_episodes={CARTPOLE_SOLVED_EPISODES}",
            "--no_render=True",
            "--eval_deterministic=True",
        ],
        evaluation=True,
    )
    returns = enjoy(ev)["returns"]
    assert np.mean(returns) >= 475, returns


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGSTOP], ids=["sigkill", "sigstop"])
def test_killed_sampler_node_is_restarted_and_training_goes_on(cluster, tmp_path, sig):
    """SIGKILL: the node's actor and its workers are killed. SIGSTOP: its actor alone is stopped
    (a machine that stopped answering): its pull never returns, and the head kills it as hung
    after `--heartbeat_timeout_sec`, for Ray to restart."""
    frames = 30_000
    log_file = tmp_path / "kill" / "surge_log.txt"
    killed: list[int] = []

    def kill_when_shipping() -> None:  # a few seconds after the node shipped its first blocks
        deadline = time.time() + 300
        while time.time() < deadline:
            if log_file.exists() and "Sampler node 0 started" in log_file.read_text():
                time.sleep(3.0)
                pids = cluster.sampler_node_pids()  # the actor's first
                if sig == signal.SIGSTOP:
                    pids = pids[:1]
                for pid in pids:
                    try:
                        os.kill(pid, sig)
                    except ProcessLookupError:
                        pass
                killed.extend(pids)
                return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_when_shipping, daemon=True)
    killer.start()
    # fmt: off
    flags = ["--num_workers=2", "--num_envs_per_worker=8", f"--train_for_env_steps={frames}", "--seed=1",
             "--heartbeat_timeout_sec=10"]
    # fmt: on
    assert train(parse_cfg([*ray_args(cluster, tmp_path, "kill"), *flags])) == "done"
    killer.join(5)
    # SIGKILL: the actor, 2 rollout workers, 1 inference worker
    assert len(killed) >= (4 if sig == signal.SIGKILL else 1), killed
    text = log_file.read_text()
    hung = re.search(r"Sampler node 0 hung: its pull has not returned for (\d+) s", text)
    if sig == signal.SIGSTOP:
        assert hung and 10 <= int(hung.group(1)) <= 30, text[-3000:]
    else:
        assert hung is None
    lost_at = text.find("Sampler node 0 was lost")
    assert lost_at >= 0, text[-3000:]
    assert text.count("Sampler node 0 was lost") == 1, text[-3000:]  # one loss, counted once
    assert text.count("Sampler node 0 started its processes") == 2, text[-3000:]
    # training went on after the kill: env frames went from below the budget to it, and the final
    # checkpoint is at the budget, with a policy version past the one of the loss
    before = [int(x) for x in re.findall(r"Total env frames: (\d+)", text[:lost_at])]
    after = [int(x) for x in re.findall(r"Total env frames: (\d+)", text[lost_at:])]
    assert max(before, default=0) < frames <= max(after)
    version_at_loss = int(re.search(r"policy version (\d+) at the loss", text[lost_at:]).group(1))
    state = CheckpointManager(tmp_path / "kill" / "checkpoint_p0", 3, 0).load("latest")
    assert state is not None and state["env_frames"] >= frames
    assert state["learner"]["policy_version"] > version_at_loss


@pytest.mark.slow
def test_dqn_fills_its_replay_from_the_second_node_and_trains(cluster, tmp_path):
    """A replay algorithm on this path (not a learning test): DQN's learner on the head stores the
    sampler node's blocks in its replay (train/replay_size grows to the env steps stored) and
    trains on them (updates and policy versions past 0), with epsilon decaying by the run's env
    frames."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    frames = 6000
    # fmt: off
    flags = ["--algo=DQN", "--num_workers=2", "--num_envs_per_worker=4", f"--train_for_env_steps={frames}",
             "--learning_starts=500", "--seed=1"]
    # fmt: on
    assert train(parse_cfg([*ray_args(cluster, tmp_path, "dqn"), *flags])) == "done"
    acc = EventAccumulator(str(tmp_path / "dqn" / "summaries" / "0"), size_guidance={"scalars": 0})
    acc.Reload()
    tags = acc.Tags()["scalars"]

    def values(name: str) -> list[float]:
        tag = next(t for t in tags if t.endswith(name))
        return [e.value for e in acc.Scalars(tag)]

    sizes, updates, eps = values("replay_size"), values("updates"), values("epsilon")
    # the env steps of the node's blocks stored (past learning_starts, within the budget), trained
    # on (replay_ratio <= 1 update per stored step past learning_starts)
    assert 500 < sizes[-1] <= frames, sizes
    assert 0 < updates[-1] <= sizes[-1] - 500, updates
    assert eps[-1] < 1.0, eps
    state = CheckpointManager(tmp_path / "dqn" / "checkpoint_p0", 3, 0).load("latest")
    assert state is not None and state["env_frames"] >= frames
    assert state["learner"]["policy_version"] >= updates[-1] > 0


def _wait_no_sampler_node(cluster, timeout: float = 60) -> list[int]:
    """The sampler node's processes still alive after `timeout` s (Ray kills an actor whose
    owner, the driver, died)."""
    deadline = time.time() + timeout
    while (pids := cluster.sampler_node_pids()) and time.time() < deadline:
        time.sleep(0.5)
    return pids


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["sigint", "sigkill"])
def test_a_driver_stopped_at_a_random_moment_resumes_the_state_it_saved(cluster, tmp_path, monkeypatch, sig):
    """The Ray placement through a restart (issue 59, item 3): the driver (main process and
    learner) of a Ray run is stopped by SIGINT (clean: exit 130, final checkpoint) or SIGKILL at a
    seeded random moment after its first checkpoint. Its sampler node's processes go with it, and
    the same command resumes on the same cluster from the checkpoint left on disk: the weights,
    policy_version and env frames the resumed learner starts from are that file's, and the run
    trains on to its budget with a new sampler node."""
    import torch
    from restart_kill import UNREACHED, kill_if_running, resume_budget, start, stop_after_first_checkpoint

    import surge.app.training_run as training_run

    name, folder = "restart", tmp_path / "restart"
    args = [
        *ray_args(cluster, tmp_path, name),
        "--num_workers=1",
        "--num_envs_per_worker=4",
        "--save_every_sec=1",
    ]
    in_subprocess = [a for a in args if not a.startswith("--train_dir")]  # `start` adds it
    proc = start([*in_subprocess, f"--train_for_env_steps={UNREACHED}"], tmp_path)
    try:
        stop_after_first_checkpoint(proc, folder, sig, seed=11, max_delay=2.0, timeout=180)
    finally:
        kill_if_running(proc)
    assert _wait_no_sampler_node(cluster) == [], "the sampler node outlived its driver"
    on_disk = CheckpointManager(folder / "checkpoint_p0", 3, 0).load("latest")
    assert on_disk is not None

    loaded: list = []
    original = training_run.make_placement

    def spy(cfg, ckpts, resume_states, *rest):
        loaded.append(resume_states[0])
        return original(cfg, ckpts, resume_states, *rest)

    monkeypatch.setattr(training_run, "make_placement", spy)
    budget = resume_budget(folder)
    assert train(parse_cfg([*args, f"--train_for_env_steps={budget}"])) == "done"
    state = loaded[0]
    assert state is not None
    assert state["env_frames"] == on_disk["env_frames"]
    assert state["learner"]["policy_version"] == on_disk["learner"]["policy_version"]
    assert state["model"].keys() == on_disk["model"].keys()
    assert all(torch.equal(state["model"][k], on_disk["model"][k]) for k in on_disk["model"])
    final = CheckpointManager(folder / "checkpoint_p0", 3, 0).load("latest")
    assert final is not None and final["env_frames"] >= budget
    assert final["learner"]["policy_version"] > on_disk["learner"]["policy_version"]
    assert _wait_no_sampler_node(cluster) == []
