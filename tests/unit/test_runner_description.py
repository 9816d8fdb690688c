"""surge.runner's sweep description: Sample Factory's grid order and folder names, the commands it
builds, and the runner's refusals (no experiment runs here)."""

from __future__ import annotations

import os
import shlex
import sys
import textwrap

import pytest

from surge.errors import ConfigError
from surge.runner import Experiment, ParamGrid, ParamList, RunDescription
from surge.runner.run import main, parse_args
from surge.runner.run_description import param_shorthand


def test_grid_order_is_sample_factorys_last_parameter_fastest():
    # Sample Factory's ParamGrid._generate_combinations: the first parameter is the outer loop
    grid = ParamGrid([("learning_rate", [1e-3, 3e-4]), ("seed", [1, 2])])
    assert list(grid.generate_params()) == [
        {"learning_rate": 1e-3, "seed": 1},
        {"learning_rate": 1e-3, "seed": 2},
        {"learning_rate": 3e-4, "seed": 1},
        {"learning_rate": 3e-4, "seed": 2},
    ]


def test_grid_tuple_keys_change_together():
    grid = ParamGrid([(("rollout", "batch_size"), [(32, 512), (64, 1024)]), ("seed", [7])])
    assert list(grid.generate_params()) == [
        {"rollout": 32, "batch_size": 512, "seed": 7},
        {"rollout": 64, "batch_size": 1024, "seed": 7},
    ]


@pytest.mark.parametrize(
    "grid",
    [
        [("seed", [])],
        [("seed", [1]), ("seed", [2])],
        [(("rollout", "batch_size"), [(32,)])],
    ],
)
def test_bad_grids_are_refused(grid):
    with pytest.raises(ValueError):
        ParamGrid(grid)


def test_shorthand_is_sample_factorys():
    # worked by hand from sample_factory/launcher/run_description.py: first letters of the leading
    # words, three letters of the last, one more while it collides with an earlier one
    assert param_shorthand("learning_rate", []) == "l.rat"
    assert param_shorthand("seed", []) == "see"
    assert param_shorthand("ppo_clip_ratio", []) == "p.c.rat"
    assert param_shorthand("learning_ratio", ["l.rat"]) == "l.rati"
    assert param_shorthand("lr", []) == "lr"


def test_folders_and_commands(tmp_path):
    rd = RunDescription(
        "sweep",
        [
            Experiment(
                "cartpole",
                "python -m surge.train --env=CartPole-v1",
                ParamGrid([("learning_rate", [0.001, 0.0003]), ("seed", [1, 2])]),
            )
        ],
    )
    planned = rd.plan(tmp_path)
    assert [p.name for p in planned] == [
        "00_cartpole_l.rat_0.001_see_1",
        "01_cartpole_l.rat_0.001_see_2",
        "02_cartpole_l.rat_0.0003_see_1",
        "03_cartpole_l.rat_0.0003_see_2",
    ]
    p = planned[2]
    assert p.folder == tmp_path / "sweep" / "cartpole" / "02_cartpole_l.rat_0.0003_see_1"
    assert p.tokens == [
        "python",
        "-m",
        "surge.train",
        "--env=CartPole-v1",
        "--learning_rate=0.0003",
        "--seed=1",
        "--experiment=02_cartpole_l.rat_0.0003_see_1",
        f"--train_dir={tmp_path / 'sweep' / 'cartpole'}",
    ]
    # Sample Factory's tuples, and the suffix of --experiment_suffix
    rd.experiment_suffix = "v2"
    cmd, name, root_dir, env_vars = next(rd.generate_experiments(tmp_path))
    assert (name, root_dir, env_vars) == ("00_cartpole_l.rat_0.001_see_1", "sweep/cartpole_v2", None)


def test_values_with_spaces_stay_one_token_and_names_stay_folders(tmp_path):
    rd = RunDescription("r", [Experiment("e", "python -m x", ParamList([{"note": "a b/c"}]))])
    (p,) = rd.plan(tmp_path)
    assert p.name == "00_e_not_a_b_c"
    assert "--note=a b/c" in p.tokens


def test_two_experiments_sharing_a_folder_are_refused(tmp_path):
    rd = RunDescription("r", [Experiment("e", "python -m a"), Experiment("e", "python -m b")])
    with pytest.raises(ValueError, match="share the folder"):
        rd.plan(tmp_path)


def test_ngc_is_refused_naming_what_it_needs():
    with pytest.raises(ConfigError) as e:
        parse_args(["--run=m", "--runner=ngc"])
    assert e.value.field == "runner" and "ngc" in str(e.value) and "API key" in str(e.value)


def test_bad_counts_are_refused():
    with pytest.raises(ConfigError) as e:
        parse_args(["--run=m", "--max_parallel=0"])
    assert e.value.field == "max_parallel"
    with pytest.raises(ConfigError) as e:
        parse_args(["--run=m", "--experiments_per_gpu=2", "--num_gpus=0"])
    assert e.value.field == "num_gpus"


def _module(tmp_path, monkeypatch, name: str, body: str) -> str:
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(body))
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop(name, None)
    return name


def test_missing_module_and_missing_run_description_exit_2(tmp_path, monkeypatch, capsys):
    assert main(["--run=no_such_module_xyz", f"--train_dir={tmp_path}"]) == 2
    assert "--run: cannot import" in capsys.readouterr().err
    mod = _module(tmp_path, monkeypatch, "runner_mod_empty", "X = 1\n")
    assert main([f"--run={mod}", f"--train_dir={tmp_path}"]) == 2
    assert "RUN_DESCRIPTION" in capsys.readouterr().err


def test_template_without_cmd_is_refused(tmp_path, monkeypatch, capsys):
    mod = _module(
        tmp_path,
        monkeypatch,
        "runner_mod_echo",
        """
        from surge.runner import Experiment, RunDescription
        RUN_DESCRIPTION = RunDescription("r", [Experiment("e", "echo hi")])
        """,
    )
    template = tmp_path / "t.sh"
    template.write_text("#!/bin/bash\necho no command here\n")
    argv = [
        f"--run={mod}",
        "--runner=slurm",
        f"--train_dir={tmp_path}",
        f"--slurm_sbatch_template={template}",
    ]
    assert main(argv + ["--slurm_print_only=True"]) == 2
    assert "--slurm_sbatch_template" in capsys.readouterr().err


def test_slurm_scripts_from_a_template(tmp_path, monkeypatch, capsys):
    mod = _module(
        tmp_path,
        monkeypatch,
        "runner_mod_grid",
        """
        from surge.runner import Experiment, ParamGrid, RunDescription
        RUN_DESCRIPTION = RunDescription(
            "r", [Experiment("e", "python -m somewhere --x=1", ParamGrid([("seed", [1, 2])]), env_vars={"A": "b c"})]
        )
        """,
    )
    template = tmp_path / "t.sh"
    template.write_text(
        "#!/bin/bash\n#SBATCH --time=1:00\nsource venv/bin/activate\n$CMD\necho $$HOME $NAME $CPU $GPU\n"
    )
    workdir = tmp_path / "w"
    rc = main(
        [
            f"--run={mod}",
            "--runner=slurm",
            f"--train_dir={tmp_path / 'td'}",
            f"--slurm_sbatch_template={template}",
            f"--slurm_workdir={workdir}",
            "--slurm_gpus_per_job=2",
            "--slurm_cpus_per_gpu=3",
            "--slurm_partition=gpu",
            "--slurm_print_only=True",
            "--pause_between=0",
        ]
    )
    assert rc == 0
    printed = capsys.readouterr().out.splitlines()
    assert len(printed) == 2
    sbatch = shlex.split(printed[1])
    assert sbatch[0] == "sbatch" and "--gres=gpu:2" in sbatch and ["-c", "6"] == sbatch[3:5]
    assert ["-p", "gpu"] == sbatch[-3:-1] and sbatch[-1] == str(workdir / "sbatch_01_e_see_2.sh")
    lines = (workdir / "sbatch_01_e_see_2.sh").read_text().splitlines()
    assert lines[:3] == ["#!/bin/bash", "#SBATCH --time=1:00", "source venv/bin/activate"]
    cmd = shlex.split(lines[3])
    # the leading `python` is the runner's interpreter; env_vars prefix the command
    assert cmd[:3] == ["A=b c", sys.executable, "-m"]
    assert cmd[-3:] == ["--seed=2", "--experiment=01_e_see_2", f"--train_dir={tmp_path / 'td' / 'r' / 'e'}"]
    assert lines[4] == "echo $HOME 01_e_see_2 6 2"


def test_the_example_sweep_is_the_2x2_cartpole_grid(tmp_path):
    from surge.runner.examples.cartpole_sweep import RUN_DESCRIPTION

    planned = RUN_DESCRIPTION.plan(tmp_path)
    assert [p.folder.relative_to(tmp_path).as_posix() for p in planned] == [
        "cartpole_sweep/cartpole/00_cartpole_l.rat_0.001_see_1",
        "cartpole_sweep/cartpole/01_cartpole_l.rat_0.001_see_2",
        "cartpole_sweep/cartpole/02_cartpole_l.rat_0.0003_see_1",
        "cartpole_sweep/cartpole/03_cartpole_l.rat_0.0003_see_2",
    ]
    assert all(
        p.tokens[:3] == ["python", "-m", "surge.train"] and "--env=CartPole-v1" in p.tokens for p in planned
    )


def test_slurm_without_its_commands_is_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no sbatch here
    with pytest.raises(ConfigError) as e:
        parse_args(["--run=m", "--runner=slurm"])
    assert e.value.field == "runner" and "sbatch" in str(e.value) and "--slurm_print_only" in str(e.value)


def test_an_unreachable_slurm_controller_exits_2_before_submitting(tmp_path, monkeypatch, capsys):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for cmd, body in (
        ("squeue", "echo 'squeue: error: Unable to contact slurm controller' >&2; exit 1"),
        ("sbatch", f"touch {tmp_path}/sbatch_was_called"),
        ("scancel", "exit 0"),
    ):
        (bin_dir / cmd).write_text(f"#!/bin/sh\n{body}\n")
        (bin_dir / cmd).chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    mod = _module(
        tmp_path,
        monkeypatch,
        "runner_mod_slurm_down",
        """
        from surge.runner import Experiment, RunDescription
        RUN_DESCRIPTION = RunDescription("r", [Experiment("e", "echo hi")])
        """,
    )
    assert main([f"--run={mod}", "--runner=slurm", f"--train_dir={tmp_path / 'td'}"]) == 2
    assert "Unable to contact slurm controller" in capsys.readouterr().err
    assert not (tmp_path / "sbatch_was_called").exists() and not (tmp_path / "td").exists()


def test_each_runner_has_its_own_flags():
    from surge.runner.run import launcher_argparser

    slurm = launcher_argparser(["--runner=slurm", "--help"]).format_help()
    local = launcher_argparser(["--help"]).format_help()
    assert "--slurm_sbatch_template" in slurm and "--max_parallel" not in slurm
    assert "--max_parallel" in local and "--experiments_per_gpu" in local and "--slurm_workdir" not in local
    with pytest.raises(SystemExit):  # a processes flag given to the slurm runner is refused
        parse_args(["--run=m", "--runner=slurm", "--max_parallel=2", "--slurm_print_only=True"])
