"""Several policies in one run: each learner trains only on the steps its policy acted on, each
policy's episodes, checkpoints and summaries are its own, and a stopped run resumes every policy."""

import re

import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.app.training_run import train
from surge.runtime.components import build_components
from surge.runtime.serial import SerialSampler

BASE = [
    "--env=CartPole-v1",
    "--experiment=mp",
    "--num_policies=2",
    "--num_workers=2",
    "--num_envs_per_worker=4",
    "--rollout=16",
    "--recurrence=16",
    "--batch_size=64",
    "--use_rnn=False",
    "--encoder_type=mlp",
    "--encoder_subtype=mlp",
    "--encoder_mlp_layers",
    "16",
    "--seed=2",
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
]


def test_each_learner_masks_the_steps_other_policies_acted_on(tmp_path):
    cfg = parse_cfg([*BASE, f"--train_dir={tmp_path}", "--serial_mode=True"])
    c = build_components(cfg)
    sampler = SerialSampler(c)
    batches = {}
    while len(batches) < 2:
        sampler.step()
        for p in (0, 1):
            if p not in batches and (slots := sampler.take(p)) is not None:
                batches[p] = slots
    for p, slots in batches.items():
        acted = c.buffers.policy_id[slots].T  # [T, N] time-major, as the batch
        assert (acted == p).any()  # the batch holds this policy's steps ...
        b = c.learners[p].prepare_batch(slots)
        c.learners[p]._mask_stale(b)
        assert torch.equal(b["valids"] > 0, acted == p)  # ... and learns from those only
        stats = c.learners[p].train_batch(c.learners[p].prepare_batch(slots))
        assert stats["policy_lag_min"] >= 0  # lags of its own samples only
    assert c.learners[0].policy_version > 0 and c.learners[1].policy_version > 0
    c.close()


def _log(tmp_path):
    return (tmp_path / "mp" / "surge_log.txt").read_text()


def _versions(tmp_path):
    out = []
    for p in (0, 1):
        last = sorted((tmp_path / "mp" / f"checkpoint_p{p}").glob("checkpoint_*.pth"))[-1]
        out.append(torch.load(last, weights_only=True)["learner"]["policy_version"])
    return out


@pytest.mark.slow
def test_async_run_reports_and_resumes_each_policy(tmp_path):
    args = [*BASE, f"--train_dir={tmp_path}", "--serial_mode=False", "--report_interval_sec=1"]
    assert train(parse_cfg([*args, "--train_for_env_steps=6000"])) == "done"
    first = _versions(tmp_path)
    assert min(first) > 0
    log = _log(tmp_path)
    assert re.search(r"Policy 0: Episode return", log) and re.search(r"Policy 1: Episode return", log)
    (tmp_path / "mp" / "done").unlink()
    assert train(parse_cfg([*args, "--train_for_env_steps=12000"])) == "done"
    resumed = [line for line in _log(tmp_path).splitlines() if "Resumed from env frame" in line]
    assert len(resumed) == 1 and "policy 0 at version" in resumed[0] and "policy 1 at version" in resumed[0]
    assert all(b > a for a, b in zip(first, _versions(tmp_path), strict=True))
