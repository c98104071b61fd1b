"""Limited sight (chapter 11): the sight function, its parity between mpe2 and the port, and the sighted actors.

- mpe2 and the batched port, from the same state and with the same actions, give the same sighted observations
  and flags over whole episodes (the state is copied into the port as in ``tests/test_envs_parity.py``);
- unseen entities' features are exactly 0 and flagged, seen ones untouched; numpy and torch agree;
- the sighted entity actor does not change its output when an unseen entity moves (alpha is exactly 0 there),
  does change it when a seen one moves, and is the plain entity actor with full sight;
- bad radii, scenarios and actors raise ``ValueError``.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from test_envs_parity import ATOL, NUM_ENVS, SLOT, random_actions, start

from attnmarl.algos.mappo import MAPPOConfig, make_agent
from attnmarl.checkpoints import load_agent, shipped_checkpoint
from attnmarl.envs import entity_tokens, make_batched, make_reference, obs_to_array, step_arrays
from attnmarl.envs.sight import (
    NARROW_SIGHT_RHO,
    SIGHT_RHO,
    apply_sight,
    check_rho,
    sight_entities,
    sighted_policy,
    visibility,
    visible_fraction,
)
from attnmarl.nets import EntityActor
from attnmarl.nets.sighted import SightedActor, SightedEntityActor
from attnmarl.notebook.explorers.comm import sight_cost, sighted_agent

pytestmark = pytest.mark.usefixtures("one_thread")


def sighted_parity(N: int, seed: int, rho: float, episodes: int = 2) -> dict[str, int]:
    """Whole episodes of simple_spread on mpe2 and in slot SLOT of the port, stepped with the same actions; at
    every step the sighted observations agree to 1e-5 and the flags exactly. Returns how many entities were
    seen and hidden along the way (so the test knows it exercised both)."""
    env = make_reference("simple_spread", N=N)
    port = make_batched("simple_spread", NUM_ENVS, seed=seed + 1000, N=N)
    rng = np.random.default_rng(seed)
    counts = {"seen": 0, "hidden": 0, "steps": 0}

    def compare(ref_obs: np.ndarray, port_obs: np.ndarray) -> None:
        ref_sighted, ref_visible = apply_sight(ref_obs, rho)
        port_sighted, port_visible = apply_sight(port_obs, rho)
        np.testing.assert_allclose(port_sighted, ref_sighted, atol=ATOL, rtol=0)
        np.testing.assert_array_equal(port_visible, ref_visible)
        counts["seen"] += int(ref_visible.sum())
        counts["hidden"] += int((~ref_visible).sum())

    for episode in range(episodes):
        start(env, seed=100 * seed + episode, warmup=5 if episode == 0 else 0, rng=rng)
        port.load_state(SLOT, env)
        compare(obs_to_array(env, {a: env.unwrapped.observe(a) for a in env.possible_agents}), port.observe()[SLOT])
        while True:
            actions = random_actions(rng, (NUM_ENVS, N), False)
            ref_obs, _, terminated, truncated = step_arrays(env, actions[SLOT])
            _, _, _, _, info = port.step(actions)
            compare(ref_obs, info["final_obs"][SLOT])
            counts["steps"] += 1
            if terminated or truncated:
                break
    return counts


@pytest.mark.parametrize("N", [3, 6])
@pytest.mark.parametrize("seed", [0, 1])
def test_sight_agrees_between_mpe2_and_the_port_over_whole_episodes(N, seed):
    counts = sighted_parity(N, seed, SIGHT_RHO)
    assert counts["steps"] == 25 - 5 + 25
    assert counts["seen"] > 0 and counts["hidden"] > 0


def spread_obs(batch: int = 8, N: int = 4, seed: int = 0) -> np.ndarray:
    """Observations of random simple_spread states from the port: (batch, N, 6N) float32."""
    return make_batched("simple_spread", batch, seed=seed, N=N).reset()


def test_unseen_features_are_exactly_zero_and_flagged_and_seen_ones_untouched():
    obs = spread_obs()
    rho = 0.9
    sighted, visible = apply_sight(obs, rho)
    assert sighted.shape == obs.shape and sighted.dtype == obs.dtype and visible.shape == (8, 4, 7)
    for i in range(4):  # flags from the token layout, distance by distance
        tokens = entity_tokens("simple_spread", obs[:, i], i, N=4)
        cut = entity_tokens("simple_spread", sighted[:, i], i, N=4)
        np.testing.assert_array_equal(cut.tokens[0], tokens.tokens[0])  # the self token is always seen
        for n, name in enumerate(tokens.names[1:]):
            offset = tokens[name][:, :2].astype(np.float64)
            seen = np.hypot(offset[:, 0], offset[:, 1]) <= rho
            np.testing.assert_array_equal(visible[:, i, n], seen, err_msg=name)
            assert np.all(cut[name][~seen] == 0.0), name
            np.testing.assert_array_equal(cut[name][seen], tokens[name][seen])
    assert visible.any() and not visible.all()
    torch_sighted, torch_visible = apply_sight(torch.from_numpy(obs), rho)
    np.testing.assert_array_equal(torch_sighted.numpy(), sighted)
    np.testing.assert_array_equal(torch_visible.numpy(), visible)


def test_sight_of_radius_zero_hides_all_others_and_a_wide_one_hides_nothing():
    obs = spread_obs()
    blind, seen = apply_sight(obs, 0.0)
    assert not seen.any() and np.all(blind[..., 4:] == 0) and np.array_equal(blind[..., :4], obs[..., :4])
    everything, seen = apply_sight(obs, 2 * math.sqrt(8))  # farther than two points of [-1, 1]^2 can be
    assert seen.all() and np.array_equal(everything, obs)


def test_sight_entities_lists_each_columns_entity():
    n, entity = sight_entities(18)
    assert n == 3
    assert entity.tolist() == [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 4, 4, 5, 5]


def test_the_radius_in_the_docstring_is_measured():
    measured = visible_fraction(SIGHT_RHO, N=6, resets=1000)
    assert round(measured["landmarks"], 3) == 0.483 and round(measured["agents"], 3) == 0.481
    assert round(measured["no_landmark"], 3) == 0.040
    narrow = visible_fraction(NARROW_SIGHT_RHO, N=6, resets=1000)
    assert round(narrow["landmarks"], 3) == 0.158 and round(narrow["agents"], 3) == 0.156
    assert round(narrow["no_landmark"], 3) == 0.364


def test_sighted_policy_shows_the_policy_zeros():
    seen = {}

    def policy(obs):
        seen.update(obs)
        return dict.fromkeys(obs, 0)

    env = make_reference("simple_spread", N=3)
    obs, _ = env.reset(seed=0)
    sighted_policy(policy, 0.0)(obs)
    assert all(np.all(o[4:] == 0) and np.array_equal(o[:4], obs[a][:4]) for a, o in seen.items())


# --------------------------------------------------------------------------------------------
# the sighted actors
# --------------------------------------------------------------------------------------------


def world(N: int = 3) -> object:
    """A port with one world: agent 0 at the origin, landmark 0 near it (seen), landmark 1 far away (unseen),
    agent 1 near, agent 2 far; the rest anywhere."""
    port = make_batched("simple_spread", 1, seed=0, N=N)
    port.agent_pos[0, :3] = [[0.0, 0.0], [0.3, 0.2], [-0.9, 0.9]]
    port.agent_vel[0] = 0.1
    port.landmark_pos[0, :2] = [[0.2, -0.3], [0.95, 0.7]]
    return port


def observe(port) -> torch.Tensor:
    return torch.from_numpy(port.observe()).double()


def sighted_entity_actor(N: int = 3, rho: float = SIGHT_RHO) -> SightedEntityActor:
    torch.manual_seed(0)
    return SightedEntityActor("simple_spread", {"N": N}, N, 6 * N, 5, rho).double()


@pytest.mark.parametrize("moved", ["landmark", "agent"])
def test_an_unseen_entity_moving_does_not_change_the_entity_actor_and_a_seen_one_does(moved):
    actor, port = sighted_entity_actor(), world()
    _, alpha = actor.outputs_and_alpha(observe(port))
    y = actor(observe(port))
    hidden = 1 + (1 if moved == "landmark" else 3 + 1)  # token of landmark 1, or of agent 2 in agent 0's view
    assert torch.all(alpha[0, 0, :, hidden] == 0.0) and torch.all(alpha[0, 0, :, 1] > 0.0)
    positions = port.landmark_pos if moved == "landmark" else port.agent_pos
    positions[0, 1 if moved == "landmark" else 2] = [-0.8, -0.9]  # still out of sight of agent 0
    y_moved = actor(observe(port))
    assert torch.equal(y_moved[0, 0], y[0, 0])
    positions[0, 0 if moved == "landmark" else 1] += 0.2  # a seen one moves
    assert not torch.allclose(actor(observe(port))[0, 0], y[0, 0], atol=1e-6)


def test_the_folded_and_the_token_forms_agree_under_sight():
    actor = sighted_entity_actor(N=4, rho=0.8)
    o = torch.from_numpy(spread_obs(N=4)).double()
    y, alpha = actor.outputs_and_alpha(o)
    torch.testing.assert_close(actor(o), y, atol=1e-10, rtol=0)
    mask = torch.cat([torch.ones(8, 4, 1, dtype=torch.bool), visibility(o, 0.8)], -1)
    assert torch.all(alpha.masked_select(~mask[:, :, None, :]) == 0.0)


def test_with_full_sight_the_sighted_entity_actor_is_the_entity_actor_and_loads_its_weights():
    o = torch.from_numpy(spread_obs(N=4)).double()
    torch.manual_seed(1)
    plain = EntityActor("simple_spread", {"N": 4}, 4, 24, 5).double()
    for rho in (None, 2 * math.sqrt(8)):
        sighted = sighted_entity_actor(N=4, rho=rho)
        sighted.load_state_dict(plain.state_dict())
        torch.testing.assert_close(sighted(o), plain(o), atol=1e-12, rtol=0)


def test_the_flat_sighted_actor_reads_the_flags_and_ignores_unseen_entities():
    torch.manual_seed(0)
    actor, port = SightedActor("simple_spread", 3, 18, 5, SIGHT_RHO).double(), world()
    assert actor.pi.obs_dim == 18 + 5
    y = actor(observe(port))
    port.landmark_pos[0, 1] = [-0.8, -0.9]
    assert torch.equal(actor(observe(port))[0, 0], y[0, 0])
    port.landmark_pos[0, 1] = [0.1, 0.1]  # comes into sight: features and flag change
    assert not torch.allclose(actor(observe(port))[0, 0], y[0, 0], atol=1e-6)


def test_the_config_builds_the_sighted_actors_and_the_critic_keeps_full_sight():
    for actor, kind in (("flat", SightedActor), ("entity", SightedEntityActor)):
        agent = make_agent(MAPPOConfig("simple_spread", {"N": 3}, actor=actor, sight_radius=0.5))
        assert type(agent.actor) is kind and agent.actor.rho == 0.5
    agent = make_agent(MAPPOConfig("simple_spread", {"N": 3}, actor="entity", sight_radius=0.5))
    o, far = observe(world()).float(), world()
    far.landmark_pos[0, 1] = [-0.8, -0.9]  # unseen by agent 0, but the critic reads it
    assert not torch.equal(agent.critic(o), agent.critic(observe(far).float()))


@pytest.mark.parametrize("rho", [-0.1, float("nan"), float("inf"), "1.0", True])
def test_a_bad_sight_radius_is_refused(rho):
    with pytest.raises(ValueError, match="sight radius rho"):
        check_rho(rho)
    with pytest.raises(ValueError, match="sight radius rho"):
        MAPPOConfig("simple_spread", {"N": 3}, actor="entity", sight_radius=rho)
    with pytest.raises(ValueError, match="sight radius rho"):
        apply_sight(spread_obs(), rho)


def test_sight_on_another_scenario_actor_or_observation_is_refused():
    with pytest.raises(ValueError, match="limited sight is defined for"):
        MAPPOConfig("simple_tag", {}, actor="entity", sight_radius=1.0)
    with pytest.raises(ValueError, match="limited sight is defined for"):
        SightedEntityActor("simple_tag", {}, 4, 16, 5, 1.0)
    for actor in ("concat", "attention"):
        with pytest.raises(ValueError, match="sight_radius limits what a decentralized actor sees"):
            MAPPOConfig("simple_spread", {"N": 3}, actor=actor, sight_radius=1.0)
    with pytest.raises(ValueError, match="sight_radius limits"):
        MAPPOConfig("simple_spread", {"N": 3}, actor="entity", entity_frame="absolute", sight_radius=1.0)
    with pytest.raises(ValueError, match="6N numbers"):
        apply_sight(np.zeros((2, 17), dtype=np.float32), 1.0)
    with pytest.raises(ValueError, match="numpy array or a torch tensor"):
        apply_sight([0.0] * 18, 1.0)


def test_a_shipped_entity_actor_can_be_given_sight_and_a_flat_one_only_zeros():
    path = shipped_checkpoint("policy", "pi-spread3-entity")
    full, _ = load_agent(path)
    sighted, config = sighted_agent(path, 0.5)
    assert config.sight_radius == 0.5 and type(sighted.actor) is SightedEntityActor
    o = torch.from_numpy(spread_obs(N=3))
    wide, _ = sighted_agent(path, 2 * math.sqrt(8))  # sees everything: the trained actor itself
    torch.testing.assert_close(wide.actor(o), full.actor(o), atol=1e-5, rtol=0)
    assert not torch.allclose(sighted.actor(o), full.actor(o), atol=1e-5)
    scores = sight_cost("pi-spread3-entity", 0.5, episodes=2)
    assert set(scores) == {"full", "zeros", "masked"}
    with pytest.raises(ValueError, match="only a MAPPO entity actor"):
        sighted_agent(shipped_checkpoint("policy", "pi-spread3-flat"))
    assert set(sight_cost("pi-spread3-flat", 0.5, episodes=2)) == {"full", "zeros"}
