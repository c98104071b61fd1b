"""The batched-environment machinery shared by the ports: many mpe2 worlds stepped as arrays.

A port holds the state of ``num_envs`` independent worlds as arrays — agent positions and
velocities ``(num_envs, n_agents, 2)``, landmark positions ``(num_envs, n_landmarks, 2)``, the step
count ``(num_envs,)`` and whatever the scenario adds — and steps them all with a few numpy
operations (no Python loop over environments or entities).

Conventions (the same for every port):

- ``reset()`` → ``obs``; ``step(actions)`` → ``(obs, rewards, terminated, truncated, info)``.
- ``obs`` is float32 ``(num_envs, n_agents, obs_dim)`` with agents in mpe2's ``possible_agents``
  order. Where agents have different observation sizes (simple_tag's adversaries and good agents,
  collect_treasure's collectors and deposits) agent ``i`` fills the first ``obs_dims[i]`` entries
  of its row and the rest is zero padding; ``obs_dim = max(obs_dims)``.
- ``rewards`` is float64 ``(num_envs, n_agents)`` (mpe2 returns Python floats).
- ``terminated``, ``truncated``: bool ``(num_envs,)``. mpe2 always ends all agents of a world
  together, so one flag per environment says it. ``truncated`` is mpe2's
  ``steps >= max_cycles``; ``terminated`` is the scenario's early success end (only with
  ``terminate_on_success=True``), never both.
- Finished environments are reset automatically: the returned ``obs`` is the first observation of
  their next episode, and ``info["final_obs"]`` (same shape as ``obs``) holds the last
  observation of the episode that ended — for bootstrapping a value after a truncation. Rows of
  environments that did not finish equal ``obs`` (with no environment finished it *is* ``obs``).
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from gymnasium import spaces

from ..checks import check_index, check_int, check_seed
from ..costs import check_cost, check_numbers
from .actions import N_MOVES, action_force, check_actions
from .physics import WorldParams, world_step
from .reference import make_reference
from .scenarios import port_kwargs

PORT_PAIR_SECONDS = 5e-8
"""Seconds per world and per pair (agent, entity) that a port takes to step: contact forces and distances
are arrays over every such pair. Measured on a busy 2-core CPU: 0.05 s for 16 worlds of 200 agents and 200
landmarks (4.2e-8), 0.14 s at 300 and 300 (4.7e-8)."""

PORT_PAIR_BYTES = 48
"""Bytes per world and per pair (agent, entity) that a port's step holds at once: a handful of float64 arrays
over the pairs (differences, distances, penetrations, forces). Measured: 35-45 MB for 256 worlds of 50 and 50."""


class BatchedEnv(ABC):
    """Base class of the batched ports: state arrays, stepping, auto-reset, loading mpe2 state."""

    scenario: ClassVar[str]

    def __init__(self, num_envs: int, seed: int = 0, **scenario_kwargs: Any) -> None:
        num_envs = check_int("num_envs", num_envs)  # a Python int: numpy's would overflow in the estimates
        self.kwargs: dict[str, Any] = port_kwargs(self.scenario, **scenario_kwargs)
        reference = make_reference(self.scenario, **self.kwargs)
        world = reference.unwrapped.world
        self.params = WorldParams.from_world(world)
        self.num_envs = int(num_envs)
        self.agents: tuple[str, ...] = tuple(reference.possible_agents)
        self.n_agents = len(self.agents)
        self.n_landmarks = len(world.landmarks)
        pairs = num_envs * self.n_agents * (self.n_agents + self.n_landmarks)
        check_cost(f"{num_envs:,} batched {self.scenario} worlds of {self.n_agents:,} agents and {self.n_landmarks:,} "
                   "landmarks", PORT_PAIR_SECONDS * pairs, PORT_PAIR_BYTES * pairs,
                   basis=f"{pairs:,} (world, agent, entity) pairs at each step, {PORT_PAIR_SECONDS:g} s and "
                         f"{PORT_PAIR_BYTES} bytes each", remedy="use fewer worlds (num_envs) or fewer agents")
        self.observation_spaces: dict[str, spaces.Box] = {a: reference.observation_space(a) for a in self.agents}
        self.action_spaces: dict[str, spaces.Space] = {a: reference.action_space(a) for a in self.agents}
        self.obs_dims: tuple[int, ...] = tuple(self.observation_spaces[a].shape[0] for a in self.agents)
        self.obs_dim = max(self.obs_dims)
        check_numbers(f"the observations of {num_envs:,} {self.scenario} worlds", ("num_envs", num_envs),
                      ("agents", self.n_agents), ("obs_dim", self.obs_dim), hint=" (fewer worlds or agents)")
        self.n_actions = N_MOVES
        self.continuous_actions: bool = self.kwargs["continuous_actions"]
        self.max_cycles: int = self.kwargs["max_cycles"]
        self.rng = np.random.default_rng(check_seed(seed))
        shape = (self.num_envs, self.n_agents, 2)
        self.agent_pos = np.zeros(shape)
        self.agent_vel = np.zeros(shape)
        self.landmark_pos = np.zeros((self.num_envs, self.n_landmarks, 2))
        self.steps = np.zeros(self.num_envs, dtype=np.int64)
        self._configure()
        self.reset()

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.kwargs.items())
        return f"{type(self).__name__}(num_envs={self.num_envs}, {args})"

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Start a new episode in every environment; returns ``obs`` ``(num_envs, n_agents, obs_dim)``."""
        if seed is not None:
            self.rng = np.random.default_rng(check_seed(seed))
        self._reset_envs(np.ones(self.num_envs, dtype=bool))
        return self.observe()

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """Step every environment with ``actions`` — ``(num_envs, n_agents)`` ints (discrete) or
        ``(num_envs, n_agents, 5)`` floats in [0, 1] (continuous) — and reset the finished ones.

        Mirrors one parallel-API step of mpe2 (``SimpleEnv._execute_world_step`` then the step
        count and the ``max_cycles`` truncation of ``SimpleEnv.step``).
        """
        actions = check_actions(actions, (self.num_envs, self.n_agents), self.continuous_actions)
        force = action_force(actions, self.params.sensitivity, self.continuous_actions)
        world_step(self.agent_pos, self.agent_vel, self.landmark_pos, force, self.params)
        rewards = self._rewards_after_physics()
        self.steps += 1
        truncated = self.steps >= self.max_cycles
        terminated = ~truncated & self._success()
        obs = self.observe()
        final_obs = obs
        done = terminated | truncated
        if done.any():
            self._reset_envs(done)
            obs = self.observe()
        return obs, rewards, terminated, truncated, {"final_obs": final_obs}

    def load_state(self, slot: int, reference_env: Any) -> None:
        """Copy the whole state of an mpe2 environment into environment ``slot`` of this port.

        ``reference_env`` is an mpe2 env of the same scenario and arguments (any wrapper; its
        ``unwrapped`` world is read): agent positions and velocities, landmark positions, the step
        count, and the scenario's own state. From then on, the same actions give the same
        observations, rewards and ends in the slot as in ``reference_env`` (the parity tests).
        """
        slot = check_index("slot", slot, self.num_envs, "environment index")
        raw = getattr(reference_env, "unwrapped", None)
        if not hasattr(raw, "world") or not hasattr(raw, "possible_agents"):
            raise ValueError(f"reference_env must be an mpe2 environment (make_reference({self.scenario!r}, ...)); "
                             f"got {type(reference_env).__name__}")
        if tuple(raw.possible_agents) != self.agents or len(raw.world.landmarks) != self.n_landmarks:
            raise ValueError("reference_env has other agents or landmarks than this port")
        if (raw.continuous_actions, raw.max_cycles) != (self.continuous_actions, self.max_cycles):
            raise ValueError("reference_env has another continuous_actions or max_cycles than this port")
        world = raw.world
        self.agent_pos[slot] = [a.state.p_pos for a in world.agents]
        self.agent_vel[slot] = [a.state.p_vel for a in world.agents]
        self.landmark_pos[slot] = [lm.state.p_pos for lm in world.landmarks] if world.landmarks else 0.0
        self.steps[slot] = raw.steps
        self._load_scenario_state(slot, raw)

    def _reset_agents_and_steps(self, done: np.ndarray) -> int:
        """Reset what every ported scenario resets the same way (agents uniform in [-1, 1]², at
        rest; step count 0); returns the number of environments reset."""
        count = int(done.sum())
        self.agent_pos[done] = self.rng.uniform(-1.0, 1.0, (count, self.n_agents, 2))
        self.agent_vel[done] = 0.0
        self.steps[done] = 0
        return count

    @abstractmethod
    def _configure(self) -> None:
        """Set the scenario's constants from ``self.kwargs`` and ``self.params`` (before the first reset)."""

    @abstractmethod
    def _reset_envs(self, done: np.ndarray) -> None:
        """Draw fresh initial states for the environments where ``done`` (num_envs,) is True
        (mirrors the scenario's ``reset_world``, in distribution)."""

    @abstractmethod
    def observe(self) -> np.ndarray:
        """Observations of the current state, float32 ``(num_envs, n_agents, obs_dim)``
        (mirrors the scenario's ``observation``)."""

    @abstractmethod
    def _rewards_after_physics(self) -> np.ndarray:
        """Scenario events after physics, then the rewards ``(num_envs, n_agents)``."""

    def _success(self) -> np.ndarray:
        """The scenario's ``is_terminal`` per environment (bool ``(num_envs,)``); never, by default."""
        return np.zeros(self.num_envs, dtype=bool)

    def _load_scenario_state(self, slot: int, raw_env: Any) -> None:  # noqa: B027 (a hook; most ports need none)
        """Copy scenario state beyond positions, velocities and step count (none by default)."""


def off_diagonal(pairs: np.ndarray) -> np.ndarray:
    """Drop the diagonal of a (E, n, n, ...) pair array: row i keeps columns j ≠ i in order → (E, n, n − 1, ...)."""
    num_envs, n = pairs.shape[:2]
    rest = pairs.shape[3:]
    flat = pairs.reshape(num_envs, n * n, *rest)[:, 1:]
    return flat.reshape(num_envs, n - 1, n + 1, *rest)[:, :, :-1].reshape(num_envs, n, n - 1, *rest)


def put_xy(obs: np.ndarray, start: int, x: np.ndarray, y: np.ndarray) -> None:
    """Write m 2-vectors, given as x and y planes (E, n, m), into ``obs[..., start : start + 2m]``
    interleaved ``x0, y0, x1, y1, …`` as mpe2 concatenates them."""
    stop = start + 2 * x.shape[-1]
    obs[..., start:stop:2] = x
    obs[..., start + 1 : stop : 2] = y


def pair_distance(pos_a: np.ndarray, pos_b: np.ndarray) -> np.ndarray:
    """Distances ``|p_i − p_j|`` between (E, n, 2) and (E, m, 2) positions → (E, n, m), computed as
    mpe2's ``np.sqrt(np.sum(np.square(delta)))`` (on x and y planes, for speed)."""
    dx = pos_a[:, :, None, 0] - pos_b[:, None, :, 0]
    dy = pos_a[:, :, None, 1] - pos_b[:, None, :, 1]
    return np.sqrt(np.square(dx) + np.square(dy))
