"""Sample Factory 2.1.1's learner and inference worker measured as `cost_model_inputs.py` measures
surge's, so that the cost model can carry Sample Factory's GPU roles the same way as surge's (host
side x host ratio + launches x µs per launch) instead of taking them from a GPU machine's log.

    /work/sf-venv/bin/python benchmarks/sf_cost_model_inputs.py --config doom_benchmark \\
        --config pong_1epoch --out /tmp/sf_inputs.json

Runs Sample Factory's own training (its example module for the config, the benchmark config's
flags, `--serial_mode=True`, one torch thread, CPU) in this process, with its classes wrapped to
time, in CPU seconds of this thread (`time.thread_time`):

- learner host side: the batcher's `_maybe_enqueue_new_training_batches` (the copy of a batch's
  trajectory slices from the shared buffers into a training batch; on a GPU the same copy is a
  host-to-device copy from pageable memory, which the host pays as one memcpy, as here), per env
  frame of the batches it made;
- learner operations: every torch operation of `Learner.train` (`_prepare_batch` and `_train`:
  on a GPU each is a kernel launch), counted with `cost_model_inputs._count_ops` as a CUDA run
  launches them (an `nn.GRU` call is one operation each way), per env frame of the batch, on
  batches without its summaries (they come every 2-60 s: on a GPU few batches have them);
- inference host side: `InferenceWorker._handle_policy_steps` minus the observation normalisation
  and the model's forward pass (gathering the requests' rows, writing the outputs back), per env
  frame of the rows; inference operations: those of the normalisation, the forward pass and the
  outputs' copy back, per call.

Sample Factory shares its GPU weights with the inference worker in place (no publish or load
copy). An env frame is env steps x frameskip, as Sample Factory counts them
(`summaries_use_frameskip`).
"""

from __future__ import annotations

import argparse
import collections
import importlib
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from sample_factory.algo.learning import batcher as batcher_mod
from sample_factory.algo.learning import learner as learner_mod
from sample_factory.algo.sampling import inference_worker as iw_mod
from sample_factory.model.actor_critic import ActorCritic

sys.path.insert(0, str(Path(__file__).resolve().parent))
from configs import CONFIGS  # noqa: E402
from cost_model_inputs import _count_ops, run_configs  # noqa: E402


def measure(config: str, batches: int = 8, count_every: int = 10) -> dict[str, float]:
    """Host-side µs per env frame and operations per frame (learner) or per call (inference) of
    Sample Factory's learner and inference worker on `config`, over `batches` training batches."""

    rec: dict[str, list[float]] = collections.defaultdict(list)
    state: dict[str, Any] = {
        "busy": 0.0,
        "frames": 0,
        "rows": 0,
        "frameskip": 1,
        "batches": 0,
        "in_handle": False,
        "model_s": 0.0,
        "count": False,
        "ops": 0,
    }

    enqueue = batcher_mod.Batcher._maybe_enqueue_new_training_batches

    def timed_enqueue(self: Any) -> None:
        made = len(self.available_batches)
        t0 = time.thread_time()
        enqueue(self)
        dt = time.thread_time() - t0
        made -= len(self.available_batches)  # batches it filled in this call
        state["busy"] += dt
        if made > 0:  # per env step here, per env frame at the end (the frameskip is known by then)
            rec["batcher_s"].append(dt / (made * self.traj_per_training_iteration * self.cfg.rollout))

    train = learner_mod.Learner.train

    def counted_train(self: Any, batch: Any) -> Any:
        state["frameskip"] = self.env_info.frameskip if self.cfg.summaries_use_frameskip else 1
        frames = self.cfg.batch_size * state["frameskip"]
        state["batches"] += 1
        if state["batches"] <= 2:  # warm-up: first allocations, the optimizer's state
            return train(self, batch)
        # the steady window runs from the third batch's start to the last batch's start
        mark = (time.process_time(), state["busy"], state["frames"])
        state.setdefault("window_start", mark)
        state["window_end"] = mark
        state["frames"] += frames
        t0 = time.thread_time()
        out, ops = _count_ops(train, self, batch)
        state["busy"] += time.thread_time() - t0
        rec["learner_ops"].append(ops / frames)
        return out

    normalize = iw_mod.prepare_and_normalize_obs

    def timed_normalize(model: Any, obs: Any) -> Any:
        if state["count"]:
            out, ops = _count_ops(normalize, model, obs)
            state["ops"] += ops
            return out
        t0 = time.thread_time()
        out = normalize(model, obs)
        state["model_s"] += time.thread_time() - t0
        return out

    call = ActorCritic.__call__

    def timed_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not state["in_handle"]:
            return call(self, *args, **kwargs)
        state["rows"] = int(args[1].shape[0])  # (normalized_obs, rnn_states)
        if state["count"]:
            out, ops = _count_ops(call, self, *args, **kwargs)
            state["ops"] += ops
            return out
        t0 = time.thread_time()
        out = call(self, *args, **kwargs)
        state["model_s"] += time.thread_time() - t0
        return out

    handle = iw_mod.InferenceWorker._handle_policy_steps

    def timed_handle(self: Any, timing: Any) -> Any:
        if not hasattr(self, "_cm_outputs"):  # the outputs' copy back: launches on a GPU
            self._cm_outputs = self._prepare_policy_outputs_func

            def outputs(*args: Any) -> Any:
                if state["count"]:
                    out, ops = _count_ops(self._cm_outputs, *args)
                    state["ops"] += ops
                    return out
                return self._cm_outputs(*args)

            self._prepare_policy_outputs_func = outputs
        n = len(rec["infer_rows"]) + len(rec["infer_ops"])
        state["in_handle"], state["model_s"], state["ops"] = True, 0.0, 0
        state["count"] = n % count_every == count_every - 1
        t0 = time.thread_time()
        try:
            return handle(self, timing)
        finally:
            dt = time.thread_time() - t0
            state["busy"] += dt
            rows = state["rows"]
            if state["count"]:
                rec["infer_ops"].append(state["ops"])
            else:
                rec["infer_rows"].append(rows)  # per env step (a row) here, per env frame at the end
                rec["infer_host_s"].append((dt - state["model_s"]) / rows)
                rec["infer_model_s"].append(state["model_s"] / rows)
            state["in_handle"] = state["count"] = False

    patches = [
        # its summaries come every 2 s early in a run (decaying to every 60 s): on this slow CPU that
        # is most batches, on a GPU few, so batches are counted without them, as surge's are
        # without its diagnostics (`StatsCadence`)
        (learner_mod.Learner, "_should_save_summaries", lambda self: False),
        (batcher_mod.Batcher, "_maybe_enqueue_new_training_batches", timed_enqueue),
        (learner_mod.Learner, "train", counted_train),
        (iw_mod, "prepare_and_normalize_obs", timed_normalize),
        (ActorCritic, "__call__", timed_call),
        (iw_mod.InferenceWorker, "_handle_policy_steps", timed_handle),
    ]
    originals = [(owner, name, getattr(owner, name)) for owner, name, _ in patches]
    for owner, name, fn in patches:
        setattr(owner, name, fn)

    c = CONFIGS[config]
    frames_per_batch = _frames_per_batch(c.sf_args)
    with tempfile.TemporaryDirectory() as tmp:
        argv = [
            *c.sf_args,
            "--serial_mode=True",
            "--decorrelate_experience_max_seconds=0",
            f"--train_for_env_steps={frames_per_batch * (batches + 3)}",
            f"--train_dir={tmp}",
            "--experiment=sf_inputs",
            "--with_wandb=False",
            "--save_every_sec=100000",
            "--keep_checkpoints=1",
        ]
        mod = importlib.import_module(c.sf_module)
        old_argv, sys.argv = sys.argv, [c.sf_module, *argv]
        try:
            mod.main()
        finally:
            sys.argv = old_argv
            for owner, name, fn in originals:
                setattr(owner, name, fn)

    # the rest of the process's CPU in the window: the rollout workers' env steps and per-step Python
    # and the event loop (the serial placement runs every role in this one thread)
    (c0, b0, f0), (c1, b1, f1) = state["window_start"], state["window_end"]
    rollout_us = ((c1 - c0) - (b1 - b0)) / (f1 - f0) * 1e6

    def med(key: str, scale: float = 1e6) -> float:
        xs = rec[key]
        return statistics.median(xs) * scale if xs else float("nan")

    per_frame = 1e6 / state["frameskip"]  # µs per env frame from seconds per env step
    return {
        "frameskip": float(state["frameskip"]),
        "learner_batches_counted": float(len(rec["learner_ops"])),
        "learner_batcher_us": med("batcher_s", per_frame),
        "learner_ops_per_frame": med("learner_ops", 1.0),
        "inference_rows_per_call": med("infer_rows", 1.0),
        "inference_host_us": med("infer_host_s", per_frame),
        "inference_model_us": med("infer_model_s", per_frame),
        "inference_ops_per_call": med("infer_ops", 1.0),
        "rollout_serial_us": rollout_us,
    }


def _frames_per_batch(sf_args: list[str]) -> int:
    """Env frames of one training batch of these flags (batch_size x frameskip; Sample Factory's
    default frameskip 4 for Atari and Doom where the flags do not set it)."""
    flags = dict(a.lstrip("-").split("=", 1) for a in sf_args if "=" in a)
    return int(flags.get("batch_size", 1024)) * int(flags.get("env_frameskip", 4))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--config", action="append", choices=sorted(CONFIGS), required=True)
    ap.add_argument("--batches", type=int, default=8, help="training batches after the warm-up")
    ap.add_argument("--out", type=Path, help="also write the figures as JSON here")
    a = ap.parse_args(argv)
    torch.set_num_threads(1)
    run_configs(a.config, lambda n: measure(n, a.batches), "Sample Factory", a.out, 4)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
