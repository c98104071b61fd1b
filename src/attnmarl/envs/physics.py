"""Batched mirror of mpe2's physics, ``World.step`` in ``mpe2/_mpe_utils/core.py``.

One world step, for every environment and entity at once (shapes ``(num_envs, n, 2)``):

1. action force ``f_i = u_i`` (no motor noise in the ported scenarios);
2. contact force, for every pair of colliding entities ``i, j`` with ``δ = p_i − p_j``:
   ``f_i += F · δ / |δ| · k · softplus(−(|δ| − (r_i + r_j)) / k)``, with ``F = contact_force``,
   ``k = contact_margin`` and ``softplus(x) = log(1 + eˣ)`` (``np.logaddexp(0, x)``);
3. integration, in mpe2's order — the position moves with the *old* velocity first:
   ``p ← p + v·dt``, ``v ← v·(1 − damping) + (f / m)·dt``, then ``v`` is rescaled to
   ``max_speed`` if it is faster.

Landmarks never move in the ported scenarios (mpe2 skips immovable entities), so only agents have
a velocity. The constants and per-entity properties are read from the mpe2 world itself
(:meth:`WorldParams.from_world`), so the port cannot drift from the reference's numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class WorldParams:
    """Constant physical properties of an mpe2 world, one entry per agent or landmark."""

    agent_size: np.ndarray
    """(n_agents,) radius of each agent."""
    landmark_size: np.ndarray
    """(n_landmarks,) radius of each landmark."""
    sensitivity: np.ndarray
    """(n_agents,) action scale: the agent's ``accel``, or 5.0 when mpe2 leaves it ``None``."""
    mass: np.ndarray
    """(n_agents,) mass of each agent."""
    max_speed: np.ndarray
    """(n_agents,) speed limit, ``inf`` where mpe2 has ``None``."""
    agents_collide: bool
    """Whether the agents feel contact forces (uniform over agents in the ported scenarios)."""
    landmarks_collide: bool
    """Whether the landmarks push agents (uniform over landmarks in the ported scenarios)."""
    dt: float
    damping: float
    contact_force: float
    contact_margin: float

    @classmethod
    def from_world(cls, world) -> WorldParams:
        """Read the properties from an mpe2 ``World`` made by a scenario's ``make_world``."""
        agents, landmarks = world.agents, world.landmarks
        assert all(a.movable for a in agents) and not any(lm.movable for lm in landmarks)
        assert len({a.collide for a in agents}) == 1 and len({lm.collide for lm in landmarks}) <= 1
        return cls(
            agent_size=np.array([a.size for a in agents], dtype=np.float64),
            landmark_size=np.array([lm.size for lm in landmarks], dtype=np.float64),
            sensitivity=np.array([5.0 if a.accel is None else a.accel for a in agents], dtype=np.float64),
            mass=np.array([a.mass for a in agents], dtype=np.float64),
            max_speed=np.array([np.inf if a.max_speed is None else a.max_speed for a in agents]),
            agents_collide=bool(agents[0].collide),
            landmarks_collide=bool(landmarks and landmarks[0].collide),
            dt=float(world.dt),
            damping=float(world.damping),
            contact_force=float(world.contact_force),
            contact_margin=float(world.contact_margin),
        )


def softplus(x: np.ndarray) -> np.ndarray:
    """``log(1 + eˣ)`` as mpe2's ``np.logaddexp(0, x)``, faster where ``eˣ`` is negligible.

    For ``x < −40``, ``log1p(eˣ) = eˣ(1 − eˣ/2 + …)`` equals ``eˣ`` to double precision (up to the one
    ulp by which numpy's vectorised ``exp`` may round differently), so only the few pairs near
    contact pay for the full ``logaddexp``. Those far pairs push with less than 1e-19 anyway.
    """
    result = np.exp(x)
    near = x > -40.0
    result[near] = np.logaddexp(0.0, x[near])
    return result


def contact_force(
    pos_a: np.ndarray, pos_b: np.ndarray, dist_min: np.ndarray, params: WorldParams, same: bool
) -> np.ndarray:
    """Total contact force on each entity of ``pos_a`` (E, n, 2) from every entity of ``pos_b`` (E, m, 2).

    Mirrors ``World.get_collision_force``; ``dist_min`` (n, m) is ``r_i + r_j``. With ``same=True``
    the two sets are the same entities and the self-pairs (i = i) are left out. The force of j
    on i is minus the force of i on j, so summing rows gives mpe2's pairwise accumulation.
    Works on x and y planes ``(E, n, m)``: arrays with a trailing axis of 2 are several times slower.
    """
    dx = pos_a[:, :, None, 0] - pos_b[:, None, :, 0]
    dy = pos_a[:, :, None, 1] - pos_b[:, None, :, 1]
    dist = np.sqrt(np.square(dx) + np.square(dy))
    if same:
        dist[:, np.arange(dist.shape[1]), np.arange(dist.shape[1])] = np.inf
    k = params.contact_margin
    penetration = softplus(-(dist - dist_min) / k) * k
    scale = params.contact_force / dist * penetration
    return np.stack([np.einsum("enm,enm->en", dx, scale), np.einsum("enm,enm->en", dy, scale)], axis=-1)


def world_step(
    agent_pos: np.ndarray, agent_vel: np.ndarray, landmark_pos: np.ndarray, force: np.ndarray, params: WorldParams
) -> None:
    """Advance agents one step in place: contact forces, then integration (``World.step``).

    ``agent_pos``, ``agent_vel``, ``force``: (E, n_agents, 2); ``landmark_pos``: (E, n_landmarks, 2).
    ``force`` holds the action forces on entry.
    """
    if params.agents_collide:
        size = params.agent_size
        force = force + contact_force(agent_pos, agent_pos, size[:, None] + size[None, :], params, same=True)
        if params.landmarks_collide and landmark_pos.shape[1]:
            dist_min = size[:, None] + params.landmark_size[None, :]
            force = force + contact_force(agent_pos, landmark_pos, dist_min, params, same=False)
    agent_pos += agent_vel * params.dt
    agent_vel *= 1.0 - params.damping
    agent_vel += (force / params.mass[:, None]) * params.dt
    if np.isfinite(params.max_speed).any():
        speed = np.sqrt(np.square(agent_vel[..., 0]) + np.square(agent_vel[..., 1]))
        too_fast = speed > params.max_speed
        agent_vel[too_fast] = agent_vel[too_fast] / speed[too_fast][:, None] * params.max_speed[
            np.nonzero(too_fast)[1]
        ][:, None]
