"""surge's built-in plug-ins, registered by importing this module: every algorithm of
`surge/algorithms/` (`register_algorithm` at each declaration's top) and every env family of
`surge/envs/` (`register_env_family`).

The registries (`surge.learning.algorithm`, `surge.envs.registry`, the models' `register_model`)
import none of their plug-ins: the entry points do, through this module (`surge.app.resolve`,
which every command that resolves a config imports, and `surge.app.reference`). A process that
uses the registries without an entry point (a test, a script) imports this module first.

The child processes of a run rebuild their config from its flat values and look the env's family
and the algorithm up in their own registries, so they need the same registrations: importing this
module adds it to `surge.runtime.child_start.STARTUP_MODULES`, which every child of the async
placement (spawned, forked from the fork server, or a Ray sampler node) imports before its role.
"""

from __future__ import annotations

from surge.algorithms.a2c import declaration as _a2c  # noqa: F401
from surge.algorithms.appo import declaration as _appo  # noqa: F401
from surge.algorithms.ddpg_td3 import ddpg as _ddpg  # noqa: F401
from surge.algorithms.ddpg_td3 import td3 as _td3  # noqa: F401
from surge.algorithms.dqn import declaration as _dqn  # noqa: F401
from surge.algorithms.dummy_sampler import declaration as _dummy_sampler  # noqa: F401
from surge.algorithms.r2d2 import declaration as _r2d2  # noqa: F401
from surge.algorithms.sac import declaration as _sac  # noqa: F401
from surge.envs import (  # noqa: F401  (each registers its family when imported)
    atari,
    brax_family,  # imports brax only when an env is made
    classic,
    envpool_dmc,  # EnvPool's dm_control suite tasks
    envpool_family,
    memory,  # the memory_cue task
    mujoco_family,
    occluded_payout,  # the central value test bed
    pettingzoo_family,
    rl_games_test_env,  # rl_games' TestRnnEnv-v0, for its test/*.yaml files
)
from surge.envs.doom import family as _doom  # noqa: F401
from surge.runtime.child_start import import_in_children

import_in_children(__name__)
