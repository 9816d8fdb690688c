"""Training on VizDoom through both placements: dict observations (image + measurements), tuple
action heads, a two-agent match inside the async engine, and enjoy's video."""

from __future__ import annotations

import pytest

pytest.importorskip("vizdoom")
pytest.importorskip("cv2")

from test_doom_env import doom_leftovers  # noqa: E402  (same folder, on sys.path)

from surge.app.resolve import parse_cfg  # noqa: E402
from surge.app.training_run import train  # noqa: E402

SMALL = [
    "--decorrelate_experience_max_seconds=0",
    "--set_workers_cpu_affinity=False",
    "--rollout=16",
    "--recurrence=16",
    "--batch_size=128",
    "--hidden_size=64",
    "--seed=0",
]


def _cfg(tmp_path, env: str, *extra: str):
    return parse_cfg([f"--env={env}", "--experiment=exp", f"--train_dir={tmp_path}", *SMALL, *extra])


def _checkpoints(tmp_path):
    return sorted((tmp_path / "exp" / "checkpoint_p0").glob("*.pth"))


@pytest.mark.parametrize(
    "env, extra",
    [
        ("doom_battle", ["--num_workers=2", "--num_envs_per_worker=2", "--train_for_env_steps=3000"]),
        (
            "doom_battle",
            [
                "--doom_continuous_turning=True",
                "--num_workers=1",
                "--worker_num_splits=1",
                "--train_for_env_steps=1500",
            ],
        ),
        (
            "doom_duel",
            [
                "--num_workers=1",
                "--num_envs_per_worker=1",
                "--worker_num_splits=1",
                "--train_for_env_steps=1500",
            ],
        ),
    ],
)
@pytest.mark.slow
def test_async_training_on_doom(tmp_path, env, extra):
    with doom_leftovers():
        assert train(_cfg(tmp_path, env, *extra)) == "done"
    frames = int(_checkpoints(tmp_path)[-1].stem.rsplit("_f", 1)[1])  # checkpoint_v<version>_f<env frames>
    assert frames >= int(extra[-1].split("=")[1])


@pytest.mark.slow
def test_doom_duel_trains_one_policy_per_player(tmp_path):
    """--num_policies=2 --policy_mapping=agent_index: player 0 is policy 0, player 1 policy 1. Each
    policy's learner trains on its own player's steps only (every block holds both players, so both
    learners get every block), writes its own checkpoints and summaries, and enjoy plays either."""
    import torch

    from surge.enjoy import enjoy

    extra = ["--num_workers=1", "--num_envs_per_worker=1", "--worker_num_splits=1"]
    extra += ["--num_policies=2", "--policy_mapping=agent_index", "--train_for_env_steps=2000"]
    with doom_leftovers():
        assert train(_cfg(tmp_path, "doom_duel", *extra)) == "done"
    for p in (0, 1):
        ckpts = sorted((tmp_path / "exp" / f"checkpoint_p{p}").glob("checkpoint_*.pth"))
        state = torch.load(ckpts[-1], weights_only=True)
        assert state["env_frames"] >= 2000 and state["learner"]["policy_version"] > 0
        assert list((tmp_path / "exp" / "summaries" / str(p)).glob("events.out.tfevents.*"))
    ev = [
        "--env=doom_duel",
        "--experiment=exp",
        f"--train_dir={tmp_path}",
        "--no_render",
        "--max_num_frames=200",
    ]
    assert enjoy(parse_cfg([*ev, "--policy_index=1"], evaluation=True)) is not None


def test_serial_doom_basic_then_enjoy_video(tmp_path):
    from surge.enjoy import enjoy

    train(_cfg(tmp_path, "doom_basic", "--serial_mode=True", "--num_workers=1", "--train_for_env_steps=1500"))
    cfg = parse_cfg(
        [
            "--env=doom_basic",
            "--experiment=exp",
            f"--train_dir={tmp_path}",
            "--save_video=True",
            "--max_num_episodes=1",
            "--no_render=True",
        ],
        evaluation=True,
    )
    assert cfg.eval_params is not None and cfg.eval_params.fps == 35  # the Doom family's default
    result = enjoy(cfg)
    assert len(result["returns"]) == 1 and 0 < result["lengths"][0] <= 300  # tics: eval frameskip 1
    import imageio.v2 as imageio

    with imageio.get_reader(str(result["video"])) as r:
        frames = [f for f in r]  # list(r) asks len(), which is inf for a stream
        fps = r.get_meta_data()["fps"]
    # the frame after the reset, then one per tic (the last: the final tic's, before the auto-reset)
    assert len(frames) == result["lengths"][0] + 1 and frames[0].shape == (120, 160, 3) and fps == 35


@pytest.mark.slow
def test_enjoy_shows_every_tic_and_plays_the_same_game(tmp_path):
    """--eval_env_frameskip=1 (the Doom default) steps the game one tic at a time and repeats each
    action env_frameskip times: every tic is a video frame, and with deterministic actions the game
    is the one the training frameskip plays (same return, 4x the steps)."""
    from surge.enjoy import enjoy
    from surge.errors import ConfigError

    train(_cfg(tmp_path, "doom_basic", "--serial_mode=True", "--num_workers=1", "--train_for_env_steps=1500"))
    base = ["--env=doom_basic", "--experiment=exp", f"--train_dir={tmp_path}", "--no_render=True"]
    base += ["--max_num_episodes=2", "--eval_deterministic=True", "--seed=3"]
    per_tic = enjoy(parse_cfg([*base, "--save_video=True"], evaluation=True))
    per_step = enjoy(parse_cfg([*base, "--eval_env_frameskip=4"], evaluation=True))
    assert per_tic["returns"] == pytest.approx(per_step["returns"])
    for tics, steps in zip(per_tic["lengths"], per_step["lengths"], strict=True):
        assert 4 * (steps - 1) < tics <= 4 * steps  # the last action may end the game mid-repeat
    import imageio.v2 as imageio

    with imageio.get_reader(str(per_tic["video"])) as r:
        assert sum(1 for _ in r) == sum(per_tic["lengths"]) + len(per_tic["lengths"])  # + each reset frame
    with pytest.raises(ConfigError, match="eval_env_frameskip"):
        parse_cfg([*base, "--eval_env_frameskip=3"], evaluation=True)
