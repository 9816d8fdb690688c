"""The learner hierarchy is at most two levels deep (issue 56, item 3): every learner class in
`surge` derives from `LearnerBase` directly or through one small base (`ReplayLearnerBase`); what
several learners share is composed (functions such as `qpg_minibatch`), not inherited. DDPG's
learner is TD3's with its options off."""

from surge.algorithms.ddpg_td3.learner import TD3Learner, ddpg_learner
from surge.algorithms.ddpg_td3.params import DeterministicPGParams, TD3Params
from surge.learning.algorithm import algorithm_names
from surge.learning.base import LearnerBase


def _subclasses(cls: type) -> list[type]:
    out = []
    for sub in cls.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


def test_every_surge_learner_is_at_most_two_levels_below_the_base():
    algorithm_names()  # loads every built-in algorithm
    learners = [c for c in _subclasses(LearnerBase) if c.__module__.startswith("surge.")]
    assert len(learners) >= 6  # APPO, A2C, DQN, R2D2, TD3 (and DDPG), SAC, the replay base
    depth = {c.__qualname__: c.__mro__.index(LearnerBase) for c in learners}
    assert max(depth.values()) <= 2, depth


def test_ddpg_is_td3_with_its_options_off():
    assert ddpg_learner.__annotations__["return"] in ("TD3Learner", TD3Learner)
    assert DeterministicPGParams().td3_options() == (False, 1, 0.0, 0.0)
    p = TD3Params()
    assert p.td3_options() == (True, p.policy_delay, p.target_policy_noise, p.target_noise_clip)
