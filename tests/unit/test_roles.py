"""Policy roles: `--frozen_policies` and `--self_play` are read into learning policies, and wrong
values are refused before anything starts, naming the field."""

import pytest
import torch
import two_player_toy  # noqa: F401  (registers --env=higher_number)

from surge.app.preflight import validate_cfg
from surge.app.resolve import parse_cfg
from surge.cfg.policy_roles import frozen_sources, learning_policies
from surge.errors import ConfigError
from surge.population.roles import source_weights

BASE = ["--env=CartPole-v1", "--num_workers=1"]


def _cfg(tmp_path, *args):
    cfg = parse_cfg([*BASE, f"--train_dir={tmp_path}", *args])
    validate_cfg(cfg)
    return cfg


def test_roles_from_the_flags(tmp_path):
    assert learning_policies(_cfg(tmp_path)) == [0]
    cfg = _cfg(tmp_path, "--num_policies=3", "--frozen_policies", "1:uniform", "2:random")
    assert learning_policies(cfg) == [0]
    assert frozen_sources(cfg) == {1: "uniform", 2: "random"}
    cfg = parse_cfg(
        ["--env=higher_number", f"--train_dir={tmp_path}", "--num_policies=4", "--self_play=True"]
    )
    validate_cfg(cfg)
    assert learning_policies(cfg) == [0]
    assert frozen_sources(cfg) == {1: "self_play", 2: "self_play", 3: "self_play"}


@pytest.mark.parametrize(
    ("args", "field"),
    [
        (["--num_policies=2", "--frozen_policies", "uniform"], "frozen_policies"),
        (["--num_policies=2", "--frozen_policies", "2:uniform"], "frozen_policies"),
        (["--num_policies=2", "--frozen_policies", "1:uniform", "1:random"], "frozen_policies"),
        (["--num_policies=2", "--frozen_policies", "1:/no/such/file.pth"], "frozen_policies"),
        (["--num_policies=2", "--frozen_policies", "0:uniform", "1:random"], "frozen_policies"),
        (["--self_play=True"], "num_policies"),
        (["--num_policies=3", "--self_play=True", "--frozen_policies", "1:uniform"], "frozen_policies"),
        (["--num_policies=3", "--self_play=True", "--policy_mapping=agent_index"], "policy_mapping"),
        (
            ["--num_policies=3", "--self_play=True", "--self_play_env_update_num=3"],
            "self_play_env_update_num",
        ),
        (
            ["--num_policies=3", "--self_play=True", "--self_play_games_to_check=0"],
            "self_play_games_to_check",
        ),
        (["--num_policies=2", "--policy_mapping=self_play"], "policy_mapping"),
        (["--num_policies=2", "--self_play=True"], "self_play"),  # CartPole has one player
        # PBT would rank, set and replace a policy that has no learner
        (["--num_policies=3", "--with_pbt=True", "--frozen_policies", "2:uniform"], "with_pbt"),
        (
            [
                "--num_policies=2",
                "--frozen_policies",
                "1:uniform",
                "--policy_hyperparams",
                '{"1": {"gamma": 0.9}}',
            ],
            "policy_hyperparams",
        ),
    ],
)
def test_wrong_roles_are_refused_naming_the_field(tmp_path, args, field):
    with pytest.raises(ConfigError) as e:
        _cfg(tmp_path, *args)
    assert e.value.field == field


def test_uniform_source_zeroes_the_policy_head_only(tmp_path):
    initial = {"policy_head.weight": torch.ones(2, 3), "policy_head.bias": torch.ones(2), "x": torch.ones(1)}
    out = source_weights("uniform", initial)
    assert not out["policy_head.weight"].any() and not out["policy_head.bias"].any()
    assert torch.equal(out["x"], initial["x"]) and initial["policy_head.weight"].all()  # input untouched
    path = tmp_path / "c.pth"
    torch.save({"model": {k: v * 3 for k, v in initial.items()}}, path)
    assert torch.equal(source_weights(str(path), initial)["x"], torch.full((1,), 3.0))
    torch.save({"model": {"other": torch.ones(1)}}, path)
    with pytest.raises(ValueError, match="another model"):
        source_weights(str(path), initial)
    # the same names with another shape would fail later, in the shared weights' copy
    torch.save({"model": {**initial, "policy_head.weight": torch.ones(4, 3)}}, path)
    with pytest.raises(ValueError, match=r"policy_head.weight \(4, 3\) saved, \(2, 3\) built"):
        source_weights(str(path), initial)
