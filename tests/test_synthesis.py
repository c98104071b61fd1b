"""The synthesis of Parts II and III (attnmarl.notebook.explorers.synthesis): every comparison the book ships runs
for, each read on the random → greedy range of its scenario and m, with the interval attnmarl.stats computes and a
verdict that follows it."""
from __future__ import annotations

import functools

import numpy as np
import pytest

from attnmarl.notebook.explorers.scale import scale_runs, treasure_baselines, zero_shot_results
from attnmarl.notebook.explorers.synthesis import DESIGNS, Effect, effects, verdict
from attnmarl.stats import Interval, welch_difference


@functools.cache
def rows() -> tuple[Effect, ...]:
    return tuple(effects())


def test_every_design_of_part_ii_has_its_rows_in_chapter_order():
    found = [e.design for e in rows()]
    assert set(found) == set(DESIGNS)
    first = {d: found.index(d) for d in DESIGNS}
    assert sorted(DESIGNS, key=first.get) == list(DESIGNS)
    assert all(len(e.a_shares) >= 3 and len(e.b_shares) >= 3 for e in rows())


def test_a_row_is_its_runs_scores_on_the_range_and_their_welch_interval():
    """The entity actor against mean pooling at m = 12 on simple_spread, by hand from the shipped runs: the shares
    of the random → greedy range and the Welch interval of their difference (chapter 10's +29, 23 to 35)."""
    row = next(e for e in rows() if e.design == "attention vs mean pooling" and e.m == 12
               and e.scenario == "simple_spread")
    low, high = (zero_shot_results()["baselines"][12][k][0] for k in ("random", "greedy"))
    for shares, actor in ((row.a_shares, "entity"), (row.b_shares, "mean")):
        by_hand = [100 * (r["final_return"] - low) / (high - low) for r in scale_runs(12, actor)]
        np.testing.assert_allclose(shares, by_hand)
    assert row.interval == welch_difference(row.a_shares, row.b_shares)
    assert str(row.interval) == "+29.0 [+23.3, +34.7]" and row.kind == "attention ablation" and row.seeds == 10


def test_collect_treasure_rows_are_read_on_the_script_range():
    row = next(e for e in rows() if e.design == "entity actor" and e.scenario == "collect_treasure" and e.m == 4)
    low, high = (treasure_baselines()["baselines"][4][k][0] for k in ("random", "greedy"))
    by_hand = [100 * (r["final_return"] - low) / (high - low) for r in scale_runs(4, "entity", "collect_treasure")]
    np.testing.assert_allclose(row.a_shares, by_hand)


@pytest.mark.parametrize("low,high,n_a,n_b,expected", [
    (1.0, 3.0, 10, 10, "ahead"), (-3.0, -0.5, 10, 12, "behind"), (-1.0, 2.0, 10, 10, "not resolved"),
    (0.0, 2.0, 10, 10, "not resolved"), (1.0, 3.0, 3, 3, "indicative, 3 seeds"),
    (1.0, 3.0, 10, 5, "indicative, 5 seeds"),
    (-1.0, 2.0, 9, 10, "indicative, 9 seeds")])
def test_the_verdict_follows_the_interval_and_needs_ten_seeds_a_design(low, high, n_a, n_b, expected):
    row = rows()[0]
    interval = Interval(estimate=(low + high) / 2, low=low, high=high, level=0.95, statistic="mean", n_a=n_a, n_b=n_b)
    assert verdict(Effect(**{**row.__dict__, "interval": interval})) == expected


def test_rows_are_labelled_by_what_they_isolate():
    """Only a change of attention alone is an attention ablation (DESIGN.md §6)."""
    kinds = {(e.design, e.b): e.kind for e in rows()}
    assert kinds["attention vs mean pooling", "mean pooling"] == "attention ablation"
    assert kinds["targeted messages", "averaged messages"] == "attention ablation"
    assert kinds["centralized policy π", "concatenation policy"] == "attention ablation"
    assert kinds["entity actor", "flat actor"] == "design comparison"
    assert kinds["targeted messages", "no messages"] == "design comparison"
    assert kinds["Qatten mixer", "VDN (sum)"] == "design comparison"


def test_the_reproducing_page_prints_the_seed_plan_of_the_shipped_runs():
    """The plan of ten-seed runs in the reproducing appendix is the one the shipped runs leave to do."""
    from pathlib import Path

    from attnmarl.notebook.explorers.synthesis import seed_plan_markdown

    text = (Path(__file__).resolve().parents[1] / "book" / "reproducing.md").read_text()
    start = text.index("<!-- seed-plan: made by attnmarl.notebook.explorers.synthesis.seed_plan_markdown() -->\n")
    table = text[start:text.index("\n<!-- end seed-plan -->")].split("\n", 1)[1]
    assert table == seed_plan_markdown()


def test_the_seed_plan_trains_the_missing_seeds_of_each_config_up_to_ten():
    from attnmarl.notebook.explorers.synthesis import seed_plan

    plan = seed_plan()
    assert plan[0]["config"] == "pi-spread3-attention" and plan[0]["folder"] == "policy"
    for row in plan:
        shipped, to_train = set(row["shipped"]), set(row["to_train"])
        assert shipped | to_train >= set(range(10)) and not shipped & to_train
        assert (row["cpu_hours"] > 0) == bool(row["to_train"])
    assert {row["folder"] for row in plan if "entity-mean" in row["config"]} == {"ablation"}


@pytest.mark.parametrize("scenario, m, message", [("simple_tag", 3, "has no random → greedy range"),
                                                  ("simple_spread", 100, "no baselines of simple_spread at m = 100")])
def test_a_score_without_a_range_is_refused_not_read_on_another_scenarios(scenario, m, message):
    """range_shares once read any scenario but simple_spread on collect_treasure's range."""
    from attnmarl.notebook.explorers.synthesis import range_shares

    with pytest.raises(ValueError, match=message):
        range_shares([{"final_return": -20.0}], m, scenario)


def test_the_preface_quotes_the_rows_it_names_as_the_synthesis_rounds_them():
    """The preface (book/intro.md) is Markdown and cannot assert what it quotes, so its numbers are checked here
    against the rows they come from: attention against mean pooling on simple_spread (m = 3, 6, 12), on
    collect_treasure (m = 4, 12) and among chapter 12's decoys, the centralized policies pi and mu, the Q critic
    (three times the budget) and the value critic V at m = 6, and MAT against MAT-Dec at m = 6 and 12."""
    from pathlib import Path

    text = " ".join((Path(__file__).parents[1] / "book" / "intro.md").read_text().split())
    pooling = {(e.scenario, e.m, e.setting): round(e.interval.estimate) for e in rows()
               if e.design in ("attention vs mean pooling", "selection with decoys") and e.b == "mean pooling"}
    pi6, mu6 = (next(e for e in rows() if e.design == f"centralized policy {p}" and e.m == 6) for p in "πμ")
    v6 = next(e for e in rows() if e.design == "value critic V" and e.m == 6)
    q6 = next(e for e in rows() if e.design == "Q critic" and e.m == 6 and e.setting.endswith("3× budget"))
    spread = {m: pooling["simple_spread", m, ""] for m in (3, 6, 12)}
    treasure = {m: pooling["collect_treasure", m, ""] for m in (4, 12)}
    quoted = [f"{spread[6]} and {spread[12]} points of the range at $m = 6$ and 12 (ten seeds) against {spread[3]} at "
              "$m = 3$",
              f"({treasure[4]} points at $m = 4$, {treasure[12]} at $m = 12$, three seeds)",
              f"lead by about a tenth of that range ({round(pi6.interval.estimate)} and "
              f"{round(mu6.interval.estimate)} points), the Q critic by {round(q6.interval.estimate)} with three "
              f"times the budget, and the value critic by {round(v6.interval.estimate)}",
              f"{pooling['simple_spread', 6, 'd = 3']} points at $m = 6$ with three decoys per agent",
              f"without the target bit and shuffled slots that come with them, {spread[6]})"]
    twin = {e.m: e.interval.estimate for e in rows() if e.design == "Multi-Agent Transformer" and e.b == "MAT-Dec"
            and not e.setting}
    quoted.append(f"twin again ends higher on average (by {-twin[6]:.1f} and {-twin[12]:.1f} points; three seeds, "
                  "indicative)")
    missing = [q for q in quoted if q not in text]
    assert not missing, f"the preface does not quote these rows as they stand: {missing}"
