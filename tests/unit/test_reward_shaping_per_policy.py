"""Each policy's reward shaping (surge.sampling.shaping): the rollout worker's copy sets a
policy's scheme on an agent's env once per change, single- and multi-agent; PBT copies and perturbs
Doom's scheme as Sample Factory's `_perturb_reward` (the `delta` and `selected_weapon` sections)."""

import pytest

from surge.app.resolve import parse_cfg
from surge.population.pbt import PopulationBasedTraining
from surge.runtime.commands import ReplacePolicy, SetRewardShaping
from surge.sampling.shaping import WorkerShaping, default_reward_shaping


class _SingleAgent:
    def __init__(self):
        self.calls = []

    def get_wrapper_attr(self, name):
        assert name == "set_reward_shaping"
        return lambda scheme: self.calls.append(scheme)


class _MultiAgent:
    def __init__(self):
        self.calls = []

    def set_reward_shaping(self, scheme, agent_idx):
        self.calls.append((scheme, agent_idx))


class _Adapter:  # the rollout worker's single-agent adapter (surge.envs.multi_agent) holds the env
    def __init__(self, env):
        self.env = env


def test_a_worker_sets_each_policys_scheme_once_per_change():
    envs = [_SingleAgent(), _Adapter(_SingleAgent())]
    ws = WorkerShaping(num_agents=1)
    ws.apply(envs, 0, 1, policy_id=3)  # no scheme for policy 3 yet: nothing set
    ws.set(3, {"delta": {"HEALTH": [1.0, -1.0]}})
    ws.apply(envs, 0, 1, 3)
    ws.apply(envs, 0, 1, 3)  # already has it
    assert envs[1].env.calls == [{"delta": {"HEALTH": [1.0, -1.0]}}] and envs[0].calls == []
    ws.set(3, {"delta": {"HEALTH": [2.0, -1.0]}})
    ws.apply(envs, 0, 1, 3)
    assert envs[1].env.calls[-1] == {"delta": {"HEALTH": [2.0, -1.0]}}
    multi = [_MultiAgent(), _MultiAgent()]  # 2 agents per env: agent 3 is env 1's agent 1
    ws2 = WorkerShaping(num_agents=2)
    ws2.set(0, {"x": 1})
    ws2.apply(multi, 7, 3, 0)
    assert multi[1].calls == [({"x": 1}, 1)] and multi[0].calls == []


def _doom_pbt(*flags):
    cfg = parse_cfg(["--env=doom_deathmatch_bots", "--num_policies=3", "--with_pbt=True", "--seed=0", *flags])
    sent = []
    return cfg, PopulationBasedTraining(cfg, sent.append), sent


def test_pbt_perturbs_the_doom_scheme_like_sample_factory():
    cfg, pbt, sent = _doom_pbt("--pbt_mutation_rate=1", "--pbt_perturb_min=2", "--pbt_perturb_max=2")
    default = default_reward_shaping(cfg)
    assert default is not None and pbt.shaping[0] == default  # policy 0 keeps the env's scheme
    for section in ("delta", "selected_weapon"):
        for key, value in pbt.shaping[1][section].items():
            ref = default[section][key]
            pairs = zip(value, ref, strict=True) if isinstance(ref, list) else [(value, ref)]
            for v, r in pairs:  # rate 1, factor 2: each value doubled or halved
                assert v in (pytest.approx(r * 2), pytest.approx(r / 2)), key
    pbt.start(0)
    assert SetRewardShaping(2, pbt.shaping[2]) in sent


def test_a_replaced_policy_takes_the_source_scheme_before_perturbing_it():
    _, pbt, sent = _doom_pbt("--pbt_mutation_rate=0")
    pbt.shaping[1] = {"delta": {"FRAGCOUNT": [5.0, -5.0]}}
    for p, objective in enumerate([10.0, 50.0, 1.0]):
        pbt.objectives[p].append(objective)
    pbt.rng.choice = lambda seq: seq[0]
    pbt.update_policy(2, 0)  # the worst copies policy 1 (mutation rate 0: unchanged)
    assert ReplacePolicy(2, 1) in sent and SetRewardShaping(2, {"delta": {"FRAGCOUNT": [5.0, -5.0]}}) in sent
