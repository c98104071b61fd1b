"""Baseline policies that a trained policy is judged against (PettingZoo dict convention).

- :func:`random_policy` — uniform random actions, any scenario;
- :func:`greedy_assignment_policy` — simple_spread only, a *centralized* heuristic that reads all
  agents' observations: assign agents to landmarks one-to-one with the least total distance
  (``scipy.optimize.linear_sum_assignment``), then steer each agent to its landmark.

Steering accounts for momentum. With mpe2's integration (``p ← p + v·dt``, then
``v ← (1 − δ)v + (f/m)·dt``, δ = damping), an agent that applies force f now and nothing after
comes to rest at ``s(f) = p + v·dt + ((1 − δ)v + (f/m)·dt)·dt/δ``; the greedy action is the one whose
rest point ``s(f)`` is closest to the landmark (for continuous actions, the per-axis force that
cancels the error, clipped to the action range). Steering straight at the landmark instead
ignores the velocity and overshoots.
"""
from __future__ import annotations

from typing import Any

import numpy as np
from mpe2.simple_spread.simple_spread import Scenario as SpreadScenario
from scipy.optimize import linear_sum_assignment

from ..guards import check_seed
from .actions import DISCRETE_DIRECTION
from .physics import WorldParams
from .reference import Policy, make_reference

_SPREAD = WorldParams.from_world(SpreadScenario().make_world(1))


def random_policy(scenario: str, seed: int = 0, **scenario_kwargs: Any) -> Policy:
    """Uniformly random actions from each agent's mpe2 action space (agent i's space seeded ``seed + i``)."""
    check_seed(seed)
    env = make_reference(scenario, **scenario_kwargs)
    action_spaces = {agent: env.action_space(agent) for agent in env.possible_agents}
    for i, space in enumerate(action_spaces.values()):
        space.seed(seed + i)

    def policy(obs: dict[str, np.ndarray]) -> dict[str, Any]:
        return {agent: action_spaces[agent].sample() for agent in obs}

    return policy


def assign_landmarks(observations: np.ndarray) -> np.ndarray:
    """Landmark of each agent from simple_spread observations ``(N, 6N)``: the one-to-one assignment
    minimising the summed agent–landmark distance. Returns each agent's landmark offset ``(N, 2)``."""
    n = observations.shape[0]
    to_landmark = observations[:, 4 : 4 + 2 * n].reshape(n, n, 2)
    agents, landmarks = linear_sum_assignment(np.linalg.norm(to_landmark, axis=2))
    return to_landmark[agents, landmarks]


def rest_point_error(observations: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``target − (s(0) − p)``: how far each agent would stop from its target if it pushed no more."""
    velocity = observations[:, 0:2]
    dt, damping = _SPREAD.dt, _SPREAD.damping
    return target - (velocity * dt + (1 - damping) * velocity * dt / damping)


def greedy_assignment_policy(continuous_actions: bool = False) -> Policy:
    """Centralized greedy baseline for simple_spread (any N), discrete or continuous actions."""
    dt, damping = _SPREAD.dt, _SPREAD.damping
    sensitivity, mass = _SPREAD.sensitivity[0], _SPREAD.mass[0]
    shift_per_force = dt * dt / (mass * damping)

    def policy(obs: dict[str, np.ndarray]) -> dict[str, Any]:
        agents = list(obs)
        observations = np.stack([obs[agent] for agent in agents]).astype(np.float64)
        if observations.shape[1] != 6 * len(agents):
            raise ValueError(
                f"greedy_assignment_policy needs simple_spread observations (6N numbers per agent), "
                f"got {observations.shape[1]} numbers for {len(agents)} agents"
            )
        error = rest_point_error(observations, assign_landmarks(observations))
        if continuous_actions:
            push = np.clip(error / (shift_per_force * sensitivity), -1.0, 1.0)
            actions = np.zeros((len(agents), 5), dtype=np.float32)
            actions[:, [2, 4]] = np.maximum(push, 0.0)
            actions[:, [1, 3]] = np.maximum(-push, 0.0)
            return {agent: actions[i] for i, agent in enumerate(agents)}
        remaining = error[:, None, :] - DISCRETE_DIRECTION[None] * sensitivity * shift_per_force
        best = np.argmin(np.linalg.norm(remaining, axis=2), axis=1)
        return {agent: int(best[i]) for i, agent in enumerate(agents)}

    return policy
