"""How much of a trained entity actor's return does its selection carry? Replace alpha at test time.

    python -m attnmarl.intervene --run scale/scale-spread3-entity --run policy/pi-spread6-entity \\
        --seeds 0 1 2 --out interventions.json

Each run's checkpoint plays mpe2 at the team size it was trained for three times, on the same fixed-seed
episodes: with its own alpha; with alpha uniform over its tokens (``uniform``: the same trained weights as
a mean-pooling network, :data:`attnmarl.nets.policies.INTERVENTIONS`); and with the alpha that another
agent computed from its own observation (``other-agent``: agent i mixes its tokens with agent i + 1's
weights, a real alpha of another state). Nothing is retrained: what the score loses is what the trained
network's selection was doing for it. The JSON written records the command, the CPU time and every score as
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

from .checkpoints import ASSETS, agent_policy, load_agent_at, load_run
from .checks import check_episodes, cli_episodes, cli_int
from .envs import evaluate
from .files.atomic import check_writable_file, save_result
from .interrupt import run_command
from .nets import EntityActor
from .nets.policies import INTERVENTIONS

__all__ = ["intervened_policy", "intervention_scores", "main"]


def intervened_policy(path: str | Path, intervention: str | None, **env_kwargs: Any):
    """The mpe2 dict policy of the entity-attention checkpoint at ``path`` with its alpha replaced by
    ``intervention`` (one of :data:`INTERVENTIONS`; ``None`` keeps it), as :func:`attnmarl.load_policy` builds
    it (``env_kwargs`` run it at another m). ``ValueError`` for a checkpoint whose actor has no attention
    to replace: another actor design, or the mean-pooling entity actor (its alpha is uniform already)."""
    if intervention not in INTERVENTIONS:
        raise ValueError(f"intervention must be one of {INTERVENTIONS}; got {intervention!r}")
    agent, config = load_agent_at(path, **env_kwargs)
    actor = getattr(agent, "actor", None)
    if not isinstance(actor, EntityActor) or actor.mixing != "attention":
        design = getattr(config, "actor", type(config).__name__)
        if isinstance(actor, EntityActor):
            design = f"entity actor with {actor.mixing} pooling"
        raise ValueError(f"{path} holds a {design} actor; an intervention replaces the alpha of an entity actor "
                         "that attends (entity_mixing = 'attention'), and this one has none to replace")
    actor.intervention = intervention
    return agent_policy(agent, config, source=path)


def intervention_scores(path: str | Path, episodes: int = 200,
                        interventions: tuple[str | None, ...] = INTERVENTIONS) -> dict[str, tuple[float, float]]:
    """``{intervention: (mean, sem)}`` of the checkpoint at ``path`` on mpe2 at its own team size, each on
    the same ``episodes`` fixed-seed episodes; the key of the unchanged actor is ``"none"``."""
    check_episodes("episodes", episodes)
    config = load_agent_at(path)[1]
    scores = {}
    for intervention in interventions:
        policy = intervened_policy(path, intervention)
        scores["none" if intervention is None else intervention] = evaluate(
            policy, config.scenario, episodes, **config.scenario_kwargs)
    return scores


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m attnmarl.intervene", description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True,
                        help="a shipped entity-attention run, FOLDER/NAME (for example policy/pi-spread6-entity); "
                             "repeatable")
    parser.add_argument("--seeds", type=cli_int(0), nargs="+", default=[0])
    parser.add_argument("--episodes", type=cli_episodes(), default=200)
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--replace", action="store_true", help="replace --out if it exists (refused otherwise)")
    args = parser.parse_args(argv)
    try:  # everything that could stop the command after the evaluations, checked before them
        out = check_writable_file(args.out, "--out", replace=args.replace)
        paths = {}
        for run in args.run:
            for seed in args.seeds:
                path = ASSETS / f"{run}-seed{seed}.pt"
                load_run(path, run, seed)
                intervened_policy(path, "uniform")
                paths[run, seed] = path
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    torch.set_num_threads(1)
    arguments = argv if argv is not None else sys.argv[1:]
    cpu_start = time.process_time()
    runs = []
    for (run, seed), path in tqdm(paths.items(), desc="runs"):
        config = load_agent_at(path)[1]
        scores = intervention_scores(path, args.episodes)
        runs.append({"run": run, "seed": seed, "scenario": config.scenario, "scenario_kwargs": config.scenario_kwargs,
                     "scores": {k: [round(v, 4) for v in score] for k, score in scores.items()}})
    result = {
        "command": "python -m attnmarl.intervene " + " ".join(shlex.quote(a) for a in arguments),
        "episodes": args.episodes,
        "cpu_seconds": round(time.process_time() - cpu_start, 1),
        "runs": runs,
    }
    save_result(out, result, "--out")
    print(f"wrote {out} ({result['cpu_seconds']:.0f} CPU s)")


if __name__ == "__main__":
    run_command("python -m attnmarl.intervene", main, "nothing was written (the scores are computed anew each time)")
