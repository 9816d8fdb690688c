"""Per-role CPU per env frame of two checkouts, alternating: each checkout's own
`benchmarks/scaling.py` `run()` (async placement, steady state: no decorrelation, a window of
SECONDS after the first progress report), on one config of `benchmarks/configs.py`.

    python benchmarks/roles_ab.py /tmp/surge_before . ROUNDS SECONDS [CONFIG]
    python benchmarks/roles_ab.py /tmp/surge_before . 2 40 pong_1epoch

Prints per run: env frames/s, CPU seconds per wall second of all processes, the busiest process's
role and share of a core, and the CPU microseconds per env frame of each role.
"""

import importlib.util
import sys
from pathlib import Path

CFG = sys.argv[5] if len(sys.argv) > 5 else "cartpole"
roots = sys.argv[1:3]
rounds = int(sys.argv[3])
secs = float(sys.argv[4])
mods = {}
for r in roots:
    sys.path.insert(0, f"{r}/benchmarks")
    spec = importlib.util.spec_from_file_location(f"scaling_{len(mods)}", f"{r}/benchmarks/scaling.py")
    m = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = m
    spec.loader.exec_module(m)
    mods[r] = m
    sys.path.pop(0)
for k in range(rounds):
    order = roots if k % 2 == 0 else roots[::-1]
    for r in order:
        m = mods[r]
        args = [a for a in m.CONFIGS[CFG].surge_args]
        res = m.run(m.Variant("cartpole", args), secs, Path(f"/tmp/roles_ab/{Path(r).name}_{k}"))
        cpu = " ".join(f"{a}={b:.1f}" for a, b in sorted(res.cpu_us.items()))
        print(
            f"{r} round {k}: {res.fps:.0f} fps, util {res.util:.2f}, busiest {res.busiest} {res.busiest_util:.2f} | us/frame {cpu}",
            flush=True,
        )
