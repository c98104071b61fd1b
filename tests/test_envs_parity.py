"""Parity of the batched ports with mpe2: same state + same actions → same observations, rewards, ends.

Each check copies an mpe2 state into one slot of a port (``load_state``), then steps both with the
same actions until mpe2's episode ends, comparing every step to 1e-5, and checks that the port
reset that slot (and only the finished slots) on its own. The other slots run their own random
episodes alongside, so the comparison also checks that environments do not leak into each other.
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from attnmarl.envs import make_batched, make_reference, obs_to_array, step_arrays
from attnmarl.envs.treasure import greedy_pickup

ATOL = 1e-5
NUM_ENVS = 4
SLOT = 2

Scripted = Callable[[object, np.random.Generator], np.ndarray]
"""A test policy for the compared slot: (mpe2 env, rng) → action array for its agents."""


def random_actions(rng: np.random.Generator, shape: tuple[int, ...], continuous: bool) -> np.ndarray:
    if continuous:
        return rng.random(shape + (5,), dtype=np.float32)
    return rng.integers(0, 5, shape)


def run_episode_in_parity(env, port, first_obs: np.ndarray, rng: np.random.Generator,
                          scripted: Scripted | None = None) -> dict[str, float]:
    """Step ``env`` and ``port`` (slot ``SLOT`` loaded from ``env``) to the end of ``env``'s episode.

    Returns counts of what happened, so a test can check its episodes exercised what it meant to.
    """
    np.testing.assert_allclose(port.observe()[SLOT], first_obs, atol=ATOL, rtol=0)
    counts = {"steps": 0, "nonzero_rewards": 0, "max_reward": -np.inf, "other_slots_reset": 0}
    while True:
        actions = random_actions(rng, (port.num_envs, port.n_agents), port.continuous_actions)
        if scripted is not None:
            actions[SLOT] = scripted(env, rng)
        steps_before = port.steps.copy()
        ref_obs, ref_rewards, ref_terminated, ref_truncated = step_arrays(env, actions[SLOT])
        obs, rewards, terminated, truncated, info = port.step(actions)
        counts["steps"] += 1
        counts["nonzero_rewards"] += int(np.any(ref_rewards != 0))
        counts["max_reward"] = max(counts["max_reward"], float(ref_rewards.max()))
        assert obs.dtype == np.float32 and obs.shape == (port.num_envs, port.n_agents, port.obs_dim)
        assert rewards.shape == (port.num_envs, port.n_agents)
        np.testing.assert_allclose(info["final_obs"][SLOT], ref_obs, atol=ATOL, rtol=0)
        np.testing.assert_allclose(rewards[SLOT], ref_rewards, atol=ATOL, rtol=0)
        assert (bool(terminated[SLOT]), bool(truncated[SLOT])) == (ref_terminated, ref_truncated)
        # every slot: truncation exactly at max_cycles, finished slots restarted, the others untouched
        np.testing.assert_array_equal(truncated, steps_before + 1 >= port.max_cycles)
        done = terminated | truncated
        np.testing.assert_array_equal(port.steps, np.where(done, 0, steps_before + 1))
        np.testing.assert_array_equal(obs[~done], info["final_obs"][~done])
        assert np.all(port.agent_vel[done] == 0.0)
        counts["other_slots_reset"] += int(done.sum() - done[SLOT])
        if ref_terminated or ref_truncated:
            assert not np.array_equal(obs[SLOT], info["final_obs"][SLOT]), "finished slot was not reset"
            return counts


def start(env, seed: int, warmup: int, rng: np.random.Generator) -> None:
    """Reset mpe2 with ``seed`` and take ``warmup`` random steps (so the slot starts mid-episode)."""
    env.reset(seed=seed)
    for _ in range(warmup):
        step_arrays(env, random_actions(rng, (len(env.possible_agents),), env.unwrapped.continuous_actions))


def check_parity(scenario: str, seed: int, episodes: int = 2, scripted: Scripted | None = None,
                 prepare: Callable[[object, np.random.Generator], None] | None = None, **kwargs) -> dict[str, float]:
    """Several whole episodes of ``scenario`` in parity. The first starts mid-episode (after a few
    mpe2 steps), so the port's other slots finish at other times and are auto-reset meanwhile.
    ``prepare`` may rearrange mpe2's world before it is copied (crowds, contests, …). The returned
    counts include ``other_slots_reset``: how often another slot finished and restarted meanwhile."""
    env = make_reference(scenario, **kwargs)
    port = make_batched(scenario, NUM_ENVS, seed=seed + 1000, **kwargs)
    rng = np.random.default_rng(seed)
    totals: dict[str, float] = {}
    for episode in range(episodes):
        start(env, seed=100 * seed + episode, warmup=7 if episode == 0 else 0, rng=rng)
        if prepare is not None:
            prepare(env, rng)
        first_obs = obs_to_array(env, {a: env.unwrapped.observe(a) for a in env.possible_agents})
        port.load_state(SLOT, env)
        for key, value in run_episode_in_parity(env, port, first_obs, rng, scripted).items():
            totals[key] = max(totals.get(key, value), value) if key == "max_reward" else totals.get(key, 0) + value
    return totals


# --------------------------------------------------------------------------------------------
# simple_spread
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("continuous_actions", [False, True])
@pytest.mark.parametrize("N", [1, 3, 6, 9])
@pytest.mark.parametrize("seed", [0, 1])
def test_spread_parity(N: int, continuous_actions: bool, seed: int) -> None:
    totals = check_parity("simple_spread", seed, N=N, continuous_actions=continuous_actions)
    assert totals["steps"] == 25 - 7 + 25 and totals["other_slots_reset"] == NUM_ENVS - 1


def crowd_agents(env, rng: np.random.Generator) -> None:
    """Put all agents within 0.1 of the origin, moving: strong contact forces from the start."""
    for agent in env.unwrapped.world.agents:
        agent.state.p_pos = rng.uniform(-0.1, 0.1, 2)
        agent.state.p_vel = rng.uniform(-2.0, 2.0, 2)


@pytest.mark.parametrize("continuous_actions", [False, True])
def test_spread_parity_in_a_crowd(continuous_actions: bool) -> None:
    totals = check_parity("simple_spread", 3, prepare=crowd_agents, N=6, continuous_actions=continuous_actions,
                          local_ratio=0.3)
    assert totals["steps"] > 2


def agents_on_landmarks(env, rng: np.random.Generator) -> None:
    world = env.unwrapped.world
    for agent, landmark in zip(world.agents, world.landmarks):
        agent.state.p_pos = landmark.state.p_pos + rng.uniform(-0.01, 0.01, 2)
        agent.state.p_vel = np.zeros(2)


def test_spread_parity_terminate_on_success() -> None:
    """Agents placed on their landmarks, standing still: mpe2 terminates after one step; so must the port."""
    totals = check_parity("simple_spread", 4, prepare=agents_on_landmarks, scripted=lambda env, rng: np.zeros(3, int),
                          N=3, terminate_on_success=True)
    assert totals["steps"] == 2  # two episodes, one step each


# --------------------------------------------------------------------------------------------
# simple_tag
# --------------------------------------------------------------------------------------------

TAG_SIZES = [
    dict(),
    dict(num_good=2, num_adversaries=4, num_obstacles=3),
    dict(num_good=1, num_adversaries=1, num_obstacles=0),
    dict(num_good=3, num_adversaries=2, num_obstacles=1),
]


@pytest.mark.parametrize("continuous_actions", [False, True])
@pytest.mark.parametrize("sizes", TAG_SIZES, ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()) or "default")
def test_tag_parity(sizes: dict, continuous_actions: bool) -> None:
    totals = check_parity("simple_tag", 5, continuous_actions=continuous_actions, **sizes)
    assert totals["other_slots_reset"] == NUM_ENVS - 1


def crowd_and_push_out(env, rng: np.random.Generator) -> None:
    """Crowd everyone onto the first obstacle, fast (speed limits bite), good agents near or past the border."""
    world = env.unwrapped.world
    crowd_agents(env, rng)
    for agent in world.agents:
        agent.state.p_pos = world.landmarks[0].state.p_pos + rng.uniform(-0.15, 0.15, 2)
        if not agent.adversary:
            agent.state.p_pos = rng.choice([-1, 1], 2) * rng.uniform(0.85, 1.3, 2)


@pytest.mark.parametrize("continuous_actions", [False, True])
def test_tag_parity_contacts_speed_limits_and_border(continuous_actions: bool) -> None:
    totals = check_parity("simple_tag", 6, prepare=crowd_and_push_out, continuous_actions=continuous_actions,
                          num_good=3, num_adversaries=4, num_obstacles=2)
    assert totals["nonzero_rewards"] > 5


def good_agents_caught(env, rng: np.random.Generator) -> None:
    world = env.unwrapped.world
    adversaries = [a for a in world.agents if a.adversary]
    for k, agent in enumerate(a for a in world.agents if not a.adversary):
        agent.state.p_pos = adversaries[k % len(adversaries)].state.p_pos + 0.01
        agent.state.p_vel = np.zeros(2)
    for adversary in adversaries:
        adversary.state.p_vel = np.zeros(2)


def test_tag_parity_terminate_on_success() -> None:
    totals = check_parity("simple_tag", 7, prepare=good_agents_caught, scripted=lambda env, rng: np.zeros(4, int),
                          num_good=2, num_adversaries=2, terminate_on_success=True)
    assert totals["steps"] == 2


# --------------------------------------------------------------------------------------------
# collect_treasure
# --------------------------------------------------------------------------------------------


def toward(delta: np.ndarray) -> int:
    """The discrete move that best follows ``delta`` (0 when already there)."""
    if np.max(np.abs(delta)) < 0.02:
        return 0
    axis = int(np.argmax(np.abs(delta)))
    return 1 + 2 * axis + int(delta[axis] > 0)


def treasure_hunter(env, rng: np.random.Generator) -> np.ndarray:
    """Scripted from mpe2's world: empty collectors chase the nearest live treasure, loaded ones
    their deposit; deposits chase the nearest collector carrying their type. Lots of events."""
    world = env.unwrapped.world
    collectors = [a for a in world.agents if a.collector]
    deposits = [a for a in world.agents if not a.collector]
    alive = [lm for lm in world.landmarks if lm.alive]
    moves = []
    for agent in world.agents:
        if agent.collector and agent.holding is None:
            goals = [lm.state.p_pos for lm in alive]
        elif agent.collector:
            goals = [deposits[agent.holding].state.p_pos]
        else:
            goals = [c.state.p_pos for c in collectors if c.holding == agent.d_i] or [agent.state.p_pos]
        goal = min(goals, key=lambda g: np.linalg.norm(g - agent.state.p_pos)) if goals else agent.state.p_pos
        moves.append(toward(goal - agent.state.p_pos))
    if env.unwrapped.continuous_actions:
        actions = np.zeros((len(moves), 5), dtype=np.float32)
        actions[np.arange(len(moves)), moves] = 1.0
        return actions
    return np.array(moves)


def count_events(counter: dict[str, int]) -> Scripted:
    def scripted(env, rng):
        world = env.unwrapped.world
        counter["gone"] += sum(not lm.alive for lm in world.landmarks)
        counter["holding"] += sum(a.holding is not None for a in world.agents if a.collector)
        return treasure_hunter(env, rng)

    return scripted


TREASURE_SIZES = [
    dict(),
    dict(num_collectors=3, num_deposits=1, num_treasures=2),
    dict(num_collectors=10, num_deposits=3, num_treasures=12),
    dict(num_collectors=1, num_deposits=1, num_treasures=1),
]


@pytest.mark.parametrize("continuous_actions", [False, True])
@pytest.mark.parametrize("sizes", TREASURE_SIZES, ids=lambda s: "-".join(f"{k}{v}" for k, v in s.items()) or "default")
def test_treasure_parity_random_actions(sizes: dict, continuous_actions: bool) -> None:
    totals = check_parity("collect_treasure", 8, continuous_actions=continuous_actions, **sizes)
    assert totals["other_slots_reset"] == NUM_ENVS - 1


@pytest.mark.parametrize("continuous_actions", [False, True])
@pytest.mark.parametrize("sizes", TREASURE_SIZES[:3], ids=["default", "small", "large"])
def test_treasure_parity_with_pickups_respawns_and_deliveries(sizes: dict, continuous_actions: bool) -> None:
    """A treasure-hunting script makes pickups, respawns (drawn from the copied mpe2 generator) and
    deliveries happen; rewards then include the +5 events, and everything still matches."""
    counter = {"gone": 0, "holding": 0}
    totals = check_parity("collect_treasure", 9, episodes=3, scripted=count_events(counter),
                          continuous_actions=continuous_actions, **sizes)
    assert counter["gone"] >= 2 and counter["holding"] >= 10, counter
    assert totals["nonzero_rewards"] == totals["steps"]


def collectors_on_treasures(env, rng: np.random.Generator) -> None:
    """Contested pickups: collector 0 touches treasures 0 and 1, collectors 1 and 2 both touch
    treasure 2, collector 3 already holds type 0 and touches deposit 0 and treasure 3."""
    world = env.unwrapped.world
    collectors = [a for a in world.agents if a.collector]
    deposits = [a for a in world.agents if not a.collector]
    treasures = world.landmarks
    for agent in world.agents:
        agent.state.p_vel = np.zeros(2)
    treasures[1].state.p_pos = treasures[0].state.p_pos + np.array([0.04, 0.0])
    collectors[0].state.p_pos = treasures[0].state.p_pos + np.array([0.02, 0.0])
    collectors[1].state.p_pos = treasures[2].state.p_pos + np.array([0.01, 0.0])
    collectors[2].state.p_pos = treasures[2].state.p_pos - np.array([0.01, 0.0])
    collectors[3].holding = 0
    collectors[3].state.p_pos = treasures[3].state.p_pos
    deposits[0].state.p_pos = treasures[3].state.p_pos + np.array([0.0, 0.05])


def test_treasure_parity_contested_pickups() -> None:
    totals = check_parity("collect_treasure", 10, prepare=collectors_on_treasures,
                          scripted=lambda env, rng: np.zeros(8, int), num_collectors=6, num_treasures=6)
    # two pickups (collector 0 takes treasure 0 only, collector 1 beats collector 2 to treasure 2)
    # and one delivery in the first step: a global reward of 15, which deposit 0 gets almost all of
    assert totals["max_reward"] > 14


def sequential_pickup(touching: np.ndarray) -> np.ndarray:
    """mpe2's loop in ``Scenario.post_step``, for one environment: treasures in order, first free collector."""
    free = np.ones(touching.shape[1], dtype=bool)
    picker = np.full(touching.shape[0], -1)
    for t in range(touching.shape[0]):
        for c in range(touching.shape[1]):
            if free[c] and touching[t, c]:
                picker[t], free[c] = c, False
                break
    return picker


def test_greedy_pickup_equals_mpe2_loop() -> None:
    rng = np.random.default_rng(0)
    touching = rng.random((2000, 6, 5)) < 0.4
    expected = np.stack([sequential_pickup(t) for t in touching])
    np.testing.assert_array_equal(greedy_pickup(touching), expected)
    assert np.any(expected == -1) and len(np.unique(expected)) == 6  # every outcome occurs


def test_load_state_refuses_a_mismatched_env() -> None:
    port = make_batched("simple_spread", 2, N=3)
    with pytest.raises(ValueError, match="agents or landmarks"):
        port.load_state(0, make_reference("simple_spread", N=4))
    with pytest.raises(ValueError, match="continuous_actions"):
        port.load_state(0, make_reference("simple_spread", N=3, continuous_actions=True))
    with pytest.raises(ValueError, match="slot"):
        port.load_state(2, make_reference("simple_spread", N=3))
