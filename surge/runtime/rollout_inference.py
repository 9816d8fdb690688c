"""Inference inside a rollout worker's process (`--policy_workers_per_policy=0`): the worker acts on
each split itself, with its own copy of every policy's acting module, instead of sending a request
to an inference worker and waiting for the reply.

Why: with a small model on a CPU, a split's forward pass costs less than the round trip to an
inference process (two messages, two wake-ups, two context switches per split step). Acting in
place removes that per-step cost and the inference processes; what is lost is batching several
workers' splits into one forward pass, which pays only when the forward pass itself is costly (a
conv net, a GPU). This is how rl_games, Stable-Baselines3 and CleanRL act; Sample Factory always
uses inference workers.

Weights come from each policy's `SharedWeights`, reloaded when its write counter moved since the
last load (one shared-memory read per forward pass), exactly as an inference worker reloads them:
each policy's `InferenceLoop` (`surge.sampling.inference_loop`) does it in both places. The
policy_version written with each step is the one loaded.
"""

from __future__ import annotations

import torch

from surge.runtime.components import RunLayout, make_inference, make_model
from surge.runtime.process_context import SharedContext
from surge.sampling.inference_loop import InferenceLoop, InProcessActing
from surge.sampling.rollout_worker import RolloutWorker


def acting_in_worker(shared: SharedContext, layout: RunLayout, worker: RolloutWorker) -> InProcessActing:
    """Every policy's acting module and `InferenceLoop` in the rollout worker's process, on the CPU
    (`surge.cfg.validate.check_core_fields` refuses `--policy_workers_per_policy=0` with `--device=gpu`), acting for
    the splits of `worker` (`RolloutLoop.step`): one forward pass per policy over its ready splits.

    Args:
        shared: the run's shared objects (weights, the env frame counter, the actor offsets).
        layout: the run's layout in this process.
        worker: this process's rollout worker.
    """
    device = torch.device("cpu")
    env_frames = shared.env_frames.numpy()  # as the main process counts them
    loops = []
    for p in range(layout.cfg.num_policies):
        model = make_model(layout.cfg, layout.info, device).acting  # learner-only modules dropped
        model.eval()
        inference = make_inference(layout, model, device, p, shared.actor_offset, shared.run_actors)
        loops.append(InferenceLoop(inference, shared.weights[p], env_frames))
    return InProcessActing([worker], loops)
