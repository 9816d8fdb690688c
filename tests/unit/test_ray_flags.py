"""The "distributed" flags (`--distributed=ray`): parsed, refused before any process starts with the
field and the fix, and each sampler node's config (its own seed, no folder writes)."""

import pytest

from surge.app.notes import config_notes
from surge.app.resolve import parse_cfg
from surge.distributed.ray_sampler import node_cfg_values
from surge.errors import ConfigError

BASE = ["--env=CartPole-v1"]


def test_defaults_and_values():
    cfg = parse_cfg(BASE)
    assert (cfg.distributed, cfg.ray_address, cfg.ray_sampler_nodes) == ("none", None, 1)
    cfg = parse_cfg([*BASE, "--distributed=ray", "--ray_address=10.0.0.1:6379", "--ray_sampler_nodes=3"])
    assert (cfg.distributed, cfg.ray_address, cfg.ray_sampler_nodes) == ("ray", "10.0.0.1:6379", 3)
    assert parse_cfg([*BASE, "--ray_address=None"]).ray_address is None


@pytest.mark.parametrize(
    "flags, field",
    [
        (["--distributed=slurm"], "distributed"),
        (["--ray_sampler_nodes=0"], "ray_sampler_nodes"),
        (["--ray_blocks_per_shipment=0"], "ray_blocks_per_shipment"),
        (["--ray_max_restarts=-2"], "ray_max_restarts"),
        (["--distributed=ray", "--serial_mode=True"], "serial_mode"),
        (["--distributed=ray", "--num_policies=2"], "num_policies"),
        (["--distributed=ray", "--algo=DUMMY_SAMPLER"], "algo"),
        (["--distributed=ray", "--algo=A2C"], "algo"),
        (["--distributed=ray", "--num_minibatches_to_accumulate=0"], "num_minibatches_to_accumulate"),
    ],
)
def test_refused_with_the_field(flags, field):
    with pytest.raises(ConfigError) as e:
        parse_cfg([*BASE, *flags])
    assert e.value.field == field, str(e.value)


@pytest.mark.parametrize(
    "flags",
    [
        ["--env=CartPole-v1", "--algo=DQN", "--train_for_env_steps=1000", "--per_actor_eps=True"],
        ["--env=Pendulum-v1", "--algo=SAC"],
        ["--env=Pendulum-v1", "--algo=TD3"],
        ["--env=Pendulum-v1", "--algo=DDPG"],
    ],
)
def test_replay_algorithms_are_accepted(flags):
    cfg = parse_cfg([*flags, "--distributed=ray"])
    assert cfg.distributed == "ray" and cfg.algo == flags[1].split("=")[1]


def test_a_node_gets_its_own_seed_and_writes_nothing():
    values = parse_cfg([*BASE, "--seed=5", "--distributed=ray"]).to_dict()
    nodes = [node_cfg_values(values, i) for i in range(3)]
    assert len({n["seed"] for n in nodes} | {5}) == 4
    assert all(n["no_writes"] and n["distributed"] == "none" for n in nodes)
    assert values["seed"] == 5 and values["distributed"] == "ray"  # the run's own is untouched


def test_ray_flags_without_ray_are_noted_in_the_log():
    notes = config_notes(parse_cfg([*BASE, "--ray_sampler_nodes=3", "--ray_address=auto"]))
    assert "--ray_sampler_nodes has no effect without --distributed=ray." in notes
    assert "--ray_address has no effect without --distributed=ray." in notes
    ray = config_notes(parse_cfg([*BASE, "--distributed=ray", "--ray_sampler_nodes=3"]))
    assert not [n for n in ray if "ray" in n]
