"""Sample Factory's own Doom maps (issue 58, item 1): after `surge doom-scenarios install` the seven
scenarios that had substitutes load Sample Factory's .cfg and .wad from the install folder, byte
for byte the wheel's; without the install they play the substitutes and the run's log says how to
get the originals; pip failing to reach the index changes nothing.

The expected sha256s are those of the wheel's RECORD (sample_factory-2.1.1.dist-info/RECORD,
urlsafe base64 there, hex here), copied from the wheel, not computed by surge."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest

pytest.importorskip("vizdoom")
pytest.importorskip("cv2")

from surge.app.resolve import parse_cfg  # noqa: E402
from surge.envs.doom import sf_maps  # noqa: E402
from surge.envs.doom.sf_maps_install import install  # noqa: E402
from surge.envs.registry import env_notes, make_env  # noqa: E402
from surge.errors import SurgeError  # noqa: E402
from tests.proc_tree import descendants  # noqa: E402

#: sha256 (hex) of the files, from sample_factory-2.1.1-py3-none-any.whl's RECORD
WHEEL_SHA256 = {
    "battle.cfg": "b9c82c83437b5dc5e906c94548b2b36f5ee26884bceeea2e0f77d0353f2f7dab",
    "battle.wad": "b29b461995ae7035095a5283c57ef13393e6839326754e94f5b80af5f07e5484",
    "battle2.wad": "0851ae13490433b1e335d427dd391b3e0a6a33a97a16c0190579a2820935e522",
    "battle2_continuous_turning.cfg": "12948c89244a8b52917d85f9ecbc79287a33280d500aaffb3fc16d0b31997656",
    "battle_continuous_turning.cfg": "04960c2d14dfe5a30fc57117314fa9f82f2d658d1f8ed23b8b45a74e1c5b4584",
    "dwango5.wad": "2b7658f126321fc2ccf953dbbe8d585b4162350080b9715b46fc617d32cdb13a",
    "dwango5_dm_continuous_weap.cfg": "6eb842f220dc3153155a1963732887efd24745b33e10ac515233f8cce6f02044",
    "freedm.cfg": "b33db989820642a029416f0209c157a0c0936ce45ebf2a9069865a51cc96be95",
    "freedm.wad": "c0b998f0ebd0ce343d56e584546a0d3e177bd7e98e13abecd77e2c00dcd15426",
    "ssl2.cfg": "f2ad91c6265dcdd3ca16670d895d314b464db429a59a6dd75a3aa08734a7828d",
    "ssl2.wad": "3a3165f3cc3e34ede782e2cb2e986802dba641a19ccf2bb8b65f60065f86a601",
}

#: (scenario, Sample Factory's .cfg, its map, slow): the cfg of each in sf_examples/vizdoom/doom/doom_utils.py's DOOM_ENVS
SEVEN = [
    ("doom_battle", "battle_continuous_turning.cfg", "battle.wad", False),
    ("doom_battle2", "battle2_continuous_turning.cfg", "battle2.wad", False),
    ("doom_benchmark", "battle.cfg", "battle.wad", False),
    ("doom_duel_bots", "ssl2.cfg", "ssl2.wad", False),
    ("doom_deathmatch_bots", "dwango5_dm_continuous_weap.cfg", "dwango5.wad", False),
    ("doom_duel", "ssl2.cfg", "ssl2.wad", True),  # two agent processes: 10-20 s to start a match
    ("doom_deathmatch_full", "freedm.cfg", "freedm.wad", True),
]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def engines() -> list[tuple[list[str], set[str]]]:
    """(command line, files held open) of each VizDoom engine this test process started."""
    out = []
    for pid in descendants(os.getpid()):
        try:
            argv = Path(f"/proc/{pid}/cmdline").read_bytes().decode().split("\0")
            if not argv[0].endswith("/vizdoom"):
                continue
            fds = set()
            for fd in Path(f"/proc/{pid}/fd").iterdir():
                try:
                    fds.add(os.readlink(fd))
                except OSError:
                    pass
        except OSError:  # gone meanwhile
            continue
        out.append((argv, fds))
    return out


def doom_env(name: str):
    return make_env(parse_cfg([f"--env={name}", "--experiment=doom_sf_maps"]))


@pytest.mark.parametrize(
    "name, cfg, wad",
    [pytest.param(n, c, w, marks=[pytest.mark.slow] if slow else []) for n, c, w, slow in SEVEN],
)
def test_each_scenario_plays_sample_factorys_map_from_the_install(name, cfg, wad):
    folder = sf_maps.installed_dir()
    if folder is None:
        pytest.skip(
            f"Sample Factory's scenarios are not installed in {sf_maps.scenarios_dir()}: surge doom-scenarios install"
        )
    # the install folder holds the wheel's bytes
    assert sha256(folder / cfg) == WHEEL_SHA256[cfg]
    assert sha256(folder / wad) == WHEEL_SHA256[wad]
    env = doom_env(name)
    try:
        env.reset(seed=0)
        env.step([env.action_space.sample() for _ in range(env.num_agents)])
        if env.num_agents == 1:  # single games run in this process: the cfg it loaded
            assert Path(env.env.unwrapped.cfg_path) == folder / cfg
        found = engines()
        assert len(found) == env.num_agents, found  # one engine per agent (bots live in the host's)
        for argv, open_files in found:
            # the map comes from the cfg (surge names no wad itself here), and the engine has it open
            loaded = Path(argv[argv.index("-file") + 1])
            assert loaded == folder / wad, argv
            assert str(loaded) in open_files
            assert sha256(loaded) == WHEEL_SHA256[wad]
            if name.startswith("doom_battle") or name == "doom_benchmark":
                assert argv[argv.index("-skill") + 1] == "2"  # doom_skill = 2 in Sample Factory's cfg
    finally:
        env.close()
    note = env_notes(parse_cfg([f"--env={name}", "--experiment=doom_sf_maps"]))
    assert note == [f"{name} plays Sample Factory 2.1.1's map {wad}: {folder / cfg} and {folder / wad}."]


def test_without_the_install_the_substitute_plays_and_one_line_says_how_to_get_the_original(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(sf_maps.DATA_DIR_ENV, str(tmp_path))  # an empty data folder
    import vizdoom

    cfg = parse_cfg(["--env=doom_battle", "--experiment=doom_sf_maps"])
    notes = env_notes(cfg)
    assert len(notes) == 1
    assert "deathmatch.wad" in notes[0] and "a substitute" in notes[0]
    assert "surge doom-scenarios install" in notes[0] and str(tmp_path / "doom_scenarios") in notes[0]
    env = make_env(cfg)
    try:
        env.reset(seed=0)
        (argv, _), *_ = engines()
        assert Path(argv[argv.index("-file") + 1]) == Path(vizdoom.scenarios_path) / "deathmatch.wad"
    finally:
        env.close()


@pytest.mark.slow
def test_a_training_run_logs_the_substitute_line_once(tmp_path, monkeypatch):
    monkeypatch.setenv(sf_maps.DATA_DIR_ENV, str(tmp_path / "empty"))
    from surge.train import main

    flags = [
        "--env=doom_battle",
        "--experiment=sub",
        f"--train_dir={tmp_path}",
        "--serial_mode=True",
        "--num_workers=1",
        "--num_envs_per_worker=2",
        "--train_for_env_steps=512",
    ]
    assert main(flags) == 0
    log = (tmp_path / "sub" / "surge_log.txt").read_text()
    assert log.count("surge doom-scenarios install") == 1, log


def test_pip_unable_to_reach_the_index_is_a_clear_error_and_changes_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(sf_maps.DATA_DIR_ENV, str(tmp_path))
    folder = tmp_path / "doom_scenarios"
    folder.mkdir()
    (folder / sf_maps.PROVENANCE).write_text("{}")  # an earlier install
    (folder / "battle.wad").write_bytes(b"earlier")
    # pip with no config, an index nobody listens on, no local wheels, no retries
    monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("PIP_INDEX_URL", "http://127.0.0.1:9/simple")
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path / "no_wheels"))
    monkeypatch.setenv("PIP_RETRIES", "0")
    monkeypatch.setenv("PIP_DEFAULT_TIMEOUT", "2")
    with pytest.raises(SurgeError, match="pip could not download sample-factory==2.1.1") as e:
        install()
    assert "Connection refused" in str(e.value)  # pip's reason, from its verbose lines
    assert "Nothing was changed" in str(e.value) and "--wheel=PATH" in str(e.value)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["doom_scenarios"]  # no temporary folder left
    assert (folder / "battle.wad").read_bytes() == b"earlier"
    assert sorted(p.name for p in folder.iterdir()) == ["battle.wad", sf_maps.PROVENANCE]
