"""Action arrays: checking them, and turning them into forces as mpe2 does.

In the three ported scenarios every agent is movable and silent, so its action is mpe2's
5-way movement action (``[no_action, move_left, move_right, move_down, move_up]``):

- discrete: an integer in ``{0, …, 4}``; batched shape ``(num_envs, n_agents)``;
- continuous: 5 numbers in ``[0, 1]``; batched shape ``(num_envs, n_agents, 5)``, and the force is
  ``(a[2] - a[1], a[4] - a[3])``.

Either way the force is scaled by the agent's ``accel`` (mpe2's "sensitivity", 5 when unset).
"""
from __future__ import annotations

import numpy as np

N_MOVES = 5
"""Size of mpe2's movement action: ``Discrete(5)`` or ``Box(0, 1, (5,))`` (``dim_p * 2 + 1``)."""

DISCRETE_DIRECTION = np.array([[0.0, 0.0], [-1.0, 0.0], [1.0, 0.0], [0.0, -1.0], [0.0, 1.0]])
"""Unit force of each discrete action, as set in ``SimpleEnv._set_action`` (row = action)."""


def check_actions(actions: np.ndarray, leading_shape: tuple[int, ...], continuous: bool,
                  n_actions: int = N_MOVES) -> np.ndarray:
    """Return ``actions`` as an array of the right dtype, or raise ``ValueError`` naming the problem.

    ``leading_shape`` is ``(num_envs, n_agents)`` for a batched env or ``(n_agents,)`` for one env.
    Discrete actions must be integers in ``[0, n_actions)`` (mpe2's 5 moves; Level-Based Foraging has 6
    actions); continuous ones must be finite and in
    ``[0, 1]`` and are cast to float32, the dtype of mpe2's ``Box`` action space (mpe2 itself would
    clip out-of-range continuous actions with a warning; here, and in every policy played on mpe2 by
    :func:`attnmarl.envs.reference.play`, they are an error, so a port and mpe2 never score the same
    actions differently; the book's trained policies act within [0, 1]).
    """
    actions = np.asarray(actions)
    expected = leading_shape + ((N_MOVES,) if continuous else ())
    kind = "continuous" if continuous else "discrete"
    if actions.shape != expected:
        raise ValueError(f"{kind} actions must have shape {expected}, got {actions.shape}")
    if continuous:
        if not np.issubdtype(actions.dtype, np.number) or np.issubdtype(actions.dtype, np.complexfloating):
            raise ValueError(f"continuous actions must be real numbers, got dtype {actions.dtype}")
        actions = actions.astype(np.float32, copy=False)
        if not np.all(np.isfinite(actions)):
            raise ValueError("continuous actions must be finite (found NaN or inf)")
        if actions.size and (actions.min() < 0.0 or actions.max() > 1.0):
            raise ValueError(
                f"continuous actions must lie in [0, 1], got values in [{actions.min()}, {actions.max()}]"
            )
        return actions
    if not np.issubdtype(actions.dtype, np.integer):
        raise ValueError(f"discrete actions must be integers, got dtype {actions.dtype}")
    if actions.size and (actions.min() < 0 or actions.max() >= n_actions):
        raise ValueError(
            f"discrete actions must lie in [0, {n_actions - 1}], got values in [{actions.min()}, {actions.max()}]"
        )
    return actions


def action_force(actions: np.ndarray, sensitivity: np.ndarray, continuous: bool) -> np.ndarray:
    """Force of each agent's action, ``(..., n_agents, 2)`` float64 (mirrors ``SimpleEnv._set_action``).

    ``actions`` must already be checked by :func:`check_actions`; ``sensitivity`` is ``(n_agents,)``.
    Continuous: the differences ``a[2] - a[1]`` and ``a[4] - a[3]`` are taken in float32, as mpe2
    does with a float32 action, and only then widened to float64.
    """
    if continuous:
        unit = np.stack([actions[..., 2] - actions[..., 1], actions[..., 4] - actions[..., 3]], axis=-1)
        unit = unit.astype(np.float64)
    else:
        unit = DISCRETE_DIRECTION[actions]
    return unit * sensitivity[:, None]
