"""The policy chapter's measurements and explorers, on the shipped trained agents."""
import numpy as np
import pytest
import torch

from attnmarl.checkpoints import load_agent
from attnmarl.notebook.explorers.policy import (
    action_probabilities,
    entity_attention_statistics,
    make_policy_probe,
    policy_alpha,
    policy_checkpoint,
    policy_curve,
    policy_episode_explorer,
    policy_probe_explorer,
    policy_runs,
    ranked_entities,
)
from attnmarl.notebook.explorers.value import trained_episode


@pytest.fixture(scope="module")
def entity3():
    torch.set_num_threads(1)
    return load_agent(policy_checkpoint("pi-spread3-entity"))


def test_entity_alpha_is_a_distribution_over_every_entity(entity3):
    agent, config = entity3
    episode = trained_episode(agent, config, seed=0)
    weights = policy_alpha(agent, config, episode.obs)
    assert weights.alpha.shape == (26, 2, 3, 6) and weights.keys == tuple(range(6))
    np.testing.assert_allclose(weights.alpha.sum(-1), 1.0, atol=1e-5)
    assert weights.key_labels == ["a1", "a2", "a3", "L1", "L2", "L3"]
    # agent i's own column is its self token, the first of its tokens
    with torch.no_grad():
        _, raw = agent.actor.outputs_and_alpha(torch.from_numpy(episode.obs))
    for i in range(3):
        np.testing.assert_allclose(weights.alpha[:, :, i, i], raw[:, i, :, 0].numpy(), atol=1e-7)
    probabilities = action_probabilities(agent, episode.obs)
    assert probabilities.shape == (26, 3, 5)
    np.testing.assert_allclose(probabilities.sum(-1), 1.0, atol=1e-5)


def test_ranked_treasure_tokens_are_mapped_to_the_entities_mpe2_sorted():
    """collect_treasure lists other agents and treasures nearest first: the entity behind each token,
    found from the recorded positions, must be the one whose offset the observation holds."""
    from attnmarl.envs import token_layout
    from attnmarl.notebook.explorers.mpe import record_episode

    sizes = dict(num_collectors=4, num_deposits=2, num_treasures=4)
    episode = record_episode("collect_treasure", seed=3, **sizes)  # the treasure-hunter script: pickups happen
    assert not episode.visible.all()  # some treasure was collected on the way: the dead-last rule is exercised
    for t in range(episode.steps + 1):
        for i in range(len(episode.agents)):
            layout, order = token_layout("collect_treasure", i, **sizes), ranked_entities(episode, t, i)
            assert order[0] == i and sorted(order) == list(range(len(episode.positions[t])))
            for columns, entity in zip(layout.columns[1:], order[1:]):
                offset = episode.obs[t, i, list(columns[:2])]
                if episode.visible[t, entity]:
                    np.testing.assert_allclose(offset, episode.positions[t, entity] - episode.positions[t, i],
                                               atol=1e-5)
                else:
                    assert (offset == 0).all()


def test_centralized_alpha_has_the_agents_as_keys():
    agent, config = load_agent(policy_checkpoint("pi-spread6-attention"))
    episode = trained_episode(agent, config, seed=0)
    weights = policy_alpha(agent, config, episode.obs[:3])
    assert weights.alpha.shape == (3, 2, 6, 12) and weights.keys == tuple(range(6))
    assert (weights.alpha[..., 6:] == 0).all()
    np.testing.assert_allclose(weights.alpha.sum(-1), 1.0, atol=1e-5)


def test_policies_without_attention_or_with_continuous_actions_are_refused(entity3):
    flat, flat_config = load_agent(policy_checkpoint("pi-spread6-flat"))
    with pytest.raises(ValueError, match="attention policy"):
        policy_alpha(flat, flat_config, np.zeros((1, 6, 36), dtype=np.float32))
    with pytest.raises(ValueError, match="attention policy"):
        policy_probe_explorer(flat, flat_config)
    with pytest.raises(ValueError, match="entity actor on simple_spread"):
        entity_attention_statistics(flat, flat_config, episodes=1)
    mu, mu_config = load_agent(policy_checkpoint("mu-spread3-attention"))
    with pytest.raises(ValueError, match="discrete policy"):
        action_probabilities(mu, np.zeros((1, 3, 18), dtype=np.float32))


def test_the_trained_entity_actor_attends_to_the_landmark_it_will_cover():
    """The chapter's claim, on seed 0 at m = 6: the most-attended landmark is the one the agent ends
    on far more often than chance, and the agents end on different landmarks."""
    agent, config = load_agent(policy_checkpoint("pi-spread6-entity"))
    stats = entity_attention_statistics(agent, config, episodes=3)
    for key in ("on_landmarks", "on_agents", "on_self", "nearest_landmark", "final_landmark", "final_is_top",
                "distinct_top", "distinct_final"):
        assert 0.0 <= stats[key] <= 1.0, key
    assert stats["on_landmarks"] + stats["on_agents"] + stats["on_self"] == pytest.approx(1.0, abs=1e-5)
    assert stats["final_is_top"] > 3 * stats["chance_final_is_top"]
    assert stats["final_landmark"] > 3 * stats["uniform_one_landmark"]
    assert stats["distinct_top"] > 10 * stats["chance_distinct"]
    assert stats["chance_distinct"] == pytest.approx(720 / 6**6)


def test_the_probe_starts_from_the_mpe2_state_and_moving_a_landmark_moves_the_weights(entity3):
    agent, config = entity3
    probe = make_policy_probe(agent, config, seed=0, t=5)
    weights, probabilities = probe.run(0, None)
    expected = policy_alpha(agent, config, probe.episode.obs[5:6])
    np.testing.assert_allclose(weights.alpha, expected.alpha, atol=1e-6)
    np.testing.assert_array_equal(probe.true_probabilities, probabilities[0])
    landmark = 3  # world.entities: a0 a1 a2 L0 L1 L2
    sweep = np.array([probe.run(landmark, (x, y))[0].alpha[0].mean(0)[:, landmark]
                      for x in (-1.0, 0.0, 1.0) for y in (-1.0, 0.0, 1.0)])  # (9, m): alpha on L0
    assert np.ptp(sweep, axis=0).max() > 0.2  # where L0 is changes how much someone attends to it
    np.testing.assert_allclose(probe.run(0, None)[0].alpha, weights.alpha)  # the state was restored
    with pytest.raises(ValueError, match="entity index"):
        probe.run(6, (0.0, 0.0))
    with pytest.raises(ValueError, match=r"t must be an int in \[0, 25\]"):
        make_policy_probe(agent, config, t=26)


def test_the_explorers_redraw_when_their_controls_move(entity3):
    agent, config = entity3
    probe = policy_probe_explorer(agent, config)
    first = probe.update()
    moved = probe.update(x=-1.0, y=1.0)
    assert moved["panels"][0]["xy"][3] == [-1.0, 1.0] and moved["panels"][1] != first["panels"][1]
    assert probe.update(query="a3 (agent_2)")["panels"][0]["focus"] == 2
    probe.live()
    before = probe.markup
    probe.widgets["moved"].value = "a2 (agent_1)"
    assert probe.markup != before
    player = policy_episode_explorer(agent, config, seed=3)
    assert player.update(t=0)["panels"][1] != player.update(t=12)["panels"][1]
    assert player.update(agent_index="a2 (agent_1)")["panels"][0]["focus"] == 1


def test_the_shipped_runs_have_their_seeds_and_curves_that_end_on_the_final_score():
    from attnmarl.notebook.explorers.synthesis import seed_plan

    runs = policy_runs()
    names = {r["name"] for r in runs}
    assert {"pi-spread3-entity", "pi-spread6-entity", "pi-spread6-flat", "mu-spread6-attention",
            "pi-tag-attention", "pi-spread6-absolute"} <= names
    # the decisive point of chapters 8 and 10 (explorers.scale.SEEDS), and the rows the ten-seed plan has finished
    done = {row["config"] for row in seed_plan() if not row["to_train"]}
    ten = {"pi-spread6-entity", "pi-spread6-flat"} | done
    assert {"pi-spread3-attention", "pi-spread3-concat"} <= ten
    for name in names:
        assert sorted(r["seed"] for r in runs if r["name"] == name) == list(range(10 if name in ten else 3)), name
    for r in runs:
        curve = policy_curve(r["name"], r["seed"])
        assert curve["env_steps"][-1] == r["env_steps"] and curve["eval_episodes"][-1] == r["final_episodes"] == 200
        assert curve["eval_return"][-1] == pytest.approx(r["final_return"], abs=1e-3)
