#!/usr/bin/env bash
# The checks for a lent GPU machine (the `device` tool), one stage per call; run from the repo root.
#
#   bash benchmarks/gpu_session.sh surge   # surge alone: the CUDA tests, DQN vs SB3, APPO configs
#   bash benchmarks/gpu_session.sh both    # surge vs Sample Factory 2.1.1 on doom_benchmark; DQN vs SB3
#   bash benchmarks/gpu_session.sh diagnose  # which process saturates; CPU per frame by kind; DQN 4x8 envs
#
# The machine's image has Python 3.12 with CUDA torch but none of the env packages, and reaches no
# package index, so the wheels travel with the call (`carry`), downloaded here for cp312:
#   .whl/     gymnasium 1.x, farama-notifications, ale-py, vizdoom, faster-fifo, setproctitle,
#             stable-baselines3 (surge's side; about 42 MB, vizdoom is 39 of them)
#   .whlall/  the same with vizdoom's freedoom1.wad left out of its wheel, and in .whlall/sf/
#             numpy 1.26.4, sample-factory 2.1.1 (its freedm.wad and dwango5.wad left out),
#             gymnasium 0.29.1, signal-slot-mp, colorlog, tensorboardx: 51 MB, one call's 64 MB
#             with the repo. Sample Factory 2.1.1 fails under numpy 2 ("setting an array element
#             with a sequence" in its rollout workers), hence its own numpy.
# The machine keeps no ignored repo folder between calls, so each stage installs what it uses.
# Logs go to $OUT. docs/logs/gpu_2026-11-27.md has the first session's output.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
ROOT=$PWD
step() { echo "=== [$(date +%T)] $*"; }
install() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$2" "$1"/*.whl; }

case "${1:-}" in
surge)
    step install; install .whl .site || exit 1
    export PYTHONPATH=$ROOT:$ROOT/.site
    nvidia-smi -L; nproc; free -g | head -2
    python3 -c "import torch, numpy, gymnasium, ale_py, vizdoom; print(torch.__version__, torch.cuda.get_device_name(), 'numpy', numpy.__version__, 'gymnasium', gymnasium.__version__)"
    step "pytest tests/integration/test_cuda.py"
    timeout 130 python3 -m pytest -q -p no:cacheprovider -o addopts="" --durations=10 tests/integration/test_cuda.py 2>&1 | tee "$OUT/pytest_cuda.txt" | tail -25
    step "DQN breakout on the GPU: surge (async) vs SB3, speed only"
    timeout 120 python3 benchmarks/dqn_atari_vs_sb3.py --frames 60000 --learning_starts 2000 --seeds 1 --eval_episodes 0 --device gpu --threads 1 --timeout 55 2>&1 | tee "$OUT/dqn_gpu.txt" | grep -v "^\[20" | tail -12
    step "APPO configs on the GPU, surge only (16 workers)"
    timeout 130 python3 benchmarks/compare_sample_factory.py --config pong_1epoch --rounds 1 --placement async --no-dummy --sf-python /bin/false --frames-scale 20 --timeout 55 --extra "--device=gpu --num_workers=16" 2>&1 | tee "$OUT/appo_gpu_surge.txt" | grep -v "^\[20" | tail -12
    ;;
both)
    # one call: the machine keeps nothing between calls, and both wheel sets fit 64 MB once
    # vizdoom's freedoom1.wad and Sample Factory's deathmatch wads (freedm, dwango5) are left out
    # of the wheels (doom_benchmark plays battle.wad on freedoom2)
    step install; install .whlall /tmp/site || exit 1; install .whlall/sf /tmp/sfsite || exit 1
    printf '#!/bin/sh\nPYTHONPATH=/tmp/sfsite:/tmp/site exec python3 "$@"\n' >/tmp/sfpy
    chmod +x /tmp/sfpy
    export PYTHONPATH=$ROOT:/tmp/site
    nvidia-smi -L; nproc
    /tmp/sfpy -c "import numpy, gymnasium, sample_factory, vizdoom; print('SF side: numpy', numpy.__version__, 'gymnasium', gymnasium.__version__)"
    step "doom_benchmark on the GPU: surge vs Sample Factory 2.1.1, 16 workers, alternating"
    timeout 230 python3 benchmarks/compare_sample_factory.py --config doom_benchmark --rounds 2 --placement async --no-dummy --sf-python /tmp/sfpy --frames-scale 20 --timeout 42 --extra "--device=gpu --num_workers=16" 2>&1 | tee "$OUT/doom_gpu_vs_sf.txt" | grep -v "^\[20" | tail -12
    step "DQN breakout on the GPU: surge (async) vs SB3, speed only"
    timeout 175 python3 benchmarks/dqn_atari_vs_sb3.py --frames 40000 --learning_starts 2000 --seeds 1 --eval_episodes 0 --device gpu --threads 1 --timeout 85 2>&1 | tee "$OUT/dqn_gpu.txt" | grep -v "^\[20" | tail -12
    ;;
diagnose)
    # where the GPU runs' time goes (for the next lent machine): which process saturates, surge's and
    # Sample Factory's CPU per frame by kind of process, and DQN with more rollout envs than SB3's one
    step install; install .whlall /tmp/site || exit 1; install .whlall/sf /tmp/sfsite || exit 1
    printf '#!/bin/sh\nPYTHONPATH=/tmp/sfsite:/tmp/site exec python3 "$@"\n' >/tmp/sfpy
    chmod +x /tmp/sfpy
    export PYTHONPATH=$ROOT:/tmp/site
    GPU16="--device=gpu --num_workers=16 --train_for_env_steps=1000000000 --decorrelate_experience_max_seconds=0"
    args() { python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from configs import CONFIGS; print(' '.join(CONFIGS['$1'].$2))"; }
    step "surge per role on the GPU (scaling.py --config)"
    timeout 150 python3 benchmarks/scaling.py --config doom_benchmark --config pong_1epoch --extra "--device=gpu --num_workers=16" --rounds 1 --seconds 40 --out /tmp/roles 2>&1 | tee "$OUT/roles_surge_gpu.txt" | tail -8
    step "CPU per frame by kind of process, doom_benchmark on the GPU: Sample Factory, then surge"
    python3 benchmarks/process_cpu.py --framework sf --seconds 75 --train_dir /tmp/pc_sf -- /tmp/sfpy -m sf_examples.vizdoom.train_vizdoom $(args doom_benchmark sf_args) --serial_mode=False $GPU16 --train_dir=/tmp/pc_sf --experiment=sf 2>&1 | tee "$OUT/process_cpu.txt"
    python3 benchmarks/process_cpu.py --framework surge --seconds 60 --train_dir /tmp/pc_surge -- python3 -m surge.train $(args doom_benchmark surge_args) --serial_mode=False $GPU16 --train_dir=/tmp/pc_surge --experiment=surge 2>&1 | tee -a "$OUT/process_cpu.txt"
    step "DQN breakout on the GPU: surge with 4 workers x 8 envs vs SB3, speed only"
    timeout 200 python3 benchmarks/dqn_atari_vs_sb3.py --frames 80000 --learning_starts 2000 --seeds 1 --eval_episodes 0 --device gpu --threads 1 --surge_workers 4 --surge_envs 8 --timeout 95 2>&1 | tee "$OUT/dqn_gpu_4x8.txt" | grep -v "^\[20" | tail -12
    ;;
*)
    echo "usage: $0 surge|both|diagnose" >&2; exit 2
    ;;
esac
