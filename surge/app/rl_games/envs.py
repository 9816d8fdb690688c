"""rl_games' env names (`params.config.env_name` with its `env_config`) as surge envs.

rl_games 1.6.5 makes its envs in `rl_games/common/env_configurations.py` (`configurations`): a
gymnasium id it registers by name (`CartPole-v1`, `LunarLander-v2`, `PongNoFrameskip-v4`), or a
creator whose `env_config` names the task (`openai_gym` -> `create_default_gym_env`, `envpool` ->
`rl_games/envs/envpool.py`, `atari_gym`, `brax`, `smac`...). `env_from_rl_games` maps each to one
of surge's env families: a gymnasium id, `atari_<game>`, `envpool_<game>` or `mujoco_<task>`, with
the family flags that reproduce rl_games' wrappers; anything else is refused with its key and why.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from surge.errors import ConfigError


class RlGamesKeyError(ConfigError):
    """A key of an rl_games file that surge refuses: `field` is its full path in the file
    (`params.config.central_value_config.network.rnn.layer_norm`), the message says why."""

    def __init__(self, field: str, problem: str, fix: str = ""):
        super().__init__(field, problem, fix)
        self.args = (
            f"rl_games key {self.field}: {self.problem}" + (f" Fix: {self.fix}" if self.fix else ""),
        )


#: rl_games' ids that gymnasium 1.x renamed (the task is the same; the note says so)
GYM_RENAMED = {
    "LunarLander-v2": "LunarLander-v3",
    "LunarLanderContinuous-v2": "LunarLanderContinuous-v3",
    "Pendulum-v0": "Pendulum-v1",
    "BipedalWalkerHardcore-v2": "BipedalWalkerHardcore-v3",
}

#: gymnasium ids rl_games makes unwrapped (`configurations` with a bare `make(name)`)
GYM_PLAIN = {
    "CartPole-v1",
    "MountainCarContinuous-v0",
    "MountainCar-v0",
    "Acrobot-v1",
    "Pendulum-v1",
    "LunarLander-v3",
    "LunarLanderContinuous-v3",
    "BipedalWalker-v3",
    "BipedalWalkerHardcore-v3",
}

#: MuJoCo task (gymnasium id without version) -> surge's `mujoco_` name (gymnasium's v5 task)
MUJOCO_TASKS = {
    "HalfCheetah": "mujoco_halfcheetah",
    "Hopper": "mujoco_hopper",
    "Walker2d": "mujoco_walker",
    "Ant": "mujoco_ant",
    "Humanoid": "mujoco_humanoid",
    "Swimmer": "mujoco_swimmer",
    "Reacher": "mujoco_reacher",
    "Pusher": "mujoco_pusher",
    "InvertedDoublePendulum": "mujoco_inverteddoublependulum",
    "InvertedPendulum": "mujoco_invertedpendulum",
}

#: rl_games' velocity-masked envs -> (gymnasium id, surge's wrapper of rl_games' MaskVelocityWrapper)
MASKED_VELOCITY = {
    "CartPoleMaskedVelocity-v1": ("CartPole-v1", "surge.envs.masked_velocity:MaskCartPoleVelocity"),
}

#: rl_games env names that surge cannot run, with why (`docs/rl_games.md`)
NOT_HERE = {
    "maniskill": "ManiSkill is not installed here and surge has no ManiSkill family",
    "smac": "SMAC needs StarCraft II, which is not installed here; surge has no SMAC family",
    "smac_v2": "SMACv2 needs StarCraft II, which is not installed here; surge has no SMAC family",
    "smac_cnn": "SMAC needs StarCraft II, which is not installed here; surge has no SMAC family",
    "sc2wrapped": "SMAC needs StarCraft II, which is not installed here; surge has no SMAC family",
    "cule": "CuLE (CUDA Atari) is not installed here; use the atari_ or envpool_ family",
    "dm_control": "dm_control (through dm2gym) is not installed here; surge has no dm_control family",
    "slime_gym": "slimevolleygym is not installed here",
    "myo_gym": "MyoSuite is not installed here",
    "diambra": "DIAMBRA Arena is not installed here",
    "openai_robot_gym": "gymnasium-robotics goal envs are not installed here",
    "CarRacing-v0": "CarRacing-v0 with rl_games' make_car_racing wrapper is not a surge env",
    "connect4_env": "rl_games 1.6.5 registers no 'connect4_env' (rl_games/common/env_configurations.py has "
    "none, and the wheel ships no Connect Four env), so rl_games itself cannot run this file; surge's "
    "self-play Connect Four is the pettingzoo_ family's `--env=pettingzoo_classic.connect_four_v3`",
    "MountainCar-v0": "",
}
for _n in (
    "RoboschoolAnt-v1",
    "RoboschoolHalfCheetah-v1",
    "RoboschoolHumanoid-v1",
    "RoboschoolHumanoidFlagrun-v1",
):
    NOT_HERE[_n] = "Roboschool is not installed here (and no longer maintained)"
for _n in ("SuperMarioBros-v1", "SuperMarioBrosRandomStages-v1", "SuperMarioBrosRandomStage1-v1"):
    NOT_HERE[_n] = "gym_super_mario_bros is not installed here"
for _n in ("FlexAnt", "FlexHumanoid", "FlexHumanoidHard"):
    NOT_HERE[_n] = "NVIDIA Flex / Isaac Gym is not on PyPI"
for _n in (
    "QuadruppedWalk-v1",
    "ReacherPyBulletEnv-v0",
    "BipedalWalkerCnn-v3",
    "BipedalWalkerHardcoreCnn-v3",
):
    NOT_HERE[_n] = "this rl_games env needs packages or wrappers surge does not have"
del NOT_HERE["MountainCar-v0"]


@dataclass
class EnvChoice:
    """What an rl_games env becomes: surge's `env`, the family flags that reproduce rl_games'
    wrappers (`flags`), the frames per env step (`frameskip`, for rl_games' epoch and frame
    budgets), whether it is a batched EnvPool family, and notes for the log."""

    env: str
    flags: dict[str, Any] = field(default_factory=dict)
    frameskip: int = 1
    batched: bool = False
    notes: list[str] = field(default_factory=list)
    #: False where rl_games' creator takes no env_config (its `lambda **kwargs: make(name)`): the
    #: block's keys then have no effect in rl_games either, and are reported as such
    reads_env_config: bool = True
    #: all of num_actors in one worker's batched env (`env_agents` = num_actors): a family whose
    #: whole batch is one jitted call (brax_)
    one_worker: bool = False


def _atari_game(name: str) -> str | None:
    """`PongNoFrameskip-v4` / `ALE/Pong-v5` / `Pong-v5` -> `pong`; None when not an Atari id."""
    m = re.fullmatch(r"(?:ALE/)?([A-Za-z]+?)(NoFrameskip)?-v([45])", name)
    if m is None:
        return None
    # only for an Atari id: a file of another family does not load the Atari module
    from surge.envs.atari import ATARI_GAMES

    game = re.sub(r"(?<!^)(?=[A-Z])", "_", m.group(1)).lower()
    return game if game in ATARI_GAMES else None


def _mujoco(task_id: str) -> str | None:
    m = re.fullmatch(r"([A-Za-z0-9]+)-v(\d)", task_id)
    return MUJOCO_TASKS.get(m.group(1)) if m else None


def env_from_rl_games(
    env_name: Any,
    env_config: dict[str, Any],
    take: Callable[[str, Any], Any],
    ignore: Callable[[str, str], None],
) -> EnvChoice:
    """The surge env of rl_games' `config.env_name` and its `config.env_config` block.

    Args:
        env_name: `params.config.env_name`.
        env_config: the `params.config.env_config` mapping ({} when absent).
        take: `take(key, default)` reads `env_config[key]` and marks it handled.
        ignore: `ignore(key, reason)` marks `env_config[key]` handled, reporting why it has no effect.

    Raises:
        ConfigError: an env surge cannot run here, naming `params.config.env_name` (or the
            `env_config` key) and why.
    """
    if not isinstance(env_name, str):
        raise RlGamesKeyError("params.config.env_name", f"{env_name!r} is not an env name.", "")
    if env_name in NOT_HERE:
        raise RlGamesKeyError("params.config.env_name", f"{env_name!r}: {NOT_HERE[env_name]}.", "")
    if env_name in MASKED_VELOCITY:
        # rl_games' creator: `lambda **kwargs: MaskVelocityWrapper(make('CartPole-v1'), 'CartPole-v1')`
        task, wrapper = MASKED_VELOCITY[env_name]
        return EnvChoice(task, flags={"env_wrappers": [wrapper]}, reads_env_config=False)
    if env_name == "minigrid_env":
        return _minigrid(take)
    if env_name == "test_env":
        return _test_env(take)
    if env_name == "multiwalker_env":
        raise RlGamesKeyError(
            "params.config.env_name",
            "'multiwalker_env' is rl_games' own MultiWalker (rl_games/envs/multiwalker.py): PettingZoo's "
            "multiwalker_v6 with additions surge's pettingzoo_ family does not make (env_config's "
            "central_value: a state of the 3 walkers' observations; apply_agent_ids: one-hot agent ids "
            "in each observation), so neither the env nor the file's central_value_config translates.",
            "train the same task as surge's PettingZoo env, 3 walkers sharing one policy, without the "
            "state: `surge train --env=pettingzoo_sisl.multiwalker_v9`.",
        )
    if env_name in ("openai_gym",):
        name = take("name", None)
        if not isinstance(name, str):
            raise RlGamesKeyError(
                "params.config.env_config.name", "openai_gym needs the gymnasium id in name.", ""
            )
        if take("procgen", False):
            raise RlGamesKeyError("params.config.env_config.procgen", "procgen is not installed here.", "")
        frames = take("frames", 1)
        if frames != 1:
            raise RlGamesKeyError(
                "params.config.env_config.frames",
                f"rl_games stacks {frames} vector observations (its FrameStack); surge has no such wrapper.",
                "remove it or set frames: 1.",
            )
        if name == "TestAsymmetricEnv-v0":
            raise RlGamesKeyError(
                "params.config.env_config.name",
                "'TestAsymmetricEnv-v0' is rl_games' TestAsymmetricCritic (rl_games/envs/test/"
                "test_asymmetric_env.py): the env of wrapped_env_name with a {obs, state} observation "
                "for its central value; surge has no such wrapper, and the class makes gym's "
                "LunarLander-v2, which gymnasium 1.x no longer has.",
                "",
            )
        if take("limit_steps", False):
            raise RlGamesKeyError(
                "params.config.env_config.limit_steps",
                "rl_games' LimitStepsWrapper is not a surge wrapper.",
                "",
            )
        return _gym_id(name, "params.config.env_config.name")
    if env_name == "envpool":
        return _envpool(take, ignore)
    if env_name == "brax":
        return _brax(take)
    if env_name == "atari_gym":
        name = take("name", None)
        game = _atari_game(str(name))
        if game is None:
            raise RlGamesKeyError("params.config.env_config.name", f"{name!r} is not an Atari id.", "")
        if take("wrap_impala", False):
            raise RlGamesKeyError(
                "params.config.env_config.wrap_impala", "rl_games' IMPALA wrapper is not a surge wrapper.", ""
            )
        return _atari(game, str(name), take("skip", 4), take("episode_life", True))
    game = _atari_game(env_name)
    if game is not None:
        choice = _atari(game, env_name, 4, True)
        choice.reads_env_config = False
        return choice
    if env_name in GYM_RENAMED or env_name in GYM_PLAIN or _mujoco(env_name):
        choice = _gym_id(env_name, "params.config.env_name")
        choice.reads_env_config = env_name.startswith("BipedalWalker")  # create_env(name, **kwargs)
        if choice.reads_env_config and take("steps_limit", None) is not None:
            raise RlGamesKeyError(
                "params.config.env_config.steps_limit",
                "rl_games' create_env wraps the env in its TimeLimit(steps_limit); surge makes the "
                "gymnasium id with gymnasium's own limit (BipedalWalker: 1600 steps, Hardcore: 2000) "
                "and has no flag for another.",
                "remove it (gymnasium's limit then applies).",
            )
        return choice
    raise RlGamesKeyError(
        "params.config.env_name",
        f"{env_name!r} is not an env rl_games 1.6.5 registers, or not one surge maps.",
        "see docs/rl_games.md for the env names that run here.",
    )


def _minigrid(take: Callable[[str, Any], Any]) -> EnvChoice:
    """rl_games' `create_minigrid_env` (`rl_games/common/env_configurations.py`): gym_minigrid's
    (minigrid's old name) task `name`, with StateBonus / ActionBonus when asked, then the whole grid
    as pixels (`rgb_fully_obs`), or the agent's view of `view_size` cells as about 84x84 pixels
    (`rgb_partial_obs`, default True), then the image only. surge makes the same task through
    gymnasium (`minigrid:<name>`) with the view as a named wrapper (`surge.envs.minigrid_views`)."""
    from surge.envs.minigrid_views import VIEW_SIZES

    name = take("name", None)
    if not isinstance(name, str):
        raise RlGamesKeyError("params.config.env_config.name", "minigrid_env needs the task id in name.", "")
    for bonus in ("state_bonus", "action_bonus"):
        if truthy_env(take(bonus, False)):
            raise RlGamesKeyError(
                f"params.config.env_config.{bonus}",
                "minigrid's exploration bonus wrapper is not a surge wrapper.",
                f"remove it or set {bonus}: False.",
            )
    view = take("view_size", 3)
    if truthy_env(take("rgb_fully_obs", False)):
        wrapper = "FullPixelView"
    elif truthy_env(take("rgb_partial_obs", True)):
        if view not in VIEW_SIZES:
            raise RlGamesKeyError(
                "params.config.env_config.view_size",
                f"{view!r}: surge.envs.minigrid_views has the views of {list(VIEW_SIZES)} cells.",
                "",
            )
        wrapper = f"PixelView{view}"
    else:
        wrapper = "SymbolicView"
    # minigrid's images are height-width-channel; rl_games' cnn permutes them (permute_input),
    # surge's conv encoders take them channels first
    wrappers = [f"surge.envs.minigrid_views:{wrapper}", "surge.envs.wrappers:ChannelsFirst"]
    return EnvChoice(f"minigrid:{name}", flags={"env_wrappers": wrappers})


def truthy_env(v: Any) -> bool:
    """rl_games' `kwargs.pop(key, default)` used in an `if`: Python's truth of the YAML value."""
    return bool(v)


def _gym_id(name: str, key: str) -> EnvChoice:
    notes = []
    if name in GYM_RENAMED:
        notes.append(f"{key}: {name} is {GYM_RENAMED[name]} in gymnasium 1.x (the same task)")
        name = GYM_RENAMED[name]
    mujoco = _mujoco(name)
    if mujoco is not None:
        if not name.endswith("-v5"):
            notes.append(
                f"{key}: {name} runs as surge's {mujoco}, gymnasium's v5 of the task with float32 observations"
            )
        return EnvChoice(mujoco, notes=notes)
    if name in GYM_PLAIN:
        return EnvChoice(name, notes=notes)
    raise RlGamesKeyError(key, f"{name!r} is not a gymnasium id surge maps from rl_games files.", "")


def _atari(game: str, name: str, skip: Any, episode_life: Any) -> EnvChoice:
    """rl_games' `make_atari_deepmind` (`rl_games/common/wrappers.py`): noop reset (30), max-and-skip
    `skip`, episodic life, fire reset, 84x84 grey, 4 frames stacked, no reward clipping (its
    reward_shaper does that), repeat_action_probability 0 for the NoFrameskip-v4 ids."""
    if name.endswith("-v5") and "NoFrameskip" not in name:
        raise RlGamesKeyError(
            "params.config.env_name",
            f"{name!r}: rl_games makes ALE's v5 env with its sticky actions (0.25) and frameskip on top "
            "of its own skip; surge's atari_ family plays NoFrameskip-v4's rules.",
            f"use PongNoFrameskip-v4-style ids (atari_{game}).",
        )
    return EnvChoice(
        f"atari_{game}",
        flags={
            "env_frameskip": int(skip),
            "env_framestack": 4,
            "atari_episodic_life": bool(episode_life),
            "atari_clip_reward": False,
            "atari_noop_max": 30,
        },
        frameskip=int(skip),
    )


def _brax(take: Callable[[str, Any], Any]) -> EnvChoice:
    """rl_games' `BraxEnv` (`rl_games/envs/brax.py`): `envs.create_gym_env(env_name, batch_size=
    num_actors, seed=0, backend='gpu')`, i.e. brax's training wrappers with episode_length 1000 and
    action_repeat 1 (surge's `brax_` defaults); it reads only `env_name` (default 'ant')."""
    # only for a Brax file: the family's module (and its batched wrapper) loads when one is read
    from surge.envs.brax_family import brax_task

    task = take("env_name", "ant")
    try:
        env = "brax_" + str(task)
        brax_task(env)
    except ConfigError as e:
        raise RlGamesKeyError("params.config.env_config.env_name", e.problem, e.fix) from None
    return EnvChoice(
        env,
        batched=True,
        one_worker=True,
        notes=[
            "params.config.env_name: brax runs as surge's brax_ family: all num_actors envs in one "
            "worker's batched env, stepped in one jitted call (env_agents = num_actors); rl_games "
            "passes seed 0 to brax, surge seeds from --seed"
        ],
        reads_env_config=False,
    )


def _envpool(take: Callable[[str, Any], Any], ignore: Callable[[str, str], None]) -> EnvChoice:
    """rl_games' `Envpool` (`rl_games/envs/envpool.py`): `envpool.make(env_name, env_type='gym',
    num_envs=num_actors, **env_config)` with EnvPool's own defaults for what env_config omits."""
    task = take("env_name", None)
    if not isinstance(task, str):
        raise RlGamesKeyError(
            "params.config.env_config.env_name", "envpool needs the task id in env_name.", ""
        )
    ignore("seed", "EnvPool's seed: surge seeds its envs from --seed")
    ignore(
        "has_lives",
        "only how rl_games' observer adds up a game's score over lives; surge's episode statistics "
        "are whole games' scores (game over ends them)",
    )
    game = _atari_game(task)
    if game is not None:
        # EnvPool's Atari defaults: episodic_life False, reward_clip False, noop_max 30, frame_skip 4,
        # stack_num 4, repeat_action_probability 0
        return EnvChoice(
            f"envpool_{game}",
            flags={
                "env_frameskip": int(take("frame_skip", 4)),
                "env_framestack": int(take("stack_num", 4)),
                "atari_episodic_life": bool(take("episodic_life", False)),
                "atari_clip_reward": bool(take("reward_clip", False)),
                "atari_noop_max": int(take("noop_max", 30)),
            },
            frameskip=int(take("frame_skip", 4)),
            batched=True,
        )
    mujoco = _mujoco(task)
    if mujoco is not None:
        return EnvChoice(
            mujoco,
            notes=[
                f"params.config.env_config.env_name: EnvPool's {task} runs as surge's {mujoco} through "
                "gymnasium (surge's envpool_ family is Atari only): the same MuJoCo task, v5, stepped "
                "by surge's workers"
            ],
        )
    from surge.envs.envpool_dmc import DMC_TASK_IDS

    if task in DMC_TASK_IDS:
        return _envpool_dmc(task, take)
    raise RlGamesKeyError(
        "params.config.env_config.env_name",
        f"EnvPool task {task!r}: surge's envpool_ family plays Atari games, envpool_dmc_ EnvPool's "
        "dm_control suite tasks, and EnvPool's MuJoCo tasks run through gymnasium; surge has no family "
        "for EnvPool's other tasks.",
        "",
    )


def _envpool_dmc(task: str, take: Callable[[str, Any], Any]) -> EnvChoice:
    """EnvPool's dm_control task `task` (`CheetahRun-v1`) as surge's `envpool_dmc_<domain>_<task>`:
    rl_games' `Envpool` with `flatten_obs: True` concatenates the dict observation's entries
    (`flatten_dict`), as the family does (in float32)."""
    from surge.envs.envpool_dmc import dmc_env_name

    if not truthy_env(take("flatten_obs", False)):
        raise RlGamesKeyError(
            "params.config.env_config.flatten_obs",
            f"EnvPool's {task} observes a dict of arrays; rl_games' networks take it flattened "
            "(flatten_obs: True), and surge's envpool_dmc_ family always flattens it.",
            "set flatten_obs: True.",
        )
    flags = {}
    steps = take("max_episode_steps", None)
    if steps is not None:
        flags["dmc_max_episode_steps"] = int(steps)
    return EnvChoice(
        dmc_env_name(task),
        flags=flags,
        batched=True,
        notes=[
            f"params.config.env_config.env_name: EnvPool's {task} runs as surge's {dmc_env_name(task)}: "
            "the dict observation flattened to float32 (rl_games keeps float64 until its network); "
            "EnvPool's reset step after an episode's end is not trained on (rl_games trains on it)"
        ],
    )


#: TestRNNEnv's keyword -> the flag of surge's `rl_games_test_rnn` (`surge.envs.rl_games_test_env`)
TEST_RNN_KWARGS = {
    "hide_object": "rnn_env_hide_object",
    "min_dist": "rnn_env_min_dist",
    "max_dist": "rnn_env_max_dist",
    "max_steps": "rnn_env_max_steps",
    "apply_dist_reward": "rnn_env_apply_dist_reward",
    "multi_discrete_space": "rnn_env_multi_discrete_space",
    "use_central_value": "rnn_env_use_central_value",
}


def _test_env(take: Callable[[str, Any], Any]) -> EnvChoice:
    """rl_games' `create_test_env` (`make(name, **env_config)` of `rl_games.envs.test`): its
    `TestRnnEnv-v0` as surge's `rl_games_test_rnn` (rl_games' class under gymnasium's API), each
    keyword a flag. What surge cannot take is refused by name."""
    name = take("name", None)
    if name != "TestRnnEnv-v0":
        raise RlGamesKeyError(
            "params.config.env_config.name",
            f"{name!r}: of rl_games' test envs surge runs TestRnnEnv-v0 only (TestAsymmetricEnv-v0 "
            "wraps another env with rl_games' own asymmetric-critic wrapper, which surge has not got).",
            "",
        )
    refused = {
        "multi_head_value": "a reward and a value per head (a 2-vector); surge's rewards and values are scalars",
        "multi_obs_space": "a dict observation {pos, info} that rl_games' testnet networks read; surge maps "
        "rl_games' actor_critic network only",
        "aux_loss": "an auxiliary-loss target in the observation, for rl_games' testnet_aux_loss network",
    }
    for key, why in refused.items():
        if truthy_env(take(key, False)):
            raise RlGamesKeyError(
                f"params.config.env_config.{key}", f"True: {why}.", f"remove it or set {key}: False."
            )
    flags: dict[str, Any] = {}
    for key, flag in TEST_RNN_KWARGS.items():
        value = take(key, None)
        if value is not None:
            flags[flag] = value
    return EnvChoice(
        "rl_games_test_rnn",
        flags=flags,
        notes=[
            "params.config.env_name: rl_games' TestRnnEnv-v0 runs as surge's rl_games_test_rnn (its class)"
        ],
    )
