"""An async learner reports the statistics of one batch per second (`surge.runtime.stats_cadence`),
with its diagnostics, while it trains many batches in between."""

import time

from surge.app.resolve import parse_cfg
from surge.runtime.async_placement import AsyncPlacement
from surge.runtime.checkpoint import CheckpointManager
from surge.runtime.stats_cadence import DIAGNOSTICS_INTERVAL_SEC


def test_an_async_learner_reports_one_batch_per_second(tmp_path):
    cfg = parse_cfg(
        [
            "--env=CartPole-v1", "--serial_mode=False", "--num_workers=1", "--num_envs_per_worker=8",
            "--rollout=16", "--batch_size=128", "--policy_workers_per_policy=0",
            "--encoder_mlp_layers", "16", "--decorrelate_experience_max_seconds=0",
            "--set_workers_cpu_affinity=False", f"--train_dir={tmp_path}", "--experiment=cadence",
        ]
    )  # fmt: skip
    placement = AsyncPlacement(cfg, [CheckpointManager(tmp_path / "ckpt0", 2, 0)], [None])
    window = 3.2  # seconds after the first report
    reports: list[tuple[float, dict[str, float]]] = []
    try:
        placement.start()
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            stats = placement.step().train_stats.get(0)
            if stats is not None:
                reports.append((time.monotonic(), stats))
            # a loaded machine (CI's two test workers) can starve the learner for seconds: the
            # window grows until a second report arrives, and the bound below follows it
            if len(reports) >= 2 and time.monotonic() > reports[0][0] + window:
                break
    finally:
        placement.close()
    assert reports, "no statistics within 90 s"
    # the first batch and one per second after it (a batch per report would give dozens)
    elapsed = max(window, reports[-1][0] - reports[0][0])
    assert 2 <= len(reports) <= 1 + elapsed / DIAGNOSTICS_INTERVAL_SEC + 1, [t for t, _ in reports]
    gaps = [b - a for (a, _), (b, _) in zip(reports, reports[1:], strict=False)]
    # sent a second apart by the learner's clock; received with the main process's polling jitter
    assert min(gaps) > 0.5 * DIAGNOSTICS_INTERVAL_SEC, gaps
    versions = [st["policy_version"] for _, st in reports]
    assert versions[-1] - versions[0] >= 5 * (len(reports) - 1), versions  # batches trained between
    for _, st in reports:  # each report carries its batch's diagnostics
        assert {"policy_loss", "entropy", "approx_kl", "policy_lag_avg", "lr", "samples"} <= set(st)
