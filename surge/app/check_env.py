"""`check_env`: finds, in plain words, what keeps a user's env from running in surge.

It checks the gymnasium single-agent API (`reset -> (obs, info)`, `step -> (obs, reward,
terminated, truncated, info)`) and surge's multi-agent contract (`surge.envs.multi_agent`), the
spaces surge's models support, and the observations, rewards and flags the env really returns
over a short run of random actions. For single-agent `gymnasium.Env`s it then runs gymnasium's own
checker (`gymnasium.utils.env_checker`); its failures become `EnvError`s, and its seeding and
determinism findings become warnings (surge does not need them to train).

Command line: `surge check-env --env=NAME [--num_steps=50] [--FIELD=VALUE ...]`, or
`python -m surge.app.check_env ...` (see `main`). The spaces are checked in
`surge.envs.check_spaces` (and, as `surge train` refuses them, `surge.runtime.env_checks`), the
reset and steps in `surge.envs.check_steps`. It resolves a config with the run's flags, so it sits
in the composition root and loads the built-in env families (`surge.app.builtins`).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium.wrappers import RecordEpisodeStatistics

import surge.app.builtins  # noqa: F401  (the env families it checks by name)
from surge.app.space_defaults import env_space_defaults
from surge.cfg.cli import refuse_unknown_args, version_text
from surge.cfg.config import Config
from surge.cfg.space_defaults import as_overrides
from surge.envs.action_masks import MASK_KEY, has_action_mask
from surge.envs.check_findings import Findings, clean_gymnasium_text
from surge.envs.check_steps import check_multi_agent, check_single_agent
from surge.envs.multi_agent import SingleAgentAsMultiAgent, is_multi_agent_env
from surge.envs.registry import check_env_name, find_family, make_single_env
from surge.errors import EnvError, SurgeError
from surge.learning.run_flags import algo_section, build_parser, field_defaults, flag_fields
from surge.runtime.env_checks import check_env_spaces

__all__ = ["check_env", "config_for_env", "main"]


# --------------------------------------------------------------------------------------------- entry point


def check_env(
    env_or_name: Any, cfg: Config | None = None, num_steps: int = 50, notes: list[str] | None = None
) -> list[str]:
    """Checks that an env can run in surge; raises at the first problem, returns the warnings.

    The env is reset and stepped with random actions (`action_space.sample()`), so reset it again
    before any further use. An env made here from a name is closed at the end.

    Args:
        env_or_name: a `gymnasium.Env`, a multi-agent env (`num_agents`, list-valued `reset`/`step`,
            see `surge.envs.multi_agent`), or an env name (`atari_breakout`, `CartPole-v1`), made
            with the family factory of `surge.envs.registry`.
        cfg: config used to make a named env and for model-related hints (`obs_scale`,
            `encoder_custom`); None: `config_for_env(name)` for a name, no hints for an env object.
        num_steps: random steps taken (env steps; episodes that end are reset and go on); legal
            ones under the observations' action masks (`surge.envs.action_masks`).
        notes: if given, receives what the check learned about the env that is not a problem
            (a PettingZoo env's API and agents, its action masks and how many actions they allow).

    Returns:
        Warnings: things that train but look unintended, one sentence per distinct problem (one
        seen at several steps says how often and where first; gymnasium's warnings of a problem
        already named are left out).

    Raises:
        EnvError: the env breaks the API or returns data that does not match its spaces; the
            message says what is wrong and how to fix it.
        ConfigError: `env_or_name` is a name that no family and no gymnasium id knows.
    """
    found = Findings()
    owned = isinstance(env_or_name, str)
    if owned:
        env, cfg = _make_named_env(env_or_name, cfg)
    else:
        env = env_or_name
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            legal_counts: list[int] = []
            _check_any(env, owned, cfg, num_steps, found, legal_counts)
            if notes is not None:
                notes.extend(_env_notes(env, legal_counts))
    finally:
        if owned:
            try:
                env.close()
            except Exception:  # noqa: BLE001 - closing must not hide the check's result
                pass
    for w in caught:
        text = clean_gymnasium_text(str(w.message))
        # gymnasium warns when it is given a wrapped env; surge's envs are wrapped on purpose.
        if "different from the unwrapped version" not in text and not found.already_named(text):
            found.append(f"{w.category.__name__}: {text}")
    return found.lines()


def _check_any(
    env: Any, owned: bool, cfg: Config | None, num_steps: int, found: Findings, legal_counts: list[int]
) -> None:
    if isinstance(env, SingleAgentAsMultiAgent):
        inner = env.env
        if isinstance(inner, RecordEpisodeStatistics):  # the one the wrapper added, if outermost
            inner = inner.env
        check_single_agent(inner, cfg, num_steps, found)
        check_multi_agent(env, cfg, min(num_steps, 10), found, legal_counts)
    elif owned and isinstance(env, gym.Env) and not is_multi_agent_env(env):
        # surge wraps it so (registry.make_env): check the env, then the wrapped env
        check_single_agent(env, cfg, num_steps, found)
        if cfg is not None:  # what `surge train` with these flags refuses, refused here too
            check_env_spaces(cfg, env.observation_space, env.action_space, memory=False)
        check_multi_agent(SingleAgentAsMultiAgent(env), cfg, min(num_steps, 10), found, legal_counts)
    elif is_multi_agent_env(env):
        check_multi_agent(env, cfg, num_steps, found, legal_counts)
    else:
        check_single_agent(env, cfg, num_steps, found)


def config_for_env(env_name: str, argv: list[str] | None = None) -> Config:
    """The config training would start from for `env_name`: `Config` with the family's section
    (`cfg.env_params`), the family's default overrides (or, for a plain gymnasium id, the defaults
    its spaces choose: `surge.cfg.space_defaults`) applied, then the `--name=value` flags of `argv`.

    Raises:
        ConfigError: unknown env name, unknown flag or a value of the wrong type.
        EnvError: a plain gymnasium id that cannot be made (e.g. a missing package).
    """
    family = check_env_name(env_name)
    defaults = field_defaults(family)
    algo = defaults["algo"]  # the default algorithm's section's flags (APPO's PPO flags) are taken too
    explicit = {}
    if argv:  # first for the flags the spaces' defaults depend on (env_wrappers, use_rnn, rollout)
        parser = build_parser(flag_fields(family, algo=algo), defaults, prog="surge check-env")
        explicit = vars(parser.parse_known_args(argv)[0])
    defaults = field_defaults(
        family, space_overrides=as_overrides(env_space_defaults(family, env_name, explicit))
    )
    defaults["env"] = env_name
    if argv:
        parser = build_parser(flag_fields(family, algo=algo), defaults, prog="surge check-env")
        namespace, unknown = parser.parse_known_args(argv)
        refuse_unknown_args(unknown, set(defaults))
        explicit = vars(namespace)
    return Config.from_flat({**defaults, **explicit}, family.extra_params, algo_params_cls=algo_section(algo))


def _make_named_env(env_name: str, cfg: Config | None) -> tuple[Any, Config]:
    if cfg is None:
        cfg = config_for_env(env_name)
    family = find_family(env_name)  # ConfigError for unknown names
    try:
        # The family's factory (and --env_wrappers), not registry.make_env: the raw env gives clearer
        # messages than the SingleAgentAsMultiAgent wrapper that make_env adds (checked too, after).
        env = make_single_env(family, env_name, cfg, None)
    except SurgeError:
        raise
    except Exception as e:
        raise EnvError(f"making env {env_name!r} failed: {type(e).__name__}: {e}") from e
    return env, cfg


def _env_notes(env: Any, legal_counts: list[int]) -> list[str]:
    """What `surge check-env` reports of an env besides problems: its PettingZoo API and agents,
    and its action masks with the legal actions per acting agent step seen (`legal_counts`)."""
    # pettingzoo's adapter only for a PettingZoo env
    from surge.envs.pettingzoo_family import PettingZooAsMultiAgent

    out = []
    if isinstance(env, PettingZooAsMultiAgent):
        api = "Parallel" if env.parallel else "AEC (turn-based: only the agent to move is active)"
        out.append(f"PettingZoo {api} env with {env.num_agents} agent slot(s): {', '.join(env.agents)}.")
    space = env.observation_space
    if has_action_mask(space):
        width = (space.spaces[MASK_KEY].shape or (0,))[0]  # a Box: its shape is a tuple
        seen = legal_counts
        legal = (
            f"; legal actions per acting agent step: min {min(seen)}, mean {np.mean(seen):.1f}, max {max(seen)}"
            if seen
            else ""
        )
        out.append(
            f"action masks: observation['action_mask'], {width} entries for {env.action_space} "
            f"(stripped from the encoder's input, applied to the policy's logits){legal}."
        )
    return out


# --------------------------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    """`surge check-env --env=NAME [--num_steps=N] [--FIELD=VALUE ...]`: makes and checks an env.

    FIELD is any config field of the env (`--env_frameskip=4`, `--atari_episodic_life=False`).
    Prints `OK ...` (with the number of warnings) and each distinct warning once, with how often
    it was seen, to stdout (exit code 0): problems that training tolerates. Prints `ERROR: <what is
    wrong>` to stderr (exit code 1) for the first problem that breaks training.

    Returns:
        The exit code: 0 when the env passes, 1 otherwise.
    """
    parser = argparse.ArgumentParser(
        prog="surge check-env", description="Check that an env follows the API surge needs."
    )
    parser.add_argument("--env", required=True, help="Env name (atari_breakout, cartpole, a gymnasium id).")
    parser.add_argument("--num_steps", type=int, default=50, help="Random steps to take (default 50).")
    if "--version" in (argv if argv is not None else sys.argv[1:]):
        print(version_text())
        return 0
    args, rest = parser.parse_known_args(argv)
    try:
        cfg = config_for_env(args.env, rest)
        notes: list[str] = []
        found = check_env(args.env, cfg=cfg, num_steps=args.num_steps, notes=notes)
    except SurgeError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 1
    counted = f", with {len(found)} warning(s) below" if found else ""
    print(f"OK: env {args.env!r} passed the checks ({args.num_steps} random steps){counted}.")
    for note in notes:
        print(f"note: {note}")
    for w in found:
        print(f"warning: {w}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
