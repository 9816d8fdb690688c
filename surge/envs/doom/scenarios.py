"""The Doom scenarios of the `doom_` family: which map, buttons, game variables and reward.

Every scenario starts from a `.cfg` that ships with the `vizdoom` package (its `scenarios/`
folder), then surge sets what Sample Factory's own copy of that scenario sets differently: the
buttons (from the action heads), the game variables, and where noted the skill, living reward,
death penalty and timeout. Five of Sample Factory's maps do not ship with vizdoom (battle.wad,
battle2.wad, ssl2.wad, dwango5.wad, freedm.wad): the seven scenarios on them name Sample
Factory's `.cfg` in `sf_cfg` and play it once `surge doom-scenarios install` has put it in the
data folder (`sf_maps.playable`); until then they play the closest vizdoom map and say how it
differs in `differs`. `--doom_scenario_path=/path/to/file.cfg|.wad` loads any other (a `.cfg`
replaces the base config, a `.wad` replaces only the map file).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from surge.envs.doom import actions as A
from surge.envs.doom.reward_shaping import (
    REWARD_SHAPING_BATTLE,
    REWARD_SHAPING_DEATHMATCH_V0,
    REWARD_SHAPING_DEATHMATCH_V1,
    REWARD_SHAPING_GATHERING,
)

#: game variables the measurements vector and the combat reward shaping read
COMBAT_VARIABLES: tuple[str, ...] = (
    "SELECTED_WEAPON",
    "SELECTED_WEAPON_AMMO",
    "HEALTH",
    "ARMOR",
    "KILLCOUNT",
    "ATTACK_READY",
    "DEAD",
    "FRAGCOUNT",
    "DEATHCOUNT",
    "HITCOUNT",
    "DAMAGECOUNT",
    *(f"WEAPON{i}" for i in range(8)),
    *(f"AMMO{i}" for i in range(8)),
    "PLAYER_NUMBER",
    "PLAYER_COUNT",
    *(f"PLAYER{i}_FRAGCOUNT" for i in range(1, 9)),
)


@dataclass(frozen=True)
class DoomScenario:
    """One `doom_` env.

    Attributes:
        name: the env name (`doom_basic`).
        cfg: the base `.cfg`, in vizdoom's scenarios folder (or in `cfg_folder`).
        heads: the action heads (`surge.envs.doom.actions`).
        variables: game variables read each step (into `info`, the measurements and shaping).
        reward_scaling: multiplies the reward the agent trains on (not the reported return).
        measurements: add the measurements vector (obs becomes `Dict(obs, measurements)`).
        reward_shaping: the default shaping scheme (`surge.envs.doom.reward_shaping`), or None.
        skill / living_reward / death_penalty / episode_timeout_tics / doom_map: None keeps the cfg's.
        num_agents: learning agents in one match (> 1: a multi-agent env, one game per agent).
        num_bots: built-in bots added by the host at every reset.
        respawn_delay: seconds a dead player waits (multiplayer).
        timelimit_minutes: match length (multiplayer).
        differs: how this differs from Sample Factory's scenario of the same name.
        sf_cfg: Sample Factory's `.cfg` of this scenario where it is not vizdoom's own (its
            `DOOM_ENVS` in sf_examples/vizdoom/doom/doom_utils.py), played once installed.
        sf_overrides: fields replaced when playing `sf_cfg` (what the substitute changed).
        cfg_folder: the folder of `cfg`; "" for vizdoom's scenarios folder (`sf_maps.playable`
            sets the install folder).
    """

    name: str
    cfg: str
    heads: tuple
    variables: tuple[str, ...] = ("HEALTH",)
    reward_scaling: float = 1.0
    measurements: bool = False
    reward_shaping: dict | None = None
    skill: int | None = None
    living_reward: float | None = None
    death_penalty: float | None = None
    episode_timeout_tics: int | None = None
    doom_map: str | None = None
    num_agents: int = 1
    num_bots: int = 0
    respawn_delay: int = 0
    timelimit_minutes: float = 4.0
    differs: str = ""
    render_hud: bool = True
    extra: dict = field(default_factory=dict)
    sf_cfg: str = ""
    sf_overrides: dict = field(default_factory=dict)
    cfg_folder: str = ""

    @property
    def multiplayer(self) -> bool:
        """A network game (host, and joins for agents 1..n-1): several agents or any bots."""
        return self.num_agents > 1 or self.num_bots > 0


_BENCH_BUTTONS = A.ButtonHead(
    ("MOVE_FORWARD", "MOVE_BACKWARD", "MOVE_RIGHT", "MOVE_LEFT", "TURN_RIGHT", "TURN_LEFT", "ATTACK", "SPEED")
)
_ARENA = "deathmatch.cfg"  # vizdoom's single-player arena: monsters, weapons, ammo, health, armour
_ARENA_NOTE = (
    "Sample Factory's battle.wad (a maze with respawning monsters) does not ship with vizdoom; "
    "this uses vizdoom's deathmatch.wad arena (monsters, weapons, ammo and medkits; reward +1 per "
    "kill through the shaping's KILLCOUNT term). `surge doom-scenarios install` gets the original."
)
#: what a scenario on Sample Factory's own map still does differently (`DoomScenario.differs`)
_SF_MAP_NOTE = (
    "Sample Factory's own .cfg and map (surge doom-scenarios install); surge sets the buttons and "
    "game variables itself (its measurements and shaping read more variables than the cfg lists)."
)


def _health_gathering(name: str, cfg: str) -> DoomScenario:
    """Sample Factory's gathering settings: 4 movement buttons, +1 per medkit, living reward 0.01,
    no death penalty, 2100 tics, no HUD."""
    return DoomScenario(
        name,
        cfg,
        (A.ButtonHead(("TURN_LEFT", "TURN_RIGHT", "MOVE_FORWARD", "MOVE_BACKWARD")),),
        reward_shaping=REWARD_SHAPING_GATHERING,
        render_hud=False,
        living_reward=0.01,
        death_penalty=0.0,
        episode_timeout_tics=2100,
    )


SCENARIOS: dict[str, DoomScenario] = {
    s.name: s
    for s in [
        DoomScenario(
            "doom_basic",
            "basic.cfg",
            (A.ButtonHead(("MOVE_LEFT", "MOVE_RIGHT", "ATTACK")),),
            variables=("AMMO2",),
            reward_scaling=0.01,
            differs="Same map and rules; vizdoom's cfg renders decals and no HUD (SF: HUD on).",
        ),
        DoomScenario(
            "doom_my_way_home",
            "my_way_home.cfg",
            A.basic_navigation(),
            living_reward=-0.0001,
            render_hud=False,
        ),
        DoomScenario("doom_deadly_corridor", "deadly_corridor.cfg", A.extended(), reward_scaling=0.01),
        DoomScenario("doom_defend_the_center", "defend_the_center.cfg", A.turn_and_attack()),
        DoomScenario("doom_defend_the_line", "defend_the_line.cfg", A.turn_and_attack()),
        _health_gathering("doom_health_gathering", "health_gathering.cfg"),
        _health_gathering("doom_health_gathering_supreme", "health_gathering_supreme.cfg"),
        DoomScenario(
            "doom_battle",
            _ARENA,
            A.discretized_no_weapons(),
            variables=COMBAT_VARIABLES,
            measurements=True,
            reward_shaping=REWARD_SHAPING_BATTLE,
            skill=2,
            episode_timeout_tics=2100,
            differs=_ARENA_NOTE,
            sf_cfg="battle_continuous_turning.cfg",  # skill 2, 2100 tics, battle.wad
            sf_overrides={"differs": _SF_MAP_NOTE},
        ),
        DoomScenario(
            "doom_battle2",
            _ARENA,
            A.discretized_no_weapons(),
            variables=COMBAT_VARIABLES,
            measurements=True,
            reward_shaping=REWARD_SHAPING_BATTLE,
            skill=4,
            episode_timeout_tics=2100,
            differs="Sample Factory's battle2.wad (a larger, harder maze) does not ship with vizdoom; this "
            "is doom_battle's arena at skill 4 (monsters deal more damage). `surge doom-scenarios "
            "install` gets the original.",
            sf_cfg="battle2_continuous_turning.cfg",  # battle2.wad at the cfg's skill, 2
            sf_overrides={"skill": None, "differs": _SF_MAP_NOTE},
        ),
        DoomScenario(
            "doom_benchmark",
            _ARENA,
            (_BENCH_BUTTONS,),
            skill=2,
            episode_timeout_tics=2100,
            differs="doom_battle's map with a flat Discrete(9) action space and no measurements, as Sample "
            "Factory's benchmark env; the arena replaces battle.wad (see doom_battle). For a like-for-like "
            "throughput comparison install Sample Factory's battle.cfg (surge doom-scenarios install).",
            sf_cfg="battle.cfg",  # battle.wad with 8 buttons, skill 2, 2100 tics
            sf_overrides={"differs": _SF_MAP_NOTE},
        ),
        DoomScenario(
            "doom_duel_bots",
            "multi_duel.cfg",
            A.full_discretized(with_use=True),
            variables=COMBAT_VARIABLES,
            measurements=True,
            reward_shaping=REWARD_SHAPING_DEATHMATCH_V0,
            num_bots=1,
            respawn_delay=2,
            death_penalty=0.0,
            differs="Sample Factory's ssl2.wad does not ship with vizdoom; this uses vizdoom's multi_duel.wad "
            "(a small duel map) with one bot. `surge doom-scenarios install` gets the original.",
            sf_cfg="ssl2.cfg",
            sf_overrides={"differs": _SF_MAP_NOTE},
        ),
        DoomScenario(
            "doom_deathmatch_bots",
            "multi.cfg",
            A.full_discretized(),
            variables=COMBAT_VARIABLES,
            measurements=True,
            reward_shaping=REWARD_SHAPING_DEATHMATCH_V0,
            num_bots=7,
            death_penalty=0.0,
            differs="Sample Factory's dwango5.wad does not ship with vizdoom; this uses vizdoom's "
            "multi_deathmatch.wad with 7 bots. `surge doom-scenarios install` gets the original.",
            sf_cfg="dwango5_dm_continuous_weap.cfg",
            sf_overrides={"differs": _SF_MAP_NOTE},
        ),
        DoomScenario(
            "doom_duel",
            "multi_duel.cfg",
            A.full_discretized(with_use=True),
            variables=COMBAT_VARIABLES,
            measurements=True,
            reward_shaping=REWARD_SHAPING_DEATHMATCH_V1,
            num_agents=2,
            respawn_delay=2,
            death_penalty=0.0,
            differs="Two learning agents on vizdoom's multi_duel.wad instead of ssl2.wad.",
            sf_cfg="ssl2.cfg",
            sf_overrides={"differs": _SF_MAP_NOTE},
        ),
        DoomScenario(
            "doom_deathmatch_full",
            "multi.cfg",
            A.full_discretized(with_use=True),
            variables=COMBAT_VARIABLES,
            measurements=True,
            reward_shaping=REWARD_SHAPING_DEATHMATCH_V1,
            num_agents=4,
            num_bots=4,
            respawn_delay=2,
            death_penalty=0.0,
            differs="Four learning agents and four bots on vizdoom's multi_deathmatch.wad instead of freedm.wad.",
            sf_cfg="freedm.cfg",
            sf_overrides={"differs": _SF_MAP_NOTE},
        ),
    ]
}
