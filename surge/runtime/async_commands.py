"""Commands to the async placement's learners (`Placement.send_command`): `SetHyperparams` goes to
the policy's learner, `SetRewardShaping` to the rollout workers, and `ReplacePolicy(p, src)` is an
exchange through a file: learner `src` exports its state, then learner `p` imports it; commands to
`p` sent meanwhile are held and follow the import, in order. A frozen policy's weights are set
and every policy's read through shared memory (`set_policy_weights`, `policy_weights`).
"""

from __future__ import annotations

import logging
import shutil
import tempfile
import time
from typing import TYPE_CHECKING, Any

import torch

from surge.errors import ChildProcessFailed
from surge.runtime.commands import Command, ReplacePolicy, SetRewardShaping
from surge.runtime.messages import ExportPolicy, ImportPolicy, PolicyExported, PolicyImported
from surge.runtime.placement import check_command

if TYPE_CHECKING:  # the placement owns its relay: a type only, no import circle
    from surge.runtime.async_placement import AsyncPlacement

log = logging.getLogger("surge")


class CommandRelay:
    """Relays an `AsyncPlacement`'s commands to its processes (see the module docstring).

    Args:
        placement: the placement whose learners and rollout workers receive the commands.
    """

    def __init__(self, placement: AsyncPlacement):
        self.placement = placement
        # ReplacePolicy in flight: export file -> (replaced policy, source policy); commands to a
        # policy being replaced wait until its import is sent, so they apply after it, in order
        self.exports: dict[str, tuple[int, int]] = {}
        self.held: dict[int, list[Any]] = {}
        self.exchange_dir: str | None = None  # temporary folder of the exported states
        self.replaced: list[PolicyImported] = []  # imports done

    def send(self, cmd: Command) -> None:
        """Sends `cmd` to the learner processes (see `Placement.send_command`). `ReplacePolicy(p,
        src)` asks learner `src` to export its state to a file, and once it reported it, learner
        `p` to import it; commands to `p` sent meanwhile follow the import.

        Raises:
            ValueError: see `check_command`; or the run does not train (no learners).
        """
        check_command(cmd, self.placement.cfg.num_policies, self.placement.learning)
        if isinstance(cmd, SetRewardShaping):  # to the rollout workers, and to any started later
            self.placement.reward_shaping[cmd.policy_id] = cmd.scheme
            for q in self.placement.worker_queues:
                q.put(cmd)
            return
        if not self.placement.algo.trains:
            raise ValueError(
                f"{type(cmd).__name__}: --algo={self.placement.cfg.algo} has no learners to command"
            )
        p = cmd.policy_id
        if p in self.held:  # a replacement of p is in flight
            self.held[p].append(cmd)
            return
        if not isinstance(cmd, ReplacePolicy):
            self.placement.command_queues[p].put(cmd)
            return
        if self.exchange_dir is None:
            self.exchange_dir = tempfile.mkdtemp(prefix="surge_replace_")
        path = f"{self.exchange_dir}/p{cmd.source_policy_id}_to_p{p}_{len(self.exports)}_{time.monotonic_ns()}.pth"
        self.exports[path] = (p, cmd.source_policy_id)
        self.held[p] = []
        self.placement.command_queues[cmd.source_policy_id].put(ExportPolicy(path))

    def finish(self, timeout: float) -> None:
        """Waits up to `timeout` s for the exports of the replacements in flight and sends their
        imports (and the commands held behind them); other reports are kept for the next `step`."""
        deadline = time.time() + timeout
        while self.exports and time.time() < deadline:
            for msg in self.placement._drain(timeout=0.1):
                if isinstance(msg, PolicyExported):
                    self.on_exported(msg)
                else:
                    self.placement._early.append(msg)
        if self.exports:
            log.warning(
                "Replacements not done at the stop (the source's learner did not export its state within %.0f s): %s",
                timeout,
                ", ".join(f"policy {p} by {src}" for p, src in self.exports.values()),
            )

    def on_exported(self, msg: PolicyExported) -> None:
        p, src = self.exports.pop(msg.path)
        self.placement.command_queues[p].put(ImportPolicy(msg.path, src))
        for cmd in self.held.pop(p, []):
            self.send(cmd)

    def on_imported(self, msg: PolicyImported) -> None:
        log.info(
            "Policy %d now plays with policy %d's weights (policy version %d)",
            msg.policy_id,
            msg.source_policy_id,
            msg.policy_version,
        )
        self.replaced.append(msg)

    def set_policy_weights(
        self, policy_id: int, state_dict: dict[str, torch.Tensor], policy_version: int
    ) -> None:
        """Publishes `state_dict` as frozen policy `policy_id`'s weights in shared memory, stamped
        `policy_version`; its inference workers load them before their next batch (they reload on
        every publish, even one with the same version).

        Raises:
            ValueError: the policy learns (its learner owns its weights), or the id is out of range.
        """
        if not 0 <= policy_id < self.placement.cfg.num_policies:
            raise ValueError(f"no policy {policy_id}")
        if policy_id in self.placement.learning:
            raise ValueError(f"policy {policy_id} learns: only a frozen policy's weights are set by the run")
        self.placement.model.load_state_dict(state_dict)
        self.placement.shared.weights[policy_id].publish(self.placement.model, int(policy_version))

    def policy_weights(self, policy_id: int) -> tuple[dict[str, torch.Tensor], int]:
        """Policy `policy_id`'s weights as last published in shared memory (a learner publishes
        after each training iteration) and their policy_version; non-float buffers are the
        layout's initial ones (they are not shared).

        Raises:
            ValueError: the id is out of range.
            ChildProcessFailed: no consistent copy could be read within 1 s (a writer died mid-write).
        """
        if not 0 <= policy_id < self.placement.cfg.num_policies:
            raise ValueError(f"no policy {policy_id}")
        version = self.placement.shared.weights[policy_id].load_into(self.placement.model)
        if version is None:
            raise ChildProcessFailed(f"policy {policy_id}'s shared weights could not be read consistently")
        return {k: v.detach().clone() for k, v in self.placement.model.state_dict().items()}, version

    def close(self) -> None:
        """Removes the folder of the exported states (if any)."""
        if self.exchange_dir is not None:
            shutil.rmtree(self.exchange_dir, ignore_errors=True)
            self.exchange_dir = None
