"""`surge tune --env=ENV [--budget_seconds=900] [flags of the run ...]`: the command line, the plan
of measurements within the budget, the table and the YAML file of the fastest settings."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import logging
import math
import platform
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import yaml

from surge.cfg.config import Config
from surge.errors import ConfigError
from surge.tune.measure import Measurement, measure
from surge.tune.plan import OVERHEAD_SECONDS, make_plan
from surge.tune.search import (
    Row,
    acting_twin,
    choose,
    finalists,
    inference_twin,
    sampler_phase,
    training_phase,
)
from surge.tune.space import LAYOUT_KEYS, Layout, axis_values, batch_values, usable_cpus

log = logging.getLogger("surge")

#: flags of the run that surge tune sets itself for every measurement
OWN_FLAGS = ("train_dir", "experiment", "train_for_seconds", "no_writes", "restart_behavior")


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # a ConfigError naming the flag, not an exit
        field = (
            message.split()[1].lstrip("-").rstrip(":").split("/")[0]
            if message.startswith("argument --")
            else ""
        )
        raise ConfigError(field or "command line", message, "see `surge tune --help`.")


def _bool(v: str) -> bool:
    # `surge tune --help` imports no config machinery
    from surge.cfg.cli import str2bool

    return str2bool(v)


def build_parser() -> argparse.ArgumentParser:
    """The flags of `surge tune` itself; every other flag is the run's (`surge train`'s) and is held
    fixed in every measurement."""
    p = _Parser(
        prog="surge tune",
        usage="surge tune --env=ENV [--budget_seconds=900] [--out=FILE.yaml] [flags of the run ...]",
        description=(
            "Measures rollout workers, envs per worker and splits (and with --tune_batch the minibatch "
            "size) on this machine: the dummy sampler ranks layouts, short training runs of the best few "
            "and of the defaults decide; prints the table and writes the fastest as a YAML for "
            "`surge train --cfg=FILE`. Other flags (--env, --cfg, --algo, model flags ...) are the run's, "
            "held fixed; a layout flag given (e.g. --num_workers=4) is not searched. See docs/tune.md."
        ),
        formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        allow_abbrev=False,
    )
    p.add_argument(
        "--budget_seconds", type=float, default=900.0, help="wall-clock budget of the whole search"
    )
    p.add_argument("--bench_seconds", type=int, default=10, help="seconds of one dummy-sampler run")
    p.add_argument("--train_seconds", type=int, default=20, help="seconds of one training run")
    p.add_argument("--rounds", type=int, default=3, help="training runs of each finalist (median reported)")
    p.add_argument(
        "--top", type=int, default=2, help="sampler layouts that go on to training runs (with the defaults)"
    )
    p.add_argument(
        "--tune_batch",
        type=_bool,
        nargs="?",
        const=True,
        default=False,
        help="also try half and double --batch_size with the fastest layout (this changes learning)",
    )
    for key in LAYOUT_KEYS:
        p.add_argument(
            f"--try_{key}",
            type=_int_list,
            default=None,
            metavar="V1,V2,...",
            help=f"the values of --{key} searched (default: sized for this machine's CPUs)",
        )
    p.add_argument("--out", default=None, help="the YAML file written (default: tune_ENV.yaml)")
    p.add_argument(
        "--table", choices=("auto", "rich", "plain"), default="auto", help="auto: rich on a terminal"
    )
    p.add_argument(
        "--tune_dir",
        default=None,
        help="keep each measurement's folder and log here (default: a temporary folder, removed)",
    )
    return p


def _int_list(v: str) -> list[int]:
    try:
        out = sorted({int(x) for x in v.split(",") if x.strip()})
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected integers separated by commas, got {v!r}") from e
    if not out or min(out) < 1:
        raise argparse.ArgumentTypeError(f"expected positive integers separated by commas, got {v!r}")
    return out


def _given_names(tokens: list[str]) -> list[str]:
    """Flag names among `--name=value` / `--name value` tokens."""
    return [t[2:].split("=")[0] for t in tokens if t.startswith("--") and len(t) > 2]


def _check_args(a: argparse.Namespace, base: list[str]) -> None:
    """Raises ConfigError for a value of tune's flags out of range, or a flag tune sets itself."""
    for name in OWN_FLAGS:
        if name in _given_names(base):
            raise ConfigError(
                name,
                "is set by surge tune for each measurement.",
                f"remove --{name} (keep the measurements with --tune_dir).",
            )
    if not any(n in ("env", "cfg") for n in _given_names(base)):
        raise ConfigError(
            "env", "surge tune needs the env to measure.", "pass --env=ENV (or --cfg=FILE.yaml naming it)."
        )
    checks = [
        ("rounds", a.rounds >= 1, "at least 1 (3 or more: the median of a noisy machine)"),
        ("top", a.top >= 1, "at least 1"),
        ("bench_seconds", a.bench_seconds >= 2, "at least 2"),
        ("train_seconds", a.train_seconds >= 2, "at least 2"),
        (
            "budget_seconds",
            a.budget_seconds > 0 and math.isfinite(a.budget_seconds),
            "a positive number of seconds",
        ),
    ]
    for key in LAYOUT_KEYS:
        if getattr(a, f"try_{key}") is not None and key in _given_names(base):
            raise ConfigError(
                f"try_{key}", f"--{key} is given, so it is held fixed.", f"remove --{key} or --try_{key}."
            )
    for name, ok, fix in checks:
        if not ok:
            raise ConfigError(name, f"{getattr(a, name)!r} is out of range.", f"use {fix}.")


def main(argv: list[str]) -> int:
    """Runs `surge tune`; returns 0 when the YAML file was written, 1 when no training run measured
    a rate (nothing written), 130 on Ctrl+C (every measurement's processes stopped).

    Raises:
        ConfigError: a bad flag of tune's or of the run's (refused before any run starts).
        EnvError: the env cannot be made.
    """
    # torch and the engine after the arguments parsed
    from surge.app.cfg_file import load_yaml
    from surge.app.resolve import parse_cfg

    if any(t in ("-h", "--help") for t in argv):
        build_parser().print_help()
        return 0
    a, base = build_parser().parse_known_args(argv)
    _check_args(a, base)
    work = Path(a.tune_dir) if a.tune_dir else Path(tempfile.mkdtemp(prefix="surge_tune_"))
    work.mkdir(parents=True, exist_ok=True)
    old_handler = signal.signal(signal.SIGTERM, _interrupt)  # a stop by SIGTERM stops the measurement too
    try:
        return _tune(a, base, work, parse_cfg, load_yaml)
    except KeyboardInterrupt:
        print("surge tune: interrupted; every measurement stopped, nothing written.", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, old_handler)
        if not a.tune_dir:
            shutil.rmtree(work, ignore_errors=True)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _tune(
    a: argparse.Namespace,
    base: list[str],
    work: Path,
    parse_cfg: Callable[[list[str]], Config],
    load_yaml: Callable[[str], dict[str, Any]],
) -> int:
    cfg = parse_cfg([*base, f"--train_dir={work}", "--experiment=tune_check"])
    given = [n for n in _given_names(base) if n != "cfg"]
    if "cfg" in _given_names(base):
        given += [k for k in load_yaml(cfg.cfg) if k not in given]
    if a.tune_batch and "batch_size" in given:
        raise ConfigError(
            "tune_batch",
            "--batch_size is given, so it is not searched.",
            "remove --batch_size or --tune_batch.",
        )
    default = Layout(cfg.num_workers, cfg.num_envs_per_worker, cfg.worker_num_splits)
    cpus = usable_cpus()
    axes = axis_values(default, cpus, fixed=set(given) & set(LAYOUT_KEYS))
    for key in LAYOUT_KEYS:  # --try_KEY: the user's values (the default's is measured anyway)
        if getattr(a, f"try_{key}") is not None:
            axes[key] = getattr(a, f"try_{key}")
    batches = batch_values(cfg.batch_size) if a.tune_batch else None
    if batches:
        default = dataclasses.replace(default, batch_size=cfg.batch_size)
    n_sampler = 1 + sum(len(v) - 1 for v in axes.values())
    n_finalists = (
        a.top
        + 1
        + (len(batches) - 1 if batches else 0)
        + acts_in_workers_possible(cfg, given)
        + more_inference_workers_possible(cfg, given, cpus)
    )
    n_training = n_finalists * a.rounds
    plan = make_plan(n_sampler, n_finalists, a.rounds, a.bench_seconds, a.train_seconds, a.budget_seconds)
    bench, train = plan.bench, plan.train
    print(
        f"surge tune {cfg.env}: {cpus} usable CPUs; {plan.describe()} Defaults: {default.label()}.",
        flush=True,
    )
    start = time.time()
    overheads: dict[str, list[float]] = {"sampler": [], "training": []}

    def run(layout: Layout, phase: str, index: int) -> Measurement:
        flags = [*base, *layout.flags()]
        if phase == "sampler":
            flags.append("--algo=DUMMY_SAMPLER")
        try:  # a layout the config refuses is not started
            parse_cfg([*flags, f"--train_dir={work}", "--experiment=tune_check"])
        except ConfigError as e:
            return Measurement(math.nan, 0.0, f"refused: {e}")
        seconds = bench if phase == "sampler" else train
        m = measure(flags, seconds, work, f"{phase}_{index}")
        overheads[phase].append(max(0.0, m.wall_seconds - seconds))
        rate = f"{m.rate:.0f} env frames/s" if m.rate == m.rate else m.error
        print(f"  {phase} {layout.label()}: {rate}", flush=True)
        return m

    def out_of_time() -> bool:
        """True when the training phase would no longer fit in the budget, with the start-up
        seen so far (a loaded machine starts slower than `OVERHEAD_SECONDS` assumes)."""
        seen = overheads["sampler"]
        o2 = OVERHEAD_SECONDS["training"]
        if seen:  # a learner's start and stop on top of the sampler's: 1.6x at load 14-28 (CartPole)
            o2 = max(o2, 1.7 * sum(seen) / len(seen))
        return time.time() + n_training * (train + o2) > start + a.budget_seconds

    sampler_rows, notes = sampler_phase(default, axes, cpus, run, out_of_time)
    chosen_layouts = finalists(sampler_rows, default, a.top, batches)
    if acts_in_workers_possible(cfg, given):
        twin = acting_twin(sampler_rows, chosen_layouts, keep_splits="worker_num_splits" in given)
        if twin is not None:
            chosen_layouts.append(twin)
    if more_inference_workers_possible(cfg, given, cpus):
        twin = inference_twin(sampler_rows, chosen_layouts)
        if twin is not None:
            chosen_layouts.append(twin)
    training_rows, more = training_phase(chosen_layouts, run, a.rounds, start + a.budget_seconds)
    notes += more
    best = choose(training_rows)
    print_table(sampler_rows, training_rows, best, default, a.table)
    for n in notes:
        print(f"note: {n}")
    print(f"{time.time() - start:.0f} s in all." + (f" Measurements kept in {work}." if a.tune_dir else ""))
    if best is None:
        print(
            "surge tune: no training run measured a rate; nothing written (see the errors above).",
            file=sys.stderr,
        )
        return 1
    out = Path(a.out or f"tune_{cfg.env.replace('/', '_').replace(':', '_')}.yaml")
    values = {"env": cfg.env, **{k: getattr(cfg, k) for k in given if k != "env" and hasattr(cfg, k)}}
    values.update(best.layout.values())
    write_yaml(out, values, _header(a, base, cfg.env, cpus, best, training_rows[0], out))
    print(f"Wrote {out}: surge train --cfg={out} --experiment=NAME")
    return 0


def acts_in_workers_possible(cfg: Config, given: list[str]) -> bool:
    """Whether the training phase also tries the rollout workers acting themselves
    (`surge.tune.search.acting_twin`): the async placement on the CPU, with
    --policy_workers_per_policy not given (a given one is held fixed, as every given flag)."""
    return not cfg.serial_mode and cfg.device == "cpu" and "policy_workers_per_policy" not in given


#: usable CPUs from which the training phase also tries two inference workers per policy
MIN_CPUS_FOR_MORE_INFERENCE = 4


def more_inference_workers_possible(cfg: Config, given: list[str], cpus: int) -> bool:
    """Whether the training phase also tries two inference workers per policy
    (`surge.tune.search.inference_twin`): the async placement with inference workers (on the CPU or
    a GPU), --policy_workers_per_policy not given, and at least `MIN_CPUS_FOR_MORE_INFERENCE` usable
    CPUs (a second inference process needs a core beside the learner's and the rollout workers')."""
    return (
        not cfg.serial_mode
        and "policy_workers_per_policy" not in given
        and cfg.policy_workers_per_policy == 1
        and cpus >= MIN_CPUS_FOR_MORE_INFERENCE
    )


def _header(
    a: argparse.Namespace, base: list[str], env: str, cpus: int, best: Row, default_row: Row, out: Path
) -> list[str]:
    """The YAML file's comment lines: when, where, the command, the figures, what changes learning."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    own = [
        f"--{k}={','.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in vars(a).items()
        if v != build_parser().get_default(k)
    ]
    lines = [
        f"Written by surge tune on {now}, {platform.node()}, {cpus} usable CPUs.",
        "Command: surge tune " + " ".join([*base, *own]),
        f"Fastest in short training runs: {best.layout.label()} (workers x envs per worker / splits), "
        f"median {best.median:.0f} env frames/s of {len(best.rates)} run(s); the defaults "
        f"{default_row.layout.label()}: {default_row.median:.0f} env frames/s"
        + (f" ({best.median / default_row.median:.2f}x)." if default_row.median > 0 else "."),
        "Throughput depends on the machine and its load: run surge tune again on another machine.",
    ]
    if best.layout.batch_size is not None and best.layout.batch_size != default_row.layout.batch_size:
        lines.append(
            f"batch_size {best.layout.batch_size} (default {default_row.layout.batch_size}) CHANGES LEARNING "
            "(chosen with --tune_batch for speed only); remove it to keep the default."
        )
    lines.append(f"Use: surge train --cfg={out} --experiment=NAME")
    return lines


def write_yaml(path: Path, values: dict[str, Any], comments: list[str]) -> None:
    """Writes `values` as YAML (`name: value`, what `surge train --cfg` reads) under `comments`
    (each a `# ` line), atomically: a temp file renamed over `path`."""
    text = "".join(f"# {c}\n" for c in comments) + yaml.safe_dump(values, sort_keys=False)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def table_rows(
    sampler_rows: list[Row], training_rows: list[Row], best: Row | None, default: Layout
) -> list[list[str]]:
    """The table's cells: phase, layout, batch size, each run's env frames/s, median, ratio to the
    default of the same phase, and a note (default, chosen, changes learning, the last error)."""
    out = []
    for rows in (sampler_rows, training_rows):
        ref = next(
            (
                r.median
                for r in rows
                if r.layout.sampler() == default.sampler()
                and r.layout.batch_size in (None, default.batch_size)
            ),
            math.nan,
        )
        for r in rows:
            notes = []
            if r.layout.sampler() == default.sampler() and r.layout.batch_size in (None, default.batch_size):
                notes.append("default")
            if r is best:
                notes.append("CHOSEN")
            if r.layout.batch_size is not None and r.layout.batch_size != default.batch_size:
                notes.append("changes learning")
            if r.errors:
                notes.append(r.errors[-1][:80])
            out.append(
                [
                    r.phase,
                    r.layout.sampler_label(),
                    "default" if r.layout.batch_size is None else str(r.layout.batch_size),
                    " / ".join("-" if x != x else f"{x:.0f}" for x in r.rates),
                    "-" if r.median != r.median else f"{r.median:.0f}",
                    f"{r.median / ref:.2f}x" if r.median == r.median and ref == ref and ref > 0 else "-",
                    ", ".join(notes),
                ]
            )
    return out


HEADERS = [
    "phase",
    "workers x envs / splits",
    "batch",
    "env frames/s (each run)",
    "median",
    "vs default",
    "note",
]


def print_table(
    sampler_rows: list[Row], training_rows: list[Row], best: Row | None, default: Layout, mode: str = "auto"
) -> None:
    """Prints the table: rich's when `mode` is rich, or auto on a terminal with rich installed; else
    plain aligned columns."""
    cells = table_rows(sampler_rows, training_rows, best, default)
    use_rich = mode == "rich" or (mode == "auto" and sys.stdout.isatty())
    if use_rich:
        try:
            from rich.console import Console
            from rich.table import Table
        except ImportError:
            use_rich = False
    if use_rich:
        table = Table(
            title="surge tune: env frames/s after start-up (sampler: dummy sampler, random actions)"
        )
        for h in HEADERS:
            table.add_column(h)
        for row in cells:
            table.add_row(*row)
        Console().print(table)
        return
    widths = (
        [max(len(h), *(len(r[i]) for r in cells)) for i, h in enumerate(HEADERS)]
        if cells
        else [len(h) for h in HEADERS]
    )
    print("env frames/s after start-up (sampler: dummy sampler, random actions; training: short runs)")
    for row in [HEADERS, *cells]:
        print("  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())
