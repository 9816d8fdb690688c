"""The Ray path's data movement without Ray: a sampler node's finished blocks, packed into a
`Shipment` (`SamplerNode._pack`), written by the head's receiver (`RayPlacement._receive` and
`_write_waiting`) into the learner's buffers hold the same trajectories field by field, go to the
learner's queue as `BlockReady`, and free the node's slots; a block whose owner has no free slots
on the head waits (back-pressure) instead of overwriting held ones."""

from types import SimpleNamespace

import gymnasium as gym
import torch

from surge.app.resolve import parse_cfg
from surge.distributed.ray_placement import RayPlacement
from surge.distributed.ray_sampler import SamplerNode, Shipment
from surge.runtime.components import EnvInfo, make_layout
from surge.runtime.messages import BlockReady
from surge.runtime.placement import StepReport


class ListQueue(list):
    def put(self, item):
        self.append(item)


def layouts(tmp_path):
    cfg = parse_cfg(
        ["--env=CartPole-v1", "--num_workers=2", "--num_envs_per_worker=4", f"--train_dir={tmp_path}"]
    )
    info = EnvInfo(gym.spaces.Box(-1, 1, (4,)), gym.spaces.Discrete(2), 1, 1, 1)
    node = make_layout(cfg, info, 0, blocks_per_owner=2)
    head = make_layout(cfg, info, 0)
    return cfg, node, head


def test_a_shipped_block_lands_whole_in_the_learner_buffers(tmp_path):
    cfg, node, head = layouts(tmp_path)
    n = node.block_pool.block_size
    # node: owner 3 (worker 1, split 1) filled its second block with random trajectories
    view = node.block_pool.owner_view(3)
    view.get(n)  # its first block: still being filled
    slots = view.get(n)
    for name in node.buffers.FIELDS:
        t = getattr(node.buffers, name)
        t[slots] = (torch.rand(t[slots].shape) * 100).to(t.dtype)
    node.buffers.actor_ids[slots] = torch.arange(n) + 12
    view.hand_over(slots, [0])
    expected = node.buffers.gather(slots)

    sampler = SamplerNode({}, node=1, actors_per_node=8)
    sampler.placement = SimpleNamespace(
        block_pool=node.block_pool, shared=SimpleNamespace(buffers=node.buffers)
    )
    sampler.pending = [tuple(BlockReady(int(slots[0]), None))]
    ship = Shipment(node=1)
    sampler._pack(ship)
    assert ship.owners == [3] and ship.block_slots == [n] and ship.nbytes > 0
    assert not node.block_pool.held[slots].any()  # freed on the node once copied

    # the head: cfg for 2 nodes x 2 workers; node 1's owner 3 is the head's owner 2 x 2 + 3 = 7
    placement = RayPlacement.__new__(RayPlacement)
    queue = ListQueue()
    big = parse_cfg(
        ["--env=CartPole-v1", "--num_workers=4", "--num_envs_per_worker=4", f"--train_dir={tmp_path}"]
    )
    head = make_layout(big, node.info, 0)
    placement.cfg = cfg
    placement.head = SimpleNamespace(
        block_pool=head.block_pool, shared=SimpleNamespace(buffers=head.buffers), learner_queues=[queue]
    )
    placement.waiting, placement.env_steps_counted, placement.shipped = [], 0, set()
    placement.stats = {"shipments": 0, "blocks": 0, "bytes": 0}
    placement._receive(ship, StepReport())
    placement._write_waiting()
    assert len(queue) == 1 and not placement.waiting
    first, own = queue[0]
    got = torch.arange(first, first + n) if own is None else torch.tensor(own)
    assert head.block_pool.owner_slots(7).start <= int(got[0]) < head.block_pool.owner_slots(7).stop
    for name in head.buffers.FIELDS:
        assert torch.equal(getattr(head.buffers, name)[got], expected[name]), name
    assert torch.equal(
        head.buffers.actor_ids[got], torch.arange(n) + 12 + 8
    )  # node 1's actors after node 0's
    assert head.block_pool.held[got, 0].all()  # held for the learner until it trains on them

    # back-pressure: with every slot of that owner held, the next block waits
    head.block_pool.held[head.block_pool.owner_slots(7), 0] = 1
    placement._receive(ship, StepReport())
    placement._write_waiting()
    assert len(queue) == 1 and len(placement.waiting) == 1
