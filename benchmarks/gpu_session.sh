#!/usr/bin/env bash
# The checks for a lent GPU machine (the `device` tool), one stage per call; run from the repo root.
#
#   bash benchmarks/gpu_session.sh wheels  # here, first: the wheels the device calls carry (.whlall)
#   bash benchmarks/gpu_session.sh surge   # surge alone: the CUDA tests, DQN vs SB3, APPO configs
#   bash benchmarks/gpu_session.sh both    # surge vs Sample Factory 2.1.1 on doom_benchmark; DQN vs SB3
#   bash benchmarks/gpu_session.sh diagnose  # which process saturates; CPU per frame by kind; DQN 4x8 envs
#   bash benchmarks/gpu_session.sh same_map  # doom_benchmark vs Sample Factory on its battle.cfg, 3 rounds
#   bash benchmarks/gpu_session.sh pong_roles  # then, warm: role ceilings on the GPU; pong_1epoch vs SF, 1 round
#   bash benchmarks/gpu_session.sh next        # CUDA tests; the learner on 1 and 2 threads on the GPU, batches by DMA and gathered
#                                              # on the host; the inference worker with and without CUDA graphs
#   bash benchmarks/gpu_session.sh pong_two    # pong_1epoch vs SF, 2 inference workers each, 3 rounds
#   bash benchmarks/gpu_session.sh roles     # then, warm: the CUDA tests; CPU per frame by kind, both
#   bash benchmarks/gpu_session.sh profile   # torch's profiler over the GPU roles: where their CPU goes
#   bash benchmarks/gpu_session.sh kernels   # what the learner's 58 µs per kernel is: spin vs blocking
#
# The machine's image has Python 3.12 with CUDA torch but none of the env packages, and reaches no
# package index, so the wheels travel with the call (`carry`), downloaded here for cp312:
#   .whlall/  gymnasium 1.x, farama-notifications, ale-py, vizdoom (its freedoom1.wad left out),
#             faster-fifo, setproctitle, stable-baselines3 (surge's side); in .whlall/sf/ numpy 1.26.4, sample-factory 2.1.1 (its freedm.wad and dwango5.wad left out),
#             gymnasium 0.29.1, signal-slot-mp, colorlog, tensorboardx: 51 MB, one call's 64 MB
#             with the repo. Sample Factory 2.1.1 fails under numpy 2 ("setting an array element
#             with a sequence" in its rollout workers), hence its own numpy.
# Every device call names .whlall in `carry`. The machine keeps no ignored repo folder between
# calls, so each stage installs what it uses.
# Logs go to $OUT. docs/logs/gpu_2026-11-27.md has the first session's output.
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/gpu_out}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
ROOT=$PWD
step() { echo "=== [$(date +%T)] $*"; }
install() { python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$2" "$1"/*.whl; }
# /tmp/sfpy: python3 with Sample Factory's packages first. ale-py 0.12 (the cp312 wheel, ROMs bundled)
# skips registering its ids under Sample Factory's gymnasium 0.29 (its vector env needs gymnasium 1.x),
# so a sitecustomize registers the v0/v4 ids (PongNoFrameskip-v4) in every process Sample Factory starts
sf_python() {
    mkdir -p /tmp/sfale
    printf 'try:\n    from ale_py.registration import register_v0_v4_envs\n    register_v0_v4_envs()\nexcept ImportError:\n    pass\n' >/tmp/sfale/sitecustomize.py
    printf '#!/bin/sh\nPYTHONPATH=/tmp/sfale:/tmp/sfsite:/tmp/site exec python3 "$@"\n' >/tmp/sfpy
    chmod +x /tmp/sfpy
}

# both frameworks' wheels installed, Sample Factory's python written, the machine named
both_sides() {
    step install; install .whlall /tmp/site || exit 1; install .whlall/sf /tmp/sfsite || exit 1
    sf_python
    export PYTHONPATH=$ROOT:/tmp/site
    nvidia-smi -L; nproc; git log --oneline -1 2>/dev/null
}

case "${1:-}" in
surge)
    step install; install .whlall /tmp/site || exit 1
    export PYTHONPATH=$ROOT:/tmp/site
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
    sf_python
    export PYTHONPATH=$ROOT:/tmp/site
    nvidia-smi -L; nproc
    /tmp/sfpy -c "import numpy, gymnasium, sample_factory, vizdoom; print('SF side: numpy', numpy.__version__, 'gymnasium', gymnasium.__version__)"
    step "doom_benchmark on the GPU: surge vs Sample Factory 2.1.1, 16 workers, alternating"
    timeout 230 python3 benchmarks/compare_sample_factory.py --config doom_benchmark --rounds 2 --placement async --no-dummy --sf-python /tmp/sfpy --frames-scale 20 --timeout 42 --extra "--device=gpu --num_workers=16" 2>&1 | tee "$OUT/doom_gpu_vs_sf.txt" | grep -v "^\[20" | tail -12
    step "DQN breakout on the GPU: surge (async) vs SB3, speed only"
    timeout 175 python3 benchmarks/dqn_atari_vs_sb3.py --frames 40000 --learning_starts 2000 --seeds 1 --eval_episodes 0 --device gpu --threads 1 --timeout 85 2>&1 | tee "$OUT/dqn_gpu.txt" | grep -v "^\[20" | tail -12
    ;;
same_map)
    # surge vs Sample Factory 2.1.1 on doom_benchmark, both on Sample Factory's battle.cfg (the
    # 11-27 session's 0.88x compared different maps), 3 alternating rounds; 75 s a run, since Sample
    # Factory's first progress lines with frames came after ~40 s there
    both_sides
    step "smoke: one learner step on the GPU equals the CPU step"
    timeout 60 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/integration/test_cuda.py -k one_learner_step 2>&1 | tail -3
    step "doom_benchmark on the GPU, same map: surge vs Sample Factory 2.1.1, 16 workers, 3 rounds"
    timeout 500 python3 benchmarks/compare_sample_factory.py --config doom_benchmark --rounds 3 --placement async --no-dummy --sf-python /tmp/sfpy --frames-scale 20 --timeout 75 --extra "--device=gpu --num_workers=16" 2>&1 | tee "$OUT/doom_gpu_same_map.txt" | grep -v "^\[20" | tail -14
    ;;
pong_two)
    # the next lent machine's first call (about 9 minutes with its start): pong_1epoch against Sample
    # Factory's async_rl, 3 alternating rounds, both frameworks with two inference workers per policy
    # (the cost model's 16-core prediction: surge 83.5k, cores-bound, against 59.2k with one;
    # docs/benchmarks.md); then, warm, `same_map` or `pong_roles`
    step install; install .whlall /tmp/site || exit 1; install .whlall/sf /tmp/sfsite || exit 1
    sf_python
    export PYTHONPATH=$ROOT:/tmp/site
    nvidia-smi -L; nproc
    step "pong_1epoch on the GPU, two inference workers each: surge vs Sample Factory 2.1.1 (async_rl), 16 workers, 3 rounds"
    timeout 540 python3 benchmarks/compare_sample_factory.py --config pong_1epoch --rounds 3 --placement async --sf-mode async_rl --no-dummy --sf-python /tmp/sfpy --frames-scale 20 --timeout 70 --extra "--device=gpu --num_workers=16 --policy_workers_per_policy=2" 2>&1 | tee "$OUT/pong_gpu_two_inference.txt" | grep -v "^\[20" | tail -12
    ;;
next)
    # after `same_map` on a warm machine (about 5 minutes): the CUDA tests (the DMA
    # of a batch from the registered buffers and the CUDA-graph inference among them), then the
    # learner alone and as its process runs it (two threads) on the GPU, its batches by DMA and
    # gathered on the host, then the inference worker with and without CUDA graphs
    both_sides
    step "pytest tests/integration/test_cuda.py -m 'not slow'"
    timeout 120 python3 -m pytest -q -p no:cacheprovider -o addopts="" -m "not slow" tests/integration/test_cuda.py 2>&1 | tee "$OUT/pytest_cuda_fast.txt" | tail -6
    for gather in dma host; do
        step "role ceilings on the GPU: the learner on one thread and on two, batches by $gather"
        timeout 90 python3 benchmarks/role_ceilings.py --config pong_1epoch --config doom_benchmark \
            --role learner --role learner_threads --device cuda --seconds 4 $([ $gather = host ] && echo --host_gather) \
            --out "$OUT/learner_threads_gpu_$gather.json" 2>&1 | tee "$OUT/learner_threads_gpu_$gather.txt" | grep -v "^\[20"
    done
    for graphs in on off; do
        step "role ceilings on the GPU: the inference worker, CUDA graphs $graphs"
        timeout 90 python3 benchmarks/role_ceilings.py --config pong_1epoch --config doom_benchmark \
            --role inference --device cuda --seconds 4 $([ $graphs = off ] && echo --no_cuda_graphs) \
            --out "$OUT/inference_gpu_graphs_$graphs.json" 2>&1 | tee "$OUT/inference_gpu_graphs_$graphs.txt" | grep -P -v '^\[20(?!.*(CUDA|graph))'
    done
    ;;
pong_roles)
    # on the machine `same_map` left warm: the role ceilings on the GPU (auto CUDA schedule, as
    # training runs), then pong_1epoch against Sample Factory's default async_rl, one round
    [ -x /tmp/sfpy ] || { step install; install .whlall /tmp/site || exit 1; install .whlall/sf /tmp/sfsite || exit 1; sf_python; }
    export PYTHONPATH=$ROOT:/tmp/site
    step "role ceilings on the GPU: learner and inference, three shapes"
    timeout 100 python3 benchmarks/role_ceilings.py --config doom_benchmark --config pong_1epoch --config cartpole \
        --role learner --role inference --device cuda --seconds 4 --out "$OUT/role_ceilings_gpu.json" 2>&1 | tee "$OUT/role_ceilings_gpu.txt" | grep -v "^\[20"
    step "pong_1epoch on the GPU: surge vs Sample Factory 2.1.1 (async_rl), 16 workers, 1 round"
    timeout 170 python3 benchmarks/compare_sample_factory.py --config pong_1epoch --rounds 1 --placement async --sf-mode async_rl --no-dummy --sf-python /tmp/sfpy --frames-scale 20 --timeout 70 --extra "--device=gpu --num_workers=16" 2>&1 | tee "$OUT/pong_gpu_vs_sf.txt" | grep -v "^\[20" | tail -8
    ;;
roles)
    # on the machine `same_map` left warm (/tmp keeps its installs): the CUDA tests, then the CPU
    # per frame of each kind of process for both frameworks (which process saturates)
    [ -f /tmp/sfpy ] || { step install; install .whlall /tmp/site || exit 1; install .whlall/sf /tmp/sfsite || exit 1
        sf_python; }
    export PYTHONPATH=$ROOT:/tmp/site
    step "pytest tests/integration/test_cuda.py"
    timeout 150 python3 -m pytest -q -p no:cacheprovider -o addopts="" --durations=10 tests/integration/test_cuda.py 2>&1 | tee "$OUT/pytest_cuda.txt" | tail -16
    GPU16="--device=gpu --num_workers=16 --train_for_env_steps=1000000000 --decorrelate_experience_max_seconds=0"
    args() { python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from configs import CONFIGS; print(' '.join(CONFIGS['$1'].$2))"; }
    step "CPU per frame by kind of process, doom_benchmark on the GPU: surge"
    python3 benchmarks/process_cpu.py --framework surge --seconds 55 --train_dir /tmp/pc_surge -- python3 -m surge.train $(args doom_benchmark surge_args) $GPU16 --train_dir=/tmp/pc_surge --experiment=surge --restart_behavior=restart 2>&1 | tee "$OUT/process_cpu_surge.txt"
    step "the same, Sample Factory"
    python3 benchmarks/process_cpu.py --framework sf --seconds 65 --train_dir /tmp/pc_sf -- /tmp/sfpy -m sf_examples.vizdoom.train_vizdoom $(args doom_benchmark sf_args) --serial_mode=False $GPU16 --train_dir=/tmp/pc_sf --experiment=sf 2>&1 | tee "$OUT/process_cpu_sf.txt"
    ;;
profile)
    # where the GPU roles' CPU goes op by op (torch's profiler): launches against waiting, per pass
    # (Sample Factory's wheel too: doom_benchmark plays its battle.cfg)
    [ -f /tmp/sfpy ] || { step install; install .whlall /tmp/site || exit 1; install .whlall/sf /tmp/sfsite || exit 1; sf_python; }
    export PYTHONPATH=$ROOT:/tmp/site
    nproc; git log --oneline -1 2>/dev/null
    step "profile of the inference worker and the learner on the GPU: pong_1epoch, doom_benchmark"
    timeout 200 python3 benchmarks/gpu_profile.py --config pong_1epoch --config doom_benchmark --device cuda --calls 20 2>&1 | grep -v "^\[20\|USDT" | tee "$OUT/gpu_profile.txt"
    step "the inference worker again, the CPU sleeping while it waits for the GPU (blocking schedule)"
    timeout 120 python3 benchmarks/gpu_profile.py --config pong_1epoch --config doom_benchmark --role inference --device cuda --calls 20 --cuda_schedule blocking 2>&1 | grep -v "^\[20\|USDT" | tee "$OUT/gpu_profile_blocking.txt"
    ;;
kernels)
    # the cost model's 58 µs of a single process's CPU per kernel (docs/benchmarks.md): the learner
    # and the inference worker alone on the GPU, the CPU waiting by spinning (CUDA's default here)
    # and by sleeping, alternating; each run prints thread CPU and GPU busy µs per env frame
    [ -d /tmp/site/gymnasium ] || { step install; install .whlall /tmp/site || exit 1; }
    export PYTHONPATH=$ROOT:/tmp/site
    for round in 1; do  # about 3 minutes a round
        for sched in spin blocking; do
            step "role ceilings on the GPU, round $round, --cuda_schedule $sched"
            timeout 120 python3 benchmarks/role_ceilings.py --config doom_benchmark --config pong_1epoch --config cartpole \
                --role learner --role inference --device cuda --seconds 6 --cuda_schedule $sched \
                --out "$OUT/kernels_${sched}_$round.json" 2>&1 | tee "$OUT/kernels_${sched}_$round.txt" | grep -v "^\[20"
        done
    done
    ;;
diagnose)
    # where the GPU runs' time goes (for the next lent machine): which process saturates, surge's and
    # Sample Factory's CPU per frame by kind of process, and DQN with more rollout envs than SB3's one
    step install; install .whlall /tmp/site || exit 1; install .whlall/sf /tmp/sfsite || exit 1
    sf_python
    export PYTHONPATH=$ROOT:/tmp/site
    GPU16="--device=gpu --num_workers=16 --train_for_env_steps=1000000000 --decorrelate_experience_max_seconds=0"
    args() { python3 -c "import sys; sys.path.insert(0, 'benchmarks'); from configs import CONFIGS; print(' '.join(CONFIGS['$1'].$2))"; }
    step "surge per role on the GPU (scaling.py --config), 1 and 2 inference workers"
    for piw in 1 2; do
        timeout 150 python3 benchmarks/scaling.py --config doom_benchmark --config pong_1epoch --extra "--device=gpu --num_workers=16 --policy_workers_per_policy=$piw" --rounds 1 --seconds 40 --out /tmp/roles_$piw 2>&1 | tee "$OUT/roles_surge_gpu_piw$piw.txt" | tail -6
    done
    step "CPU per frame by kind of process, doom_benchmark on the GPU, Sample Factory (surge's: above)"
    python3 benchmarks/process_cpu.py --framework sf --seconds 75 --train_dir /tmp/pc_sf -- /tmp/sfpy -m sf_examples.vizdoom.train_vizdoom $(args doom_benchmark sf_args) --serial_mode=False $GPU16 --train_dir=/tmp/pc_sf --experiment=sf 2>&1 | tee "$OUT/process_cpu.txt"
    step "DQN breakout on the GPU: surge with 4 workers x 8 envs vs SB3, speed only"
    timeout 200 python3 benchmarks/dqn_atari_vs_sb3.py --frames 80000 --learning_starts 2000 --seeds 1 --eval_episodes 0 --device gpu --threads 1 --surge_workers 4 --surge_envs 8 --timeout 95 2>&1 | tee "$OUT/dqn_gpu_4x8.txt" | grep -v "^\[20" | tail -12
    ;;
wheels)
    # here, not on the device: download the cp312 wheels into .whlall/ (and .whlall/sf/), leaving
    # out the wads doom_benchmark does not play; add /.whlall/ to .git/info/exclude
    P="--no-deps --only-binary=:all: --python-version 3.12 --implementation cp --platform manylinux_2_28_x86_64
       --platform manylinux_2_27_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64
       --platform manylinux1_x86_64 --platform manylinux_2_5_x86_64"
    mkdir -p .whlall/sf
    for w in gymnasium farama-notifications ale-py vizdoom==1.3.2 faster-fifo setproctitle stable-baselines3; do
        python3 -m pip download -q $P -d .whlall "$w" || exit 1
    done
    for w in numpy==1.26.4 sample-factory==2.1.1 gymnasium==0.29.1 signal-slot-mp colorlog tensorboardx; do
        python3 -m pip download -q $P -d .whlall/sf "$w" || exit 1
    done
    python3 - <<'PY'
import glob, zipfile, os
def strip(path, drop):  # rewrite the wheel without the files ending in `drop` (and their RECORD lines)
    tmp = path + ".tmp"
    with zipfile.ZipFile(path) as zi, zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as zo:
        for info in zi.infolist():
            if info.filename.endswith(drop):
                continue
            data = zi.read(info.filename)
            if info.filename.endswith(".dist-info/RECORD"):
                data = b"\n".join(x for x in data.split(b"\n") if not x.split(b",")[0].decode().endswith(drop))
            zo.writestr(info, data)
    os.replace(tmp, path)
strip(glob.glob(".whlall/vizdoom-*.whl")[0], ("freedoom1.wad",))
strip(glob.glob(".whlall/sf/sample_factory-*.whl")[0], ("freedm.wad", "dwango5.wad"))
PY
    du -sh .whlall
    ;;
*)
    echo "usage: $0 wheels|surge|both|same_map|next|pong_roles|pong_two|roles|profile|kernels|diagnose" >&2; exit 2
    ;;
esac
