"""benchmarks/learner_vs_bound.py (the learner's train_batch against the compute bound's training
step, docs/benchmarks.md) runs, times both, and times the learner's parts inside its calls."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import learner_vs_bound as lvb  # noqa: E402

import surge.algorithms.appo.learner as learner_module  # noqa: E402


def test_the_script_times_the_learner_the_bound_and_the_parts(capsys):
    ppo_loss = learner_module.ppo_loss
    out = lvb.main(["--reps", "2", "--warmup", "1"])
    assert out["train_batch"] > 0 and out["bound_step"] > 0
    # the parts nest inside train_batch: the optimizer step inside _step, inside the call
    assert 0 < out["apply_gradients"] < out["_step"] < out["train_batch"] * 1.5
    assert {"_gae_units", "ppo_loss", "_mask_stale"} <= set(out)
    assert learner_module.ppo_loss is ppo_loss  # the module's functions are given back
    assert "| _step |" in capsys.readouterr().out
