"""`surge enjoy`: load a trained policy, play episodes, print returns, render or write an mp4.

Flags as Sample Factory 2's enjoy: --max_num_episodes, --max_num_frames, --no_render,
--save_video, --video_frames, --video_name, --fps, --eval_deterministic, --load_checkpoint_kind.
Training-only wrappers are switched off (Atari's episodic life), so returns are whole episodes.
With --eval_env_frameskip (Doom: 1) the env runs at that frameskip and each action repeats
env_frameskip / eval_env_frameskip times, every frame rendered, as Sample Factory's enjoy does;
episode lengths are then in steps of the eval env.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import torch

from surge.cfg.cli import parse_cfg
from surge.cfg.config import Config, enjoy_params, env_frameskip, set_env_frameskip
from surge.envs.registry import find_family, make_env
from surge.errors import ConfigError, SurgeError
from surge.experiment.checkpoint import CheckpointManager
from surge.experiment.folder import ExperimentFolder, setup_logging
from surge.models.actor_critic import make_actor_critic

log = logging.getLogger("surge")


def _obs_tensor(obs_list: list, device: torch.device) -> Any:
    first = obs_list[0]
    if isinstance(first, dict):
        return {k: torch.as_tensor(np.stack([o[k] for o in obs_list]), device=device) for k in first}
    return torch.as_tensor(np.stack(obs_list), device=device)


def _write_video(frames: list[np.ndarray], path: Path, fps: int) -> None:
    import imageio.v2 as imageio

    path.parent.mkdir(parents=True, exist_ok=True)
    with imageio.get_writer(str(path), fps=fps, codec="libx264", macro_block_size=1) as w:
        for f in frames:
            w.append_data(f)
    log.info("Wrote %d frames to %s", len(frames), path)


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


def enjoy(cfg: Config) -> dict[str, Any]:
    """Plays `max_num_episodes` episodes (the enjoy section, `cfg.eval_params`) with the
    experiment's checkpoint.

    Returns:
        {"returns": [per-episode return], "lengths": [env steps], "video": path or None}.
    Raises:
        SurgeError: when the experiment has no loadable checkpoint.
    """
    ev = enjoy_params(cfg)
    folder = ExperimentFolder(cfg)
    cfg.batched_sampling = False
    mode = render_mode(cfg)
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
    device = torch.device("cuda" if cfg.device == "gpu" else "cpu")
    model = make_actor_critic(cfg, env.observation_space, env.action_space).to(device)
    if not 0 <= ev.policy_index < cfg.num_policies:
        raise ConfigError(
            "policy_index",
            f"the experiment trained {cfg.num_policies} polic{'y' if cfg.num_policies == 1 else 'ies'}.",
            f"pass --policy_index between 0 and {cfg.num_policies - 1}.",
        )
    ckpt = CheckpointManager(folder.checkpoints(ev.policy_index))
    state = ckpt.load(ev.load_checkpoint_kind, path=Path(ev.checkpoint_path) if ev.checkpoint_path else None)
    if state is None:
        raise SurgeError(
            f"no {ev.load_checkpoint_kind} checkpoint in {folder.checkpoints(ev.policy_index)}: train first "
            f"(surge train --env={cfg.env} --experiment={cfg.experiment}) or pass --load_checkpoint_kind=latest."
        )
    model.load_state_dict(state["model"])
    model.eval()
    n = env.num_agents
    frameskip = env_frameskip(cfg)
    obs, _ = env.reset(seed=cfg.seed)
    rnn = torch.zeros(n, model.rnn_state_size, device=device)
    frames: list[np.ndarray] = []
    returns: list[float] = []
    lengths: list[int] = []
    ep_ret, ep_len = np.zeros(n), np.zeros(n, dtype=np.int64)
    num_frames = 0
    delay = 1.0 / ev.fps if ev.fps > 0 and not ev.save_video else 0.0
    while len(returns) < ev.max_num_episodes and num_frames < ev.max_num_frames:
        out = model.act(_obs_tensor(obs, device), rnn, deterministic=ev.eval_deterministic)
        actions = out.actions.cpu().numpy()
        if isinstance(env.action_space, gym.spaces.Box):
            actions = np.clip(actions, env.action_space.low, env.action_space.high)
        rnn = out.rnn_states
        for _ in range(action_repeat):  # the policy acts every env_frameskip frames, as in training
            obs, rew, term, trunc, infos = env.step(list(actions))
            num_frames += frameskip
            ep_ret += np.asarray(rew, dtype=np.float64)
            ep_len += 1
            if ev.save_video and len(frames) < ev.video_frames:
                frame = env.render()
                if frame is not None:
                    frames.append(np.asarray(frame))
            elif mode == "human":
                env.render()
            if delay:
                time.sleep(delay)
            if any(term) or any(trunc):
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
                if rnn.shape[-1]:
                    rnn[a] = 0.0
    env.close()
    video = None
    if ev.save_video and frames:
        video = folder.root / (ev.video_name or "replay.mp4")
        _write_video(frames, video, ev.fps or 30)
    if returns:
        log.info("Mean return over %d episodes: %.2f", len(returns), float(np.mean(returns)))
    return {"returns": returns, "lengths": lengths, "video": video}


def main(argv: list[str] | None = None) -> int:
    """Entry point of `surge enjoy` / `python -m surge.enjoy`."""
    cfg = parse_cfg(argv, evaluation=True)
    setup_logging()
    result = enjoy(cfg)
    print(f"returns: {[round(r, 2) for r in result['returns']]}")
    if result["returns"]:
        print(f"mean return: {np.mean(result['returns']):.2f}")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ConfigError, SurgeError) as e:
        print(f"surge enjoy: error: {e}", file=sys.stderr)
        sys.exit(2)
