"""Level-Based Foraging (chapter 12's second benchmark): the batched port against ``lbforaging``, tokens, baselines.

The port must replay the reference exactly — observations, rewards and ends equal, not close — over whole
episodes from copied states (:meth:`BatchedForaging.load_state`), at 3, 6 and 9 players and on crowded grids
where coalitions, failed loads and collisions happen often; hand-built states pin each rule down. Its own spawn
must match the reference's in distribution (the baselines score the same on both), tokens must say what the
observation says, and bad input must be refused.
"""
from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from lbforaging.foraging.environment import Action

from attnmarl.envs.lbf import BatchedForaging, check_reachable, lbf_token_names, lbf_tokens, make_lbf_reference
from attnmarl.envs.lbf_baselines import BASELINES_PATH, SCENARIOS, forager_actions, teams

SIGHT = 2
NUM_ENVS, SLOT = 3, 1


def reference_step(env, actions: np.ndarray) -> tuple[np.ndarray, np.ndarray, bool]:
    """One reference step: stacked observations (m, d_o), rewards (m,) float64 and ``done``."""
    obs, rewards, done, truncated, _ = env.step([int(a) for a in actions])
    assert truncated is False  # the reference reports every end as done
    return np.stack(obs), np.array(rewards, dtype=np.float64), bool(done)


def mixed_actions(obs: np.ndarray, rng: np.random.Generator, foods: int) -> np.ndarray:
    """The scripted forager's actions (which bring players together at foods), one in four replaced at random
    (which breaks its stalls and adds collisions and loads it would not try)."""
    actions = forager_actions(obs, rng, foods)
    random = rng.random(actions.shape) < 0.25
    return np.where(random, rng.integers(0, 6, actions.shape), actions)


def reference_state(env) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The reference's player cells (m, 2), a copy of its food grid, and its valid actions (m, 6) bool."""
    valid = [[Action(a) in env._valid_actions[player] for a in range(6)] for player in env.players]
    return np.array([p.position for p in env.players]), env.field.copy(), np.array(valid)


def events(env, actions: np.ndarray, before: tuple[np.ndarray, np.ndarray, np.ndarray], rewards: np.ndarray) -> Counter:
    """What a reference step did, read from the reference alone (``before`` is :func:`reference_state` before the
    step): ``collisions`` (a valid move not made), ``coalitions`` (a food collected by two or more players),
    ``failed_loads`` (a valid load that collected nothing), ``shared_cells`` (two players on one cell)."""
    (cells, field, valid), (after, field_after, _) = before, reference_state(env)
    chosen = valid[np.arange(len(actions)), actions]
    loads, moves = chosen & (actions == 5), chosen & (actions >= 1) & (actions <= 4)
    collected = int((field > 0).sum() - (field_after > 0).sum())
    return Counter(collisions=int((moves & (after == cells).all(-1)).sum()),
                   coalitions=int((loads & (rewards > 0)).sum() > collected),
                   failed_loads=int((loads & (rewards <= 0)).sum()),
                   shared_cells=int(len({tuple(p) for p in after}) < len(after)))


def play_in_parity(players: int, size: int, foods: int, episodes: int, seed: int, max_steps: int = 50,
                   **kwargs) -> Counter:
    """Copy ``episodes`` reference episodes (reset with seeds seed·1000 + k, then k mod 4 random steps) into slot
    :data:`SLOT` of a port and step both with the same actions to the end; every step's observations, valid
    actions, rewards and ends must be equal.
    The port's other slots play their own games alongside; finished slots restart and the others run on."""
    env = make_lbf_reference(players, size, foods, SIGHT, max_steps, seed, **kwargs)
    port = BatchedForaging(NUM_ENVS, players, size, foods, SIGHT, max_steps, seed=seed, **kwargs)
    rng = np.random.default_rng(seed)
    counts: Counter = Counter()
    for k in range(episodes):
        ref_obs, done = np.stack(env.reset(seed=seed * 1000 + k)[0]), False
        for _ in range(k % 4):  # some episodes are copied after a few steps of the reference alone
            ref_obs, _, done = reference_step(env, rng.integers(0, 6, players))
        if done:
            continue
        port.load_state(SLOT, env)
        obs = port.observe()
        np.testing.assert_array_equal(obs[SLOT], ref_obs)
        while not done:
            actions = mixed_actions(obs, rng, foods)
            before, steps_before = reference_state(env), port.steps.copy()
            np.testing.assert_array_equal(port.valid_actions()[SLOT], before[2])
            ref_obs, ref_rewards, done = reference_step(env, actions[SLOT])
            obs, rewards, terminated, truncated, info = port.step(actions)
            assert obs.dtype == np.float32 and obs.shape == (NUM_ENVS, players, 3 * (foods + players))
            np.testing.assert_array_equal(info["final_obs"][SLOT], ref_obs)
            np.testing.assert_array_equal(rewards[SLOT], ref_rewards)
            assert bool(terminated[SLOT] or truncated[SLOT]) == done
            assert bool(terminated[SLOT]) == (not env.field.any())
            ended = terminated | truncated
            assert not (terminated & truncated).any()
            np.testing.assert_array_equal(truncated, ~terminated & (steps_before + 1 >= max_steps))
            np.testing.assert_array_equal(port.steps, np.where(ended, 0, steps_before + 1))
            np.testing.assert_array_equal(obs[~ended], info["final_obs"][~ended])
            counts += events(env, actions[SLOT], before, ref_rewards)
            counts["steps"] += 1
        counts["cleared" if not env.field.any() else "step_limit"] += 1
    return counts


@pytest.mark.parametrize(("players", "size", "foods"), [(3, 10, 3), (6, 14, 6), (9, 17, 9)])
def test_port_replays_the_reference(players: int, size: int, foods: int) -> None:
    """The book's three scenarios (:data:`SCENARIOS`): equal at every step of 12 episodes, which load food."""
    counts = play_in_parity(players, size, foods, episodes=12, seed=players)
    assert counts["steps"] >= 12 * 20 and counts["collisions"] > 0 and counts["coalitions"] > 0


@pytest.mark.parametrize(("players", "size", "foods", "kwargs"), [
    (6, 6, 2, {}),
    (9, 7, 3, {}),
    (4, 6, 2, {"force_coop": True, "penalty": 0.1}),
    (5, 7, 3, {"normalize_reward": False, "penalty": 0.25}),
])
def test_port_replays_crowded_games(players: int, size: int, foods: int, kwargs: dict) -> None:
    """Crowded grids, where everything happens: coalitions, loads that fail (a food one player cannot lift, and
    with ``force_coop`` none can), collisions, players sharing a cell, and both ends — every food collected,
    and the step limit (20 steps here)."""
    counts = play_in_parity(players, size, foods, episodes=15, seed=11, max_steps=20, **kwargs)
    for event in ("coalitions", "failed_loads", "collisions", "cleared", "step_limit"):
        assert counts[event] > 0, (event, counts)
    if players >= 6:
        assert counts["shared_cells"] > 0, counts


# --------------------------------------------------------------------------------------------
# hand-built states: each rule on its own
# --------------------------------------------------------------------------------------------


def built(players: list[tuple[int, int, int]], food: dict[tuple[int, int], int], size: int = 7, foods: int = 2,
          max_steps: int = 50, **kwargs):
    """A reference game in a given state — players ``(row, col, level)``, ``food`` {cell: level} — and a port of
    one game loaded from it."""
    env = make_lbf_reference(len(players), size, foods, SIGHT, max_steps, seed=0, **kwargs)
    env.reset(seed=0)
    env.field[:] = 0
    for cell, level in food.items():
        env.field[cell] = level
    for player, (row, col, level) in zip(env.players, players):
        player.position, player.level = (row, col), level
    env._food_spawned = env.field.sum()
    env._gen_valid_moves()
    port = BatchedForaging(1, len(players), size, foods, SIGHT, max_steps, **kwargs)
    port.load_state(0, env)
    np.testing.assert_array_equal(port.observe()[0], np.stack(env._make_gym_obs()))
    return env, port


def step_both(env, port, actions: list[int]) -> tuple[np.ndarray, np.ndarray, bool]:
    """Step both with ``actions``; they must agree; returns the reference's (positions, rewards, done)."""
    ref_obs, ref_rewards, done = reference_step(env, np.array(actions))
    _, rewards, terminated, truncated, info = port.step(np.array([actions]))
    np.testing.assert_array_equal(info["final_obs"][0], ref_obs)
    np.testing.assert_array_equal(rewards[0], ref_rewards)
    assert bool(terminated[0] or truncated[0]) == done
    return np.array([p.position for p in env.players]), ref_rewards, done


def test_a_coalition_lifts_what_neither_can_alone() -> None:
    """A level-3 food between a level-1 and a level-2 player: loading alone fails, together it is collected, and
    each is paid in proportion to its level, normalised by the levels spawned (3 + 1 = 4)."""
    env, port = built([(3, 2, 1), (3, 4, 2)], {(3, 3): 3, (1, 5): 1})
    _, rewards, _ = step_both(env, port, [5, 0])
    assert rewards.tolist() == [0.0, 0.0] and env.field[3, 3] == 3
    _, rewards, _ = step_both(env, port, [0, 5])
    assert env.field[3, 3] == 3
    _, rewards, done = step_both(env, port, [5, 5])
    assert env.field[3, 3] == 0 and not done
    assert rewards.tolist() == [1 * 3 / (3 * 4), 2 * 3 / (3 * 4)]


def test_a_failed_load_pays_the_penalty() -> None:
    """A level-2 player cannot lift a level-3 food: with a penalty it loses it, and the food stays."""
    env, port = built([(3, 2, 2), (5, 5, 1)], {(3, 3): 3}, penalty=0.5)
    _, rewards, _ = step_both(env, port, [5, 5])  # the second player's LOAD is invalid (no food next to it)
    assert rewards.tolist() == [-0.5, 0.0] and env.field[3, 3] == 3


def test_collisions_swaps_and_a_shared_cell() -> None:
    """Two players moving into one cell both stay; two players may swap; a player moving into the cell of one who
    stays stays; one following a player that moves on moves too; and one following a player that is blocked
    ends on its cell (the reference's rule, kept)."""
    env, port = built([(1, 1, 1), (1, 3, 1), (3, 1, 1), (3, 2, 1), (5, 1, 1), (5, 2, 1), (5, 3, 1)], {(3, 5): 1},
                      foods=1)
    positions, _, _ = step_both(env, port, [4, 3, 4, 3, 4, 4, 0])
    assert positions.tolist() == [[1, 1], [1, 3], [3, 2], [3, 1], [5, 2], [5, 2], [5, 3]]
    positions, _, _ = step_both(env, port, [4, 0, 0, 0, 0, 0, 0])  # (1, 2) is free: 0 moves
    assert positions.tolist()[:2] == [[1, 2], [1, 3]]
    positions, _, _ = step_both(env, port, [4, 0, 0, 0, 0, 0, 0])  # into 1, who stays: 0 stays
    assert positions.tolist()[:2] == [[1, 2], [1, 3]]
    positions, _, _ = step_both(env, port, [4, 4, 0, 0, 0, 0, 0])  # 1 moves on, 0 follows
    assert positions.tolist()[:2] == [[1, 3], [1, 4]]


def test_the_episode_ends_when_the_food_is_gone_or_at_the_step_limit() -> None:
    env, port = built([(3, 2, 2)], {(3, 3): 1}, foods=1, max_steps=5)
    _, rewards, done = step_both(env, port, [5])
    assert done and rewards.tolist() == [1.0]  # the only food: all of the team's reward, and the end
    env, port = built([(3, 2, 1)], {(3, 3): 2}, foods=1, max_steps=3)
    for step in range(3):
        _, _, done = step_both(env, port, [5])
        assert done == (step == 2)


def test_sight_near_the_north_wall_reaches_further_for_players_than_for_food() -> None:
    """Sight 2 from row 0: the reference writes positions from the corner of its cut view, so it sees a player
    four rows south (kept, as the reference does) but no food three rows south."""
    env, port = built([(0, 3, 1), (4, 3, 2), (5, 3, 1)], {(3, 1): 1}, foods=1)
    obs = port.observe()[0, 0]  # player 0's
    assert obs[:3].tolist() == [-1, -1, 0]  # the food at (3, 1) is out of sight
    assert obs[3:].tolist() == [0, 2, 1, 4, 2, 2, -1, -1, 0]  # itself, then the player at (4, 3); not (5, 3)


# --------------------------------------------------------------------------------------------
# the port's own spawn
# --------------------------------------------------------------------------------------------


def test_spawn_keeps_the_reference_invariants() -> None:
    """No food on the edge, none next to another or two cells from one in a line, none under a player, and no
    player next to two foods — what makes the order of the reference's loads irrelevant — in 2,000 games."""
    port = BatchedForaging(2000, 9, 7, 4, SIGHT, seed=1)
    for e in range(port.num_envs):
        check_reachable(port.field[e], port.position[e])
        cells = np.argwhere(port.field[e] > 0)
        gaps = np.abs(cells[:, None] - cells[None])
        close = (gaps.max(-1) <= 1) | ((gaps.min(-1) == 0) & (gaps.max(-1) == 2))
        assert close.sum() == len(cells)  # each food is close only to itself
    assert (port.field > 0).sum(axis=(1, 2)).min() >= 1
    np.testing.assert_array_equal(port.food_spawned, port.field.sum(axis=(1, 2)))


@pytest.mark.parametrize("force_coop", [False, True])
def test_food_levels(force_coop: bool) -> None:
    """Food levels run from 1 to the sum of the three lowest player levels — exactly that sum with ``force_coop``,
    so no player lifts a food alone — with the same frequencies on the port as on the reference (4 standard
    errors, 400 resets of each)."""
    env, port = make_lbf_reference(4, 8, 3, SIGHT, 50, 0, force_coop=force_coop), BatchedForaging(
        400, 4, 8, 3, SIGHT, force_coop=force_coop, seed=0)
    spawned = {"reference": [], "port": []}
    for k in range(400):
        env.reset(seed=k)
        levels = sorted(p.level for p in env.players)
        spawned["reference"] += [(level, sum(levels[:3])) for level in env.field[env.field > 0]]
        highest = np.sort(port.level[k])[:3].sum()
        spawned["port"] += [(level, highest) for level in port.field[k][port.field[k] > 0]]
    for drawn in spawned.values():
        food, highest = np.array(drawn).T
        assert (food >= 1).all() and (food <= highest).all() and (not force_coop or (food == highest).all())
    for value in range(1, 7):
        shares = [np.mean(np.array(drawn)[:, 0] == value) for drawn in spawned.values()]
        sem = np.hypot(*(np.sqrt(p * (1 - p) / len(d)) for p, d in zip(shares, spawned.values())))
        assert abs(shares[0] - shares[1]) <= 4 * sem + 1e-12, (value, shares)


def spawn_statistics(position: np.ndarray, level: np.ndarray, field: np.ndarray) -> np.ndarray:
    """Of one spawned game: the foods spawned, their mean row, the players next to a food, the players' mean
    row and level, and the players in the north-west quarter of the grid."""
    size = field.shape[0]
    padded = np.pad(field, 1)
    near = [(padded[r + 1 + dr, c + 1 + dc] > 0) for r, c in position for dr, dc in ((-1, 0), (1, 0), (0, -1), (0, 1))]
    food_rows = np.nonzero(field)[0]
    return np.array([food_rows.size, food_rows.mean() if food_rows.size else 0.0, np.sum(near),
                     position[:, 0].mean(), level.mean(), np.sum((position < size // 2).all(-1))])


def test_spawn_matches_the_reference_in_distribution() -> None:
    """A crowded grid (9 players, 4 foods on 7 × 7), where the food does not always fit in the reference's 1,000
    draws: 600 episodes of each (every reset after the first, so last episode's cells are in play) give the
    same means of :func:`spawn_statistics` within four standard errors."""
    env, port = make_lbf_reference(9, 7, 4, SIGHT, 50, seed=5), BatchedForaging(600, 9, 7, 4, SIGHT, seed=5)
    reference = []
    env.reset()
    for _ in range(600):
        env.reset()
        reference.append(spawn_statistics(np.array([p.position for p in env.players]),
                                          np.array([p.level for p in env.players]), env.field))
    port.reset()
    ported = [spawn_statistics(port.position[e], port.level[e], port.field[e]) for e in range(600)]
    reference, ported = np.array(reference), np.array(ported)
    assert reference[:, 0].min() < 4  # some games get fewer foods than asked for
    sem = np.hypot(reference.std(0, ddof=1), ported.std(0, ddof=1)) / np.sqrt(600)
    assert (np.abs(reference.mean(0) - ported.mean(0)) < 4 * sem).all(), (reference.mean(0), ported.mean(0), sem)


def test_food_gets_a_thousand_draws_in_all() -> None:
    """The reference draws at most 1,000 cells for all the foods of an episode together: asked for 300 foods on a
    30 × 30 grid it places about 109, short of what fits (about 116 with 4,000 draws); the port as many, within
    four standard errors (60 reference episodes, 600 of the port)."""
    env = make_lbf_reference(2, 30, 300, SIGHT, 50, seed=0)
    reference = []
    for k in range(60):
        env.reset(seed=k)
        reference.append((env.field > 0).sum())
    reference = np.array(reference)
    ported = (BatchedForaging(600, 2, 30, 300, SIGHT, seed=0).field > 0).sum(axis=(1, 2))
    sem = np.hypot(reference.std(ddof=1) / np.sqrt(60), ported.std(ddof=1) / np.sqrt(600))
    assert reference.max() < 116 and abs(reference.mean() - ported.mean()) < 4 * sem, (reference.mean(), ported.mean())


def test_players_avoid_last_episodes_cells_while_respawning() -> None:
    """The reference places each player on a cell held by no player, counting the cells that players not yet
    placed held in the last episode. On a 3 × 3 grid with 8 players that forces every player of the next
    episode onto the last cell of the one before it (player 0 onto the free cell); the port must agree."""
    for seed in range(5):
        env = make_lbf_reference(8, 3, 1, SIGHT, 50, seed)
        env.reset(seed=seed)
        port = BatchedForaging(1, 8, 3, 1, SIGHT, seed=seed)
        port.load_state(0, env)
        first = [p.position for p in env.players]
        free = ({(r, c) for r in range(3) for c in range(3)} - set(first)).pop()
        env.reset()
        port.reset()
        expected = [free, *first[:-1]]
        assert [p.position for p in env.players] == expected
        assert [tuple(p) for p in port.position[0].tolist()] == expected
        assert (port.field[0] > 0).sum() == (env.field > 0).sum() == int(first[-1] == (1, 1))


def play_port(team, players: int, size: int, foods: int, games: int, seed: int) -> np.ndarray:
    """The team return of ``games`` first episodes on the port (one per game, its own spawn)."""
    port = BatchedForaging(games, players, size, foods, SIGHT, seed=seed)
    obs, rng = port.observe(), np.random.default_rng(seed)
    returns, running = np.zeros(games), np.ones(games, dtype=bool)
    while running.any():
        obs, rewards, terminated, truncated, _ = port.step(team(obs, rng))
        returns += np.where(running, rewards.sum(-1), 0.0)
        running &= ~(terminated | truncated)
    return returns


@pytest.mark.parametrize("players", sorted(SCENARIOS))
def test_baselines_score_the_same_on_the_port(players: int) -> None:
    """The shipped baselines (200 reference episodes each) agree with 1,000 games on the port within four standard
    errors of the difference: the port's own spawn gives the reference's games, in distribution."""
    size, foods = SCENARIOS[players]
    rows = {row["m"]: row for row in json.loads(BASELINES_PATH.read_text())["rows"]}
    for name, team in teams(foods).items():
        mean, sem = rows[players][name]["team_return"]
        returns = play_port(team, players, size, foods, 1000, seed=players)
        port_sem = returns.std(ddof=1) / np.sqrt(returns.size)
        assert abs(returns.mean() - mean) < 4 * np.hypot(sem, port_sem), (name, returns.mean(), mean)


def test_shipped_baselines() -> None:
    """Every team size measured over 200 episodes, as the command says; the forager well above random."""
    document = json.loads(BASELINES_PATH.read_text())
    assert document["episodes"] == 200 and document["command"] == "python -m attnmarl.envs.lbf_baselines"
    assert [(row["m"], row["size"], row["foods"]) for row in document["rows"]] == [
        (m, *SCENARIOS[m]) for m in (3, 6, 9)]
    for row in document["rows"]:
        random, forager = row["random"]["team_return"], row["forager"]["team_return"]
        assert 0 < random[0] < forager[0] - 4 * np.hypot(random[1], forager[1]) and forager[0] < 1


# --------------------------------------------------------------------------------------------
# tokens
# --------------------------------------------------------------------------------------------


def test_tokens_say_what_the_observation_says() -> None:
    """Self first, then food and player slots relative to the player; tokens at the absolute cells are exactly
    the foods in sight and the players LBF shows, with their levels; the masked tokens are zeros; and the
    observation can be rebuilt from the tokens and the mask."""
    players, size, foods = 6, 8, 4
    port = BatchedForaging(64, players, size, foods, SIGHT, seed=3)
    rng = np.random.default_rng(3)
    for _ in range(10):
        obs = port.step(rng.integers(0, 6, (64, players)))[0]
    tokens, mask = lbf_tokens(obs, foods)
    n_tokens = 1 + foods + players - 1
    assert tokens.shape == (64, players, n_tokens, 3) and mask.shape == (64, players, n_tokens)
    assert len(lbf_token_names(foods, players)) == n_tokens and mask[..., 0].all()
    assert (tokens[~mask] == 0).all() and tokens.dtype == np.float32
    for e in range(64):
        for i in range(players):
            row, col = port.position[e, i]
            self_x, self_y, self_level = tokens[e, i, 0]
            assert (self_x, self_y, self_level) == (min(col, SIGHT), min(row, SIGHT), port.level[e, i])
            seen = {(int(row + dy), int(col + dx), int(level)) for dx, dy, level in tokens[e, i, 1:1 + foods][
                mask[e, i, 1:1 + foods]]}
            in_sight = {(r, c, int(port.field[e, r, c])) for r, c in np.argwhere(port.field[e] > 0)
                        if abs(r - row) <= SIGHT and abs(c - col) <= SIGHT}
            assert seen == in_sight
            others = [(int(row + dy), int(col + dx), int(level)) for dx, dy, level in tokens[e, i, 1 + foods:][
                mask[e, i, 1 + foods:]]]
            shown = obs[e, i, 3 * foods + 3:].reshape(-1, 3)
            corner = np.maximum(port.position[e, i] - SIGHT, 0)
            assert others == [(int(y + corner[0]), int(x + corner[1]), int(level)) for y, x, level in shown if y >= 0]
    rebuilt = np.where(mask[..., None], tokens, 0)
    rebuilt[..., 1:, :2] += np.where(mask[..., 1:, None], tokens[..., :1, :2], 0)
    rebuilt = np.where(mask[..., None], rebuilt[..., [1, 0, 2]], [-1, -1, 0])
    order = [*range(1, 1 + foods), 0, *range(1 + foods, n_tokens)]
    np.testing.assert_array_equal(rebuilt[..., order, :].reshape(obs.shape), obs)


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("actions", "match"), [
    (np.zeros((2, 3), dtype=int), r"shape \(num_envs, players\) = \(2, 4\)"),
    (np.zeros(8, dtype=int), "shape"),
    (np.full((2, 4), 6), r"lie in \[0, 5\]"),
    (np.full((2, 4), -1), r"lie in \[0, 5\]"),
    (np.zeros((2, 4)), "must be integers"),
    (np.zeros((2, 4), dtype=bool), "must be integers"),
    ([["0"] * 4] * 2, "must be integers"),
])
def test_bad_actions(actions, match: str) -> None:
    port = BatchedForaging(2, 4, 6, 2, SIGHT)
    with pytest.raises(ValueError, match=match):
        port.step(actions)


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(players=26, size=5), "players = 26 do not fit on a 5 x 5 grid"),
    (dict(size=2), "size must be an integer >= 3"),
    (dict(players=0), "players must be a positive integer"),
    (dict(players=3.0), "players must be a positive integer"),
    (dict(foods=0), "foods must be a positive integer"),
    (dict(sight=0), "sight must be a positive integer"),
    (dict(max_steps=0), "max_steps must be a positive integer"),
    (dict(force_coop="yes"), "force_coop must be True or False"),
    (dict(penalty=-0.1), "penalty must be a finite number"),
    (dict(penalty=float("nan")), "penalty must be a finite number"),
])
def test_bad_games(kwargs: dict, match: str) -> None:
    arguments = dict(players=3, size=6, foods=2, sight=SIGHT, max_steps=50) | kwargs
    with pytest.raises(ValueError, match=match):
        BatchedForaging(1, **arguments)
    with pytest.raises(ValueError, match=match):
        make_lbf_reference(**arguments, seed=0)


def test_bad_states_and_observations() -> None:
    port = BatchedForaging(2, 3, 6, 2, SIGHT)
    with pytest.raises(ValueError, match="this port plays"):
        port.load_state(0, make_lbf_reference(3, 6, 2, 3, 50, 0))
    with pytest.raises(ValueError, match="players without a cell"):
        port.load_state(0, make_lbf_reference(3, 6, 2, SIGHT, 50, 0))
    with pytest.raises(ValueError, match="must be an lbforaging ForagingEnv"):
        port.load_state(0, object())
    with pytest.raises(ValueError, match="slot must be an index"):
        port.load_state(2, make_lbf_reference(3, 6, 2, SIGHT, 50, 0))
    env = make_lbf_reference(3, 6, 2, SIGHT, 50, 0)
    env.reset()
    env.field[0, 2] = 1
    with pytest.raises(ValueError, match="food on the grid's edge"):
        port.load_state(0, env)
    with pytest.raises(ValueError, match="next to two foods"):
        check_reachable(np.pad([[1, 0, 1]], ((2, 2), (1, 1))), np.array([[2, 2]]))
    with pytest.raises(ValueError, match=r"3 \* \(foods \+ players\)"):
        lbf_tokens(np.zeros((4, 16)), foods=2)
    with pytest.raises(ValueError, match=r"players >= 1"):
        lbf_tokens(np.zeros((4, 6)), foods=2)
