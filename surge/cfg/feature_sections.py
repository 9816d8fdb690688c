"""The config sections of features a run may turn on, one dataclass per `--help` section: the
central value, PBT, self-play and policy roles, debugging and benchmarking, evaluation during
training, `surge enjoy`'s flags, distributed runs. `Config` composes them (`surge.cfg.config`)."""

from __future__ import annotations

from dataclasses import dataclass

from surge.cfg.fields import param


@dataclass
class CentralValueParams:
    """Asymmetric actor-critic, rl_games' `central_value_config` (docs/central_value.md): the
    actor sees the observation without its state entry, a separate central value network sees the
    state and gives the values of the advantages and targets. (`--help` section "central value")"""

    central_value: bool = param(
        False,
        "Train a central value (critic) on the observation's state entry (--central_value_state_key) "
        "while the actor sees the rest (APPO/PPO, GAE or V-trace).",
    )
    central_value_state_key: str = param(
        "state", "Key of the observation Dict entry the central value reads and the actor never sees."
    )
    central_value_mlp_layers: list = param(
        [], "Hidden sizes of the central value's MLP ([]: as --encoder_mlp_layers)."
    )
    central_value_learning_rate: float | None = param(
        None,
        "Adam learning rate of the central value (None: --learning_rate); follows --lr_schedule "
        "(linear_decay; constant under a kl_adaptive schedule, as rl_games 1.6.5, which does not pass "
        "the adapted rate on).",
    )
    central_value_mini_epochs: int | None = param(
        None, "Passes of the central value over each batch (None: --ppo_epochs)."
    )
    central_value_minibatch_size: int | None = param(
        None, "Samples per central value minibatch (None: --batch_size)."
    )
    central_value_normalize_input: bool = param(
        False, "Running mean/std normalisation of the state the central value reads."
    )
    central_value_clip_value: bool = param(
        True,
        "Clip the central value's change per batch to --ppo_clip_value in its loss (rl_games' clip_value).",
    )
    central_value_max_grad_norm: float | None = param(
        None, "Max L2 norm of the central value's gradient (None: --max_grad_norm; 0: no clipping)."
    )
    central_value_use_rnn: bool = param(
        False, "Recurrent central value (rl_games' network.rnn); not supported yet: True is refused."
    )


@dataclass
class PbtParams:
    """Per-policy hyper-parameters and population-based training (Sample Factory's PBT flags and meanings; docs/population.md). (`--help` section "PBT")"""

    policy_hyperparams: str = param(
        "",
        "Per-policy starting hyper-parameters as JSON, policy id -> {name: value}, e.g. "
        '\'{"1": {"learning_rate": 3e-3}}\'; names: learning_rate, exploration_loss_coeff, value_loss_coeff, '
        "ppo_clip_ratio, ppo_clip_value, gamma, gae_lambda, max_grad_norm, adam_beta1, adam_beta2. "
        "Unnamed values come from their flags. A resumed policy keeps its checkpoint's values.",
    )
    with_pbt: bool = param(
        False,
        "Population-based training (Jaderberg et al. 2017, as Sample Factory's): every --pbt_period_env_steps "
        "the worst policies copy a better one's weights, optimizer and hyper-parameters, then perturb them.",
    )
    pbt_mix_policies_in_one_env: bool = param(
        True,
        "Multi-agent envs with the random policy mapping: each agent draws its own policy (else one per env).",
    )
    pbt_period_env_steps: int = param(
        int(5e6),
        "Env frames a policy plays (its episodes' lengths x frameskip) between two PBT updates of it.",
    )
    pbt_start_mutation: int = param(
        int(2e7), "Env frames a policy plays before PBT first updates it (initial diversification)."
    )
    pbt_replace_fraction: float = param(
        0.3,
        "Fraction of the population (rounded up) counted as best and as worst: the worst may copy a best one.",
    )
    pbt_mutation_rate: float = param(0.15, "Probability that each hyper-parameter is perturbed at an update.")
    pbt_replace_reward_gap: float = param(
        0.1, "Relative objective gap |best - worst| / |best| a replacement needs (besides the absolute one)."
    )
    pbt_replace_reward_gap_absolute: float = param(
        1e-6, "Absolute objective gap |best - worst| a replacement needs (besides the relative one)."
    )
    pbt_optimize_batch_size: bool = param(
        False,
        "Refused when True: the batch size sizes the shared buffers, allocated once (as Sample Factory 2).",
    )
    pbt_optimize_gamma: bool = param(False, "PBT also perturbs gamma (Sample Factory 2's flag).")
    pbt_target_objective: str = param(
        "true_reward",
        "Per-episode statistic PBT maximises (mean of the last --stats_avg episodes): true_reward is the "
        "episode return; any other name is read from the env's info at the episode's end, "
        "info['episode_extra_stats'][name] or info[name] (Doom: FRAGCOUNT, KILLCOUNT).",
    )
    pbt_perturb_min: float = param(
        1.1, "A perturbed value is multiplied or divided by a factor drawn in [min, max]."
    )
    pbt_perturb_max: float = param(1.5, "See --pbt_perturb_min.")


@dataclass
class SelfPlayParams:
    """Policy roles (learning or frozen) and self-play against a pool of past snapshots, rl_games'
    `self_play_config` (docs/population.md). (`--help` section "self-play and policy roles")"""

    frozen_policies: list = param(
        [],
        "Policies that act but never learn (no learner, no optimizer, no experience), as ID:SOURCE "
        "items: SOURCE is a checkpoint file (.pth, its 'model' weights), 'random' (its random "
        "initial weights) or 'uniform' (action logits zeroed: uniformly random over the legal "
        "actions). Example: --frozen_policies 1:uniform 2:train_dir/exp/checkpoint_p0/best.pth",
        item_type=str,
    )
    self_play: bool = param(
        False,
        "Self-play the rl_games way: policy 0 learns, policies 1..num_policies-1 are frozen opponent "
        "slots holding snapshots of policy 0 (a pool, saved in <experiment>/self_play/); every game "
        "pairs policy 0 with one opponent slot (--policy_mapping=self_play).",
    )
    self_play_update_score: float = param(
        0.7,
        "rl_games' update_score: a new snapshot of policy 0 joins the pool when its mean score over "
        "the last self_play_games_to_check games against the pool is above this.",
    )
    self_play_games_to_check: int = param(
        200, "rl_games' games_to_check: games since the last snapshot before the score is checked."
    )
    self_play_check_scores: bool = param(
        True,
        "rl_games' check_scores: True scores each game as a win 1, draw 0.5, loss 0 (the win rate); "
        "False uses policy 0's mean episode return instead (rl_games' default).",
    )
    self_play_env_update_num: int = param(
        1,
        "rl_games' env_update_num: opponent slots that receive each new snapshot; the slots refreshed "
        "rotate by one per snapshot, so with 1 the pool keeps the latest num_policies-1 snapshots.",
    )


@dataclass
class DebugParams:
    """Benchmarking and progress reporting. (`--help` section "debugging and benchmarking")"""

    benchmark: bool = param(
        False,
        "Sample Factory's benchmark mode: the run also ends after 2M env frames since its start or "
        "resume or 1M agent steps acted on, whichever comes first, and the rollout workers skip the "
        "decorrelation pause at their start; checkpoints and summaries are written as usual.",
    )
    no_writes: bool = param(
        False,
        "Write nothing in the experiment folder (no cfg.json, log file, checkpoints, summaries, "
        "report or done marker): throughput measurements (surge bench, surge tune).",
    )
    sampler_only: bool = param(False, "Do not train, measure sampling throughput only.")
    sample_env_frames: int = param(int(1e7), "DUMMY_SAMPLER: env frames to sample.", low=1)
    report_interval_sec: float = param(5.0, "Seconds between console progress lines.")
    progress_bar: str = param(
        "auto",
        "Live progress bar on the console (env frames, rate, ETA, latest return; redrawn at most "
        "once a second): auto = when stdout is a terminal and rich is installed, else the plain "
        "progress lines; rich = always (needs rich); off = the plain lines. The log file keeps "
        "the plain lines either way.",
        ("auto", "rich", "off"),
    )


@dataclass
class TrainEvalParams:
    """Evaluation during training: separate eval envs play the learning policies' current weights
    every `eval_every_env_frames` (docs/evaluation.md). (`--help` section "evaluation during training")"""

    eval_every_env_frames: int = param(
        0,
        "Evaluate each learning policy every this many env frames (0: never): --eval_episodes "
        "full episodes on separate eval envs (own seeds), in their own process in the async "
        "placement, inline in the serial one. Returns go to the log and TensorBoard (eval/return_mean).",
    )
    eval_episodes: int = param(10, "Episodes per evaluation (each policy), each on its own seed.")
    eval_num_envs: int = param(
        8,
        "Eval envs an evaluation plays at once, acted for in one batched forward pass per step (at "
        "most the episodes it needs). Episode k is played on seed k whichever env plays it, and an "
        "evaluation plays exactly its episodes: the same returns as one env at a time, however many.",
    )
    eval_deterministic: bool = param(
        False,
        "Take the most likely action instead of sampling (in surge enjoy, and in evaluation during "
        "training: sampled by default, as Sample Factory's enjoy; SB3's EvalCallback acts deterministically).",
    )
    save_best_by_eval: bool = param(
        False,
        "The best checkpoint is the evaluated weights with the highest eval return (needs "
        "--eval_every_env_frames), instead of the weights with the highest training return.",
    )
    eval_score_to_win: float | None = param(
        None,
        "Stop (done, with a final checkpoint) once every learning policy has had an evaluation "
        "with a mean return >= this (Stable-Baselines3's StopTrainingOnRewardThreshold on "
        "EvalCallback; needs --eval_every_env_frames; with --save_best_by_eval each policy's best "
        "checkpoint then scored at least this). None: never.",
    )
    eval_env: str = param(
        "",
        "Env the evaluations play instead of the training env (same family, same observation and "
        "action spaces), e.g. --env=doom_duel --eval_env=doom_duel_bots: a self-play population "
        "measured against the built-in bots, as Stable-Baselines3's EvalCallback(eval_env).",
    )
    eval_stat: str = param(
        "",
        "Per-episode statistic each evaluation also reports (mean over its episodes, log and "
        "TensorBoard eval/<name>_mean), read from the info at the episode's end as PBT reads its "
        "objective: info['episode_extra_stats'][name], info[name] or Doom's game variables (FRAGCOUNT).",
    )


@dataclass
class EvalParams:
    """Flags of `surge enjoy` (Sample Factory 2's enjoy spelling)."""

    max_num_episodes: int | None = param(
        None,
        "Stop after this many episodes (None: until the window is closed, or 10 without a window: "
        "with --no_render, --save_video or no display).",
    )
    max_num_frames: int = param(int(1e9), "Stop after this many env frames.")
    no_render: bool = param(False, "Do not show the env on screen.")
    save_video: bool = param(
        False,
        "Write an mp4 to the experiment folder instead of rendering: each episode from its first "
        "frame to its last (N + 1 frames for N env steps); after Ctrl+C its finished episodes only, "
        "and with none finished the previous video is kept.",
    )
    video_frames: int = param(int(1e9), "Max frames in the saved video.")
    video_name: str = param("", "File name of the video (default: replay.mp4).")
    fps: int = param(0, "Frames per second of rendering and of the video (0: as fast as possible / 30).")
    eval_deterministic: bool = param(False, "Take the most likely action instead of sampling.")
    load_checkpoint_kind: str = param("latest", "Which checkpoint to load.", ("latest", "best"))
    checkpoint_path: str = param("", "Load this checkpoint file instead.")
    policy_index: int = param(0, "Which policy plays (its checkpoints are in checkpoint_p<index>).")


@dataclass
class DistributedParams:
    """Sampler nodes on a Ray cluster (docs/scaling.md). (`--help` section "distributed")"""

    distributed: str = param(
        "none",
        "none: every process on this machine. ray: the learner stays in this process's machine (the "
        "Ray head or the driver's node), --ray_sampler_nodes sampler nodes (rollout and inference "
        "workers on one machine's shared memory each) run as Ray actors and ship finished "
        "trajectory blocks to it through Ray's object store. Needs pip install 'surge-rl[ray]'.",
        ("none", "ray"),
    )
    ray_address: str | None = param(
        None,
        "Address of an existing Ray cluster (host:port of its head, or 'auto'); None starts Ray "
        "locally in this process (ray.init()) and stops it at the end.",
    )
    ray_sampler_nodes: int = param(
        1,
        "Sampler nodes (Ray actors), each running --num_workers rollout workers x "
        "--num_envs_per_worker envs with their inference workers on its machine.",
    )
    ray_node_resource: str = param(
        "",
        "A custom Ray resource each sampler node requests one unit of (start each sampler machine "
        "with ray start --resources='{\"NAME\": 1}' to place one node per machine); empty: any "
        "machine with a free CPU.",
    )
    ray_max_restarts: int = param(
        10,
        "Times Ray restarts a sampler node whose actor died (its machine lost, its processes "
        "killed) while training goes on; -1: without limit. A node beyond it ends the run.",
    )
    ray_blocks_per_shipment: int = param(
        4,
        "A sampler node ships its finished trajectory blocks once this many are ready (or 0.5 s "
        "passed), all those ready in one object: fewer, larger transfers than one per block.",
    )
