"""Gymnasium wrappers that raise in `step`, for the env-fault tests (applied with --env_wrappers)."""

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
            raise RuntimeError("step 5 fails")
        return self.env.step(action)
