"""Trained agents at numbers of agents they were not trained with: zero-shot scores on mpe2.

    python -m attnmarl.transfer --run policy/pi-spread6-entity --seeds 0 1 2 --m 2-16 --out zero-shot.json
    python -m attnmarl.transfer --scenario collect_treasure --m 4,8,12 --out treasure-baselines.json
    python -m attnmarl.transfer --continuous --m 3,6 --out continuous-baselines.json

For every m, the scenario's random and greedy baselines (:mod:`attnmarl.envs.baselines`; for
collect_treasure the greedy one is the treasure-hunter script) and every checkpoint given with ``--run``,
rebuilt for m by :func:`attnmarl.checkpoints.load_policy`, are scored on mpe2 over the same fixed-seed
episodes (seeds 0, 1, ...); a team of m agents is :func:`team_kwargs`. Only an actor whose weights do not
depend on m (the entity actor) can run at another m; the others raise ``ValueError``. Without ``--run``
only the baselines are scored; ``--continuous`` scores simple_spread's random and greedy baselines with
continuous forces (the range on which chapters 9 and 10 and the synthesis read the continuous-action designs). The JSON
written records the command, the CPU time and every score as
[mean, sem] of the per-agent return.
"""
from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from .checkpoints import ASSETS, load_checkpoint, load_policy, load_run
from .checks import check_int, cli_episodes, cli_seed
from .envs import (
    Policy,
    evaluate,
    greedy_assignment_policy,
    random_policy,
    scenario_name,
    steered_assignment_policy,
    treasure_hunter_policy,
)
from .envs.scenarios import reference_kwargs
from .files.atomic import check_writable_file, save_result
from .interrupt import run_command

__all__ = ["TEAM_SCENARIOS", "team_kwargs", "greedy_policy", "closed_share", "baseline_scores", "zero_shot_scores",
           "check_transferable", "parse_ms", "main"]

TEAM_SCENARIOS = ("simple_spread", "collect_treasure")
"""The cooperative scenarios whose team size the book varies."""


def team_kwargs(scenario: str, m: int) -> dict[str, int]:
    """mpe2 arguments for a team of m agents: simple_spread with N = m; collect_treasure with m − 2
    collectors, 2 deposits and m − 2 treasures (mpe2's default team is 6 + 2 with 6 treasures)."""
    name = scenario_name(scenario)
    if name not in TEAM_SCENARIOS:
        raise ValueError(f"team sizes are defined for {list(TEAM_SCENARIOS)}, not {name!r}")
    m = check_int(f"{name}: m", m, minimum=3 if name == "collect_treasure" else 1)
    kwargs = ({"N": m} if name == "simple_spread"
              else {"num_collectors": m - 2, "num_deposits": 2, "num_treasures": m - 2})
    reference_kwargs(name, **kwargs)  # a team too large to build is refused here, before any work
    return kwargs


def greedy_policy(scenario: str, m: int) -> Policy:
    """The scenario's greedy baseline for a team of m: the landmark assignment of simple_spread, the
    treasure-hunter script of collect_treasure."""
    if scenario_name(scenario) == "simple_spread":
        return greedy_assignment_policy()
    return treasure_hunter_policy(**team_kwargs(scenario, m))


def closed_share(score: float, random: float, greedy: float) -> float:
    """The share of the random → greedy range a score closes: (score − random) / (greedy − random);
    1 means as good as the greedy assignment, above 1 better."""
    if not greedy > random:
        raise ValueError(f"the greedy score ({greedy}) must be above the random one ({random})")
    return (score - random) / (greedy - random)


def baseline_scores(ms: list[int], episodes: int = 200, scenario: str = "simple_spread",
                    continuous: bool = False) -> dict[int, dict[str, tuple[float, float]]]:
    """``{m: {"random": (mean, sem), "greedy": (mean, sem)}}`` on mpe2 with a team of m (:func:`team_kwargs`);
    on simple_spread also ``"steered"``, chapter 6's steered assignment (the strongest scripted team). With
    ``continuous`` (simple_spread only), the random and greedy teams act with continuous forces."""
    if continuous and scenario_name(scenario) != "simple_spread":
        raise ValueError(f"continuous baselines exist for simple_spread only, not {scenario!r}")
    scores = {}
    for m in tqdm(ms, desc="baselines"):
        kwargs = {**team_kwargs(scenario, m), **({"continuous_actions": True} if continuous else {})}
        greedy = greedy_assignment_policy(continuous_actions=True) if continuous else greedy_policy(scenario, m)
        scores[m] = {"random": evaluate(random_policy(scenario, **kwargs), scenario, episodes, **kwargs),
                     "greedy": evaluate(greedy, scenario, episodes, **kwargs)}
        if scenario_name(scenario) == "simple_spread" and not continuous:
            scores[m]["steered"] = evaluate(steered_assignment_policy(), scenario, episodes, **kwargs)
    return scores


def zero_shot_scores(path: str | Path, ms: list[int], episodes: int = 200,
                     scenario: str = "simple_spread") -> dict[int, tuple[float, float]]:
    """``{m: (mean, sem)}``: the checkpoint at ``path`` acting on mpe2 with a team of m (:func:`team_kwargs`)."""
    scores = {}
    for m in tqdm(ms, desc=Path(path).stem):
        kwargs = team_kwargs(scenario, m)
        scores[m] = evaluate(load_policy(path, **kwargs), scenario, episodes, **kwargs)
    return scores


def trained_m(scenario: str, scenario_kwargs: dict[str, Any]) -> int:
    """The team size a run was trained with (the inverse of :func:`team_kwargs`)."""
    kwargs = reference_kwargs(scenario, **scenario_kwargs)  # mpe2's defaults where the run kept them
    if scenario_name(scenario) == "simple_spread":
        return kwargs["N"]
    return kwargs["num_collectors"] + kwargs["num_deposits"]


def check_transferable(path: str | Path, scenario: str, ms: list[int], run: str | None = None,
                       seed: int | None = None) -> tuple[Path, Any]:
    """The checkpoint at ``path`` and its config, if it can be scored at every m of ``ms`` beside the
    discrete baselines of ``scenario``; else ``ValueError`` saying what it was built for: its scenario, its
    team and action space, and whether its actor runs at other team sizes (only the entity actor does).
    With ``run`` and ``seed`` (``--run``, ``--seeds``), the file must also hold that run (:func:`load_run`)."""
    path = Path(path)
    config = load_checkpoint(path)[0] if run is None else load_run(path, run, seed)
    built = (f"{path.name} was built for {config.scenario} with {config.scenario_kwargs}, "
             f"{'continuous' if config.scenario_kwargs.get('continuous_actions') else 'discrete'} actions, "
             f"{'an' if config.actor[:1] in 'aeiou' else 'a'} {config.actor} actor")
    if scenario_name(config.scenario) != scenario_name(scenario):
        raise ValueError(f"{built}; it cannot play {scenario_name(scenario)} (--scenario)")
    if config.scenario_kwargs.get("continuous_actions"):
        raise ValueError(f"{built}; transfer scores discrete policies beside the discrete random and greedy "
                         "baselines, so it cannot score this one")
    own = trained_m(config.scenario, config.scenario_kwargs)
    other = [m for m in ms if m != own]
    if config.actor != "entity" and other:
        raise ValueError(f"{built} at m = {own}; its weights' shapes depend on m, so it cannot run at m = {other} "
                         "(only the entity actor runs at any m)")
    return Path(path), config


def parse_ms(text: str) -> list[int]:
    """``"2-16"`` → [2, ..., 16]; ``"3,6,12"`` → [3, 6, 12]. Every m must be at least 2 (simple_spread)."""
    try:
        if "-" in text:
            low, high = (int(part) for part in text.split("-"))
            ms = list(range(low, high + 1))
        else:
            ms = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"--m takes a range 'LOW-HIGH' or a list '3,6,12' of ints; got {text!r}") from None
    if not ms and "-" in text:
        raise ValueError(f"--m {text!r} is an empty range: LOW = {low} is greater than HIGH = {high}")
    if not ms or min(ms) < 2:
        raise ValueError(f"--m must list numbers of agents of at least 2; got {text!r}")
    if len(set(ms)) != len(ms):
        raise ValueError(f"--m lists {sorted({m for m in ms if ms.count(m) > 1})} more than once; give each number "
                         f"of agents once; got {text!r}")
    return ms


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m attnmarl.transfer", description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", default=[],
                        help="a shipped run, FOLDER/NAME (for example policy/pi-spread6-entity); repeatable")
    parser.add_argument("--scenario", default="simple_spread", choices=TEAM_SCENARIOS)
    parser.add_argument("--seeds", type=cli_seed(), nargs="+", default=[0])
    parser.add_argument("--m", default="2-16", help="numbers of agents: a range LOW-HIGH or a list 3,6,12")
    parser.add_argument("--episodes", type=cli_episodes(), default=200)
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--replace", action="store_true", help="replace --out if it exists (refused otherwise)")
    parser.add_argument("--continuous", action="store_true",
                        help="score simple_spread's baselines with continuous forces (no --run)")
    args = parser.parse_args(argv)
    if args.continuous and (args.run or args.scenario != "simple_spread"):
        parser.error("--continuous scores simple_spread's random and greedy baselines only: give no --run and no "
                     "other --scenario")
    try:  # everything that could stop the command after the evaluations, checked before them
        ms = parse_ms(args.m)
        for m in ms:
            team_kwargs(args.scenario, m)
        out = check_writable_file(args.out, "--out", replace=args.replace)
        checked = {(run, seed): check_transferable(ASSETS / f"{run}-seed{seed}.pt", args.scenario, ms, run, seed)
                   for run in args.run for seed in args.seeds}
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    torch.set_num_threads(1)
    arguments = argv if argv is not None else sys.argv[1:]
    cpu_start = time.process_time()
    runs: list[dict[str, Any]] = []
    for (run, seed), (path, config) in checked.items():
        scores = zero_shot_scores(path, ms, args.episodes, args.scenario)
        runs.append({"run": run, "seed": seed, "trained_m": trained_m(config.scenario, config.scenario_kwargs),
                     "scores": {str(m): [round(v, 4) for v in score] for m, score in scores.items()}})
    baselines = baseline_scores(ms, args.episodes, args.scenario, args.continuous)
    result = {
        "command": "python -m attnmarl.transfer " + " ".join(shlex.quote(a) for a in arguments),
        "scenario": args.scenario,
        "continuous_actions": args.continuous,
        "episodes": args.episodes,
        "cpu_seconds": round(time.process_time() - cpu_start, 1),
        "baselines": {str(m): {k: [round(v, 4) for v in score] for k, score in b.items()}
                      for m, b in baselines.items()},
        "runs": runs,
    }
    save_result(out, result, "--out")
    print(f"wrote {out} ({result['cpu_seconds']:.0f} CPU s)")


if __name__ == "__main__":
    run_command("python -m attnmarl.transfer", main, "nothing was written (the scores are computed anew each time)")
