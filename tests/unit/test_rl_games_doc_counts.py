"""docs/rl_games.md's count of shipped rl_games files that translate is what `surge train` accepts:
a file counted "translates" starts here (`mixed_precision: True` included: float32 on a CPU, as
rl_games runs it); and rl_games envs surge does not make name the command that trains
the task instead."""

from __future__ import annotations

import contextlib
import importlib.util
import io
import shlex
from pathlib import Path

import pytest
from rl_games_yaml_support import CONFIGS, load

from surge.app.resolve import parse_cfg
from surge.app.rl_games.envs import RlGamesKeyError
from surge.app.rl_games.translation import translate

ROOT = Path(__file__).resolve().parents[2]


def _script():
    spec = importlib.util.spec_from_file_location(
        "rl_games_configs", ROOT / "benchmarks" / "rl_games_configs.py"
    )
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.slow
def test_the_files_counted_as_translating_are_the_ones_surge_train_accepts_here(tmp_path):
    script = _script()
    for path in sorted(CONFIGS.rglob("*.yaml")):
        result = script.classify(path)[0]
        if not result.startswith("translates"):
            continue
        assert result == "translates", (path, result)
        parse_cfg([f"--cfg={path}", f"--train_dir={tmp_path}", "--experiment=x"])  # accepted as it is
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        script.main([])
    summary = out.getvalue().splitlines()[0]
    assert summary in (ROOT / "docs" / "rl_games.md").read_text().splitlines(), summary


@pytest.mark.parametrize("name", ["ppo_multiwalker.yaml"])
def test_an_rl_games_env_surge_does_not_make_names_the_surge_command_for_the_task(name, tmp_path):
    with pytest.raises(RlGamesKeyError) as e:
        translate(load(name), name)
    commands = [c for c in e.value.fix.split("`") if c.startswith("surge train ")]
    assert commands, e.value.fix
    cfg = parse_cfg([*shlex.split(commands[0])[2:], f"--train_dir={tmp_path}", "--experiment=x"])
    assert cfg.env.startswith("pettingzoo_sisl.multiwalker")
