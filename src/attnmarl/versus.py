"""Trained simple_tag teams against fixed opponents, each role on its own: a yardstick for games.

    python -m attnmarl.versus --run runs/q-tag-attention --run runs/q-tag-concat --seeds 0 1 2 --out tag-versus.json

Self-play returns are hard to read: a high predator return can mean good predators or a bad prey. So the
predators of every checkpoint ``RUN-seed{S}.pt`` play against fixed prey, and its prey against fixed
predators: the scripted team (:func:`attnmarl.envs.chase_policy`) and a random team. The script and the
random team play the same opponents, as yardsticks. Every pairing is scored on mpe2 over the same
fixed-seed episodes (seeds 0, 1, ...). The JSON written records the command, the CPU time and, for every
team, role and opponent, [mean, sem] of the return per episode of one agent of that role (the mean over
the predators; the prey's own).
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from .checkpoints import load_policy, load_run
from .checks import cli_episodes, cli_seed
from .envs import Policy, chase_policy, episode_returns, make_reference, mixed_teams, random_policy, scenario_name
from .files.atomic import check_writable_file, save_result
from .interrupt import run_command

__all__ = ["ROLES", "reference_teams", "versus_scores", "main"]

ROLES = ("predators", "prey")
"""The two roles of simple_tag: the adversaries (``adversary_*``) and the good agents."""


def reference_teams(**scenario_kwargs: Any) -> dict[str, Policy]:
    """The fixed opponents, by name: the chase script and a random team (seed 0). Build them afresh for
    every team scored, so that the random team's actions do not depend on what was scored before."""
    return {"chase script": chase_policy(**scenario_kwargs),
            "random": random_policy("simple_tag", seed=0, **scenario_kwargs)}


def _mean_and_sem(per_episode: np.ndarray) -> list[float]:
    sem = per_episode.std(ddof=1) / np.sqrt(len(per_episode)) if len(per_episode) > 1 else 0.0
    return [round(float(per_episode.mean()), 4), round(float(sem), 4)]


def versus_scores(team: Policy, opponents: dict[str, Policy], episodes: int = 200,
                  **scenario_kwargs: Any) -> dict[str, dict[str, list[float]]]:
    """``{role: {opponent: [mean, sem]}}``: ``team``'s predators against each opponent's prey, and its
    prey against each opponent's predators, on mpe2 simple_tag episodes with seeds 0 … episodes − 1.
    A predator score is the mean over the predators of each episode's return."""
    agents = make_reference("simple_tag", **scenario_kwargs).possible_agents
    predators = np.array([name.startswith("adversary") for name in agents])
    scores: dict[str, dict[str, list[float]]] = {role: {} for role in ROLES}
    for name, opponent in opponents.items():
        hunting = episode_returns(mixed_teams(team, opponent), "simple_tag", episodes, **scenario_kwargs)
        fleeing = episode_returns(mixed_teams(opponent, team), "simple_tag", episodes, **scenario_kwargs)
        scores["predators"][name] = _mean_and_sem(hunting[:, predators].mean(axis=1))
        scores["prey"][name] = _mean_and_sem(fleeing[:, ~predators].mean(axis=1))
    return scores


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m attnmarl.versus", description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True,
                        help="a run's path without '-seed{S}.pt', for example runs/q-tag-attention; repeatable")
    parser.add_argument("--seeds", type=cli_seed(), nargs="+", default=[0])
    parser.add_argument("--episodes", type=cli_episodes(), default=200)
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--replace", action="store_true", help="replace --out if it exists (refused otherwise)")
    args = parser.parse_args(argv)
    paths = {(run, seed): Path(f"{run}-seed{seed}.pt") for run in args.run for seed in args.seeds}
    try:  # everything that could stop the command after the games, checked before them
        out = check_writable_file(args.out, "--out", replace=args.replace)
        configs = {key: load_run(path, *key) for key, path in paths.items()}
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    built = {str(paths[key]): f"{config.scenario} {config.scenario_kwargs}" for key, config in configs.items()}
    kwargs_seen = {json.dumps(config.scenario_kwargs, sort_keys=True) for config in configs.values()}
    if any(scenario_name(config.scenario) != "simple_tag" for config in configs.values()) or len(kwargs_seen) > 1:
        parser.error("every --run must be a simple_tag run with the same scenario arguments; they were built "
                     f"for {built}")
    scenario_kwargs = next(iter(configs.values())).scenario_kwargs
    torch.set_num_threads(1)
    arguments = argv if argv is not None else sys.argv[1:]
    cpu_start = time.process_time()

    def scored(team: Policy) -> dict[str, dict[str, list[float]]]:
        return versus_scores(team, reference_teams(**scenario_kwargs), args.episodes, **scenario_kwargs)

    yardsticks = reference_teams(**scenario_kwargs)
    references = {name: scored(team) for name, team in tqdm(yardsticks.items(), desc="references")}
    runs = [{"run": Path(run).name, "seed": seed, **scored(load_policy(path))}
            for (run, seed), path in tqdm(paths.items(), desc="runs")]
    result = {
        "command": "python -m attnmarl.versus " + " ".join(shlex.quote(a) for a in arguments),
        "scenario": "simple_tag",
        "scenario_kwargs": scenario_kwargs,
        "episodes": args.episodes,
        "cpu_seconds": round(time.process_time() - cpu_start, 1),
        "references": references,
        "runs": runs,
    }
    save_result(out, result, "--out")
    print(f"wrote {out} ({result['cpu_seconds']:.0f} CPU s)")


if __name__ == "__main__":
    run_command("python -m attnmarl.versus", main, "nothing was written (the scores are computed anew each time)")
