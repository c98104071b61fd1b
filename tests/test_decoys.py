"""simple_spread with decoys (chapter 12): the reference environment, its batched port, tokens and baselines.

The reference must be simple_spread itself at d = 0, give decoys no reward and no collisions, shuffle each
agent's landmarks once per episode from the seed, and mark the targets with the right bit; the port must
replay it step by step (:func:`test_envs_parity.check_parity`, as for the other ports).
"""
from __future__ import annotations

import json

import mpe2.simple_spread_v3 as simple_spread_v3
import numpy as np
import pytest
from mpe2.simple_spread.simple_spread import Scenario as SpreadScenario
from test_envs_parity import NUM_ENVS, check_parity, random_actions

from attnmarl.envs import (
    entity_tokens,
    episode_returns,
    make_batched,
    make_reference,
    obs_to_array,
    step_arrays,
    token_layout,
)
from attnmarl.envs.decoys import DECOY_COLOR, NAME, observation_layout, raw_env
from attnmarl.envs.decoys_port import BASELINES_PATH, decoy_tokens, target_greedy_policy, target_view


def episode(env, seed: int, continuous: bool, rng: np.random.Generator) -> list[tuple]:
    """Everything a parallel env returns over one episode (reset with ``seed``, or unseeded if None)."""
    returned = [env.reset(seed=seed)]
    while env.agents:
        actions = {a: (rng.random(5, dtype=np.float32) if continuous else int(rng.integers(5))) for a in env.agents}
        returned.append(env.step(actions))
    return returned


@pytest.mark.parametrize("continuous_actions", [False, True])
def test_no_decoys_is_simple_spread(continuous_actions: bool) -> None:
    """d = 0 gives mpe2's simple_spread_v3 exactly: observations, rewards, ends, over two episodes (the second
    reset unseeded, so both consume the generator alike), with local_ratio and early success in play."""
    kwargs = dict(N=4, local_ratio=0.3, continuous_actions=continuous_actions, terminate_on_success=True)
    ours, mpe2 = make_reference(NAME, decoys=0, **kwargs), simple_spread_v3.parallel_env(**kwargs)
    for seed in (3, None):
        got = episode(ours, seed, continuous_actions, np.random.default_rng(1))
        expected = episode(mpe2, seed, continuous_actions, np.random.default_rng(1))
        assert len(got) == len(expected) == 26
        for step_got, step_expected in zip(got, expected):
            for ours_dict, mpe2_dict in zip(step_got, step_expected):
                assert ours_dict.keys() == mpe2_dict.keys()
                for agent in ours_dict:
                    np.testing.assert_array_equal(ours_dict[agent], mpe2_dict[agent])
    assert ours.observation_space("agent_0") == mpe2.observation_space("agent_0")


def rewards_and_positions(env, place) -> tuple[np.ndarray, np.ndarray]:
    """Reset with seed 0, agents at rest; ``place(world)`` moves landmarks; one step with no push."""
    env.reset(seed=0)
    world = env.unwrapped.world
    for agent in world.agents:
        agent.state.p_vel = np.zeros(2)
    place(world)
    _, rewards, *_ = step_arrays(env, np.zeros(len(world.agents), dtype=int))
    return rewards, np.array([agent.state.p_pos for agent in world.agents])


def test_decoys_carry_no_reward_and_do_not_collide() -> None:
    env = make_reference(NAME, N=3, decoys=3)
    world = env.unwrapped.world
    far = np.array([5.0, 5.0])

    def decoys_far(w):
        for decoy in w.decoys:
            decoy.state.p_pos = far.copy()

    def decoys_on_agents(w):  # every decoy onto an agent: no reward, and no push
        for k, decoy in enumerate(w.decoys):
            decoy.state.p_pos = w.agents[k % 3].state.p_pos.copy()

    def target_on_agent(w):
        decoys_far(w)
        w.landmarks[0].state.p_pos = w.agents[0].state.p_pos.copy()

    base, base_pos = rewards_and_positions(env, decoys_far)
    on_decoys, on_decoys_pos = rewards_and_positions(env, decoys_on_agents)
    on_target, _ = rewards_and_positions(env, target_on_agent)
    np.testing.assert_array_equal(on_decoys, base)
    np.testing.assert_array_equal(on_decoys_pos, base_pos)
    assert np.all(on_target > base + 1e-3)
    global_reward = SpreadScenario.global_reward(env.unwrapped.scenario, world)  # simple_spread's, on the targets
    assert global_reward == pytest.approx(
        -sum(min(np.linalg.norm(a.state.p_pos - t.state.p_pos) for a in world.agents) for t in world.landmarks))


def test_decoys_are_drawn_in_their_colour() -> None:
    def has_decoy_colour(decoys: int) -> bool:
        env = make_reference(NAME, N=2, decoys=decoys, render_mode="rgb_array")
        env.reset(seed=0)
        return bool(np.all(env.render() == (DECOY_COLOR * 200).astype(np.uint8), axis=-1).any())

    assert has_decoy_colour(2) and not has_decoy_colour(0)


def orders_over(env, seed: int | None, steps: int) -> np.ndarray:
    """The landmark order at reset and after each of ``steps`` random steps: (steps + 1, m, m + k)."""
    env.reset(seed=seed)
    orders = [env.unwrapped.world.landmark_order.copy()]
    rng = np.random.default_rng(0)
    for _ in range(steps):
        step_arrays(env, random_actions(rng, (len(env.possible_agents),), False))
        orders.append(env.unwrapped.world.landmark_order.copy())
    return np.stack(orders)


def test_shuffle_is_a_permutation_per_agent_and_episode_fixed_and_seeded() -> None:
    env, twin = make_reference(NAME, N=6, decoys=3), make_reference(NAME, N=6, decoys=3)
    first = orders_over(env, 11, 5)
    assert np.all(first == first[0])  # fixed within the episode
    order = first[0]
    np.testing.assert_array_equal(np.sort(order, axis=1), np.tile(np.arange(24), (6, 1)))
    assert len({tuple(row) for row in order}) == 6  # every agent its own
    second = orders_over(env, None, 0)[0]
    assert not np.array_equal(second, order)  # a new episode, a new shuffle
    np.testing.assert_array_equal(orders_over(twin, 11, 0)[0], order)  # the seed decides it


@pytest.mark.parametrize(("m", "d"), [(3, 1), (4, 3)])
def test_observation_layout_and_target_bits(m: int, d: int) -> None:
    """Un-shuffled by the world's order, slot s of agent i shows landmark π_i(s) relative to the agent, with
    is_target = [π_i(s) < m]; the other agents follow in mpe2's layout."""
    env = make_reference(NAME, N=m, decoys=d)
    obs, _ = env.reset(seed=2)
    world = env.unwrapped.world
    layout = observation_layout(m, d)
    landmarks = world.landmarks + world.decoys
    assert env.observation_space("agent_0").shape == (layout.obs_dim,) == (4 + 3 * (m + d * m) + 4 * (m - 1),)
    for i, agent in enumerate(world.agents):
        o, order = obs[agent.name], world.landmark_order[i]
        entries = o[layout.landmark_columns]
        expected = [landmarks[k].state.p_pos - agent.state.p_pos for k in order]
        np.testing.assert_array_equal(entries[:, :2], np.array(expected, dtype=np.float32))
        np.testing.assert_array_equal(entries[:, 2], (order < m).astype(np.float32))
        others = [a.state.p_pos - agent.state.p_pos for a in world.agents if a is not agent]
        np.testing.assert_array_equal(o[layout.agent_start: layout.agent_start + 2 * (m - 1)],
                                      np.concatenate(others).astype(np.float32))
        np.testing.assert_array_equal(o[layout.agent_start + 2 * (m - 1):], 0.0)


# --------------------------------------------------------------------------------------------
# the port
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("continuous_actions", [False, True])
@pytest.mark.parametrize(("m", "d"), [(3, 0), (3, 1), (3, 3), (6, 3), (1, 2)])
def test_port_parity(m: int, d: int, continuous_actions: bool) -> None:
    totals = check_parity(NAME, 12, N=m, decoys=d, continuous_actions=continuous_actions, local_ratio=0.4)
    assert totals["steps"] == 25 - 7 + 25 and totals["other_slots_reset"] == NUM_ENVS - 1


def test_port_resets_draw_shuffles_and_decoys() -> None:
    port = make_batched(NAME, 64, seed=3, N=3, decoys=3)
    first = port.landmark_order.copy()
    np.testing.assert_array_equal(np.sort(first, axis=-1), np.tile(np.arange(12), (64, 3, 1)))
    assert len({tuple(row) for row in first.reshape(-1, 12)}) > 150  # per agent and environment
    bits = port.observe()[..., port.layout.landmark_columns[:, 2]]
    np.testing.assert_array_equal(bits.sum(axis=-1), 3.0)
    assert np.all(np.abs(port.decoy_pos) <= 1.0) and port.decoy_pos.std() > 0.4
    port.reset(seed=3)
    np.testing.assert_array_equal(port.landmark_order, first)
    port.reset()
    assert not np.array_equal(port.landmark_order, first)


def test_port_refuses_a_reference_with_other_decoys() -> None:
    port = make_batched(NAME, 2, N=3, decoys=1)
    reference = make_reference(NAME, N=3, decoys=3)
    reference.reset(seed=0)
    with pytest.raises(ValueError, match="decoys"):
        port.load_state(0, reference)


# --------------------------------------------------------------------------------------------
# tokens
# --------------------------------------------------------------------------------------------


def test_tokens_without_decoys_are_simple_spreads() -> None:
    obs = make_batched(NAME, 5, N=4, decoys=0).observe()
    for i in range(4):
        ours, mask = decoy_tokens(obs[:, i], i, N=4, decoys=0)
        theirs = entity_tokens("simple_spread", obs[:, i], i, N=4)
        assert ours.layout == theirs.layout and mask.all()
        for a, b in zip(ours.tokens, theirs.tokens):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("d", [0, 2])
def test_tokens_are_the_books_entity_tokens(d: int) -> None:
    """The book's token machinery (:func:`entity_tokens`, which every entity network reads) cuts the decoy task as
    :func:`decoy_tokens` does: one layout, kept in one place; at d = 0 it is simple_spread's."""
    obs = make_batched(NAME, 4, N=3, decoys=d).observe()
    for i in range(3):
        book, (ours, _) = entity_tokens(NAME, obs[:, i], i, N=3, decoys=d), decoy_tokens(obs[:, i], i, N=3, decoys=d)
        assert book.layout == ours.layout and book.layout == token_layout(NAME, f"agent_{i}", N=3, decoys=d)
        assert (book.layout == token_layout("simple_spread", i, N=3)) == (d == 0)
        for a, b in zip(book.tokens, ours.tokens):
            np.testing.assert_array_equal(a, b)
    assert token_layout(NAME, 0, N=3, decoys=d).kinds.count("landmark") == 3 * (1 + d)


@pytest.mark.parametrize(("m", "d"), [(1, 2), (3, 1)])
def test_tokens_cover_the_observation_once(m: int, d: int) -> None:
    obs = make_batched(NAME, 3, N=m, decoys=d).observe()
    for i in range(m):
        tokens, _ = decoy_tokens(obs[:, i], i, N=m, decoys=d)
        columns = sorted(c for token_columns in tokens.layout.columns for c in token_columns)
        assert columns == list(range(obs.shape[-1]))
        np.testing.assert_array_equal(tokens.to_obs(), obs[:, i])


def test_tokens_oracle_mask_and_no_bit() -> None:
    env = make_reference(NAME, N=3, decoys=3)
    obs, _ = env.reset(seed=4)
    world = env.unwrapped.world
    for i, agent in enumerate(env.possible_agents):
        tokens, everything = decoy_tokens(obs[agent], agent, N=3, decoys=3)
        _, oracle = decoy_tokens(obs[agent], agent, oracle=True, N=3, decoys=3)
        blind, blind_mask = decoy_tokens(obs[agent], agent, no_bit=True, N=3, decoys=3)
        np.testing.assert_array_equal(tokens.to_obs(), obs[agent])
        assert tokens.kinds == ("self",) + ("landmark",) * 12 + ("agent",) * 2 and everything.all()
        landmarks = tokens.by_kind("landmark")
        assert landmarks.shape == (12, 3)
        is_decoy = world.landmark_order[i] >= 3
        np.testing.assert_array_equal(oracle, np.concatenate([[True], ~is_decoy, [True, True]]))
        np.testing.assert_array_equal(blind.by_kind("landmark")[:, 2], 0.0)
        np.testing.assert_array_equal(blind.by_kind("landmark")[:, :2], landmarks[:, :2])
        np.testing.assert_array_equal(blind.by_kind("agent"), tokens.by_kind("agent"))
        assert blind_mask.all() and obs[agent][6:42:3].sum() == 3  # the observation itself keeps its bits
    batch = make_batched(NAME, 7, N=3, decoys=1).observe()
    _, masks = decoy_tokens(batch[:, 1], 1, oracle=True, N=3, decoys=1)
    assert masks.shape == (7, 9) and np.all(masks.sum(axis=-1) == 9 - 3)


# --------------------------------------------------------------------------------------------
# baselines
# --------------------------------------------------------------------------------------------


def test_target_view_is_simple_spreads_observation_of_the_targets() -> None:
    env = make_reference(NAME, N=4, decoys=3)
    obs, _ = env.reset(seed=5)
    world, scenario = env.unwrapped.world, env.unwrapped.scenario
    view = target_view(obs_to_array(env, obs).astype(np.float64), observation_layout(4, 3))
    expected = np.stack([SpreadScenario.observation(scenario, agent, world) for agent in world.agents])
    np.testing.assert_allclose(view, expected, atol=1e-6)


def test_shipped_baselines() -> None:
    """Every (m, d) of the book measured; greedy well above random; d = 0 is chapter 6's simple_spread range
    (DESIGN §5: N = 3 random −27.1, greedy −9.1; N = 6 −39.0 and −14.2), and so is every d: neither baseline
    reacts to decoys, which are drawn after the agents and targets, so each d replays d = 0's episodes."""
    document = json.loads(BASELINES_PATH.read_text())
    rows = {(row["m"], row["d"]): row for row in document["rows"]}
    assert set(rows) == {(m, d) for m in (3, 6, 12) for d in (0, 1, 3)} and document["episodes"] == 200
    for (m, _), row in rows.items():
        assert (row["random"], row["greedy"]) == (rows[m, 0]["random"], rows[m, 0]["greedy"])
    assert all(row["greedy"][0] > row["random"][0] + 5 for row in rows.values())
    assert rows[3, 0]["random"][0] == pytest.approx(-27.1, abs=0.05) and rows[3, 0]["greedy"][0] == pytest.approx(
        -9.1, abs=0.05)
    assert rows[6, 0]["random"][0] == pytest.approx(-39.0, abs=0.05) and rows[6, 0]["greedy"][0] == pytest.approx(
        -14.2, abs=0.05)
    returns = episode_returns(target_greedy_policy(N=3, decoys=3), NAME, episodes=5, N=3, decoys=3).mean(axis=1)
    assert returns.mean() > rows[3, 3]["random"][0] + 10


# --------------------------------------------------------------------------------------------
# bad input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "match"), [
    (dict(decoys=-1), "decoys must be >= 0"),
    (dict(decoys=1.5), "decoys must be an int"),
    (dict(decoys="2"), "decoys must be an int"),
    (dict(N=0), "N must be >= 1"),
    (dict(num_decoys=2), "takes no argument|does not implement"),
])
def test_bad_arguments_are_refused(kwargs: dict, match: str) -> None:
    with pytest.raises(ValueError, match=match):
        make_reference(NAME, **kwargs)
    with pytest.raises(ValueError, match=match):
        make_batched(NAME, 2, **kwargs)


def test_bad_input_elsewhere_is_refused() -> None:
    with pytest.raises(ValueError, match="decoys must be a non-negative integer"):
        raw_env(decoys=-2)
    with pytest.raises(ValueError, match="N must be a positive integer"):
        raw_env(N=0)
    with pytest.raises(ValueError, match="does not implement"):
        make_batched(NAME, 2, render_mode="rgb_array")
    port = make_batched(NAME, 2, N=3, decoys=1)
    with pytest.raises(ValueError, match=r"actions must have shape \(2, 3\)"):
        port.step(np.zeros((2, 4), dtype=int))
    with pytest.raises(ValueError, match=r"shape \(2, 3, 5\)"):
        make_batched(NAME, 2, N=3, decoys=1, continuous_actions=True).step(np.zeros((2, 3), dtype=np.float32))
    with pytest.raises(ValueError, match="must end in 30 numbers"):
        decoy_tokens(np.zeros(24), 0, N=3, decoys=1)
    with pytest.raises(ValueError, match="agent"):
        decoy_tokens(np.zeros(30), 3, N=3, decoys=1)
    with pytest.raises(ValueError, match="oracle must be True or False"):
        decoy_tokens(np.zeros(30), 0, oracle="no", N=3, decoys=1)
