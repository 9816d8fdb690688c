"""The learner's process in the async placement: collect finished trajectory blocks, train once an
iteration's worth is there, give the blocks back, publish weights, save checkpoints on request.

Commands from the main process (its command queue): ("save", kind, counters) and ("stop",).
Reports to the main process: ("train", stats), ("saved", kind, path), ("learner_ready", version).
"""

from __future__ import annotations

import logging
import time
from queue import Empty
from typing import Any

import torch

from surge.cfg.cli import rebuild_cfg
from surge.experiment.checkpoint import CheckpointManager
from surge.learning.learner import Learner
from surge.models.actor_critic import make_actor_critic
from surge.runtime.components import seed_everything, traj_per_iteration
from surge.runtime.placement import learner_checkpoint_state, restore_learner
from surge.runtime.process_setup import run_child, setup_child
from surge.runtime.shared_state import BlockPool, SharedWeights

log = logging.getLogger("surge")


def learner_process_main(
    cfg_values: dict[str, Any],
    obs_space: Any,
    action_space: Any,
    buffers: Any,
    block_pool: BlockPool,
    weights: SharedWeights,
    env_frames: torch.Tensor,
    ckpt_folder: str,
    resume: bool,
    learner_queue: Any,
    command_queue: Any,
    report_queue: Any,
) -> None:
    """Entry point of the learner process; it exits after a ("stop",) command."""
    cfg = rebuild_cfg(cfg_values)
    setup_child(
        "learner",
        niceness=cfg.default_niceness,
        torch_threads=cfg.num_torch_threads or torch.get_num_threads(),
    )

    def loop() -> None:
        seed_everything(cfg.seed)
        device = torch.device("cuda" if cfg.device == "gpu" else "cpu")
        model = make_actor_critic(cfg, obs_space, action_space).to(device)
        learner = Learner(cfg, model, buffers, device)
        ckpt = CheckpointManager(ckpt_folder, cfg.keep_checkpoints)
        if resume:
            state = ckpt.load("latest")
            if state is not None:
                restore_learner(model, learner, state)
        weights.publish(model, learner.policy_version)
        report_queue.put(("learner_ready", learner.policy_version))
        per_iteration = traj_per_iteration(cfg)
        block = block_pool.block_size
        pending: list[int] = []
        while True:
            try:
                for cmd in command_queue.get_many(block=False):
                    if cmd[0] == "stop":
                        return
                    if cmd[0] == "save":
                        _, kind, counters = cmd
                        state = learner_checkpoint_state(model, learner, counters)
                        path = ckpt.save(state, learner.policy_version, counters["env_frames"], kind)
                        report_queue.put(("saved", kind, str(path)))
            except Empty:
                pass
            try:
                pending.extend(learner_queue.get_many(timeout=0.05))
            except Empty:
                continue
            if cfg.sampler_only:  # measure sampling alone: give the blocks straight back
                for f in pending:
                    block_pool.release(f)
                pending.clear()
                continue
            if len(pending) * block < per_iteration:
                continue
            slots = torch.cat([torch.arange(f, f + block) for f in pending])
            t0 = time.monotonic()
            stats = learner.train(slots, env_frames=int(env_frames[0]))
            stats["train_seconds"] = time.monotonic() - t0
            for f in pending:
                block_pool.release(f)
            pending.clear()
            weights.publish(model, learner.policy_version)
            report_queue.put(("train", stats))

    run_child("learner", report_queue, loop)
