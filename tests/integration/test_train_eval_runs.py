"""Evaluation during training in real CartPole runs: eval returns in TensorBoard (serial after the
run, async while the run goes on), the `--save_best_by_eval` checkpoint holds the weights
that scored: replayed by a naive loop over the documented seeds, they give its eval return, and
`--eval_score_to_win` stops a run after the first evaluation that reaches it."""

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import gymnasium as gym
import pytest
import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.learning.algorithm import get_algorithm

ROOT = Path(__file__).resolve().parents[2]
SEED = 4
EPISODES = 3
COMMON = [
    "--env=CartPole-v1",
    "--num_workers=2",
    "--num_envs_per_worker=4",
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
    "--num_torch_threads=1",
    f"--seed={SEED}",
    f"--eval_episodes={EPISODES}",
    "--eval_deterministic=True",
    "--save_best_by_eval=True",
]


def eval_scalars(folder: Path, tag: str) -> list[tuple[int, float]]:
    ea = EventAccumulator(str(folder / "summaries" / "0"), size_guidance={"scalars": 0})
    ea.Reload()
    if tag not in ea.Tags()["scalars"]:
        return []
    return [(e.step, e.value) for e in ea.Scalars(tag)]


def replay_mean(folder: Path, cfg_args: list[str], state: dict) -> float:
    """Reference: the checkpoint's weights, greedy (argmax of the logits), on fresh CartPole-v1
    envs reset with the documented eval seeds (docs/evaluation.md)."""
    cfg = parse_cfg([*cfg_args, f"--train_dir={folder.parent}", f"--experiment={folder.name}"])
    env = gym.make("CartPole-v1")
    model = get_algorithm("APPO").make_model(cfg, env.observation_space, env.action_space).acting
    model.load_state_dict(state["model"])
    returns = []
    for k in range(EPISODES):
        obs, _ = env.reset(seed=(SEED * 100003 + 2**31 + k) % 2**32)
        rnn = torch.zeros(1, model.rnn_state_size)
        total, done = 0.0, False
        while not done:
            out = model.act(torch.as_tensor(obs, dtype=torch.float32)[None], rnn)
            rnn = out.rnn_states
            obs, reward, terminated, truncated, _ = env.step(int(out.logits[0].argmax()))
            total, done = total + float(reward), terminated or truncated
        returns.append(total)
    return sum(returns) / len(returns)


def check_best(folder: Path, cfg_args: list[str], means: list[tuple[int, float]]) -> None:
    best = sorted((folder / "checkpoint_p0").glob("best_*.pth"))
    assert len(best) == 1
    state = torch.load(best[0], weights_only=True)
    # the highest eval return logged is the best checkpoint's, and its weights replay to it
    assert state["eval_return"] == pytest.approx(max(v for _, v in means))
    assert state["env_frames"] in [s for s, v in means if v == pytest.approx(state["eval_return"])]
    assert replay_mean(folder, cfg_args, state) == pytest.approx(state["eval_return"])


@pytest.mark.slow
def test_serial_run_logs_eval_returns_and_keeps_the_best_evaluated_weights(tmp_path):
    every = 3000
    args = [*COMMON, "--serial_mode=True", f"--eval_every_env_frames={every}"]
    run = [*args, f"--train_dir={tmp_path}", "--experiment=ser", "--train_for_env_steps=12000"]
    assert train(parse_cfg(run)) == "done"
    folder = tmp_path / "ser"
    means = eval_scalars(folder, "eval/return_mean")
    steps = [s for s, _ in means]
    assert len(steps) == 4
    assert all(k * every <= s < k * every + 1000 for k, s in zip(range(1, 5), steps, strict=True))
    assert [s for s, _ in eval_scalars(folder, "eval/return_std")] == steps
    assert [s for s, _ in eval_scalars(folder, "eval/length_mean")] == steps
    assert [v for _, v in eval_scalars(folder, "eval/length_mean")] == [v for _, v in means]  # CartPole
    check_best(folder, args, means)


@pytest.mark.slow
def test_eval_score_to_win_stops_the_run_after_the_first_evaluation_that_reaches_it(tmp_path):
    every, score, budget = 2000, 100, 300_000
    args = [*COMMON, "--serial_mode=True", f"--eval_every_env_frames={every}", f"--eval_score_to_win={score}"]
    run = [*args, f"--train_dir={tmp_path}", "--experiment=win", f"--train_for_env_steps={budget}"]
    assert train(parse_cfg(run)) == "done"
    folder = tmp_path / "win"
    means = eval_scalars(folder, "eval/return_mean")
    assert len(means) >= 2, means  # an untrained CartPole policy does not score 100
    assert means[-1][1] >= score and all(v < score for _, v in means[:-1]), means
    final = sorted((folder / "checkpoint_p0").glob("checkpoint_*.pth"))[-1]
    frames = torch.load(final, weights_only=True)["env_frames"]
    assert means[-1][0] <= frames < means[-1][0] + every < budget  # stopped at once, long before the budget
    log = (folder / "surge_log.txt").read_text()
    assert f"Policy 0's evaluation at env frame {means[-1][0]} has a mean return" in log
    assert f"Stopping: every learning policy has scored --eval_score_to_win={score}" in log
    check_best(folder, args, means)  # the best checkpoint is the weights that scored


def _start_run(args: list[str], train_dir: Path, experiment: str, frames: int) -> subprocess.Popen:
    """`python -m surge.train` with `args` in a child process, its output piped (text)."""
    cmd = [
        sys.executable,
        "-m",
        "surge.train",
        *args,
        f"--train_dir={train_dir}",
        f"--experiment={experiment}",
    ]
    cmd.append(f"--train_for_env_steps={frames}")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT, env=env
    )


def _alive(pid: int) -> bool:
    stat = Path(f"/proc/{pid}/stat")
    return stat.exists() and stat.read_text().split()[2] != "Z"


@pytest.mark.slow
def test_async_run_reports_eval_returns_while_it_trains_and_stops_its_evaluator(tmp_path):
    args = [*COMMON, "--eval_every_env_frames=2000"]
    proc = _start_run(args, tmp_path, "asy", 1_000_000_000)
    folder = tmp_path / "asy"
    try:
        deadline, means = time.time() + 240, []
        while time.time() < deadline and len(means) < 2:
            time.sleep(1.0)
            assert proc.poll() is None, proc.communicate()[0][-3000:]
            if (folder / "summaries" / "0").is_dir():
                means = eval_scalars(folder, "eval/return_mean")
        assert len(means) >= 2, "no two evaluations in TensorBoard within 240 s"
        assert proc.poll() is None  # they were read while the run trains
        log = (folder / "surge_log.txt").read_text()
        pid = int(re.search(r"Started process evaluator \(pid (\d+)\)", log).group(1))
        assert re.search(r"Eval policy 0 at env frame \d+ \(policy version \d+\): return", log)
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=90)
    assert proc.returncode == 130, out[-3000:]  # 128 + SIGINT: stopped on request
    deadline = time.time() + 5
    while time.time() < deadline and _alive(pid):
        time.sleep(0.1)
    assert not _alive(pid)
    means = eval_scalars(folder, "eval/return_mean")
    steps = [s for s, _ in means]
    assert steps == sorted(steps) and all(s >= 2000 for s in steps)
    # every evaluation the evaluator played was reported, one that ended during Ctrl+C too
    log = (folder / "surge_log.txt").read_text()
    played = int(re.search(r"Evaluator: (\d+) evaluation\(s\) played", log).group(1))
    assert len(re.findall(r"Eval policy 0 at env frame", log)) == played == len(means)
    check_best(folder, args, means)


@pytest.mark.slow
@pytest.mark.parametrize("serial", [True, False])
def test_a_budget_end_evaluates_the_final_weights_for_the_best_checkpoint(tmp_path, serial):
    """No evaluation falls due before the budget: with --save_best_by_eval the final weights are
    played once at the end, so the best checkpoint is never older than the last weights evaluated
    (a starved async evaluator once left a best from 27.6k of 300k frames)."""
    args = [*COMMON, f"--serial_mode={serial}", "--eval_every_env_frames=1000000"]
    run = [*args, f"--train_dir={tmp_path}", "--experiment=fin", "--train_for_env_steps=6000"]
    assert train(parse_cfg(run)) == "done"
    folder = tmp_path / "fin"
    final = torch.load(sorted((folder / "checkpoint_p0").glob("checkpoint_*.pth"))[-1], weights_only=True)
    means = eval_scalars(folder, "eval/return_mean")
    assert [s for s, _ in means] == [final["env_frames"]]  # one evaluation: the final weights'
    check_best(folder, args, means)
    best = torch.load(next((folder / "checkpoint_p0").glob("best_*.pth")), weights_only=True)
    assert best["learner"]["policy_version"] == final["learner"]["policy_version"]
    assert "Evaluating policy 0's final weights" in (folder / "surge_log.txt").read_text()


@pytest.mark.slow
def test_async_final_evaluation_competes_with_the_best_the_evaluator_wrote(tmp_path):
    """Evaluations during the run wrote a best (the evaluator process); the final weights' own
    evaluation (or none, when the evaluator played them last) keeps the best of all: the
    checkpoint holds the highest eval return logged, and its weights replay to it."""
    args = [*COMMON, "--eval_every_env_frames=2000"]
    run = [*args, f"--train_dir={tmp_path}", "--experiment=both", "--train_for_env_steps=16000"]
    assert train(parse_cfg(run)) == "done"
    folder = tmp_path / "both"
    means = eval_scalars(folder, "eval/return_mean")
    final = torch.load(sorted((folder / "checkpoint_p0").glob("checkpoint_*.pth"))[-1], weights_only=True)
    log = (folder / "surge_log.txt").read_text()
    assert f"Policy 0's final weights (policy version {final['learner']['policy_version']})" in log or (
        means[-1][0] == final["env_frames"]
    )
    check_best(folder, args, means)


@pytest.mark.slow
def test_sigterm_during_the_final_evaluation_leaves_a_done_run(tmp_path):
    """A final evaluation long enough to be interrupted (2000 episodes of an untrained policy):
    SIGTERM stops it, the run is still done (exit 0, the done file) and the best stays as it was."""
    args = [*COMMON, "--serial_mode=True", "--eval_every_env_frames=1000000", "--eval_episodes=2000"]
    proc = _start_run(args, tmp_path, "term", 2000)
    folder = tmp_path / "term"
    log = folder / "surge_log.txt"
    try:
        deadline = time.time() + 120
        while not (log.exists() and "Evaluating policy 0's final weights" in log.read_text()):
            assert proc.poll() is None and time.time() < deadline, proc.communicate()[0][-3000:]
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        out, _ = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out[-3000:]
    text = log.read_text()
    assert "The final evaluation was cut short by a signal" in text
    assert "Training finished" in text and (folder / "done").exists()
    assert not list((folder / "checkpoint_p0").glob("best_*.pth"))  # no evaluation finished
