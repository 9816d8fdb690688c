"""An env that raises in `step` is rebuilt and its episode ended (the faulted step truncated and
not trained on); the run goes on and counts the faults; an env that fails again right after being
rebuilt stops the run with an EnvError naming it."""

import re

import flaky_envs  # noqa: F401  (the wrappers are named by module on the command line)
import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.errors import EnvError
from surge.runtime.components import build_components

SMALL = [
    "--env=CartPole-v1",
    "--serial_mode=True",
    "--encoder_type=mlp",
    "--encoder_subtype=mlp",
    "--encoder_mlp_layers",
    "32",
    "--use_rnn=False",
    "--seed=1",
]


def test_the_faulted_step_is_truncated_inactive_and_the_env_is_rebuilt():
    cfg = parse_cfg(
        [
            *SMALL,
            "--num_workers=1",
            "--num_envs_per_worker=1",
            "--worker_num_splits=1",
            "--decorrelate_envs_on_one_worker=False",
            "--env_wrappers",
            "flaky_envs:RaisesAtStep5",
        ]
    )
    c = build_components(cfg)
    try:
        worker, inference = c.workers[0], c.inferences[0]
        worker.reset()
        first_env = worker.splits[0].envs[0]
        slots = worker.splits[0].slots
        for _ in range(8):
            inference.infer([worker.policy_request(0)])
            worker.advance(0)
        b = c.buffers
        # steps 0-3 are real; step 4 (the env's 5th step) raised
        assert not b.truncated[slots, :4].any() and b.is_active[slots, :4].all()
        assert b.truncated[slots, 4].all() and not b.is_active[slots, 4].any()
        assert b.rewards[slots, 4].eq(0).all()
        assert float(b.rnn_states[slots, 5].abs().sum()) == 0.0  # a new episode starts at t = 5
        assert worker.splits[0].envs[0] is not first_env  # rebuilt
        assert b.is_active[slots, 5:8].all()  # the rebuilt env steps again
        assert worker.pop_env_faults() == (1, "RuntimeError: step 5 fails: | why, on a line of its own")
    finally:
        c.close()


def test_an_env_that_fails_again_after_being_rebuilt_stops_the_run_with_an_env_error(tmp_path):
    args = [*SMALL, f"--train_dir={tmp_path}", "--experiment=broken", "--train_for_env_steps=2000"]
    args += ["--env_wrappers", "flaky_envs:AlwaysRaises"]
    with pytest.raises(EnvError, match=r"raised 3 time\(s\) in a row after being rebuilt.*always fails"):
        train(parse_cfg(args))


@pytest.mark.slow
def test_a_run_whose_env_raises_on_one_percent_of_steps_finishes_and_counts_the_faults(tmp_path):
    args = [*SMALL, f"--train_dir={tmp_path}", "--experiment=flaky", "--train_for_env_steps=10000"]
    args += ["--env_wrappers", "surge.envs.fault_injection:FlakyStep"]
    assert train(parse_cfg(args)) == "done"
    log = (tmp_path / "flaky" / "surge_log.txt").read_text()
    counts = [int(n) for n in re.findall(r"raised in env.step (\d+) time", log)]
    assert counts, log[-2000:]
    # 1% of ~10000 env steps (binomial: mean 100, sd 10; the decorrelation steps fault too)
    assert 50 <= counts[-1] <= 200, counts
    assert "InjectedEnvFault" in log
    state = torch.load(sorted((tmp_path / "flaky" / "checkpoint_p0").glob("*.pth"))[-1], weights_only=True)
    assert state["env_frames"] >= 10000
