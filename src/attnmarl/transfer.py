"""Trained agents at numbers of agents they were not trained with: zero-shot scores on mpe2.

    python -m attnmarl.transfer --run policy/pi-spread6-entity --seeds 0 1 2 --m 2-16 --out zero-shot.json
    python -m attnmarl.transfer --scenario collect_treasure --m 4,8,12 --out treasure-baselines.json
    python -m attnmarl.transfer --continuous --m 3,6 --out continuous-baselines.json
    python -m attnmarl.transfer --scenario simple_spread_decoys --run decoys/decoys3-spread6-entity --seeds 0 1 2 \
        --m 3,6,12 --decoys 1,3 --out zero-shot.json

For every m, the scenario's random and greedy baselines (:mod:`attnmarl.envs.baselines`; for
collect_treasure the greedy one is the treasure-hunter script) and every checkpoint given with ``--run``,
rebuilt for m by :func:`attnmarl.checkpoints.load_policy`, are scored on mpe2 over the same fixed-seed
episodes (seeds 0, 1, ...); a team of m agents is :func:`team_kwargs`. Only an actor whose weights do not
depend on m (the entity actor, MAT and MAT-Dec) can run at another m; the others raise ``ValueError``. Without ``--run``
only the baselines are scored; ``--continuous`` scores simple_spread's random and greedy baselines with
continuous forces (the range on which chapters 9 and 10 and the synthesis read the continuous-action designs).

On simple_spread with decoys (chapter 12, :mod:`attnmarl.envs.decoys`) a team is (m, d), m agents with d decoys
each, and every (m, d) of ``--m`` × ``--decoys`` is scored: the checkpoints and the reference's random and
target-greedy baselines (:func:`attnmarl.envs.decoys_port.baseline_scores`, as ``assets/decoys/baselines.json``).
An entity actor trained with decoys runs at any m and d >= 1, not at d = 0 (:func:`check_transferable` says why).

The JSON written records the command, the CPU time and every score as [mean, sem] of the per-agent return,
keyed by m (``"6"``), or by ``"m,d"`` (``"6,3"``) with decoys, where it also lists ``decoys`` and each run's
``trained_decoys``.
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
from .envs.decoys import NAME as DECOYS
from .envs.decoys_port import baseline_scores as decoy_baseline_scores
from .envs.scenarios import reference_kwargs
from .files.atomic import check_writable_file, save_result
from .interrupt import run_command

__all__ = ["ANY_TEAM_ACTORS", "TEAM_SCENARIOS", "DEFAULT_DECOYS", "Team", "team_kwargs", "teams_of", "team_key",
           "key_team", "greedy_policy", "closed_share", "baseline_scores", "zero_shot_scores", "check_transferable",
           "parse_ms", "parse_decoys", "main"]

ANY_TEAM_ACTORS = ("entity", "mat-decoder", "mat-dec")
"""The actors whose weights do not depend on the team: chapter 8's entity actor and chapter 13's MAT and MAT-Dec,
whose agent tokens come from the same entity encoder (:class:`attnmarl.nets.mat.AgentTokens`)."""

TEAM_SCENARIOS = ("simple_spread", "collect_treasure", DECOYS)
"""The cooperative scenarios whose team the book varies: its size m, and on simple_spread with decoys also d."""

DEFAULT_DECOYS = "1,3"
"""``--decoys`` on simple_spread with decoys when not given: chapter 12's d with decoys
(:data:`attnmarl.train.DECOY_DS` without 0), where every checkpoint trained with decoys can run."""

Team = int | tuple[int, int]
"""A team: its number of agents m, or on simple_spread with decoys (m, d), m agents with d decoys each (k = d·m
decoy landmarks beside the m targets)."""


def team_kwargs(scenario: str, team: Team) -> dict[str, int]:
    """mpe2 arguments for a team of m agents: simple_spread with N = m; collect_treasure with m − 2
    collectors, 2 deposits and m − 2 treasures (mpe2's default team is 6 + 2 with 6 treasures); simple_spread
    with decoys, where the team is (m, d), with N = m and d decoys per agent."""
    name = scenario_name(scenario)
    if name not in TEAM_SCENARIOS:
        raise ValueError(f"team sizes are defined for {list(TEAM_SCENARIOS)}, not {name!r}")
    if (isinstance(team, tuple) and len(team) == 2) != (name == DECOYS):
        raise ValueError(f"a team of {name} is " + ("(m, d), m agents with d decoys each" if name == DECOYS else
                                                    "its number of agents m") + f"; got {team!r}")
    m, d = team if name == DECOYS else (team, None)
    m = check_int(f"{name}: m", m, minimum=3 if name == "collect_treasure" else 1)
    if name == "collect_treasure":
        kwargs = {"num_collectors": m - 2, "num_deposits": 2, "num_treasures": m - 2}
    else:
        kwargs = {"N": m} if d is None else {"N": m, "decoys": check_int(f"{name}: d", d, minimum=0)}
    reference_kwargs(name, **kwargs)  # a team too large to build is refused here, before any work
    return kwargs


def teams_of(scenario: str, ms: list[int], ds: list[int] | None = None) -> list[Team]:
    """The teams to score, each checked by :func:`team_kwargs`: every m of ``ms``; on simple_spread with decoys,
    which takes ``ds`` (and only it does), every (m, d) of ``ms`` × ``ds``, m first."""
    if (scenario_name(scenario) == DECOYS) != (ds is not None):
        raise ValueError(f"decoys per agent (ds) are given for {DECOYS} and for no other scenario; got ds = {ds} "
                         f"for {scenario!r}")
    teams: list[Team] = [(m, d) for m in ms for d in ds] if ds is not None else list(ms)
    for team in teams:
        team_kwargs(scenario, team)
    return teams


def team_key(team: Team) -> str:
    """The JSON key of a team: ``"6"``, or ``"6,3"`` for (m, d) = (6, 3)."""
    return ",".join(str(n) for n in team) if isinstance(team, tuple) else str(team)


def key_team(key: str) -> Team:
    """The team of a JSON key of :func:`team_key`: ``"6"`` → 6, ``"6,3"`` → (6, 3)."""
    numbers = tuple(int(part) for part in key.split(","))
    return numbers if len(numbers) > 1 else numbers[0]


def _team_names(scenario: str) -> tuple[str, str]:
    """How messages name a team of ``scenario`` and what it is made of: ("m", "m"), or ("(m, d)", "m and d")."""
    return ("(m, d)", "m and d") if scenario_name(scenario) == DECOYS else ("m", "m")


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


def baseline_scores(teams: list[Team], episodes: int = 200, scenario: str = "simple_spread",
                    continuous: bool = False) -> dict[Team, dict[str, tuple[float, float]]]:
    """``{team: {"random": (mean, sem), "greedy": (mean, sem)}}`` on mpe2 with each team (:func:`team_kwargs`);
    on simple_spread also ``"steered"``, chapter 6's steered assignment (the strongest scripted team). With
    ``continuous`` (simple_spread only), the random and greedy teams act with continuous forces."""
    if continuous and scenario_name(scenario) != "simple_spread":
        raise ValueError(f"continuous baselines exist for simple_spread only, not {scenario!r}")
    return {team: _team_baselines(scenario, team, episodes, continuous) for team in tqdm(teams, desc="baselines")}


def _team_baselines(scenario: str, team: Team, episodes: int, continuous: bool) -> dict[str, tuple[float, float]]:
    """One team's row of :func:`baseline_scores`. With decoys, the random and target-greedy scores of
    :func:`attnmarl.envs.decoys_port.baseline_scores` (which make the shipped ``assets/decoys/baselines.json``)."""
    if scenario_name(scenario) == DECOYS:
        m, d = team
        row = decoy_baseline_scores((m,), (d,), episodes)[0]
        return {"random": tuple(row["random"]), "greedy": tuple(row["greedy"])}
    kwargs = {**team_kwargs(scenario, team), **({"continuous_actions": True} if continuous else {})}
    greedy = greedy_assignment_policy(continuous_actions=True) if continuous else greedy_policy(scenario, team)
    scores = {"random": evaluate(random_policy(scenario, **kwargs), scenario, episodes, **kwargs),
              "greedy": evaluate(greedy, scenario, episodes, **kwargs)}
    if scenario_name(scenario) == "simple_spread" and not continuous:
        scores["steered"] = evaluate(steered_assignment_policy(), scenario, episodes, **kwargs)
    return scores


def zero_shot_scores(path: str | Path, teams: list[Team], episodes: int = 200,
                     scenario: str = "simple_spread") -> dict[Team, tuple[float, float]]:
    """``{team: (mean, sem)}``: the checkpoint at ``path`` acting on mpe2 with each team (:func:`team_kwargs`:
    m agents, or (m, d) with decoys)."""
    scores = {}
    for team in tqdm(teams, desc=Path(path).stem):
        kwargs = team_kwargs(scenario, team)
        scores[team] = evaluate(load_policy(path, **kwargs), scenario, episodes, **kwargs)
    return scores


def trained_team(scenario: str, scenario_kwargs: dict[str, Any]) -> Team:
    """The team a run was trained with (the inverse of :func:`team_kwargs`): m, or (m, d) with decoys."""
    kwargs = reference_kwargs(scenario, **scenario_kwargs)  # mpe2's defaults where the run kept them
    name = scenario_name(scenario)
    if name == "collect_treasure":
        return kwargs["num_collectors"] + kwargs["num_deposits"]
    return (kwargs["N"], kwargs["decoys"]) if name == DECOYS else kwargs["N"]


def check_transferable(path: str | Path, scenario: str, teams: list[Team], run: str | None = None,
                       seed: int | None = None) -> tuple[Path, Any]:
    """The checkpoint at ``path`` and its config, if it can be scored at every team of ``teams`` (m, or (m, d)
    with decoys) beside the discrete baselines of ``scenario``; else ``ValueError`` saying what it was built for:
    its scenario, its team and action space, and whether its actor runs at other teams (only those of
    :data:`ANY_TEAM_ACTORS` do; with decoys, only on the same side of d = 0, see :func:`_check_decoy_bit`).
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
    own = trained_team(config.scenario, config.scenario_kwargs)
    other = [team for team in teams if team != own]
    name, parts = _team_names(scenario)
    if config.actor not in ANY_TEAM_ACTORS and other:
        raise ValueError(f"{built} at {name} = {own}; its weights' shapes depend on {parts}, so it cannot run at "
                         f"{name} = {other} (only the entity actor's and MAT's weights do not depend on {parts})")
    if scenario_name(scenario) == DECOYS:
        _check_decoy_bit(built, own, other)
    return Path(path), config


def _check_decoy_bit(built: str, own: tuple[int, int], teams: list[tuple[int, int]]) -> None:
    """``ValueError`` for an entity actor on simple_spread with decoys asked to run across d = 0. With decoys
    (d >= 1) every landmark token is ``[dx, dy, is_target]``; at d = 0 the environment is simple_spread itself
    (:mod:`attnmarl.envs.decoys`), whose landmark tokens are ``[dx, dy]``, with no bit. The actor's embedding of
    landmark tokens has the width it was trained on, so it runs at any m and any d on its own side of d = 0 only."""
    across = [team for team in teams if (team[1] == 0) != (own[1] == 0)]
    if across:
        trained = ("with decoys, so its landmark tokens carry an is_target bit that simple_spread's (d = 0) lack"
                   if own[1] else "without decoys, on simple_spread's landmark tokens, which lack the is_target bit "
                   "that decoys bring")
        raise ValueError(f"{built} at (m, d) = {own}; it was trained {trained}, and its landmark embedding reads "
                         f"tokens of the width it was trained on, so it cannot run at (m, d) = {across} (give "
                         f"--decoys {'of at least 1' if own[1] else '0'})")


def parse_ms(text: str) -> list[int]:
    """``"2-16"`` → [2, ..., 16]; ``"3,6,12"`` → [3, 6, 12]. Every m must be at least 2 (simple_spread)."""
    return _parse_counts(text, "--m", "numbers of agents", "3,6,12", minimum=2)


def parse_decoys(text: str) -> list[int]:
    """``"0-3"`` → [0, 1, 2, 3]; ``"1,3"`` → [1, 3]: decoys per agent d, each at least 0."""
    return _parse_counts(text, "--decoys", "numbers of decoys per agent", "0,1,3", minimum=0)


def _parse_counts(text: str, option: str, what: str, example: str, minimum: int) -> list[int]:
    """The counts of ``option``: a range ``LOW-HIGH`` or a list ``example``, each at least ``minimum``, none twice;
    ``ValueError`` naming the option otherwise."""
    try:
        if "-" in text:
            low, high = (int(part) for part in text.split("-"))
            counts = list(range(low, high + 1))
        else:
            counts = [int(part) for part in text.split(",")]
    except ValueError:
        raise ValueError(f"{option} takes a range 'LOW-HIGH' or a list '{example}' of ints; got {text!r}") from None
    if not counts and "-" in text:
        raise ValueError(f"{option} {text!r} is an empty range: LOW = {low} is greater than HIGH = {high}")
    if not counts or min(counts) < minimum:
        raise ValueError(f"{option} must list {what} of at least {minimum}; got {text!r}")
    if len(set(counts)) != len(counts):
        raise ValueError(f"{option} lists {sorted({n for n in counts if counts.count(n) > 1})} more than once; give "
                         f"each of the {what} once; got {text!r}")
    return counts


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m attnmarl.transfer", description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", default=[],
                        help="a shipped run, FOLDER/NAME (for example policy/pi-spread6-entity); repeatable")
    parser.add_argument("--scenario", default="simple_spread", choices=TEAM_SCENARIOS)
    parser.add_argument("--seeds", type=cli_seed(), nargs="+", default=[0])
    parser.add_argument("--m", default="2-16", help="numbers of agents: a range LOW-HIGH or a list 3,6,12")
    parser.add_argument("--decoys", help=f"{DECOYS} only: decoys per agent d, a range LOW-HIGH or a list 0,1,3; "
                                         f"every (m, d) of --m x --decoys is scored (default {DEFAULT_DECOYS})")
    parser.add_argument("--episodes", type=cli_episodes(), default=200)
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--replace", action="store_true", help="replace --out if it exists (refused otherwise)")
    parser.add_argument("--continuous", action="store_true",
                        help="score simple_spread's baselines with continuous forces (no --run)")
    args = parser.parse_args(argv)
    if args.continuous and (args.run or args.scenario != "simple_spread"):
        parser.error("--continuous scores simple_spread's random and greedy baselines only: give no --run and no "
                     "other --scenario")
    decoys = args.scenario == DECOYS
    if args.decoys is not None and not decoys:
        parser.error(f"--decoys sets the decoys per agent of --scenario {DECOYS}; {args.scenario} has no decoys")
    try:  # everything that could stop the command after the evaluations, checked before them
        ds = parse_decoys(DEFAULT_DECOYS if args.decoys is None else args.decoys) if decoys else None
        teams = teams_of(args.scenario, parse_ms(args.m), ds)
        out = check_writable_file(args.out, "--out", replace=args.replace)
        checked = {(run, seed): check_transferable(ASSETS / f"{run}-seed{seed}.pt", args.scenario, teams, run, seed)
                   for run in args.run for seed in args.seeds}
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    torch.set_num_threads(1)
    arguments = argv if argv is not None else sys.argv[1:]
    cpu_start = time.process_time()
    runs = [_run_row(run, seed, path, config, teams, args.episodes, args.scenario)
            for (run, seed), (path, config) in checked.items()]
    baselines = baseline_scores(teams, args.episodes, args.scenario, args.continuous)
    result = {
        "command": "python -m attnmarl.transfer " + " ".join(shlex.quote(a) for a in arguments),
        "scenario": args.scenario,
        "continuous_actions": args.continuous,
        **({"decoys": ds} if decoys else {}),
        "episodes": args.episodes,
        "cpu_seconds": round(time.process_time() - cpu_start, 1),
        "baselines": {team_key(team): {k: _rounded(score) for k, score in b.items()} for team, b in baselines.items()},
        "runs": runs,
    }
    save_result(out, result, "--out")
    print(f"wrote {out} ({result['cpu_seconds']:.0f} CPU s)")


def _run_row(run: str, seed: int, path: Path, config: Any, teams: list[Team], episodes: int,
             scenario: str) -> dict[str, Any]:
    """One checkpoint's entry in the JSON: its run, seed, the team it was trained with (``trained_m``, and with
    decoys ``trained_decoys``) and its :func:`zero_shot_scores` keyed by :func:`team_key`."""
    trained = trained_team(config.scenario, config.scenario_kwargs)
    m, d = trained if isinstance(trained, tuple) else (trained, None)
    scores = zero_shot_scores(path, teams, episodes, scenario)
    return {"run": run, "seed": seed, "trained_m": m, **({"trained_decoys": d} if d is not None else {}),
            "scores": {team_key(team): _rounded(score) for team, score in scores.items()}}


def _rounded(score: tuple[float, ...]) -> list[float]:
    """A score [mean, sem] as the JSON stores it: to 4 decimals."""
    return [round(v, 4) for v in score]


if __name__ == "__main__":
    run_command("python -m attnmarl.transfer", main, "nothing was written (the scores are computed anew each time)")
