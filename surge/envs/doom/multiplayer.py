"""Several learning agents in one Doom match: one VizDoom game per agent, joined over UDP.

Agent 0's game hosts the match (`-host N -port P -deathmatch`), agents 1..N-1 join
`127.0.0.1:P`; the host adds the scenario's bots at every reset. The engines advance in
lock-step over the network, and `DoomGame.make_action` holds the GIL while it waits for the other
players, so two games in one Python process deadlock (measured: threads hang on the first step,
processes run). Each agent's game therefore runs in its own child process (spawned, tied to its
parent with PR_SET_PDEATHSIG), driven over a pipe: a step sends every agent its action, then
collects every result. Inside a step the players advance one tic at a time and meet at a shared
barrier after each tic (`DoomGameEnv.tic_barrier`): with `make_action(a, frameskip)` the joined
player waits for the host's next tic and the match deadlocks (measured; Sample Factory steps tic by
tic for the same reason).

The port comes from the OS (bind to port 0, then release it), so concurrent runs and tests do not
collide; if the match still fails to start (the port was taken in between, a slow start), it is
torn down and started again on a new port, up to 3 times.

Follows surge's multi-agent contract (`surge.envs.multi_agent`). A match ends for everyone at
once (time limit); then every agent is reset (auto-reset) and its episode statistics reported.
"""

from __future__ import annotations

import faulthandler
import multiprocessing as mp
import multiprocessing.connection as mp_connection
import os
import time
import traceback
from collections.abc import Callable
from typing import Any, cast

from surge.child_guard import STACK_SIGNAL, die_with_parent
from surge.envs.doom.game import DoomGameEnv, NetGame, free_udp_port
from surge.errors import EnvError

#: one player's env from its `NetGame` (player id, port), made inside that player's process
PlayerFactory = Callable[[NetGame], Any]

START_TIMEOUT_S = 30.0  # x START_ATTEMPTS stays under a rollout worker's reset_timeout_seconds (120)
# longer than a player's wait at the tic barrier (game.TIC_BARRIER_TIMEOUT_S), and with the reset
# that ends a match (START_TIMEOUT_S) under a rollout worker's --heartbeat_timeout_sec (60 by
# default): a stuck match is then an env fault, rebuilt alone, not a hung worker replaced with all
# its envs and partial rollouts (a 2M-frame doom_duel run had a match stop answering every few
# minutes, and each hang cost 60 s and a worker restart of the hourly budget)
STEP_TIMEOUT_S = 20.0
START_ATTEMPTS = 3
FAILED_CLOSE_TIMEOUT_S = 1.0  # a failed match's players get this long to exit before they are killed


def _player_main(conn: Any, make_player: PlayerFactory, net: NetGame, tic_barrier: Any) -> None:
    """Child process: makes one player's env and serves reset / step / set_reward_shaping / close."""
    die_with_parent()
    faulthandler.register(STACK_SIGNAL, all_threads=True)  # to stderr, when its match stops answering
    env = None
    try:
        env = make_player(net)
        cast(DoomGameEnv, env.unwrapped).tic_barrier = tic_barrier
        while True:
            cmd, arg = conn.recv()
            if cmd == "step":
                conn.send(("ok", env.step(arg)))
            elif cmd == "reset":
                conn.send(("ok", env.reset(seed=arg)))
            elif cmd == "shaping":
                env.get_wrapper_attr("set_reward_shaping")(arg)
                conn.send(("ok", None))
            elif cmd == "default_shaping":
                conn.send(("ok", env.get_wrapper_attr("get_default_reward_shaping")()))
            elif cmd == "close":
                break
    except (EOFError, KeyboardInterrupt):
        pass
    except BaseException:
        tic_barrier.abort()  # the other players stop waiting for this one at once
        try:
            conn.send(("error", traceback.format_exc()))
        except Exception:
            pass
    finally:
        if env is not None:
            env.close()
        conn.close()


def _dump_stacks(procs: list) -> None:
    """Asks each live player process for its Python stack (`_player_main` registers faulthandler
    on `STACK_SIGNAL`; it writes to the inherited stderr) and gives them a moment to write it."""
    sent = False
    for proc in procs:
        if proc.is_alive() and proc.pid is not None:
            try:
                os.kill(proc.pid, STACK_SIGNAL)
                sent = True
            except OSError:
                pass
    if sent:
        time.sleep(0.5)


class _Player:
    """Parent side of one player process."""

    def __init__(self, ctx: Any, make_player: PlayerFactory, net: NetGame, tic_barrier: Any):
        self.player_id = net.player_id
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(
            target=_player_main,
            args=(child, make_player, net, tic_barrier),
            name=f"doom-agent{net.player_id}",
            daemon=True,
        )
        self.proc.start()
        child.close()
        self.value: Any = None
        self.error = ""

    def send(self, cmd: str, arg: Any = None) -> None:
        self.conn.send((cmd, arg))

    def answer(self) -> None:
        """Reads the answer that is ready into `value`, or `error`."""
        self.value, self.error = None, ""
        try:
            status, value = self.conn.recv()
        except (EOFError, OSError):
            self.proc.join(1)
            self.error = f"Doom agent {self.player_id} exited (code {self.proc.exitcode})"
            return
        if status == "error":
            self.error = f"Doom agent {self.player_id} failed:\n{value}"
        else:
            self.value = value

    def recv(self, timeout: float) -> Any:
        if not self.conn.poll(timeout):
            raise EnvError(f"Doom agent {self.player_id} did not answer within {timeout:.0f} s")
        self.answer()
        if self.error:
            raise EnvError(self.error)
        return self.value

    def request_close(self) -> None:
        try:
            self.conn.send(("close", None))
        except (OSError, BrokenPipeError):
            pass

    def finish_close(self, timeout: float) -> None:
        """Waits up to `timeout` seconds for the process to exit after `request_close`, then kills
        it (its engine and shared memory go with it: `engine_launcher`)."""
        self.proc.join(timeout=timeout)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join(timeout=5)
        self.conn.close()


class DoomMultiAgentEnv:
    """`num_agents` learning agents in one match (see the module docstring).

    Args:
        make_player: makes one player's env in its process, given the player's `NetGame`; pickled
            to the spawned process, so a module-level function or a `functools.partial` of one
            (the family's `surge.envs.doom.family.player_env`: the family imports this module).
        num_agents: learning agents (players that are not bots).
        net: the match settings (`player_id` and `port` are filled in per player and attempt).
        observation_space, action_space: one agent's spaces.
    """

    is_multiagent = True

    def __init__(
        self,
        make_player: PlayerFactory,
        num_agents: int,
        net: NetGame,
        observation_space: Any,
        action_space: Any,
    ):
        self.num_agents = int(num_agents)
        self.observation_space, self.action_space = observation_space, action_space
        self.render_mode = None
        self._make_player, self._net = make_player, net
        self._ctx = mp.get_context("spawn")
        self._players: list[_Player] | None = None

    def _net_for(self, player_id: int, port: int) -> NetGame:
        n = self._net
        return NetGame(player_id, self.num_agents, port, n.num_bots, n.respawn_delay, n.timelimit_minutes)

    def _all(self, cmd: str, args: list, timeout: float) -> list:
        """Sends `cmd` to every player and returns their answers; on any failure tears the match
        down (a broken barrier and stale answers make it unusable) and raises one EnvError with
        every player's error, the real traceback first."""
        assert self._players is not None
        players = self._players
        try:
            for p, a in zip(players, args, strict=True):
                p.send(cmd, a)
        except OSError as e:
            self._close_players(FAILED_CLOSE_TIMEOUT_S)
            raise EnvError(f"a Doom agent process is gone: {e!r}") from e
        deadline = time.time() + timeout
        pending = {p.conn: p for p in players}
        while pending and time.time() < deadline:
            for conn in mp_connection.wait(list(pending), timeout=max(0.0, deadline - time.time())):
                pending.pop(conn).answer()
        errors = [p.error for p in players if p.error]
        if pending:  # where each silent player is stuck, on stderr (faulthandler), before it goes
            _dump_stacks([p.proc for p in pending.values()])
        errors += [
            f"Doom agent {p.player_id} did not answer within {timeout:.0f} s" for p in pending.values()
        ]
        if errors:
            self._close_players(FAILED_CLOSE_TIMEOUT_S)
            tracebacks = sorted(errors, key=lambda e: "Traceback" not in e)
            raise EnvError("Doom match failed:\n" + "\n".join(tracebacks))
        return [p.value for p in players]

    def _start(self, seed: int | None) -> list:
        errors = []
        for _attempt in range(START_ATTEMPTS):
            port = free_udp_port()
            barrier = self._ctx.Barrier(self.num_agents)
            self._players = []
            try:
                for i in range(self.num_agents):
                    net = self._net_for(i, port)
                    self._players.append(_Player(self._ctx, self._make_player, net, barrier))
                seeds = [None if seed is None else seed + i for i in range(self.num_agents)]
                return self._all("reset", seeds, START_TIMEOUT_S)
            except Exception as e:  # a failed start: tear down, new port
                errors.append(str(e))
                self._close_players()
                time.sleep(0.5)
        raise EnvError(
            f"Doom match of {self.num_agents} agents failed to start {START_ATTEMPTS} times: {errors}"
        )

    def reset(self, seed: int | None = None) -> tuple[list, list[dict]]:
        if self._players is None:
            results = self._start(seed)
        else:
            results = self._all("reset", [None] * self.num_agents, START_TIMEOUT_S)
        return [r[0] for r in results], [r[1] for r in results]

    def step(self, actions) -> tuple[list, list[float], list[bool], list[bool], list[dict]]:
        if self._players is None:
            raise EnvError("reset() the env before step()")
        results = self._all("step", list(actions), STEP_TIMEOUT_S)
        obs = [r[0] for r in results]
        rewards = [float(r[1]) for r in results]
        terminated = [bool(r[2]) for r in results]
        truncated = [bool(r[3]) for r in results]
        infos = [r[4] for r in results]
        if any(terminated) or any(truncated):  # the match is over for everyone
            terminated = [t or not tr for t, tr in zip(terminated, truncated, strict=True)]
            fresh = self._all("reset", [None] * self.num_agents, START_TIMEOUT_S)
            obs = [f[0] for f in fresh]
            infos = [{**f[1], **i} for f, i in zip(fresh, infos, strict=True)]
        return obs, rewards, terminated, truncated, infos

    def set_reward_shaping(self, scheme: dict, agent_idx: int) -> None:
        """Replaces the reward shaping of agent `agent_idx` (see `reward_shaping`).

        Raises:
            EnvError: before the first reset (the agents' games do not exist yet).
        """
        if self._players is None:
            raise EnvError("reset() the env before changing its reward shaping")
        self._players[agent_idx].send("shaping", scheme)
        self._players[agent_idx].recv(STEP_TIMEOUT_S)

    def get_default_reward_shaping(self) -> dict | None:
        if self._players is None:
            return None
        self._players[0].send("default_shaping")
        return self._players[0].recv(STEP_TIMEOUT_S)

    def render(self):
        return None

    def _close_players(self, timeout: float = 10.0) -> None:
        """Asks every player to close, waits up to `timeout` seconds for all of them together,
        then kills the rest. A failed match's players may wait at the tic barrier or be stuck, and
        a rollout worker waits for this without a heartbeat: failures pass a short timeout."""
        players = self._players or []
        for p in players:
            p.request_close()
        deadline = time.time() + timeout
        for p in players:
            p.finish_close(max(0.0, deadline - time.time()))
        self._players = None

    def close(self) -> None:
        self._close_players()

    @property
    def unwrapped(self):
        return self
