"""Self-play the rl_games way: policy 0 learns against a pool of its own past snapshots.

rl_games' `SelfPlayManager` (`self_play_config`) is the reference for the meanings; here:

- the pool is the frozen policies 1..num_policies-1 (`--self_play=True`, `surge.population.roles`),
  each an *opponent slot* holding one snapshot; the `self_play` policy mapping pairs policy 0 with a
  random slot in every game, on either side in turn;
- a game's result is read from the opponent's episode return, for two-player zero-sum games (the
  env's rewards sum to 0 over the two players, as PettingZoo's classic games: +1 / -1 / 0): the
  opponent's return < 0 is a win of policy 0 (score 1), > 0 a loss (0), 0 a draw (0.5); policy 0's
  return in that game is minus the opponent's;
- `--self_play_games_to_check` (rl_games' games_to_check): once that many games were played since
  the last snapshot, their mean is checked after every game: the mean score (the win rate, draws
  half) with `--self_play_check_scores=True`, policy 0's mean return otherwise (rl_games'
  `game_rewards`). Above `--self_play_update_score` (rl_games' update_score, strictly greater), the
  current weights of policy 0 become a new snapshot;
- `--self_play_env_update_num` (rl_games' env_update_num): the snapshot is loaded into that many
  slots, starting at slot indexes [0, env_update_num) and shifting by one (mod the number of slots)
  per snapshot, as rl_games rotates `env_indexes` over its envs; the results window then restarts
  (rl_games' `clear_stats`);
- an Elo rating (Elo 1978) for policy 0 and for every snapshot, updated after every game with
  `elo_update` (K = `ELO_K`); a new snapshot starts at policy 0's current rating.

Snapshot 0 is policy 0's initial weights, in every slot at the start. The pool (snapshot weights,
ratings, slots, the results window) is saved in `<experiment>/self_play/` (`pool.json` and
`snapshot_<id>.pth`, whose `model` entry a `--frozen_policies ID:PATH` or the evaluation script
loads), and a resumed run continues with it. `history.jsonl` there records the win rate and the
ratings over the run (for the curves), and `return_sum`, every player's episode returns summed
over this run: 0 while every game is zero-sum (PettingZoo's classic games end an illegal move with
-1 for the mover and 0 for the other player, so there it counts illegal moves). A game is credited to the snapshot its slot holds when the
game's end is reported: the few games under way when a slot changes are credited to the new one.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

import torch

from surge.cfg.config import Config

log = logging.getLogger("surge")

#: Elo's K factor: the most a rating moves after one game (32: the USCF's for players under 2100)
ELO_K = 32.0
#: the rating of policy 0 and of snapshot 0 at the start
ELO_START = 1000.0


def elo_expected(rating_a: float, rating_b: float) -> float:
    """The expected score of A against B (Elo 1978): 1 / (1 + 10^((R_b - R_a) / 400))."""
    return 1.0 / (1.0 + 10.0 ** ((rating_b - rating_a) / 400.0))


def elo_update(rating_a: float, rating_b: float, score_a: float, k: float = ELO_K) -> tuple[float, float]:
    """Both ratings after one game in which A scored `score_a` (1 win, 0.5 draw, 0 loss):
    R_a + K (S_a - E_a) and R_b + K ((1 - S_a) - (1 - E_a)) (Elo 1978)."""
    expected = elo_expected(rating_a, rating_b)
    delta = k * (score_a - expected)
    return rating_a + delta, rating_b - delta


def game_score(opponent_return: float) -> float:
    """Policy 0's score in a two-player zero-sum game from its opponent's episode return: 1 when
    the opponent lost (return < 0), 0 when it won (> 0), 0.5 for a draw (0)."""
    if opponent_return < 0:
        return 1.0
    if opponent_return > 0:
        return 0.0
    return 0.5


@dataclass
class Snapshot:
    """One past version of policy 0 in the pool."""

    id: int
    policy_version: int
    env_frames: int
    elo: float
    games: int = 0


class SelfPlayPool:
    """The pool's bookkeeping, without weights (unit-testable with a hand-made stream of results).

    Args:
        num_slots: opponent slots (num_policies - 1); slot i is policy i + 1.
        update_score, games_to_check, check_scores, env_update_num: rl_games' meanings (module doc).
    """

    def __init__(
        self,
        num_slots: int,
        update_score: float,
        games_to_check: int,
        check_scores: bool,
        env_update_num: int,
    ):
        if not 1 <= env_update_num <= num_slots:
            raise ValueError(f"env_update_num {env_update_num} outside [1, {num_slots}]")
        self.num_slots, self.update_score = num_slots, update_score
        self.games_to_check, self.check_scores = games_to_check, check_scores
        self.env_update_num = env_update_num
        self.snapshots: dict[int, Snapshot] = {0: Snapshot(0, 0, 0, ELO_START)}
        self.slots = [0] * num_slots  # snapshot id held by each slot
        self.slot_indexes = list(range(env_update_num))  # rl_games' env_indexes
        self.learner_elo = ELO_START
        self.games = 0
        self.window: deque[tuple[float, float]] = deque(
            maxlen=games_to_check
        )  # (score, return) since the last snapshot
        self.recent: deque[float] = deque(maxlen=games_to_check)  # scores of the latest games (logged)

    def record(self, slot: int, opponent_return: float) -> None:
        """One finished game of policy 0 against slot `slot` (0-based), from the opponent's return."""
        score = game_score(opponent_return)
        snap = self.snapshots[self.slots[slot]]
        self.learner_elo, snap.elo = elo_update(self.learner_elo, snap.elo, score)
        snap.games += 1
        self.games += 1
        self.window.append((score, -float(opponent_return)))
        self.recent.append(score)

    def checked_value(self) -> float | None:
        """The mean that is compared with update_score, or None before games_to_check games."""
        if len(self.window) < self.games_to_check:
            return None
        i = 0 if self.check_scores else 1
        return sum(w[i] for w in self.window) / len(self.window)

    def should_promote(self) -> bool:
        value = self.checked_value()
        return value is not None and value > self.update_score

    def win_rate(self) -> float:
        """Mean score (wins 1, draws 0.5) over the latest games_to_check games (NaN before any)."""
        return sum(self.recent) / len(self.recent) if self.recent else float("nan")

    def promote(self, policy_version: int, env_frames: int) -> tuple[Snapshot, list[int]]:
        """Adds a snapshot of policy 0 (at its current rating) to the slots of `slot_indexes`,
        rotates them by one and restarts the window; returns the snapshot and the slots it took."""
        snap = Snapshot(max(self.snapshots) + 1, int(policy_version), int(env_frames), self.learner_elo)
        self.snapshots[snap.id] = snap
        taken = list(self.slot_indexes)
        for i in taken:
            self.slots[i] = snap.id
        self.slot_indexes = [(i + 1) % self.num_slots for i in self.slot_indexes]
        self.window.clear()
        return snap, taken

    def state_dict(self) -> dict[str, Any]:
        """Plain JSON-able state."""
        return {
            "snapshots": [asdict(s) for s in self.snapshots.values()],
            "slots": self.slots,
            "slot_indexes": self.slot_indexes,
            "learner_elo": self.learner_elo,
            "games": self.games,
            "window": list(self.window),
            "recent": list(self.recent),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restores `state_dict`'s state.

        Raises:
            ValueError: the state has another number of slots (--num_policies changed).
        """
        if len(state["slots"]) != self.num_slots:
            raise ValueError(f"the saved pool has {len(state['slots'])} slots, this run {self.num_slots}")
        self.snapshots = {int(s["id"]): Snapshot(**s) for s in state["snapshots"]}
        self.slots = [int(s) for s in state["slots"]]
        self.slot_indexes = [int(i) % self.num_slots for i in state["slot_indexes"]][: self.env_update_num]
        while len(self.slot_indexes) < self.env_update_num:  # env_update_num was raised
            self.slot_indexes.append((self.slot_indexes[-1] + 1) % self.num_slots)
        self.learner_elo, self.games = float(state["learner_elo"]), int(state["games"])
        self.window.clear()
        self.window.extend((float(a), float(b)) for a, b in state["window"])
        self.recent.clear()
        self.recent.extend(float(x) for x in state["recent"])


class WeightsPlacement(Protocol):
    """What the controller needs of a placement."""

    def set_policy_weights(
        self, policy_id: int, state_dict: dict[str, torch.Tensor], policy_version: int
    ) -> None: ...

    def policy_weights(self, policy_id: int) -> tuple[dict[str, torch.Tensor], int]: ...


class SelfPlayController:
    """Runs the pool in the main process: reads finished games from the episode reports, promotes
    snapshots through the placement's `set_policy_weights`, logs, saves and restores the pool.

    Args:
        cfg: the run's config (`--self_play*`, num_policies).
        folder: the pool's folder (`<experiment>/self_play`); None keeps nothing on disk.
        writer: policy 0's TensorBoard SummaryWriter, or None.
    """

    #: seconds between two lines of `history.jsonl` and TensorBoard points (and at each snapshot)
    LOG_EVERY_SEC = 5.0

    def __init__(self, cfg: Config, folder: Path | None, writer: Any = None):
        self.pool = SelfPlayPool(
            cfg.num_policies - 1,
            cfg.self_play_update_score,
            cfg.self_play_games_to_check,
            cfg.self_play_check_scores,
            cfg.self_play_env_update_num,
        )
        self.folder, self.writer = folder, writer
        self.placement: WeightsPlacement | None = None
        self.last_log = 0.0
        # the returns of every player's episodes (policy 0 and the slots) summed: 0 while every
        # game is zero-sum; PettingZoo's classic games end an illegal move with -1 for the mover and
        # 0 for the other, so there it is minus the illegal moves of this run (not saved)
        self.return_sum = 0.0

    @property
    def pool_file(self) -> Path | None:
        return None if self.folder is None else self.folder / "pool.json"

    def snapshot_file(self, snapshot_id: int) -> Path | None:
        return None if self.folder is None else self.folder / f"snapshot_{snapshot_id:04d}.pth"

    def start(self, placement: WeightsPlacement, resume: bool, env_frames: int) -> None:
        """Loads the saved pool when `resume` and one exists (its snapshots into their slots), else
        starts one: snapshot 0 = policy 0's current weights, in every slot."""
        self.placement = placement
        pool_file = self.pool_file
        if resume and pool_file is not None and pool_file.exists():
            self.pool.load_state_dict(json.loads(pool_file.read_text()))
            for slot, sid in enumerate(self.pool.slots):
                self._load_slot(slot, sid)
            log.info(
                "Self-play: resumed the pool of %d snapshot(s) from %s (slots hold %s; policy 0 Elo %.0f).",
                len(self.pool.snapshots),
                pool_file,
                self.pool.slots,
                self.pool.learner_elo,
            )
            return
        if self.folder is not None:
            self.folder.mkdir(parents=True, exist_ok=True)
            for old in self.folder.glob("snapshot_*.pth"):  # of a run this one does not resume
                old.unlink()
            (self.folder / "history.jsonl").unlink(missing_ok=True)
        weights, version = placement.policy_weights(0)
        snap = self.pool.snapshots[0]
        snap.policy_version, snap.env_frames = version, env_frames
        self._write_snapshot(snap, weights)
        for slot in range(self.pool.num_slots):
            placement.set_policy_weights(slot + 1, weights, version)
        self.save()
        log.info(
            "Self-play: policy 0 learns against %d opponent slot(s) (policies 1..%d) holding snapshot 0 "
            "(its initial weights); a snapshot joins when the %s over %d games is above %g.",
            self.pool.num_slots,
            self.pool.num_slots,
            "win rate" if self.pool.check_scores else "mean return",
            self.pool.games_to_check,
            self.pool.update_score,
        )

    def on_episodes(self, episodes: Iterable[Any], env_frames: int) -> None:
        """Records the games that finished (episodes of the opponent slots: `policy_id` >= 1 and
        `episode_return`) and promotes a snapshot when the score passes update_score."""
        for ep in episodes:
            p = int(ep.policy_id)
            self.return_sum += float(ep.episode_return)
            if p < 1:
                continue
            self.pool.record(p - 1, float(ep.episode_return))
            if self.pool.should_promote():
                self._promote(env_frames)
        now = time.monotonic()
        if now - self.last_log >= self.LOG_EVERY_SEC and self.pool.games:
            self._log_point(env_frames)

    def _promote(self, env_frames: int) -> None:
        assert self.placement is not None
        value = self.pool.checked_value()
        weights, version = self.placement.policy_weights(0)
        snap, taken = self.pool.promote(version, env_frames)
        self._write_snapshot(snap, weights)
        for slot in taken:
            self.placement.set_policy_weights(slot + 1, weights, version)
        log.info(
            "Self-play: %s %.3f over the last %d games > update_score %g at env frame %d: snapshot %d "
            "(policy version %d, Elo %.0f) now in opponent slot(s) %s (policies %s).",
            "win rate" if self.pool.check_scores else "mean return",
            value,
            self.pool.games_to_check,
            self.pool.update_score,
            env_frames,
            snap.id,
            version,
            snap.elo,
            taken,
            [s + 1 for s in taken],
        )
        self.save()
        self._log_point(env_frames)

    def _log_point(self, env_frames: int) -> None:
        """A TensorBoard point and a `history.jsonl` line: win rate, ratings, pool size."""
        self.last_log = time.monotonic()
        pool = self.pool
        point = {
            "env_frames": env_frames,
            "games": pool.games,
            "win_rate": pool.win_rate(),
            "elo_policy_0": pool.learner_elo,
            "elo_snapshots": {str(s.id): s.elo for s in pool.snapshots.values()},
            "snapshots": len(pool.snapshots),
            "slots": list(pool.slots),
            "return_sum": self.return_sum,
        }
        if self.writer is not None:
            w = self.writer
            w.add_scalar("self_play/win_rate", point["win_rate"], env_frames)
            w.add_scalar("self_play/elo_policy_0", pool.learner_elo, env_frames)
            w.add_scalar("self_play/snapshots", len(pool.snapshots), env_frames)
            w.add_scalar("self_play/games", pool.games, env_frames)
            w.add_scalar("self_play/return_sum", self.return_sum, env_frames)
            for s in pool.snapshots.values():
                w.add_scalar(f"self_play/elo_snapshot_{s.id}", s.elo, env_frames)
        if self.folder is not None:
            with open(self.folder / "history.jsonl", "a") as f:
                f.write(json.dumps(point) + "\n")

    def checkpoint(self, env_frames: int) -> None:
        """At the run's checkpoints: a history point, and the pool saved."""
        if self.pool.games:
            self._log_point(env_frames)
        self.save()

    def save(self) -> None:
        """Writes `pool.json` (atomically: a stop mid-write leaves the previous one)."""
        pool_file = self.pool_file
        if pool_file is None:
            return
        tmp = pool_file.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.pool.state_dict()))
        os.replace(tmp, pool_file)

    def _write_snapshot(self, snap: Snapshot, weights: dict[str, torch.Tensor]) -> None:
        path = self.snapshot_file(snap.id)
        if path is None:
            self._memory = getattr(self, "_memory", {})
            self._memory[snap.id] = weights
            return
        tmp = path.with_suffix(".pth.tmp")
        torch.save(
            {"model": weights, "policy_version": snap.policy_version, "env_frames": snap.env_frames}, tmp
        )
        os.replace(tmp, path)

    def _load_slot(self, slot: int, snapshot_id: int) -> None:
        assert self.placement is not None
        path = self.snapshot_file(snapshot_id)
        if path is None:
            weights = self._memory[snapshot_id]
        else:
            weights = torch.load(path, map_location="cpu", weights_only=True)["model"]
        self.placement.set_policy_weights(slot + 1, weights, self.pool.snapshots[snapshot_id].policy_version)
