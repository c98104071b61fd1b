"""attnmarl.envs: the mpe2 reference helpers, baselines, the batched ports' API, entity tokens, bad input.

Parity of the ports with mpe2 is in ``test_envs_parity.py``.
"""
from __future__ import annotations

import numpy as np
import pytest

import attnmarl.envs as envs
from attnmarl.envs import (
    entity_tokens,
    evaluate,
    greedy_assignment_policy,
    make_batched,
    make_reference,
    obs_to_array,
    random_policy,
    render_episode,
    steered_assignment_policy,
    step_arrays,
    token_layout,
    treasure_hunter_policy,
)
from attnmarl.envs.baselines import heading_moves

PORT_CASES = [
    ("simple_spread", dict(N=4)),
    ("simple_tag", dict(num_good=2, num_adversaries=3, num_obstacles=2)),
    ("collect_treasure", dict(num_collectors=4, num_deposits=2, num_treasures=5)),
]

# --------------------------------------------------------------------------------------------
# Reference helpers and baselines
# --------------------------------------------------------------------------------------------


def test_make_reference_is_the_mpe2_parallel_env() -> None:
    env = make_reference("simple_spread_v3", N=4)
    assert env.metadata["name"] == "simple_spread_v3"
    obs, _ = env.reset(seed=0)
    assert list(obs) == [f"agent_{i}" for i in range(4)] and obs["agent_0"].shape == (24,)
    obs_array, rewards, terminated, truncated = step_arrays(env, np.array([0, 1, 2, 3]))
    assert obs_array.shape == (4, 24) and obs_array.dtype == np.float32
    assert rewards.shape == (4,) and not terminated and not truncated


def test_obs_to_array_pads_shorter_observations_with_zeros() -> None:
    env = make_reference("simple_tag")  # adversaries see 16 numbers, the good agent 14
    obs, _ = env.reset(seed=1)
    array = obs_to_array(env, obs)
    assert array.shape == (4, 16)
    np.testing.assert_array_equal(array[3, :14], obs["agent_0"])
    np.testing.assert_array_equal(array[3, 14:], 0.0)


def test_render_episode_draws_every_step_headless() -> None:
    frames = render_episode("simple_spread", seed=3, N=3, max_cycles=5)
    assert len(frames) == 6
    assert all(f.shape == (700, 700, 3) and f.dtype == np.uint8 for f in frames)
    assert not np.array_equal(frames[0], frames[-1])  # the agents moved
    assert (frames[0] < 255).any(axis=2).mean() > 0.01  # something is drawn on the white canvas
    again = render_episode("simple_spread", seed=3, N=3, max_cycles=5)
    assert all(np.array_equal(a, b) for a, b in zip(frames, again))  # seeded: the same film twice


# Figures measured by others on mpe2 simple_spread (DESIGN.md §5): mean per-agent return over 200 episodes.
RANDOM_N3, GREEDY_N3, RANDOM_N6 = -26.3, -9.1, -39.7


def within_standard_errors(mean: float, sem: float, figure: float, k: float = 3.0) -> bool:
    """|mean − figure| within k standard errors of a difference of two such estimates (√2 · sem)."""
    return abs(mean - figure) < k * np.sqrt(2) * sem


def test_baselines_reproduce_the_reference_figures_at_n3() -> None:
    random_mean, random_sem = evaluate(random_policy("simple_spread", seed=0), "simple_spread", episodes=200)
    greedy_mean, greedy_sem = evaluate(greedy_assignment_policy(), "simple_spread", episodes=200)
    assert within_standard_errors(random_mean, random_sem, RANDOM_N3), (random_mean, random_sem)
    assert within_standard_errors(greedy_mean, greedy_sem, GREEDY_N3), (greedy_mean, greedy_sem)
    assert greedy_mean - random_mean > 20 * (greedy_sem + random_sem)


def test_baselines_at_n6() -> None:
    random_mean, random_sem = evaluate(random_policy("simple_spread", seed=1, N=6), "simple_spread", episodes=100, N=6)
    greedy_mean, greedy_sem = evaluate(greedy_assignment_policy(), "simple_spread", episodes=100, N=6)
    assert within_standard_errors(random_mean, random_sem, RANDOM_N6), (random_mean, random_sem)
    assert greedy_mean - random_mean > 20 * (greedy_sem + random_sem)


def test_steered_assignment_beats_the_greedy_steering_at_n3() -> None:
    # chapter 6: the same assignment with a simpler steering is the stronger baseline (-8.50 against -9.06
    # on these 200 episode seeds, 1.7 standard errors of the difference even if the episodes were unpaired)
    steered, steered_sem = evaluate(steered_assignment_policy(), "simple_spread", episodes=200)
    greedy, greedy_sem = evaluate(greedy_assignment_policy(), "simple_spread", episodes=200)
    assert steered - greedy > 1.5 * np.hypot(steered_sem, greedy_sem), (steered, greedy)


def test_heading_moves_stay_near_the_target_and_push_towards_it() -> None:
    observations = np.zeros((2, 12))                          # N = 2, at rest
    target = np.array([[0.01, 0.0], [0.0, -0.5]])              # agent 0 is there; agent 1's target is below
    assert list(heading_moves(observations, target)) == [0, 3]  # stay; down


def test_greedy_works_with_continuous_actions() -> None:
    greedy_mean, greedy_sem = evaluate(greedy_assignment_policy(continuous_actions=True), "simple_spread",
                                       episodes=40, continuous_actions=True)
    random_mean, random_sem = evaluate(random_policy("simple_spread", continuous_actions=True), "simple_spread",
                                       episodes=40, continuous_actions=True)
    assert greedy_mean - random_mean > 10 * (greedy_sem + random_sem)


def test_treasure_hunter_beats_random_on_mpe2() -> None:
    sizes = dict(num_collectors=2, num_deposits=2, num_treasures=2)
    hunter_mean, hunter_sem = evaluate(treasure_hunter_policy(**sizes), "collect_treasure", episodes=40, **sizes)
    random_mean, random_sem = evaluate(random_policy("collect_treasure", **sizes), "collect_treasure", episodes=40,
                                       **sizes)
    assert hunter_mean - random_mean > 5 * (hunter_sem + random_sem)


def test_treasure_hunter_heads_for_the_targets_of_the_shaping_rewards() -> None:
    """Collector 0 is empty (→ nearest treasure), collector 1 holds type 1 (→ deposit_1, though deposit_0
    is nearer), deposit_1 sees a carrier of its type (→ collector 1), deposit_0 none (→ the collectors'
    centroid); all start at rest, so each moves along the axis of its largest offset."""
    env = make_reference("collect_treasure", num_collectors=2, num_deposits=2, num_treasures=1)
    env.reset(seed=0)
    world = env.unwrapped.world
    collector_0, collector_1, deposit_0, deposit_1 = world.agents
    places = {collector_0: (0.0, 0.0), collector_1: (0.5, 0.5), deposit_0: (0.5, 0.8), deposit_1: (-0.5, 0.5)}
    for agent, place in places.items():
        agent.state.p_pos, agent.state.p_vel = np.array(place), np.zeros(2)
    world.landmarks[0].state.p_pos, world.landmarks[0].alive = np.array([0.0, -0.6]), True
    collector_1.holding = 1
    obs = {agent.name: env.unwrapped.scenario.observation(agent, world).astype(np.float32) for agent in world.agents}
    moves = treasure_hunter_policy(num_collectors=2, num_deposits=2, num_treasures=1)(obs)
    # mpe2's discrete moves: 1 = −x, 2 = +x, 3 = −y, 4 = +y
    assert moves == {"collector_0": 3, "collector_1": 1, "deposit_0": 3, "deposit_1": 2}


def test_evaluate_averages_over_agents_then_episodes_with_seeds_seed_plus_k() -> None:
    def always_stay(obs):
        return dict.fromkeys(obs, 0)

    mean, sem = evaluate(always_stay, "simple_spread", episodes=3, seed=5)
    per_episode = []
    for k in range(3):
        env = make_reference("simple_spread")
        env.reset(seed=5 + k)
        total = 0.0
        while env.agents:
            _, rewards, *_ = env.step(always_stay(env.agents))
            total += np.mean(list(rewards.values()))
        per_episode.append(total)
    assert mean == pytest.approx(np.mean(per_episode))
    assert sem == pytest.approx(np.std(per_episode, ddof=1) / np.sqrt(3))


def test_policy_from_arrays_evaluates_an_array_policy_on_mpe2() -> None:
    env = make_reference("simple_spread")
    stay = envs.policy_from_arrays(env, lambda obs: np.zeros(obs.shape[0], dtype=np.int64))
    assert evaluate(stay, "simple_spread", episodes=2) == evaluate(lambda obs: dict.fromkeys(obs, 0), "simple_spread",
                                                                    episodes=2)


# --------------------------------------------------------------------------------------------
# Batched ports: API
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario,kwargs", PORT_CASES)
def test_port_exposes_mpe2_names_spaces_and_sizes(scenario: str, kwargs: dict) -> None:
    env = make_reference(scenario, **kwargs)
    port = make_batched(scenario, num_envs=5, seed=0, **kwargs)
    assert port.agents == tuple(env.possible_agents)
    assert port.obs_dims == tuple(env.observation_space(a).shape[0] for a in env.possible_agents)
    assert port.obs_dim == max(port.obs_dims) and port.n_actions == 5 and port.max_cycles == 25
    for agent in port.agents:
        assert port.observation_spaces[agent] == env.observation_space(agent)
        assert port.action_spaces[agent] == env.action_space(agent)
    obs = port.reset()
    assert obs.shape == (5, port.n_agents, port.obs_dim) and obs.dtype == np.float32
    for i, dim in enumerate(port.obs_dims):
        np.testing.assert_array_equal(obs[:, i, dim:], 0.0)


@pytest.mark.parametrize("scenario,kwargs", PORT_CASES)
def test_port_resets_by_itself_and_hands_back_the_final_observation(scenario: str, kwargs: dict) -> None:
    port = make_batched(scenario, num_envs=3, seed=1, max_cycles=4, **kwargs)
    rng = np.random.default_rng(0)
    obs = port.reset()
    for t in range(4):
        next_obs, rewards, terminated, truncated, info = port.step(rng.integers(0, 5, (3, port.n_agents)))
        assert not terminated.any() and truncated.all() == (t == 3) and truncated.any() == (t == 3)
        if t < 3:
            assert info["final_obs"] is next_obs
            assert not np.array_equal(next_obs, obs)
        obs = next_obs
    assert not np.array_equal(info["final_obs"], obs)  # a new episode began
    np.testing.assert_array_equal(port.steps, 0)
    np.testing.assert_array_equal(port.agent_vel, 0.0)


def test_port_seed_makes_runs_repeatable() -> None:
    actions = np.random.default_rng(0).integers(0, 5, (30, 8, 3))
    runs = []
    for _ in range(2):
        port = make_batched("simple_spread", 8, seed=42)
        runs.append([port.step(a)[0] for a in actions])
    np.testing.assert_array_equal(np.stack(runs[0]), np.stack(runs[1]))
    assert not np.array_equal(make_batched("simple_spread", 8, seed=43).reset(), runs[0][0])


def test_port_initial_states_follow_mpe2_distribution() -> None:
    """Port resets draw from the same ranges as mpe2's reset_world (agents [-1,1]², tag obstacles [-0.9,0.9]²,
    treasures [-0.95,0.95]² with uniform types)."""
    tag = make_batched("simple_tag", 2000, seed=0)
    assert np.abs(tag.agent_pos).max() <= 1 and np.abs(tag.agent_pos).max() > 0.99
    assert np.abs(tag.landmark_pos).max() <= 0.9 and np.abs(tag.landmark_pos).max() > 0.89
    treasure = make_batched("collect_treasure", 2000, seed=0)
    assert np.abs(treasure.landmark_pos).max() <= 0.95 and treasure.treasure_alive.all()
    assert abs(treasure.treasure_type.mean() - 0.5) < 0.02 and (treasure.holding == -1).all()


# --------------------------------------------------------------------------------------------
# Entity tokens
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("scenario,kwargs", PORT_CASES)
def test_tokens_cover_every_observation_number_once_and_rebuild_it(scenario: str, kwargs: dict) -> None:
    env = make_reference(scenario, **kwargs)
    obs, _ = env.reset(seed=2)
    for _ in range(6):
        obs, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})
    for agent in env.possible_agents:
        layout = token_layout(scenario, agent, **kwargs)
        columns = sorted(c for token in layout.columns for c in token)
        assert columns == list(range(layout.obs_dim)) == list(range(obs[agent].shape[0]))
        assert all(len(c) == len(f) for c, f in zip(layout.columns, layout.features))
        tokens = entity_tokens(scenario, obs[agent], agent, **kwargs)
        np.testing.assert_array_equal(tokens.to_obs(), obs[agent])
        assert tokens.kinds[0] == "self" and tokens.names[0] == agent


def test_spread_tokens_match_the_mpe2_world() -> None:
    env = make_reference("simple_spread", N=4)
    obs, _ = env.reset(seed=3)
    for _ in range(5):
        obs, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})
    world = env.unwrapped.world
    for i, agent in enumerate(world.agents):
        tokens = entity_tokens("simple_spread", obs[agent.name], i, N=4)
        assert tokens.names == (agent.name, "landmark 0", "landmark 1", "landmark 2", "landmark 3") + tuple(
            a.name for a in world.agents if a is not agent
        )
        np.testing.assert_allclose(tokens[agent.name], np.r_[agent.state.p_vel, agent.state.p_pos], atol=1e-6)
        for landmark in world.landmarks:
            np.testing.assert_allclose(tokens[landmark.name], landmark.state.p_pos - agent.state.p_pos, atol=1e-6)
        for other in world.agents:
            if other is not agent:
                expected = np.r_[other.state.p_pos - agent.state.p_pos, other.state.c]
                np.testing.assert_allclose(tokens[other.name], expected, atol=1e-6)
        assert tokens.by_kind("landmark").shape == (4, 2) and tokens.by_kind("agent").shape == (3, 4)


def test_tag_tokens_match_the_mpe2_world() -> None:
    sizes = dict(num_good=2, num_adversaries=2, num_obstacles=1)
    env = make_reference("simple_tag", **sizes)
    obs, _ = env.reset(seed=4)
    for _ in range(5):
        obs, *_ = env.step({a: env.action_space(a).sample() for a in env.agents})
    world = env.unwrapped.world
    for agent in world.agents:
        tokens = entity_tokens("simple_tag", obs[agent.name], agent.name, **sizes)
        np.testing.assert_allclose(tokens["landmark 0"], world.landmarks[0].state.p_pos - agent.state.p_pos, atol=1e-6)
        for other in world.agents:
            if other is agent:
                continue
            expected = other.state.p_pos - agent.state.p_pos
            if not other.adversary:
                expected = np.r_[expected, other.state.p_vel]
            np.testing.assert_allclose(tokens[other.name], expected, atol=1e-6)
            assert tokens.kinds[tokens.names.index(other.name)] == ("adversary" if other.adversary else "good")


def test_treasure_tokens_are_sorted_by_distance_like_mpe2() -> None:
    env = make_reference("collect_treasure")
    obs, _ = env.reset(seed=5)
    world = env.unwrapped.world
    for agent in world.agents:
        tokens = entity_tokens("collect_treasure", obs[agent.name], agent.name)
        treasures = sorted(world.landmarks, key=lambda lm: np.linalg.norm(lm.state.p_pos - agent.state.p_pos))
        nearest = treasures[0].state.p_pos - agent.state.p_pos
        np.testing.assert_allclose(tokens["nearest_treasure_0"][:2], nearest, atol=1e-6)
        np.testing.assert_array_equal(tokens["nearest_treasure_0"][2:], np.eye(2)[treasures[0].type])
        others = sorted((a for a in world.agents if a is not agent),
                        key=lambda a: np.linalg.norm(a.state.p_pos - agent.state.p_pos))
        np.testing.assert_allclose(tokens["nearest_agent_0"][:2], others[0].state.p_pos - agent.state.p_pos, atol=1e-6)
        distances = np.linalg.norm(tokens.by_kind("agent")[:, :2], axis=1)
        assert np.all(np.diff(distances) >= -1e-6)


def test_tokens_of_a_batch_from_the_port() -> None:
    port = make_batched("simple_tag", 16, seed=0)  # padded width 16; the good agent's own width is 14
    obs = port.reset()
    tokens = entity_tokens("simple_tag", obs[:, 3], "agent_0")
    assert tokens.by_kind("adversary").shape == (16, 3, 2) and tokens.by_kind("landmark").shape == (16, 2, 2)
    np.testing.assert_array_equal(tokens.to_obs(), obs[:, 3, :14])
    np.testing.assert_allclose(tokens["landmark 1"], port.landmark_pos[:, 1] - port.agent_pos[:, 3], atol=1e-6)
    spread = make_batched("simple_spread", 8, N=5).reset()
    assert entity_tokens("simple_spread", spread, 0, N=5).by_kind("agent").shape == (8, 5, 4, 4)


# --------------------------------------------------------------------------------------------
# Bad input
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "call,message",
    [
        (lambda: make_reference("simple_spreed"), "unknown scenario 'simple_spreed'"),
        (lambda: make_batched("simple_spreed", 4), "unknown scenario"),
        (lambda: make_batched("simple_adversary", 4), "no batched port of 'simple_adversary'"),
        (lambda: evaluate(lambda o: o, "nope", episodes=1), "unknown scenario 'nope'"),
        (lambda: entity_tokens("nope", np.zeros(18), 0), "unknown scenario"),
        (lambda: entity_tokens("simple_push", np.zeros(18), 0), "entity tokens are defined for"),
        (lambda: make_reference("simple_spread", N=0), "N must be >= 1, got 0"),
        (lambda: make_batched("simple_spread", 4, N=0), "N must be >= 1"),
        (lambda: make_batched("simple_spread", 4, N=2.5), "N must be an int"),
        (lambda: make_batched("simple_tag", 4, num_adversaries=0), "num_adversaries must be >= 1"),
        (lambda: make_batched("simple_tag", 4, num_good=0), "num_good must be >= 1"),
        (lambda: make_batched("simple_tag", 4, num_obstacles=-1), "num_obstacles must be >= 0"),
        (lambda: make_batched("collect_treasure", 4, num_collectors=0), "num_collectors must be >= 1"),
        (lambda: make_batched("collect_treasure", 4, num_deposits=7), "num_deposits must be <= 6"),
        (lambda: make_batched("simple_spread", 4, max_cycles=0), "max_cycles must be >= 1"),
        (lambda: make_batched("simple_spread", 4, local_ratio=1.5), "local_ratio must be in"),
        (lambda: make_batched("simple_spread", 4, curriculum=True),
         r"does not implement argument\(s\) \['curriculum'\]"),
        (lambda: make_reference("simple_spread", M=3), r"takes no argument\(s\) \['M'\]"),
        (lambda: make_batched("simple_spread", 0), "num_envs must be a positive int"),
        (lambda: evaluate(lambda o: o, "simple_spread", episodes=0), "episodes must be a positive int"),
        (lambda: entity_tokens("simple_spread", np.zeros(17), 0), r"must end in 18 numbers, got shape \(17,\)"),
        (lambda: entity_tokens("simple_tag", np.zeros(15), "agent_0"), r"must end in 14 \(or the padded 16\) numbers"),
        (lambda: entity_tokens("simple_spread", np.zeros(18), "agent_7"), "no agent 'agent_7'"),
        (lambda: entity_tokens("simple_spread", np.zeros(18), 3), r"agent index must be in \[0, 3\)"),
        (lambda: entity_tokens("simple_spread", np.zeros(18), 0).by_kind("treasure"), "no tokens of kind 'treasure'"),
        (lambda: greedy_assignment_policy()({"a": np.zeros(16), "b": np.zeros(16)}),
         "needs simple_spread observations"),
        (lambda: steered_assignment_policy()({"a": np.zeros(16), "b": np.zeros(16)}),
         "needs simple_spread observations"),
        (lambda: treasure_hunter_policy(continuous_actions=True), "steers with discrete actions"),
        (lambda: treasure_hunter_policy(num_deposits=9), "num_deposits must be <= 6"),
    ],
)
def test_bad_input_is_a_value_error_naming_the_problem(call, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize(
    "continuous,actions,message",
    [
        (False, np.zeros((4, 2), dtype=int), r"discrete actions must have shape \(4, 3\), got \(4, 2\)"),
        (False, np.zeros((4,), dtype=int), "must have shape"),
        (False, np.full((4, 3), 5), r"must lie in \[0, 4\], got values in \[5, 5\]"),
        (False, np.full((4, 3), -1), "must lie in"),
        (False, np.zeros((4, 3)), "discrete actions must be integers, got dtype float64"),
        (True, np.zeros((4, 3), dtype=np.float32), r"continuous actions must have shape \(4, 3, 5\)"),
        (True, np.full((4, 3, 5), 1.5), r"continuous actions must lie in \[0, 1\]"),
        (True, np.full((4, 3, 5), -0.1), "must lie in"),
        (True, np.full((4, 3, 5), np.nan), "must be finite"),
    ],
)
def test_bad_actions_are_value_errors(continuous: bool, actions: np.ndarray, message: str) -> None:
    port = make_batched("simple_spread", 4, continuous_actions=continuous)
    with pytest.raises(ValueError, match=message):
        port.step(actions)
    env = make_reference("simple_spread", continuous_actions=continuous)
    env.reset(seed=0)
    if actions.shape[:1] == (4,) and actions.ndim >= 2:
        with pytest.raises(ValueError):
            step_arrays(env, actions[0])


def test_valid_edge_actions_are_accepted() -> None:
    port = make_batched("simple_spread", 2, continuous_actions=True)
    port.step(np.ones((2, 3, 5)))  # float64 ones: in range, cast to float32
    port.step(np.zeros((2, 3, 5), dtype=np.float32))
    make_batched("simple_spread", 2).step(np.full((2, 3), 4, dtype=np.int32))


def test_mixed_teams_routes_each_agent_to_its_team_policy():
    from attnmarl.envs import mixed_teams

    obs = {"adversary_0": 0, "adversary_1": 0, "agent_0": 0}
    policy = mixed_teams(lambda o: dict.fromkeys(o, "chase"), lambda o: dict.fromkeys(o, "flee"))
    assert policy(obs) == {"adversary_0": "chase", "adversary_1": "chase", "agent_0": "flee"}
