"""Population-based training (Jaderberg et al. 2017, "Population Based Training of Neural
Networks"), with Sample Factory's flags and rules (`sample_factory/pbt/population_based_training.py`,
Petrenko et al. 2020, section 3.5). A controller in the main process; it acts on the learners only
through `Placement.send_command` (`SetHyperparams`, `ReplacePolicy`).

Rules (the flags are in docs/population.md):
- Each policy is updated once it played `--pbt_start_mutation` env frames, then every
  `--pbt_period_env_steps` more (strictly more) env frames it played. A policy's env frames are
  the lengths of the episodes it played times the frameskip.
- The objective of a policy is the mean of its last `--stats_avg` episodes' `--pbt_target_objective`
  (`surge.sampling.objective`). No update happens until every policy has one.
- Policies are sorted by objective, best first (ties: the higher id first); the first and the last
  `ceil(pbt_replace_fraction * num_policies)` are the best and the worst. A best policy is left alone.
- Exploit: a worst policy picks one of the best at random and copies its weights, optimizer and
  hyper-parameters when the gap passes both thresholds: |delta| > `--pbt_replace_reward_gap_absolute`
  and |delta / (best + 1e-8)| > `--pbt_replace_reward_gap`.
- Explore: every updated policy but policy 0 (kept as the reference, as in Sample Factory) then
  takes its (possibly copied) hyper-parameters perturbed: each tuned one with probability
  `--pbt_mutation_rate`; then, if it differs from the flag's value, with probability 0.01 back to
  it; else multiplied or divided (coin flip) by a factor drawn uniformly in
  [`--pbt_perturb_min`, `--pbt_perturb_max`]; gamma (`--pbt_optimize_gamma`) moves 1 - gamma the
  same way by a factor in [1.01, 1.2].
- At the start, every policy but 0 without a `--policy_hyperparams` entry is perturbed once.
- Tuned: learning_rate, exploration_loss_coeff, value_loss_coeff, max_grad_norm, ppo_clip_ratio,
  ppo_clip_value (Sample Factory's set; the clip ratios only for algorithms that use them), and
  gamma with `--pbt_optimize_gamma`.

One deviation: a replaced policy's objective window is emptied (its episodes were played by the
weights it no longer has), so its next update waits for episodes of its new weights.

Every update that changes something is logged and appended to `pbt_log.jsonl`; the controller's
state is in `pbt_state.json` (both in the experiment folder) and survives a resume. The log's lines
are written after the state they belong to, and after a replacement both wait for the replaced
policy's checkpoint (`step`, `maybe_release`).
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import random
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from surge.cfg.config import Config, flag_value, has_flag
from surge.cfg.policy_hyperparams import PolicyHyperparams, parse_policy_hyperparams
from surge.learning.algorithm import get_algorithm
from surge.runtime.commands import Command, ReplacePolicy, SetHyperparams, SetRewardShaping
from surge.sampling.objective import TRUE_REWARD
from surge.sampling.shaping import default_reward_shaping

log = logging.getLogger("surge")

EPS = 1e-8  # Sample Factory's EPS in the relative gap
#: the reward-shaping sections PBT perturbs (Sample Factory's REWARD_CATEGORIES_TO_TUNE for Doom)
SHAPING_SECTIONS = ("delta", "selected_weapon")
#: Sample Factory's HYPERPARAMS_TO_TUNE
TUNED = (
    "learning_rate",
    "exploration_loss_coeff",
    "value_loss_coeff",
    "max_grad_norm",
    "ppo_clip_ratio",
    "ppo_clip_value",
)


def tuned_names(cfg: Config) -> list[str]:
    """The hyper-parameters PBT perturbs for this run (module docstring): those of `TUNED` a section
    of this run's config has (the clip ratios are APPO's section's) and its algorithm uses."""
    unused = set(get_algorithm(cfg.algo).unused_params)
    names = [n for n in TUNED if n not in unused and has_flag(cfg, n)]
    if cfg.pbt_optimize_gamma:
        names.append("gamma")
    return names


class PopulationBasedTraining:
    """See the module docstring.

    Args:
        cfg: the run's config (the PBT flags, num_policies, stats_avg, seed).
        send: `Placement.send_command`.
        state_file: where the state is saved and resumed from (None: neither).
        log_file: `pbt_log.jsonl` (None: not written).
        writers: one TensorBoard writer per policy (may be empty).
    """

    def __init__(
        self,
        cfg: Config,
        send: Callable[[Command], None],
        state_file: Path | None = None,
        log_file: Path | None = None,
        writers: list[Any] | None = None,
    ):
        self.cfg, self.send = cfg, send
        self.state_file, self.log_file = state_file, log_file
        #: a replacement's checkpoints are not written yet: `save` waits for `release`
        self.held = False
        self.waits: dict[int, int] = {}  # replaced policy -> its checkpoints written at the replacement
        self._unwritten: list[dict[str, Any]] = []  # log records of changes the state file lacks
        self.writers = writers or []
        P = cfg.num_policies
        self.names = tuned_names(cfg)
        self.defaults = {n: float(flag_value(cfg, n)) for n in self.names}
        self.rng = random.Random(cfg.seed)
        self.frames_played = [0] * P
        self.last_update = [0] * P
        self.objectives: list[deque[float]] = [deque(maxlen=cfg.stats_avg) for _ in range(P)]
        self.episodes_seen = 0
        self.objective_seen = False
        self.warned_missing = False
        self.hyperparams: list[dict[str, float]] = []
        # each policy's reward shaping (Doom scenarios with shaping; None elsewhere)
        self.default_shaping = default_reward_shaping(cfg)
        self.shaping: list[dict | None] = []
        explicit = parse_policy_hyperparams(cfg.policy_hyperparams, P)
        resumed = self._load()
        if not resumed:
            for p in range(P):
                hp = PolicyHyperparams.from_cfg(cfg, p).to_dict()
                values = {n: hp[n] for n in self.names}
                shaping = copy.deepcopy(self.default_shaping)
                if p > 0 and p not in explicit:  # keep policy 0 (and given values) as they are
                    values = self.perturb(values)
                if p > 0:
                    shaping = self.perturb_shaping(shaping)
                self.hyperparams.append(values)
                self.shaping.append(shaping)

    # ------------------------------------------------------------------------------------------
    def start(self, env_frames: int) -> None:
        """Sends every policy its hyper-parameters (Sample Factory's `on_start`) and logs them."""
        for p, values in enumerate(self.hyperparams):
            self.send(SetHyperparams(p, dict(values)))
            scheme = self.shaping[p]
            if scheme is not None:
                self.send(SetRewardShaping(p, copy.deepcopy(scheme)))
            log.info("PBT: policy %d starts with %s", p, _fmt(values))
        self._append(
            {
                "env_frames": env_frames,
                "event": "start",
                "hyperparams": self.hyperparams,
                "reward_shaping": self.shaping,
            }
        )
        self.save()

    def observe(self, episodes: list[Any], frameskip: int) -> None:
        """Counts finished episodes (`EpisodeStats`): env frames played and objective per policy."""
        name = self.cfg.pbt_target_objective
        for ep in episodes:
            p = ep.policy_id
            self.frames_played[p] += int(ep.episode_length) * frameskip
            self.episodes_seen += 1
            if name == TRUE_REWARD:
                value: float | None = float(ep.episode_return)
            else:
                value = (ep.extra or {}).get(name)
            if value is None or not math.isfinite(value):
                continue
            self.objective_seen = True
            self.objectives[p].append(float(value))
        if not self.objective_seen and not self.warned_missing and self.episodes_seen >= 100:
            self.warned_missing = True
            log.warning(
                "PBT: %d episodes finished and none reported --pbt_target_objective=%s in its info "
                "(info['episode_extra_stats'], info or info['game_variables']): PBT cannot rank the "
                "policies until one does. Pass true_reward or a statistic the env reports.",
                self.episodes_seen,
                name,
            )

    def step(self, env_frames: int, checkpoints_written: list[int] | None = None) -> list[dict[str, Any]]:
        """Updates every policy that is due (module docstring); returns its log records. Saves the
        state unless a policy was replaced: then the state (and the log records, which are written
        after the state they belong to) is held until the caller has the replaced policies'
        checkpoints written and calls `release`, so a kill at any moment cannot leave a state or
        a log that counts a policy as replaced beside its old weights. `checkpoints_written`:
        the placement's count of each policy's regular checkpoints (`maybe_release` waits for the
        replaced ones' to pass it)."""
        if checkpoints_written is not None:  # an earlier replacement's checkpoints may be written
            self.maybe_release(checkpoints_written)
        cfg, out = self.cfg, []
        for p in range(cfg.num_policies):
            played = self.frames_played[p]
            if played < cfg.pbt_start_mutation or played - self.last_update[p] <= cfg.pbt_period_env_steps:
                continue
            record = self.update_policy(p, env_frames)
            self.last_update[p] = played
            if record is not None:
                out.append(record)
        if replaced(out):
            self.held = True
            for r in out:
                if r["event"] == "replace" and checkpoints_written is not None:
                    self.waits[r["policy"]] = checkpoints_written[r["policy"]]
        elif out:
            self.save()
        return out

    # ------------------------------------------------------------------------------------------
    def ranking(self) -> tuple[list[float], list[int], list[int]] | None:
        """(mean objective per policy, best policies, worst policies), or None while a policy has
        no objective value yet."""
        if any(not o for o in self.objectives):
            return None
        means = [float(sum(o) / len(o)) for o in self.objectives]
        order = [p for _, p in sorted(zip(means, range(len(means)), strict=True), reverse=True)]
        n = math.ceil(self.cfg.pbt_replace_fraction * self.cfg.num_policies)
        return means, order[:n], order[-n:]

    def update_policy(self, p: int, env_frames: int) -> dict[str, Any] | None:
        """One PBT update of policy `p` (exploit, then explore); returns its log record, or None
        when nothing changed."""
        cfg = self.cfg
        ranked = self.ranking()
        if ranked is None:
            return None
        means, best, worst = ranked
        if p in best:
            return None
        source = p
        gap = None
        if p in worst:
            candidate = self.rng.choice(best)
            delta = means[candidate] - means[p]
            relative = abs(delta / (means[candidate] + EPS))
            gap = (delta, relative)
            if abs(delta) > cfg.pbt_replace_reward_gap_absolute and relative > cfg.pbt_replace_reward_gap:
                source = candidate
        old, base = dict(self.hyperparams[p]), dict(self.hyperparams[source])
        new = dict(base) if p == 0 else self.perturb(base)
        base_shaping = copy.deepcopy(self.shaping[source])
        shaping = base_shaping if p == 0 else self.perturb_shaping(base_shaping)
        self.hyperparams[p], self.shaping[p] = new, shaping
        if source != p:
            self.send(ReplacePolicy(p, source))
            self.objectives[p].clear()
        self.send(SetHyperparams(p, dict(new)))
        if shaping is not None:
            self.send(SetRewardShaping(p, copy.deepcopy(shaping)))
        mutated = {k: [base[k], v] for k, v in new.items() if base[k] != v}  # the explore step
        shaping_mutated = _diff(base_shaping, shaping)
        if source == p and not mutated and not shaping_mutated:
            return None
        record = {
            "env_frames": env_frames,
            "policy_env_frames": self.frames_played[p],
            "event": "replace" if source != p else "mutate",
            "policy": p,
            "source": source,
            "objective": means[p],
            "source_objective": means[source],
            "objectives": means,
            "gap": None if gap is None else {"absolute": gap[0], "relative": gap[1]},
            "previous": old,
            "mutated": mutated,
            "hyperparams": new,
            "reward_shaping_mutated": shaping_mutated,
            "reward_shaping": shaping,
        }
        if source != p:
            log.info(
                "PBT at env frame %d: policy %d (objective %.4g) replaced by policy %d (%.4g): its weights, "
                "optimizer and hyper-parameters%s",
                env_frames, p, means[p], source, means[source], f"; then mutated {_fmt_changes(mutated)}" if mutated else "",
            )  # fmt: skip
        else:
            log.info("PBT at env frame %d: policy %d mutated %s", env_frames, p, _fmt_changes(mutated))
        self._append(record)
        if p < len(self.writers):
            self.writers[p].add_scalar("pbt/objective", means[p], env_frames)
            self.writers[p].add_scalar("pbt/copied_from", source, env_frames)
        return record

    # ------------------------------------------------------------------------------------------
    def perturb(self, values: dict[str, float]) -> dict[str, float]:
        """A perturbed copy of `values` (the module docstring's explore rule)."""
        out = copy.deepcopy(values)
        for name, value in values.items():
            out[name] = self.perturb_value(name, value, self.defaults[name])
        return out

    def perturb_shaping(self, scheme: dict | None) -> dict | None:
        """A copy of a reward-shaping scheme with the values of its `SHAPING_SECTIONS` perturbed
        as hyper-parameters are (a `[increase, decrease]` pair: each element on its own), the
        defaults being the env's own scheme (Sample Factory's `_perturb_reward`)."""
        if scheme is None:
            return None
        out = copy.deepcopy(scheme)
        default = self.default_shaping or {}
        for section in SHAPING_SECTIONS:
            for key, value in out.get(section, {}).items():
                ref = default.get(section, {}).get(key, value)
                if isinstance(value, (list, tuple)):
                    out[section][key] = [
                        self.perturb_value(f"{key}_{i}", float(v), float(ref[i])) for i, v in enumerate(value)
                    ]
                else:
                    out[section][key] = self.perturb_value(key, float(value), float(ref))
        return out

    def perturb_value(self, name: str, value: float, default: float) -> float:
        cfg, rng = self.cfg, self.rng
        if rng.random() > cfg.pbt_mutation_rate:
            return value
        if value != default and rng.random() < 0.01:
            return default
        if name == "gamma":  # Sample Factory's perturb_exponential_decay
            amount = rng.uniform(1.01, 1.2)
            return max(EPS, 1.0 - _scale(1.0 - value, amount, rng))
        return _scale(value, rng.uniform(cfg.pbt_perturb_min, cfg.pbt_perturb_max), rng)

    # ------------------------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        version, internal, gauss = self.rng.getstate()
        return {
            "hyperparams": self.hyperparams,
            "reward_shaping": self.shaping,
            "frames_played": self.frames_played,
            "last_update": self.last_update,
            "objectives": [list(o) for o in self.objectives],
            "rng": [version, list(internal), gauss],
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        P = self.cfg.num_policies
        if len(state["hyperparams"]) != P:
            raise ValueError(f"PBT state of {len(state['hyperparams'])} policies, this run has {P}")
        self.hyperparams = [
            {n: float(v[n]) if n in v else self.defaults[n] for n in self.names} for v in state["hyperparams"]
        ]
        self.shaping = state.get("reward_shaping") or [copy.deepcopy(self.default_shaping) for _ in range(P)]
        self.frames_played = [int(x) for x in state["frames_played"]]
        self.last_update = [int(x) for x in state["last_update"]]
        for o, saved in zip(self.objectives, state["objectives"], strict=True):
            o.extend(float(x) for x in saved)
        version, internal, gauss = state["rng"]
        self.rng.setstate((version, tuple(internal), gauss))

    def save(self) -> None:
        """Writes the state to `state_file` (atomically), then appends the log records made since
        the last save; nothing while a replacement's checkpoints are awaited (`held`)."""
        if self.held:
            return
        if self.state_file is not None:
            tmp = self.state_file.with_suffix(".json.tmp")
            tmp.write_text(json.dumps(self.state_dict()))
            os.replace(tmp, self.state_file)
        records, self._unwritten = self._unwritten, []
        if self.log_file is not None and records:
            with open(self.log_file, "a") as f:
                f.writelines(json.dumps(r) + "\n" for r in records)

    def release(self) -> None:
        """The replaced policies' checkpoints are written: saves the held state and log records."""
        self.held = False
        self.waits.clear()
        self.save()

    def maybe_release(self, checkpoints_written: list[int]) -> None:
        """`release` once every policy replaced since the last save has a regular checkpoint
        written after its replacement (its count in `checkpoints_written` passed the one `step`
        saw)."""
        if self.held and all(checkpoints_written[q] > n for q, n in self.waits.items()):
            self.release()

    def _load(self) -> bool:
        path = self.state_file
        if path is None or not path.exists() or self.cfg.restart_behavior != "resume":
            return False
        self.load_state_dict(json.loads(path.read_text()))
        log.info("PBT resumed from %s (env frames played per policy: %s)", path, self.frames_played)
        return True

    def _append(self, record: dict[str, Any]) -> None:
        """Queues a log record; the next `save` writes it after the state it belongs to."""
        self._unwritten.append(record)


def replaced(records: list[dict[str, Any]]) -> bool:
    """Whether `PopulationBasedTraining.step`'s records hold a replacement (copied weights)."""
    return any(r["event"] == "replace" for r in records)


def _scale(x: float, amount: float, rng: random.Random) -> float:
    """Sample Factory's perturb_float: `x / amount` or `x * amount`, with probability 1/2 each."""
    return x / amount if rng.random() < 0.5 else x * amount


def _diff(old: dict | None, new: dict | None) -> dict[str, list]:
    """`{"section/key": [old, new]}` of the reward-shaping values that differ."""
    out: dict[str, list] = {}
    for section in SHAPING_SECTIONS:
        a, b = (old or {}).get(section, {}), (new or {}).get(section, {})
        for key in b:
            if a.get(key) != b[key]:
                out[f"{section}/{key}"] = [a.get(key), b[key]]
    return out


def _fmt(values: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:.6g}" for k, v in values.items())


def _fmt_changes(changed: dict[str, list[float]]) -> str:
    return ", ".join(f"{k} {a:.6g} -> {b:.6g}" for k, (a, b) in changed.items()) or "(no change)"
