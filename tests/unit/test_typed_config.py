"""The typed config (issue 13, item 4): core flags in section dataclasses composed into `Config`,
an env family's flags in the typed section `cfg.env_params`, enjoy's in `cfg.eval_params`; the
command line and cfg.json stay flat (one key per flag, as Sample Factory's), and a cfg.json written
before the sections existed still loads."""

import dataclasses
import json

import pytest

from surge.app.resolve import parse_cfg
from surge.cfg import family_params
from surge.cfg.cli import save_cfg
from surge.cfg.config import SECTIONS, Config, EvalParams, OptimParams, SamplingParams
from surge.envs.atari import AtariParams
from surge.envs.doom.family import DoomParams
from surge.envs.memory import MemoryParams
from surge.envs.registry import find_family
from surge.errors import ConfigError
from surge.learning.run_flags import flag_fields, rebuild_cfg


def test_config_is_composed_of_its_sections_and_every_flag_is_in_one():
    assert issubclass(Config, OptimParams) and issubclass(Config, SamplingParams)
    section_names = [f.name for _, cls in SECTIONS for f in dataclasses.fields(cls)]
    assert len(section_names) == len(set(section_names))
    flags = {f.name for f in flag_fields(None)}
    assert flags == set(section_names)
    assert {"env_params", "eval_params"}.isdisjoint(flags)


def test_family_flags_are_a_typed_section_and_cfg_json_stays_flat(tmp_path):
    cfg = parse_cfg(["--env=atari_pong", "--env_frameskip=2", f"--train_dir={tmp_path}"])
    p = family_params(cfg, AtariParams)
    assert type(cfg) is Config and isinstance(p, AtariParams) and p.env_frameskip == 2
    assert not hasattr(cfg, "env_frameskip")  # no generated subclass with the family's fields
    save_cfg(cfg, tmp_path / "cfg.json")
    saved = json.loads((tmp_path / "cfg.json").read_text())
    expected = {f.name for f in flag_fields(find_family("atari_pong"), algo="APPO")} - {"restart_behavior"}
    assert (
        set(saved) == expected and saved["env_frameskip"] == 2 and saved["learning_rate"] == cfg.learning_rate
    )
    assert rebuild_cfg(cfg.to_dict()) == cfg  # how child processes get it


def test_a_flat_cfg_json_of_an_older_run_resumes_into_the_sections(tmp_path):
    # the cfg.json of a run saved before the sections existed: one key per flag, the family's included
    old = {**Config().to_dict(), **dataclasses.asdict(AtariParams())}
    old.update(env="atari_pong", experiment="old", env_frameskip=2, atari_noop_max=7, learning_rate=0.002)
    (tmp_path / "old").mkdir()
    (tmp_path / "old" / "cfg.json").write_text(json.dumps(old))
    cfg = parse_cfg(["--env=atari_pong", "--experiment=old", f"--train_dir={tmp_path}"])
    p = family_params(cfg, AtariParams)
    assert (p.env_frameskip, p.atari_noop_max, cfg.learning_rate) == (2, 7, 0.002)


def test_family_params_refuses_the_section_of_another_family(tmp_path):
    cfg = parse_cfg(["--env=memory_cue", "--batch_size=70", f"--train_dir={tmp_path}"])
    assert family_params(cfg, MemoryParams).memory_delay == 5
    with pytest.raises(ConfigError) as e:
        family_params(cfg, AtariParams)
    assert e.value.field == "env" and "MemoryParams" in e.value.problem


def test_enjoy_flags_are_a_section_and_a_name_in_two_sections_is_one_flag(tmp_path):
    train = parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}"])
    assert train.eval_params is None and train.env_params is None
    ev = parse_cfg(
        ["--env=doom_basic", "--fps=20", "--max_num_episodes=3", f"--train_dir={tmp_path}"], evaluation=True
    )
    assert isinstance(ev.eval_params, EvalParams) and ev.eval_params.max_num_episodes == 3
    # --fps is the Doom family's (tic rate) and enjoy's (video rate): one flag sets both
    assert family_params(ev, DoomParams).fps == 20 and ev.eval_params.fps == 20
    assert ev.to_dict()["fps"] == 20
