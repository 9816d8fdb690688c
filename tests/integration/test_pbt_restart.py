"""PBT's state through a restart (issue 59, item 3), serial placement: the controller
(`pbt_state.json`: hyper-parameters, frames played, objective windows, random stream), the
hyper-parameters the learners hold and `pbt_log.jsonl`.

- SIGINT at a seeded random moment after the first checkpoint, then the same command: the run ends
  as the run that never stopped (serial exact resume), PBT's state and log included.
- SIGKILL at such a moment: the resumed controller starts from the `pbt_state.json` the killed run
  left, the log the killed run wrote is kept line for line, and each policy's weights are those
  of the state PBT resumed (a replacement is checkpointed when it happens, so a kill cannot leave
  a policy that PBT counts as replaced with its old weights).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
import torch
from restart_kill import UNREACHED, kill_if_running, resume_budget, run, start, stop_after_first_checkpoint

from surge.population.pbt import PopulationBasedTraining

ARGS = [
    "--env=CartPole-v1",
    "--experiment=pbt",
    "--num_policies=2",
    "--with_pbt=True",
    "--pbt_start_mutation=300",
    "--pbt_period_env_steps=300",
    "--pbt_mutation_rate=1",
    "--pbt_replace_fraction=0.5",
    "--pbt_replace_reward_gap=0.01",
    "--pbt_replace_reward_gap_absolute=0.01",
    "--num_workers=1",
    "--num_envs_per_worker=4",
    "--rollout=16",
    "--batch_size=64",
    "--use_rnn=False",
    "--seed=3",
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
    "--serial_mode=True",
    "--num_torch_threads=1",
    "--write_report=False",
    "--save_every_sec=1",
]


def _final(folder: Path, p: int) -> dict:
    last = sorted((folder / f"checkpoint_p{p}").glob("checkpoint_*.pth"))[-1]
    return torch.load(last, weights_only=True)


def _records(folder: Path) -> list[dict]:
    """pbt_log.jsonl's records (every line must be whole JSON)."""
    return [json.loads(line) for line in (folder / "pbt_log.jsonl").read_text().splitlines()]


def _updates(folder: Path) -> list[dict]:
    """The log's update records: a resumed run appends one more "start" record, nothing else."""
    return [r for r in _records(folder) if r["event"] != "start"]


@pytest.mark.slow
def test_ctrl_c_at_a_random_moment_then_resume_ends_as_the_run_that_never_stopped(tmp_path):
    stopped = tmp_path / "stopped"
    proc = start([*ARGS, f"--train_for_env_steps={UNREACHED}"], stopped)
    try:
        stop_after_first_checkpoint(proc, stopped / "pbt", signal.SIGINT, seed=1, max_delay=1.0)
    finally:
        kill_if_running(proc)
    assert (stopped / "pbt" / "pbt_state.json").exists()
    budget = [f"--train_for_env_steps={resume_budget(stopped / 'pbt', 3000)}"]
    resumed = run([*ARGS, *budget], stopped)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    ref = tmp_path / "ref"
    done = run([*ARGS, *budget], ref)
    assert done.returncode == 0, done.stderr[-3000:]
    a, b = ref / "pbt", stopped / "pbt"
    assert "PBT resumed from" in (b / "surge_log.txt").read_text()
    assert json.loads((b / "pbt_state.json").read_text()) == json.loads((a / "pbt_state.json").read_text())
    assert _updates(b) == _updates(a) and any(r["event"] == "replace" for r in _updates(a))
    for p in range(2):
        x, y = _final(a, p), _final(b, p)
        assert y["learner"]["hyperparams"] == x["learner"]["hyperparams"], p
        assert y["learner"]["policy_version"] == x["learner"]["policy_version"], p
        for k in x["model"]:
            assert torch.equal(x["model"][k], y["model"][k]), (p, k)


@pytest.mark.slow
def test_sigkill_at_a_random_moment_then_resume_loads_the_state_the_run_left(tmp_path, monkeypatch):
    folder = tmp_path / "pbt"
    proc = start([*ARGS, f"--train_for_env_steps={UNREACHED}"], tmp_path)
    try:
        stop_after_first_checkpoint(proc, folder, signal.SIGKILL, seed=2, max_delay=1.5)
    finally:
        kill_if_running(proc)
    saved = json.loads((folder / "pbt_state.json").read_text())
    log_before = (folder / "pbt_log.jsonl").read_text()
    records = [json.loads(line) for line in log_before.splitlines()]  # every line is whole
    # a policy PBT counts as replaced resumes with the weights it was given: its latest checkpoint
    # (the one the resume loads) was written at or after its last replacement
    for p in range(2):
        replaced = [r["env_frames"] for r in records if r["event"] == "replace" and r["policy"] == p]
        latest = sorted((folder / f"checkpoint_p{p}").glob("checkpoint_*.pth"))[-1]
        assert not replaced or int(latest.stem.split("_f")[1]) >= replaced[-1], (p, latest.name, replaced)

    # the resume runs in this process to see the controller right after it loaded its state
    from surge.app.resolve import parse_cfg
    from surge.app.training_run import train

    loaded: list[dict] = []
    original = PopulationBasedTraining._load

    def spy(self: PopulationBasedTraining) -> bool:
        resumed = original(self)
        loaded.append(json.loads(json.dumps(self.state_dict())) if resumed else {})
        return resumed

    monkeypatch.setattr(PopulationBasedTraining, "_load", spy)
    assert (
        train(parse_cfg([*ARGS, f"--train_dir={tmp_path}", f"--train_for_env_steps={resume_budget(folder)}"]))
        == "done"
    )
    assert loaded == [saved]
    assert (folder / "pbt_log.jsonl").read_text().startswith(log_before)
    for p in range(2):  # the learners train with PBT's values, not the flags'
        assert _final(folder, p)["learner"]["hyperparams"]["learning_rate"] == pytest.approx(
            json.loads((folder / "pbt_state.json").read_text())["hyperparams"][p]["learning_rate"]
        )
