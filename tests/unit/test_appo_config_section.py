"""APPO's PPO and V-trace flags are its config section, `surge/algorithms/appo/config.py`
(issue 56, item 3): owned by its folder, spelled and defaulted as Sample Factory has them, shown in
`--help` under "algorithm APPO", range-checked from their definitions, and a cfg.json written when
they were core flags still resumes."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from surge.algorithms.appo.config import APPOParams
from surge.app.resolve import parse_cfg
from surge.cfg.cli import save_cfg
from surge.cfg.config import Config, OptimParams, algo_params, core_fields, flag_value
from surge.errors import ConfigError
from surge.learning.algorithm import get_algorithm

#: the flags that were core `OptimParams` fields before APPO's section held them
MOVED = (
    "with_vtrace",
    "vtrace_rho",
    "vtrace_c",
    "ppo_clip_ratio",
    "ppo_clip_lower",
    "ppo_clip_value",
    "kl_loss_coeff",
    "bounds_loss_coef",
    "bound_loss_type",
    "normalize_advantage_over",
    "obs_normalizer_update",
)

#: Sample Factory 2.1.1, sample_factory/cfg/cfg.py (add_rl_args): `--name` -> default. with_vtrace
#: is the exception: 2.1.1 has False, surge keeps Sample Factory v1's True (appo.py, the seed's)
SAMPLE_FACTORY_2_1_1 = {
    "ppo_clip_ratio": 0.1,
    "ppo_clip_value": 1.0,
    "kl_loss_coeff": 0.0,
    "vtrace_rho": 1.0,
    "vtrace_c": 1.0,
    "value_loss_coeff": 0.5,
    "exploration_loss_coeff": 0.003,
    "exploration_loss": "entropy",
    "gae_lambda": 0.95,
    "normalize_advantage": True,
}


def _cfg(tmp_path, *flags, evaluation=False):
    return parse_cfg(
        ["--env=cartpole", f"--train_dir={tmp_path}", "--experiment=run", *flags], evaluation=evaluation
    )


def test_appo_declares_its_section_in_its_folder():
    assert get_algorithm("APPO").params is APPOParams
    assert APPOParams.__module__ == "surge.algorithms.appo.config"
    section = {f.name for f in dataclasses.fields(APPOParams)}
    assert section == set(MOVED)
    core = {f.name for f in core_fields()}
    assert not section & core  # no longer core flags
    assert not section & {f.name for f in dataclasses.fields(OptimParams)}


def test_spellings_and_defaults_are_sample_factory_s():
    cfg = Config()  # the fields' own defaults (an env family may override some: cartpole's coefficient)
    values = {name: flag_value(cfg, name) for name in SAMPLE_FACTORY_2_1_1}
    assert values == SAMPLE_FACTORY_2_1_1
    assert algo_params(cfg, APPOParams) == APPOParams()  # a config made by hand gets the defaults
    assert APPOParams().with_vtrace is True  # Sample Factory v1's default


def test_the_flags_parse_flat_and_land_in_the_section(tmp_path):
    cfg = _cfg(tmp_path, "--ppo_clip_ratio=0.2", "--with_vtrace=False", "--kl_loss_coeff=0.05")
    appo = algo_params(cfg, APPOParams)
    assert (appo.ppo_clip_ratio, appo.with_vtrace, appo.kl_loss_coeff) == (0.2, False, 0.05)
    flat = cfg.to_dict()  # cfg.json stays flat, one key per flag, as Sample Factory's
    assert (flat["ppo_clip_ratio"], flat["with_vtrace"], flat["kl_loss_coeff"]) == (0.2, False, 0.05)


def test_help_shows_them_in_the_algorithm_s_section(tmp_path, capsys):
    with pytest.raises(SystemExit):
        _cfg(tmp_path, "--help")
    out = capsys.readouterr().out
    before, appo = out.split("algorithm APPO:", 1)
    for name in MOVED:  # the line that defines the flag, not a help text that names it
        assert re.search(rf"^  --{name}\b", appo, re.M), name
        assert not re.search(rf"^  --{name}\b", before, re.M), name  # not in "optimisation" any more


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("--kl_loss_coeff=-0.1", "must be >= 0, got -0.1 (a negative coefficient rewards moving away"),
        ("--vtrace_c=-0.5", "must be >= 0, got -0.5 (below 0 the trace coefficients change sign"),
    ],
)
def test_ranges_declared_on_the_section_s_fields_are_checked(tmp_path, flag, message):
    with pytest.raises(ConfigError) as e:
        _cfg(tmp_path, flag)
    assert e.value.field == flag[2:].split("=")[0] and message in str(e.value)


def test_an_appo_flag_with_another_algorithm_is_refused_naming_its_owner(tmp_path):
    with pytest.raises(ConfigError) as e:
        _cfg(tmp_path, "--algo=A2C", "--with_vtrace=False")
    assert e.value.field == "with_vtrace" and "--algo=APPO" in str(e.value)


def _old_cfg_json(tmp_path, algo_flags: list[str], old_values: dict) -> dict:
    """A cfg.json as surge wrote it while the flags were core: flat, every one of them present
    whatever the algorithm (`old_values`, the flags' values then)."""
    cfg = _cfg(tmp_path, *algo_flags)
    save_cfg(cfg, tmp_path / "run" / "cfg.json")
    saved = json.loads((tmp_path / "run" / "cfg.json").read_text())
    saved.update(old_values)
    (tmp_path / "run" / "cfg.json").write_text(json.dumps(saved, indent=2))
    return saved


def test_an_old_appo_cfg_json_resumes_with_its_values_in_the_section(tmp_path):
    old = {
        "ppo_clip_ratio": 0.3,
        "ppo_clip_value": 0.2,
        "with_vtrace": False,
        "kl_loss_coeff": 0.01,
        "normalize_advantage_over": "batch",
    }
    _old_cfg_json(tmp_path, [], old)
    cfg = _cfg(tmp_path)  # resumes (--restart_behavior=resume is the default)
    assert {name: flag_value(cfg, name) for name in old} == old
    assert isinstance(cfg.algo_params, APPOParams)
    cfg = _cfg(tmp_path, evaluation=True)  # `surge enjoy` reads the same file
    assert {name: flag_value(cfg, name) for name in old} == old


def test_an_old_cfg_json_of_another_algorithm_resumes_without_appo_s_flags(tmp_path):
    """Before the move every cfg.json held the PPO flags, a DQN run's too: they are not DQN's flags
    and are left out on resume, as any key no section has."""
    dqn = ["--algo=DQN", "--train_for_env_steps=20000"]
    saved = _old_cfg_json(tmp_path, dqn, {name: getattr(APPOParams(), name) for name in MOVED})
    assert set(MOVED) <= set(saved)
    cfg = _cfg(tmp_path)  # the saved run's --algo decides the flags
    assert cfg.algo == "DQN" and not isinstance(cfg.algo_params, APPOParams)
    assert not set(MOVED) & set(cfg.to_dict())


def test_a_yaml_file_sets_them_flat(tmp_path):
    path = tmp_path / "appo.yaml"
    path.write_text("ppo_clip_ratio: 0.25\nwith_vtrace: false\n")
    appo = algo_params(_cfg(tmp_path, f"--cfg={path}"), APPOParams)
    assert (appo.ppo_clip_ratio, appo.with_vtrace) == (0.25, False)
    with pytest.raises(ConfigError) as e:  # not A2C's flags: named with their owner
        _cfg(tmp_path, f"--cfg={path}", "--algo=A2C")
    assert e.value.field == "ppo_clip_ratio" and "--algo=APPO" in str(e.value)
