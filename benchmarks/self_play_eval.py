"""Plays a self-play experiment's policy 0 against an opponent and prints the result table.

    python benchmarks/self_play_eval.py --train_dir=train_dir --experiment=c4_self_play \
        --opponent=uniform --games=200
    python benchmarks/self_play_eval.py --train_dir=train_dir --experiment=c4_self_play \
        --opponent=snapshot:1 --games=200

The player is policy 0's latest checkpoint (or `--player=PATH`, a checkpoint or a pool snapshot);
the opponent is `uniform` (a uniformly random legal move: the mask's legal entries, equally
likely), `snapshot:ID` (the pool's `self_play/snapshot_<ID>.pth`) or a path. Both sample their
actions from their masked policy (`--deterministic` takes the most likely legal one instead). Policy
0 plays first in half of the games and second in the other half. Games are played with the
experiment's own env (the multi-agent contract of `surge.envs.multi_agent`), one at a time; a
move against the acting player's action mask is counted (`illegal`) and the game is then scored by
the env as it would be in training.

Scores: a win is the player's episode return > 0, a loss < 0, a draw 0 (two-player zero-sum games,
as `surge.population.self_play`). Prints one table row and, with `--json`, writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from surge.app.resolve import parse_cfg
from surge.envs.action_masks import MASK_KEY
from surge.envs.registry import make_env
from surge.models.actor_critic import make_actor_critic
from surge.runtime.checkpoint import CheckpointManager
from surge.runtime.experiment_folder import ExperimentFolder


def _obs_tensor(o):
    if isinstance(o, dict):
        return {k: torch.as_tensor(np.asarray(v))[None] for k, v in o.items()}
    return torch.as_tensor(np.asarray(o))[None]


class Player:
    """A model (or the uniform legal player when `model` is None) choosing one agent's moves."""

    def __init__(self, model, deterministic: bool, rng: np.random.Generator):
        self.model, self.deterministic, self.rng = model, deterministic, rng

    @torch.no_grad()
    def act(self, obs) -> int:
        if self.model is None:
            legal = np.flatnonzero(np.asarray(obs[MASK_KEY]))
            return int(self.rng.choice(legal))
        rnn = torch.zeros(1, int(self.model.rnn_state_size))
        out = self.model.act(_obs_tensor(obs), rnn, deterministic=self.deterministic)
        return int(out.actions.reshape(-1)[0])


def load_model(cfg, env, path: Path):
    model = make_actor_critic(cfg, env.observation_space, env.action_space)
    state = torch.load(path, map_location="cpu", weights_only=True)
    model.load_state_dict(state["model"])
    model.eval()
    return model


def play(env, players: list[Player], first: int) -> tuple[float, int]:
    """One game; `players[0]` is policy 0, seated at agent index `first`. Returns policy 0's return
    and the number of illegal moves."""
    seats = [players[0], players[1]] if first == 0 else [players[1], players[0]]
    obs, _ = env.reset()
    illegal = 0
    acting = _acting(env)
    while True:
        actions = [0] * env.num_agents
        a = acting
        actions[a] = seats[a].act(obs[a])
        if isinstance(obs[a], dict) and not np.asarray(obs[a][MASK_KEY])[actions[a]]:
            illegal += 1
        obs, _, _, _, infos = env.step(actions)
        ep = infos[first].get("episode")
        if ep is not None:
            return float(ep["r"]), illegal
        acting = _acting(env)


def _acting(env) -> int:
    """The agent index to move (an AEC env's `agent_selection`; 0 for others)."""
    inner = getattr(env, "env", None)
    selection = getattr(inner, "agent_selection", None)
    return env.agents.index(selection) if selection is not None else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train_dir", required=True)
    ap.add_argument("--experiment", required=True)
    ap.add_argument("--opponent", default="uniform", help="uniform, snapshot:ID or a checkpoint path")
    ap.add_argument("--player", default="", help="checkpoint of policy 0 (default: its latest)")
    ap.add_argument("--games", type=int, default=200)
    ap.add_argument("--deterministic", action="store_true")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", default="", help="also write the result to this file")
    args = ap.parse_args(argv)
    saved = json.loads((Path(args.train_dir) / args.experiment / "cfg.json").read_text())
    cfg = parse_cfg(
        [f"--env={saved['env']}", f"--train_dir={args.train_dir}", f"--experiment={args.experiment}"]
    )
    folder = ExperimentFolder(cfg)
    env = make_env(cfg)
    if env.num_agents != 2:
        raise SystemExit(f"{cfg.env} has {env.num_agents} agents: this script plays two-player games")
    rng = np.random.default_rng(args.seed)
    torch.manual_seed(args.seed)
    player_path = (
        Path(args.player) if args.player else CheckpointManager(folder.checkpoints(0), 1, 0).latest()
    )
    if player_path is None:
        raise SystemExit("policy 0 has no checkpoint")
    me = Player(load_model(cfg, env, player_path), args.deterministic, rng)
    if args.opponent == "uniform":
        other = Player(None, False, rng)
    else:
        if args.opponent.startswith("snapshot:"):
            path = folder.root / "self_play" / f"snapshot_{int(args.opponent.split(':')[1]):04d}.pth"
        else:
            path = Path(args.opponent)
        other = Player(load_model(cfg, env, path), args.deterministic, rng)
    wins = draws = losses = illegal = 0
    for g in range(args.games):
        ret, bad = play(env, [me, other], first=g % 2)
        illegal += bad
        wins += ret > 0
        losses += ret < 0
        draws += ret == 0
    env.close()
    result = {
        "player": str(player_path),
        "opponent": args.opponent,
        "games": args.games,
        "wins": wins,
        "draws": draws,
        "losses": losses,
        "win_rate": wins / args.games,
        "illegal_moves": illegal,
        "deterministic": args.deterministic,
    }
    print("| player | opponent | games | wins | draws | losses | win rate | illegal moves |")
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| {Path(player_path).name} | {args.opponent} | {args.games} | {wins} | {draws} | {losses} | "
        f"{wins / args.games:.1%} | {illegal} |"
    )
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
