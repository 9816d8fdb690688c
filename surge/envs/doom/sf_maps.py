"""Sample Factory's own Doom maps: where `surge doom-scenarios install` puts them, and which
scenarios play them.

Seven scenarios (`doom_battle`, `doom_battle2`, `doom_benchmark`, `doom_duel`, `doom_duel_bots`,
`doom_deathmatch_bots`, `doom_deathmatch_full`) are defined by Sample Factory on maps that do not
ship with vizdoom (battle.wad, battle2.wad, ssl2.wad, dwango5.wad, freedm.wad). They ship in Sample
Factory 2.1.1's wheel (`sf_examples/vizdoom/doom/scenarios/`, MIT licence), which
`surge doom-scenarios install` (`sf_maps_install`) unpacks into `scenarios_dir()`. When that
folder holds a scenario's Sample Factory `.cfg` (`DoomScenario.sf_cfg`), the scenario plays it
(`playable`); otherwise it plays its vizdoom substitute.

The folder is per user, outside the package: an editable checkout, a read-only site-packages and
every virtual environment of the user share one copy (24 MB, mostly freedm.wad), and reinstalling
surge does not lose it. `SURGE_DATA_DIR` moves it (a CI cache, a shared disk, a test's empty
folder).
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from surge.envs.doom.scenarios import DoomScenario

#: environment variable naming surge's data folder (its `doom_scenarios/` holds Sample Factory's maps)
DATA_DIR_ENV = "SURGE_DATA_DIR"
SF_PACKAGE = "sample-factory"
SF_VERSION = "2.1.1"
#: the wheel `pip download sample-factory==2.1.1 --only-binary=:all:` fetches, and its sha256 as the
#: package index serves it (files.pythonhosted.org, 2026-12-02): any other file is refused
SF_WHEEL = "sample_factory-2.1.1-py3-none-any.whl"
SF_WHEEL_SHA256 = "4acaef95c3790f4328bf839e07631737879f3c6409d22ee6e5d67635db8482a7"
#: the scenario folder inside the wheel
WHEEL_SCENARIOS = "sf_examples/vizdoom/doom/scenarios/"
#: written last by the install: the folder counts as installed only with it
PROVENANCE = "provenance.json"
#: the wheel's RECORD, copied verbatim beside the files (their sha256s as the wheel states them)
RECORD_COPY = "RECORD"


def data_dir() -> Path:
    """surge's data folder: `$SURGE_DATA_DIR`, else the user data folder of the platform
    (`platformdirs.user_data_dir("surge")` when platformdirs is installed, else
    `$XDG_DATA_HOME/surge` or `~/.local/share/surge`)."""
    if os.environ.get(DATA_DIR_ENV):
        return Path(os.environ[DATA_DIR_ENV]).expanduser()
    try:
        import platformdirs
    except ImportError:
        base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        return Path(base) / "surge"
    return Path(platformdirs.user_data_dir("surge", appauthor=False))


def scenarios_dir() -> Path:
    """Where Sample Factory's scenario files are (or would be) installed."""
    return data_dir() / "doom_scenarios"


def installed_dir() -> Path | None:
    """The install folder when an install finished there (its provenance file exists), else None."""
    folder = scenarios_dir()
    return folder if (folder / PROVENANCE).is_file() else None


def cfg_wad(cfg_path: Path) -> str:
    """The `doom_scenario_path` a VizDoom `.cfg` names ("" when none): keys are case-insensitive
    and may be written with underscores or in camel case, `#` starts a comment (VizDoom's rules)."""
    for line in cfg_path.read_text(errors="replace").splitlines():
        key, sep, value = line.split("#", 1)[0].partition("=")
        if sep and key.strip().replace("_", "").lower() == "doomscenariopath":
            return value.strip()
    return ""


def playable(s: DoomScenario) -> DoomScenario:
    """`s` as it plays on this machine: with Sample Factory's `.cfg` from the install folder (and
    `s.sf_overrides` applied) when `s` has one and it is installed there; else `s` unchanged."""
    folder = installed_dir()
    if not s.sf_cfg or folder is None or not (folder / s.sf_cfg).is_file():
        return s
    return dataclasses.replace(s, cfg=s.sf_cfg, cfg_folder=str(folder), **s.sf_overrides)


def scenario_files(s: DoomScenario) -> tuple[Path, Path | None]:
    """(`.cfg`, the `.wad` it names or None) of a scenario from `playable`: in the install folder,
    or in vizdoom's scenarios folder."""
    if s.cfg_folder:
        cfg = Path(s.cfg_folder) / s.cfg
    else:
        import vizdoom

        cfg = Path(vizdoom.scenarios_path) / s.cfg
    wad = cfg_wad(cfg) if cfg.is_file() else ""
    return cfg, (cfg.parent / wad if wad else None)


def maps_note(s: DoomScenario, scenario_path: str = "") -> str:
    """One line for the run's log: which map and files scenario `s` plays here, and for a
    substitute of Sample Factory's map, how to get the original."""
    if scenario_path:
        return f"{s.name} plays --doom_scenario_path={scenario_path}."
    p = playable(s)
    cfg, wad = scenario_files(p)
    wad_name = wad.name if wad is not None else "?"
    if p.cfg_folder:
        return f"{s.name} plays Sample Factory {SF_VERSION}'s map {wad_name}: {cfg} and {wad}."
    if not s.sf_cfg:
        return f"{s.name} plays vizdoom's {wad_name}: {cfg}."
    return (
        f"{s.name} plays vizdoom's {wad_name} ({cfg}), a substitute: Sample Factory's {s.sf_cfg} is not "
        f"installed in {scenarios_dir()}; `surge doom-scenarios install` fetches it (docs/doom.md)."
    )
