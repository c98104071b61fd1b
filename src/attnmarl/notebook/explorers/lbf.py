"""Chapter 12's shipped results on Level-Based Foraging: three actors at three team sizes, read against the
random → forager range.

- :func:`lbf_name` names the config behind a point (m, design): ``lbf{m}p-{design}`` (:data:`attnmarl.train.LBF_MS`,
  :data:`attnmarl.train.LBF_DESIGNS`);
- :func:`lbf_baselines` reads the range itself, the random and scripted-forager teams' mean team return on
  ``lbforaging`` (``assets/lbf/baselines.json``, made by ``python -m attnmarl.envs.lbf_baselines``);
- :func:`lbf_runs` reads a point's shipped runs from ``attnmarl/assets/lbf`` and :func:`lbf_shares` their final
  scores as shares (%) of the range. A run's ``final_return`` is the mean over players of the episode return on
  ``lbforaging`` (200 episodes); every player is given the team's reward, so it is the team return, the share of the
  spawned food levels collected, on the same scale as the baselines' ``team_return``. The forager is the top of the
  range, not a ceiling: it does not wait for partners, and a trained team may well pass it (above 100%).
"""
from __future__ import annotations

import json
from typing import Any

import numpy as np

from ...checkpoints import shipped_runs
from ...checks import check_int
from ...envs.lbf_baselines import BASELINES_PATH
from ...train import CONFIGS, LBF_DESIGNS, LBF_MS
from ...transfer import closed_share

__all__ = ["FOLDER", "lbf_name", "lbf_baselines", "lbf_runs", "lbf_shares"]

FOLDER = "lbf"
"""The asset folder of chapter 12's LBF runs."""


def lbf_name(m: int, design: str) -> str:
    """The config of the point (m, design): ``lbf{m}p-{design}``; ``ValueError`` for a point the book has no config
    for (an m outside :data:`attnmarl.train.LBF_MS`, a design outside :data:`attnmarl.train.LBF_DESIGNS`)."""
    m = check_int("m", m)  # '3' would otherwise name the same config as 3
    name = f"lbf{m}p-{design}"
    if m not in LBF_MS or design not in LBF_DESIGNS or name not in CONFIGS:
        raise ValueError(f"no LBF config for m = {m}, design {design!r}: the team sizes are {list(LBF_MS)} and the "
                         f"designs {list(LBF_DESIGNS)}")
    return name


def lbf_baselines() -> dict[int, tuple[float, float]]:
    """m -> (random, forager) mean team returns on ``lbforaging``, 200 episodes each (the shipped table)."""
    rows = json.loads(BASELINES_PATH.read_text())["rows"]
    return {row["m"]: (row["random"]["team_return"][0], row["forager"]["team_return"][0]) for row in rows}


def lbf_runs(m: int, design: str) -> list[dict[str, Any]]:
    """The shipped runs (every seed, in seed order) of the point (m, design), as ``index.json`` lists them;
    ``ValueError`` naming the command that trains them if none has shipped."""
    name = lbf_name(m, design)
    try:
        runs = sorted(shipped_runs(FOLDER, name), key=lambda r: r["seed"])
    except json.JSONDecodeError:  # a damaged index is not a missing one
        raise
    except ValueError:  # no index.json in assets/lbf yet
        runs = []
    if not runs:
        raise ValueError(f"no shipped runs of {name} in assets/{FOLDER}; train them with "
                         f"python -m attnmarl.train --config {name} --seeds 0-2 --out src/attnmarl/assets/{FOLDER} "
                         f"and index them with python -m attnmarl.train --index src/attnmarl/assets/{FOLDER}")
    return runs


def lbf_shares(m: int, design: str) -> np.ndarray:
    """Each shipped seed's final score (the team return on ``lbforaging``, 200 episodes) as a share (%) of the m
    random → forager range; above 100 where a team beats the forager."""
    runs = lbf_runs(m, design)  # checks the point first: m then has a row in the baselines
    random, forager = lbf_baselines()[m]
    return np.array([100 * closed_share(r["final_return"], random, forager) for r in runs])
