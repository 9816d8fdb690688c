"""`surge doom-scenarios install | status` without the network: RECORD's hashes, the checks on the
wheel's files, the atomic swap of the install folder, where the folder is, and which scenarios
play Sample Factory's cfg once it is there (the real wheel and engine: tests/integration/
test_doom_sf_maps.py)."""

from __future__ import annotations

import base64
import hashlib
import json
import zipfile
from pathlib import Path

import pytest

from surge.cli import main as surge_main
from surge.envs.doom import sf_maps
from surge.envs.doom.scenarios import SCENARIOS
from surge.envs.doom.sf_maps_install import extract_scenarios, install, read_record, record_sha256
from surge.errors import SurgeError

DIST = "sample_factory-2.1.1.dist-info/"


def record_entry(data: bytes) -> str:
    """RECORD's hash field as the wheel spec (PEP 376/427) writes it: urlsafe base64, no padding."""
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def make_wheel(path: Path, files: dict[str, bytes], tamper: str = "", unlisted: str = "") -> Path:
    """A wheel-shaped zip with `files` under the scenario folder and a RECORD of them; `tamper`:
    a file whose bytes differ from its RECORD line; `unlisted`: one RECORD leaves out."""
    record = []
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files.items():
            member = sf_maps.WHEEL_SCENARIOS + name
            zf.writestr(member, data + (b"!" if name == tamper else b""))
            if name != unlisted:
                record.append(f"{member},{record_entry(data)},{len(data)}")
        zf.writestr(DIST + "LICENSE", b"MIT License\n")
        record.append(f"{DIST}RECORD,,")
        zf.writestr(DIST + "RECORD", "\n".join(record) + "\n")
    return path


FILES = {"battle.cfg": b"doom_scenario_path = battle.wad\n", "battle.wad": b"PWAD" + bytes(100)}


def test_record_hash_is_the_sha256_of_the_bytes():
    data = b"abc"
    assert record_sha256(record_entry(data)) == hashlib.sha256(data).hexdigest()
    # the RECORD line of basic.cfg in sample_factory-2.1.1-py3-none-any.whl, and that file's sha256
    line = (
        "sf_examples/vizdoom/doom/scenarios/basic.cfg,sha256=8ijsjz4PfTskRsHApbuE96GLwKa6v6GmwlZrgCQkFvg,924"
    )
    assert read_record(line) == {
        "sf_examples/vizdoom/doom/scenarios/basic.cfg": (
            "f228ec8f3e0f7d3b2446c1c0a5bb84f7a18bc0a6babfa1a6c2566b80242416f8",
            924,
        )
    }
    with pytest.raises(SurgeError, match="not a sha256"):
        record_sha256("md5=abc")


def test_extract_checks_every_file_against_record(tmp_path):
    good = make_wheel(tmp_path / "good.whl", FILES)
    out = tmp_path / "out"
    out.mkdir()
    hashes = extract_scenarios(good, out)
    assert hashes == {n: hashlib.sha256(d).hexdigest() for n, d in FILES.items()}
    assert (out / "battle.wad").read_bytes() == FILES["battle.wad"]
    assert (out / "LICENSE").read_bytes() == b"MIT License\n"
    assert (out / sf_maps.RECORD_COPY).read_text().startswith(sf_maps.WHEEL_SCENARIOS)
    for kind, kwargs, message in [
        ("tampered", {"tamper": "battle.wad"}, "battle.wad has sha256"),
        ("unlisted", {"unlisted": "battle.cfg"}, "battle.cfg is not in the wheel's RECORD"),
    ]:
        bad = make_wheel(tmp_path / f"{kind}.whl", FILES, **kwargs)
        dest = tmp_path / kind
        dest.mkdir()
        with pytest.raises(SurgeError, match=message):
            extract_scenarios(bad, dest)
    (tmp_path / "not_a.whl").write_bytes(b"no zip")
    with pytest.raises(SurgeError, match="not a readable wheel"):
        extract_scenarios(tmp_path / "not_a.whl", tmp_path / "out")


def _earlier_install(data_dir: Path) -> Path:
    folder = data_dir / "doom_scenarios"
    folder.mkdir(parents=True)
    (folder / sf_maps.PROVENANCE).write_text("{}")
    (folder / "old.wad").write_bytes(b"earlier")
    return folder


def test_install_refuses_a_wheel_that_is_not_the_index_one_and_keeps_the_earlier_install(
    tmp_path, monkeypatch
):
    monkeypatch.setenv(sf_maps.DATA_DIR_ENV, str(tmp_path / "data"))
    folder = _earlier_install(tmp_path / "data")
    wheel = make_wheel(tmp_path / sf_maps.SF_WHEEL, FILES)
    with pytest.raises(SurgeError, match="not that of sample_factory-2.1.1-py3-none-any.whl"):
        install(wheel)
    assert sorted(p.name for p in folder.iterdir()) == ["old.wad", sf_maps.PROVENANCE]
    assert sorted(p.name for p in folder.parent.iterdir()) == ["doom_scenarios"]


def test_install_replaces_the_folder_whole_or_not_at_all(tmp_path, monkeypatch):
    monkeypatch.setenv(sf_maps.DATA_DIR_ENV, str(tmp_path / "data"))
    folder = _earlier_install(tmp_path / "data")
    bad = make_wheel(tmp_path / "bad.whl", FILES, tamper="battle.wad")
    monkeypatch.setattr(sf_maps, "SF_WHEEL_SHA256", hashlib.sha256(bad.read_bytes()).hexdigest())
    with pytest.raises(SurgeError, match="battle.wad has sha256"):
        install(bad)
    assert sorted(p.name for p in folder.iterdir()) == ["old.wad", sf_maps.PROVENANCE]
    assert sorted(p.name for p in folder.parent.iterdir()) == ["doom_scenarios"]  # no temporary folder

    good = make_wheel(tmp_path / "good.whl", FILES)
    digest = hashlib.sha256(good.read_bytes()).hexdigest()
    monkeypatch.setattr(sf_maps, "SF_WHEEL_SHA256", digest)
    assert install(good) == folder
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [*FILES, "LICENSE", sf_maps.RECORD_COPY, sf_maps.PROVENANCE]
    )
    assert sorted(p.name for p in folder.parent.iterdir()) == ["doom_scenarios"]
    prov = json.loads((folder / sf_maps.PROVENANCE).read_text())
    assert prov["package"] == "sample-factory" and prov["version"] == "2.1.1"
    assert prov["wheel"] == sf_maps.SF_WHEEL and prov["wheel_sha256"] == digest
    assert prov["files_sha256"] == {n: hashlib.sha256(d).hexdigest() for n, d in FILES.items()}
    assert prov["installed_at"][:2] == "20"
    assert sf_maps.installed_dir() == folder


def test_the_data_folder_follows_surge_data_dir_else_the_user_data_folder(tmp_path, monkeypatch):
    monkeypatch.setenv(sf_maps.DATA_DIR_ENV, str(tmp_path))
    assert sf_maps.scenarios_dir() == tmp_path / "doom_scenarios"
    monkeypatch.delenv(sf_maps.DATA_DIR_ENV)
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert sf_maps.data_dir() in (tmp_path / "xdg" / "surge", tmp_path / "home" / ".local/share/surge")


def test_cfg_wad_reads_vizdooms_spellings(tmp_path):
    cfg = tmp_path / "a.cfg"
    cfg.write_text("# doom_scenario_path = no.wad\n  doomScenarioPath = my map.wad  # the map\nskill = 2\n")
    assert sf_maps.cfg_wad(cfg) == "my map.wad"
    cfg.write_text("doom_map = map01\n")
    assert sf_maps.cfg_wad(cfg) == ""


def test_the_seven_scenarios_take_sample_factorys_cfg_once_installed(tmp_path, monkeypatch):
    """Sample Factory's DOOM_ENVS (sf_examples/vizdoom/doom/doom_utils.py): the cfg of each."""
    expected = {
        "doom_battle": "battle_continuous_turning.cfg",
        "doom_battle2": "battle2_continuous_turning.cfg",
        "doom_benchmark": "battle.cfg",
        "doom_duel_bots": "ssl2.cfg",
        "doom_deathmatch_bots": "dwango5_dm_continuous_weap.cfg",
        "doom_duel": "ssl2.cfg",
        "doom_deathmatch_full": "freedm.cfg",
    }
    assert {n: s.sf_cfg for n, s in SCENARIOS.items() if s.sf_cfg} == expected
    monkeypatch.setenv(sf_maps.DATA_DIR_ENV, str(tmp_path))
    assert sf_maps.playable(SCENARIOS["doom_battle2"]) is SCENARIOS["doom_battle2"]  # not installed
    folder = tmp_path / "doom_scenarios"
    folder.mkdir()
    for cfg in expected.values():
        (folder / cfg).write_text("doom_scenario_path = x.wad\n")
    assert sf_maps.playable(SCENARIOS["doom_battle2"]) is SCENARIOS["doom_battle2"]  # no provenance yet
    (folder / sf_maps.PROVENANCE).write_text("{}")
    for name, cfg in expected.items():
        s = sf_maps.playable(SCENARIOS[name])
        assert (s.cfg, s.cfg_folder) == (cfg, str(folder))
    assert SCENARIOS["doom_battle2"].skill == 4  # the substitute arena's
    assert sf_maps.playable(SCENARIOS["doom_battle2"]).skill is None  # the cfg's doom_skill = 2
    assert sf_maps.playable(SCENARIOS["doom_basic"]) is SCENARIOS["doom_basic"]  # vizdoom's own map


def test_battle_shaping_drops_the_kill_term_on_the_original_map(tmp_path, monkeypatch):
    """battle.wad pays +1 per kill from its map script; the substitute arena's KILLCOUNT term
    stands in for it only there."""
    from surge.app.resolve import parse_cfg
    from surge.envs.doom.family import default_reward_shaping

    cfg = parse_cfg(["--env=doom_battle", "--experiment=x"])
    monkeypatch.setenv(sf_maps.DATA_DIR_ENV, str(tmp_path))
    assert "KILLCOUNT" in default_reward_shaping(cfg)["delta"]
    folder = tmp_path / "doom_scenarios"
    folder.mkdir()
    (folder / "battle_continuous_turning.cfg").write_text("doom_scenario_path = battle.wad\n")
    (folder / sf_maps.PROVENANCE).write_text("{}")
    assert "KILLCOUNT" not in default_reward_shaping(cfg)["delta"]


def test_the_command_line(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(sf_maps.DATA_DIR_ENV, str(tmp_path))
    assert surge_main(["doom-scenarios", "status"]) == 1  # nothing installed
    assert "are not installed" in capsys.readouterr().out
    assert surge_main(["doom-scenarios"]) == 2
    assert surge_main(["doom-scenarios", "instal"]) == 2
    assert surge_main(["doom-scenarios", "install", "--wheel=/no/such.whl"]) == 2
    assert surge_main(["doom-scenarios", "install", "--bogus"]) == 2
    (tmp_path / "x.whl").write_bytes(b"x")
    assert surge_main(["doom-scenarios", "install", f"--wheel={tmp_path / 'x.whl'}"]) == 1  # refused
    assert "has sha256" in capsys.readouterr().err
    assert surge_main(["doom-scenarios", "--help"]) == 0
