"""Batched port of mpe2's ``collect_treasure`` (``mpe2/collect_treasure/collect_treasure.py``), the MAAC task.

``num_collectors`` collectors (radius 0.05, mass 1) come first in the agent order, then
``num_deposits`` deposits (radius 0.075, mass 2.25; deposit d accepts treasure type d); there are
``num_treasures`` treasures (radius 0.025) of ``num_deposits`` types. Nothing collides physically
(accel 1.5, max speed 1 for everyone). After each physics step, in mpe2's ``post_step`` order:

1. **pickup** — each live treasure, in order, is taken by the first collector (in order) that
   touches it and holds nothing yet; it then disappears (parked at (−999, −999));
2. **respawn** — each treasure that was already gone before this step reappears at a uniform
   position in [-0.95, 0.95]² with a uniform type (mpe2's ``respawn_prob`` is 1);
3. **delivery** — each collector touching the deposit of the type it holds delivers it.

Rewards: ``g = 5 · (#pickups + #deliveries)`` goes to every agent. A collector also gets −5 per
other collector it overlaps and −0.1 × the distance to the nearest live treasure (when empty
handed) or to the matching deposit (when holding); a deposit gets −0.1 × the distance to the
nearest collector holding its type, or to the collectors' centroid when none does.

Observation of agent i: ``[p_i, v_i, (holding one-hot, collectors only)]``, then every other agent
sorted by distance (nearest first) as ``[p_j − p_i, v_j, deposit-type one-hot, holding one-hot]``,
then every treasure — live ones sorted by distance, then the gone ones as zeros — as
``[p_t − p_i, type one-hot]``. A collector's row is ``num_deposits`` longer than a deposit's (the
deposits' rows are zero-padded at the end in the batched arrays).
"""
from __future__ import annotations

import copy
from typing import Any

import numpy as np

from .batched import BatchedEnv, pair_distance

GONE = -999.0
"""Where mpe2 parks a picked-up treasure until it respawns."""

RESPAWN_BOUND = 0.95
"""Treasures (re)appear uniformly in [-0.95, 0.95]²."""


def first_true(mask: np.ndarray) -> np.ndarray:
    """Index of the first True along the last axis, −1 where there is none."""
    return np.where(mask.any(axis=-1), mask.argmax(axis=-1), -1)


def greedy_pickup(touching: np.ndarray) -> np.ndarray:
    """Which collector picks up each treasure, −1 for none: ``touching`` (E, T, C) → (E, T).

    mpe2 visits treasures in order and gives each to the first free collector touching it; a
    collector takes at most one. The rule "treasure t takes the first touching collector not
    taken by a treasure before t" is iterated to its fixed point: round r settles treasure r at the
    latest, and any fixed point is the sequential answer, so this equals mpe2's loop. Usually the
    first round already is the fixed point (a collector rarely touches two treasures).
    """
    n_collectors = touching.shape[-1]
    choice = first_true(touching)
    while True:
        chosen = choice[..., None] == np.arange(n_collectors)
        taken_before = (np.cumsum(chosen, axis=1) - chosen) > 0
        new_choice = first_true(touching & ~taken_before)
        if np.array_equal(new_choice, choice):
            return choice
        choice = new_choice


class BatchedCollectTreasure(BatchedEnv):
    """``collect_treasure`` for ``num_envs`` worlds at once; see :class:`~attnmarl.envs.batched.BatchedEnv`.

    Scenario state beyond positions and velocities: ``holding`` (E, num_collectors), the type a
    collector carries or −1; ``treasure_alive`` and ``treasure_type`` (E, num_treasures).
    """

    scenario = "collect_treasure"

    def _configure(self) -> None:
        self.num_collectors: int = self.kwargs["num_collectors"]
        self.num_types: int = self.kwargs["num_deposits"]
        size = self.params.agent_size
        n_col = self.num_collectors
        self._pickup_dist = self.params.landmark_size[:, None] + size[None, :n_col]
        self._overlap_dist = size[:n_col, None] + size[None, :n_col]
        self._deliver_dist = size[:n_col, None] + size[None, n_col:]
        self.holding = np.full((self.num_envs, n_col), -1, dtype=np.int64)
        self.treasure_alive = np.ones((self.num_envs, self.n_landmarks), dtype=bool)
        self.treasure_type = np.zeros((self.num_envs, self.n_landmarks), dtype=np.int64)
        self._reference_rngs: dict[int, np.random.Generator] = {}

    def _reset_envs(self, done: np.ndarray) -> None:
        """Mirrors ``Scenario.reset_world``: agents uniform in [-1, 1]² at rest and empty handed,
        treasures alive with uniform types at uniform positions in [-0.95, 0.95]²."""
        count = self._reset_agents_and_steps(done)
        self.holding[done] = -1
        self.treasure_alive[done] = True
        self.treasure_type[done] = self.rng.integers(0, self.num_types, (count, self.n_landmarks))
        self.landmark_pos[done] = self.rng.uniform(-RESPAWN_BOUND, RESPAWN_BOUND, (count, self.n_landmarks, 2))
        for slot in np.flatnonzero(done):
            self._reference_rngs.pop(int(slot), None)

    def _load_scenario_state(self, slot: int, raw_env: Any) -> None:
        """Copy what collectors hold, which treasures are alive and their types, and the world's
        respawn generator (mpe2 keeps its own copy, ``world.np_random``), so that respawns in this
        slot draw the same numbers as in ``raw_env`` until the slot's episode ends."""
        world = raw_env.world
        collectors = world.agents[: self.num_collectors]
        self.holding[slot] = [-1 if a.holding is None else a.holding for a in collectors]
        self.treasure_alive[slot] = [lm.alive for lm in world.landmarks]
        self.treasure_type[slot] = [lm.type for lm in world.landmarks]
        self._reference_rngs[slot] = copy.deepcopy(world.np_random)

    def _respawn(self, gone: np.ndarray) -> None:
        """Respawn the treasures where ``gone`` (E, T): fresh types and positions, alive again.

        Slots loaded from mpe2 draw from their copy of mpe2's generator in mpe2's order (per
        treasure: the ``respawn_prob`` test, the position, the type) — a loop over those few
        loaded slots only, which keeps them in lock-step with the reference.
        """
        count = int(gone.sum())
        self.landmark_pos[gone] = self.rng.uniform(-RESPAWN_BOUND, RESPAWN_BOUND, (count, 2))
        self.treasure_type[gone] = self.rng.integers(0, self.num_types, count)
        self.treasure_alive[gone] = True
        for slot, rng in self._reference_rngs.items():
            for t in np.flatnonzero(gone[slot]):
                rng.uniform()
                self.landmark_pos[slot, t] = rng.uniform(-RESPAWN_BOUND, RESPAWN_BOUND, 2)
                self.treasure_type[slot, t] = rng.integers(0, self.num_types)

    def _post_step(self) -> np.ndarray:
        """Pickup, respawn, delivery (``Scenario.post_step``); returns the global reward ``g`` (E,)."""
        n_col = self.num_collectors
        collector_pos = self.agent_pos[:, :n_col]
        gone_before = ~self.treasure_alive
        touching = pair_distance(self.landmark_pos, collector_pos) < self._pickup_dist
        touching &= self.treasure_alive[:, :, None] & (self.holding < 0)[:, None, :]
        picker = np.full(touching.shape[:2], -1)
        busy = np.flatnonzero(touching.any(axis=(1, 2)))
        picker[busy] = greedy_pickup(touching[busy])
        env_index, treasure_index = np.nonzero(picker >= 0)
        self.holding[env_index, picker[env_index, treasure_index]] = self.treasure_type[env_index, treasure_index]
        self.treasure_alive[env_index, treasure_index] = False
        self.landmark_pos[env_index, treasure_index] = GONE
        self._respawn(gone_before)
        carried = np.maximum(self.holding, 0)
        deposit_pos = self.agent_pos[np.arange(self.num_envs)[:, None], n_col + carried]
        deliver_dist = self._deliver_dist[np.arange(n_col), carried]
        delivered = (self.holding >= 0) & (self._distance(collector_pos, deposit_pos) < deliver_dist)
        self.holding[delivered] = -1
        events = np.bincount(env_index, minlength=self.num_envs) + delivered.sum(axis=1)
        return 5.0 * events

    @staticmethod
    def _distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Row-wise distance between (E, n, 2) arrays, as mpe2's ``np.sqrt(np.sum(np.square(a - b)))``."""
        delta = a - b
        return np.sqrt(np.square(delta[..., 0]) + np.square(delta[..., 1]))

    def _rewards_after_physics(self) -> np.ndarray:
        """Mirrors ``post_step`` then ``Scenario._collector_reward`` and ``Scenario._deposit_reward``."""
        global_reward = self._post_step()[:, None]
        n_col = self.num_collectors
        collector_pos, deposit_pos = self.agent_pos[:, :n_col], self.agent_pos[:, n_col:]
        overlapping = pair_distance(collector_pos, collector_pos) < self._overlap_dist
        overlapping[:, np.arange(n_col), np.arange(n_col)] = False
        to_treasure = np.where(
            self.treasure_alive[:, None, :], pair_distance(collector_pos, self.landmark_pos), np.inf
        ).min(axis=2)
        empty_handed = np.where(self.treasure_alive.any(axis=1)[:, None], -0.1 * to_treasure, 0.0)
        own_deposit = deposit_pos[np.arange(self.num_envs)[:, None], np.maximum(self.holding, 0)]
        shaping = np.where(self.holding < 0, empty_handed, -0.1 * self._distance(collector_pos, own_deposit))
        collector_reward = -5.0 * overlapping.sum(axis=2) + shaping + global_reward

        carriers = self.holding[:, None, :] == np.arange(self.num_types)[None, :, None]
        to_carrier = np.where(carriers, pair_distance(deposit_pos, collector_pos), np.inf).min(axis=2)
        centroid = collector_pos.mean(axis=1, keepdims=True)
        to_centroid = self._distance(centroid, deposit_pos)
        deposit_reward = np.where(carriers.any(axis=2), -0.1 * to_carrier, -0.1 * to_centroid) + global_reward
        return np.concatenate([collector_reward, deposit_reward], axis=1)

    def observe(self) -> np.ndarray:
        """Mirrors ``Scenario.observation``, including its sorting by distance."""
        num_envs, n_agents, n_col, n_types = self.num_envs, self.n_agents, self.num_collectors, self.num_types
        pos = self.agent_pos
        one_hot = np.eye(n_types + 1)[:, :n_types]
        holding_code = one_hot[self.holding]
        agent_table = np.zeros((num_envs, n_agents, 4 + 2 * n_types))
        agent_table[:, :, 0:2] = pos
        agent_table[:, :, 2:4] = self.agent_vel
        agent_table[:, n_col:, 4 : 4 + n_types] = np.eye(n_types)
        agent_table[:, :n_col, 4 + n_types :] = holding_code

        distance = pair_distance(pos, pos)
        distance[:, np.arange(n_agents), np.arange(n_agents)] = -1.0
        others = np.argsort(distance, axis=2, kind="stable")[:, :, 1:]
        other_tokens = gather_rows(agent_table, others)
        subtract_position(other_tokens, pos)

        alive = self.treasure_alive
        key = np.where(alive[:, None, :], pair_distance(pos, self.landmark_pos), 1e6)
        treasures = np.argsort(key, axis=2, kind="stable")
        treasure_table = np.concatenate([self.landmark_pos, one_hot[self.treasure_type]], axis=2)
        treasure_tokens = gather_rows(treasure_table, treasures)
        subtract_position(treasure_tokens, pos)
        shown = np.arange(self.n_landmarks) < alive.sum(axis=1)[:, None]  # gone treasures sort last
        treasure_tokens = np.where(shown[:, None, :, None], treasure_tokens, 0.0)

        obs = np.zeros((num_envs, n_agents, self.obs_dim), dtype=np.float32)
        obs[:, :, 0:4] = agent_table[:, :, 0:4]
        obs[:, :n_col, 4 : 4 + n_types] = holding_code
        for rows, start in ((slice(0, n_col), 4 + n_types), (slice(n_col, n_agents), 4)):
            middle = start + other_tokens.shape[2] * other_tokens.shape[3]
            obs[:, rows, start:middle] = other_tokens[:, rows].reshape(num_envs, -1, middle - start)
            obs[:, rows, middle : middle + treasure_tokens[0, 0].size] = treasure_tokens[:, rows].reshape(
                num_envs, -1, treasure_tokens[0, 0].size
            )
        return obs


def gather_rows(table: np.ndarray, index: np.ndarray) -> np.ndarray:
    """``table[e, index[e, i, k]]`` for a (E, n, F) table and (E, a, m) indices → (E, a, m, F), as one ``np.take``."""
    num_envs, n = table.shape[:2]
    offset = (n * np.arange(num_envs))[:, None, None]
    return np.take(table.reshape(num_envs * n, -1), index + offset, axis=0)


def subtract_position(tokens: np.ndarray, pos: np.ndarray) -> None:
    """Make the first two features of (E, n, m, F) tokens relative to the observer: ``p − p_i`` (in place,
    one coordinate plane at a time, which is several times faster than on the trailing pair)."""
    tokens[..., 0] -= pos[:, :, None, 0]
    tokens[..., 1] -= pos[:, :, None, 1]
