"""The command line as a Sample Factory user types it: bare boolean flags, --version, --help by section."""

import logging

import pytest

from surge.app.resolve import parse_cfg
from surge.cli import main as surge_main


def test_bare_boolean_flags_mean_true_and_explicit_values_still_work(tmp_path):
    base = ["--env=cartpole", f"--train_dir={tmp_path}"]
    cfg = parse_cfg([*base, "--serial_mode", "--use_rnn", "--recurrence=1"])
    assert cfg.serial_mode is True and cfg.use_rnn is True
    cfg = parse_cfg([*base, "--serial_mode=False", "--use_rnn", "False"])
    assert cfg.serial_mode is False and cfg.use_rnn is False
    ev = parse_cfg([*base, "--no_render", "--eval_deterministic"], evaluation=True)
    assert ev.eval_params.no_render is True and ev.eval_params.eval_deterministic is True


def test_surge_enjoy_accepts_bare_no_render(tmp_path, capsys):
    code = surge_main(
        ["enjoy", "--env=cartpole", f"--train_dir={tmp_path}", "--experiment=none", "--no_render"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "no_render" not in err and "checkpoint" in err  # got past the flags


def test_headless_enjoy_falls_back_to_no_rendering_naming_the_flags(tmp_path, monkeypatch, caplog):
    from surge.enjoy import render_mode

    ev = parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}"], evaluation=True)
    monkeypatch.setattr("sys.platform", "linux")
    monkeypatch.setenv("DISPLAY", ":0")
    assert render_mode(ev) == "human"
    monkeypatch.delenv("DISPLAY")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    with caplog.at_level(logging.WARNING, logger="surge"):
        assert render_mode(ev) is None
    assert "--no_render" in caplog.text and "--save_video" in caplog.text and "display" in caplog.text
    ev.eval_params.save_video = True
    assert render_mode(ev) == "rgb_array"
    ev.eval_params.save_video, ev.eval_params.no_render = False, True
    assert render_mode(ev) is None


def test_version_is_printed_by_surge_and_its_commands(capsys):
    import surge

    for argv in (["--version"], ["train", "--version"], ["enjoy", "--version"], ["check-env", "--version"]):
        try:
            code = surge_main(argv)
        except SystemExit as e:
            code = e.code
        assert code == 0 and capsys.readouterr().out.strip() == f"surge {surge.__version__}", argv


def _help(argv, evaluation=False):
    with pytest.raises(SystemExit) as e:
        parse_cfg([*argv, "--help"], evaluation=evaluation)
    assert e.value.code == 0


def test_help_is_grouped_by_section(capsys):
    _help(["--env=atari_pong"])
    out = capsys.readouterr().out
    sections = [
        "experiment:",
        "stopping:",
        "checkpoints and summaries:",
        "optimisation:",
        "sampling:",
        "model:",
        "PBT:",
        "debugging and benchmarking:",
        "env family atari_:",
    ]
    starts = [out.index(f"\n{s}\n") for s in sections]
    assert starts == sorted(starts)

    def section_of(flag):
        at = out.index(f"  --{flag} ")
        return max((s for s, i in zip(sections, starts, strict=True) if i < at), key=lambda s: out.index(s))

    assert section_of("rollout") == "sampling:" and section_of("learning_rate") == "optimisation:"
    assert section_of("hidden_size") == "model:" and section_of("train_for_env_steps") == "stopping:"
    assert section_of("env_frameskip") == "env family atari_:"
    _help(["--env=cartpole"], evaluation=True)
    out = capsys.readouterr().out
    assert out.index("\nenjoy:\n") < out.index("  --no_render ")


def test_several_unknown_flags_are_all_named_with_their_suggestions(tmp_path):
    from surge.errors import ConfigError

    argv = ["--env=cartpole", f"--train_dir={tmp_path}", "--lerning_rate=1", "--frobnicate=2"]
    with pytest.raises(ConfigError) as e:
        parse_cfg([*argv, "--num_worker", "3"])
    msg = str(e.value)
    assert "--lerning_rate" in msg and "--frobnicate" in msg and "--num_worker" in msg
    assert "did you mean --learning_rate" in msg and "--num_workers" in msg  # suggestions kept
    assert e.value.field == "lerning_rate"  # the first, a flag the user typed


def test_surge_check_env_names_every_unknown_flag(capsys):
    code = surge_main(["check-env", "--env=cartpole", "--num_steps=2", "--gama=0.9", "--frobnicate=1"])
    err = capsys.readouterr().err
    assert code == 1 and "--gama" in err and "--frobnicate" in err and "--gamma" in err


def test_bare_surge_is_a_usage_error_and_help_is_not(capsys):
    assert surge_main([]) == 2  # argparse's exit code for a missing command
    assert "usage: surge COMMAND" in capsys.readouterr().err
    assert surge_main(["--help"]) == 0
    assert "usage: surge COMMAND" in capsys.readouterr().out


def test_a_mistyped_command_gets_the_closest_command(capsys):
    assert surge_main(["trian"]) == 2
    assert "did you mean `surge train`?" in capsys.readouterr().err


@pytest.mark.parametrize(
    "flag, field, says",
    [
        ("--serial_mode=ture", "serial_mode", "expected True or False, got 'ture'"),
        ("--num_workers=x", "num_workers", "expected an integer, got 'x'"),
    ],
)
def test_a_bad_value_names_its_flag_once(tmp_path, flag, field, says):
    from surge.errors import ConfigError

    with pytest.raises(ConfigError) as e:
        parse_cfg(["--env=cartpole", f"--train_dir={tmp_path}", flag])
    assert e.value.field == field and says in str(e.value)
    assert str(e.value).count(field) == 1, str(e.value)
