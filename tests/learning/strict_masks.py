"""`strict_masks:strict_connect_four` (and `strict_tictactoe`): PettingZoo's connect four through the `pettingzoo_` family,
with a referee that checks every move of the agent to move against the action mask it was shown
(PettingZoo's own rules, independent of surge's sampling code) and appends `legal illegal` counts
to a file in `$SURGE_MASK_LOG` at each game's end, from whichever process plays it."""

import os

from surge.envs.action_masks import is_legal
from surge.envs.classic import VECTOR_OBS_DEFAULTS
from surge.envs.pettingzoo_family import PettingZooAsMultiAgent
from surge.envs.registry import register_env


class Referee:
    def __init__(self, env: PettingZooAsMultiAgent):
        self.env = env
        self.num_agents, self.is_multiagent = env.num_agents, True
        self.observation_space, self.action_space = env.observation_space, env.action_space
        self.render_mode = env.render_mode
        self.legal = self.illegal = 0
        self.obs = None

    def reset(self, seed=None):
        self.obs, infos = self.env.reset(seed=seed)
        return self.obs, infos

    def step(self, actions):
        mover = self.env.agents.index(self.env.env.agent_selection)
        mask = self.env.env.observe(self.env.env.agent_selection)["action_mask"]
        assert (mask == self.obs[mover]["action_mask"]).all()  # what the policy was shown
        if is_legal(self.action_space, mask, actions[mover]):
            self.legal += 1
        else:
            self.illegal += 1
            self._write()  # at once: the illegal move may make the env raise
        self.obs, rew, term, trunc, infos = self.env.step(actions)
        if any(term) or any(trunc):
            self._write()
        return self.obs, rew, term, trunc, infos

    def _write(self):
        folder = os.environ.get("SURGE_MASK_LOG")
        if folder:
            with open(os.path.join(folder, f"{os.getpid()}-{id(self)}.txt"), "a") as f:
                f.write(f"{self.legal} {self.illegal}\n")
        self.legal = self.illegal = 0

    def render(self):
        return self.env.render()

    def close(self):
        self.env.close()


def make_strict(full_env_name, cfg, render_mode=None):
    from pettingzoo.classic import connect_four_v3, tictactoe_v3

    game = connect_four_v3 if full_env_name == "strict_connect_four" else tictactoe_v3
    # TerminateIllegalWrapper left out: an illegal move must reach the referee, not end the game
    kwargs = {"render_mode": render_mode} if render_mode else {}
    return Referee(PettingZooAsMultiAgent(game.raw_env(**kwargs)))


def counts(folder) -> tuple[int, int]:
    """(legal, illegal) moves over every game written to `folder`."""
    legal = illegal = 0
    for path in os.listdir(folder):
        with open(os.path.join(folder, path)) as f:
            for line in f:
                a, b = line.split()
                legal, illegal = legal + int(a), illegal + int(b)
    return legal, illegal


register_env("strict_connect_four", make_strict, default_overrides=VECTOR_OBS_DEFAULTS)
# tic-tac-toe: a random move is illegal as soon as a cell is taken (connect four's only when a column is full)
register_env("strict_tictactoe", make_strict, default_overrides=VECTOR_OBS_DEFAULTS)
