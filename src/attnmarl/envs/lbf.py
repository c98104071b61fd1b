"""Level-Based Foraging (LBF): the reference environment, an exact batched port, and entity tokens.

LBF is the grid world in the multi-agent RL form of Christianos, Schäfer and Albrecht (2020, *Shared Experience
Actor-Critic for Multi-Agent Reinforcement Learning*, the SEAC paper; the game goes back to Albrecht and
Ramamoorthy, 2013), benchmarked by Papoudakis, Christianos, Schäfer and Albrecht (2021, *Benchmarking
Multi-Agent Deep Reinforcement Learning Algorithms in Cooperative Tasks*). Chapter 12 uses it as its second
benchmark. The reference is their package ``lbforaging`` (MIT licence,
``ForagingEnv`` in ``lbforaging/foraging/environment.py``; version 2.0.0, pinned in ``requirements.txt`` as
a test-only dependency: only :func:`make_lbf_reference` imports it, when called).

The rules, read from ``ForagingEnv`` (2.0.0), are what :class:`BatchedForaging` ports. Cells are ``(row, col)``;
LBF calls them ``(y, x)``; north is row − 1.

- **Actions** ``NONE, NORTH, SOUTH, WEST, EAST, LOAD`` (0 … 5). A move is valid if it stays on the grid and
  its cell holds no food (other players do not make it invalid); ``LOAD`` is valid next to a food (the four
  neighbours). An invalid action becomes ``NONE``.
- **Moves and collisions**: each player aims at a cell (its own for ``NONE`` and ``LOAD``). A player moves
  exactly when no other player aims at the same cell, so two players moving into one cell both stay, a
  player cannot enter the cell of one who stays, and two players may swap cells. (Side effect of the rule,
  kept: if A moves into B's cell while B is blocked, A and B end up sharing a cell.)
- **Loading**: a food is collected when the players that chose ``LOAD`` next to it have levels summing to at
  least its level. Each of them is rewarded ``level · food_level``, divided by ``(sum of their levels) ·
  (sum of all food levels spawned this episode)`` when ``normalize_reward`` (the default), so a team's
  rewards over an episode add up to the share of the food collected. Loaders that fail each get
  ``−penalty``. The reference processes loaders in the order of a Python ``set`` of player objects (by
  memory address); that order cannot change the outcome, because the spawn rule below never puts one
  player next to two foods (the port checks this on every state it copies).
- **Episode end**: when no food is left, or at ``max_episode_steps`` steps (the reference reports both as
  ``done`` and never ``truncated``).
- **Sight** (partial observability): a player sees the foods within ``sight`` cells in both directions (the
  ``(2·sight + 1)²`` square around it, cut at the walls) and writes every position in the frame of that cut
  square's north-west corner, ``(max(row − sight, 0), max(col − sight, 0))``. It sees another player when
  that player's position in this frame lies in ``[0, 2·sight]`` on both axes — near the north and west walls
  this reaches further south and east than the foods it sees (kept as is).
- **Observation** (the vector one, ``grid_observation=False``, with levels): ``max_num_food`` triples
  ``(y, x, level)`` of the seen foods in row-major order, then one triple per player: itself first, then the
  players it sees in index order; empty slots are ``(−1, −1, 0)``. Float32, length ``3·(foods + players)``.
- **Spawn** (``reset``): players first, then food, by rejection sampling. Each player draws cells uniformly
  until one holds no player (up to 1000 draws; the cells of players not yet placed *this* episode still
  count, with their positions of the last episode), then a level uniform in 1 … 2. Food is drawn in rows and
  columns 1 … size − 2 (never at a wall), rejected next to another food (the 3×3 square) or two cells from
  one in a straight line, or on a player, with 1000 draws for all foods together; its level is uniform from
  1 to the sum of the three lowest player levels, or exactly that sum with ``force_coop`` (then, with two
  players or more, none can lift a food alone).

:class:`BatchedForaging` runs ``num_envs`` games as arrays with these rules; its own spawn runs the same
rejection sampling on numpy's ``Generator`` (so the same distribution, not the same draws). The parity tests
copy a reference state into it (:meth:`BatchedForaging.load_state`) and step both: observations, rewards and
ends are equal, exactly. :func:`lbf_tokens` cuts an observation into entity tokens with a mask.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from ..checks import check_array, check_bool, check_index, check_int, check_real, check_seed
from ..costs import check_numbers

ACTIONS: tuple[str, ...] = ("NONE", "NORTH", "SOUTH", "WEST", "EAST", "LOAD")
"""LBF's actions (``lbforaging.foraging.environment.Action``), in the order of their values 0 … 5."""

N_ACTIONS = len(ACTIONS)
LOAD = ACTIONS.index("LOAD")

MOVES = np.array([[0, 0], [-1, 0], [1, 0], [0, -1], [0, 1], [0, 0]])
"""``(d_row, d_col)`` of each action: the cell a player aims at, relative to its own."""

MIN_PLAYER_LEVEL, MAX_PLAYER_LEVEL, MIN_FOOD_LEVEL = 1, 2, 1
"""The levels of every environment ``lbforaging`` 2.0.0 registers (``lbforaging/__init__.py``); the highest food
level is the sum of the three lowest player levels (``max_food_level=None``)."""

SPAWN_ATTEMPTS = 1000
"""Draws the reference's spawn allows: per player, and for all foods of an episode together."""


def make_lbf_reference(players: int, size: int, foods: int, sight: int, max_steps: int, seed: int,
                       force_coop: bool = False, penalty: float = 0.0, normalize_reward: bool = True) -> Any:
    """The reference ``lbforaging.foraging.ForagingEnv`` with the package's registered settings — player levels
    1 … 2, food levels from 1, vector observations with levels — on a ``size × size`` grid, its generator
    seeded with ``seed`` (call ``reset()`` to start; ``reset(seed=k)`` reseeds it). ``"Foraging-2s-10x10-3p-3f-v3"``
    is ``make_lbf_reference(3, 10, 3, sight=2, max_steps=50, seed=...)``. Arguments are checked as the port
    checks them (:func:`check_lbf_arguments`)."""
    try:
        from lbforaging.foraging import ForagingEnv  # imported only here: the port and the tokens do not need it
    except ImportError:
        raise ImportError("Level-Based Foraging's reference is the package lbforaging: pip install "
                          "lbforaging==2.0.0") from None

    kwargs = check_lbf_arguments(players, size, foods, sight, max_steps, force_coop, penalty, normalize_reward)
    env = ForagingEnv(players=kwargs["players"], min_player_level=MIN_PLAYER_LEVEL, max_player_level=MAX_PLAYER_LEVEL,
                      min_food_level=MIN_FOOD_LEVEL, max_food_level=None,
                      field_size=(kwargs["size"], kwargs["size"]),
                      max_num_food=kwargs["foods"], sight=kwargs["sight"], max_episode_steps=kwargs["max_steps"],
                      force_coop=kwargs["force_coop"], normalize_reward=kwargs["normalize_reward"],
                      grid_observation=False, observe_agent_levels=True, penalty=kwargs["penalty"])
    env.seed(check_seed(seed))
    return env


def check_lbf_arguments(players: Any, size: Any, foods: Any, sight: Any, max_steps: Any, force_coop: Any = False,
                        penalty: Any = 0.0, normalize_reward: Any = True) -> dict[str, Any]:
    """The arguments of an LBF game as Python values, or ``ValueError`` naming the bad one: counts are positive
    integers, the grid at least 3 × 3 (food spawns off the walls) with room for every player (the reference
    leaves a player it cannot place without a position, and fails), ``penalty`` a finite number >= 0."""
    size = check_int("size", size, minimum=3)
    players = check_int("players", players)
    if players > size * size:
        raise ValueError(f"players = {players} do not fit on a {size} x {size} grid ({size * size} cells)")
    return {"players": players, "size": size, "foods": check_int("foods", foods), "sight": check_int("sight", sight),
            "max_steps": check_int("max_steps", max_steps), "force_coop": check_bool("force_coop", force_coop),
            "penalty": check_real("penalty", penalty, low=0.0),
            "normalize_reward": check_bool("normalize_reward", normalize_reward)}


class BatchedForaging:
    """``num_envs`` LBF games stepped at once as numpy arrays, with the reference's rules (module docstring).

    State: ``position`` (E, m, 2) the players' cells ``(row, col)``, ``level`` (E, m), ``field`` (E, size, size)
    the food level in each cell (0 = none), ``food_spawned`` (E,) the sum of the levels spawned (the reward's
    normaliser), ``steps`` (E,), and ``food_cells`` (E, foods, 2) the cells where food spawned, in row-major
    order (``−1`` for a food that did not fit), which the observation reads instead of searching the grid.

    The arrays follow the book's ports (:mod:`attnmarl.envs.batched`): ``reset()`` → ``obs`` float32
    (E, m, 3·(foods + m)); ``step(actions)`` → ``(obs, rewards, terminated, truncated, info)`` with finished games
    restarted and their last observation in ``info["final_obs"]``. ``terminated`` = every food collected,
    ``truncated`` = the step limit with food left; the reference's ``done`` is ``terminated | truncated``.
    """

    def __init__(self, num_envs: int, players: int, size: int, foods: int, sight: int, max_steps: int = 50,
                 force_coop: bool = False, penalty: float = 0.0, normalize_reward: bool = True,
                 seed: int = 0) -> None:
        self.kwargs = check_lbf_arguments(players, size, foods, sight, max_steps, force_coop, penalty,
                                          normalize_reward)
        self.num_envs = check_int("num_envs", num_envs)
        self.n_agents, self.size, self.n_foods = self.kwargs["players"], self.kwargs["size"], self.kwargs["foods"]
        self.sight, self.max_steps = self.kwargs["sight"], self.kwargs["max_steps"]
        self.obs_dim = 3 * (self.n_foods + self.n_agents)
        e, m = self.num_envs, self.n_agents
        check_numbers(f"the grids of {e:,} LBF games", ("num_envs", e), ("size", self.size + 2),
                      ("size", self.size + 2), itemsize=8, hint=" (fewer games or a smaller grid)")
        check_numbers(f"the observations of {e:,} LBF games", ("num_envs", e), ("players", m),
                      ("obs_dim", self.obs_dim), ("players", m), hint=" (fewer games or players)")
        self.rng = np.random.default_rng(check_seed(seed))
        self.position = np.zeros((e, m, 2), dtype=np.int64)
        self.level = np.zeros((e, m), dtype=np.int64)
        self.placed = np.zeros((e, m), dtype=bool)
        """Whether a player has a cell: not before its first spawn (the reference's ``position`` is None)."""
        self.framed = np.zeros((e, self.size + 2, self.size + 2), dtype=np.int64)
        """The grids with a frame of empty cells around them: neighbours are looked up without bounds checks."""
        self.field = self.framed[:, 1:-1, 1:-1]  # a view: writing the field writes the framed grid
        self.food_spawned = np.zeros(e, dtype=np.int64)
        self.food_cells = np.full((e, self.n_foods, 2), -1, dtype=np.int64)
        self.steps = np.zeros(e, dtype=np.int64)
        self.reset()

    def __repr__(self) -> str:
        args = ", ".join(f"{key}={value!r}" for key, value in self.kwargs.items())
        return f"{type(self).__name__}(num_envs={self.num_envs}, {args})"

    def reset(self, seed: int | None = None) -> np.ndarray:
        """Start a new episode in every game (reseeding the generator if ``seed`` is given); returns ``obs``. As in
        the reference, the players' cells of the last episode take part in the spawn, so a reseeded reset repeats
        its games only from the same state."""
        if seed is not None:
            self.rng = np.random.default_rng(check_seed(seed))
        self._reset_envs(np.arange(self.num_envs))
        return self.observe()

    def step(self, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, dict[str, Any]]:
        """One ``ForagingEnv.step`` in every game with ``actions`` (E, m), integers 0 … 5 (:data:`ACTIONS`):
        invalid actions become ``NONE``, players move unless they collide, loads are resolved, the step is
        counted, and finished games restart. Rewards are float64 (E, m)."""
        actions = self._check_actions(actions)
        food = self._neighbour_food()
        chosen = np.take_along_axis(self._valid(food), actions[..., None], axis=-1)[..., 0]
        actions = np.where(chosen, actions, 0)
        target = self.position + MOVES[actions]
        cell = target[..., 0] * self.size + target[..., 1]
        alone = (cell[:, :, None] == cell[:, None]).sum(-1) == 1
        self.position = np.where(alone[..., None], target, self.position)
        rewards = self._load(actions == LOAD, food)  # loaders do not move: the food next to them is as before
        self.steps += 1
        terminated = ~self.field.any(axis=(1, 2))
        truncated = ~terminated & (self.steps >= self.max_steps)
        obs = self.observe()
        final_obs = obs
        done = terminated | truncated
        if done.any():
            self._reset_envs(np.flatnonzero(done))
            obs = self.observe()
        return obs, rewards, terminated, truncated, {"final_obs": final_obs}

    def valid_actions(self) -> np.ndarray:
        """Which actions each player may take now (E, m, 6) bool (``ForagingEnv._is_valid_action``)."""
        return self._valid(self._neighbour_food())

    def observe(self) -> np.ndarray:
        """Every player's observation (E, m, 3·(foods + m)) float32 (``ForagingEnv._make_gym_obs``): the seen
        foods and players are written into their slots, every other slot is LBF's ``(−1, −1, 0)``."""
        e, m, f, sight = self.num_envs, self.n_agents, self.n_foods, self.sight
        obs = np.empty((e, m, f + m, 3), dtype=np.float32)
        obs[...] = UNSEEN
        row, col = self.position[..., 0], self.position[..., 1]  # (E, m)
        top, left = np.maximum(row - sight, 0), np.maximum(col - sight, 0)  # the corner of each player's view
        food_row, food_col = self.food_cells[..., 0], self.food_cells[..., 1]  # (E, F)
        level = self.framed[np.arange(e)[:, None], food_row + 1, food_col + 1]  # an empty slot (−1) reads the frame: 0
        near_row = np.abs(food_row[:, None] - row[..., None]) <= sight  # (E, m, F)
        near_col = np.abs(food_col[:, None] - col[..., None]) <= sight
        seen = near_row & near_col & (level[:, None] > 0)
        slot = seen.cumsum(-1) - 1  # seen foods in row-major order
        g, i, k = np.nonzero(seen)
        obs[g, i, slot[g, i, k]] = np.stack([food_row[g, k] - top[g, i], food_col[g, k] - left[g, i],
                                             level[g, k]], -1)
        y, x = row[:, None] - top[..., None], col[:, None] - left[..., None]  # (E, i, j): j in i's frame
        seen = (y >= 0) & (y <= 2 * sight) & (x >= 0) & (x <= 2 * sight)
        itself = np.eye(m, dtype=bool)
        slot = np.where(itself, 0, np.cumsum(seen & ~itself, -1))  # itself first, then the others it sees
        g, i, j = np.nonzero(seen)
        obs[g, i, f + slot[g, i, j]] = np.stack([y[g, i, j], x[g, i, j], self.level[g, j]], -1)
        return obs.reshape(e, m, 3 * (f + m))

    def load_state(self, slot: int, reference_env: Any) -> None:
        """Copy a reference game (:func:`make_lbf_reference`, any wrapper; its ``unwrapped`` env is read) into game
        ``slot``: positions, levels, food, the food spawned and the step count. From then on the same actions
        give the same observations, rewards and ends. ``ValueError`` if its settings differ from this port's, or
        if its state is one the reference's spawn never makes (food at a wall, a player next to two foods)."""
        slot = check_index("slot", slot, self.num_envs)
        raw = getattr(reference_env, "unwrapped", reference_env)
        if not hasattr(raw, "players") or not hasattr(raw, "field"):
            raise ValueError(f"reference_env must be an lbforaging ForagingEnv (make_lbf_reference); "
                             f"got {type(reference_env).__name__}")
        theirs = {"players": len(raw.players), "size": raw.field.shape[0], "foods": raw.max_num_food,
                  "sight": raw.sight, "max_steps": raw._max_episode_steps, "force_coop": raw.force_coop,
                  "penalty": raw.penalty, "normalize_reward": raw._normalize_reward}
        if theirs != self.kwargs or raw.field.shape != (self.size, self.size):
            raise ValueError(f"reference_env is an LBF game with {theirs}; this port plays {self.kwargs}")
        levels = (set(raw.min_player_level), set(raw.max_player_level), set(raw.min_food_level), raw.max_food_level)
        if levels != ({MIN_PLAYER_LEVEL}, {MAX_PLAYER_LEVEL}, {MIN_FOOD_LEVEL}, None):
            raise ValueError("reference_env draws other levels than this port (players 1 … 2, food from 1 to the sum "
                             "of the three lowest player levels): build it with make_lbf_reference")
        if raw._grid_observation or not raw._observe_agent_levels:
            raise ValueError("reference_env must observe vectors with levels (grid_observation=False, "
                             "observe_agent_levels=True), as this port does")
        if any(player.position is None for player in raw.players):
            raise ValueError("reference_env has players without a cell: reset it first")
        field = np.asarray(raw.field, dtype=np.int64)
        positions = np.array([p.position for p in raw.players])
        self._check_positions(positions)
        check_reachable(field, positions)
        self.position[slot] = [player.position for player in raw.players]
        self.level[slot] = [player.level for player in raw.players]
        self.placed[slot] = True
        self.field[slot] = field
        self.food_spawned[slot] = raw._food_spawned
        self.steps[slot] = raw.current_step
        self._list_food(np.array([slot]))

    def _check_positions(self, positions: np.ndarray) -> None:
        """Raise ``ValueError`` unless ``positions`` (m, 2) are (row, col) cells on the grid: LBF never moves a player
        off it (players may share a cell: a crowded reference game makes that, and the port follows it)."""
        if positions.shape != (self.n_agents, 2) or not np.issubdtype(positions.dtype, np.integer):
            raise ValueError(f"reference_env's player positions must be {self.n_agents} (row, col) integer pairs; "
                             f"got {positions.tolist()}")
        off = [tuple(p) for p in positions.tolist() if not (0 <= p[0] < self.size and 0 <= p[1] < self.size)]
        if off:
            raise ValueError(f"reference_env has players off the {self.size} x {self.size} grid, at {off}")

    # ----------------------------------------------------------------------------------------
    # inside a step
    # ----------------------------------------------------------------------------------------

    def _check_actions(self, actions: Any) -> np.ndarray:
        """``actions`` as an int64 array (E, m) of values 0 … 5, or ``ValueError`` naming the problem."""
        actions = np.asarray(actions)
        expected = (self.num_envs, self.n_agents)
        if actions.shape != expected:
            raise ValueError(f"actions must have shape (num_envs, players) = {expected}, got {actions.shape}")
        if not np.issubdtype(actions.dtype, np.integer):
            raise ValueError(f"actions must be integers (LBF's actions 0 … 5), got dtype {actions.dtype}")
        if actions.size and (actions.min() < 0 or actions.max() >= N_ACTIONS):
            raise ValueError(f"actions must lie in [0, {N_ACTIONS - 1}] ({', '.join(ACTIONS)}), got values in "
                             f"[{actions.min()}, {actions.max()}]")
        return actions.astype(np.int64)

    def _neighbour_food(self) -> np.ndarray:
        """The food level in each player's four neighbours (E, m, 4) — north, south, west, east — 0 off the grid."""
        neighbours = self.position[:, :, None] + MOVES[1:5] + 1  # (E, m, 4, 2) in the framed grid
        return self.framed[np.arange(self.num_envs)[:, None, None], neighbours[..., 0], neighbours[..., 1]]

    def _valid(self, food: np.ndarray) -> np.ndarray:
        """Valid actions (E, m, 6) given the food next to each player (:meth:`_neighbour_food`): ``NONE`` always; a
        move that stays on the grid into a cell without food; ``LOAD`` next to a food."""
        row, col, last = self.position[..., 0], self.position[..., 1], self.size - 1
        moves = np.stack([row > 0, row < last, col > 0, col < last], axis=-1) & (food == 0)
        load = (food > 0).any(-1, keepdims=True)
        return np.concatenate([np.ones_like(load), moves, load], axis=-1)

    def _load(self, loaders: np.ndarray, food: np.ndarray) -> np.ndarray:
        """Resolve the loads (the ``while loading_players`` loop of ``ForagingEnv.step``) and return the rewards.

        ``food`` (E, m, 4) is the food next to each player. Each loader has exactly one food next to it (a valid
        ``LOAD``, and never two: :func:`check_reachable`); the players loading one food are those whose food is
        that cell. It is collected if their levels sum to at least its level."""
        side = (food > 0).argmax(-1)  # the one neighbour with food
        cell = self.position + MOVES[1:5][side]  # (E, m, 2)
        food_level = np.take_along_axis(food, side[..., None], -1)[..., 0]
        index = np.where(loaders, cell[..., 0] * self.size + cell[..., 1], -1)
        same = loaders[:, :, None] & (index[:, :, None] == index[:, None])  # (E, m, m): loading the same food
        coalition = (same * self.level[:, None]).sum(-1)  # the sum of the levels loading each loader's food
        lifted = loaders & (coalition >= food_level)
        rewards = np.where(loaders, 0.0 - self.kwargs["penalty"], 0.0)  # 0.0 - 0.0 is +0.0, as in the reference
        gained = (self.level * food_level).astype(np.float64)
        if self.kwargs["normalize_reward"]:
            gained /= np.where(lifted, coalition * self.food_spawned[:, None], 1).astype(np.float64)
        rewards = np.where(lifted, gained, rewards)
        env, player = np.nonzero(lifted)
        self.field[env, cell[env, player, 0], cell[env, player, 1]] = 0
        return rewards

    # ----------------------------------------------------------------------------------------
    # spawn
    # ----------------------------------------------------------------------------------------

    def _reset_envs(self, envs: np.ndarray) -> None:
        """New episodes in games ``envs`` (indices): ``ForagingEnv.reset``'s spawn, on this port's generator."""
        self.field[envs] = 0
        self._spawn_players(envs)
        self._spawn_food(envs)
        self._list_food(envs)
        self.steps[envs] = 0

    def _spawn_players(self, envs: np.ndarray) -> None:
        """``ForagingEnv.spawn_players``: player by player, cells drawn uniformly until one holds no player (the
        players not yet placed this episode still hold last episode's cells), at most :data:`SPAWN_ATTEMPTS`
        draws (a player that gets none keeps its cell and level); then a level uniform in 1 … 2."""
        for k in range(self.n_agents):
            pending = envs
            for _ in range(SPAWN_ATTEMPTS):
                if not pending.size:
                    break
                cell = self.rng.integers(0, self.size, (pending.size, 2))
                taken = (self.placed[pending] & (self.position[pending] == cell[:, None]).all(-1)).any(-1)
                free = pending[~taken]
                self.position[free, k] = cell[~taken]
                self.level[free, k] = self.rng.integers(MIN_PLAYER_LEVEL, MAX_PLAYER_LEVEL + 1, free.size)
                self.placed[free, k] = True
                pending = pending[taken]

    def _spawn_food(self, envs: np.ndarray) -> None:
        """``ForagingEnv.spawn_food``: cells drawn uniformly in rows and columns 1 … size − 2, refused next to a
        food (3×3), two cells from one in a straight line, or on a player; :data:`SPAWN_ATTEMPTS` draws for all
        foods of a game together. Levels uniform from 1 (or, with ``force_coop``, from the highest level) to the
        sum of the three lowest player levels."""
        highest = np.sort(self.level[envs], axis=1)[:, :3].sum(1)
        lowest = highest if self.kwargs["force_coop"] else np.full_like(highest, MIN_FOOD_LEVEL)
        count = np.zeros(envs.size, dtype=np.int64)
        pending = np.arange(envs.size)
        for _ in range(SPAWN_ATTEMPTS):
            pending = pending[count[pending] < self.n_foods]
            if not pending.size:
                break
            game = envs[pending]
            cell = self.rng.integers(1, self.size - 1, (pending.size, 2))
            around = cell[:, None] + SPAWN_CLEARANCE + 1  # (n, 13, 2) in the framed grid (food is never at a wall)
            crowded = (self.framed[game[:, None], around[..., 0], around[..., 1]] > 0).any(-1)
            on_player = (self.placed[game] & (self.position[game] == cell[:, None]).all(-1)).any(-1)
            ok = ~crowded & ~on_player
            chosen = pending[ok]
            self.field[envs[chosen], cell[ok, 0], cell[ok, 1]] = self.rng.integers(lowest[chosen], highest[chosen] + 1)
            count[chosen] += 1
        self.food_spawned[envs] = self.field[envs].sum((1, 2))

    def _list_food(self, envs: np.ndarray) -> None:
        """Fill ``food_cells`` of games ``envs`` from their grids: the food cells in row-major order (``np.nonzero``'s,
        as the reference's observation lists them), ``−1`` in the slots left empty."""
        game, row, col = np.nonzero(self.field[envs])
        slot = np.arange(game.size) - np.searchsorted(game, game)
        self.food_cells[envs] = -1
        self.food_cells[envs[game], slot] = np.stack([row, col], -1)


SPAWN_CLEARANCE = np.array([(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1)] + [(-2, 0), (2, 0), (0, -2), (0, 2)])
"""The cells that must hold no food for a food to spawn, relative to it: ``ForagingEnv.spawn_food``'s
``neighborhood(row, col)`` (the 3×3 square, the cell itself included) and ``neighborhood(row, col, distance=2,
ignore_diag=True)`` (the row and column up to two cells away)."""


def check_reachable(field: np.ndarray, position: np.ndarray) -> None:
    """``ValueError`` unless a grid ``field`` (size, size) with players at ``position`` (m, 2) is one that the
    reference's spawn can make and its steps keep: no food on the grid's edge or under a player, and no player
    next to two foods (so the order in which the reference resolves loads cannot matter)."""
    size = field.shape[0]
    if field[[0, -1]].any() or field[:, [0, -1]].any():
        raise ValueError("the reference never spawns food on the grid's edge; this state has some")
    neighbours = np.clip(position[:, None] + MOVES[1:5], 0, size - 1)
    inside = ((position[:, None] + MOVES[1:5] >= 0) & (position[:, None] + MOVES[1:5] < size)).all(-1)
    next_to = ((field[neighbours[..., 0], neighbours[..., 1]] > 0) & inside).sum(-1)
    if (next_to > 1).any():
        raise ValueError(f"players {np.flatnonzero(next_to > 1).tolist()} stand next to two foods, which the "
                         "reference's spawn never allows (its loads would then depend on set order)")
    if (field[position[:, 0], position[:, 1]] > 0).any():
        raise ValueError("a player stands on food, which the reference never allows")


UNSEEN = np.array([-1, -1, 0])
"""An empty observation slot, as the reference writes it: ``(y, x, level) = (−1, −1, 0)``."""


# --------------------------------------------------------------------------------------------
# entity tokens
# --------------------------------------------------------------------------------------------


def lbf_tokens(obs: np.ndarray, foods: int) -> tuple[np.ndarray, np.ndarray]:
    """LBF observations ``(..., 3·(foods + m))`` cut into entity tokens ``(..., n_tokens, 3)`` and a key mask
    ``(..., n_tokens)`` (True = takes part, as :func:`attnmarl.attention.masked_softmax` reads it), with
    ``n_tokens = 1 + foods + (m − 1)`` (:func:`lbf_token_names`). From a port's ``obs`` (E, m, d_o): tokens
    (E, m, n_tokens, 3).

    - the **self** token is ``(x, y, level)`` as LBF shows the player to itself: its place in its own view,
      ``(min(col, sight), min(row, sight))``, which tells how near the west and north walls it stands;
    - a **food** slot or a **player** slot (the other players, in the order LBF lists those seen) is
      ``(x − x_self, y − y_self, level)``: relative to the player, so the tokens do not move with it;
    - an empty slot (LBF writes ``(−1, −1, 0)``: nothing seen there) is masked out and its token is zeros.

    LBF lists seen entities first, so slots are ranks, not identities (slot k holds the k-th food seen in
    row-major order). Nothing is lost: the observation can be rebuilt from the tokens and the mask.
    """
    obs = check_array("obs", obs)
    foods = check_int("foods", foods)
    width = obs.shape[-1] if obs.ndim else 0
    if width % 3 or width // 3 <= foods:
        raise ValueError(f"obs must end in 3 * (foods + players) numbers with foods = {foods} and players >= 1, "
                         f"got shape {obs.shape}")
    triples = obs.reshape(obs.shape[:-1] + (width // 3, 3))
    yx_self = triples[..., foods, :2]
    mask = triples[..., 0] != -1  # LBF's unseen slot
    relative = triples[..., :2] - yx_self[..., None, :]
    tokens = np.concatenate([relative[..., ::-1], triples[..., 2:]], axis=-1)  # (x, y, level)
    tokens[..., foods, :2] = yx_self[..., ::-1]
    tokens = np.where(mask[..., None], tokens, 0).astype(obs.dtype)
    order = [foods, *range(foods), *range(foods + 1, width // 3)]  # self first
    return tokens[..., order, :], mask[..., order]


def lbf_token_names(foods: int, players: int) -> tuple[str, ...]:
    """Names of :func:`lbf_tokens`' tokens, in order: ``self``, ``food 0`` … , ``player 1`` … ``player m−1``
    (slots, in LBF's order: seen entities first)."""
    foods, players = check_int("foods", foods), check_int("players", players)
    return ("self", *(f"food {k}" for k in range(foods)), *(f"player {k}" for k in range(1, players)))
