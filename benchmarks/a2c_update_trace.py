"""Per-update trace of surge's A2C on CartPole-v1 (serial placement, reproducible from `--seed`):
for every gradient step, the return the progress lines last showed, the value loss, the gradient
norm before clipping, the mean advantage, the critic's mean value, and, separately for the actor
(encoder, core, policy head) and the critic (critic encoder, core, value head), the L2 norm of the
parameter change the optimizer made and the cosine between it and the previous step's change.
With Adam, a weight's step is about `lr * m / sqrt(v)`: after a long stretch of tiny gradients one
large gradient moves every weight by several `lr`, all in that gradient's direction, whatever the
gradient's scale (clipping does not bound it). The trace shows whether the dips follow such steps.

    PYTHONPATH=$PWD OMP_NUM_THREADS=1 python benchmarks/a2c_update_trace.py --out=/tmp/a2c_trace.tsv \
        -- --seed=1 --train_for_env_steps=2000000 [more surge train flags]

Output: a TSV, one line per gradient step (env frames of the step's batch, step number, ...), and
the run's own experiment folder under --train_dir.
"""

from __future__ import annotations

import argparse
import sys

import torch

BASE = [
    "--env=CartPole-v1",
    "--algo=A2C",
    "--serial_mode=True",
    "--num_workers=2",
    "--num_envs_per_worker=8",
    "--num_torch_threads=1",
    "--restart_behavior=restart",
]


def _flat(params: list[torch.Tensor]) -> torch.Tensor:
    return torch.cat([p.detach().reshape(-1) for p in params]).clone()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    p.add_argument("--train_dir", default="/tmp/a2c_trace_runs")
    p.add_argument("--experiment", default="a2c_trace")
    p.add_argument("flags", nargs="*", help="more `surge train` flags (after --)")
    args = p.parse_args(argv)

    from surge.algorithms.a2c import learner as a2c
    from surge.cli import main as surge_main

    out = open(args.out, "w")
    out.write(
        "step\tenv_frames\tvalue_loss\tgrad_norm\tadv_mean\tvalue_mean\tentropy\td_actor\td_critic\tcos_actor\tcos_critic\n"
    )
    orig = a2c.A2CLearner.train_batch
    state: dict[str, object] = {"step": 0, "prev": None}

    def groups(model: torch.nn.Module) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
        actor, critic = [], []
        for name, prm in model.named_parameters():
            (critic if name.startswith(("critic_", "value_head")) else actor).append(prm)
        return actor, critic

    def wrapped(self, b, env_frames=0):  # type: ignore[no-untyped-def]
        actor, critic = groups(self.model)
        a0, c0 = _flat(actor), _flat(critic)
        res = orig(self, b, env_frames)
        da, dc = _flat(actor) - a0, _flat(critic) - c0
        prev = state["prev"]
        cos_a = cos_c = float("nan")
        if prev is not None:
            pa, pc = prev  # type: ignore[misc]
            cos_a = float(torch.nn.functional.cosine_similarity(da, pa, dim=0))
            cos_c = float(torch.nn.functional.cosine_similarity(dc, pc, dim=0))
        state["prev"] = (da, dc)
        state["step"] = int(state["step"]) + 1  # type: ignore[call-overload]
        out.write(
            f"{state['step']}\t{env_frames}\t{res['value_loss']:.5g}\t{res['grad_norm']:.5g}\t"
            f"{res['adv_mean']:.5g}\t{res['value_mean']:.5g}\t{res['entropy']:.4g}\t"
            f"{float(da.norm()):.5g}\t{float(dc.norm()):.5g}\t{cos_a:.3f}\t{cos_c:.3f}\n"
        )
        return res

    a2c.A2CLearner.train_batch = wrapped  # type: ignore[method-assign]
    flags = [*BASE, f"--train_dir={args.train_dir}", f"--experiment={args.experiment}", *args.flags]
    rc = surge_main(["train", *flags])
    out.close()
    return int(rc or 0)


if __name__ == "__main__":
    sys.exit(main())
