"""The experiment's checks of its flags: the experiment folder can be written (`check_train_dir`)
and W&B can log the run (`check_wandb`); run by the preflight (`surge.app.preflight.validate_cfg`)."""

from __future__ import annotations

import importlib.util
import netrc
import os
import tempfile
from pathlib import Path

from surge.cfg.config import Config
from surge.errors import ConfigError


def check_train_dir(train_dir: str, experiment: str) -> None:
    """The experiment folder `train_dir/experiment` exists as a writable folder or can be created:
    its nearest existing parent must be a folder in which this process can create a folder (tried
    with a temporary folder, removed at once, so no file is left; `os.access` says yes to root
    where the file system says no, as in /proc).

    Raises:
        ConfigError: on --train_dir (or --experiment when that name is taken by a file), naming
            the path and the OS's reason.
    """
    root = Path(train_dir)
    folder = root / experiment
    fix = "pass a --train_dir in a folder you can write to, e.g. --train_dir=./train_dir."
    for path, field in ((root, "train_dir"), (folder, "experiment")):
        if os.path.lexists(path) and not os.path.isdir(path):
            raise ConfigError(
                field,
                f"{path} exists and is not a folder, so the run cannot write its experiment folder there.",
                fix if field == "train_dir" else "pass another --experiment name, or move the file away.",
            )
    existing = folder
    while not os.path.isdir(existing) and existing != existing.parent:
        if os.path.lexists(existing):  # a file (or a broken link) on the way
            break
        existing = existing.parent
    try:
        if not os.path.isdir(existing):
            raise NotADirectoryError(f"{existing} is not a folder")
        os.rmdir(tempfile.mkdtemp(prefix=".surge_write_check_", dir=existing))
    except OSError as e:
        why = e.strerror or str(e)
        raise ConfigError(
            "train_dir",
            f"cannot create or write the experiment folder {folder}: {why} (in {existing}).",
            fix,
        ) from None


def wandb_login_problem() -> str | None:
    """Why W&B would fail to start a run, or None: no API key is configured (WANDB_API_KEY, the
    netrc file or wandb's settings files) and W&B is not in offline or disabled mode (WANDB_MODE,
    or `wandb offline`). Reads files and the environment only, no network."""
    mode = os.environ.get("WANDB_MODE", "").strip().lower()
    disabled = os.environ.get("WANDB_DISABLED", "").strip().lower() in ("true", "1", "yes")
    if mode in ("offline", "dryrun", "disabled") or disabled:
        return None
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return None
    try:  # wandb's own lookup (imported here: an optional package, and heavy): settings files (mode, api_key) and the netrc entry of its host
        from wandb.sdk.lib import wbauth
        from wandb.sdk.wandb_setup import _WandbSetup

        settings = _WandbSetup(pid=os.getpid()).settings
        if settings._offline or settings._noop or settings.api_key:
            return None
        try:
            if wbauth.read_netrc_auth(host=settings.base_url):
                return None
        except Exception as e:  # noqa: BLE001 - e.g. an API key of the wrong length in .netrc
            return f"the W&B API key in the netrc file is not usable: {e}"
        host = settings.base_url
    except Exception:  # noqa: BLE001 - another wandb version: read the netrc file ourselves
        host = "api.wandb.ai"
        try:
            path = os.environ.get("NETRC") or os.path.expanduser("~/.netrc")
            if any("wandb" in m for m in netrc.netrc(path).hosts):
                return None
        except (OSError, netrc.NetrcParseError):
            pass
    return f"no W&B login: no API key in WANDB_API_KEY, the netrc file or wandb's settings (host {host})."


def check_wandb(cfg: Config) -> None:
    """With `--with_wandb=True`, W&B is installed and can log in (`wandb_login_problem`).

    Raises:
        ConfigError: on --with_wandb, saying how to log in or log offline.
    """
    if not cfg.with_wandb:
        return
    if importlib.util.find_spec("wandb") is None:
        raise ConfigError(
            "with_wandb",
            "Weights & Biases is not installed.",
            "pip install wandb, or --with_wandb=False.",
        )
    problem = wandb_login_problem()
    if problem:
        raise ConfigError(
            "with_wandb",
            problem,
            "run `wandb login` (or set WANDB_API_KEY), or log offline with WANDB_MODE=offline "
            "(`wandb sync` uploads later), or pass --with_wandb=False.",
        )
