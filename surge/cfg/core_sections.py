"""The core sections of the config, one dataclass per `--help` section: which env and algorithm
and where the run lives, when it stops, checkpoints and summaries, sampling, the model. (The
optimiser's section, and `Config` that composes them all, are in `surge.cfg.config`.)"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

from surge.cfg.fields import param


@dataclass
class ExperimentParams:
    """Which env and algorithm, where the run lives, the device and the seed. (`--help` section "experiment")"""

    algo: str = param(
        "APPO",
        "Algorithm: APPO (asynchronous PPO with V-trace or GAE), A2C (synchronous advantage "
        "actor-critic), DQN (double, dueling, categorical, n-step, prioritized replay), R2D2 "
        "(recurrent DQN, sequence replay), SAC, TD3 and DDPG (continuous actions, replay), "
        "DUMMY_SAMPLER (random actions, no learning), or one registered with "
        "surge.learning.algorithm.register_algorithm.",
    )
    env: str = param(
        "",
        "Env name with its family prefix (atari_breakout, cartpole), any gymnasium id, or "
        "package.module:EnvId (gymnasium's form: the module is imported, in every process, then the id made).",
    )
    env_wrappers: list = param(
        [],
        "Gymnasium wrappers applied to each env, in order, each called with the env only: names in "
        "gymnasium.wrappers (FlattenObservation) or package.module:Class. Single-agent envs only.",
        item_type=str,
    )
    experiment: str = param(
        "default_experiment",
        "Name of the experiment folder inside --train_dir (a folder name, or a relative path such as "
        "group/run; an empty name or one leading outside --train_dir is refused).",
    )
    train_dir: str = param("./train_dir", "Root folder of all experiment folders.")
    cfg: str = param("", "YAML file of parameter values; flags given on the command line win over it.")
    restart_behavior: str = param(
        "resume",
        "What to do when the experiment folder exists: resume it, restart it (delete the whole "
        "folder), or overwrite (start from scratch with this command's config: the previous run's "
        "checkpoints, summaries and done marker are deleted, its log is kept). Never saved in cfg.json.",
        ("resume", "restart", "overwrite"),
    )
    device: str = param(
        "cpu",
        "Device for inference and learning: cpu; gpu or cuda (the current GPU; in a torchrun run, "
        "each rank's LOCAL_RANK GPU); cuda:K (GPU K, on every rank).",
    )
    mixed_precision: str = param(
        "auto",
        "torch.autocast for the APPO learner's forward pass and the inference workers' act: auto "
        "(bf16 for a conv model on a CPU with native bfloat16, avx512_bf16 or amx_bf16; else "
        "float32; the run's log says which), none (float32), bf16 (CPU or a CUDA GPU with bf16), "
        "fp16 (CUDA only, with a GradScaler), bf16_cuda (bf16 where the device is CUDA, float32 "
        "elsewhere: rl_games' mixed_precision: True). Weights, optimizer "
        "step, V-trace/GAE, targets and what is written to the buffers stay float32 "
        "(docs/mixed_precision.md).",
        ("auto", "none", "bf16", "fp16", "bf16_cuda"),
    )
    cuda_graphs: bool = param(
        True,
        "On a CUDA device, an inference worker process replays its forward pass from captured CUDA "
        "graphs (one per batch size, rows padded up to a power of two): one launch per pass where "
        "each operation cost the CPU one. Used with an algorithm whose act allows it (APPO, A2C), "
        "float32 (--mixed_precision none) and without --deterministic; a capture that fails is "
        "logged and the worker acts without graphs. The run's log says which.",
    )
    seed: int | None = param(None, "Random seed for torch, numpy and the envs (None: random).")
    eval_env_frameskip: int | None = param(
        None,
        "Frameskip of the env `surge enjoy` plays (None: env_frameskip). A divisor of env_frameskip: "
        "each action then repeats env_frameskip / eval_env_frameskip times and every frame is shown, "
        "so videos play at game speed (Sample Factory's flag; the Doom family sets 1).",
    )
    serial_mode: bool = param(False, "Run envs, inference and learning in one process (debugging, CI).")
    deterministic: bool = param(
        False,
        "Async placement: a fixed schedule, so that two runs with the same --seed train bit-identical "
        "weights: each inference batch is one split of every rollout worker at the same step, in "
        "worker order; rollout r acts with the weights trained on rounds 0..r-2 (a lag of one round, "
        "as double buffering gives); the learner takes blocks in (round, worker, split) order "
        "(docs/reliability.md). APPO/PPO with one policy and inference processes only. The serial "
        "placement is exact without it.",
    )


@dataclass
class StoppingParams:
    """When training stops. (`--help` section "stopping")"""

    train_for_env_steps: int = param(
        int(1e10), "Stop after this many env frames (Sample Factory counts frames: env steps x frameskip)."
    )
    train_for_seconds: int = param(int(1e10), "Stop after this many seconds of training (wall clock).")
    score_to_win: float | None = param(
        None,
        "Stop (done, with a final checkpoint) once the mean true return of policy 0's last stats_avg "
        "episodes reaches this (rl_games' score_to_win; a full window of stats_avg episodes is "
        "needed). None: never.",
    )


@dataclass
class CheckpointParams:
    """Checkpoints, TensorBoard summaries and Weights & Biases. (`--help` section "checkpoints and summaries")"""

    save_every_sec: int = param(
        120, "Seconds between checkpoints.", low=0, high=threading.TIMEOUT_MAX, unit="time in seconds"
    )
    keep_checkpoints: int = param(3, "Number of latest checkpoints kept on disk.", low=1)
    save_milestones_sec: int = param(
        -1, "Seconds between milestone checkpoints that are never deleted (-1: none)."
    )
    save_best_every_sec: int = param(
        5,
        "Min seconds between two best checkpoints (Sample Factory's default; each one is written "
        "when --save_best_metric beats the best so far).",
        low=0,
        high=threading.TIMEOUT_MAX,
        unit="time in seconds",
    )
    save_best_after: int = param(
        100000, "Env frames before the best checkpoint is first saved (lucky early episodes do not count)."
    )
    save_best_metric: str = param(
        "reward",
        "What the best checkpoint maximises over the last stats_avg episodes: reward (their mean "
        "return) or len (their mean length in env steps), as Sample Factory's --save_best_metric.",
        choices=("reward", "len"),
    )
    stats_avg: int = param(100, "Number of most recent episodes averaged in reported returns and lengths.")
    experiment_summaries_interval: int = param(
        20,
        "Seconds between TensorBoard summary writes.",
        low=0,
        high=threading.TIMEOUT_MAX,
        unit="time in seconds",
    )
    with_wandb: bool = param(
        False, "Also log every TensorBoard summary to Weights & Biases (pip install wandb)."
    )
    wandb_user: str = param("", "W&B entity (user or team); empty: your default entity.")
    wandb_project: str = param("surge", "W&B project.")
    wandb_group: str = param("", "W&B group (default: the env name).")
    wandb_job_type: str = param("SF", "W&B job type.")
    wandb_tags: list = param([], "W&B tags.", item_type=str)
    write_report: bool = param(
        True,
        "Write report.md and curves.png (return, episode length, env frames/s, losses, policy lag against "
        "env frames) in the experiment folder at every checkpoint and at the end (docs/report.md).",
    )


@dataclass
class SamplingParams:
    """Rollouts, batches, workers and envs: how experience is collected. (`--help` section "sampling")"""

    zero_rnn_on_done: bool = param(
        True,
        "The recurrent state is reset to 0 when an episode ends, in acting and in learning (False: "
        "it carries over into the next episode, rl_games' zero_rnn_on_done: False).",
    )
    clip_actions: bool = param(
        True,
        "Continuous actions are clipped to the action space's bounds before env.step (with "
        "rescale_actions: to [-1, 1] before rescaling). False: the sampled actions go to the env as they are.",
    )
    rescale_actions: bool = param(
        False,
        "Continuous actions a in [-1, 1] are mapped to the bounds: low + (a + 1) x (high - low) / 2 "
        "(rl_games' rescale_actions; its clip_actions: True is clip_actions=True with "
        "rescale_actions=True). Policy-gradient algorithms (APPO, A2C) only.",
    )
    rollout: int = param(
        32, "Env steps per trajectory collected from each env (agent) before learning.", low=1
    )
    recurrence: int = param(32, "Length of BPTT chunks; rollout must be a multiple of it.", low=1)
    batch_size: int = param(1024, "Minibatch size in samples (agent steps) for one SGD step.", low=1)
    num_batches_per_iteration: int = param(1, "Minibatches collected before training on them.", low=1)
    ppo_epochs: int = param(1, "Passes over each collected batch.")
    num_minibatches_to_accumulate: int = param(
        -1,
        "Max minibatches the learner accumulates before collection pauses (-1: 2 x "
        "num_batches_per_iteration; 0: synchronous, collection halts during training).",
    )
    num_batches_to_accumulate: int | None = param(
        None,
        "Sample Factory 2's spelling of the same limit, in training iterations (batch_size x "
        "num_batches_per_iteration samples each): N means num_minibatches_to_accumulate = N x "
        "num_batches_per_iteration; 0: synchronous. None: use num_minibatches_to_accumulate.",
    )
    num_workers: int = param(
        os.cpu_count() or 1, "Rollout workers (processes in async mode); default: one per CPU.", low=1
    )
    num_envs_per_worker: int = param(
        2, "Envs per rollout worker; must be divisible by worker_num_splits.", low=1
    )
    worker_num_splits: int = param(
        2, "Groups of envs per worker for double-buffered sampling (1: off).", low=1
    )
    batched_sampling: bool = param(
        False,
        "Each env of a worker is a gymnasium vector env of env_agents copies, "
        "stepped as one batch (EnvPool families are always batched).",
    )
    env_agents: int = param(16, "Sub-envs of one batched env (batched_sampling, envpool_ families).")
    num_policies: int = param(
        1, "Policies trained jointly, each with its own learner, weights, checkpoints and summaries.", low=1
    )
    policy_mapping: str = param(
        "random",
        "Which policy acts for an agent, decided at each episode start: random (Sample Factory's "
        "default: a random policy per env, or per agent with pbt_mix_policies_in_one_env), "
        "agent_index (agent i of a multi-agent env -> policy i mod num_policies: one policy per "
        "player), env_index (env k -> policy k mod num_policies, fixed), or a name registered with "
        "surge.sampling.policy_mapping.register_policy_mapping.",
    )
    policy_workers_per_policy: int = param(
        1,
        "Inference worker processes per policy. 0: each rollout worker acts on its splits itself, on "
        "the CPU, with no inference processes and no messages per step (faster for small models, "
        "where a forward pass costs less than the round trip; worker_num_splits then defaults to 1; "
        "see docs/architecture.md).",
    )
    max_policy_lag: int = param(
        100,
        "Samples older than this many policy versions are masked out.",
        low=0,
        why="a negative lag masks every sample, so nothing is learned",
    )
    min_traj_buffers_per_worker: int = param(2, "Trajectory buffers per env per worker.", low=1)
    # a rollout process waits a random time up to it (0: none)
    decorrelate_experience_max_seconds: int = param(
        10,
        "Workers start with a random delay up to this.",
        low=0,
        high=threading.TIMEOUT_MAX,
        unit="time in seconds",
    )
    decorrelate_envs_on_one_worker: bool = param(True, "Envs on one worker start at different steps.")
    set_workers_cpu_affinity: bool = param(True, "Pin rollout workers to CPU cores.")
    force_envs_single_thread: bool = param(True, "Limit envs to one OpenMP/MKL thread (threadpoolctl).")
    # below 1 s every worker would count as stuck in its first reset
    reset_timeout_seconds: int = param(
        120,
        "A worker with no env reset in this time is restarted.",
        low=1,
        high=threading.TIMEOUT_MAX,
        unit="time in seconds",
        example="120",
    )
    heartbeat_timeout_sec: float = param(
        60.0,
        "A rollout or inference worker or the evaluator whose loop shows no sign of life for this "
        "many seconds is hung: it is killed and replaced, as one that crashed. A learner with no "
        "optimizer step, finished batch or checkpoint, or poll of its queues for this long is hung "
        "too: it is killed and the run stops with the final checkpoint of its published weights. "
        "With --distributed=ray, a sampler node whose pull has not returned for this long is killed "
        "for Ray to restart.",
    )
    max_worker_restarts_per_hour: int = param(
        30,
        "Rollout and inference workers replaced after a crash or hang, at most this many in any "
        "one-hour window; one more stops the run as failed (the learners save a final checkpoint).",
    )
    default_niceness: int = param(
        0,
        "Niceness of the learner process; inference and rollout workers run at this + 10 (the "
        "learner wins the CPU; Sample Factory's inference workers are at + 2), rollout workers that "
        "act themselves (--policy_workers_per_policy=0) at 19, the evaluator at + 15 (at least the "
        "rollout workers'), at most 19.",
    )
    train_in_background_thread: bool = param(True, "Train in a background thread of the learner.")
    learner_main_loop_num_cores: int = param(1, "Torch threads of the learner's batching loop.")
    actor_worker_gpus: list = param([], "GPUs the rollout workers may use (rendering).")
    num_torch_threads: int = param(
        1,
        "Torch intra-op threads of the learners, the inference workers and the serial placement's"
        " process (rollout workers use 1); 0: torch's default, one per core (inference workers: 1)."
        " See docs/threads.md.",
    )


@dataclass
class ModelParams:
    """The network: encoder, recurrent core, heads and their initialisation. (`--help` section "model")"""

    encoder_type: str = param("conv", "Encoder of image observations.", ("conv", "resnet", "mlp"))
    encoder_subtype: str = param(
        "convnet_simple",
        "Variant of the encoder.",
        ("convnet_simple", "convnet_deepmind", "convnet_impala", "resnet_impala", "mlp_mujoco", "mlp"),
    )
    encoder_custom: str = param("", "Name of a registered custom encoder (surge.models.register_encoder).")
    encoder_extra_fc_layers: int = param(1, "Fully connected layers after the conv encoder.")
    encoder_mlp_layers: list = param([512, 512], "Hidden sizes of the MLP encoder (encoder_subtype=mlp).")
    hidden_size: int = param(512, "Width of the encoder output and of the RNN core.", low=1)
    nonlinearity: str = param(
        "elu",
        "Activation function of the encoder and MLP layers (torch.nn modules): silu is rl_games' swish; "
        "none is the identity.",
        ("elu", "relu", "tanh", "silu", "gelu", "selu", "softplus", "none"),
    )
    use_rnn: bool = param(True, "Recurrent core (GRU or LSTM) between encoder and heads.")
    rnn_type: str = param("gru", "Type of the recurrent core.", ("gru", "lstm"))
    rnn_num_layers: int = param(1, "Layers of the recurrent core.", low=1)
    policy_initialization: str = param(
        "orthogonal",
        "Weight initialisation of Linear and Conv2d layers (biases start at 0), each scaled by "
        "policy_init_gain: orthogonal (Saxe et al. 2014), xavier_uniform / xavier_normal (Glorot & "
        "Bengio 2010, std gain*sqrt(2/(fan_in+fan_out))), kaiming_normal (He et al. 2015: std "
        "gain*sqrt(2/fan_in)), variance_scaling (normal, std gain/sqrt(fan_in), cut at ±2; "
        "rl_games' variance_scaling_initializer with scale s is gain sqrt(s)), uniform (U(-gain, gain)); "
        "torch_default keeps PyTorch's own, heads included. rl_games' names: docs/models.md.",
        (
            "orthogonal",
            "xavier_uniform",
            "xavier_normal",
            "kaiming_normal",
            "variance_scaling",
            "uniform",
            "torch_default",
        ),
    )
    encoder_initialization: str = param(
        "policy_initialization",
        "Weight initialisation of the encoder: as policy_initialization, or torch_default (PyTorch's "
        "own). Sample Factory 2's conv and MLP encoders are TorchScript modules that its "
        "initialisation skips, so they keep PyTorch's; the Doom family does the same.",
        ("policy_initialization", "torch_default"),
    )
    # gains past ~100 overflow float32 logits and values on the first step: refused, not trained on
    policy_init_gain: float = param(
        1.0, "Gain of the weight initialisation.", low=0, high=100, unit="gain", example="1.0"
    )
    action_head_init_gain: float = param(
        0.01,
        "Gain of the action-logits layer's orthogonal init: 0.01 starts near-uniform (CleanRL, SB3); "
        "Sample Factory uses policy_init_gain (1.0), the Doom family's default.",
        low=0,
        high=100,
        unit="gain",
        example="0.01",
    )
    actor_critic_share_weights: bool = param(
        True,
        "Actor and critic share the encoder and core (Sample Factory's flag). False: the critic has its "
        "own encoder, core and RNN state (rl_games' separate: True); one optimizer trains both.",
    )
    d2rl: bool = param(
        False,
        "D2RL dense connections (Sinha et al. 2020; rl_games' d2rl): every MLP layer after the first "
        "takes [previous layer's output, the MLP's input] concatenated.",
    )
    mu_activation: str = param(
        "none",
        "Gaussian policy: activation applied to the action mean (rl_games' mu_activation); tanh bounds "
        "it to (-1, 1). Refused for other action spaces.",
        ("none", "tanh", "sigmoid", "softplus", "relu", "elu", "selu", "silu", "gelu"),
    )
    rnn_before_mlp: bool = param(
        False,
        "The RNN core runs on the encoder's input features (flattened observation, or conv output) and "
        "the MLP layers after it (rl_games' rnn before_mlp: True); needs use_rnn.",
    )
    rnn_layer_norm: bool = param(
        False, "LayerNorm on the RNN core's output (rl_games' rnn layer_norm: True); needs use_rnn."
    )
    rnn_concat_input: bool = param(
        False,
        "The RNN core reads the MLP encoder's output and its input (the flattened observation) side by "
        "side (rl_games' rnn concat_input: True); needs use_rnn and a vector observation.",
    )
    use_prev_action_reward: bool = param(
        False,
        "The model also reads each env's previous action (one-hot for Discrete, the vector for Box) and "
        "reward (float32, [B, 1]), concatenated to the encoder's output before the core, zero at an "
        "episode's start: rlpyt's (observation, prev_action, prev_reward) agent inputs (its recurrent "
        "Atari model, R2D1). Stored with the observation (and in R2D2's replay); APPO/PPO, A2C and R2D2; docs/models.md.",
    )
    value_size: int = param(
        1,
        "Heads of the value function (rl_games' value_size, multi-head values over vector rewards); "
        "only 1 is supported yet.",
    )
    use_spectral_norm: bool = param(False, "Spectral normalisation of fully connected layers.")
    adaptive_stddev: bool = param(
        True,
        "Gaussian policy: std is an output of the network (else a free parameter, one log-std per "
        "action dimension: rl_games' fixed_sigma: True is adaptive_stddev=False).",
    )
    initial_stddev: float = param(
        1.0,
        "Gaussian policy: initial standard deviation (> 0); rl_games' sigma_init const_initializer "
        "with val v (a log-std) is initial_stddev=exp(v).",
    )
