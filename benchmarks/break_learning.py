"""Breaks the learning machinery on purpose, one piece at a time, and reports which tests catch it.

    python benchmarks/break_learning.py                 # every breakage, fast tests + learning tests
    python benchmarks/break_learning.py --quick         # only the learning-guard test files
    python benchmarks/break_learning.py --only vtrace_no_importance_weights --keep
    python benchmarks/break_learning.py --list          # the breakages and their substitutions

The working tree (tracked files and untracked ones git does not ignore, as they are now) is copied
to a temporary folder; the repository itself is never modified. In the copy, the script first runs
the tests unbroken (the baseline), then for each breakage applies its code substitution, runs the
same tests, and restores the file. A breakage is a list of alternative (exact snippet, replacement)
pairs; the first snippet found anywhere under `surge/` is replaced wherever it occurs (so a
breakage survives a file being moved). A breakage none of whose snippets is found is reported as
NOT APPLIED, never as passing.

What runs each time (in the copy, with `PYTHONPATH` set to it, niceness +10):
1. `pytest -m "not slow" tests/unit tests/integration` (the fast tests; `--quick`: only the files
   in `QUICK_FILES`);
2. `pytest tests/learning/test_memory.py` (the memory learning tests, marked slow, ~10-40 s each).

A test "catches" a breakage when it fails with the breakage and passed in the baseline; tests that
fail in the baseline are listed separately and never counted. The final table is printed as
Markdown (and written to `--out` if given).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

FAST_DIRS = ["tests/unit", "tests/integration"]
QUICK_FILES = [
    "tests/unit/test_returns.py",
    "tests/unit/test_ppo_loss.py",
    "tests/integration/test_learner.py",
    "tests/integration/test_learner_reference.py",
    "tests/integration/test_a2c_reference.py",
    "tests/integration/test_rnn_state_protocol.py",
    "tests/integration/test_lr_schedule.py",
    "tests/integration/test_batched_sampling.py",
    "tests/integration/test_dqn_guards.py",
    "tests/integration/test_dqn_reference.py",
    "tests/integration/test_replay_learner_base.py",
    "tests/unit/test_qpg_reference.py",
    "tests/integration/test_r2d2_reference.py",
    "tests/integration/test_rnn_state_across_rollouts.py",
    "tests/integration/test_obs_normalizer_learns.py",
    "tests/integration/test_r2d2_target_network.py",
    "tests/unit/test_a2c_critic_default.py",  # a2c_shared_critic
]
LEARNING_FILES = ["tests/learning/test_memory.py"]


@dataclass
class Breakage:
    """One deliberate bug: `alternatives` are (exact snippet, replacement) pairs, tried in order
    (older and newer spellings of the same line); the first found under surge/ is applied."""

    name: str
    description: str
    alternatives: list[tuple[str, str]]


BREAKAGES = [
    Breakage(
        "vtrace_no_importance_weights",
        "V-trace without importance weights: log-ratios zeroed where the learner computes them",
        [
            (
                "log_rhos = model.distribution(logits).log_prob(mb.actions) - mb.behavior_log_probs",
                "log_rhos = torch.zeros_like(mb.behavior_log_probs)",
            ),
            (
                'log_rhos = model.distribution(logits).log_prob(mb["actions"]) - mb["behavior_log_probs"]',
                'log_rhos = torch.zeros_like(mb["behavior_log_probs"])',
            ),
        ],
    ),
    Breakage(
        "vtrace_no_traces",
        "V-trace without traces: c-bar = 0 where the learner calls vtrace",
        [
            (  # the minibatch's call in `_step` (not the central value's `_cv_vtrace_targets`)
                "self.appo.vtrace_c,\n                    truncated=mb.truncated,",
                "0.0,\n                    truncated=mb.truncated,",
            ),
            (
                'rewards, v, mb["dones"], log_rhos, self.hp.gamma, self.appo.vtrace_rho, self.appo.vtrace_c',
                'rewards, v, mb["dones"], log_rhos, self.hp.gamma, self.appo.vtrace_rho, 0.0',
            ),
        ],
    ),
    Breakage(
        "gae_lambda_is_1",
        "GAE with lambda ignored: lambda = 1 where the learner calls gae",
        [
            ("hp.gamma,\n            hp.gae_lambda,\n", "hp.gamma,\n            1.0,\n"),
            ("hp.gamma, hp.gae_lambda)", "hp.gamma, 1.0)"),
        ],
    ),
    Breakage(
        "gae_lambda_is_0",
        "GAE with lambda ignored: lambda = 0 where the learner calls gae",
        [
            ("hp.gamma,\n            hp.gae_lambda,\n", "hp.gamma,\n            0.0,\n"),
            ("hp.gamma, hp.gae_lambda)", "hp.gamma, 0.0)"),
        ],
    ),
    Breakage(
        "rnn_state_not_carried",
        "RNN state not carried between steps: inference writes zeros as the next hidden state",
        [
            (  # both of inference's paths (numpy views, tensor indexing) write through this method
                "        if not value.shape[-1]:\n            return\n",
                "        if not value.shape[-1]:\n            return\n        value = torch.zeros_like(value)\n",
            ),
            (
                "buf.rnn_states[slots, ts + 1] = value if on_cpu else value.cpu()",
                "buf.rnn_states[slots, ts + 1] = 0.0",
            ),
            (
                "buf.rnn_states[slots, ts + 1] = value.cpu()",
                "buf.rnn_states[slots, ts + 1] = torch.zeros_like(value).cpu()",
            ),
            (
                "buf.rnn_states[slots, ts + 1] = out.rnn_states.cpu()",
                "buf.rnn_states[slots, ts + 1] = torch.zeros_like(out.rnn_states).cpu()",
            ),
        ],
    ),
    Breakage(
        "rnn_state_not_reset",
        "RNN state not reset at episode starts: the rollout worker does not zero rnn_states at done",
        [
            (
                'buf["rnn_states"][split.np_slots[done], t + 1] = 0.0',
                "pass  # broken: rnn_states not reset at done",
            ),
            (
                "buf.rnn_states[slots[torch.from_numpy(done)], t + 1] = 0.0",
                "pass  # broken: rnn_states not reset at done",
            ),
        ],
    ),
    Breakage(
        "rnn_state_not_carried_across_rollouts",
        "RNN state zeroed at the start of every rollout instead of carried over from the last one's end",
        [("        carry(self.rnn_states)\n", "        self.rnn_states[new_slots, 0] = 0.0\n")],
    ),
    Breakage(
        "obs_normalizer_never_updated",
        "the observation normaliser never learns: the learner skips folding the batch into it",
        [("        norm.update(obs)\n", "        pass  # broken: normaliser not updated\n")],
    ),
    Breakage(
        "obs_normalizer_never_updated_minibatch",
        "with --obs_normalizer_update=minibatch, the observation normaliser never learns",
        [
            (
                "norm.update(tree_map(lambda x: x[:L][mask], mb.obs))",
                "pass  # broken: normaliser not updated",
            ),
            (
                'norm.update(tree_map(lambda x: x[:L][mask], mb["obs"]))',
                "pass  # broken: normaliser not updated",
            ),
        ],
    ),
    Breakage(
        "returns_normalizer_never_updated",
        "with --normalize_returns, the returns normaliser never learns (the value targets are not folded in)",
        [
            (
                "norm.update(targets[(valids > 0) & torch.isfinite(targets)])",
                "pass  # broken: returns normaliser not updated",
            )
        ],
    ),
    Breakage(
        "central_value_normalizer_never_updated",
        "the central value's state normaliser never learns",
        [("self.module.normalizer.update(states[mask])", "pass  # broken: normaliser not updated")],
    ),
    Breakage(
        "no_ratio_clipping",
        "PPO without ratio clipping: the clipped ratio is the ratio",
        [
            (
                "clipped = ratio.clamp(1.0 - eps if cfg.symmetric_clip else 1.0 / (1.0 + eps), 1.0 + eps)",
                "clipped = ratio",
            )
        ],
    ),
    Breakage(
        "no_value_clipping",
        "value loss without clipping: the clipped value is the value",
        [
            (
                "v_clipped = old_values + (values - old_values).clamp(-cfg.ppo_clip_value, cfg.ppo_clip_value)",
                "v_clipped = values",
            )
        ],
    ),
    Breakage(
        "truncation_as_termination",
        "truncation treated as termination: no bootstrap on time-outs (prepare_batch marks every end terminated)",
        [
            (
                'terminated=d.pop("terminated").float(),',
                'terminated=(d.pop("terminated") | d["truncated"]).float(),',
            ),
            (
                'd["trunc"] = (truncated & ~terminated).float()',
                'd["trunc"] = torch.zeros_like(truncated).float()',
            ),
            ("trunc=(truncated & ~terminated).float(),", "trunc=torch.zeros_like(truncated).float(),"),
        ],
    ),
    Breakage(
        "no_advantage_normalization",
        "advantage normalisation off in the learner",
        [("if cfg.normalize_advantage:", "if False:  # broken: cfg.normalize_advantage ignored")],
    ),
    Breakage(
        "a2c_entropy_sign",
        "A2C's entropy bonus with the wrong sign: the exploration loss rewards a peaked policy",
        [
            (
                "exploration_loss = -entropy_coeff * mean_entropy",
                "exploration_loss = entropy_coeff * mean_entropy",
            )
        ],
    ),
    Breakage(
        "a2c_advantage_not_detached",
        "A2C's advantages from the live critic, not detached: R - V(s) with V's gradient in the policy loss",
        [
            (
                "            flat(values),\n            flat(adv),\n            flat(targets),\n",
                "            flat(values),\n            flat(targets - values),\n            flat(targets),\n",
            )
        ],
    ),
    Breakage(
        "lr_schedule_ignored",
        "learning-rate schedule ignored: the learner always uses its base learning rate",
        [
            # the policy's own base rate (PBT may change it), never decayed
            (
                "lr = learning_rate(self.cfg, env_frames, self.hp.learning_rate)",
                "lr = self.hp.learning_rate",
            ),
        ],
    ),
    # --- DQN (surge/algorithms/dqn/declaration.py, surge/learning/replay_learner.py); fast guards in
    # tests/integration/test_dqn_guards.py and test_dqn_reference.py
    Breakage(
        "dqn_target_never_updated",
        "DQN's target network never follows the online one (the update is skipped)",
        [("polyak_update(self.target, self.online, self.params.target_update_tau)", "pass  # broken")],
    ),
    Breakage(
        "dqn_wrong_target_update",
        "DQN's target update with tau and 1 - tau swapped (theta' <- (1 - tau) theta + tau theta')",
        [
            (
                "polyak_update(self.target, self.online, self.params.target_update_tau)",
                "polyak_update(self.target, self.online, 1.0 - self.params.target_update_tau)",
            )
        ],
    ),
    Breakage(
        "dqn_no_importance_weights",
        "DQN's TD loss ignores prioritized replay's importance weights",
        [
            (
                "t = td_loss(q_taken, y, s.is_weights, p.dqn_loss)",
                "t = td_loss(q_taken, y, None, p.dqn_loss)",
            )
        ],
    ),
    Breakage(
        "dqn_epsilon_never_decays",
        "DQN's epsilon stays at exploration_initial_eps (the schedule reads env frame 0)",
        [("return self.eps(ctx.env_frames)", "return self.eps(0)")],
    ),
    Breakage(
        "dqn_target_sync_skipped",
        "DQN's and R2D2's target update never due: sync_target returns before updating",
        [("        if k <= self.target_syncs:\n            return False\n", "        return False\n")],
    ),
    Breakage(
        "per_priorities_never_updated",
        "prioritized replay's priorities never follow the TD errors (the learner skips the update)",
        [
            (
                "self.replay.update_priorities(s.indices.cpu(), s.td_errors)",
                "pass  # broken: priorities not updated",
            )
        ],
    ),
    # --- SAC, TD3, DDPG (surge/algorithms/sac/declaration.py, td3.py, ddpg.py); fast guards in
    # tests/unit/test_qpg_reference.py
    Breakage(
        "td3_single_critic_target",
        "TD3's target takes the first target critic only, no clipped double Q",
        [
            (
                "y = clipped_double_q_target(batch.returns, batch.discounts, next_q[0], next_q[1])",
                "y = clipped_double_q_target(batch.returns, batch.discounts, next_q[0], next_q[0])",
            )
        ],
    ),
    Breakage(
        "td3_no_target_smoothing",
        "TD3's target policy smoothing skipped (no clipped noise on the target action)",
        [("next_a = td3_smoothed_actions(next_a, sigma, clip, noise=noise)", "next_a = next_a")],
    ),
    Breakage(
        "td3_no_policy_delay",
        "TD3's actor and targets updated at every critic update (policy_delay ignored)",
        [("if self.update_number % delay == 0:", "if True:")],
    ),
    Breakage(
        "qpg_wrong_target_update",
        "SAC/TD3/DDPG critic target update with tau and 1 - tau swapped",
        [
            (
                "polyak_update(critic_target, critic, self.qpg.tau)",
                "polyak_update(critic_target, critic, 1.0 - self.qpg.tau)",
            )
        ],
    ),
    Breakage(
        "sac_temperature_sign",
        "SAC's temperature loss with its sign flipped (alpha rises when the entropy is above target)",
        [("loss_alpha = sac_temperature_loss(", "loss_alpha = -sac_temperature_loss(")],
    ),
    Breakage(
        "replay_truncation_as_termination",
        "the replay learner stores truncated steps as terminated (no bootstrap at time limits)",
        [
            (
                '"terminated": term.cpu(),\n            "truncated": trunc.cpu(),',
                '"terminated": (term | trunc).cpu(),\n            "truncated": torch.zeros_like(trunc).cpu(),',
            ),
            ('"trunc": b["trunc"].cpu(),', '"trunc": torch.zeros_like(b["trunc"]).cpu(),'),
        ],
    ),
    # --- R2D2 (surge/algorithms/r2d2/declaration.py); fast guard in tests/integration/test_r2d2_reference.py
    Breakage(
        "r2d2_stored_state_ignored",
        "R2D2 unrolls every sequence from a zero state instead of the RNN state stored with it",
        [("states = s.rnn_states[None]", "states = torch.zeros_like(s.rnn_states)[None]")],
    ),
    Breakage(
        "r2d2_target_never_updated",
        "R2D2's target network never follows the online one (its sync_target is never due)",
        [
            (
                '        `target_update_interval` since the last update; True if it did."""\n'
                "        k = self.env_steps // self.params.target_update_interval\n"
                "        if k <= self.target_syncs:\n            return False\n",
                '        `target_update_interval` since the last update; True if it did."""\n'
                "        return False\n",
            )
        ],
    ),
    Breakage(
        "r2d2_priorities_never_updated",
        "R2D2's sequence priorities never follow the TD errors (the update is skipped)",
        [
            (
                "self.replay.update_priorities(samples.indices.cpu(), td_abs.cpu(), mask.cpu())",
                "pass  # broken: priorities not updated",
            )
        ],
    ),
    Breakage(
        "r2d2_value_rescale_inverse_missing",
        "R2D2's target rescales the bootstrap value again instead of un-rescaling it (h(R + d q), not h(R + d h^-1(q)))",
        [
            (
                "value_rescale(returns + discounts * inverse_value_rescale(boot, eps), eps)",
                "value_rescale(returns + discounts * boot, eps)",
            )
        ],
    ),
    Breakage(
        "a2c_shared_critic",
        "A2C's critic shares the actor's encoder by default (its raw-return value term then drives it)",
        [('"actor_critic_share_weights": shared_encoder_for_images,', '"actor_critic_share_weights": True,')],
    ),
]


# --------------------------------------------------------------------------------------------------
def copy_tree(dst: Path) -> None:
    """Copies the tracked and the untracked-but-not-ignored files of the working tree to `dst`."""
    out = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True, capture_output=True
    ).stdout.decode()
    for rel in filter(None, out.split("\0")):
        src = ROOT / rel
        if src.is_file() and not src.is_symlink():  # tracked files deleted in the tree are skipped
            (dst / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst / rel)


def locate(tree: Path, b: Breakage) -> tuple[str, str, dict[Path, str]] | None:
    """The first alternative of `b` whose snippet occurs in a `.py` file under tree/surge, as
    (snippet, replacement, {file: its text} for every file holding it); None if no snippet does
    (the breakage no longer applies: `tests/unit/test_break_learning_applies.py` fails then)."""
    texts = {f: f.read_text() for f in sorted((tree / "surge").rglob("*.py"))}
    for snippet, replacement in b.alternatives:
        hits = {f: text for f, text in texts.items() if snippet in text}
        if hits:
            return snippet, replacement, hits
    return None


def apply(tree: Path, b: Breakage) -> tuple[dict[Path, str], str]:
    """Applies the first alternative of `b` found under tree/surge (`locate`); returns the original
    texts of the files it changed (to restore them) and a description of what was done."""
    found = locate(tree, b)
    if found is None:
        return {}, "NOT APPLIED: snippet not found under surge/: " + " | ".join(s for s, _ in b.alternatives)
    snippet, replacement, hits = found
    where = []
    for f, text in hits.items():
        f.write_text(text.replace(snippet, replacement))
        where.append(f"{f.relative_to(tree)} (x{text.count(snippet)})")
    return hits, ", ".join(where)


def run_pytest(
    tree: Path, args: list[str], xml: Path, env: dict[str, str], log
) -> tuple[set[str], set[str], int]:
    """Runs pytest in `tree`; returns (passed, failed-or-errored test ids, exit code)."""
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}", *args]
    log(f"  $ {' '.join(cmd[1:])}")
    proc = subprocess.run(cmd, cwd=tree, env=env, capture_output=True, text=True)
    tail = proc.stdout.strip().splitlines()[-1:] if proc.stdout.strip() else []
    log("    " + (tail[0] if tail else f"(no output) {proc.stderr[-500:]}"))
    passed, failed = set(), set()
    if xml.exists():
        for case in ET.parse(xml).getroot().iter("testcase"):
            module = case.get("classname", "").split(".")[-1]
            test_id = f"{module}::{case.get('name')}"
            if case.find("failure") is not None or case.find("error") is not None:
                failed.add(test_id)
            elif case.find("skipped") is None:
                passed.add(test_id)
        xml.unlink()
    if proc.returncode not in (0, 1) and not failed:  # collection error, internal error, ...
        failed.add(f"<pytest exit code {proc.returncode}: {' '.join(args)}>")
        log(proc.stdout[-2000:] + proc.stderr[-2000:])
    return passed, failed, proc.returncode


def run_tests(
    tree: Path, fast: list[str], learning: bool, env: dict[str, str], log
) -> tuple[set[str], set[str]]:
    runs = [["-m", "not slow", *fast]]
    if learning:
        runs.append(LEARNING_FILES)
    passed, failed = set(), set()
    for i, args in enumerate(runs):
        p, f, _ = run_pytest(tree, args, tree / f".junit_{i}.xml", env, log)
        passed |= p
        failed |= f
    return passed, failed


def group_params(test_ids: list[str]) -> list[str]:
    """`m::t[a]`, `m::t[b]` -> `m::t[a, b]` (one entry per test function, in order)."""
    groups: dict[str, list[str]] = {}
    for t in test_ids:
        base, _, param = t.partition("[")
        groups.setdefault(base, [])
        if param:
            groups[base].append(param.rstrip("]"))
    return [f"{base}[{', '.join(ps)}]" if ps else base for base, ps in groups.items()]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", nargs="*", help="run only these breakages (names from --list)")
    ap.add_argument(
        "--quick", action="store_true", help="only the learning-guard test files, not all fast tests"
    )
    ap.add_argument(
        "--tests", nargs="+", help="run these test paths with -m 'not slow' instead of the fast tests"
    )
    ap.add_argument("--no-learning", action="store_true", help="skip tests/learning/test_memory.py")
    ap.add_argument(
        "--no-baseline", action="store_true", help="skip the unbroken run (then nothing is excluded)"
    )
    ap.add_argument("--keep", action="store_true", help="keep the temporary copy")
    ap.add_argument("--list", action="store_true", help="print the breakages and exit")
    ap.add_argument("--out", type=Path, help="also write the report (Markdown) to this file")
    a = ap.parse_args()

    if a.list:
        for b in BREAKAGES:
            print(f"{b.name}: {b.description}")
            for s, r in b.alternatives:
                print(f"    {s!r}\n -> {r!r}")
        return 0
    chosen = [b for b in BREAKAGES if not a.only or b.name in a.only]
    unknown = set(a.only or ()) - {b.name for b in BREAKAGES}
    if unknown:
        ap.error(f"unknown breakage(s): {', '.join(sorted(unknown))}")

    try:
        os.nice(10)  # the machine is shared
    except OSError:
        pass
    fast = a.tests or (QUICK_FILES if a.quick else FAST_DIRS)
    lines: list[str] = []

    def log(msg: str) -> None:
        print(msg, flush=True)
        lines.append(msg)

    tmp = Path(tempfile.mkdtemp(prefix="break_learning_"))
    tree = tmp / "tree"
    copy_tree(tree)
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    where = subprocess.run(
        [sys.executable, "-c", "import surge; print(surge.__file__)"],
        cwd=tree,
        env=env,
        capture_output=True,
        text=True,
    ).stdout.strip()
    if not where.startswith(str(tree)):
        print(f"the copy does not import its own surge (got {where!r}); aborting", file=sys.stderr)
        return 2
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True).stdout
    log(
        f"# break_learning: copy of {ROOT} at {head.stdout.strip()}{' + uncommitted changes' if dirty else ''}"
    )
    log(f"# {time.strftime('%Y-%m-%d %H:%M:%S')}, copy in {tree}")
    log(
        f"# tests: -m 'not slow' {' '.join(fast)}"
        + ("" if a.no_learning else f"; {' '.join(LEARNING_FILES)}")
    )

    baseline_failed: set[str] = set()
    if not a.no_baseline:
        t0 = time.time()
        log("\n## baseline (unbroken)")
        passed, baseline_failed = run_tests(tree, fast, not a.no_learning, env, log)
        log(f"  {len(passed)} passed, {len(baseline_failed)} failed ({time.time() - t0:.0f} s)")
        for t in sorted(baseline_failed):
            log(f"  FAILS UNBROKEN: {t}")

    rows = []
    for b in chosen:
        t0 = time.time()
        log(f"\n## {b.name}: {b.description}")
        originals, what = apply(tree, b)
        log(f"  applied: {what}")
        if not originals:
            rows.append((b, what, None))
            continue
        try:
            _, failed = run_tests(tree, fast, not a.no_learning, env, log)
        finally:
            for f, text in originals.items():
                f.write_text(text)
        caught = sorted(failed - baseline_failed)
        log(f"  caught by {len(caught)} test(s) ({time.time() - t0:.0f} s)")
        for t in caught:
            log(f"    {t}")
        rows.append((b, what, caught))

    log("\n| breakage | applied in | caught by (failing tests that pass unbroken) |")
    log("|---|---|---|")
    for b, what, caught in rows:
        if caught is None:
            cell = "**NOT APPLIED** (snippet not found)"
        elif not caught:
            cell = "**NOT CAUGHT**"
        else:
            cell = "<br>".join(f"`{t}`" for t in group_params(caught))
        log(f"| {b.name} | {what if caught is not None else '-'} | {cell} |")
    if baseline_failed:
        log(f"\nFailing in the baseline (not counted): {', '.join(sorted(baseline_failed))}")
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text("\n".join(lines) + "\n")
    if a.keep:
        print(f"kept {tree}")
    else:
        shutil.rmtree(tmp, ignore_errors=True)
    missing = [b.name for b, _, c in rows if c is None or not c]
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
