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
  range, not a ceiling: it does not wait for partners, and a trained team may well pass it (above 100%);
- :func:`draw_lbf` draws a game's grid with matplotlib (players and foods with their levels, one player's sight);
- :func:`lbf_episode` records one episode of ``lbforaging`` played by a trained entity actor, and :func:`lbf_frame`
  and :func:`lbf_explorer` show it step by step: the grid, and where one player's attention lands among the foods
  and players it sees, each food marked by who could lift it (:func:`attnmarl.selection.lbf_token_classes`).
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from matplotlib.axes import Axes
from matplotlib.patches import Rectangle

from ...checkpoints import agent_policy, config_runs, load_agent
from ...checks import check_index, check_int, check_seed
from ...envs import make_reference, obs_to_array
from ...envs.foraging import NAME
from ...envs.lbf import lbf_tokens
from ...envs.lbf_baselines import BASELINES_PATH, SIGHT
from ...envs.reference import play
from ...selection import LBF_CLASSES, lbf_token_classes
from ...train import CONFIGS, LBF_DESIGNS, LBF_MS
from ...transfer import closed_share
from ..viz import Arena, Frame, Heatmap
from ..widgets import Dropdown, Explorer, Slider

__all__ = ["FOLDER", "LBF_COLOURS", "lbf_name", "lbf_baselines", "lbf_runs", "lbf_shares", "draw_lbf", "LBFEpisode",
           "lbf_episode", "lbf_frame", "lbf_explorer"]

FOLDER = "lbf"
"""The asset folder of chapter 12's LBF runs."""

LBF_COLOURS = {"player": "#4c72b0", "food": "#8c6d31"}
"""Players blue and foods brown, in every LBF drawing of the book."""


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
    return config_runs(FOLDER, name)


def lbf_shares(m: int, design: str) -> np.ndarray:
    """Each shipped seed's final score (the team return on ``lbforaging``, 200 episodes) as a share (%) of the m
    random → forager range; above 100 where a team beats the forager."""
    runs = lbf_runs(m, design)  # checks the point first: m then has a row in the baselines
    random, forager = lbf_baselines()[m]
    return np.array([100 * closed_share(r["final_return"], random, forager) for r in runs])


def draw_lbf(ax: Axes, game: Any, title: str = "", viewer: int = 0, sight: int = SIGHT) -> None:
    """The grid of an ``lbforaging`` game (its ``players`` and ``field``): players as blue discs and foods as brown
    squares, each with its level, player ``viewer``'s sight (the cells within ``sight`` of it) shaded; north up."""
    size = game.field.shape[0]
    ax.set_xlim(-0.5, size - 0.5)
    ax.set_ylim(size - 0.5, -0.5)  # row 0 at the top
    ax.set_xticks(range(size))
    ax.set_yticks(range(size))
    ax.grid(color="0.9", lw=0.6)
    ax.set_axisbelow(True)
    row, col = game.players[check_index("viewer", viewer, len(game.players), "player index")].position
    ax.add_patch(Rectangle((col - sight - 0.5, row - sight - 0.5), 2 * sight + 1, 2 * sight + 1,
                           color=LBF_COLOURS["player"], alpha=0.12, lw=0))
    for r, c in np.argwhere(game.field > 0):
        ax.plot(c, r, "s", ms=17, color=LBF_COLOURS["food"])
        ax.text(c, r, str(game.field[r, c]), color="white", ha="center", va="center")
    for k, p in enumerate(game.players):
        ax.plot(p.position[1], p.position[0], "o", ms=17, color=LBF_COLOURS["player"])
        ax.text(p.position[1], p.position[0], str(p.level), color="white", ha="center", va="center")
        ax.annotate(f"p{k + 1}", (p.position[1], p.position[0]), xytext=(0, -15), textcoords="offset points",
                    ha="center", fontsize=8)
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    ax.set_title(title)


@dataclass(frozen=True)
class LBFEpisode:
    """One recorded episode of ``lbforaging``, steps t = 0 (after reset) … T."""

    kwargs: dict[str, Any]
    seed: int
    size: int
    levels: np.ndarray
    """(m,) each player's level."""
    cells: np.ndarray
    """(T + 1, m, 2) each player's cell (row, col) at each step."""
    field: np.ndarray
    """(T + 1, size, size) the level of the food on each cell (0: none) at each step."""
    obs: np.ndarray
    """(T + 1, m, obs_dim) each player's observation."""
    collected: np.ndarray
    """(T + 1,) the team's return so far: the share of the episode's food levels collected."""

    @property
    def steps(self) -> int:
        return len(self.cells) - 1


def lbf_episode(path: str | Path, seed: int = 0) -> LBFEpisode:
    """One episode of ``lbforaging`` (reset with ``seed``) played by the checkpoint at ``path`` as its evaluation
    plays it (sampled actions, the generator seeded by ``seed``), every step recorded."""
    agent, config = load_agent(path)
    if config.scenario != NAME:
        raise ValueError(f"{path} was trained on {config.scenario!r}, not Level-Based Foraging ({NAME!r})")
    seed = check_seed(seed)
    policy = agent_policy(agent, config, seed=seed)
    env = make_reference(NAME, **config.scenario_kwargs)
    obs, _ = env.reset(seed=seed)
    game = env.game
    cells, field, observations, collected = [], [], [], [0.0]

    def snapshot(obs: dict[str, np.ndarray]) -> None:
        cells.append([tuple(p.position) for p in game.players])
        field.append(game.field.copy())
        observations.append(obs_to_array(env, obs))

    snapshot(obs)
    while env.agents:
        obs, rewards, *_ = play(env, policy, obs)
        snapshot(obs)
        collected.append(collected[-1] + next(iter(rewards.values())))
    return LBFEpisode(dict(config.scenario_kwargs), seed, int(game.field.shape[0]),
                      np.array([p.level for p in game.players]), np.array(cells), np.stack(field),
                      np.stack(observations), np.array(collected))


def _grid_xy(cells: np.ndarray, size: int) -> np.ndarray:
    """Cells (row, col) as arena coordinates: x the column, y the row counted upward, the grid centred on 0."""
    half = (size - 1) / 2
    return np.stack([cells[..., 1] - half, half - cells[..., 0]], axis=-1).astype(float)


def lbf_frame(actor: Any, episode: LBFEpisode, t: int = 0, i: int = 0) -> Frame:
    """Step ``t`` seen by player ``i``: the grid (players p1… and foods f1… in row-major order, each named with its
    level, as ``p2·1``), every entity player i sees ringed by the weight its self token gives that entity's token
    (alpha averaged over heads), player i ringed in black; and that row of alpha, drawn as a column, each entry named
    by the entity and, for a food, its class: whether player i can lift it ``alone``, only ``together`` with the
    players it sees, or not at all (``beyond``). The arena draws the grid's cells, one unit each, and shades player
    i's sight, the square of cells within ``sight`` of it, cut at the walls."""
    if not 0 <= check_int("t", t, minimum=0) <= episode.steps:
        raise ValueError(f"t must be a step of the episode, 0 … {episode.steps}; got {t}")
    m, foods = len(episode.levels), episode.kwargs["foods"]
    i = check_index("i", i, m, "player index")
    o = episode.obs[t]
    weight = next(actor.parameters())
    with torch.no_grad():
        _, alpha = actor.outputs_and_alpha(torch.as_tensor(o[None], dtype=weight.dtype, device=weight.device))
    row = alpha[0, i].mean(0).cpu().numpy()
    tokens, present = lbf_tokens(o, foods)
    classes = lbf_token_classes(o, foods)[i]
    food_cells = np.argwhere(episode.field[t] > 0)
    cells = [*episode.cells[t], *food_cells]
    labels = ([f"p{k + 1}·{level}" for k, level in enumerate(episode.levels)]
              + [f"f{n + 1}·{episode.field[t][tuple(c)]}" for n, c in enumerate(food_cells)])
    emphasis = np.zeros(len(cells))
    names = []
    for token in np.flatnonzero(present[i]):
        if token == 0:
            entity = i
        else:  # a slot holds (x - x_i, y - y_i): the entity on that cell
            cell = episode.cells[t, i] + tokens[i, token, 1::-1].astype(int)
            entity = next(k for k, c in enumerate(cells) if tuple(c) == tuple(cell))
        emphasis[entity] = row[token]
        kind = LBF_CLASSES[classes[token]]
        names.append((token, f"{labels[entity]} ({kind})" if entity >= m else labels[entity]))
    colours = [LBF_COLOURS["player"]] * m + [LBF_COLOURS["food"]] * len(food_cells)
    xy = _grid_xy(np.array(cells), episode.size)
    sight = episode.kwargs.get("sight", SIGHT)
    arena = Arena(xy, [0.42] * m + [0.3] * len(food_cells), colours, labels,
                  emphasis=np.clip(emphasis / max(row.max(), 1e-12), 0.0, 1.0), focus=i, lim=episode.size / 2,
                  title=f"t = {t}: {100 * episode.collected[t]:.0f}% of the food collected",
                  cells=episode.size, shade=(*xy[i], sight + 0.5))
    heat = Heatmap(row[[token for token, _ in names]][:, None], [name for _, name in names], [f"p{i + 1}"],
                   title=f"α of p{i + 1} over what it sees", xlabel="query", ylabel="token (key)")
    seen = len(names) - 1
    return Frame([arena, heat], caption=f"p{i + 1} (level {episode.levels[i]}) sees {seen} "
                                        f"{'entity' if seen == 1 else 'entities'} within {sight} cells; the ring on "
                                        f"each is its share of p{i + 1}'s α")


def lbf_explorer(actor: Any, episode: LBFEpisode, steps: tuple[int, ...] | None = None) -> Explorer:
    """Choose a step of ``episode`` and a player: where that player's attention lands (:func:`lbf_frame`)."""
    steps = tuple(range(0, episode.steps + 1, 5)) if steps is None else steps

    players = [f"p{i + 1}" for i in range(len(episode.levels))]  # the grid's names

    def frame(t: int = steps[0], player: str = players[0]) -> Frame:
        return lbf_frame(actor, episode, t, players.index(player))

    return Explorer(frame, [Slider("t", list(steps), default=steps[0], label="step t"),
                            Dropdown("player", players, label="player")],
                    title="Where a Level-Based Foraging player's attention lands")
