"""The inference worker's process in the async placement: batch every pending request into one
forward pass, write actions into the trajectory buffers, tell each worker its split is ready.
Weights are refreshed from `SharedWeights` whenever the learner published a newer policy_version."""

from __future__ import annotations

from queue import Empty
from typing import Any

import torch

from surge.cfg.cli import rebuild_cfg
from surge.models.actor_critic import make_actor_critic
from surge.runtime.process_setup import run_child, setup_child
from surge.runtime.shared_state import SharedWeights
from surge.sampling.inference import InferenceWorker


def inference_process_main(
    cfg_values: dict[str, Any],
    idx: int,
    obs_space: Any,
    action_space: Any,
    buffers: Any,
    weights: SharedWeights,
    request_queue: Any,
    worker_queues: list[Any],
    report_queue: Any,
    stop_event: Any,
    random_actions: bool = False,
) -> None:
    """Entry point of an inference worker process (`random_actions`: the dummy sampler)."""
    cfg = rebuild_cfg(cfg_values)
    setup_child(f"inference_{idx}", niceness=cfg.default_niceness, torch_threads=cfg.num_torch_threads or 1)

    def loop() -> None:
        device = torch.device("cuda" if cfg.device == "gpu" else "cpu")
        model = make_actor_critic(cfg, obs_space, action_space).to(device)
        model.eval()
        inference = InferenceWorker(model, buffers, device, random_actions=random_actions)
        version = -1
        aranges: dict[tuple[int, int], torch.Tensor] = {}
        while not stop_event.is_set():
            try:
                msgs = request_queue.get_many(timeout=0.1)
            except Empty:
                continue
            if weights.read_version() != version:
                version = weights.load_into(model)
                inference.policy_version = version
            requests = []
            for _, _, first, n, t in msgs:
                key = (first, n)
                slots = aranges.get(key)
                if slots is None:
                    slots = aranges[key] = torch.arange(first, first + n, dtype=torch.int64)
                requests.append((slots, t))
            inference.infer(requests)
            for w, s, *_ in msgs:
                worker_queues[w].put(s)

    run_child(f"inference worker {idx}", report_queue, loop)
