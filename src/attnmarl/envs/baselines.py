"""Baseline policies that a trained policy is judged against (PettingZoo dict convention).

- :func:`random_policy` — uniform random actions, any scenario;
- :func:`greedy_assignment_policy` — simple_spread only, a *centralized* heuristic that reads all
  agents' observations: assign agents to landmarks one-to-one with the least total distance
  (``scipy.optimize.linear_sum_assignment``), then steer each agent to its landmark;
- :func:`steered_assignment_policy` — the same assignment with a simpler steering
  (:func:`heading_moves`), which scores better than the greedy one (chapter 6 measures both);
- :func:`treasure_hunter_policy` — collect_treasure only, a *decentralized* script on each agent's own
  observation: an empty collector heads for the nearest treasure, a loaded one for the nearest
  deposit of its treasure's type, a deposit for the nearest collector carrying its type (else the
  collectors' centroid) — the targets of mpe2's shaping rewards, pursued greedily;
- :func:`chase_policy` — simple_tag, a *decentralized* script on each agent's own observation (discrete
  or continuous actions): every predator steers for the nearest prey, every prey flees from the
  nearest predator and turns back before the edge of the arena, where its boundary penalty starts.

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

from ..checks import check_bool, check_seed, derived_seed
from .actions import DISCRETE_DIRECTION
from .physics import WorldParams
from .reference import Policy, describe, make_reference
from .scenarios import reference_kwargs
from .tokens import token_layout

_SPREAD = WorldParams.from_world(SpreadScenario().make_world(1))


def random_policy(scenario: str, seed: int = 0, **scenario_kwargs: Any) -> Policy:
    """Uniformly random actions from each agent's mpe2 action space (agent i's space seeded ``seed + i``)."""
    check_seed(seed)
    env = make_reference(scenario, **scenario_kwargs)
    action_spaces = {agent: env.action_space(agent) for agent in env.possible_agents}
    for i, space in enumerate(action_spaces.values()):
        space.seed(derived_seed(seed, i))

    def policy(obs: dict[str, np.ndarray]) -> dict[str, Any]:
        return {agent: action_spaces[agent].sample() for agent in obs}

    policy.built_for = describe(env)  # checked by evaluate before it plays
    return policy


def assign_landmarks(observations: np.ndarray) -> np.ndarray:
    """Landmark of each agent from simple_spread observations ``(N, 6N)``: the one-to-one assignment
    minimising the summed agent–landmark distance. Returns each agent's landmark offset ``(N, 2)``."""
    n = observations.shape[0]
    to_landmark = observations[:, 4 : 4 + 2 * n].reshape(n, n, 2)
    agents, landmarks = linear_sum_assignment(np.linalg.norm(to_landmark, axis=2))
    return to_landmark[agents, landmarks]


def _coast(velocity: np.ndarray, dt: float, damping: float) -> np.ndarray:
    """``s(0) − p``: how far an agent moving at ``velocity`` travels before it stops, pushing no more."""
    return velocity * dt + (1 - damping) * velocity * dt / damping


def _discrete_steer(error: np.ndarray, sensitivity: np.ndarray, mass: np.ndarray, dt: float,
                    damping: float) -> np.ndarray:
    """The discrete move of each agent whose rest point lands closest to its target: ``error`` (n, 2) is
    target − rest point without a push (see :func:`rest_point_error`); a move shifts the rest point by
    direction × sensitivity × dt² / (mass × damping)."""
    shift = (sensitivity * (dt * dt / (mass * damping)))[:, None, None]
    remaining = error[:, None, :] - DISCRETE_DIRECTION[None] * shift
    return np.argmin(np.linalg.norm(remaining, axis=2), axis=1)


def rest_point_error(observations: np.ndarray, target: np.ndarray) -> np.ndarray:
    """``target − (s(0) − p)``: how far each agent would stop from its target if it pushed no more."""
    return target - _coast(observations[:, 0:2], _SPREAD.dt, _SPREAD.damping)


STAY_RADIUS = 0.05
""":func:`heading_moves` stays (move 0) once an agent's rest point is this close to its target."""


def heading_moves(observations: np.ndarray, target: np.ndarray) -> np.ndarray:
    """Discrete moves ``(N,)`` from simple_spread observations ``(N, 6N)`` and target offsets ``(N, 2)``:
    the move (1–4) whose direction points most along the rest-point error (:func:`rest_point_error`),
    or 0 (stay) when that error is shorter than :data:`STAY_RADIUS`."""
    error = rest_point_error(observations, target)
    along = error @ DISCRETE_DIRECTION[1:].T
    return np.where(np.linalg.norm(error, axis=1) < STAY_RADIUS, 0, along.argmax(axis=1) + 1)


def steered_assignment_policy() -> Policy:
    """Centralized baseline for simple_spread (any N, discrete actions): the one-to-one assignment of
    :func:`greedy_assignment_policy`, steered by :func:`heading_moves` instead of the closest rest point."""

    def policy(obs: dict[str, np.ndarray]) -> dict[str, Any]:
        agents, observations = _spread_observations(obs, "steered_assignment_policy")
        moves = heading_moves(observations, assign_landmarks(observations))
        return {agent: int(move) for agent, move in zip(agents, moves)}

    return policy


def _spread_observations(obs: dict[str, np.ndarray], who: str) -> tuple[list[str], np.ndarray]:
    """The agents of an mpe2 observation dict and their observations (N, 6N) in float64; ``ValueError``
    unless they are simple_spread's (6N numbers per agent)."""
    agents = list(obs)
    shapes = [np.shape(obs[agent]) for agent in agents]
    if not agents or any(shape != (6 * len(agents),) for shape in shapes):
        raise ValueError(f"{who} needs simple_spread observations (6N numbers per agent), got observations of "
                         f"shapes {sorted(set(shapes))} for {len(agents)} agents")
    return agents, np.stack([obs[agent] for agent in agents]).astype(np.float64)


def greedy_assignment_policy(continuous_actions: bool = False) -> Policy:
    """Centralized greedy baseline for simple_spread (any N), discrete or continuous actions."""
    continuous_actions = check_bool("continuous_actions", continuous_actions)  # 'no' would act as True
    dt, damping = _SPREAD.dt, _SPREAD.damping
    sensitivity, mass = _SPREAD.sensitivity[0], _SPREAD.mass[0]
    shift_per_force = dt * dt / (mass * damping)

    def policy(obs: dict[str, np.ndarray]) -> dict[str, Any]:
        agents, observations = _spread_observations(obs, "greedy_assignment_policy")
        error = rest_point_error(observations, assign_landmarks(observations))
        if continuous_actions:
            push = np.clip(error / (shift_per_force * sensitivity), -1.0, 1.0)
            actions = np.zeros((len(agents), 5), dtype=np.float32)
            actions[:, [2, 4]] = np.maximum(push, 0.0)
            actions[:, [1, 3]] = np.maximum(-push, 0.0)
            return {agent: actions[i] for i, agent in enumerate(agents)}
        n = len(agents)
        best = _discrete_steer(error, np.full(n, sensitivity), np.full(n, mass), dt, damping)
        return {agent: int(best[i]) for i, agent in enumerate(agents)}

    return policy


def treasure_hunter_policy(**scenario_kwargs: Any) -> Policy:
    """Decentralized scripted baseline for collect_treasure (discrete actions, any sizes).

    Each agent reads only its own mpe2 observation (its tokens, see :mod:`attnmarl.envs.tokens`):
    an empty collector steers to the nearest live treasure, a loaded collector to the nearest deposit
    of the type it holds, deposit d to the nearest collector holding type d, or to the collectors'
    centroid when none does. Steering is the momentum-aware rest-point rule of the greedy spread
    policy. It ignores the −5 for overlapping collectors, so collectors chasing one treasure collide.
    """
    kwargs = reference_kwargs("collect_treasure", **scenario_kwargs)
    if kwargs["continuous_actions"]:
        raise ValueError("treasure_hunter_policy steers with discrete actions; got continuous_actions=True")
    env = make_reference("collect_treasure", **scenario_kwargs)
    params = WorldParams.from_world(env.unwrapped.world)
    n_types = kwargs["num_deposits"]
    names = list(env.possible_agents)
    layouts = [token_layout("collect_treasure", i, **scenario_kwargs) for i in range(len(names))]

    def target(i: int, o: np.ndarray) -> np.ndarray:
        """Offset from agent i to where it heads."""
        layout = layouts[i]
        rows = {kind: np.stack([o[list(c)] for c, k in zip(layout.columns, layout.kinds) if k == kind])
                for kind in ("agent", "treasure")}
        others, treasures = rows["agent"], rows["treasure"]  # nearest first
        deposit_of, holding_of = others[:, 4:4 + n_types], others[:, 4 + n_types:]
        if names[i].startswith("collector_"):
            holding = o[4:4 + n_types]
            if holding.any():
                chosen = deposit_of[:, int(holding.argmax())] > 0
                return others[chosen][0, :2]
            live = treasures[:, 2:].sum(axis=1) > 0
            return treasures[live][0, :2] if live.any() else np.zeros(2)
        carriers = holding_of[:, int(names[i].rsplit("_", 1)[1])] > 0
        if carriers.any():
            return others[carriers][0, :2]
        return others[deposit_of.sum(axis=1) == 0, :2].mean(axis=0)

    def policy(obs: dict[str, np.ndarray]) -> dict[str, Any]:
        agents = list(obs)
        index = [names.index(agent) for agent in agents]
        velocity = np.stack([obs[agent][2:4] for agent in agents]).astype(np.float64)
        offset = np.stack([target(i, np.asarray(obs[agent], dtype=np.float64)) for i, agent in zip(index, agents)])
        error = offset - _coast(velocity, params.dt, params.damping)
        moves = _discrete_steer(error, params.sensitivity[index], params.mass[index], params.dt, params.damping)
        return {agent: int(move) for agent, move in zip(agents, moves)}

    policy.built_for = describe(env)  # checked by evaluate before it plays
    return policy


CHASE_EDGE = 0.7
"""Where a fleeing prey starts to turn back toward the centre (its boundary penalty starts at |x| = 0.9)."""


def chase_policy(continuous_actions: bool = False, **scenario_kwargs: Any) -> Policy:
    """Decentralized scripted baseline for simple_tag: predators chase, prey flee (any team sizes).

    Each agent reads only its own observation ``[v, p, obstacles - p, others - p, good agents' v]``
    (others in agent order: predators first). A predator steers for the nearest prey with the
    momentum-aware rest-point rule (:func:`rest_point_error`), a prey away from the nearest predator,
    plus a pull toward the centre that grows past ``|x| = CHASE_EDGE``. Both push with full force. They
    ignore the obstacles.
    """
    kwargs = reference_kwargs("simple_tag", **{**scenario_kwargs, "continuous_actions": continuous_actions})
    env = make_reference("simple_tag", **kwargs)
    params = WorldParams.from_world(env.unwrapped.world)
    names = list(env.possible_agents)
    n_adv, n_obstacles = kwargs["num_adversaries"], kwargs["num_obstacles"]
    others = 4 + 2 * n_obstacles

    def heading(i: int, o: np.ndarray) -> np.ndarray:
        """The direction agent i pushes in (before normalising)."""
        rel = o[others:others + 2 * (len(names) - 1)].reshape(-1, 2)  # others in agent order, without i
        predators = rel[:n_adv - (i < n_adv)]
        prey = rel[n_adv - (i < n_adv):]
        if i < n_adv:
            target = prey[np.argmin(np.linalg.norm(prey, axis=1))]
            return target - _coast(o[0:2], params.dt, params.damping)
        nearest = predators[np.argmin(np.linalg.norm(predators, axis=1))]
        away = -nearest / (np.linalg.norm(nearest) + 1e-8)
        position = o[2:4]
        back = -np.sign(position) * np.clip((np.abs(position) - CHASE_EDGE) / (0.9 - CHASE_EDGE), 0.0, None) * 2.0
        return away + back

    def policy(obs: dict[str, np.ndarray]) -> dict[str, Any]:
        actions: dict[str, Any] = {}
        for agent, o in obs.items():
            i = names.index(agent)
            direction = heading(i, np.asarray(o, dtype=np.float64))
            push = direction / (np.abs(direction).max() + 1e-8)  # full force along the heading
            if continuous_actions:
                a = np.zeros(5, dtype=np.float32)
                a[[2, 4]] = np.maximum(push, 0.0)
                a[[1, 3]] = np.maximum(-push, 0.0)
                actions[agent] = a
            else:
                actions[agent] = int(np.argmax(DISCRETE_DIRECTION @ push))
        return actions

    policy.built_for = describe(env)  # checked by evaluate before it plays
    return policy
