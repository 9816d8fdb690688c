"""`surge enjoy`: load a trained policy, play episodes, print returns, render or write an mp4.

Flags as Sample Factory 2's enjoy: --max_num_episodes, --max_num_frames, --no_render,
--save_video, --video_frames, --video_name, --fps, --eval_deterministic, --load_checkpoint_kind.
Training-only wrappers are switched off (Atari's episodic life), so returns are whole episodes.
With --eval_env_frameskip (Doom: 1) the env runs at that frameskip and each action repeats
env_frameskip / eval_env_frameskip times, every frame rendered, as Sample Factory's enjoy does;
episode lengths are then in steps of the eval env.

When it stops: after --max_num_episodes episodes or --max_num_frames env frames. Without
--max_num_episodes, a window plays until it is closed (Sample Factory's 10⁹ episodes), and with no
window (--no_render, --save_video, or no display) enjoy stops after `HEADLESS_EPISODES` (10) and
says so. Ctrl+C or SIGTERM stops it too: the finished episodes are summed up and the exit status
is 128 + the signal's number, 130 for Ctrl+C (`EXIT_INTERRUPTED`) and 143 for SIGTERM, what a shell
reports for a program ended by that signal and the rule `surge train` follows
(`surge.runtime.stop_signals`), so a script can tell an interrupted evaluation from a complete one.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from surge.app.resolve import parse_cfg
from surge.cfg.config import Config, enjoy_params, env_frameskip, set_env_frameskip
from surge.envs.action_masks import MASK_KEY, is_legal
from surge.envs.registry import env_notes, find_family, make_env
from surge.errors import ConfigError, SurgeError
from surge.evaluation.video import EpisodeVideo
from surge.learning.algorithm import ActContext, acting_state_size, get_algorithm
from surge.learning.central_value import actor_obs
from surge.runtime.checkpoint import CheckpointManager
from surge.runtime.checkpoint_fit import CheckpointMismatch, check_fits
from surge.runtime.components import torch_device
from surge.runtime.experiment_folder import ExperimentFolder, setup_logging
from surge.runtime.stop_signals import STOP_SIGNALS, StopRequests
from surge.sampling.env_actions import BoxActionMap

log = logging.getLogger("surge")

#: episodes played without a window when --max_num_episodes is not given: the number Sample
#: Factory's docs pass for evaluations and videos (--max_num_episodes=10)
HEADLESS_EPISODES = 10
#: ... and with a window: Sample Factory's default, until the person closes it
WINDOW_EPISODES = int(1e9)
#: exit status of `surge enjoy` stopped by Ctrl+C (128 + SIGINT)
EXIT_INTERRUPTED = 130


def _obs_tensor(obs_list: list, device: torch.device) -> Any:
    first = obs_list[0]
    if isinstance(first, dict):
        return {k: torch.as_tensor(np.stack([o[k] for o in obs_list]), device=device) for k in first}
    return torch.as_tensor(np.stack(obs_list), device=device)


def _illegal_actions(obs_list: list, actions: np.ndarray, active: list[bool], space: gym.Space) -> int:
    """How many acting agents' `actions` their observation's `action_mask` forbids (0 without masks)."""
    if not isinstance(obs_list[0], dict) or MASK_KEY not in obs_list[0]:
        return 0
    count = 0
    for o, a, act in zip(obs_list, actions, active, strict=True):
        if act and not is_legal(space, o[MASK_KEY], a):
            count += 1
    return count


def render_mode(cfg: Config) -> str | None:
    """The render mode enjoy makes its env with: "rgb_array" with --save_video, None with
    --no_render, else "human" (a window), unless Linux has no display (neither DISPLAY nor
    WAYLAND_DISPLAY set): then None, with a warning naming the flags."""
    ev = enjoy_params(cfg)
    if ev.save_video:
        return "rgb_array"
    if ev.no_render:
        return None
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        log.warning(
            "No display (DISPLAY and WAYLAND_DISPLAY are unset): playing without rendering. "
            "Pass --no_render to silence this, or --save_video to record an mp4 instead."
        )
        return None
    return "human"


def check_enjoy_params(cfg: Config) -> None:
    """Refuses enjoy flags that would make it play nothing.

    Raises:
        ConfigError: --max_num_episodes or --max_num_frames below 1.
    """
    ev = enjoy_params(cfg)
    if ev.max_num_episodes is not None and ev.max_num_episodes < 1:
        raise ConfigError(
            "max_num_episodes",
            f"must be at least 1, got {ev.max_num_episodes}: no episode would be played.",
            f"pass --max_num_episodes=N with N >= 1, or leave it unset ({HEADLESS_EPISODES} episodes "
            "without a window, until the window is closed with one).",
        )
    if ev.max_num_frames < 1:
        raise ConfigError(
            "max_num_frames",
            f"must be at least 1, got {ev.max_num_frames}: no env frame would be played.",
            "pass --max_num_frames=N with N >= 1, or leave it unset (no limit).",
        )


def episode_limit(cfg: Config, mode: str | None) -> int:
    """Episodes to play: --max_num_episodes when given; else, with a window (`mode` "human"),
    `WINDOW_EPISODES` (until the person closes it), and without one (`mode` None or "rgb_array",
    see `render_mode`) `HEADLESS_EPISODES`: nobody can close a window that is not there."""
    given = enjoy_params(cfg).max_num_episodes
    if given is not None:
        return given
    return WINDOW_EPISODES if mode == "human" else HEADLESS_EPISODES


def _no_checkpoint(cfg: Config, folder: ExperimentFolder) -> ConfigError:
    """The error for an experiment with no checkpoint of the kind asked for, with the advice that
    fits: the train command that creates it, what the train dir holds, or the other kind."""
    ev = enjoy_params(cfg)
    train_dir = Path(cfg.train_dir)
    train = f"surge train --env={cfg.env} --experiment={cfg.experiment}"
    if cfg.train_dir != Config.__dataclass_fields__["train_dir"].default:
        train += f" --train_dir={cfg.train_dir}"
    if not folder.root.is_dir():
        names = (
            sorted(p.name for p in train_dir.iterdir() if p.is_dir() and (p / "cfg.json").is_file())
            if train_dir.is_dir()
            else []
        )
        shown = ", ".join(names[:10]) + (f" and {len(names) - 10} more" if len(names) > 10 else "")
        there = (
            f"{train_dir} does not exist"
            if not train_dir.is_dir()
            else f"{train_dir} holds {shown}"
            if names
            else f"{train_dir} holds no experiment"
        )
        return ConfigError(
            "experiment",
            f"no experiment {cfg.experiment!r} to play: looked for its checkpoints in {folder.root}, "
            f"which does not exist ({there}).",
            f"train it first ({train})"
            + (", or pass --experiment=NAME of one that exists" if names else "")
            + ", or pass the --train_dir it was trained in.",
        )
    ckpts = folder.checkpoints(ev.policy_index)
    kind = ev.load_checkpoint_kind
    other = "best" if kind == "latest" else "latest"
    if CheckpointManager(ckpts).latest(other) is not None:
        return ConfigError(
            "load_checkpoint_kind",
            f"experiment {cfg.experiment!r} has no {kind} checkpoint in {ckpts}, but it has a {other} one.",
            f"pass --load_checkpoint_kind={other}.",
        )
    return ConfigError(
        "experiment",
        f"experiment {cfg.experiment!r} has no checkpoint to play in {ckpts} (a run stopped before "
        "its first checkpoint saves none).",
        f"train it ({train}; the same command resumes a stopped run).",
    )


def enjoy(cfg: Config) -> dict[str, Any]:
    """Plays episodes (until `episode_limit` or --max_num_frames; the enjoy section is
    `cfg.eval_params`) with the experiment's checkpoint. Ctrl+C (KeyboardInterrupt) while playing
    ends the play: the result then holds the episodes finished before it.

    Returns:
        {"returns": [per-episode return], "lengths": [env steps], "video": the mp4 written (each
        episode's frames: the first after the reset, one after each step; `surge.evaluation.video`)
        or None (no --save_video, or nothing to write: the previous file is then kept),
        "interrupted": whether Ctrl+C ended the play, "illegal_actions": actions of acting
        agents that their observation's `action_mask` forbade (0 for envs without masks)}.
    Raises:
        ConfigError: an enjoy flag that would play nothing (`check_enjoy_params`), a policy index
            the experiment does not have, or no checkpoint of the kind asked for (the message says
            what exists and how to create it).
        SurgeError: the experiment's checkpoints exist but none loads.
    """
    check_enjoy_params(cfg)
    ev = enjoy_params(cfg)
    folder = ExperimentFolder(cfg)
    if not 0 <= ev.policy_index < cfg.num_policies:
        raise ConfigError(
            "policy_index",
            f"the experiment trained {cfg.num_policies} polic{'y' if cfg.num_policies == 1 else 'ies'}.",
            f"pass --policy_index between 0 and {cfg.num_policies - 1}.",
        )
    ckpt = CheckpointManager(folder.checkpoints(ev.policy_index))
    if not ev.checkpoint_path and ckpt.latest(ev.load_checkpoint_kind) is None:
        raise _no_checkpoint(cfg, folder)  # before the env is made: nothing to play
    cfg.batched_sampling = False
    mode = render_mode(cfg)
    max_episodes = episode_limit(cfg, mode)
    if ev.max_num_episodes is None and mode != "human":
        why = "--save_video" if ev.save_video else "--no_render" if ev.no_render else "no display"
        log.info(
            "No window (%s): stopping after %d episodes; pass --max_num_episodes=N for more.",
            why,
            max_episodes,
        )
    family = find_family(cfg.env)
    env_name = family.eval_env_name(cfg.env) if family.eval_env_name else cfg.env
    if env_name != cfg.env:
        log.info("Playing %s on %s (same observations, one env that renders)", cfg.env, env_name)
        twin = find_family(env_name).extra_params  # its family reads its own section: carry the flags over
        if twin is not None and cfg.env_params is not None:
            shared = {f.name for f in dataclasses.fields(twin)} & {
                f.name for f in dataclasses.fields(cfg.env_params)
            }
            cfg.env_params = twin(**{n: getattr(cfg.env_params, n) for n in shared})
    if hasattr(cfg.env_params, "atari_episodic_life"):  # a lost life would end the episode
        cfg.env_params.atari_episodic_life = False
    action_repeat = 1
    if cfg.eval_env_frameskip is not None and hasattr(cfg.env_params, "env_frameskip"):
        action_repeat = env_frameskip(cfg) // cfg.eval_env_frameskip  # validate_cfg: a divisor
        set_env_frameskip(cfg, cfg.eval_env_frameskip)
    env = make_env(cfg, render_mode=mode, env_name=env_name)
    device = torch_device(cfg)
    algo = get_algorithm(cfg.algo)
    # the acting module only: enjoy needs no critic, target network or optimizer
    model = algo.make_model(cfg, env.observation_space, env.action_space).acting.to(device)
    act = algo.evaluation_act
    ctx = ActContext(deterministic=ev.eval_deterministic)
    state = ckpt.load(ev.load_checkpoint_kind, path=Path(ev.checkpoint_path) if ev.checkpoint_path else None)
    if state is None:
        env.close()
        what = ev.checkpoint_path or f"any {ev.load_checkpoint_kind} checkpoint in {ckpt.folder}"
        raise SurgeError(f"could not load {what} (the warnings above say why).")
    try:
        check_fits(
            model,
            state["model"],
            f"the checkpoint {ev.checkpoint_path or ckpt.latest(ev.load_checkpoint_kind)} (model)",
        )
    except CheckpointMismatch:
        env.close()
        raise
    model.load_state_dict(state["model"])
    model.eval()
    n = env.num_agents
    frameskip = env_frameskip(cfg)
    obs, _ = env.reset(seed=cfg.seed)
    rnn = torch.zeros(n, acting_state_size(model), device=device)
    space = env.action_space
    box_map = (
        BoxActionMap(space.low, space.high, cfg.clip_actions, cfg.rescale_actions)
        if isinstance(space, gym.spaces.Box)
        else None
    )
    video = EpisodeVideo(env, ev.video_frames) if ev.save_video else None
    if video is not None:
        video.start()
    returns: list[float] = []
    lengths: list[int] = []
    ep_ret, ep_len = np.zeros(n), np.zeros(n, dtype=np.int64)
    num_frames = 0
    illegal = 0  # actions an acting agent took against its observation's action mask
    active = [True] * n  # who acts at this step (an AEC env's other agents are inactive)
    delay = 1.0 / ev.fps if ev.fps > 0 and not ev.save_video else 0.0
    interrupted = False
    try:
        while len(returns) < max_episodes and num_frames < ev.max_num_frames:
            with torch.no_grad():
                obs_t = _obs_tensor(obs, device)
                if cfg.central_value:  # the actor never sees the central value's state
                    obs_t = actor_obs(obs_t, cfg.central_value_state_key)
                out = act(model, obs_t, rnn, ctx)
            actions = out["actions"].cpu().numpy()
            illegal += _illegal_actions(obs, actions, active, env.action_space)
            if box_map is not None:  # as the rollout workers do (surge.sampling.env_actions)
                actions = box_map(actions.reshape(len(actions), -1)).reshape(actions.shape)
            rnn = out["rnn_states"]
            for _ in range(action_repeat):  # the policy acts every env_frameskip frames, as in training
                if video is not None:
                    video.before_step()
                obs, rew, term, trunc, infos = env.step(list(actions))
                active = [info.get("is_active", True) is not False for info in infos]
                num_frames += frameskip
                ep_ret += np.asarray(rew, dtype=np.float64)
                ep_len += 1
                done = any(term) or any(trunc)
                if video is not None:
                    video.after_step(infos, done)
                elif mode == "human":
                    env.render()
                if delay:
                    time.sleep(delay)
                if done:
                    break
            for a in range(n):
                if term[a] or trunc[a]:
                    ep = infos[a].get("episode")
                    r = float(np.asarray(ep["r"])) if ep is not None else float(ep_ret[a])
                    length = int(np.asarray(ep["l"])) if ep is not None else int(ep_len[a])
                    returns.append(r)
                    lengths.append(length)
                    log.info("Episode %d: return %.2f, length %d env steps", len(returns), r, length)
                    ep_ret[a], ep_len[a] = 0.0, 0
                    if rnn.shape[-1] and cfg.zero_rnn_on_done:
                        rnn[a] = 0.0
    except KeyboardInterrupt:  # Ctrl+C: the episodes finished so far are the result
        interrupted = True
        log.info("Interrupted after %d finished episode(s)", len(returns))
    finally:
        env.close()
    written = None
    if video is not None:  # after a Ctrl+C, the finished episodes only (the previous file kept if none)
        written = video.write(folder.root / (ev.video_name or "replay.mp4"), ev.fps or 30, interrupted)
    if illegal:
        log.warning("%d action(s) were illegal under the env's action masks", illegal)
    return {
        "returns": returns,
        "lengths": lengths,
        "video": written,
        "interrupted": interrupted,
        "illegal_actions": illegal,
    }


def main(argv: list[str] | None = None) -> int:
    """Entry point of `surge enjoy` / `python -m surge.enjoy`: prints the returns and their mean
    (once) to stdout. Returns the exit status: 0, or 128 + the signal's number after Ctrl+C
    (`EXIT_INTERRUPTED`, 130) or SIGTERM (143).

    Raises:
        ConfigError, SurgeError: see `parse_cfg` and `enjoy` (the command prints them, exit 2).
    """
    stops = StopRequests()

    def on_signal(signum: int, frame: Any) -> None:
        # SIGTERM as Ctrl+C; a repeat within SAME_STOP_SEC (GNU timeout signals twice) is the same stop
        if stops.note(signum) != "same":
            raise KeyboardInterrupt

    old = {s: signal.signal(s, on_signal) for s in STOP_SIGNALS}
    try:
        try:
            cfg = parse_cfg(argv, evaluation=True)
            setup_logging()
            for note in env_notes(cfg):
                log.info(note)
            result = enjoy(cfg)
        except KeyboardInterrupt:  # outside the play (loading, writing the video): nothing to sum up
            print(f"surge enjoy: interrupted ({_signal_name(stops.first_signal)})", file=sys.stderr)
            return stops.exit_status() or EXIT_INTERRUPTED
        returns = result["returns"]
        if result["interrupted"]:
            print(f"interrupted ({_signal_name(stops.first_signal)}): {len(returns)} episode(s) finished")
        print(f"returns: {[round(r, 2) for r in returns]}")
        if returns:
            print(f"mean return: {np.mean(returns):.2f} over {len(returns)} episode(s)")
        return (stops.exit_status() or EXIT_INTERRUPTED) if result["interrupted"] else 0
    finally:
        for s, h in old.items():
            signal.signal(s, h)


def _signal_name(signum: int | None) -> str:
    return "SIGTERM" if signum == signal.SIGTERM else "Ctrl+C"


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ConfigError, SurgeError) as e:
        print(f"surge enjoy: error: {e}", file=sys.stderr)
        sys.exit(2)
