"""Chapter 12's shipped runs on Level-Based Foraging (``assets/lbf``): every point (m, design) has its three seeds,
the designs of a team size differ in the one field the chapter compares, and each design's seed-0 checkpoint holds
its score on unseen episodes of ``lbforaging`` and beats the random team."""
from __future__ import annotations

import math

import numpy as np
import pytest

from attnmarl import load_policy
from attnmarl.checkpoints import shipped_checkpoint, shipped_curve, shipped_runs
from attnmarl.envs import evaluate
from attnmarl.envs.foraging import NAME
from attnmarl.notebook.explorers.lbf import FOLDER, lbf_baselines, lbf_runs
from attnmarl.train import LBF_DESIGNS, LBF_MS, named_config

SEEDS = 3
"""Seeds shipped at every point (seeds 0 to 2): chapter 12 calls each LBF difference indicative."""

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny networks: conftest.py


@pytest.mark.parametrize("m", LBF_MS)
def test_every_design_ships_its_seeds_that_differ_only_in_what_the_chapter_compares(m):
    """Each design at m: seeds 0-2, each curve ending at the run's 200-episode score on lbforaging, seed 0's
    checkpoint only; the same budget for all (12 million agent-decisions, in whole updates); each design's config
    differs from the attention actor's exactly in the fields LBF_DESIGNS names."""
    configs = {}
    for design in LBF_DESIGNS:
        runs = lbf_runs(m, design)
        assert [r["seed"] for r in runs] == list(range(SEEDS)), design
        for r in runs:
            assert bool(r["checkpoint"]) == (r["seed"] == 0), r["name"]
            curve = shipped_curve(FOLDER, r["name"], r["seed"])
            assert curve["env_steps"][-1] == r["env_steps"] and curve["eval_episodes"][-1] == 200
            assert curve["eval_return"][-1] == pytest.approx(r["final_return"], abs=1e-3)
            config = named_config(r["name"], r["seed"])
            assert r["scenario"] == NAME and r["scenario_kwargs"]["players"] == m
            steps_per_update = config.num_envs * config.rollout_steps
            assert config.total_steps == 12_000_000 // m
            assert r["env_steps"] == config.total_steps // steps_per_update * steps_per_update
        configs[design] = dict(runs[0]["config"])
    for design, change in LBF_DESIGNS.items():
        differs = {k for k in configs[design] if configs[design][k] != configs["entity"][k]}
        assert differs == set(change), (design, differs)


@pytest.mark.parametrize("run", [pytest.param(r, id=r["checkpoint"], marks=() if r["name"] == "lbf3p-entity"
                                              else pytest.mark.slow)
                                 for r in shipped_runs(FOLDER) if r["checkpoint"]])
def test_a_shipped_lbf_checkpoint_holds_its_score_on_unseen_episodes_and_beats_random(run):
    """Each checkpoint, loaded with load_policy (which samples, as its evaluation did) and played on 60 episodes of
    lbforaging that its shipped score did not use (seeds from 1000): within three standard errors of their
    difference; and its shipped score above the random team's by more than two."""
    policy = load_policy(shipped_checkpoint(FOLDER, run["name"], run["seed"]))
    mean, sem = evaluate(policy, NAME, 60, seed=1000, **run["scenario_kwargs"])
    assert abs(mean - run["final_return"]) <= 3 * math.hypot(sem, run["final_sem"]), (mean, sem)
    random, _ = lbf_baselines()[run["scenario_kwargs"]["players"]]
    assert run["final_return"] > random + 2 * run["final_sem"] * math.sqrt(2), (run["final_return"], random)


def test_the_lbf_explorer_rings_each_seen_entity_by_its_alpha():
    """lbf_episode replays a whole episode of lbforaging (every food on the grid until lifted, the share collected
    rising to its end); lbf_frame's row is the self token's alpha over the tokens present (sums to 1), each ringed
    on the cell its slot points at, every food named with its class; the player itself ringed in black; the grid's
    cells drawn and the player's sight shaded, every entity it sees inside the shade."""
    from attnmarl.checkpoints import load_agent
    from attnmarl.notebook.explorers.lbf import lbf_episode, lbf_explorer, lbf_frame
    from attnmarl.notebook.viz import shade_box

    path = shipped_checkpoint(FOLDER, "lbf3p-entity", 0)
    episode = lbf_episode(path, seed=3)
    assert episode.cells.shape == (episode.steps + 1, 3, 2) and 0 < episode.steps <= 50
    assert ((episode.cells >= 0) & (episode.cells < episode.size)).all()
    assert (np.diff(episode.field, axis=0) <= 0).all()  # food is only ever lifted
    assert (np.diff(episode.collected) >= 0).all() and 0 <= episode.collected[-1] <= 1 + 1e-9
    agent, _ = load_agent(path)
    for t in range(0, episode.steps + 1, 7):
        for i in range(3):
            frame = lbf_frame(agent.actor, episode, t, i)
            arena, heat = frame.panels
            row = heat.values[:, 0]
            assert row.sum() == pytest.approx(1.0, abs=1e-5) and heat.rows[0] == f"p{i + 1}·{episode.levels[i]}"
            assert heat.cols == [f"p{i + 1}"]
            assert arena.focus == i and max(arena.emphasis) == pytest.approx(1.0, abs=1e-6)
            labels = list(arena.labels)
            assert arena.cells == episode.size and arena.lim == episode.size / 2  # one unit a cell
            x0, y0, x1, y1 = shade_box(arena.shade, arena.lim)  # player i's sight, cut at the walls
            inside = (arena.xy[:, 0] > x0) & (arena.xy[:, 0] < x1) & (arena.xy[:, 1] > y0) & (arena.xy[:, 1] < y1)
            assert inside[i] and (x1 - x0, y1 - y0) <= (5, 5)
            assert all(inside[labels.index(col.split(" (")[0])] for col in heat.rows)  # what it sees is shaded
            for col, weight in zip(heat.rows, row):
                name = col.split(" (")[0]
                assert arena.emphasis[labels.index(name)] == pytest.approx(weight / row.max(), abs=1e-5)
                assert (" (" in col) == name.startswith("f")  # a food carries its class
    explorer = lbf_explorer(agent.actor, episode)  # players named as on the grid: p1, p2, p3
    assert explorer.update(t=5, player="p2")["caption"].startswith("p2 ")
    with pytest.raises(ValueError, match="t must be a step"):
        lbf_frame(agent.actor, episode, episode.steps + 1)


def test_the_folder_says_its_scores_are_lbforagings():
    """The index README scores LBF runs on lbforaging, not on mpe2, and lists no mpe2 argument for them."""
    from attnmarl.checkpoints import ASSETS

    readme = (ASSETS / FOLDER / "README.md").read_text()
    assert "the mean per-agent return on lbforaging" in readme and "| lbforaging return ± sem |" in readme
    assert "mpe2" not in readme and "continuous" not in readme
    assert all("continuous_actions" not in r["scenario_kwargs"] for r in shipped_runs(FOLDER))
