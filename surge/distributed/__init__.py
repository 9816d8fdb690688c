"""Runs across several processes or machines: data-parallel learners under torchrun
(`ranks`: which rank this process is; `data_parallel`: the process group, gradient all-reduce and
training rounds). See docs/distributed.md."""
