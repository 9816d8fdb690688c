"""An env family's `preload` reaches the fork server: a child forked from it starts with the
module imported (EnvPool's families preload `envpool`, about 1.6 s per rollout worker otherwise;
benchmarks/startup.py measured breakout_envpool's start-up 12.6 s against 13.5 s without)."""

import subprocess
import sys
from pathlib import Path

from surge.envs.registry import find_family

PROBE = Path(__file__).resolve().parents[1] / "preload_probe.py"


def _child_has_it(*preload: str) -> str:
    out = subprocess.run(
        [sys.executable, str(PROBE), *preload], capture_output=True, text=True, timeout=120, check=True,
        cwd=PROBE.parent,
    )  # fmt: skip
    return out.stdout.strip()


def test_a_preloaded_module_is_in_the_forked_child_and_only_then():
    assert _child_has_it("colorsys") == "child has colorsys: True"
    assert _child_has_it() == "child has colorsys: False"


def test_envpool_families_preload_envpool_and_the_others_nothing_slow():
    assert find_family("envpool_breakout").preload == ("envpool",)
    assert find_family("envpool_dmc_cheetah_run").preload == ("envpool",)
    assert find_family("CartPole-v1").preload == ()


def test_the_fork_servers_modules_do_not_import_cv2():
    """The fork server imports the run's modules and the env families (`surge.app.builtins`). With
    cv2 among them (41bd9ea imported it at the top of surge/envs/doom/frames.py) a run's rollout
    and inference workers kept the title `python` instead of `surge:rollout_0` / `surge:inference`,
    which supervision's tests and `ps` read; the cause inside cv2 is not known. The env modules
    import it where they resize."""
    from surge.runtime.child_start import PRELOAD_MODULES

    code = "import sys\n" + "".join(f"import {m}\n" for m in (*PRELOAD_MODULES, "surge.app.builtins"))
    code += "print('cv2' in sys.modules)"
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert out.stdout.strip() == "False"
