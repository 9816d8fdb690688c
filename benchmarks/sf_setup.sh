#!/usr/bin/env bash
# Set up Sample Factory 2.1.1 in its own virtual environment, for side-by-side
# throughput benchmarks against surge.  It is kept apart from surge's own
# environment because SF 2.1.1 needs gymnasium<1.0 and numpy<2, while surge
# needs gymnasium>=1.0.
#
# Usage:  bash benchmarks/sf_setup.sh [VENV_DIR]      (default: /work/sf-venv)
#         PYTHON=python3.11 bash benchmarks/sf_setup.sh /tmp/sf-venv
#
# You can run it more than once. It reuses an existing venv, pip skips
# requirements that are already satisfied, and the ROM import runs only
# while the Pong ROM is missing.
#
# Pins (checked on Python 3.11, linux x86_64, CPU only):
#   sample-factory==2.1.1  needs numpy<2, gymnasium>=0.27,<1.0, signal-slot-mp<2
#                          (which brings faster-fifo), wandb, opencv-python, tensorboardX, ...
#   torch==2.13.0          CPU build. The venv picks up the local wheel torch-2.13.0+cpu from
#                          $PIP_FIND_LINKS (/opt/wheels). Under PEP 440, '==2.13.0' also matches
#                          '2.13.0+cpu', and pip ranks +cpu above the plain (CUDA) 2.13.0 on PyPI.
#                          That wheel has no numpy requirement, and it works with numpy 1.26.4:
#                          torch.zeros(3).numpy() and torch.from_numpy() both work, with no ABI warning.
#                          Where no local CPU wheel exists, set SF_TORCH_INDEX_URL to a CPU-only
#                          torch index, otherwise pip downloads the CUDA build.
#   numpy<2                resolves to 1.26.4. opencv-python then resolves to 4.11.0.86, the last
#                          release that supports numpy 1.x.
#   gymnasium==0.29.1      the last release before 1.0. Its [atari] extra pulls shimmy[atari] 0.2.1,
#                          which pins ale-py~=0.8.1 and registers the *NoFrameskip-v4 ids through shimmy.
#   ale-py==0.8.1          does NOT ship ROMs (only tetris.bin). The usual route,
#                          gymnasium[accept-rom-license] / AutoROM, downloads the ROMs at build time
#                          from outside PyPI. On a machine that reaches only the package registries,
#                          that "succeeds" silently and installs no ROMs. So this script takes the ROMs
#                          from the ale-py 0.9.1 wheel on PyPI (0.9+ bundles them) and loads them into
#                          ale-py 0.8.1 with its own `ale-import-roms` command (which checks md5s:
#                          104 ROMs imported). This is the one "patch". No source files are edited.
#   mujoco==2.3.3          SF's own [mujoco] extra says mujoco<=2.3.3, and gymnasium 0.29.1[mujoco]
#                          says >=2.3.3. HalfCheetah-v4 works with it.
#   envpool==0.8.4         the newest envpool that works with gymnasium 0.29. envpool 1.x (1.2.5) imports
#                          and steps, but it is written for gymnasium>=1.0: close() raises
#                          "AttributeError: 'AtariGymnasiumEnvPool' object has no attribute 'closed'",
#                          which kills SF's env-info probe, and SF then hangs.
#                          envpool 0.8.4 also pulls the old `gym` 0.26.2, which SF's envpool example
#                          uses through env_type="gym".
#   vizdoom==1.3.2         the latest release; it installs with its own dependencies, no --no-deps needed:
#                          it asks only for numpy (any), gymnasium>=0.28 and pygame-ce (2.5.8). Its
#                          cp311 manylinux_2_28 wheel bundles the ViZDoom engine and freedoom2.wad, runs
#                          headless, and hands numpy 1.26.4 arrays over with no ABI trouble. SF's
#                          VizDoom example (sf_examples.vizdoom) brings its own scenario .cfg/.wad files
#                          (battle.wad for doom_benchmark), so nothing else is fetched.
#
# SF 2.1.1 itself needs no source patches with these pins.
set -euo pipefail

VENV="${1:-/work/sf-venv}"
PYTHON="${PYTHON:-python}"
VPY="$VENV/bin/python"

if [ ! -x "$VPY" ]; then
    echo "[sf_setup] creating venv at $VENV"
    "$PYTHON" -m venv "$VENV"
fi

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

cat > "$WORK/constraints.txt" <<'EOF'
torch==2.13.0
numpy<2
gymnasium==0.29.1
ale-py==0.8.1
shimmy==0.2.1
mujoco==2.3.3
envpool==0.8.4
vizdoom==1.3.2
sample-factory==2.1.1
EOF

PIP_EXTRA=()
if [ -n "${SF_TORCH_INDEX_URL:-}" ]; then
    PIP_EXTRA+=(--extra-index-url "$SF_TORCH_INDEX_URL")
fi

echo "[sf_setup] installing packages (pip skips what is already satisfied)"
# Install sample-factory without its [atari]/[mujoco] extras. [atari] would pull
# gymnasium[accept-rom-license], which needs network access outside PyPI (see above).
"$VPY" -m pip install -q "${PIP_EXTRA[@]}" -c "$WORK/constraints.txt" \
    "sample-factory==2.1.1" \
    "torch==2.13.0" \
    "gymnasium[atari,mujoco]==0.29.1" \
    "ale-py==0.8.1" \
    "mujoco==2.3.3" \
    "envpool==0.8.4" \
    "vizdoom==1.3.2" \
    faster-fifo signal-slot-mp \
    2> >(grep -v "^WARNING: Location 'file://" >&2)

# Atari ROMs: import them only while Pong is missing.
have_pong() {
    "$VPY" - <<'EOF' 2>/dev/null
from ale_py import roms
roms.Pong  # ale-py 0.8.x: AttributeError when the ROM is not installed
EOF
}
if ! have_pong; then
    echo "[sf_setup] importing Atari ROMs from the ale-py 0.9.1 wheel into ale-py 0.8.1"
    "$VPY" -m pip download -q --no-deps --only-binary=:all: -d "$WORK/wheel" "ale-py==0.9.1" \
        2> >(grep -v "^WARNING: Location 'file://" >&2)
    "$VPY" - "$WORK" <<'EOF'
import glob, os, sys, zipfile
work = sys.argv[1]
whl = glob.glob(os.path.join(work, "wheel", "ale_py-0.9.1-*.whl"))[0]
out = os.path.join(work, "roms")
os.makedirs(out, exist_ok=True)
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        if name.startswith("ale_py/roms/") and name.endswith(".bin"):
            with open(os.path.join(out, os.path.basename(name)), "wb") as f:
                f.write(z.read(name))
EOF
    "$VENV/bin/ale-import-roms" "$WORK/roms" | tail -n 1
    have_pong || { echo "[sf_setup] ERROR: Pong ROM still missing" >&2; exit 1; }
fi

echo "[sf_setup] checking the environment"
"$VPY" -W ignore - <<'EOF'
import importlib.metadata as md
import os, tempfile
import numpy, torch
import gymnasium as gym
import sample_factory, envpool, vizdoom  # noqa: F401

assert numpy.__version__.startswith("1."), numpy.__version__
assert torch.zeros(3).numpy().shape == (3,)  # torch <-> numpy 1.x interop works
env = gym.make("PongNoFrameskip-v4"); env.reset(seed=0); env.step(0); env.close()
env = gym.make("HalfCheetah-v4"); env.reset(seed=0); env.step(env.action_space.sample()); env.close()
env = gym.make("CartPole-v1"); env.reset(seed=0); env.close()
with tempfile.TemporaryDirectory() as tmp:  # ViZDoom writes its _vizdoom.ini there, not in the cwd
    game = vizdoom.DoomGame()  # headless, vizdoom's own basic scenario, one step
    game.load_config(os.path.join(vizdoom.scenarios_path, "basic.cfg"))
    game.set_window_visible(False)
    game.set_doom_config_path(os.path.join(tmp, "_vizdoom.ini"))
    game.init(); game.new_episode(); game.make_action([0, 0, 1], 4)
    assert game.get_state().screen_buffer.shape[0] == 3; game.close()
for p in ["sample-factory", "torch", "numpy", "gymnasium", "ale-py", "shimmy", "mujoco",
          "envpool", "gym", "vizdoom", "pygame-ce", "faster-fifo", "signal-slot-mp", "opencv-python"]:
    print(f"  {p}=={md.version(p)}")
print("[sf_setup] OK")
EOF
