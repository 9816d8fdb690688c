"""Gymnasium wrappers for tests, applied with --env_wrappers: envs that raise in `step` (the env-fault
tests), and fixed-length episodes (the routing tests)."""

import gymnasium as gym


class AlwaysRaises(gym.Wrapper):
    """Every step raises: the env is broken, not flaky."""

    def step(self, action):
        raise RuntimeError("this env always fails")


class RaisesAtStep5(gym.Wrapper):
    """The 5th step after each reset raises (counted per env object)."""

    def reset(self, **kwargs):
        self.steps = 0
        return self.env.reset(**kwargs)

    def step(self, action):
        self.steps += 1
        if self.steps == 5:
            raise RuntimeError("step 5 fails:\n  why, on a line of its own")
        return self.env.step(action)


class EpisodesOf16Steps(gym.Wrapper):
    """Every episode lasts exactly 16 steps (truncated then, never terminated earlier): with
    `--rollout=16` and no decorrelation each trajectory is one whole episode, so one policy's."""

    def reset(self, **kwargs):
        self.steps = 0
        return self.env.reset(**kwargs)

    def step(self, action):
        self.steps += 1
        obs, reward, _, _, info = self.env.step(action)
        return obs, reward, False, self.steps == 16, info
