"""Chapter 12's shipped results: simple_spread with decoys, five actors, read against the random → greedy range.

- :func:`decoy_name` names the config behind a point (m, d, design) (:data:`attnmarl.train.DECOY_DESIGNS`);
- :func:`decoy_runs` reads a point's shipped runs from ``attnmarl/assets/decoys`` and :func:`decoy_shares` their
  final scores as shares (%) of the range (:func:`decoy_run_shares` for any runs at a point, chapter 13's too),
  :func:`decoy_baselines` the range itself (``baselines.json``, made by
  ``python -m attnmarl.envs.decoys_port``). Without decoys (d = 0) the task is simple_spread itself, and a decoy
  config trains bit for bit as chapter 8's or chapter 10's run of the same design and m (the same environment,
  weights and random numbers; ``tests/test_decoys_training.py`` holds it): the d = 0 points are those runs, with
  their seeds (:func:`attnmarl.notebook.explorers.scale.scale_runs`);
- :func:`decoy_readout` reads how a run's attention on the decoys moved during training (the curve's
  ``alpha_decoys`` and ``alpha_landmarks`` columns, :func:`attnmarl.selection.decoy_alpha`);
- :func:`decoy_zero_shot` reads the zero-shot table (``zero-shot.json``, made by ``python -m attnmarl.transfer
  --scenario simple_spread_decoys``, :data:`ZERO_SHOT_COMMAND`): the share of the random → greedy range each seed's
  checkpoint closes at each (m, d) scored, most of them not the one it was trained at;
- :func:`decoy_frame` and :func:`decoy_explorer` show where a trained actor's alpha lands in one world at reset,
  among targets and decoys.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...checkpoints import ASSETS, config_runs, shipped_curve
from ...checks import check_index, check_int, check_seed
from ...envs import make_reference, obs_to_array, token_layout
from ...envs.decoys import DECOY_COLOR, NAME
from ...envs.decoys_port import BASELINES_PATH
from ...nets.policies import DecoyView
from ...selection import uniform_decoy_share
from ...train import CONFIGS, DECOY_DESIGNS
from ...transfer import closed_share, key_team
from ..viz import Arena, Frame, Heatmap
from ..widgets import Dropdown, Explorer, Slider
from .mpe import screen_color
from .scale import scale_runs

__all__ = ["FOLDER", "DECOY_POINT", "SHIPPED_DECOY_POINTS", "ZERO_SHOT_PATH", "ZERO_SHOT_COMMAND", "decoy_name",
           "decoy_baselines", "decoy_runs", "decoy_shares", "decoy_run_shares", "decoy_readout", "decoy_zero_shot",
           "decoy_world", "decoy_arena", "decoy_frame", "decoy_explorer"]

FOLDER = "decoys"
"""The asset folder of chapter 12's runs."""

ZERO_SHOT_PATH = ASSETS / FOLDER / "zero-shot.json"
"""The shipped zero-shot table of chapter 12's m = 6, d = 3 entity runs, written by :data:`ZERO_SHOT_COMMAND`."""

ZERO_SHOT_COMMAND = ("python -m attnmarl.transfer --scenario simple_spread_decoys --run decoys/decoys3-spread6-entity "
                     "--seeds 0 1 2 --m 3,6,12 --decoys 1,3 --out src/attnmarl/assets/decoys/zero-shot.json")
"""The command that writes :data:`ZERO_SHOT_PATH` (from the repository's root, the runs' checkpoints in
``assets/decoys``). Not d = 0: an actor trained with decoys reads an ``is_target`` bit that d = 0 does not give
(:func:`attnmarl.transfer.check_transferable`)."""


DECOY_POINT = (6, 3)
"""Chapter 12's decisive point, (m, d): six agents, three decoys per agent; ten seeds a design there (its d = 0 twin
is chapter 10's m = 6), and chapter 13's MAT and MAT-Dec train there too."""

SHIPPED_DECOY_POINTS = ((3, 1), (3, 3), (6, 1), DECOY_POINT)
"""The points (m, d) with decoys whose five designs have shipped runs: three seeds a design at m = 3 and at (6, 1),
ten for attention, pooling and the flat actor (three for the controls) at the decisive point."""


def decoy_name(m: int, d: int, design: str) -> str:
    """The config of the point (m, d, design): ``decoys{d}-spread{m}-{design}``; ``ValueError`` for a point the book
    has no config for (a control without decoys, an m or d outside :data:`attnmarl.train.DECOY_MS` / ``DECOY_DS``)."""
    m, d = check_int("m", m), check_int("d", d, minimum=0)  # '3' would otherwise name the same config as 3
    name = f"decoys{d}-spread{m}-{design}"
    if design not in DECOY_DESIGNS or name not in CONFIGS:
        raise ValueError(f"no config for m = {m}, d = {d}, design {design!r}: the decoy configs are "
                         f"{sorted(n for n in CONFIGS if n.startswith('decoys'))}")
    return name


def decoy_baselines() -> dict[tuple[int, int], tuple[float, float]]:
    """(m, d) -> (random, greedy) mean returns on the reference, 200 episodes each (the shipped table)."""
    rows = json.loads(BASELINES_PATH.read_text())["rows"]
    return {(row["m"], row["d"]): (row["random"][0], row["greedy"][0]) for row in rows}


def decoy_runs(m: int, d: int, design: str) -> list[dict[str, Any]]:
    """The shipped runs (every seed, in seed order) of the point (m, d, design): at d = 0 chapter 8's or 10's runs of
    the design (the same training, see the module's docstring); ``ValueError`` if none shipped."""
    name = decoy_name(m, d, design)
    if d == 0:
        return sorted(scale_runs(m, design, "simple_spread"), key=lambda r: r["seed"])
    return config_runs(FOLDER, name)


def decoy_shares(m: int, d: int, design: str) -> np.ndarray:
    """Each shipped seed's final score (mpe2, 200 episodes) as a share (%) of the (m, d) random → greedy range."""
    runs = decoy_runs(m, d, design)  # checks the point first: (m, d) then has a row in the baselines
    return decoy_run_shares(runs, m, d)


def decoy_run_shares(runs: list[dict[str, Any]], m: int, d: int) -> np.ndarray:
    """The final scores of ``runs`` (run summaries at (m, d), any design's) as shares (%) of the (m, d) random →
    greedy range, the scale chapter 12 reads every actor on."""
    random, greedy = decoy_baselines()[m, d]
    return np.array([100 * closed_share(r["final_return"], random, greedy) for r in runs])


def decoy_readout(m: int, d: int, design: str, seed: int) -> dict[str, np.ndarray]:
    """One run's read-out along training: ``env_steps`` and ``decoy_part``, the decoys' part of the weight the
    landmarks get (alpha on decoys / alpha on landmarks), to compare with the uniform share k / (m + k)."""
    curve = shipped_curve(FOLDER, decoy_name(m, d, design), seed)
    if "alpha_decoys" not in curve:
        raise ValueError(f"the curve of {decoy_name(m, d, design)} seed {seed} has no read-out (it needs d >= 1 and "
                         "an actor with attention weights)")
    return {"env_steps": curve["env_steps"], "decoy_part": curve["alpha_decoys"] / curve["alpha_landmarks"]}


def decoy_zero_shot(path: str | Path = ZERO_SHOT_PATH) -> dict[str, dict[tuple[int, int], dict[int, float]]]:
    """A zero-shot table of simple_spread with decoys (by default the shipped :data:`ZERO_SHOT_PATH`) as shares:
    ``{run: {(m, d): {seed: share}}}``, the share (%) of the (m, d) random → greedy range that the checkpoint of
    that run and seed closes there, read against the table's own baselines (the same episodes). ``ValueError`` for
    a missing file (it names the command that makes it) or a table of another scenario."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"no zero-shot table at {path}; write it with {ZERO_SHOT_COMMAND}")
    table = json.loads(path.read_text())
    if table.get("scenario") != NAME:
        raise ValueError(f"{path} is a zero-shot table of {table.get('scenario')!r}, not of {NAME!r}")
    ranges = {key_team(key): (b["random"][0], b["greedy"][0]) for key, b in table["baselines"].items()}
    shares: dict[str, dict[tuple[int, int], dict[int, float]]] = {}
    for run in table["runs"]:
        for key, (mean, _) in run["scores"].items():
            team = key_team(key)
            share = 100 * closed_share(mean, *ranges[team])
            shares.setdefault(run["run"], {}).setdefault(team, {})[run["seed"]] = share
    return shares


def decoy_world(m: int, d: int, seed: int) -> tuple[Any, np.ndarray]:
    """The reference environment of simple_spread with decoys at reset with ``seed``, and its observations
    (m, obs_dim)."""
    env = make_reference(NAME, N=check_int("m", m), decoys=check_int("d", d, minimum=1))
    obs, _ = env.reset(seed=check_seed(seed))
    return env, obs_to_array(env, obs)


def decoy_arena(env: Any, emphasis: np.ndarray | None = None, focus: int | None = None, title: str = "") -> Arena:
    """The world of ``env`` drawn as mpe2 draws it: agents a1…, targets T1… and decoys D1… (in
    :data:`attnmarl.envs.decoys.DECOY_COLOR`), in that order; ``emphasis`` rings them, ``focus`` rings one agent."""
    world = env.unwrapped.world
    entities = [*world.agents, *world.landmarks, *world.decoys]
    labels = ([f"a{i + 1}" for i in range(len(world.agents))] + [f"T{n + 1}" for n in range(len(world.landmarks))]
              + [f"D{n + 1}" for n in range(len(world.decoys))])
    colours = [screen_color(DECOY_COLOR if n >= len(world.agents) + len(world.landmarks) else e.color)
               for n, e in enumerate(entities)]
    return Arena(np.stack([e.state.p_pos for e in entities]), [e.size for e in entities], colours, labels,
                 emphasis=emphasis, focus=focus, title=title, lim=1.3)


def decoy_frame(actor: Any, m: int = 6, d: int = 3, seed: int = 0, i: int = 0) -> Frame:
    """Agent ``i``'s alpha (the self token's row, averaged over heads) in the world of ``seed`` at reset: the arena
    with every entity ringed by the weight agent i gives it, and the row over its tokens sorted as self, targets,
    decoys, other agents (each slot identified by the landmark it holds in the world)."""
    env, o = decoy_world(m, d, seed)
    i = check_index("i", i, m, "agent index")
    kwargs = {"N": m, "decoys": d}
    weight = next(actor.parameters())
    with torch.no_grad():
        _, alpha = actor.outputs_and_alpha(torch.as_tensor(o[None], dtype=weight.dtype, device=weight.device))
    row = alpha[0, i].mean(0).cpu().numpy()  # (n_tokens,)
    world = env.unwrapped.world
    places = np.stack([e.state.p_pos for e in (*world.agents, *world.landmarks, *world.decoys)])
    layout = token_layout(NAME, i, **kwargs)
    view = DecoyView("no-bit", NAME, kwargs, o.shape[-1])
    entity_of = {0: i}  # token -> entity (agents, then targets, then decoys)
    for token, columns in zip(view.slot_tokens.tolist(), view.slot_columns.tolist()):
        where = o[i, 2:4] + o[i, columns[:2]]
        entity_of[token] = int(np.linalg.norm(places[m:] - where, axis=1).argmin()) + m
    for token, name in enumerate(layout.names):
        if token not in entity_of:
            entity_of[token] = int(name.split("_")[1])
    emphasis = np.zeros(len(places))
    for token, entity in entity_of.items():
        emphasis[entity] = row[token]
    arena = decoy_arena(env, np.clip(emphasis / max(row[1:].max(), 1e-12), 0.0, 1.0), focus=i,
                        title=f"seed {seed}: agent a{i + 1}'s α ringed in red")
    order = sorted(range(len(row)), key=lambda token: (entity_of[token] != i, entity_of[token] < m,
                                                        entity_of[token]))
    names = decoy_arena(env).labels
    heat = Heatmap(row[order][None], [f"a{i + 1}"], [names[entity_of[t]] for t in order],
                   title=f"α of a{i + 1} over its tokens", xlabel="token (key): self, targets, decoys, agents",
                   ylabel="query", annotate=False)  # 31 tokens at m = 6, d = 3: no room for numbers (hover)
    decoy = row[[t for t in entity_of if entity_of[t] >= 2 * m]].sum()
    landmarks = row[[t for t in entity_of if entity_of[t] >= m]].sum()
    return Frame([arena, heat], caption=f"a{i + 1}: {decoy / landmarks:.2f} of its weight on landmarks lands on "
                                        f"decoys (uniform {uniform_decoy_share(m, d):.2f})")


def decoy_explorer(actor: Any, m: int = 6, d: int = 3, worlds: int = 6) -> Explorer:
    """Choose a world and an agent: where the trained actor's attention lands among targets and decoys."""
    agents = [f"a{i + 1}" for i in range(m)]  # the arena's names, so the control and the drawing agree

    def frame(seed: int = 0, agent: str = agents[0]) -> Frame:
        return decoy_frame(actor, m, d, seed, agents.index(agent))

    return Explorer(frame, [Slider("seed", list(range(worlds)), default=0, label="world (seed)"),
                            Dropdown("agent", agents, label="agent")],
                    title="Where the attention actor looks among targets and decoys")
