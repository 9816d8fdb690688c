"""The `pettingzoo_` family (issue 19, item 7): AEC rewards reach each agent as PettingZoo's own
`last()` reports them, only the agent to move is active, agents of a Parallel env may appear and
disappear (fixed slots, inactive when absent) with their own terminated/truncated."""

from types import SimpleNamespace

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("pettingzoo")

from pettingzoo import ParallelEnv  # noqa: E402

from surge.envs.action_masks import sample_legal  # noqa: E402
from surge.envs.pettingzoo_family import PettingZooAsMultiAgent  # noqa: E402
from surge.envs.registry import make_env  # noqa: E402
from surge.errors import ConfigError  # noqa: E402


def _env(name, **kw):
    return make_env(SimpleNamespace(env=name, env_wrappers=[], batched_sampling=False, **kw))


def _reference_returns(actions_per_game):
    """Per game, each agent's return as PettingZoo's own loop sees it: the rewards `last()` gives
    each agent at its turns (and after the game ended), summed; played with the same moves."""
    from pettingzoo.classic import connect_four_v3

    env = connect_four_v3.env()
    out = []
    for moves in actions_per_game:
        env.reset()
        ret = dict.fromkeys(env.possible_agents, 0.0)
        it = iter(moves)
        for agent in env.agent_iter():
            _, reward, term, trunc, _ = env.last()
            ret[agent] += reward
            env.step(None if term or trunc else next(it))
        out.append([ret[a] for a in env.possible_agents])
    return out


def test_aec_rewards_reach_each_agent_as_last_reports_them():
    env = _env("pettingzoo_classic.connect_four_v3")
    assert env.num_agents == 2 and env.action_space == gym.spaces.Discrete(7)
    rng = np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    games, moves, returns, totals = [], [], [], np.zeros(2)
    turn = 0
    while len(games) < 30:
        mover = turn % 2
        assert obs[mover]["action_mask"].any()
        legal = np.flatnonzero(obs[mover]["action_mask"])
        a = int(rng.choice(legal))
        actions = [a, a]
        obs, rew, term, trunc, infos = env.step(actions)
        moves.append(a)
        assert [i["is_active"] for i in infos] == [mover == 0, mover == 1]  # only the mover acts
        totals += rew
        turn += 1
        if any(term) or any(trunc):
            assert term == [True, True] and not any(trunc)  # both end at the last move, kept apart
            assert [i["episode"]["r"] for i in infos] == list(totals)
            games.append(moves)
            returns.append(list(totals))
            moves, totals, turn = [], np.zeros(2), 0
    assert returns == _reference_returns(games)
    assert any(r == [1.0, -1.0] for r in returns) and any(r == [-1.0, 1.0] for r in returns)


def test_the_loser_gets_its_reward_at_the_winners_move():
    env = _env("pettingzoo_classic.connect_four_v3")
    env.reset(seed=0)
    for move in [0, 1, 0, 1, 0, 1]:
        _, rew, term, _, _ = env.step([move, move])
        assert rew == [0.0, 0.0] and term == [False, False]
    obs, rew, term, trunc, infos = env.step([0, 0])  # player_0's fourth in column 0
    assert rew == [1.0, -1.0] and term == [True, True] and trunc == [False, False]
    assert infos[1]["is_active"] is False and infos[1]["episode"] == {"r": -1.0, "l": 7}
    assert not obs[0]["observation"].any()  # auto-reset: the next game's empty board
    # the agent not to move gets a mask that allows every action (its action is ignored)
    assert obs[0]["action_mask"].all() and obs[1]["action_mask"].all()


class _Spawning(ParallelEnv):
    """3 possible agents: a and b from the start, c spawns at step 2; a is terminated at step 3,
    every agent left is truncated at step 5. Rewards: 1 per step per present agent, +10 to a when it ends."""

    metadata = {"name": "spawning_v0"}

    def __init__(self):
        self.possible_agents = ["a", "b", "c"]

    def observation_space(self, agent):
        return gym.spaces.Box(-10, 10, (2,), np.float32)

    def action_space(self, agent):
        return gym.spaces.Discrete(2)

    def _obs(self):
        return {a: np.array([self.t, self.possible_agents.index(a)], np.float32) for a in self.agents}

    def reset(self, seed=None, options=None):
        self.t, self.agents = 0, ["a", "b"]
        return self._obs(), {a: {} for a in self.agents}

    def step(self, actions):
        assert set(actions) == set(self.agents)
        self.t += 1
        rew = {a: 1.0 + (10.0 if a == "a" and self.t == 3 else 0.0) for a in self.agents}
        term = {a: a == "a" and self.t == 3 for a in self.agents}
        trunc = {a: self.t == 5 for a in self.agents}
        infos = {a: {} for a in self.agents}
        self.agents = [a for a in self.agents if not (term[a] or trunc[a])]
        if self.t == 2:
            self.agents.append("c")
        return self._obs(), rew, term, trunc, infos


def test_parallel_agents_appear_and_disappear_in_fixed_slots():
    env = PettingZooAsMultiAgent(_Spawning())
    assert env.num_agents == 3
    obs, _ = env.reset(seed=0)
    assert obs[2].tolist() == [0.0, 0.0]  # c is absent: zeros
    seen = []
    for _ in range(10):
        obs, rew, term, trunc, infos = env.step([0, 1, 0])
        seen.append(([i["is_active"] for i in infos], rew, term, trunc, [i.get("episode") for i in infos]))
    active = [s[0] for s in seen]
    assert active[:5] == [
        [True, True, False],
        [True, True, False],
        [True, True, True],
        [False, True, True],
        [False, True, True],
    ]
    assert seen[2][2] == [True, False, False] and seen[2][4][0] == {"r": 13.0, "l": 3}  # a terminated once
    assert seen[4][3] == [False, True, True] and seen[4][2] == [
        False,
        False,
        False,
    ]  # b, c truncated, not terminated
    assert seen[4][4][1] == {"r": 5.0, "l": 5} and seen[4][4][2] == {"r": 3.0, "l": 3}
    assert (
        seen[3][1] == [0.0, 1.0, 1.0] and sum(s[2][0] for s in seen[3:5]) == 0
    )  # a: no reward, no second end
    assert active[5] == [True, True, False]  # the next episode (auto-reset after step 5)


def test_knights_archers_zombies_agents_die_and_pistonball_is_channels_first():
    env = _env("pettingzoo_butterfly.knights_archers_zombies_v11")
    env.reset(seed=1)
    ends = np.zeros(env.num_agents)
    for _ in range(400):
        _, _, term, trunc, infos = env.step([env.action_space.sample() for _ in range(env.num_agents)])
        ends += np.array(term) | np.array(trunc)
    assert ends.sum() > 0
    env = _env("pettingzoo_butterfly.pistonball_v6")
    assert env.observation_space.shape == (3, 457, 120)
    obs, _ = env.reset(seed=0)
    assert obs[0].shape == (3, 457, 120)


def test_unknown_module_and_bad_kwargs_are_refused():
    with pytest.raises(ConfigError, match="no env module"):
        _env("pettingzoo_classic.connect_five_v3")
    from surge.envs.pettingzoo_family import PettingZooParams

    with pytest.raises(ConfigError, match="pettingzoo_kwargs"):
        PettingZooParams(pettingzoo_kwargs="[1]").validate()
    with pytest.raises(ConfigError, match="pettingzoo_api"):
        PettingZooParams(pettingzoo_api="both").validate()


def test_random_legal_play_never_breaks_the_rules():
    env = _env("pettingzoo_classic.tictactoe_v3")
    obs, _ = env.reset(seed=0)
    for _ in range(500):
        obs, *_ = env.step([sample_legal(env.action_space, o["action_mask"]) for o in obs])


@pytest.mark.slow  # 300 steps through the checker: ~5 s on a busy machine
def test_check_env_understands_pettingzoo_and_keeps_to_legal_moves():
    from pettingzoo.utils.env_logger import EnvLogger

    from surge.app.check_env import check_env

    EnvLogger.flush()
    notes: list[str] = []
    check_env("pettingzoo_classic.connect_four_v3", num_steps=300, notes=notes)
    assert not any("Illegal move" in m for m in EnvLogger.mqueue), EnvLogger.mqueue  # PettingZoo's referee
    assert any("AEC" in n and "player_0, player_1" in n for n in notes)
    mask_note = next(n for n in notes if "action masks" in n)
    assert "7 entries for Discrete(7)" in mask_note and "min " in mask_note


class _KeepsTheDead(_Spawning):
    """The same, but `a` stays in `agents` after it terminated (some Parallel envs do)."""

    def step(self, actions):
        before = list(self.agents)
        obs, rew, term, trunc, infos = super().step(actions)
        if "a" in before and "a" not in self.agents and not trunc["a"]:
            self.agents.insert(0, "a")
            obs = self._obs()
        return obs, rew, term, trunc, infos


def test_an_agent_kept_after_it_ended_stays_inactive_and_ends_once():
    env = PettingZooAsMultiAgent(_KeepsTheDead())
    env.reset(seed=0)
    ends, active_a = 0, []
    for _ in range(5):
        _, _, term, trunc, infos = env.step([0, 0, 0])
        ends += term[0] or trunc[0]
        active_a.append(infos[0]["is_active"])
    assert ends == 1 and active_a == [True, True, True, False, False]


def test_an_argument_the_env_does_not_take_is_refused_naming_the_flag():
    from surge.app.resolve import parse_cfg
    from surge.runtime.components import env_info

    cfg = parse_cfg(["--env=pettingzoo_classic.tictactoe_v3", '--pettingzoo_kwargs={"n_pistons": 3}'])
    with pytest.raises(ConfigError, match="pettingzoo_kwargs"):
        env_info(cfg)
