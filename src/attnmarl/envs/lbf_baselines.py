"""Level-Based Foraging's baselines: a random team and a scripted forager, scored on the reference.

Chapter 12 judges a trained team on LBF (:mod:`attnmarl.envs.lbf`) by where it lands between two teams that
learn nothing:

- :func:`random_actions` — every player picks one of the six actions uniformly (invalid ones become ``NONE``);
- :func:`forager_actions` — the scripted agent H1 of the heuristic agents that ``lbforaging`` ships
  (``lbforaging/agents/heuristic_agent.py``, which 2.0.0 cannot import), on LBF's vector observation: each
  player goes for the nearest food it sees (Euclidean distance; ties to the first in LBF's row-major list)
  and loads when that food is next to it; otherwise it steps north or south until it is in the food's row,
  then west or east. (Its next cell never holds food: that food would be next to it, and nearest.) Seeing no
  food, it takes ``NONE`` or one of the four moves at random — H1
  draws among the valid actions, but the vector observation does not show the south and east walls. It does
  not wait for partners or prefer foods it can lift, so it stalls where a food needs more levels than the
  players that reach it.

Both act on observations (..., 3·(foods + m)) of the reference or of the port alike. The scenarios
(:data:`SCENARIOS`) are of the ``Foraging-<size>x<size>-<m>p-<f>f`` family that ``lbforaging`` registers and
Papoudakis et al. (2021) benchmarked, with sight 2 and 50 steps as registered: at m = 3 the registered
``Foraging-2s-10x10-3p-3f-v3``, one food per player; larger teams keep its density, about 33 cells and one
food per player (14 × 14 with 6 foods for 6 players, 17 × 17 with 9 for 9), so that a player sees as many
entities on average at every m and what grows with m is the team it must coordinate with (and the number of
tokens an attention layer chooses among). :func:`baseline_scores` measures both teams on the reference;
``python -m attnmarl.envs.lbf_baselines`` writes ``assets/lbf/baselines.json``.
"""
from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ..checks import check_episodes, check_int, cli_episodes
from ..files.atomic import save_result
from .lbf import ACTIONS, LOAD, make_lbf_reference

SIGHT = 2
MAX_STEPS = 50
SCENARIOS: dict[int, tuple[int, int]] = {3: (10, 3), 6: (14, 6), 9: (17, 9)}
"""Team size m → (grid size, foods) of the book's LBF scenarios (sight :data:`SIGHT`, :data:`MAX_STEPS` steps)."""

Team = Callable[[np.ndarray, np.random.Generator], np.ndarray]
"""A team's policy: observations (..., m, obs_dim) and a generator → actions (..., m), integers 0 … 5."""

BASELINES_PATH = resources.files("attnmarl") / "assets" / "lbf" / "baselines.json"
"""The shipped scores of :func:`baseline_scores`, written by :func:`main`."""


def random_actions(obs: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Every player's action uniform over LBF's six (..., m)."""
    return rng.integers(0, len(ACTIONS), np.shape(obs)[:-1])


def forager_actions(obs: np.ndarray, rng: np.random.Generator, foods: int) -> np.ndarray:
    """The scripted forager, H1 (module docstring), for observations (..., obs_dim) → actions (...,)."""
    obs = np.asarray(obs)
    foods = check_int("foods", foods)
    food = obs[..., : 3 * foods].reshape(obs.shape[:-1] + (foods, 3))
    dy, dx = food[..., 0] - obs[..., 3 * foods, None], food[..., 1] - obs[..., 3 * foods + 1, None]
    seen = food[..., 0] >= 0
    nearest = np.where(seen, dy**2 + dx**2, np.inf).argmin(-1)[..., None]
    dy, dx = np.take_along_axis(dy, nearest, -1)[..., 0], np.take_along_axis(dx, nearest, -1)[..., 0]
    towards = np.select([dy < 0, dy > 0, dx < 0], [1, 2, 3], 4)  # NORTH, SOUTH, WEST, EAST
    wander = rng.integers(0, 5, towards.shape)  # NONE or a move
    adjacent = np.abs(dy) + np.abs(dx) == 1
    return np.where(seen.any(-1), np.where(adjacent, LOAD, towards), wander)


def teams(foods: int) -> dict[str, Team]:
    """The two baseline teams, by name, for a game with ``foods`` foods."""
    return {"random": random_actions, "forager": lambda obs, rng: forager_actions(obs, rng, foods)}


def play_reference(team: Team, players: int, size: int, foods: int, episodes: int, sight: int = SIGHT,
                   max_steps: int = MAX_STEPS, force_coop: bool = False) -> dict[str, np.ndarray]:
    """Play ``team`` for ``episodes`` episodes on the reference (:func:`attnmarl.envs.lbf.make_lbf_reference`),
    episode k reset with seed k and the team's generator seeded with k. Per episode: ``team_return`` (the sum
    over players and steps of the rewards: the share of the spawned food levels collected), ``length`` (steps)
    and ``cleared`` (every food collected before the step limit)."""
    episodes = check_episodes("episodes", episodes)
    env = make_lbf_reference(players, size, foods, sight, max_steps, seed=0, force_coop=force_coop)
    returns, lengths, cleared = np.zeros(episodes), np.zeros(episodes, dtype=np.int64), np.zeros(episodes, bool)
    for k in range(episodes):
        obs, _ = env.reset(seed=k)
        rng = np.random.default_rng(k)
        done = False
        while not done:
            obs, rewards, done, _, _ = env.step(team(np.stack(obs), rng).tolist())
            returns[k] += sum(rewards)
            lengths[k] += 1
        cleared[k] = not env.field.any()
    return {"team_return": returns, "length": lengths, "cleared": cleared}


def summary(values: np.ndarray) -> list[float]:
    """``[mean, standard error]`` of per-episode values, rounded to 4 decimals."""
    values = np.asarray(values, dtype=np.float64)
    return [round(float(values.mean()), 4), round(float(values.std(ddof=1) / np.sqrt(values.size)), 4)]


def baseline_scores(ms: tuple[int, ...] = tuple(SCENARIOS), episodes: int = 200) -> list[dict[str, Any]]:
    """The random and forager teams on the reference at each team size m of :data:`SCENARIOS`: per team, the
    team return, the episode length and the share of episodes cleared as ``[mean, standard error]`` over
    ``episodes`` episodes (seeds 0 … episodes − 1), and the CPU seconds the row took."""
    rows = []
    for m in ms:
        size, foods = SCENARIOS[m]
        start = time.process_time()
        row: dict[str, Any] = {"m": m, "size": size, "foods": foods}
        for name, team in teams(foods).items():
            played = play_reference(team, m, size, foods, episodes)
            row[name] = {key: summary(values) for key, values in played.items()}
        rows.append({**row, "cpu_seconds": round(time.process_time() - start, 1)})
    return rows


def main() -> None:
    """``python -m attnmarl.envs.lbf_baselines [--episodes E] [--out PATH]``: measure :func:`baseline_scores` and
    write them as JSON (by default over the shipped :data:`BASELINES_PATH`)."""
    parser = argparse.ArgumentParser(description="Random and scripted-forager scores on Level-Based Foraging")
    parser.add_argument("--episodes", type=cli_episodes(), default=200)
    parser.add_argument("--out", type=Path, default=Path(str(BASELINES_PATH)))
    args = parser.parse_args()
    rows = baseline_scores(episodes=args.episodes)
    document = {"reference": "lbforaging 2.0.0, ForagingEnv (vector observations with levels)",
                "scenarios": "Foraging-2s-<size>x<size>-<m>p-<foods>f: sight 2, 50 steps, player levels 1-2, food "
                             "levels 1 to the sum of the three lowest player levels, force_coop=False, penalty 0, "
                             "normalized rewards",
                "episodes": args.episodes, "seeds": f"0-{args.episodes - 1}",
                "measure": "team_return: sum over players of the episode return (the share of the food levels "
                           "collected, 0-1); length: steps; cleared: share of episodes with every food collected; "
                           "each [mean, standard error]",
                "command": "python -m attnmarl.envs.lbf_baselines", "rows": rows}
    save_result(args.out, document)
    for row in rows:
        print(row, flush=True)


if __name__ == "__main__":
    main()
