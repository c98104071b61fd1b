"""Batched port of mpe2's ``simple_tag`` (``mpe2/simple_tag/simple_tag.py``), predator–prey.

``num_adversaries`` slow adversaries (radius 0.075, accel 3, max speed 1) come first in the agent
order, then ``num_good`` fast good agents (radius 0.05, accel 4, max speed 1.3); ``num_obstacles``
landmarks (radius 0.2) block everyone. Agent i observes
``[v_i, p_i, (p_l − p_i) for each obstacle, (p_j − p_i) for each other agent, v_j for each other
good agent]``, so an adversary sees one more velocity than a good agent (16 vs 14 numbers by
default; in the batched arrays a good agent's row ends with 2 zeros of padding).

Rewards: a good agent gets −10 per adversary touching it, minus the boundary penalty
``bound(|x|) + bound(|y|)``; every adversary gets +10 per touching (good, adversary) pair.
"""
from __future__ import annotations

import numpy as np

from .batched import BatchedEnv, off_diagonal, pair_distance, put_xy


def boundary_penalty(coordinate: np.ndarray) -> np.ndarray:
    """``bound(x)`` of ``Scenario.agent_reward`` for ``x = |coordinate|``: 0 below 0.9, linear to 1
    on [0.9, 1), then ``min(e^{2x − 2}, 10)``."""
    x = np.abs(coordinate)
    return np.where(x < 0.9, 0.0, np.where(x < 1.0, (x - 0.9) * 10, np.minimum(np.exp(2 * x - 2), 10)))


class BatchedTag(BatchedEnv):
    """``simple_tag`` for ``num_envs`` worlds at once; see :class:`~attnmarl.envs.batched.BatchedEnv`."""

    scenario = "simple_tag"

    def _configure(self) -> None:
        self.num_adversaries: int = self.kwargs["num_adversaries"]
        self.num_good: int = self.kwargs["num_good"]
        self.terminate_on_success: bool = self.kwargs["terminate_on_success"]
        size = self.params.agent_size
        self._catch_dist = size[self.num_adversaries :, None] + size[None, : self.num_adversaries]
        self._caught = np.zeros((self.num_envs, self.num_good, self.num_adversaries), dtype=bool)
        """Which (good agent, adversary) pairs touch after the last physics step (reward and ``_success``)."""

    def _reset_envs(self, done: np.ndarray) -> None:
        """Mirrors ``Scenario.reset_world``: agents uniform in [-1, 1]² at rest, obstacles in [-0.9, 0.9]²."""
        count = self._reset_agents_and_steps(done)
        self.landmark_pos[done] = self.rng.uniform(-0.9, 0.9, (count, self.n_landmarks, 2))

    def observe(self) -> np.ndarray:
        """Mirrors ``Scenario.observation`` (full observability)."""
        n_adv = self.num_adversaries
        obs = np.zeros((self.num_envs, self.n_agents, self.obs_dim), dtype=np.float32)
        obs[:, :, 0:2] = self.agent_vel
        obs[:, :, 2:4] = self.agent_pos
        pos, vel = self.agent_pos, self.agent_vel
        put_xy(obs, 4, *(self.landmark_pos[:, None, :, c] - pos[:, :, None, c] for c in (0, 1)))
        others_start = 4 + 2 * self.n_landmarks
        put_xy(obs, others_start, *(off_diagonal(pos[:, None, :, c] - pos[:, :, None, c]) for c in (0, 1)))
        vel_start = others_start + 2 * (self.n_agents - 1)
        put_xy(obs[:, :n_adv], vel_start, *(vel[:, None, n_adv:, c] for c in (0, 1)))
        good_vel = vel[:, n_adv:]
        other_good_vel = (off_diagonal(np.repeat(good_vel[:, None, :, c], self.num_good, axis=1)) for c in (0, 1))
        put_xy(obs[:, n_adv:], vel_start, *other_good_vel)
        return obs

    def _rewards_after_physics(self) -> np.ndarray:
        """Mirrors ``Scenario.agent_reward`` and ``Scenario.adversary_reward``."""
        n_adv = self.num_adversaries
        good_pos = self.agent_pos[:, n_adv:]
        self._caught = pair_distance(good_pos, self.agent_pos[:, :n_adv]) < self._catch_dist
        rewards = np.empty((self.num_envs, self.n_agents))
        rewards[:, :n_adv] = 10.0 * self._caught.sum(axis=(1, 2))[:, None]
        rewards[:, n_adv:] = (
            -10.0 * self._caught.sum(axis=2) - boundary_penalty(good_pos[..., 0]) - boundary_penalty(good_pos[..., 1])
        )
        return rewards

    def _success(self) -> np.ndarray:
        """Mirrors ``Scenario.is_terminal``: every good agent touches at least one adversary."""
        if not self.terminate_on_success:
            return super()._success()
        return np.all(self._caught.any(axis=2), axis=1)
