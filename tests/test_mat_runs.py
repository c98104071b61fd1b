"""Chapter 13's shipped runs (``assets/mat``): every design at m = 3 has its three seeds at chapter 10's budget and
differs from MAT in the one field the chapter compares; every checkpoint holds its score on unseen mpe2 episodes and
beats the random team; the decision-order and zero-shot tables are what their commands compute from the shipped
checkpoints."""
from __future__ import annotations

import itertools
import math
from dataclasses import asdict, replace

import pytest
import torch

from attnmarl import load_policy
from attnmarl.checkpoints import agent_policy, load_agent_at, shipped_checkpoint, shipped_curve, shipped_runs
from attnmarl.envs import episode_returns, evaluate
from attnmarl.envs.decoys import NAME as DECOYS
from attnmarl.notebook.explorers.decoys import decoy_baselines
from attnmarl.notebook.explorers.mat import (
    FOLDER,
    MAT_DECOY_CONFIGS,
    MAT_DESIGNS,
    SHIPPED_MAT_MS,
    SHUFFLED_MAT_MS,
    mat_decoy_runs,
    mat_runs,
    mat_table,
)
from attnmarl.notebook.explorers.scale import zero_shot_results
from attnmarl.train import named_config
from attnmarl.transfer import zero_shot_scores

CHANGES = {"mat": set(), "matdec": {"variant"}, "shuffled": {"shuffle_order"}}
"""What each design changes in MAT's config (config_differences names the fields)."""

pytestmark = pytest.mark.usefixtures("one_thread")  # small networks: conftest.py


@pytest.mark.parametrize("m", SHIPPED_MAT_MS)
def test_every_design_ships_three_seeds_at_the_entity_actors_budget(m):
    """Seeds 0-2 of each design (MAT in shuffled orders at SHUFFLED_MAT_MS only), every checkpoint shipped (the order
    and zero-shot tables read them), each curve ending at its run's 200-episode score; the env-steps of chapter 10's
    entity actor at the same m; each design's config differs from MAT's in exactly the fields CHANGES names."""
    entity_steps = {r["env_steps"] for r in mat_runs(m, "entity")}
    configs = {}
    for design in [d for d in MAT_DESIGNS if d != "shuffled" or m in SHUFFLED_MAT_MS]:
        runs = mat_runs(m, design)
        assert [r["seed"] for r in runs] == [0, 1, 2], design
        for r in runs:
            assert r["checkpoint"], r["name"]
            curve = shipped_curve(FOLDER, r["name"], r["seed"])
            assert curve["eval_episodes"][-1] == 200 and curve["env_steps"][-1] == r["env_steps"]
            assert curve["eval_return"][-1] == pytest.approx(r["final_return"], abs=1e-3)
            assert {r["env_steps"]} == entity_steps, r["name"]
        configs[design] = dict(runs[0]["config"])
    for design, config in configs.items():
        differs = {k for k in config if config[k] != configs["mat"][k]}
        assert differs == CHANGES[design], (design, differs)


def test_mat_and_mat_dec_ship_three_seeds_at_chapter_12s_decisive_point():
    """Seeds 0-2 of MAT and MAT-Dec on simple_spread with three decoys per agent at m = 6, every checkpoint shipped
    (chapter 13 reads each one's alpha), each curve ending at its 200-episode score, at the env-steps of chapter 12's
    entity actor there; each config is its m = 6 config with chapter 12's scenario, and nothing else changed."""
    entity_steps = {r["env_steps"] for r in mat_decoy_runs("entity")}
    for design, name in MAT_DECOY_CONFIGS.items():
        runs = mat_decoy_runs(design)
        assert [r["seed"] for r in runs] == [0, 1, 2], design
        for r in runs:
            assert r["checkpoint"] and r["scenario"] == DECOYS
            assert (r["scenario_kwargs"]["N"], r["scenario_kwargs"]["decoys"]) == (6, 3)
            curve = shipped_curve(FOLDER, r["name"], r["seed"])
            assert curve["eval_episodes"][-1] == 200 and curve["env_steps"][-1] == r["env_steps"]
            assert curve["eval_return"][-1] == pytest.approx(r["final_return"], abs=1e-3)
            assert {r["env_steps"]} == entity_steps, r["name"]
        plain = named_config(MAT_DESIGNS[design].format(m=6))
        assert asdict(named_config(name)) == asdict(replace(plain, scenario=DECOYS,
                                                            scenario_kwargs={"N": 6, "decoys": 3}))


@pytest.mark.parametrize("run", [pytest.param(r, id=r["checkpoint"], marks=() if r["name"] == "mat-spread3"
                                              and r["seed"] == 0 else pytest.mark.slow)
                                 for r in shipped_runs(FOLDER) if r["checkpoint"]])
def test_a_shipped_mat_checkpoint_holds_its_score_on_unseen_episodes_and_beats_random(run):
    """Each checkpoint, loaded with load_policy (greedy, as its evaluation was) and played on 60 mpe2 episodes its
    shipped score did not use (seeds from 1000): within three standard errors of their difference; and far above
    the random team (on the scenario it trained on: simple_spread, or chapter 12's decoys)."""
    policy = load_policy(shipped_checkpoint(FOLDER, run["name"], run["seed"]))
    mean, sem = evaluate(policy, run["scenario"], 60, seed=1000, **run["scenario_kwargs"])
    assert abs(mean - run["final_return"]) <= 3 * math.hypot(sem, run["final_sem"]), (mean, sem)
    kwargs = run["scenario_kwargs"]
    random = (decoy_baselines()[kwargs["N"], kwargs["decoys"]][0] if run["scenario"] == DECOYS
              else zero_shot_results()["baselines"][kwargs["N"]]["random"][0])
    assert run["final_return"] > random + 10, (run["final_return"], random)


def test_the_order_table_is_what_the_command_computes():
    """Re-scoring seed 0 of MAT in the table's first order and in agent order, on the same 200 episodes, gives the
    table's numbers; the two tables (orders.json, orders-shuffled.json) cover every design and seed at m = 3."""
    table = mat_table("orders.json")
    rows = table["runs"] + mat_table("orders-shuffled.json")["runs"]
    assert sorted((r["run"], r["seed"]) for r in rows) == sorted(
        (f"{FOLDER}/{template.format(m=3)}", seed) for template in MAT_DESIGNS.values() for seed in range(3))
    row = next(r for r in table["runs"] if r["run"] == "mat/mat-spread3" and r["seed"] == 0)
    assert row["orders"] == [list(order) for order in itertools.permutations(range(3))]  # each once
    agent, config = load_agent_at(shipped_checkpoint(FOLDER, "mat-spread3", 0))
    for order, shipped in ((None, row["agent_order"]), ([2, 0, 1], row["scores"][row["orders"].index([2, 0, 1])])):
        agent.order = None if order is None else torch.tensor(order)
        policy = agent_policy(agent, config, seed=table["order_seed"])
        again = episode_returns(policy, "simple_spread", table["episodes"], seed=0, N=3).mean()
        assert again == pytest.approx(shipped, abs=1e-4), order


ORDER_TABLES = ("orders.json", "orders-shuffled.json", "orders-spread6.json", "orders-spread12.json")
"""The order tables of checkpoints scored at the m they trained with (orders-m6.json runs m = 3 weights at 6)."""


@pytest.mark.parametrize("filename", ORDER_TABLES)
def test_an_order_tables_agent_order_is_the_runs_own_final_score(filename):
    """Each row's score in agent order is its run's shipped final score, which the training command measured on the
    same 200 greedy episodes from seed 0 (to the summary's three decimals); each order is a permutation of the run's
    m agents, no order twice. The m = 6 and 12 tables cover MAT's three seeds in ten and five orders each."""
    table = mat_table(filename)
    final = {(f"{FOLDER}/{r['name']}", r["seed"]): r for r in shipped_runs(FOLDER)}
    assert (table["episodes"], table["order_seed"]) == (200, 0)
    for row in table["runs"]:
        run = final[row["run"], row["seed"]]
        assert row["m"] == run["scenario_kwargs"]["N"] and run["final_episodes"] == table["episodes"]
        assert row["agent_order"] == pytest.approx(run["final_return"], abs=1e-3), (row["run"], row["seed"])
        assert all(sorted(order) == list(range(row["m"])) for order in row["orders"])
        assert len({tuple(order) for order in row["orders"]}) == len(row["orders"]) == len(row["scores"])
    larger = {"orders-spread6.json": (6, 10), "orders-spread12.json": (12, 5)}
    if filename in larger:
        m, orders = larger[filename]
        assert [(row["run"], row["seed"], len(row["orders"])) for row in table["runs"]] == [
            (f"{FOLDER}/mat-spread{m}", seed, orders) for seed in range(3)]


def test_the_zero_shot_table_is_what_the_command_computes():
    """One entry of the zero-shot table, MAT seed 0 at m = 2, scored again on the same episodes."""
    table = mat_table("zero-shot.json")
    row = next(r for r in table["runs"] if r["run"] == "mat/mat-spread3" and r["seed"] == 0)
    mean, sem = zero_shot_scores(shipped_checkpoint(FOLDER, "mat-spread3", 0), [2], table["episodes"])[2]
    assert [mean, sem] == pytest.approx(row["scores"][2], abs=1e-4)
