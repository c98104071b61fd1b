"""When attention helps in MARL: every comparison Parts II and III trained, with attention and without, in one table.

Each :class:`Effect` is one design at one team size: the shipped seeds' final mpe2 scores of the attention
variant and of its comparison, both as shares of the scenario's random → greedy range at that m (simple_spread:
the random team and the greedy landmark assignment; collect_treasure: the random team and the treasure-hunter
script, as chapter 10 scores it), and the difference with its 95% Welch interval
(:func:`attnmarl.stats.welch_difference`, the interval chosen by its coverage). A difference of scores on one scale
is the difference of their shares times the range's width, so the interval says in points of the range what it
says in returns.

Rows come in two kinds (:data:`KINDS`). An **attention ablation** changes attention and nothing else: the
concatenation twins of chapters 7–9 (the same network reading the same inputs through concatenation instead of
self-attention), attention against mean pooling (α uniform), targeted against averaged messages, Qatten against
itself with λ fixed at 1/m. A **design
comparison** changes more: entity tokens against a flat MLP change the whole representation, messages against none
remove the channel, Qatten against VDN adds state-dependent weights and a bias beside attention, and MAT against
MAT-Dec or the entity actor changes how the whole team decides (in turn, on every agent's observation). Only the first
kind attributes an effect to attention. Chapter 12's rows are read on simple_spread's range at the same m: with
decoys the random and greedy teams score exactly as without them (the decoys are placed after everything else and
pay nothing), so one scale serves every number of decoys d. Its Level-Based Foraging rows are read on the range
from lbforaging's random team to a team that collects all the food, the game's maximum: the scripted forager
(:mod:`attnmarl.envs.lbf_baselines`) collects only a quarter to a half of it, and every trained design far more, so
a range that ended at the script would magnify every difference two and a half to five times. A point of this range
is 0.84 to 0.92 points of the food collected.

simple_tag's runs (chapters 7–9) are left out: a predator-prey score has no random → greedy range to read it on.
The continuous-action runs (chapter 8's μ, chapter 9's Q critics) are read on the range of random and greedy teams
that act with continuous forces (:func:`attnmarl.notebook.explorers.scale.continuous_baselines`), as chapter
10's table reads them.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ...checkpoints import shipped_runs
from ...checks import check_bool, check_int, check_real
from ...envs.foraging import NAME as FORAGING
from ...seeds import seed_span
from ...stats import RESOLVING_SEEDS, Interval, welch_difference
from ...stats import verdict as interval_verdict
from ...train import LBF_MS
from ...transfer import closed_share
from .comm import SHIPPED_SIGHT_MS, SHIPPED_TWO_ROUND_MS, sight_runs
from .decoys import DECOY_POINT, SHIPPED_DECOY_POINTS, decoy_runs
from .lbf import lbf_baselines, lbf_runs
from .mat import SHIPPED_MAT_MS, mat_decoy_runs, mat_runs
from .mix import MIX_CONTROL_MS, SHIPPED_MIX_MS, mix_runs
from .scale import (
    CRITIC_MS,
    MAAC_MS,
    continuous_baselines,
    critic_runs,
    maac_runs,
    scale_runs,
    treasure_baselines,
    zero_shot_results,
)

__all__ = ["Effect", "DESIGNS", "DECOY_POINT", "KINDS", "range_shares", "effects", "verdict", "SEED_PLAN",
           "seed_plan", "seed_plan_markdown"]

KINDS = ("attention ablation", "design comparison")
"""What a row isolates: attention alone, or a design that changes more than attention."""

DESIGNS = ("value critic V", "centralized policy π", "centralized policy μ", "Q critic", "critic, collect_treasure",
           "MAAC's critic", "entity actor", "attention vs mean pooling", "targeted messages", "Qatten mixer",
           "selection with decoys", "Level-Based Foraging", "Multi-Agent Transformer")
"""The rows' designs, in the order of the book's chapters (7, 8, 8, 9, 10, 10, 8 and 10, 10, 11, 11, 12, 12, 13)."""


@dataclass(frozen=True)
class Effect:
    """One comparison at one team size: design ``a`` (with attention) minus design ``b``, in points of the
    random → greedy range (``interval``), from the seeds' shares ``a_shares`` and ``b_shares`` (%)."""

    design: str
    chapter: int
    scenario: str
    m: int
    setting: str
    """What else defines the point ("" or, for instance, "ρ = 0.5", "3× budget")."""
    a: str
    b: str
    a_shares: np.ndarray
    b_shares: np.ndarray
    interval: Interval
    kind: str
    """One of :data:`KINDS`."""

    @property
    def seeds(self) -> int:
        """The fewer of the two designs' seed counts: what the verdict rests on."""
        return self.interval.seeds

    @property
    def budget(self) -> str:
        """The env-step budget where it differs from the design's usual one ("3× budget", read from
        ``setting``), else ""."""
        return "3× budget" if "3× budget" in self.setting else ""


def range_shares(runs: list[dict], m: int, scenario: str = "simple_spread", continuous: bool = False) -> np.ndarray:
    """The runs' final scores as shares (%) of the scenario's random → greedy (or script) range at m, the range of
    continuous-force baselines for ``continuous`` runs; ``ValueError`` for a scenario without such a range
    (simple_tag), an m whose baselines were not measured, or a ``continuous`` that is not a bool (``'no'`` would
    read the continuous range)."""
    continuous, m = check_bool("continuous", continuous), check_int("m", m)
    tables = {"simple_spread": continuous_baselines if continuous else zero_shot_results,
              "collect_treasure": treasure_baselines, FORAGING: _lbf_table}
    if scenario not in tables:
        raise ValueError(f"scenario {scenario!r} has no random → greedy range to read a score on; the scenarios "
                         f"with one are {sorted(tables)}")
    table = tables[scenario]()
    if m not in table["baselines"]:
        raise ValueError(f"no baselines of {scenario} at m = {m}; measured at m = {sorted(table['baselines'])}")
    low, high = table["baselines"][m]["random"][0], table["baselines"][m]["greedy"][0]
    return np.array([100 * closed_share(_final_return(k, run), low, high) for k, run in enumerate(_runs(runs))])


def _lbf_table() -> dict[str, Any]:
    """lbforaging's range in the form of the other baselines' tables: the random team, and in the greedy team's place
    all the food collected (a team return of 1, the maximum; module docstring)."""
    return {"baselines": {m: {"random": [random], "greedy": [1.0]} for m, (random, _) in lbf_baselines().items()}}


def _runs(runs: Any) -> list[dict]:
    """``runs`` as a list of run summaries; ``ValueError`` for one run given bare, ``None`` or anything else."""
    if isinstance(runs, Mapping) or not isinstance(runs, (list, tuple)):
        raise ValueError(f"runs must be a list of run summaries (dicts with a final_return), one per seed; got "
                         f"{type(runs).__name__}" + (" (wrap one run in a list: [run])" if isinstance(runs, Mapping)
                                                     else ""))
    return list(runs)


def _final_return(k: int, run: Any) -> float:
    """Run k's ``final_return`` as a finite float; ``ValueError`` naming the run otherwise."""
    if not isinstance(run, Mapping) or "final_return" not in run:
        raise ValueError(f"runs[{k}] must be a run summary with a final_return (a finished run's); got {run!r}")
    return check_real(f"runs[{k}]['final_return']", run["final_return"])


def effects() -> list[Effect]:
    """Every comparison of attention against its alternative that Parts II and III ship runs for, in chapter order."""
    rows: list[Effect] = []

    def add(design: str, chapter: int, scenario: str, m: int, setting: str, a: str, b: str,
            a_runs: list[dict], b_runs: list[dict], kind: str = "attention ablation") -> None:
        continuous = "continuous" in setting
        a_shares, b_shares = (range_shares(runs, m, scenario, continuous) for runs in (a_runs, b_runs))
        rows.append(Effect(design, chapter, scenario, m, setting, a, b, a_shares, b_shares,
                           welch_difference(a_shares, b_shares), kind))

    for m in (3, 6):
        add("value critic V", 7, "simple_spread", m, "", "attention critic", "concatenation critic",
            shipped_runs("value", f"spread{m}-attention"), shipped_runs("value", f"spread{m}-concat"))
    for prefix, design in (("pi", "centralized policy π"), ("mu", "centralized policy μ")):
        for m in (3, 6):
            add(design, 8, "simple_spread", m, "continuous actions" if prefix == "mu" else "",
                "attention policy", "concatenation policy", shipped_runs("policy", f"{prefix}-spread{m}-attention"),
                shipped_runs("policy", f"{prefix}-spread{m}-concat"))
    for name, m, setting in (("q-spread3", 3, ""), ("q-spread6", 6, ""), ("q-spread6-long", 6, "3× budget")):
        add("Q critic", 9, "simple_spread", m, f"continuous actions{', ' + setting if setting else ''}",
            "attention Q critic", "concatenation Q critic", shipped_runs("qnet", f"{name}-attention"),
            shipped_runs("qnet", f"{name}-concat"))
    for m in CRITIC_MS:
        add("critic, collect_treasure", 10, "collect_treasure", m, "flat actor", "attention critic",
            "concatenation critic", critic_runs(m, "attention"), critic_runs(m, "concat"))
    for m in MAAC_MS:
        add("MAAC's critic", 10, "collect_treasure", m, "", "attention critic", "concatenation critic",
            maac_runs(m, "attention"), maac_runs(m, "concat"))
    add("MAAC's critic", 10, "collect_treasure", 4, "3× budget", "attention critic", "concatenation critic",
        maac_runs(4, "attention", long=True), maac_runs(4, "concat", long=True))
    for scenario, ms in (("simple_spread", (3, 6, 9, 12)), ("collect_treasure", (4, 8, 12))):
        for m in ms:
            add("entity actor", 8 if (scenario, m) == ("simple_spread", 6) else 10, scenario, m, "",
                "entity actor", "flat actor", scale_runs(m, "entity", scenario), scale_runs(m, "flat", scenario),
                "design comparison")
        for m in ms:
            add("attention vs mean pooling", 10, scenario, m, "", "attention", "mean pooling",
                scale_runs(m, "entity", scenario), scale_runs(m, "mean", scenario))
    for narrow, setting in ((False, "ρ = 1"), (True, "ρ = 0.5")):
        for m in SHIPPED_SIGHT_MS[narrow]:
            for b, b_name in (("none", "no messages"), ("mean", "averaged messages")):
                add("targeted messages", 11, "simple_spread", m, setting, "targeted messages", b_name,
                    sight_runs(m, "attention", narrow), sight_runs(m, b, narrow),
                    "design comparison" if b == "none" else "attention ablation")
    for m in SHIPPED_TWO_ROUND_MS:
        add("targeted messages", 11, "simple_spread", m, "ρ = 0.5, two rounds", "targeted messages",
            "averaged messages", sight_runs(m, "attention-2rounds"), sight_runs(m, "mean-2rounds"))
    for m in SHIPPED_MIX_MS:
        add("Qatten mixer", 11, "simple_spread", m, "", "Qatten", "VDN (sum)", mix_runs(m, "qatten"),
            mix_runs(m, "vdn"), "design comparison")
    for m in MIX_CONTROL_MS:
        add("Qatten mixer", 11, "simple_spread", m, "", "Qatten", "Qatten, λ = 1/m", mix_runs(m, "qatten"),
            mix_runs(m, "qatten-uniform"))
    for b, b_name, kind in (("mean", "mean pooling", "attention ablation"),
                            ("flat", "flat actor", "design comparison")):
        for m, d in SHIPPED_DECOY_POINTS:
            add("selection with decoys", 12, "simple_spread", m, f"d = {d}", "attention", b_name,
                decoy_runs(m, d, "entity"), decoy_runs(m, d, b), kind)
    for b, b_name, kind in (("mean", "mean pooling", "attention ablation"),
                            ("flat", "flat actor", "design comparison")):
        for m in LBF_MS:
            add("Level-Based Foraging", 12, FORAGING, m, "", "attention", b_name, lbf_runs(m, "entity"),
                lbf_runs(m, b), kind)
    for b, b_name in (("matdec", "MAT-Dec"), ("entity", "entity actor (MAPPO)")):
        for m in SHIPPED_MAT_MS:
            add("Multi-Agent Transformer", 13, "simple_spread", m, "", "MAT", b_name, mat_runs(m, "mat"),
                mat_runs(m, b), "design comparison")
        add("Multi-Agent Transformer", 13, "simple_spread", DECOY_POINT[0], f"d = {DECOY_POINT[1]}", "MAT", b_name,
            mat_decoy_runs("mat"), mat_decoy_runs(b), "design comparison")
    return rows


def verdict(effect: Effect) -> str:
    """The row's verdict (:func:`attnmarl.stats.verdict`): "ahead", "behind" or "not resolved" on ten seeds a
    design, "indicative, n seeds" on fewer."""
    return interval_verdict(effect.interval)


SEED_PLAN: tuple[tuple[str, str, str, tuple[str, ...]], ...] = (
    ("centralized policy π, m = 3", "policy", "pi-spread3-{}", ("attention", "concat")),
    ("Q critic, m = 3", "qnet", "q-spread3-{}", ("attention", "concat")),
    ("centralized policy μ, m = 6", "policy", "mu-spread6-{}", ("attention", "concat")),
    ("value critic V, m = 3", "value", "spread3-{}", ("attention", "concat")),
    ("centralized policy π, m = 6", "policy", "pi-spread6-{}", ("attention", "concat")),
    ("value critic V, m = 6", "value", "spread6-{}", ("attention", "concat")),
    ("Q critic, m = 6, 3× budget", "qnet", "q-spread6-long-{}", ("attention", "concat")),
    ("attention vs mean pooling, collect_treasure m = 4", "scale", "scale-treasure4-entity{}", ("", "-mean")),
    ("attention vs mean pooling, collect_treasure m = 8", "scale", "scale-treasure8-entity{}", ("", "-mean")),
    ("attention vs mean pooling, collect_treasure m = 12", "scale", "scale-treasure12-entity{}", ("", "-mean")),
    ("messages, m = 3, ρ = 0.5", "comm", "comm-narrow-spread3-{}", ("attention", "mean", "none")),
    ("two rounds, m = 6, ρ = 0.5", "comm", "comm-narrow-spread6-{}-2rounds", ("attention", "mean")),
    ("Qatten vs VDN, m = 3", "mix", "qmix-spread3-{}", ("qatten", "vdn")),
    ("attention vs the flat actor, decoys, m = 6, d = 3", "decoys", "decoys3-spread6-{}", ("entity", "flat")),
    ("the controls against attention, decoys, m = 6, d = 3", "decoys", "decoys3-spread6-{}",
     ("oracle", "nobit")),
    ("MAT and MAT-Dec vs the entity actor, decoys, m = 6, d = 3", "mat", "{}-decoys3-spread6", ("mat", "matdec")),
)
"""Every comparison a sentence of the book leans on that had fewer than ten seeds a design when the plan was made
(the rows whose ten seeds have shipped show as done), in the order its runs are trained: the source's design
first (its cheap m = 3 points and μ at m = 6, whose three seeds lean furthest from 0, before the dearer m = 6
points), then the rest; chapter 12's two controls at its decisive point, then chapter 13's MAT and MAT-Dec there,
last (their entity actor has ten seeds there: the flat actor's row). Each entry: the comparison, the asset folder of
its runs, its configs' name with ``{}`` for the variant, and the variants it trains (at m = 6 with two rounds only
the targeted and averaged messages, the pair the book compares). The mean-pooling control ships in ``ablation``,
not ``scale``."""


def seed_plan(target: int = RESOLVING_SEEDS) -> list[dict]:
    """The runs :data:`SEED_PLAN` still needs for ``target`` seeds a design, in order: for each config, the seeds
    it has shipped, the seeds below ``target`` it lacks (to train), and their estimated CPU time, the
    mean CPU seconds of its shipped runs times the number to train (the runs' own measurements, one torch
    thread each)."""
    plan = []
    for comparison, folder, pattern, variants in SEED_PLAN:
        for variant in variants:
            name = pattern.format(variant)
            shipped_in = "ablation" if name.endswith("entity-mean") else folder
            runs = shipped_runs(shipped_in, name)
            seeds = sorted(r["seed"] for r in runs)
            todo = [s for s in range(target) if s not in seeds]
            cpu = float(np.mean([r["cpu_seconds"] for r in runs]))
            plan.append({"comparison": comparison, "folder": shipped_in, "config": name, "shipped": seeds,
                         "to_train": todo, "cpu_hours": cpu * len(todo) / 3600})
    return plan


def seed_plan_markdown(target: int = RESOLVING_SEEDS) -> str:
    """:func:`seed_plan` as the Markdown table the reproducing appendix prints (a test keeps the two equal): one
    row per config, with the command that trains its missing seeds, and the total."""
    lines = ["| # | comparison | config | seeds shipped | command for the rest | est. CPU-h |",
             "|---|---|---|---|---|---|"]
    total = 0.0
    for k, row in enumerate(seed_plan(target), 1):
        todo = row["to_train"]
        command = (f"`python -m attnmarl.train --config {row['config']} --seeds {seed_span(todo)} "
                   f"--out runs/{row['folder']}`" if todo else "done")
        lines.append(f"| {k} | {row['comparison']} | `{row['config']}` | {seed_span(row['shipped'])} | {command} | "
                     f"{row['cpu_hours']:.2f} |")
        total += row["cpu_hours"]
    lines.append(f"| | **all** | | | | **{total:.1f}** |")
    return "\n".join(lines)

