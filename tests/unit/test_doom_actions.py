"""Doom action heads and reward shaping: pure logic, no engine."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from surge.envs.doom.actions import ButtonHead, DoomActions, full_discretized, turn_and_attack, turn_delta
from surge.envs.doom.reward_shaping import REWARD_SHAPING_DEATHMATCH_V0, DoomRewardShaping, merge_scheme


def test_single_head_is_discrete_with_noop_first():
    a = DoomActions((ButtonHead(("MOVE_LEFT", "MOVE_RIGHT", "ATTACK")),))
    assert a.space == gym.spaces.Discrete(4)
    assert a.buttons == ("MOVE_LEFT", "MOVE_RIGHT", "ATTACK")
    assert a.to_buttons(0) == [0, 0, 0]
    assert a.to_buttons(3) == [0, 0, 1]
    assert a.to_buttons(np.int64(1)) == [1, 0, 0]


def test_tuple_heads_concatenate_buttons_in_head_order():
    a = DoomActions(turn_and_attack())
    assert a.space == gym.spaces.Tuple((gym.spaces.Discrete(3), gym.spaces.Discrete(2)))
    assert a.buttons == ("TURN_LEFT", "TURN_RIGHT", "ATTACK")
    assert a.to_buttons([2, 1]) == [0, 1, 1]
    assert a.to_buttons(np.array([1, 0])) == [1, 0, 0]
    with pytest.raises(ValueError, match="2 sub-actions"):
        a.to_buttons([1, 0, 1])


def test_discretized_turning_spans_its_range():
    head = turn_delta(21, 12.5)
    table = head.table().ravel()
    assert table[0] == -12.5 and table[-1] == 12.5 and table[10] == 0.0
    a = DoomActions(full_discretized(with_use=True))
    assert a.buttons[-1] == "TURN_LEFT_RIGHT_DELTA"
    assert [s.n for s in a.space.spaces] == [3, 3, 8, 2, 2, 2, 21]
    sample = [0, 0, 0, 0, 0, 0, 20]
    assert a.to_buttons(sample)[-1] == 12.5 and sum(a.to_buttons(sample)[:-1]) == 0


class _ScriptedVariables(gym.Env):
    """Emits a scripted sequence of game variables (to drive the shaping wrapper)."""

    observation_space = gym.spaces.Box(0, 1, (1,))
    action_space = gym.spaces.Discrete(1)

    def __init__(self, script: list[dict]):
        self.script, self.t = script, 0

    def reset(self, *, seed=None, options=None):
        self.t = 0
        return np.zeros(1, np.float32), {"game_variables": dict(self.script[0])}

    def step(self, action):
        self.t += 1
        done = self.t == len(self.script) - 1
        return np.zeros(1, np.float32), 0.0, done, False, {"game_variables": dict(self.script[self.t])}


def _rewards(env: gym.Env, steps: int) -> list[float]:
    env.reset()
    return [env.step(0)[1] for _ in range(steps)]


def test_shaping_rewards_deltas_and_can_be_changed_while_running():
    script = [
        {"HEALTH": 100, "FRAGCOUNT": 0, "DEAD": 0},
        {"HEALTH": 100, "FRAGCOUNT": 0, "DEAD": 0},  # first step: no shaping (respawn guard)
        {"HEALTH": 80, "FRAGCOUNT": 1, "DEAD": 0},  # -20 health, +1 frag
        {"HEALTH": 90, "FRAGCOUNT": 1, "DEAD": 0},  # +10 health
        {"HEALTH": 90, "FRAGCOUNT": 1, "DEAD": 0},
        {"HEALTH": 90, "FRAGCOUNT": 1, "DEAD": 0},  # last step (terminated): no shaping
    ]
    env = DoomRewardShaping(
        _ScriptedVariables(script), {"delta": {"HEALTH": [0.01, -0.02], "FRAGCOUNT": [1.0, -1.0]}}
    )
    r = _rewards(env, 5)
    assert r[0] == 0.0
    assert r[1] == pytest.approx(1.0 - 20 * 0.02)
    assert r[2] == pytest.approx(10 * 0.01)
    assert r[4] == 0.0
    env.set_reward_shaping({"delta": {"FRAGCOUNT": [5.0, 0.0]}})
    r = _rewards(env, 5)
    assert r[1] == pytest.approx(5.0) and r[2] == 0.0
    assert env.get_default_reward_shaping()["delta"]["HEALTH"] == [0.01, -0.02]


def test_increase_event_pays_once_per_pickup_whatever_the_amount():
    script = [{"HEALTH": 50}, {"HEALTH": 50}, {"HEALTH": 75}, {"HEALTH": 70}, {"HEALTH": 71}, {"HEALTH": 71}]
    env = DoomRewardShaping(_ScriptedVariables(script), {"increase_event": {"HEALTH": 1.0}})
    assert _rewards(env, 4) == [0.0, 1.0, 0.0, 1.0]


def test_merge_scheme_overrides_one_level_into_sections():
    merged = merge_scheme(REWARD_SHAPING_DEATHMATCH_V0, {"delta": {"HEALTH": [1, 2]}})
    assert merged["delta"]["HEALTH"] == [1, 2]
    assert merged["delta"]["FRAGCOUNT"] == REWARD_SHAPING_DEATHMATCH_V0["delta"]["FRAGCOUNT"]
    assert REWARD_SHAPING_DEATHMATCH_V0["delta"]["HEALTH"] != [1, 2]  # the default is not modified


def test_continuous_turning_replaces_the_delta_head_with_a_box():
    from surge.envs.doom.actions import discretized_no_weapons, with_continuous_turning

    a = DoomActions(with_continuous_turning(discretized_no_weapons()))
    assert isinstance(a.space, gym.spaces.Tuple)
    assert a.space.spaces[-1] == gym.spaces.Box(-1.0, 1.0, (1,), np.float32)
    row = np.array([1.0, 0.0, 1.0, 0.0, -0.5], np.float32)  # forward, attack, turn half left
    buttons = a.to_buttons(row)
    assert buttons[:2] == [1, 0] and buttons[-1] == pytest.approx(-0.5 * 7.5)
    assert a.to_buttons(np.array([0, 0, 0, 0, 3.0], np.float32))[-1] == pytest.approx(7.5)  # clipped to 1
    with pytest.raises(ValueError, match="no turning-delta head"):
        with_continuous_turning(turn_and_attack())


def test_space_samples_convert_too():
    from surge.envs.doom.actions import full_discretized, with_continuous_turning

    for heads in (full_discretized(), with_continuous_turning(full_discretized())):
        a = DoomActions(heads)
        a.space.seed(0)
        for _ in range(20):
            assert len(a.to_buttons(a.space.sample())) == len(a.buttons)
