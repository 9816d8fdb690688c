"""The typed configuration of a surge run: one field per command-line flag.

Field names, defaults and meanings follow Sample Factory v1 (`appo.py`, seed 004) where it has the
parameter, so its command lines run unchanged. Env families add their own fields (for example
`env_frameskip`) as their own typed section, `cfg.env_params`, and override defaults through the
registry (`surge.envs.registry`); the flags of `surge enjoy` are the section `cfg.eval_params`. The
CLI (`surge.cfg.cli`) is generated from these fields, one flat `--flag` each, and cfg.json is flat.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import os
import threading
from dataclasses import dataclass, field
from typing import Any, TypeVar

from surge.cfg.ranges import Range
from surge.errors import ConfigError


def param(
    default: Any,
    help: str,
    choices: tuple | None = None,
    item_type: type = int,
    *,
    low: float | None = None,
    high: float | None = None,
    why: str = "",
    unit: str = "",
    example: str = "",
) -> Any:
    """A config field with its one-line help text, optional allowed values and, for lists, the
    type of their items (`--flag 1 2 3`). `low` (with `high`, `why`, `unit`, `example`) declares the
    field's range, whose check and message are generated (`surge.cfg.ranges.Range`): an `int`
    default with `low` alone is a count (an integer >= low)."""
    meta: dict[str, Any] = {"help": help, "item_type": item_type}
    if choices is not None:
        meta["choices"] = choices
    if low is not None:
        count = isinstance(default, int) and not isinstance(default, bool) and high is None and not why
        meta["range"] = Range(low, high, count, why, unit, example)
    if isinstance(default, (list, dict)):
        return field(default_factory=functools.partial(copy.copy, default), metadata=meta)
    return field(default=default, metadata=meta)


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
        "fp16 (CUDA only, with a GradScaler; rl_games' mixed_precision: True). Weights, optimizer "
        "step, V-trace/GAE, targets and what is written to the buffers stay float32 "
        "(docs/mixed_precision.md).",
        ("auto", "none", "bf16", "fp16"),
    )
    seed: int | None = param(None, "Random seed for torch, numpy and the envs (None: random).")
    eval_env_frameskip: int | None = param(
        None,
        "Frameskip of the env `surge enjoy` plays (None: env_frameskip). A divisor of env_frameskip: "
        "each action then repeats env_frameskip / eval_env_frameskip times and every frame is shown, "
        "so videos play at game speed (Sample Factory's flag; the Doom family sets 1).",
    )
    serial_mode: bool = param(False, "Run envs, inference and learning in one process (debugging, CI).")


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
class OptimParams:
    """The optimiser and the losses. (`--help` section "optimisation")"""

    learning_rate: float = param(1e-4, "Adam learning rate.")
    lr_schedule: str = param(
        "constant",
        "Learning-rate schedule: constant; linear_decay (to 0 at train_for_env_steps); "
        "kl_adaptive_minibatch / kl_adaptive_epoch (APPO only; rl_games' adaptive schedule: "
        "lr / 1.5 when the KL between the behavior and the current policy is above "
        "2 x lr_schedule_kl_threshold, lr x 1.5 when below half of it, within [lr_adaptive_min, "
        "lr_adaptive_max], after every minibatch or every pass over the batch; docs/ppo_options.md).",
        ("constant", "linear_decay", "kl_adaptive_minibatch", "kl_adaptive_epoch"),
    )
    lr_schedule_kl_threshold: float = param(
        0.008, "kl_adaptive_* schedules: the KL target (rl_games' kl_threshold), > 0."
    )
    lr_adaptive_min: float = param(1e-6, "kl_adaptive_* schedules: the lowest learning rate (> 0).")
    lr_adaptive_max: float = param(1e-2, "kl_adaptive_* schedules: the highest learning rate.")
    adam_eps: float = param(1e-6, "Adam epsilon parameter.")
    adam_beta1: float = param(0.9, "Adam momentum decay coefficient.")
    adam_beta2: float = param(0.999, "Adam second momentum decay coefficient.")
    max_grad_norm: float = param(
        4.0,
        "Max L2 norm of the gradient vector (0: no clipping).",
        low=0,
        why="0 turns clipping off; a negative norm would scale every gradient to 0",
    )
    gamma: float = param(0.99, "Discount factor.")
    reward_scale: float = param(1.0, "Rewards are multiplied by this (> 0) before learning.")
    reward_clip: float = param(10.0, "Rewards are clipped to [-reward_clip, reward_clip] after scaling.")
    reward_shift: float = param(
        0.0,
        "Added to every reward before reward_scale (rl_games' reward_shaper shift_value): the learner "
        "trains on clamp((r + reward_shift) x reward_scale, -reward_clip, reward_clip); the reported "
        "episode returns stay the env's.",
    )
    value_bootstrap: bool = param(
        True,
        "A step truncated by a time limit gets gamma x V(s) added to its reward (rl_games' "
        "value_bootstrap); False: truncation is treated as termination. APPO (GAE and V-trace), A2C.",
    )
    gae_lambda: float = param(0.95, "GAE lambda (used only when with_vtrace is False).")
    with_vtrace: bool = param(True, "V-trace off-policy correction (Espeholt et al. 2018); GAE if False.")
    vtrace_rho: float = param(
        1.0, "rho-bar (> 0): truncation of the V-trace importance weights in the targets."
    )
    vtrace_c: float = param(1.0, "c-bar (>= 0): truncation of the V-trace trace-cutting coefficients.")
    ppo_clip_ratio: float = param(
        0.1, "PPO clip epsilon; the ratio is clipped to [1/(1+e), 1+e] (see ppo_clip_lower)."
    )
    ppo_clip_lower: str = param(
        "inverse",
        "APPO: the lower end of the ratio clip. inverse: 1/(1+e) (Sample Factory 2); symmetric: 1-e "
        "(Schulman et al. 2017 eq. 7, rl_games, Stable-Baselines3).",
        ("inverse", "symmetric"),
    )
    ppo_clip_value: float = param(1.0, "Max absolute change of the value estimate before it is clipped.")
    value_loss_coeff: float = param(0.5, "Coefficient of the critic loss.")
    exploration_loss: str = param("entropy", "Exploration loss.", ("entropy", "symmetric_kl"))
    exploration_loss_coeff: float = param(0.003, "Coefficient of the exploration loss.")
    kl_loss_coeff: float = param(
        0.0, "Coefficient of the fixed KL(behavior || target) penalty (Schulman et al. 2017, eq. 8)."
    )
    bounds_loss_coef: float = param(
        0.0,
        "APPO, Gaussian actions: coefficient of rl_games' bounds loss on the action mean (0: off; "
        "see bound_loss_type). Refused for other action spaces.",
    )
    bound_loss_type: str = param(
        "bound",
        "bound: sum over action dims of max(mu - 1.1, 0)^2 + min(mu + 1.1, 0)^2; regularisation: sum "
        "of mu^2 (rl_games' a2c_continuous.py bound_loss / reg_loss), averaged over valid samples.",
        ("bound", "regularisation"),
    )
    normalize_advantage: bool = param(
        True, "Normalise advantages to zero mean and unit std (per minibatch, see normalize_advantage_over)."
    )
    normalize_advantage_over: str = param(
        "minibatch",
        "APPO with GAE: the samples the advantages are normalised over. minibatch: each minibatch's "
        "valid samples (Sample Factory 2); batch: the whole batch's, once before the first epoch "
        "(rl_games' prepare_dataset, Stable-Baselines3 normalises per minibatch). Refused with V-trace "
        "(its advantages are computed per minibatch).",
        ("minibatch", "batch"),
    )
    normalize_input: bool = param(
        False,
        "Normalise observations with running mean and std (vectors per element, images per pixel, Dict per key).",
    )
    obs_normalizer_update: str = param(
        "batch",
        "APPO with normalize_input: when the learner folds observations into the running statistics. "
        "batch: once per batch, before its first minibatch (Sample Factory 2); minibatch: at each "
        "minibatch's forward pass in every epoch, so each sample counts ppo_epochs times (rl_games' "
        "RunningMeanStd in training mode).",
        ("batch", "minibatch"),
    )
    normalize_returns: bool = param(
        False,
        "The critic learns returns normalised by their running mean and std "
        "(rl_games' value normalisation, Sample Factory 2's normalize_returns).",
    )
    obs_subtract_mean: float = param(0.0, "Subtracted from image observations before scaling.")
    obs_scale: float = param(1.0, "Image observations are divided by this (255 for uint8 frames).")


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
        "A rollout or inference worker whose loop shows no sign of life for this many seconds is hung: "
        "it is killed and replaced, as one that crashed. A learner with no optimizer step, finished "
        "batch or checkpoint, or poll of its queues for this long is hung too: it is killed and the "
        "run stops with the final checkpoint of its published weights.",
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
    policy_init_gain: float = param(1.0, "Gain of the weight initialisation.")
    action_head_init_gain: float = param(
        0.01,
        "Gain of the action-logits layer's orthogonal init: 0.01 starts near-uniform (CleanRL, SB3); "
        "Sample Factory uses policy_init_gain (1.0), the Doom family's default.",
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

    benchmark: bool = param(False, "Benchmark mode: no checkpoints or summaries.")
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


#: the sections of `Config`, in `--help` order: (title, dataclass)
SECTIONS: tuple[tuple[str, type], ...] = (
    ("experiment", ExperimentParams),
    ("stopping", StoppingParams),
    ("checkpoints and summaries", CheckpointParams),
    ("optimisation", OptimParams),
    ("sampling", SamplingParams),
    ("model", ModelParams),
    ("central value", CentralValueParams),
    ("PBT", PbtParams),
    ("self-play and policy roles", SelfPlayParams),
    ("debugging and benchmarking", DebugParams),
    ("evaluation during training", TrainEvalParams),
    ("distributed", DistributedParams),
)


@dataclass
class Config(
    TrainEvalParams,
    DistributedParams,
    DebugParams,
    SelfPlayParams,
    PbtParams,
    CentralValueParams,
    ModelParams,
    SamplingParams,
    OptimParams,
    CheckpointParams,
    StoppingParams,
    ExperimentParams,
):
    """Every core parameter of surge, one field per flag, composed of the section dataclasses of
    `SECTIONS` (so `cfg.learning_rate` is typed; `--help` groups the flags by section). Units are in
    the help text: env_steps are `env.step` calls, env_frames are env_steps × frameskip (Sample
    Factory counts frames)."""

    #: the env family's own flags: an instance of its `extra_params` dataclass (`AtariParams` ...),
    #: None when the family adds none; read it typed with `family_params(cfg, AtariParams)`
    env_params: Any = field(default=None, metadata={"section": True})
    #: the flags of `surge enjoy` (None in training)
    eval_params: EvalParams | None = field(default=None, metadata={"section": True})
    #: the algorithm's own flags: an instance of its `Algorithm.params` dataclass, None when it
    #: declares none; read it typed with `algo_params(cfg, MyAlgoParams)`
    algo_params: Any = field(default=None, metadata={"section": True})

    def to_dict(self) -> dict[str, Any]:
        """Every flag as a flat JSON-serialisable dict, one key per flag as on the command line and
        in Sample Factory's cfg.json: the core fields, then the env family's, then enjoy's (a name in
        two sections, such as the Doom family's `fps` and enjoy's, holds one value: the family's)."""
        out = {f.name: copy.deepcopy(getattr(self, f.name)) for f in core_fields()}
        if self.env_params is not None:
            out.update(dataclasses.asdict(self.env_params))
        if self.algo_params is not None:
            for k, v in dataclasses.asdict(self.algo_params).items():
                out.setdefault(k, v)
        if self.eval_params is not None:
            for k, v in dataclasses.asdict(self.eval_params).items():
                out.setdefault(k, v)
        return out

    @classmethod
    def from_flat(
        cls,
        values: dict[str, Any],
        env_params_cls: type | None = None,
        evaluation: bool = False,
        algo_params_cls: type | None = None,
    ) -> Config:
        """The config of a flat dict of flags (`to_dict`, a cfg.json): core fields from their keys,
        `env_params` an `env_params_cls` (the family's `extra_params`), `eval_params` an
        `EvalParams` (when `evaluation`) and `algo_params` an `algo_params_cls` (the algorithm's
        `Algorithm.params`) from theirs; a key in two sections sets both. Keys that
        are no field of any of them are ignored (use `unknown_keys` to refuse them); a missing key
        takes the field's default."""

        def pick(section: type) -> dict[str, Any]:
            return {f.name: values[f.name] for f in dataclasses.fields(section) if f.name in values}

        return cls(
            **{f.name: values[f.name] for f in core_fields() if f.name in values},
            env_params=env_params_cls(**pick(env_params_cls)) if env_params_cls is not None else None,
            eval_params=EvalParams(**pick(EvalParams)) if evaluation else None,
            algo_params=algo_params_cls(**pick(algo_params_cls)) if algo_params_cls is not None else None,
        )


def core_fields() -> tuple[dataclasses.Field, ...]:
    """The fields of `Config` that are flags (not the `env_params` / `eval_params` / `algo_params`
    sections)."""
    return tuple(f for f in dataclasses.fields(Config) if not f.metadata.get("section"))


T = TypeVar("T")


def family_params(cfg: Config, cls: type[T]) -> T:
    """`cfg.env_params`, typed as the family's params dataclass `cls` (`family_params(cfg,
    AtariParams).env_frameskip`). A config made without the section (`Config(env="atari_pong")`)
    gets one with `cls`'s defaults.

    Raises:
        ConfigError: `cfg.env_params` is not a `cls` (the env belongs to another family).
    """
    if cfg.env_params is None:
        cfg.env_params = cls()
    p = cfg.env_params
    if not isinstance(p, cls):
        raise ConfigError(
            "env",
            f"{cfg.env!r} has no {cls.__name__} parameters (its family's are "
            f"{type(p).__name__ if p is not None else 'none'}).",
            f"use an env of the family that defines {cls.__name__}.",
        )
    return p


def algo_params(cfg: Config, cls: type[T]) -> T:
    """`cfg.algo_params`, typed as the algorithm's params dataclass `cls` (`algo_params(cfg,
    DQNParams).buffer_size`), as `family_params` for env families. A config made without the
    section (`Config(algo="DQN")`) gets one with `cls`'s defaults.

    Raises:
        ConfigError: `cfg.algo_params` is not a `cls` (the config is of another algorithm).
    """
    if cfg.algo_params is None:
        cfg.algo_params = cls()
    p = cfg.algo_params
    if not isinstance(p, cls):
        raise ConfigError(
            "algo",
            f"--algo={cfg.algo} has no {cls.__name__} parameters (its section is {type(p).__name__}).",
            f"use the algorithm that defines {cls.__name__}.",
        )
    return p


def enjoy_params(cfg: Config) -> EvalParams:
    """`cfg.eval_params`, the flags of `surge enjoy`.

    Raises:
        ConfigError: `cfg` is a training config (parsed without `evaluation=True`).
    """
    if cfg.eval_params is None:
        raise ConfigError("command line", "this config has no enjoy flags.", "parse it with evaluation=True.")
    return cfg.eval_params


def env_frameskip(cfg: Config) -> int:
    """Frames per env step of this config's env: its family's `env_frameskip` (Atari, EnvPool,
    Doom), 1 for a family without one."""
    return int(getattr(cfg.env_params, "env_frameskip", 1) or 1)


def set_env_frameskip(cfg: Config, frameskip: int) -> None:
    """Sets the family's `env_frameskip` (enjoy plays at `eval_env_frameskip`).

    Raises:
        ConfigError: the env's family has no frameskip.
    """
    if not hasattr(cfg.env_params, "env_frameskip"):
        raise ConfigError("eval_env_frameskip", f"{cfg.env!r} has no frameskip to change.", "leave it unset.")
    cfg.env_params.env_frameskip = frameskip


def minibatches_to_accumulate(cfg: Config) -> int:
    """Minibatches the learner may hold before collection pauses (`num_minibatches_to_accumulate`
    semantics: -1 = 2 x num_batches_per_iteration, 0 = synchronous PPO), whichever of the seed's
    `num_minibatches_to_accumulate` or Sample Factory 2's `num_batches_to_accumulate` (iterations)
    was given; `validate_cfg` refuses the two when they disagree."""
    if cfg.num_batches_to_accumulate is not None:
        return cfg.num_batches_to_accumulate * cfg.num_batches_per_iteration
    return cfg.num_minibatches_to_accumulate
