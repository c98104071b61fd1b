"""The value chapter's analysis tools and explorers, on the shipped trained agents."""
import numpy as np
import pytest
import torch

from attnmarl.analysis import sensitivity_matrix, value_sensitivity
from attnmarl.checkpoints import load_agent
from attnmarl.nets import AttentionCritic, ConcatCritic
from attnmarl.notebook.explorers.value import (
    alpha_episode_explorer,
    alpha_statistics,
    binned_mean,
    critic_alpha,
    make_probe,
    probe_explorer,
    probe_values,
    relevance,
    trained_episode,
    value_checkpoint,
    value_curve,
    value_runs,
)


@pytest.fixture(scope="module")
def spread3():
    torch.set_num_threads(1)
    return load_agent(value_checkpoint("spread3-attention"))


@pytest.mark.parametrize("critic_class", [ConcatCritic, AttentionCritic])
def test_value_sensitivity_matches_the_per_sample_jacobian(critic_class):
    torch.manual_seed(0)
    critic = critic_class(4, 7)
    o = torch.randn(5, 4, 7)
    batched = value_sensitivity(critic, o)
    assert batched.shape == (5, 4, 4)
    for b in range(5):
        one = sensitivity_matrix(lambda x: critic(x.unsqueeze(0))[0], o[b])
        torch.testing.assert_close(batched[b], one)


def test_value_sensitivity_follows_a_swap_of_two_other_agents_only_for_attention():
    torch.manual_seed(1)
    o = torch.randn(8, 4, 7)
    swapped = o[:, [0, 2, 1, 3]]  # o^2 and o^3 trade places; agent 1's row must just trade columns
    for critic, follows in ((AttentionCritic(4, 7), True), (ConcatCritic(4, 7), False)):
        before, after = value_sensitivity(critic, o)[:, 0], value_sensitivity(critic, swapped)[:, 0]
        assert torch.allclose(after, before[:, [0, 2, 1, 3]], atol=1e-5) == follows


def test_value_sensitivity_rejects_bad_shapes():
    critic = ConcatCritic(3, 6)
    with pytest.raises(ValueError, match=r"\(batch, m, d_o\)"):
        value_sensitivity(critic, torch.randn(3, 6))
    with pytest.raises(ValueError, match=r"to \(batch, m\)"):
        value_sensitivity(lambda o: o.sum(-1, keepdim=True), torch.randn(2, 3, 6))


def test_binned_mean():
    x = np.array([0.1, 0.2, 0.6, 0.7, 0.8, 1.5])
    y = np.array([1.0, 3.0, 2.0, 4.0, 6.0, 9.0])
    mean, sem, count = binned_mean(x, y, np.array([0.0, 0.5, 1.0, 2.0]))
    np.testing.assert_allclose(mean[:2], [2.0, 4.0])
    np.testing.assert_allclose(sem[:2], [np.std([1, 3], ddof=1) / np.sqrt(2), np.std([2, 4, 6], ddof=1) / np.sqrt(3)])
    assert np.isnan(mean[2]) and list(count) == [2, 3, 1]
    with pytest.raises(ValueError, match="same shape"):
        binned_mean(x, y[:3], np.array([0.0, 1.0]))


def test_relevance_rows_are_distributions_and_distances_match_the_episode(spread3):
    agent, config = spread3
    r = relevance(agent, config, episodes=2)
    m, steps = 3, 2 * 26
    assert r["alpha"].shape == (steps, 2, m, m) and r["sensitivity"].shape == r["distance"].shape == (steps, m, m)
    for key in ("alpha", "sensitivity"):
        np.testing.assert_allclose(r[key].sum(-1), 1.0, atol=1e-5)
        assert (r[key] >= 0).all()
    distance = r["distance"]
    np.testing.assert_allclose(distance, distance.transpose(0, 2, 1))
    assert (distance[:, np.arange(m), np.arange(m)] == 0).all()
    episode = trained_episode(agent, config, seed=0)
    p = episode.positions[5]
    assert distance[5, 0, 2] == pytest.approx(np.linalg.norm(p[0] - p[2]))
    assert "alpha" not in relevance(*load_agent(value_checkpoint("spread3-concat")), episodes=1)


def test_critic_alpha_needs_an_attention_critic():
    agent, config = load_agent(value_checkpoint("spread3-concat"))
    with pytest.raises(ValueError, match="self-attention critic"):
        critic_alpha(agent, trained_episode(agent, config))
    with pytest.raises(ValueError, match="self-attention critic"):
        probe_explorer(agent, config)


def test_the_probe_starts_from_the_mpe2_state_and_moving_an_agent_changes_alpha_and_values(spread3):
    agent, config = spread3
    probe = make_probe(agent, config, seed=0, t=10)
    episode = probe.episode
    o, v_hat, alpha = probe_values(probe, moved=1, xy=None)
    np.testing.assert_array_equal(o, episode.obs[10])  # the port's observation = mpe2's, at step 10
    v_episode, alpha_episode = critic_alpha(agent, episode)
    np.testing.assert_allclose(v_hat, v_episode[10], atol=1e-5)
    np.testing.assert_allclose(alpha, alpha_episode[10], atol=1e-6)
    np.testing.assert_array_equal(probe.true_values, v_hat)

    true_xy = tuple(episode.positions[10, 1])
    o_moved, v_moved, alpha_moved = probe_values(probe, moved=1, xy=(true_xy[0] + 0.5, true_xy[1]))
    # every agent's observation of agent 1 moved by +0.5 in x: agent 0 sees a^1 at o[10:12] (after 3 landmarks)
    assert o_moved[0, 10] == pytest.approx(o[0, 10] + 0.5, abs=1e-5)
    assert o_moved[1, 2] == pytest.approx(o[1, 2] + 0.5, abs=1e-5)  # its own absolute position
    assert np.abs(v_moved - v_hat).max() > 0.01
    # over the arena, where agent 1 stands changes agent 1's value and which agent each head picks
    sweep = [probe_values(probe, 1, (x, y)) for x in (-1.0, 0.0, 1.0) for y in (-1.0, 0.0, 1.0)]
    v_sweep, alpha_sweep = np.array([s[1] for s in sweep]), np.array([s[2] for s in sweep])
    assert np.ptp(v_sweep[:, 1]) > 1.0 and np.ptp(alpha_sweep, axis=0).max() > 0.5
    np.testing.assert_array_equal(probe_values(probe, moved=1, xy=None)[0], o)  # the state was restored
    with pytest.raises(ValueError, match="agent index"):
        probe_values(probe, moved=3, xy=(0.0, 0.0))
    with pytest.raises(ValueError, match=r"t must be an int in \[0, 25\]"):
        make_probe(agent, config, t=26)


def test_the_explorers_redraw_when_their_controls_move(spread3):
    agent, config = spread3
    probe = probe_explorer(agent, config)
    first = probe.update()
    moved = probe.update(x=-1.0, y=1.0)
    assert moved["panels"][0]["xy"][0] == [-1.0, 1.0] and moved["panels"][1] != first["panels"][1]
    assert probe.update(query="a3 (agent_2)")["panels"][0]["focus"] == 2
    probe.live()  # the live face: a finer grid than the static one, every move recomputed
    before = probe.markup
    probe.widgets["y"].value = 0.95
    assert probe.settings["y"] == 0.95 and probe.markup != before
    assert (probe.widgets["x"].min, probe.widgets["x"].max, probe.widgets["x"].step) == (-1.0, 1.0, 0.01)
    assert len(probe.controls[1].static) == 9  # a notebook without a kernel (nbviewer) still gets a grid
    player = alpha_episode_explorer(agent, config, seed=3)
    assert player.update(t=0)["panels"][1] != player.update(t=12)["panels"][1]


def test_the_shipped_curves_and_index_agree():
    runs = value_runs()
    expected = {f"{s}-{c}" for s in ("spread3", "spread6", "tag") for c in ("attention", "concat")}
    assert {r["name"] for r in runs} == expected
    for r in runs:
        curve = value_curve(r["name"], r["seed"])
        assert curve["env_steps"][-1] == r["env_steps"] and curve["eval_episodes"][-1] == r["final_episodes"]
        assert curve["eval_return"][-1] == pytest.approx(r["final_return"], abs=1e-3)
    with pytest.raises(ValueError, match="no shipped curve"):
        value_curve("spread3-attention", 99)


def test_alpha_statistics_of_extreme_weightings():
    m = 4
    uniform = alpha_statistics(np.full((5, m, m), 1 / m))
    assert uniform["max_weight"] == pytest.approx(0.25) and uniform["entropy"] == pytest.approx(1.0)
    assert uniform["row_difference"] == pytest.approx(0.0)
    everyone_on_agent_2 = np.zeros((m, m))
    everyone_on_agent_2[:, 2] = 1.0
    same = alpha_statistics(everyone_on_agent_2)
    assert same["max_weight"] == 1.0 and same["entropy"] == pytest.approx(0.0, abs=1e-9)
    assert same["row_difference"] == 0.0 and same["same_argmax"] == 1.0
    own = alpha_statistics(np.eye(m))  # each agent attends to itself only: rows differ completely
    assert own["row_difference"] == 1.0 and own["same_argmax"] == 0.25
    with pytest.raises(ValueError, match=r"\(\.\.\., m, m\)"):
        alpha_statistics(np.ones((3, 4)))
