"""Connect four with action masks (issue 19, "Done when"): zero illegal moves while training (serial
and async, decorrelation steps included) and in `surge enjoy`, as an independent referee
(`strict_masks`) counts them; and a Parallel PettingZoo env whose agents die trains briefly."""

import pytest

pytest.importorskip("pettingzoo")

import strict_masks  # noqa: E402

from surge.app.resolve import parse_cfg  # noqa: E402
from surge.app.training_run import train  # noqa: E402
from surge.enjoy import enjoy  # noqa: E402

PLACEMENTS = {
    "serial": ["--serial_mode=True"],
    "async": [
        "--serial_mode=False",
        "--decorrelate_experience_max_seconds=0",
        "--set_workers_cpu_affinity=False",
    ],
}


@pytest.mark.slow
@pytest.mark.parametrize("placement", list(PLACEMENTS))
def test_no_illegal_move_in_training_or_enjoy(tmp_path, monkeypatch, placement):
    logs = tmp_path / "moves"
    logs.mkdir()
    monkeypatch.setenv("SURGE_MASK_LOG", str(logs))  # inherited by the async placement's processes
    args = ["--env=strict_masks:strict_connect_four", "--experiment=c4", f"--train_dir={tmp_path}"]
    cfg = parse_cfg(
        [
            *args,
            *PLACEMENTS[placement],
            "--num_workers=2",
            "--num_envs_per_worker=4",
            "--decorrelate_envs_on_one_worker=True",
            "--train_for_env_steps=6000",
            "--seed=1",
            "--num_torch_threads=1",
        ]
    )
    assert train(cfg) == "done"
    legal, illegal = strict_masks.counts(logs)
    assert illegal == 0 and legal > 3000, (legal, illegal)

    for p in logs.iterdir():
        p.unlink()
    ev = parse_cfg([*args, "--max_num_episodes=20", "--no_render=True"], evaluation=True)
    result = enjoy(ev)
    legal, illegal = strict_masks.counts(logs)
    assert len(result["returns"]) >= 20 and result["illegal_actions"] == 0
    assert illegal == 0 and legal >= 20 * 7, (legal, illegal)


@pytest.mark.slow
def test_a_parallel_env_whose_agents_die_trains(tmp_path):
    cfg = parse_cfg(
        [
            "--env=pettingzoo_butterfly.knights_archers_zombies_v11",
            '--pettingzoo_kwargs={"max_cycles": 200, "line_death": true}',
            "--experiment=kaz",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=2",
            "--train_for_env_steps=1500",
            "--seed=0",
            "--num_torch_threads=1",
        ]
    )
    assert train(cfg) == "done"
    log = (tmp_path / "kaz" / "surge_log.txt").read_text()
    assert "Episode return" in log


@pytest.mark.slow
def test_the_dummy_samplers_random_moves_are_legal(tmp_path, monkeypatch):
    logs = tmp_path / "moves"
    logs.mkdir()
    monkeypatch.setenv("SURGE_MASK_LOG", str(logs))
    cfg = parse_cfg(
        [
            "--env=strict_masks:strict_connect_four",
            "--algo=DUMMY_SAMPLER",
            "--experiment=dummy",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=4",
            "--train_for_env_steps=3000",
            "--seed=0",
        ]
    )
    assert train(cfg) == "done"
    legal, illegal = strict_masks.counts(logs)
    assert illegal == 0 and legal > 2000, (legal, illegal)


@pytest.mark.slow
def test_decorrelation_moves_are_legal(tmp_path, monkeypatch):
    logs = tmp_path / "moves"
    logs.mkdir()
    monkeypatch.setenv("SURGE_MASK_LOG", str(logs))
    cfg = parse_cfg(
        [
            "--env=strict_masks:strict_tictactoe",
            "--experiment=decorrelate",
            f"--train_dir={tmp_path}",
            "--serial_mode=True",
            "--num_workers=1",
            "--num_envs_per_worker=8",
            "--decorrelate_envs_on_one_worker=True",
            "--rollout=64",
            "--train_for_env_steps=600",
            "--seed=0",
        ]
    )
    assert train(cfg) == "done"
    legal, illegal = strict_masks.counts(logs)
    assert illegal == 0 and legal > 300, (legal, illegal)
