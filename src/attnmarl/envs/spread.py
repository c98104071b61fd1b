"""Batched port of mpe2's ``simple_spread`` (``mpe2/simple_spread/simple_spread.py``).

N agents (radius 0.15, colliding) and N landmarks (not colliding). Agent i observes
``[v_i, p_i, (p_l − p_i) for each landmark l, (p_j − p_i) for each other agent j, c_j for each
other agent j]`` — 6N numbers; the agents are silent, so every ``c_j`` is ``(0, 0)``.

Reward of agent i, with ``ρ = local_ratio``:
``r_i = (1 − ρ)·(−Σ_l min_j |p_j − p_l|) + ρ·(−#{j ≠ i : |p_i − p_j| < r_i + r_j})``.
"""
from __future__ import annotations

import numpy as np
from mpe2.simple_spread.simple_spread import Scenario

from .batched import BatchedEnv, off_diagonal, pair_distance, put_xy


class BatchedSpread(BatchedEnv):
    """``simple_spread`` for ``num_envs`` worlds at once; see :class:`~attnmarl.envs.batched.BatchedEnv`."""

    scenario = "simple_spread"

    def _configure(self) -> None:
        self.local_ratio: float = float(self.kwargs["local_ratio"])
        self.terminate_on_success: bool = self.kwargs["terminate_on_success"]
        size = self.params.agent_size
        self._collision_dist = size[:, None] + size[None, :]
        self._landmark_dist = np.zeros((self.num_envs, self.n_agents, self.n_landmarks))
        """Agent–landmark distances after the last physics step, shared by the reward and ``_success``."""

    def _reset_envs(self, done: np.ndarray) -> None:
        """Mirrors ``Scenario.reset_world``: agents and landmarks uniform in [-1, 1]², agents at rest."""
        count = self._reset_agents_and_steps(done)
        self.landmark_pos[done] = self.rng.uniform(-1.0, 1.0, (count, self.n_landmarks, 2))

    def observe(self) -> np.ndarray:
        """Mirrors ``Scenario.observation`` (full observability)."""
        n = self.n_agents
        obs = np.zeros((self.num_envs, n, self.obs_dim), dtype=np.float32)
        obs[:, :, 0:2] = self.agent_vel
        obs[:, :, 2:4] = self.agent_pos
        pos, landmarks = self.agent_pos, self.landmark_pos
        put_xy(obs, 4, *(landmarks[:, None, :, c] - pos[:, :, None, c] for c in (0, 1)))
        put_xy(obs, 4 + 2 * self.n_landmarks, *(off_diagonal(pos[:, None, :, c] - pos[:, :, None, c]) for c in (0, 1)))
        return obs

    def _rewards_after_physics(self) -> np.ndarray:
        """Mirrors ``Scenario.global_reward`` and ``Scenario.reward`` mixed by ``local_ratio`` (``SimpleEnv``)."""
        self._landmark_dist = pair_distance(self.agent_pos, self.landmark_pos)
        global_reward = -self._landmark_dist.min(axis=1).sum(axis=1)
        touching = pair_distance(self.agent_pos, self.agent_pos) < self._collision_dist
        touching[:, np.arange(self.n_agents), np.arange(self.n_agents)] = False
        agent_reward = -touching.sum(axis=2).astype(np.float64)
        return global_reward[:, None] * (1 - self.local_ratio) + agent_reward * self.local_ratio

    def _success(self) -> np.ndarray:
        """Mirrors ``Scenario.is_terminal``: every landmark has an agent within ``CAPTURE_RADIUS``."""
        if not self.terminate_on_success:
            return super()._success()
        return np.all(self._landmark_dist.min(axis=1) < Scenario.CAPTURE_RADIUS, axis=1)
