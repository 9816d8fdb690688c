"""`--exploration_loss_schedule=linear_decay`: rl_games' `schedule_entropy` (its `LinearScheduler`
with `apply_to_entropy`, common/schedulers.py) as the reference, over the same budget."""

from __future__ import annotations

import pytest
from rl_games.common.schedulers import LinearScheduler
from rl_games_yaml_support import load

from surge.app.rl_games.translation import translate
from surge.cfg.config import Config
from surge.learning.base import exploration_coeff


def test_linear_decay_is_rl_games_linear_scheduler_on_entropy():
    # rl_games counts epochs (use_epochs) of a fixed number of frames; surge counts the frames
    epochs, frames_per_epoch, start = 200, 4096, 0.01
    ref = LinearScheduler(
        2.5e-4, max_steps=epochs, use_epochs=True, apply_to_entropy=True, start_entropy_coef=start
    )
    cfg = Config(
        exploration_loss_schedule="linear_decay",
        exploration_loss_coeff_min=1e-4,
        train_for_env_steps=epochs * frames_per_epoch,
    )
    for epoch in (0, 1, 50, 199, 200, 260):
        _, expected = ref.update(2.5e-4, start, epoch, 0, 0.0)
        assert exploration_coeff(cfg, epoch * frames_per_epoch, start) == pytest.approx(expected, rel=1e-12)


def test_constant_keeps_the_coefficient():
    assert exploration_coeff(Config(train_for_env_steps=100), 90, 0.02) == 0.02


def test_schedule_entropy_of_a_linear_file_is_the_flag():
    v = translate(load("atari/ppo_gopher.yaml"), "ppo_gopher.yaml").values
    assert v["lr_schedule"] == "linear_decay"
    assert (v["exploration_loss_schedule"], v["exploration_loss_coeff_min"]) == ("linear_decay", 1e-4)


def test_schedule_entropy_without_a_linear_lr_schedule_has_no_effect():
    data = load("atari/ppo_gopher.yaml")
    data["params"]["config"]["lr_schedule"] = None  # rl_games then keeps the rate (IdentityScheduler)
    out = translate(data, "x.yaml")
    assert "exploration_loss_schedule" not in out.values
    assert any(n.startswith("params.config.schedule_entropy: no effect") for n in out.notes)
