"""An inference worker's process in the async placement: batch every pending request of its policy
into one forward pass, write what the algorithm acts into the trajectory buffers, tell each worker
its split is ready. Weights are refreshed from the policy's `SharedWeights` whenever its learner
published new weights (or the main process gave a frozen policy new ones).

The worker writes its heartbeat every loop iteration (at least every 0.1 s). A request it already
answered is not acted on twice: after an inference worker is replaced, rollout workers send their
unanswered requests again, and one may then be queued twice."""

from __future__ import annotations

import time
from queue import Empty

import torch

from surge.learning.amp import casts_kept
from surge.runtime.components import (
    configure_backends,
    make_inference,
    make_model,
    seed_everything,
    torch_device,
)
from surge.runtime.experiment_folder import run_log_file
from surge.runtime.lockstep_inference import serve_lockstep
from surge.runtime.messages import request_slots
from surge.runtime.process_context import InferenceContext
from surge.runtime.process_setup import child_niceness, run_child, setup_child
from surge.sampling.inference import InferenceWorker
from surge.sampling.inference_loop import InferenceLoop


def inference_process_main(ctx: InferenceContext) -> None:
    """Entry point of an inference worker process."""
    shared, p = ctx.shared, ctx.policy_id
    beat_index = len(shared.env_steps) + shared.inference_index(p, ctx.index)
    layout = shared.layout()
    cfg = layout.cfg
    name = f"inference_p{p}_{ctx.index}"
    setup_child(
        name,
        niceness=child_niceness(cfg, "inference"),
        torch_threads=cfg.num_torch_threads or 1,
        log_file=run_log_file(cfg),
    )

    def loop() -> None:
        torch.set_grad_enabled(False)  # this process only acts: no autograd, once for all batches
        device = torch_device(cfg)
        configure_backends(cfg, device)
        model = make_model(cfg, layout.info, device).acting  # learner-only modules are dropped
        model.eval()
        inference = make_inference(
            layout, model, device, p, shared.actor_offset, shared.run_actors, own_model=True
        )
        # under mixed precision, the weights' casts are kept from one forward pass to the next
        # until new weights are loaded (`InferenceLoop.reload`): this thread never trains them
        with casts_kept(device):
            serve(inference)

    def serve(inference: InferenceWorker) -> None:
        if cfg.deterministic:  # its own seeded stream of action samples; env frames stay 0
            assert cfg.seed is not None
            seed_everything(cfg.seed + 1_000_003 * (1 + shared.inference_index(p, ctx.index)))
            serve_lockstep(ctx, inference, beat_index)
            return
        # weights reloaded when the learner published (or the main process set) new ones; the
        # run's env frames as the main process counts them
        loop = InferenceLoop(inference, shared.weights[p], shared.env_frames.numpy())
        stop_flag, request_queue = shared.stop_flag, ctx.request_queue
        beats = shared.heartbeats.numpy()
        answered: dict[int, tuple[int, int]] = {}  # first_slot -> (tag, t) of the latest request served
        while not stop_flag.is_set():
            beats[beat_index] = time.monotonic()
            try:
                msgs = request_queue.get_many(timeout=0.1)
            except Empty:
                continue
            # plain `PolicyRequest` tuples on the wire: (worker_idx, tag, first_slot, num_slots, t);
            # a request sent twice (to a replacement of this worker) is served once
            fresh, requests = [], []
            for worker_idx, tag, first, n, t in msgs:
                if answered.get(first) == (tag, t):
                    continue
                answered[first] = (tag, t)
                fresh.append((worker_idx, tag))
                requests.append((request_slots(first, n), t))
            loop.handle(requests)  # (an empty batch only reloads the weights)
            for worker_idx, tag in fresh:
                ctx.worker_queues[worker_idx].put((tag, p))  # a plain `ActionsReady`

    run_child(f"inference worker {p}.{ctx.index}", shared.report_queue, loop)
