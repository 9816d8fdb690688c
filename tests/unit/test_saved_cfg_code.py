"""A saved cfg.json is data: a resume (or `surge enjoy`) never imports a module it names from inside
`--train_dir` (issue 55). With `python -m surge.train` the current folder is on sys.path and
`train_dir/` is a namespace package, so `--algo=train_dir.<exp>.evil:X` in a crafted cfg.json ran
`train_dir/<exp>/evil.py`; here the current folder is put on sys.path the same way."""

import json

import pytest

from surge.app.resolve import parse_cfg
from surge.errors import ConfigError


def _crafted(tmp_path, monkeypatch, root: str, saved: dict):
    """`tmp_path` as the current folder (on sys.path, as `python -m` puts it), an experiment folder
    `root/shared` with a cfg.json of `saved` and an evil.py that writes a marker when imported."""
    folder = tmp_path / root / "shared"
    folder.mkdir(parents=True)
    marker = tmp_path / "code_ran"
    (folder / "evil.py").write_text(f"open({str(marker)!r}, 'w').write('ran')\n")
    (folder / "cfg.json").write_text(json.dumps({"env": "cartpole", "experiment": "shared", **saved}))
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    return marker


@pytest.mark.parametrize(
    "flag,value", [("algo", "{root}.shared.evil:X"), ("env_wrappers", ["{root}.shared.evil:W"])]
)
def test_a_module_inside_train_dir_named_by_a_saved_cfg_is_not_imported(tmp_path, monkeypatch, flag, value):
    root = f"runs_{flag}"  # a top-level name of its own: no module cached by another test
    value = value.format(root=root) if isinstance(value, str) else [v.format(root=root) for v in value]
    marker = _crafted(tmp_path, monkeypatch, root, {flag: value})
    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=cartpole", f"--train_dir={root}", "--experiment=shared"])
    assert not marker.exists(), "resuming the crafted folder ran its code"
    assert e.value.field == flag
    assert f"{root}.shared.evil" in e.value.problem and "inside --train_dir" in e.value.problem


def test_a_saved_module_outside_train_dir_still_resumes(tmp_path, monkeypatch):
    (tmp_path / "my_envs").mkdir()
    (tmp_path / "my_envs" / "wrappers.py").write_text(
        "import gymnasium as gym\nclass Same(gym.Wrapper):\n    pass\n"
    )
    _crafted(tmp_path, monkeypatch, "runs", {"env_wrappers": ["my_envs.wrappers:Same"]})
    cfg = parse_cfg(["--env=cartpole", "--train_dir=runs", "--experiment=shared"])
    assert cfg.env_wrappers == ["my_envs.wrappers:Same"]
