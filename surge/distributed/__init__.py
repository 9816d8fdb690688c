"""Runs across several machines: Ray sampler nodes (`ray_placement`: the head's placement,
`ray_sampler`: one node's actor, `ray_checks`: their flags). The data-parallel learners under
torchrun are the runtime's (`surge.runtime.ranks`, `surge.runtime.data_parallel`): the placements
join and leave their process group. See docs/distributed.md."""
