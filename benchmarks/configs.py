"""Benchmark configs: the same env, model, rollout, batch and workers for surge and Sample Factory
2.1.1, each in its own flag spelling (SF2 renamed ppo_epochs to num_epochs and
num_batches_per_iteration to num_batches_per_epoch)."""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field


@dataclass
class BenchConfig:
    """One row of the benchmark table.

    Attributes:
        surge_args: `surge train` flags (without experiment / train_dir / budget).
        sf_module: the Sample Factory example module that registers the env.
        sf_args: its flags.
        frames: env frames per run (Sample Factory counts frames, frameskip included).
        surge_modes / sf_modes: placements to try; the table reports each and the best.
        sf_return_scale: multiplies the episode return Sample Factory logs, to put it in surge's
            units. SF logs the return after its env's reward-scaling wrapper (doom_basic: x0.01),
            surge logs the unscaled game score (its `reward_scaling` only scales what it trains on).
    """

    surge_args: list[str]
    sf_module: str
    sf_args: list[str]
    frames: int
    surge_modes: dict[str, list[str]] = field(
        default_factory=lambda: {"async": ["--serial_mode=False"], "serial": ["--serial_mode=True"]}
    )
    # placements; async_rl (sync vs async learning) stays as each example sets it, except where
    # a config adds SF's async_rl=True as a mode of its own (_SF_MODES_WITH_ASYNC_RL)
    sf_modes: dict[str, list[str]] = field(
        default_factory=lambda: {"async": ["--serial_mode=False"], "serial": ["--serial_mode=True"]}
    )
    sf_return_scale: float = 1.0


def sf_battle_cfg() -> str | None:
    """Sample Factory's `battle.cfg`, the scenario its doom_benchmark plays (`battle.wad` beside it):
    `$SF_BATTLE_CFG`, else the copy in an installed Sample Factory (the venv of `sf_setup.sh` at
    /work/sf-venv, or /tmp/sfsite as `gpu_session.sh` installs it); None when there is none.

    surge's doom_benchmark plays vizdoom's deathmatch arena by default (battle.wad does not ship with
    vizdoom, docs/doom.md); the benchmark points `--doom_scenario_path` here so that both frameworks
    play the same map with the same render settings."""
    if os.environ.get("SF_BATTLE_CFG"):
        return os.environ["SF_BATTLE_CFG"]
    rel = "sf_examples/vizdoom/doom/scenarios/battle.cfg"
    found = glob.glob(f"/work/sf-venv/lib/python3*/site-packages/{rel}") + glob.glob(f"/tmp/sfsite/{rel}")
    return found[0] if found else None


_BATTLE_CFG = sf_battle_cfg()
_COMMON = ["--num_workers=2", "--device=cpu", "--seed=1"]
# Settings Sample Factory 2 turns on (core defaults, or its example's) that surge's defaults leave
# off; surge gets them spelled out so both frameworks do the same work and learn the same way.
_SF_NORMALIZE = ["--normalize_input=True", "--normalize_returns=True"]
# Sample Factory 2's initialisation and time-out handling where surge's atari_ family follows
# CleanRL instead: SF's conv encoder is a TorchScript module that its orthogonal init skips
# (PyTorch's init), its action head gets gain 1 (surge's family: 0.01, near-uniform at the start),
# and it does not bootstrap time-outs. The head's gain decides how fast Pong learns per frame early
# on: with 0.01 surge's policy entropy stayed at its maximum through 1M env frames of pong_1epoch
# while SF's fell to 1.62 (docs/logs/benchmarks_2026-12-04.md).
_SF_INIT = [
    "--encoder_initialization=torch_default",
    "--action_head_init_gain=1.0",
    "--value_bootstrap=False",
]
_SF_ATARI = [*_SF_NORMALIZE, "--adam_eps=1e-5", *_SF_INIT]  # sf_examples/atari/atari_params.py
# SF's Atari and MuJoCo examples learn synchronously (async_rl=False: collection waits while the
# learner trains); the seed's APPO and surge's default learn asynchronously. SF gets both.
_SF_MODES_WITH_ASYNC_RL = {
    "async": ["--serial_mode=False"],
    "serial": ["--serial_mode=True"],
    "async_rl": ["--serial_mode=False", "--async_rl=True"],
}
# Sample Factory 2's core default (GAE, no V-trace), which its VizDoom example keeps; surge's own
# default is V-trace, so the doom rows spell it out for both frameworks.
_DOOM_CORE = ["--with_vtrace=False"]
# the seed's benchmark flags (same spelling in both; SF2 only renamed ppo_epochs -> num_epochs)
_DOOM_BENCH = [
    "--env_frameskip=4",
    "--use_rnn=True",
    "--rollout=32",
    "--recurrence=32",
    "--res_w=128",
    "--res_h=72",
    "--wide_aspect_ratio=False",
    "--num_envs_per_worker=16",
    "--worker_num_splits=2",
    "--batch_size=1024",
]

# surge's placements for the MLP configs: besides async and serial, the async placement with each
# rollout worker acting itself (no inference processes: cheaper than the round trip for a small
# model; docs/architecture.md). Sample Factory has no such placement.
_SURGE_MODES_MLP = {
    "async": ["--serial_mode=False"],
    "serial": ["--serial_mode=True"],
    "async_acting_in_workers": ["--serial_mode=False", "--policy_workers_per_policy=0"],
}

# For a plain gymnasium id surge chooses small-MLP PPO defaults by the env's spaces
# (docs/defaults.md); Sample Factory 2 keeps its core defaults, so the gym rows spell those out for
# surge to do the same work and start from the same weights. Where surge's Config defaults differ
# from SF2's core: SF's MLP encoder is a TorchScript module that its orthogonal init skips (PyTorch's
# init), its action head gets gain 1 (surge: 0.01), and it does not bootstrap time-outs. The encoder's
# init changes how fast this config learns per frame (docs/logs/benchmarks_2026-11-28.md), so the
# rows give all three as SF has them.
_SF_CORE_FOR_GYM = [
    "--encoder_mlp_layers", "512", "512", "--hidden_size=512", "--nonlinearity=elu",
    "--learning_rate=1e-4", "--max_grad_norm=4.0", "--ppo_epochs=1", "--num_batches_per_iteration=1",
    "--exploration_loss_coeff=0.003", "--reward_clip=10",
    "--encoder_initialization=torch_default", "--action_head_init_gain=1.0", "--value_bootstrap=False",
]  # fmt: skip

CONFIGS: dict[str, BenchConfig] = {
    # the seed's doom_battle training line (`--env=doom_battle --env_frameskip=4 --use_rnn=True
    # --num_workers=72 --num_envs_per_worker=8 --num_policies=1 --ppo_epochs=1 --rollout=32
    # --recurrence=32 --batch_size=2048 --wide_aspect_ratio=False`) scaled from 72 workers to 2,
    # 4B env frames to 5M: a learning comparison (issue 58), both on Sample Factory's battle.wad
    # (`surge doom-scenarios install`). SF's doom_battle keeps its reward (no scaling).
    "doom_battle": BenchConfig(
        surge_args=[
            "--env=doom_battle",
            *_COMMON,
            *_DOOM_CORE,
            *_DOOM_BENCH[:-1],
            "--batch_size=2048",
            "--ppo_epochs=1",
        ],
        sf_module="sf_examples.vizdoom.train_vizdoom",
        sf_args=[
            "--env=doom_battle",
            *_COMMON,
            *_DOOM_CORE,
            *_DOOM_BENCH[:-1],
            "--batch_size=2048",
            "--num_epochs=1",
        ],
        frames=5_000_000,
    ),
    # Sample Factory's gym example command line (sf_examples/train_gym_env.py docstring)
    "cartpole": BenchConfig(
        surge_args=[
            "--env=CartPole-v1",
            *_COMMON,
            "--use_rnn=False",
            "--recurrence=1",
            "--with_vtrace=False",
            "--num_envs_per_worker=20",
            "--policy_workers_per_policy=2",
            "--batch_size=512",
            "--reward_scale=0.1",
            *_SF_NORMALIZE,
            "--encoder_type=mlp",
            "--encoder_subtype=mlp",
            *_SF_CORE_FOR_GYM,
        ],
        surge_modes=_SURGE_MODES_MLP,
        sf_module="sf_examples.train_gym_env",
        sf_args=[
            "--env=CartPole-v1",
            *_COMMON,
            "--algo=APPO",
            "--use_rnn=False",
            "--recurrence=1",
            "--with_vtrace=False",
            "--num_envs_per_worker=20",
            "--policy_workers_per_policy=2",
            "--batch_size=512",
            "--reward_scale=0.1",
        ],
        frames=1_000_000,
    ),
    # Sample Factory's Atari example (= CleanRL PPO): Nature CNN, rollout 128, 4 epochs x 4 x 256
    "pong_example": BenchConfig(
        surge_args=[
            "--env=atari_pong",
            *_COMMON,
            *_SF_ATARI,
            "--num_envs_per_worker=4",
            "--worker_num_splits=1",
        ],
        sf_module="sf_examples.atari.train_atari",
        sf_args=["--env=atari_pong", *_COMMON, "--num_envs_per_worker=4", "--worker_num_splits=1"],
        frames=200_000,
        sf_modes=_SF_MODES_WITH_ASYNC_RL,
    ),
    # the seed's paper settings: 1 epoch, rollout 32, batch 512
    "pong_1epoch": BenchConfig(
        surge_args=[
            "--env=atari_pong",
            *_COMMON,
            *_SF_ATARI,
            "--num_envs_per_worker=8",
            "--worker_num_splits=2",
            "--rollout=32",
            "--batch_size=512",
            "--num_batches_per_iteration=1",
            "--ppo_epochs=1",
        ],
        sf_module="sf_examples.atari.train_atari",
        sf_args=[
            "--env=atari_pong",
            *_COMMON,
            "--num_envs_per_worker=8",
            "--worker_num_splits=2",
            "--rollout=32",
            "--batch_size=512",
            "--num_batches_per_epoch=1",
            "--num_epochs=1",
        ],
        frames=400_000,
        sf_modes=_SF_MODES_WITH_ASYNC_RL,
    ),
    # EnvPool batched sampling, Atari example learning settings
    "breakout_envpool": BenchConfig(
        surge_args=[
            "--env=envpool_breakout",
            *_COMMON,
            "--adam_eps=1e-5",  # SF's EnvPool Atari example; it normalises neither input nor returns
            *_SF_INIT,
            "--env_agents=16",
            "--num_envs_per_worker=1",
            "--worker_num_splits=1",
        ],
        sf_module="sf_examples.envpool.atari.train_envpool_atari",
        sf_args=[
            "--env=atari_breakout",
            *_COMMON,
            "--env_agents=16",
            "--num_envs_per_worker=1",
            "--worker_num_splits=1",
            "--batch_size=256",
            "--rollout=128",
            "--num_epochs=4",
            "--num_batches_per_epoch=4",
            "--normalize_input=False",
        ],
        frames=300_000,
        sf_modes={
            "async": ["--serial_mode=False", "--batched_sampling=True"],
            "serial": ["--serial_mode=True", "--batched_sampling=True"],
        },
    ),
    # Sample Factory's MuJoCo example
    "halfcheetah": BenchConfig(
        surge_args=[
            "--env=mujoco_halfcheetah",
            *_COMMON,
            "--normalize_returns=True",  # SF's MuJoCo example (surge's family normalises input only)
            "--num_envs_per_worker=8",
        ],
        surge_modes=_SURGE_MODES_MLP,
        sf_module="sf_examples.mujoco.train_mujoco",
        sf_args=["--env=mujoco_halfcheetah", *_COMMON, "--num_envs_per_worker=8"],
        frames=300_000,
        sf_modes=_SF_MODES_WITH_ASYNC_RL,
    ),
    # Sample Factory's VizDoom example on doom_basic. The doom family's defaults (128x72, frameskip 4,
    # normalize_input, symmetric_kl exploration, ...) come from SF's doom_override_defaults and from
    # surge's doom_ family alike, and the model / PPO settings are both frameworks' defaults
    # (GRU, rollout 32, batch 1024, 1 epoch), so only the command line's own flags are given.
    "doom_basic": BenchConfig(
        surge_args=["--env=doom_basic", *_COMMON, *_DOOM_CORE, "--num_envs_per_worker=8"],
        sf_module="sf_examples.vizdoom.train_vizdoom",
        sf_args=["--env=doom_basic", *_COMMON, *_DOOM_CORE, "--num_envs_per_worker=8"],
        # ~2 min per SF run here; SF's return goes from about -150 to -50 (still learning)
        frames=200_000,
        sf_return_scale=100.0,  # SF's doom_basic logs the return x0.01 (its reward_scaling)
    ),
    # the seed's VizDoom throughput benchmark (Sample Factory's battle.wad, 9 flat actions, 128x72,
    # frameskip 4, GRU, 1 epoch, rollout 32), scaled from 20 workers to 2: 16 envs per worker in 2
    # splits, batch 1024. surge plays Sample Factory's own battle.cfg (`sf_battle_cfg`); without it,
    # vizdoom's deathmatch arena, whose game process costs about 30% more CPU per frame.
    "doom_benchmark": BenchConfig(
        surge_args=[
            "--env=doom_benchmark",
            *_COMMON,
            *_DOOM_CORE,
            *_DOOM_BENCH,
            "--ppo_epochs=1",
            *([f"--doom_scenario_path={_BATTLE_CFG}"] if _BATTLE_CFG else []),
        ],  # fmt: skip
        sf_module="sf_examples.vizdoom.train_vizdoom",
        sf_args=["--env=doom_benchmark", *_COMMON, *_DOOM_CORE, *_DOOM_BENCH, "--num_epochs=1"],
        frames=150_000,
    ),
}
