"""Chapter 12's shipped runs on simple_spread with decoys (``assets/decoys``): each shipped point has its seeds, the
designs of a point differ in the one field the chapter compares, the attention actor's checkpoints hold their
scores on unseen episodes of the reference environment and beat the random team, and the zero-shot table scores
the shipped checkpoints at their own (m, d) as their training run did."""
from __future__ import annotations

import math

import numpy as np
import pytest

from attnmarl import load_policy
from attnmarl.checkpoints import shipped_checkpoint, shipped_curve, shipped_runs
from attnmarl.envs import evaluate
from attnmarl.envs.decoys import NAME
from attnmarl.notebook.explorers.decoys import (
    FOLDER,
    SHIPPED_DECOY_POINTS,
    decoy_baselines,
    decoy_runs,
    decoy_zero_shot,
)
from attnmarl.train import DECOY_DECISIVE, DECOY_DESIGNS, named_config

SHIPPED = {(3, 1): {"entity": 3, "mean": 3, "flat": 3, "oracle": 3, "nobit": 3},
           (3, 3): {"entity": 3, "mean": 3, "flat": 3, "oracle": 3, "nobit": 3},
           (6, 1): {"entity": 3, "mean": 3, "flat": 3, "oracle": 3, "nobit": 3},
           (6, 3): {"entity": 10, "mean": 10, "flat": 10, "oracle": 10, "nobit": 10}}
"""The points chapter 12 reads, (m, d) -> design -> seeds shipped (seeds 0 to n - 1)."""

CHECKPOINT_SEEDS = {"entity": 3}
"""Seeds whose checkpoints ship, by design (seed 0 for the others): the attention actor's first three, which the
zero-shot table plays."""

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny networks: conftest.py


@pytest.mark.parametrize(("m", "d"), list(SHIPPED))
def test_every_design_ships_its_seeds_that_differ_only_in_what_the_chapter_compares(m, d):
    """Each design at (m, d): its seeds, each curve ending at the run's 200-episode mpe2 score, checkpoints where
    CHECKPOINT_SEEDS says; the same budget for all (12 million agent-decisions); each design's config differs from
    the attention actor's exactly in the fields DECOY_DESIGNS names."""
    configs = {}
    for design, seeds in SHIPPED[m, d].items():
        runs = decoy_runs(m, d, design)
        assert [r["seed"] for r in runs] == list(range(seeds)), design
        for r in runs:
            assert bool(r["checkpoint"]) == (r["seed"] < CHECKPOINT_SEEDS.get(design, 1)), r["name"]
            curve = shipped_curve(FOLDER, r["name"], r["seed"])
            assert curve["env_steps"][-1] == r["env_steps"] and curve["eval_episodes"][-1] == 200
            assert curve["eval_return"][-1] == pytest.approx(r["final_return"], abs=1e-3)
            config = named_config(r["name"], r["seed"])
            kwargs = {k: v for k, v in r["scenario_kwargs"].items() if k != "continuous_actions"}
            assert kwargs == {"N": m, "decoys": d} and not r["scenario_kwargs"].get("continuous_actions")
            assert m * config.total_steps == 12_000_000
        configs[design] = dict(runs[0]["config"])
    for design, change in DECOY_DESIGNS.items():
        if design in configs:
            differs = {k for k in configs[design] if configs[design][k] != configs["entity"][k]}
            assert differs == set(change), (design, differs)


def test_the_decisive_points_have_ten_seeds_of_attention_and_of_mean_pooling():
    """DECOY_DECISIVE's points carry the chapter's verdict: ten seeds a design (at d = 0 chapter 10's runs); the points
    the synthesis reads are the ones this file checks."""
    assert set(SHIPPED) == set(SHIPPED_DECOY_POINTS)
    for m, d in DECOY_DECISIVE:
        assert len(decoy_runs(m, d, "entity")) >= 10 and len(decoy_runs(m, d, "mean")) >= 10


def decoy_checkpoints() -> list[dict]:
    return [r for r in shipped_runs(FOLDER) if r["checkpoint"]]


@pytest.mark.parametrize("run", [pytest.param(r, id=r["checkpoint"], marks=() if r["name"] == "decoys3-spread6-entity"
                                              and r["seed"] == 0 else pytest.mark.slow)
                                 for r in decoy_checkpoints()])
def test_a_shipped_decoy_checkpoint_holds_its_score_on_unseen_episodes_and_beats_random(run):
    """Each checkpoint, loaded with load_policy (which rebuilds its decoy control, if any) and played on 60
    episodes of the reference environment that its shipped score did not use (seeds from 1000): within three
    standard errors of their difference; and its shipped score above the random team's by more than two."""
    policy = load_policy(shipped_checkpoint(FOLDER, run["name"], run["seed"]))
    mean, sem = evaluate(policy, NAME, 60, seed=1000, **run["scenario_kwargs"])
    assert abs(mean - run["final_return"]) <= 3 * math.hypot(sem, run["final_sem"]), (mean, sem)
    kwargs = run["scenario_kwargs"]
    random, _ = decoy_baselines()[kwargs["N"], kwargs["decoys"]]
    assert run["final_return"] > random + 2 * run["final_sem"] * math.sqrt(2), (run["final_return"], random)


def test_the_zero_shot_table_plays_the_shipped_checkpoints_at_their_own_point_as_their_runs_scored():
    """At the (m, d) it was trained at, a checkpoint in ``zero-shot.json`` scores what its run's summary recorded
    on the same 200 episodes (the same policy, the same seeds); elsewhere every share is a finite number."""
    table = decoy_zero_shot()
    assert table, "zero-shot.json lists no runs"
    for run, points in table.items():
        folder, name = run.split("/")
        assert folder == FOLDER
        runs = {r["seed"]: r for r in shipped_runs(FOLDER, name)}
        kwargs = next(iter(runs.values()))["scenario_kwargs"]
        own = (kwargs["N"], kwargs["decoys"])
        random, greedy = decoy_baselines()[own]
        for seed, share in points[own].items():
            recorded = 100 * (runs[seed]["final_return"] - random) / (greedy - random)
            assert share == pytest.approx(recorded, abs=0.05), (name, seed)
        assert all(np.isfinite(s) for by_seed in points.values() for s in by_seed.values())


def test_the_decoy_explorer_shows_each_agents_alpha_on_the_entities_it_belongs_to():
    """decoy_frame: agent i's alpha row sums to 1 and is sorted self, targets, decoys, other agents; the arena rings
    each entity by that weight (the agent's own entity, the focus, carries its self token's); the caption's decoys'
    part is the row's weight on decoy columns over its weight on landmark columns; another world or agent redraws."""
    from attnmarl.checkpoints import load_agent
    from attnmarl.notebook.explorers.decoys import decoy_explorer, decoy_frame

    agent, _ = load_agent(shipped_checkpoint(FOLDER, "decoys3-spread6-entity", 0))
    frame = decoy_frame(agent.actor, 6, 3, seed=2, i=1)
    arena, heat = frame.panels
    row, cols = heat.values[0], heat.cols
    assert row.sum() == pytest.approx(1.0, abs=1e-5) and cols[0] == "a2"
    assert cols[1:7] == [f"T{n}" for n in range(1, 7)] and cols[7:25] == [f"D{n}" for n in range(1, 19)]
    assert sorted(cols[25:]) == ["a1", "a3", "a4", "a5", "a6"]
    part = row[7:25].sum() / row[1:25].sum()
    assert f"{part:.2f} of its weight on landmarks lands on decoys" in frame.caption
    labels = list(arena.labels)
    ringed = {label: arena.emphasis[labels.index(label)] for label in cols}
    scale = max(row[1:])
    assert all(ringed[c] == pytest.approx(min(row[k] / scale, 1.0), abs=1e-6) for k, c in enumerate(cols) if k)
    assert arena.focus == labels.index("a2")
    other = decoy_frame(agent.actor, 6, 3, seed=3, i=1)
    assert not np.allclose(other.panels[1].values, heat.values)
    explorer = decoy_explorer(agent.actor, worlds=2)  # agents named as in the arena: a1 ... a6
    assert explorer.update(seed=1, agent="a2")["caption"].startswith("a2: ")
    with pytest.raises(ValueError, match="agent index"):
        decoy_frame(agent.actor, 6, 3, seed=0, i=6)
