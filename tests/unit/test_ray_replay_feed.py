"""`--distributed=ray` with a replay algorithm (DQN), without Ray: a sampler node's finished block,
packed into a `Shipment` and written by the head's receiver, reaches the head's replay learner
(`prepare_batch` then `observe`, the learner process's "observe" path) holding the trajectories the
node's rollout worker wrote, field by field, in the replay columns of the node's run-wide actor ids;
and a node's inference acts with run-wide actor ids and actor count (`--per_actor_eps`: no two
nodes' actors share an epsilon)."""

from types import SimpleNamespace

import gymnasium as gym
import pytest
import torch

from surge.app.resolve import parse_cfg
from surge.distributed.ray_placement import RayPlacement
from surge.distributed.ray_sampler import SamplerNode, Shipment
from surge.learning.algorithm import acting_state_size
from surge.learning.exploration import per_actor_epsilon
from surge.runtime.components import EnvInfo, make_layout, make_learner, make_model
from surge.runtime.messages import BlockReady
from surge.runtime.placement import StepReport
from surge.sampling.inference import InferenceWorker

INFO = EnvInfo(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2), 1, 1, 1)
# two splits: DQN's defaults for a vector env choose one (surge.learning.replay_space_defaults)
FLAGS = [
    "--env=CartPole-v1",
    "--algo=DQN",
    "--num_envs_per_worker=4",
    "--worker_num_splits=2",
    "--train_for_env_steps=100000",
]


class ListQueue(list):
    def put(self, item):
        self.append(item)


def fill(buffers, slots, g):
    """Writes valid random trajectories into `slots` (what a rollout worker and inference write)."""
    for name in buffers.FIELDS:
        t = getattr(buffers, name)
        shape = t[slots].shape
        if t.dtype == torch.bool:
            v = torch.rand(shape, generator=g) < 0.2
        elif t.dtype.is_floating_point:
            v = torch.rand(shape, generator=g) * 2 - 1
        else:
            v = torch.randint(0, 2, shape, generator=g).to(t.dtype)
        t[slots] = v
    buffers.is_active[slots] = True
    buffers.policy_id[slots] = 0


def test_a_node_block_reaches_the_head_replay_unchanged(tmp_path):
    g = torch.Generator().manual_seed(0)
    node_cfg = parse_cfg([*FLAGS, "--num_workers=2", f"--train_dir={tmp_path}"])
    # the head's config: 2 nodes x 2 workers, as `RayPlacement` builds it
    head_cfg = parse_cfg([*FLAGS, "--num_workers=4", f"--train_dir={tmp_path}"])
    parts = make_model(head_cfg, INFO, torch.device("cpu"))
    rnn = acting_state_size(parts.acting)
    node = make_layout(node_cfg, INFO, rnn, blocks_per_owner=2)
    head = make_layout(head_cfg, INFO, rnn)
    n = node.block_pool.block_size
    assert n == head.block_pool.block_size == 2  # a split's envs

    # node 1, owner 3 (worker 1, split 1): its block of trajectories, local actor ids 6, 7
    view = node.block_pool.owner_view(3)
    slots = view.get(n)
    fill(node.buffers, slots, g)
    node.buffers.actor_ids[slots] = torch.arange(6, 6 + n)
    view.hand_over(slots, [0])
    expected = node.buffers.gather(slots)
    actors_per_node = 8  # 2 workers x 4 envs
    sampler = SamplerNode({}, node=1, actors_per_node=actors_per_node)
    sampler.placement = SimpleNamespace(
        block_pool=node.block_pool, shared=SimpleNamespace(buffers=node.buffers)
    )
    sampler.pending = [tuple(BlockReady(int(slots[0]), None))]
    ship = Shipment(node=1)
    sampler._pack(ship)

    placement = RayPlacement.__new__(RayPlacement)
    queue = ListQueue()
    placement.cfg = node_cfg
    placement.head = SimpleNamespace(
        block_pool=head.block_pool, shared=SimpleNamespace(buffers=head.buffers), learner_queues=[queue]
    )
    placement.waiting, placement.env_steps_counted, placement.shipped = [], 0, set()
    placement.stats = {"shipments": 0, "blocks": 0, "bytes": 0}
    placement._receive(ship, StepReport())
    placement._write_waiting()
    assert len(queue) == 1
    first, own = queue[0]
    got = torch.arange(first, first + n) if own is None else torch.tensor(own)
    for name in head.buffers.FIELDS:
        assert torch.equal(getattr(head.buffers, name)[got], expected[name]), name
    columns = torch.arange(6, 6 + n) + actors_per_node  # run-wide: after node 0's 8 actors
    assert torch.equal(head.buffers.actor_ids[got], columns)

    # the head's learner process: prepare_batch, observe (copied into the replay), release
    learner = make_learner(head, parts, torch.device("cpu"), 0)
    assert learner.num_columns == 2 * actors_per_node
    learner.observe(learner.prepare_batch(got))
    head.block_pool.release(got, 0)
    assert not head.block_pool.held[got].any()
    ring = learner.replay.ring
    T = head_cfg.rollout
    assert torch.equal(ring.count, torch.isin(torch.arange(16), columns).long() * T)  # only its columns
    steps = torch.arange(T)[:, None]
    c = columns[None]
    assert torch.equal(ring.actions[steps, c], expected["actions"].T)
    assert torch.equal(ring.rewards[steps, c], expected["rewards"].T)
    assert torch.equal(ring.terminated[steps, c], expected["terminated"].T)
    assert torch.equal(ring.truncated[steps, c], expected["truncated"].T & ~expected["terminated"].T)
    assert torch.equal(ring.is_active[steps, c], expected["is_active"].T)
    assert torch.equal(learner.versions[steps, c], expected["policy_version"].T)
    assert learner.env_steps == T * n


def test_node_inference_acts_with_run_wide_actor_ids():
    """Node 1 of 2 (8 actors each): its inference passes ids 8.. and 16 actors to `act`, so
    `--per_actor_eps` gives its actors other epsilons than node 0's."""
    seen = []

    def act(model, obs, rnn_states, ctx):
        seen.append(ctx)
        return {"actions": torch.zeros(len(ctx.actor_ids), dtype=torch.int64), "rnn_states": rnn_states}

    cfg = parse_cfg([*FLAGS, "--num_workers=2"])
    layout = make_layout(cfg, INFO, 0, blocks_per_owner=2)
    layout.buffers.actor_ids[0:2] = torch.tensor([0, 1])
    worker = InferenceWorker(
        torch.nn.Linear(1, 1), layout.buffers, torch.device("cpu"), act, num_actors=16, actor_offset=8
    )
    worker.infer([(slice(0, 2), 0)])
    ctx = seen[0]
    assert ctx.actor_ids.tolist() == [8, 9] and ctx.num_actors == 16
    node0 = per_actor_epsilon(torch.tensor([0, 1]), 16)
    node1 = per_actor_epsilon(ctx.actor_ids, ctx.num_actors)
    assert not torch.isin(node1, node0).any()


def test_a_node_starts_its_processes_with_its_actor_offset(monkeypatch):
    """`SamplerNode._start` gives its placement (hence its inference processes' `SharedContext`) the
    node's first run-wide actor id and the run's actor count."""
    from surge.runtime.async_placement import AsyncPlacement

    monkeypatch.setattr(AsyncPlacement, "start", lambda self: None)
    values = parse_cfg([*FLAGS, "--num_workers=2", "--distributed=ray", "--ray_sampler_nodes=3"]).to_dict()
    sampler = SamplerNode(values, node=2, actors_per_node=8)
    sampler._start()
    assert (sampler.placement.actor_offset, sampler.placement.run_actors) == (16, 24)


def test_a_sampler_node_does_not_count_the_replay_it_does_not_hold(tmp_path):
    """The replay lives in the head's learner: a node's memory check (`env_info` in its placement's
    start, `with_replay=False`) leaves it out, where the head's counts it."""
    from surge.errors import ConfigError
    from surge.runtime.components import env_info

    cfg = parse_cfg([*FLAGS, "--num_workers=1", "--replay_size=1000000000000", f"--train_dir={tmp_path}"])
    assert env_info(cfg, with_replay=False).num_agents == 1
    with pytest.raises(ConfigError):
        env_info(cfg)


def test_a_pull_gives_the_node_the_run_env_frames(monkeypatch):
    """The head's env frames reach the node's placement at every `pull` (its inference reads them
    as `ActContext.env_frames`: DQN's epsilon schedule, SAC/TD3/DDPG's random start)."""
    from queue import Empty

    import surge.distributed.ray_sampler as rs

    class Queue:
        def get_many(self, block=False):
            raise Empty

    told = {}
    placement = SimpleNamespace(
        set_env_frames=lambda f: told.__setitem__("frames", f),
        limit_env_frames=lambda n: told.__setitem__("frames_left", n),
        frameskip=4,
        step=StepReport,
        learner_queues=[Queue()],
    )
    monkeypatch.setattr(rs, "SHIP_WAIT_SEC", 0.0)
    sampler = SamplerNode({}, node=0, actors_per_node=8)
    sampler.placement = placement
    ship = sampler.pull(-1, [None], 123_456, 1000, 1)
    assert told == {"frames": 123_456, "frames_left": 4000} and ship.owners == []
