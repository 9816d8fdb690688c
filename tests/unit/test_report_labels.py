"""`surge report`'s legend (issue 55, item 14): runs of different envs differ in tens of derived
settings, and the labels made of them ran to hundreds of characters, cut off at the PNG's edge.
Labels now fit in `LABEL_MAX` characters (the runs' shared name when the settings do not), the
legend lies inside the figure below the panels, the full settings are in report.md, and the x axis
starts at 0."""

import numpy as np
from torch.utils.tensorboard import SummaryWriter

from surge.app.resolve import parse_cfg
from surge.cfg.cli import save_cfg
from surge.experiment.compare import LABEL_MAX, draw_groups, find_runs, group_runs, write_comparison

ENVS = {"cartpole": "cartpole", "breakout": "atari_breakout", "pong": "atari_pong", "doom": "doom_basic"}


def _sweep(root):
    """Two seeds of each env in `ENVS`, each with the cfg.json `surge train` writes for it and a few
    summary points (from env frame 1000 on)."""
    for name, env in ENVS.items():
        for seed in (1, 2):
            exp = f"{name}_seed_{seed}"
            cfg = parse_cfg([f"--env={env}", f"--experiment={exp}", f"--train_dir={root}", f"--seed={seed}"])
            save_cfg(cfg, root / exp / "cfg.json")
            w = SummaryWriter(str(root / exp / "summaries" / "0"))
            for step in (1000, 2000, 3000):
                w.add_scalar("episode/return_mean", float(np.random.default_rng(seed).uniform()), step)
            w.close()


def test_labels_of_runs_of_different_envs_are_short_and_name_the_runs(tmp_path):
    _sweep(tmp_path)
    groups = group_runs(find_runs([tmp_path]))
    assert len(groups) == len(ENVS)
    labels = sorted(g.label for g in groups)
    assert all(len(label) <= LABEL_MAX for label in labels), [len(x) for x in labels]
    assert labels == sorted(ENVS)  # the experiments' shared names, seeds stripped
    # the settings the labels leave out are in report.md
    write_comparison(find_runs([tmp_path]), tmp_path / "out")
    report = (tmp_path / "out" / "report.md").read_text()
    assert "env=atari_breakout" in report and "encoder_type=conv" in report


def test_the_legend_lies_inside_the_figure_below_the_panels_and_x_starts_at_0(tmp_path):
    _sweep(tmp_path)
    fig, panels = draw_groups(group_runs(find_runs([tmp_path])), "env_frames", "sweep")
    assert panels >= 1
    renderer = fig.canvas.get_renderer()
    (legend,) = fig.legends
    box, figure = legend.get_window_extent(renderer), fig.bbox
    assert box.x0 >= 0 and box.x1 <= figure.width and box.y0 >= 0, (box, figure)
    panel_bottom = min(ax.get_tightbbox(renderer).y0 for ax in fig.axes if ax.get_visible())
    assert box.y1 <= panel_bottom + 1, (box, panel_bottom)  # below the x labels, not over them
    assert all(ax.get_xlim()[0] == 0 for ax in fig.axes if ax.get_visible())
