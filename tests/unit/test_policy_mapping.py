"""Which policy acts for an agent (`--policy_mapping`): Sample Factory's random draw per env and
episode, one policy per player, one per env, and a user's mapping."""

import random

import pytest

from surge.errors import ConfigError
from surge.sampling.policy_mapping import PolicyMapper, register_policy_mapping


def test_random_mapping_draws_per_env_and_episode_and_repeats_with_the_seed():
    m = PolicyMapper("random", 4, mix_in_one_env=False, seed=1)
    draws = {(env, ep): m.policy_for(env, 0, ep) for env in range(20) for ep in range(5)}
    assert set(draws.values()) == {0, 1, 2, 3}  # every policy gets envs
    # all agents of one env share the env's draw for an episode
    assert all(m.policy_for(env, a, 4) == draws[(env, 4)] for env in range(20) for a in range(3))
    again = PolicyMapper("random", 4, mix_in_one_env=False, seed=1)
    assert {(env, ep): again.policy_for(env, 0, ep) for env in range(20) for ep in range(5)} == draws


def test_mixed_random_mapping_draws_per_agent():
    m = PolicyMapper("random", 2, mix_in_one_env=True, seed=0)
    per_agent = [m.policy_for(0, a, 0) for a in range(64)]
    assert 0 < sum(per_agent) < 64  # agents of one env play different policies


def test_agent_index_and_env_index_mappings_are_fixed():
    by_agent = PolicyMapper("agent_index", 2, False, None)
    by_env = PolicyMapper("env_index", 3, False, None)
    assert [by_agent.policy_for(7, a, ep) for a in range(4) for ep in (0, 9)] == [0, 0, 1, 1, 0, 0, 1, 1]
    assert [by_env.policy_for(e, 1, 3) for e in range(5)] == [0, 1, 2, 0, 1]


def test_a_users_mapping_is_called_and_checked():
    register_policy_mapping("last_agent_learns", lambda env, agent, ep, n, rng: 1 if agent == 1 else 0)
    m = PolicyMapper("last_agent_learns", 2, False, None)
    assert [m.policy_for(0, a, 0) for a in (0, 1)] == [0, 1]
    register_policy_mapping("broken", lambda env, agent, ep, n, rng: n)
    with pytest.raises(ConfigError, match="returned policy 2"):
        PolicyMapper("broken", 2, False, None).policy_for(0, 0, 0)
    with pytest.raises(ConfigError, match="unknown policy mapping"):
        PolicyMapper("nope", 2, False, None)


def test_one_policy_maps_everything_to_policy_zero():
    m = PolicyMapper("random", 1, True, None)
    assert {m.policy_for(e, a, ep) for e in range(5) for a in range(3) for ep in range(3)} == {0}
    assert isinstance(m.rng, random.Random)


@pytest.mark.parametrize("name", ["", "nope"])
def test_an_unknown_mapping_is_refused_before_any_process_starts(name, tmp_path):
    # found by the config fuzzing: accepted, then every rollout worker failed in its first reset
    from surge.app.resolve import parse_cfg

    with pytest.raises(ConfigError, match="unknown policy mapping"):
        parse_cfg(["--env=cartpole", f"--policy_mapping={name}", f"--train_dir={tmp_path}"])
