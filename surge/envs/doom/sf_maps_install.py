"""`surge doom-scenarios install | status`: Sample Factory's Doom scenario files, from its wheel.

`install` runs `python -m pip download sample-factory==2.1.1 --no-deps --only-binary=:all:` into a
temporary folder (pip installs nothing), refuses a wheel whose sha256 is not the one the package
index serves (`sf_maps.SF_WHEEL_SHA256`), unpacks `sf_examples/vizdoom/doom/scenarios/*` checking
each file against the sha256 and size the wheel's RECORD gives, and copies the wheel's RECORD and
LICENSE (MIT) beside them. The files go to a temporary folder next to the install folder, which
replaces the old one by two renames only when everything checked out, with `provenance.json`
(package, version, wheel file name and URL, its sha256, every file's sha256, the date) written
last: a failed download or a bad file leaves an earlier install as it was.

`status` says where the folder is, what the provenance file records, whether every file still has
its sha256, and which map each of the seven scenarios plays.
"""

from __future__ import annotations

import base64
import csv
import datetime
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from surge.envs.doom import sf_maps
from surge.envs.doom.scenarios import SCENARIOS
from surge.errors import SurgeError

USAGE = """usage: surge doom-scenarios install [--wheel=PATH] | status

  install   fetch Sample Factory 2.1.1's wheel with pip (no dependencies, nothing installed) and
            unpack its Doom scenario files into the data folder (--wheel: a wheel already downloaded)
  status    what is installed, checked against the recorded sha256s

The data folder is $SURGE_DATA_DIR/doom_scenarios, else the user data folder (now: {folder}).
"""

PIP_TIMEOUT_S = 600.0
_NETWORK_FAILURE = re.compile(
    r"Failed to establish|Connection refused|Name or service not known|Temporary failure in name "
    r"resolution|Network is unreachable|timed out|Max retries exceeded|SSLError|ProxyError"
)
_WHEEL_DIST_INFO = f"sample_factory-{sf_maps.SF_VERSION}.dist-info/"


def sha256_file(path: Path) -> str:
    """The hex sha256 of a file's bytes."""
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def record_sha256(entry: str) -> str:
    """RECORD's `sha256=<urlsafe base64, no padding>` as hex (PEP 376 / the wheel spec).

    Raises:
        SurgeError: not a sha256 entry.
    """
    algo, _, digest = entry.partition("=")
    if algo != "sha256" or not digest:
        raise SurgeError(f"the wheel's RECORD gives {entry!r}, not a sha256")
    return base64.urlsafe_b64decode(digest + "=" * (-len(digest) % 4)).hex()


def read_record(text: str) -> dict[str, tuple[str, int]]:
    """The wheel's RECORD as {path: (sha256 hex, size)}, for the lines that carry a hash."""
    out = {}
    for row in csv.reader(io.StringIO(text)):
        if len(row) >= 3 and row[1]:
            out[row[0]] = (record_sha256(row[1]), int(row[2]))
    return out


def download_wheel(dest: Path) -> tuple[Path, str]:
    """Runs pip download into `dest`; returns (the wheel, the URL pip fetched it from or "").

    Raises:
        SurgeError: pip failed (no network, the index unreachable...), with pip's own error lines.
    """
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        f"{sf_maps.SF_PACKAGE}=={sf_maps.SF_VERSION}",
        "--no-deps",
        "--only-binary=:all:",
        "-d",
        str(dest),
        "-vv",  # names the link pip took (for the provenance file)
    ]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_S)
    except subprocess.TimeoutExpired as e:
        raise SurgeError(f"pip download did not finish within {PIP_TIMEOUT_S:.0f} s: {' '.join(cmd)}") from e
    wheel = dest / sf_maps.SF_WHEEL
    if out.returncode != 0 or not wheel.is_file():
        lines = [x.strip() for x in (out.stderr + out.stdout).splitlines() if x.strip()]
        # pip's own verdict, and the first sign of a network failure among its verbose lines
        errors = [x for x in lines if x.startswith("ERROR:")][-2:] or lines[-3:]
        network = [x[:300] for x in lines if _NETWORK_FAILURE.search(x)][:1]
        raise SurgeError(
            f"pip could not download {sf_maps.SF_PACKAGE}=={sf_maps.SF_VERSION} (exit {out.returncode}): "
            + " | ".join(network + errors)
            + "\nCheck the network and pip's index (pip config list), or download "
            f"{sf_maps.SF_WHEEL} elsewhere and pass it: surge doom-scenarios install --wheel=PATH. "
            "Nothing was changed."
        )
    m = re.search(r"Found link (\S*/" + re.escape(sf_maps.SF_WHEEL) + r")", out.stdout + out.stderr)
    return wheel, (m.group(1) if m else "")


def extract_scenarios(wheel: Path, dest: Path) -> dict[str, str]:
    """Unpacks the wheel's scenario files, its RECORD and LICENSE into the empty folder `dest`,
    each checked against RECORD; returns {file name: sha256 hex} of the scenario files.

    Raises:
        SurgeError: not a wheel, no scenario files, a file RECORD does not list, or whose bytes
            differ from RECORD's sha256 or size.
    """
    try:
        zf = zipfile.ZipFile(wheel)
    except (zipfile.BadZipFile, OSError) as e:
        raise SurgeError(f"{wheel} is not a readable wheel: {e}") from e
    with zf:
        names = zf.namelist()
        if _WHEEL_DIST_INFO + "RECORD" not in names:
            raise SurgeError(f"{wheel} has no {_WHEEL_DIST_INFO}RECORD")
        record_text = zf.read(_WHEEL_DIST_INFO + "RECORD").decode()
        record = read_record(record_text)
        members = [n for n in names if n.startswith(sf_maps.WHEEL_SCENARIOS) and not n.endswith("/")]
        if not members:
            raise SurgeError(f"{wheel} holds no {sf_maps.WHEEL_SCENARIOS}")
        hashes = {}
        for name in members:
            base = name[len(sf_maps.WHEEL_SCENARIOS) :]
            if "/" in base or base in (sf_maps.PROVENANCE, sf_maps.RECORD_COPY, "LICENSE"):
                continue  # the folder is flat in 2.1.1; nothing may overwrite surge's own files
            if name not in record:
                raise SurgeError(f"{wheel}: {name} is not in the wheel's RECORD")
            data = zf.read(name)
            digest = hashlib.sha256(data).hexdigest()
            if (digest, len(data)) != record[name]:
                raise SurgeError(
                    f"{wheel}: {name} has sha256 {digest} ({len(data)} bytes), the wheel's RECORD "
                    f"says {record[name][0]} ({record[name][1]} bytes)"
                )
            (dest / base).write_bytes(data)
            hashes[base] = digest
        (dest / sf_maps.RECORD_COPY).write_text(record_text)
        if _WHEEL_DIST_INFO + "LICENSE" in names:
            (dest / "LICENSE").write_bytes(zf.read(_WHEEL_DIST_INFO + "LICENSE"))
    return hashes


def _swap_in(new: Path, folder: Path) -> None:
    """Puts the finished folder `new` at `folder` (same parent), keeping the old one until then."""
    old = folder.with_name(f".{folder.name}.old.{os.getpid()}")
    if folder.exists():
        os.rename(folder, old)
    try:
        os.rename(new, folder)
    except OSError:
        if old.exists():
            os.rename(old, folder)
        raise
    shutil.rmtree(old, ignore_errors=True)


def install(wheel: Path | None = None) -> Path:
    """Installs Sample Factory's scenario files into `sf_maps.scenarios_dir()` (see the module
    docstring); `wheel`: an already downloaded wheel instead of pip's. Returns the folder.

    Raises:
        SurgeError: pip failed, the wheel's sha256 is not the index's, or a file fails its check;
            the install folder is then as it was.
    """
    folder = sf_maps.scenarios_dir()
    folder.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="surge-sf-wheel-") as download:
        url = ""
        if wheel is None:
            wheel, url = download_wheel(Path(download))
        digest = sha256_file(wheel)
        if digest != sf_maps.SF_WHEEL_SHA256:
            raise SurgeError(
                f"{wheel} has sha256 {digest}, not that of {sf_maps.SF_WHEEL} on the package index "
                f"({sf_maps.SF_WHEEL_SHA256}); nothing was changed"
            )
        new = Path(tempfile.mkdtemp(prefix=f".{folder.name}.new.", dir=folder.parent))
        try:
            hashes = extract_scenarios(wheel, new)
            provenance = {
                "package": sf_maps.SF_PACKAGE,
                "version": sf_maps.SF_VERSION,
                "wheel": sf_maps.SF_WHEEL,
                "wheel_url": url or f"(given: {wheel})",
                "wheel_sha256": digest,
                "licence": "MIT (LICENSE, from the wheel)",
                "source_folder": sf_maps.WHEEL_SCENARIOS,
                "files_sha256": hashes,
                "installed_at": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
                "installed_by": "surge doom-scenarios install",
            }
            (new / sf_maps.PROVENANCE).write_text(json.dumps(provenance, indent=2) + "\n")
            new.chmod(0o755)
            _swap_in(new, folder)
        finally:
            shutil.rmtree(new, ignore_errors=True)
    return folder


def check_install(folder: Path) -> list[str]:
    """What is wrong with an install folder: files missing or whose sha256 is not the recorded
    one (the provenance file's, which the install checked against the wheel's RECORD); [] when
    all is well.

    Raises:
        SurgeError: no provenance file there (not installed).
    """
    path = folder / sf_maps.PROVENANCE
    if not path.is_file():
        raise SurgeError(f"nothing installed in {folder} (no {sf_maps.PROVENANCE})")
    recorded = json.loads(path.read_text())["files_sha256"]
    problems = []
    for name, digest in sorted(recorded.items()):
        f = folder / name
        if not f.is_file():
            problems.append(f"{name}: missing")
        elif sha256_file(f) != digest:
            problems.append(f"{name}: sha256 {sha256_file(f)}, recorded {digest}")
    return problems


def status_lines() -> tuple[list[str], bool]:
    """(`surge doom-scenarios status`'s lines, whether the install is there and intact)."""
    folder = sf_maps.scenarios_dir()
    if sf_maps.installed_dir() is None:
        lines = [
            f"Sample Factory's Doom scenarios are not installed (looked in {folder}).",
            "The scenarios below play vizdoom substitutes; `surge doom-scenarios install` gets the originals.",
        ]
        ok = False
    else:
        p = json.loads((folder / sf_maps.PROVENANCE).read_text())
        problems = check_install(folder)
        lines = [
            f"Installed in {folder}: {p['package']} {p['version']} ({p['wheel']}, sha256 {p['wheel_sha256']}),",
            f"  from {p['wheel_url']} on {p['installed_at']}; {len(p['files_sha256'])} files.",
            *(
                [f"  DAMAGED: {x}" for x in problems] + ["  run `surge doom-scenarios install` again."]
                if problems
                else ["  every file has its recorded sha256."]
            ),
        ]
        ok = not problems
    lines += [f"  {sf_maps.maps_note(s)}" for s in SCENARIOS.values() if s.sf_cfg]
    return lines, ok


def main(argv: list[str]) -> int:
    """`surge doom-scenarios ...`; returns the exit code: 0 done; 1 the install failed (pip could
    not download, a file failed its check: printed, nothing changed), or status found nothing
    installed or a damaged install; 2 bad arguments."""
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in ("install", "status"):
        text = USAGE.format(folder=sf_maps.scenarios_dir())
        print(text, file=sys.stdout if argv and argv[0] in ("-h", "--help") else sys.stderr)
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    command, rest = argv[0], argv[1:]
    if command == "status":
        if rest:
            print(f"surge doom-scenarios status takes no arguments, got {rest}", file=sys.stderr)
            return 2
        lines, ok = status_lines()
        print("\n".join(lines))
        return 0 if ok else 1
    wheel = None
    for arg in rest:
        if arg.startswith("--wheel="):
            wheel = Path(arg.split("=", 1)[1]).expanduser()
        else:
            print(f"surge doom-scenarios install: unknown argument {arg!r}\n\n{USAGE}", file=sys.stderr)
            return 2
    if wheel is not None and not wheel.is_file():
        print(f"surge doom-scenarios install: --wheel={wheel}: no such file", file=sys.stderr)
        return 2
    try:
        folder = install(wheel)
    except SurgeError as e:  # no network, a wrong wheel: the run failed (exit 1), nothing changed
        print(f"surge doom-scenarios install: error: {e}", file=sys.stderr)
        return 1
    print(f"Installed Sample Factory {sf_maps.SF_VERSION}'s Doom scenarios in {folder}:")
    for s in SCENARIOS.values():
        if s.sf_cfg:
            print(f"  {sf_maps.maps_note(s)}")
    return 0
