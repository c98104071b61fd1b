"""The Q-network chapter's explorer (attnmarl.notebook.explorers.qnet), the simple_tag chase baseline and the table of
trained teams against fixed opponents (attnmarl.versus)."""
import json

import numpy as np
import pytest
import torch

from attnmarl import load_policy
from attnmarl.algos.maddpg import MADDPGConfig, force_to_action, make_agent
from attnmarl.envs import chase_policy, cross_play, episode_returns, mixed_teams, random_policy
from attnmarl.notebook.explorers.qnet import (
    FORCE_GRID,
    change_scale,
    force_response,
    q_alpha,
    q_episode_explorer,
    q_episode_frame,
    qnet_checkpoint,
)
from attnmarl.notebook.explorers.value import trained_episode
from attnmarl.versus import main, reference_teams, versus_scores

CONFIG = MADDPGConfig(num_envs=8, total_steps=64, learning_starts=0)


@pytest.fixture(scope="module")
def agent():
    torch.manual_seed(0)
    torch.set_num_threads(1)
    return make_agent(CONFIG)


def test_q_alpha_runs_the_critic_on_the_actions_the_actors_took(agent):
    episode = trained_episode(agent, CONFIG, seed=2)
    q_hat, alpha, actions = q_alpha(agent, episode)
    T = episode.steps + 1
    assert q_hat.shape == (T, 3) and alpha.shape == (T, 2, 3, 3) and actions.shape == (T, 3, 5)
    np.testing.assert_allclose(alpha.sum(-1), 1.0, atol=1e-5)
    with torch.no_grad():
        o = torch.from_numpy(episode.obs)
        np.testing.assert_allclose(actions, agent.mu(o).numpy())
        np.testing.assert_allclose(q_hat, agent.q_hat(o, agent.mu(o)).numpy(), atol=1e-6)


def test_force_response_varies_only_agent_js_action(agent):
    episode = trained_episode(agent, CONFIG, seed=2)
    _, _, actions = q_alpha(agent, episode)
    o, a = episode.obs[4], actions[4]
    response = force_response(agent, o, a, i=0, j=2)
    assert response.shape == (len(FORCE_GRID), len(FORCE_GRID))
    row, column = 0, len(FORCE_GRID) - 1  # top right: F_y = +1, F_x = +1
    changed = torch.from_numpy(a).clone()
    changed[2] = force_to_action(torch.tensor([1.0, 1.0]))
    with torch.no_grad():
        expected = agent.q_hat(torch.from_numpy(o)[None], changed[None])[0, 0]
    assert response[row, column] == pytest.approx(float(expected), abs=1e-6)
    assert np.ptp(response) > 0
    with pytest.raises(ValueError, match="j must be an agent index"):
        force_response(agent, o, a, i=0, j=3)


def test_the_explorer_has_a_live_and_a_static_face(agent):
    explorer = q_episode_explorer(agent, CONFIG, seed=1)
    first = explorer.update(t=3, i="a1 (agent_0)", j="a2 (agent_1)")
    assert explorer.update(j="a3 (agent_2)") != first and explorer.update(t=4) != first
    assert np.prod([len(c.static) for c in explorer.controls]) == 26 * 3 * 3  # every step, every i and j
    html = explorer.static_html()
    assert "attnmarlExplorer" in html and len(html) < 300_000
    from attnmarl.algos.maddpg import MADDPGConfig as Config

    concat = Config(num_envs=8, total_steps=64, learning_starts=0, critic="concat")
    with pytest.raises(ValueError, match="self-attention Q critic"):
        q_episode_explorer(make_agent(concat), concat)


def test_the_chase_baseline_chases_and_flees():
    kwargs = {"continuous_actions": True}
    chase, random = chase_policy(True), random_policy("simple_tag", seed=3, **kwargs)
    predators = episode_returns(mixed_teams(chase, random), "simple_tag", 20, seed=500, **kwargs).mean(0)
    idle = episode_returns(random, "simple_tag", 20, seed=500, **kwargs).mean(0)
    escaping = episode_returns(mixed_teams(random, chase), "simple_tag", 20, seed=500, **kwargs).mean(0)
    assert predators[0] > idle[0] + 20  # chasing predators catch the random prey far more often
    assert escaping[3] > idle[3] + 3  # a fleeing prey is caught less and stays inside the arena
    discrete = chase_policy(False)(dict(zip(["adversary_0"], [np.zeros(16, dtype=np.float32)])))
    assert isinstance(discrete["adversary_0"], int)


TAG = {"continuous_actions": True}


def test_versus_scores_are_cross_play_read_by_role(one_thread):
    teams = {"trained": load_policy(qnet_checkpoint("q-tag-attention")), "script": chase_policy(True)}
    scores = versus_scores(teams["trained"], {"script": teams["script"]}, 4, **TAG)
    returns = cross_play(teams, "simple_tag", 4, **TAG)
    assert scores["predators"]["script"][0] == pytest.approx(returns["trained", "script"][:, :3].mean(), abs=1e-4)
    assert scores["prey"]["script"][0] == pytest.approx(returns["script", "trained"][:, 3].mean(), abs=1e-4)
    hunting = returns["trained", "script"][:, :3].mean(1)
    assert scores["predators"]["script"][1] == pytest.approx(hunting.std(ddof=1) / 2, abs=1e-4)


@pytest.mark.slow  # 30 s of mpe2 episodes: make test-slow, which CI runs too
def test_the_shipped_tag_team_beats_a_random_team_in_both_roles_against_the_script(one_thread):
    trained = versus_scores(load_policy(qnet_checkpoint("q-tag-attention")), reference_teams(**TAG), 30, **TAG)
    random = versus_scores(reference_teams(**TAG)["random"], reference_teams(**TAG), 30, **TAG)
    assert trained["predators"]["chase script"][0] > random["predators"]["chase script"][0] + 5.0
    assert trained["prey"]["chase script"][0] > random["prey"]["chase script"][0] + 5.0


def test_the_versus_cli_writes_every_role_and_refuses_runs_of_another_scenario(tmp_path, one_thread):
    run = str(qnet_checkpoint("q-tag-attention")).removesuffix("-seed0.pt")
    out = tmp_path / "versus.json"
    main(["--run", run, "--episodes", "2", "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["command"].startswith("python -m attnmarl.versus --run ") and result["episodes"] == 2
    assert set(result["references"]) == {"chase script", "random"}
    (entry,) = result["runs"]
    assert (entry["run"], entry["seed"]) == ("q-tag-attention", 0)
    expected = versus_scores(load_policy(qnet_checkpoint("q-tag-attention")), reference_teams(**TAG), 2, **TAG)
    assert {role: entry[role] for role in expected} == expected
    spread = str(qnet_checkpoint("q-spread3-attention")).removesuffix("-seed0.pt")
    for bad in (["--run", spread], ["--run", run, "--seeds", "7"]):
        with pytest.raises(SystemExit):
            main([*bad, "--episodes", "2", "--out", str(tmp_path / "bad.json")])
    assert not (tmp_path / "bad.json").exists()


def test_the_force_sweep_panel_has_a_colour_scale_that_fits_its_values(agent):
    """The q̂ change over agent j's forces is small (hundredths): its panel's scale is symmetric about 0 and
    reaches just past the largest change (a 0-1 scale would paint every cell the same colour)."""
    episode = trained_episode(agent, CONFIG, seed=2)
    q_hat, alpha, actions = q_alpha(agent, episode)
    for t in (0, 5, 12):
        sweep = q_episode_frame(agent, episode, q_hat, alpha, actions, t, 0, 1).panels[2]
        largest = np.abs(sweep.values).max()
        assert sweep.cmap == "RdBu_r" and sweep.vmin == -sweep.vmax
        assert largest <= sweep.vmax <= max(2.5 * largest, 0.01)


@pytest.mark.parametrize(("largest", "reach"), [(0.283, 0.5), (0.0004, 0.01), (0.012, 0.02), (3.0, 5.0), (1.0, 1.0)])
def test_change_scale_rounds_the_largest_change_up_to_1_2_or_5(largest, reach):
    assert change_scale(np.array([[-largest, largest / 3]])) == pytest.approx(reach)
