"""The doom_ family on the real VizDoom engine, headless: every scenario, a multiplayer duel with
bots, episode ends, reward-shaping flags, and nothing left in /dev/shm or the process table."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from shm_leftovers import shm_left_since

pytest.importorskip("vizdoom")
pytest.importorskip("cv2")

from surge.app.resolve import parse_cfg  # noqa: E402
from surge.envs.doom.scenarios import SCENARIOS  # noqa: E402
from surge.envs.registry import make_env  # noqa: E402
from surge.errors import ConfigError, EnvError  # noqa: E402

SHM = Path("/dev/shm")


def doom_shm() -> set[str]:
    return {p.name for p in SHM.glob("ViZDoom*")} if SHM.is_dir() else set()


#: set in a test's environment, inherited by its runs' processes and their VizDoom engines: tells
#: a test's engines apart from those of a test beside it (pytest-xdist runs two modules at a time)
TAG_VAR = "SURGE_DOOM_TEST_TAG"


def _has_tag(pid: int, tag: str) -> bool:
    try:
        return f"{TAG_VAR}={tag}".encode() in Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return False


def engine_pids(tag: str | None = None) -> set[int]:
    """Live (not zombie) vizdoom engine and launcher processes of this user; with `tag`, only
    those started under `doom_leftovers(tag)`."""
    out = subprocess.run(["ps", "-eo", "pid=,stat=,args="], capture_output=True, text=True).stdout
    pids = set()
    for line in out.splitlines():
        pid, stat, args = line.strip().split(None, 2)
        if "Z" not in stat and ("vizdoom/vizdoom " in args or "vizdoom_launcher" in args):
            if tag is None or _has_tag(int(pid), tag):
                pids.add(int(pid))
    return pids


@contextlib.contextmanager
def doom_leftovers() -> Iterator[str]:
    """Fails if the block leaves VizDoom engines of its own (they carry the block's `TAG_VAR`)
    or VizDoom shared memory that no live process holds (`shm_left_since`; a test beside this one
    holds its own segments while it runs), within 10 s of its end. Yields the tag."""
    tag = uuid.uuid4().hex
    shm = doom_shm()
    os.environ[TAG_VAR] = tag
    try:
        yield tag
    finally:
        os.environ.pop(TAG_VAR, None)
    deadline = time.time() + 10
    while time.time() < deadline and engine_pids(tag):
        time.sleep(0.2)
    assert engine_pids(tag) == set(), "VizDoom engine processes left behind"
    assert {n for n in shm_left_since(shm) if n.startswith("ViZDoom")} == set(), (
        "VizDoom shared memory left behind"
    )


@pytest.fixture
def no_leftovers():
    """Fails the test if it leaves VizDoom shared memory or engine processes behind."""
    with doom_leftovers() as tag:
        yield tag


def doom_env(name: str, *flags: str):
    return make_env(parse_cfg([f"--env={name}", "--experiment=doom_test", *flags]))


def run_random(env, steps: int, seed: int = 0) -> list[dict]:
    rng = np.random.default_rng(seed)
    env.action_space.seed(int(rng.integers(1 << 30)))
    obs, infos = env.reset(seed=seed)
    assert len(obs) == env.num_agents
    ends = []
    for _ in range(steps):
        obs, rewards, terminated, truncated, infos = env.step(
            [env.action_space.sample() for _ in range(env.num_agents)]
        )
        for o in obs:
            assert env.observation_space.contains(o)
        assert all(np.isfinite(r) for r in rewards)
        ends += [i["episode"] for i in infos if "episode" in i]
    return ends


SINGLE = [n for n, s in SCENARIOS.items() if not s.multiplayer]


@pytest.mark.parametrize("name", SINGLE)
def test_single_player_scenarios_step_headless(name, no_leftovers):
    env = doom_env(name)
    try:
        space = env.observation_space
        image = space["obs"] if hasattr(space, "spaces") and "obs" in space.spaces else space
        assert image.shape == (3, 72, 128) and image.dtype == np.uint8
        run_random(env, 60)
    finally:
        env.close()


@pytest.mark.parametrize("name", ["doom_duel_bots", "doom_deathmatch_bots"])
def test_one_agent_against_bots(name, no_leftovers):
    env = doom_env(name)
    try:
        assert env.num_agents == 1
        run_random(env, 40)
        obs, *_, infos = env.step([env.action_space.sample()])
        expected_players = 1 + SCENARIOS[name].num_bots
        assert infos[0]["game_variables"]["PLAYER_COUNT"] == expected_players
        assert obs[0]["measurements"].shape == (23,)
    finally:
        env.close()


@pytest.mark.slow
def test_multiplayer_duel_two_agents_and_a_bot(no_leftovers):
    env = doom_env(
        "doom_duel", "--num_bots=1", "--timelimit=0.05"
    )  # a 3-second match: it ends and auto-resets
    try:
        assert env.num_agents == 2
        ends = run_random(env, 60)
        _, _, _, _, infos = env.step([env.action_space.sample() for _ in range(2)])
        assert [i["game_variables"]["PLAYER_COUNT"] for i in infos] == [3, 3]  # two agents and the bot
        assert {i["game_variables"]["PLAYER_NUMBER"] for i in infos} == {0, 1}
        assert len(ends) >= 2, "the match should have ended for both agents within 60 steps"
    finally:
        env.close()


@pytest.mark.slow
def test_a_match_that_stops_answering_is_an_env_error_with_the_players_stacks(
    no_leftovers, monkeypatch, capfd
):
    """One player process stopped mid-match (SIGSTOP): the step raises EnvError after
    STEP_TIMEOUT_S, which stays under a rollout worker's heartbeat timeout, so the worker rebuilds
    the match as an env fault instead of being killed as hung; the players that can still run
    write their Python stack (the other one waits at the tic barrier) to stderr first."""
    from surge.cfg.config import Config
    from surge.envs.doom import multiplayer
    from surge.envs.doom.game import TIC_BARRIER_TIMEOUT_S

    heartbeat = Config.__dataclass_fields__["heartbeat_timeout_sec"].default
    assert multiplayer.STEP_TIMEOUT_S + multiplayer.START_TIMEOUT_S < heartbeat
    assert TIC_BARRIER_TIMEOUT_S < multiplayer.STEP_TIMEOUT_S
    monkeypatch.setattr(multiplayer, "STEP_TIMEOUT_S", 3.0)
    env = doom_env("doom_duel", "--num_bots=0")
    try:
        env.reset(seed=0)
        run_random(env, 5)
        stopped = env.unwrapped._players[1].proc
        os.kill(stopped.pid, signal.SIGSTOP)
        t0 = time.monotonic()
        with pytest.raises(EnvError, match="Doom agent 1 did not answer within 3 s"):
            env.step([env.action_space.sample() for _ in range(2)])
        assert time.monotonic() - t0 < 10
        assert not stopped.is_alive()  # killed with its match, not left stopped
        err = capfd.readouterr().err
        assert "most recent call first" in err and "wait" in err, err[-3000:]
    finally:
        env.close()


@pytest.mark.slow
def test_deathmatch_full_four_agents_four_bots(no_leftovers):
    env = doom_env("doom_deathmatch_full")
    try:
        assert env.num_agents == 4
        run_random(env, 20)
        _, _, _, _, infos = env.step([env.action_space.sample() for _ in range(4)])
        assert {i["game_variables"]["PLAYER_COUNT"] for i in infos} == {8}
    finally:
        env.close()


def test_timeout_is_truncation_and_return_is_the_game_score(no_leftovers):
    env = doom_env("doom_basic")  # 300 tics: 75 steps of 4; no-ops never kill the monster
    try:
        env.reset(seed=1)
        total = 0.0
        for t in range(1, 200):  # noqa: B007  (t is the episode length after the loop)
            _, rewards, terminated, truncated, infos = env.step([0])
            total += rewards[0]
            if terminated[0] or truncated[0]:
                break
        assert truncated[0] and not terminated[0]
        assert t == 75
        # the agent trains on the scaled reward (0.01); the reported return is the game's (-1 per tic)
        assert total == pytest.approx(-0.01 * 4 * 74 - 0.01 * 3, abs=0.05)
        assert infos[0]["episode"]["r"] == pytest.approx(total * 100, abs=0.5)
    finally:
        env.close()


def test_reward_shaping_flag_and_bad_values(tmp_path, monkeypatch):
    # the substitute arena's scheme (with its KILLCOUNT term): no Sample Factory maps installed here
    monkeypatch.setenv("SURGE_DATA_DIR", str(tmp_path))
    env = doom_env("doom_battle", '--doom_reward_shaping={"delta": {"HEALTH": [0.5, -0.5]}}')
    try:
        scheme = env.env.get_wrapper_attr("reward_shaping")
        assert scheme["delta"]["HEALTH"] == [0.5, -0.5]
        assert scheme["delta"]["KILLCOUNT"] == [1.0, 0.0]  # the rest of the default stays
    finally:
        env.close()
    with pytest.raises(ConfigError, match="doom_reward_shaping"):
        doom_env("doom_battle", "--doom_reward_shaping={not json")
    with pytest.raises(ConfigError, match="did you mean"):
        doom_env("doom_basik")
    with pytest.raises(EnvError, match="no such file"):
        doom_env("doom_basic", "--doom_scenario_path=/nonexistent/x.cfg").reset()


def test_user_scenario_path_loads_a_cfg(tmp_path, no_leftovers):
    import shutil

    import vizdoom

    src = Path(vizdoom.scenarios_path)
    shutil.copy(src / "defend_the_center.wad", tmp_path / "mine.wad")  # a user's map beside its cfg
    cfg = tmp_path / "mine.cfg"
    cfg.write_text((src / "defend_the_center.cfg").read_text().replace("defend_the_center.wad", "mine.wad"))
    env = doom_env("doom_basic", f"--doom_scenario_path={cfg}")
    try:
        obs, _ = env.reset(seed=0)
        assert obs[0].shape == (3, 72, 128)
        env.step([3])
    finally:
        env.close()


KILLED_CHILD = textwrap.dedent(
    """
    import sys, time
    from surge.app.resolve import parse_cfg
    from surge.envs.registry import make_env
    if __name__ == "__main__":
        env = make_env(parse_cfg(["--env=" + sys.argv[1], "--experiment=x"]))
        env.reset(seed=0)
        for _ in range(5):
            env.step([env.action_space.sample() for _ in range(env.num_agents)])
        print("ready", flush=True)
        time.sleep(600)
    """
)


@pytest.mark.parametrize("name", ["doom_basic", pytest.param("doom_duel", marks=pytest.mark.slow)])
def test_sigkill_leaves_no_engine_and_no_shared_memory(name, tmp_path, no_leftovers):
    script = tmp_path / "child.py"
    script.write_text(KILLED_CHILD)
    before = doom_shm()
    p = subprocess.Popen(
        [sys.executable, str(script), name], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert p.stdout.readline().strip() == "ready"
        assert doom_shm() - before, "the game should hold shared memory while it runs"
        # the engine carries the test's tag, so the leftover check sees this test's engines
        assert engine_pids(no_leftovers), "the running engine should carry the test's tag"
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(10)
    # no_leftovers checks, within 10 s, that the engines are gone and their segments unlinked


def test_sigkill_of_the_whole_process_group_leaves_no_shared_memory(tmp_path, no_leftovers):
    # `kill -9 -PGID`, `timeout -s KILL`: every process of the run's group dies at once, the
    # launchers too unless they left the group; a launcher must outlive its game's process to unlink
    # the segments
    script = tmp_path / "child.py"
    script.write_text(KILLED_CHILD)
    p = subprocess.Popen(
        [sys.executable, str(script), "doom_basic"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert p.stdout.readline().strip() == "ready"
        assert engine_pids(no_leftovers), "the running engine should carry the test's tag"
    finally:
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(10)


@pytest.mark.slow
def test_a_match_that_cannot_start_reports_the_engine_error(tmp_path, no_leftovers):
    bad = tmp_path / "broken.cfg"
    bad.write_text("doom_scenario_path = missing.wad\n")  # the engine refuses: no such map file
    env = doom_env("doom_duel", f"--doom_scenario_path={bad}")
    try:
        with pytest.raises(EnvError, match="failed to start") as e:
            env.reset(seed=0)
        assert "Traceback" in str(e.value)  # the failing agent's own traceback, not only a timeout
    finally:
        env.close()


def test_launcher_refuses_a_folder_other_users_can_write(tmp_path, monkeypatch):
    import tempfile

    from surge.envs.doom.engine_launcher import launcher_path

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    shared = tmp_path / f"surge-{os.getuid()}"
    shared.mkdir()
    shared.chmod(0o777)
    with pytest.raises(PermissionError, match="not private"):
        launcher_path()
    shared.chmod(0o700)
    assert launcher_path().parent == shared


@pytest.mark.parametrize("flags", [[], ["--wide_aspect_ratio=True"], ["--res_w=84", "--res_h=84"]])
def test_observations_are_the_rendered_frame_resized_channels_first(flags, no_leftovers):
    """Each observation is the engine's full-resolution RGB frame (`render()`, channels last)
    resized with nearest-neighbour interpolation, as Sample Factory resizes it, then channels
    first; the frames change as the game plays."""
    import cv2

    env = make_env(parse_cfg(["--env=doom_basic", "--experiment=doom_test", *flags]), render_mode="rgb_array")
    try:
        inner = env.unwrapped
        obs, _ = inner.reset(seed=3)
        # a strafe every step (random actions could all be no-ops, and the frames would not change)
        strafe = next(a for a in range(inner.action_space.n) if inner.actions.to_buttons(a)[0] == 1)
        frames = []
        for _ in range(6):
            full = inner.render()
            assert full.ndim == 3 and full.shape[2] == 3 and full.dtype == np.uint8
            assert full.shape[:2] == ((144, 256) if flags[:1] == ["--wide_aspect_ratio=True"] else (120, 160))
            h, w = inner.observation_space.shape[1:]
            expected = cv2.resize(full, (w, h), interpolation=cv2.INTER_NEAREST).transpose(2, 0, 1)
            np.testing.assert_array_equal(obs, expected)
            frames.append(obs)
            obs, _, terminated, truncated, _ = inner.step(strafe)
            assert not (terminated or truncated)
        assert any(not np.array_equal(frames[0], f) for f in frames[1:])
    finally:
        env.close()


def test_observations_are_rgb_as_the_engine_renders_rgb24(no_leftovers):
    """The first observation against the same game (same settings and seed) made by hand in
    VizDoom's channels-last RGB24 format and resized the channels-last way: same pixels, same
    channel order."""
    import cv2
    import vizdoom as vzd

    env = make_env(parse_cfg(["--env=doom_basic", "--experiment=doom_test"]))
    inner = env.unwrapped
    try:
        obs, _ = inner.reset(seed=5)
        game = inner._create_game()  # the env's settings and seed
        game.set_screen_format(vzd.ScreenFormat.RGB24)
        game.init()
        try:
            full = game.get_state().screen_buffer
        finally:
            game.close()
        assert full.shape == (120, 160, 3)
        expected = cv2.resize(full, (128, 72), interpolation=cv2.INTER_NEAREST).transpose(2, 0, 1)
        np.testing.assert_array_equal(obs, expected)
        assert len({int(obs[c].sum()) for c in range(3)}) == 3  # the channels differ: order matters
    finally:
        env.close()


def test_a_game_leaves_no_settings_file_in_the_working_directory(tmp_path, monkeypatch, no_leftovers):
    """VizDoom writes `_vizdoom.ini` where its engine runs; surge's launcher runs it in its own
    folder."""
    from surge.envs.doom.engine_launcher import launcher_path

    monkeypatch.chdir(tmp_path)
    kept = launcher_path().parent / "_vizdoom.ini"
    kept.unlink(missing_ok=True)
    env = doom_env("doom_basic")
    run_random(env, 5)
    env.close()
    assert list(tmp_path.iterdir()) == []
    assert kept.is_file()  # the engine did write its settings, there
