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
last load (one shared-memory read per forward pass), exactly as an inference worker reloads them;
the policy_version written with each step is the one loaded.
"""

from __future__ import annotations

import torch

from surge.runtime.components import RunLayout, make_inference, make_model
from surge.runtime.process_context import SharedContext
from surge.sampling.inference import InferenceWorker
from surge.sampling.rollout_worker import RolloutWorker


class RolloutInference:
    """Every policy's acting module and `InferenceWorker`, in the rollout worker's process, on the
    CPU (`surge.cfg.validate.check_core_fields` refuses `--policy_workers_per_policy=0` with `--device=gpu`).

    Args:
        shared: the run's shared objects (weights, the env frame counter, the actor offsets).
        layout: the run's layout in this process.
    """

    def __init__(self, shared: SharedContext, layout: RunLayout):
        device = torch.device("cpu")
        self.weights = shared.weights
        self.env_frames = shared.env_frames.numpy()  # as the main process counts them
        self.inference: list[InferenceWorker] = []
        self.models: list[torch.nn.Module] = []
        for p in range(layout.cfg.num_policies):
            model = make_model(layout.cfg, layout.info, device).acting  # learner-only modules dropped
            model.eval()
            self.models.append(model)
            self.inference.append(
                make_inference(layout, model, device, p, shared.actor_offset, shared.run_actors)
            )
        self.seen = [-1] * len(self.inference)  # each policy's weights' write counter when last loaded

    def act(self, worker: RolloutWorker, splits: list[int]) -> None:
        """Writes the actions (and what else the algorithm's `act` returns) of the current step of
        every split in `splits`, for every policy acting in them, with that policy's latest
        published weights: one forward pass per policy over all those splits' agents, not one per
        split (a small model's forward pass costs little more for 20 rows than for 10)."""
        frames = int(self.env_frames[0])
        requests: dict[int, list] = {}
        for s in splits:
            _, t = worker.policy_request(s)
            index = worker.splits[s].index  # a slice when contiguous: views instead of gathers
            for p in worker.request_policies(s):
                requests.setdefault(p, []).append((index, t))
        for p, mine in requests.items():
            inference, weights = self.inference[p], self.weights[p]
            stamp = weights.read_seq()
            if stamp != self.seen[p]:
                loaded = weights.load_into(self.models[p])
                if loaded is not None:  # else the learner died mid-publish: the run is stopping
                    inference.policy_version, self.seen[p] = loaded, stamp
            inference.env_frames = frames
            inference.infer(mine)
