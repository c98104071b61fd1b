"""MAT checkpoints scored in random decision orders: the order ablation of chapter 13, as a command.

    python -m attnmarl.orders --run mat/mat-spread3 --run mat/mat-spread3-shuffled --run mat/matdec-spread3 \
        --seeds 0 1 2 --orders 6 --out src/attnmarl/assets/mat/orders.json

MAT decodes its agents one after another, agent 1 first in training unless the run shuffled the order
(``shuffle_order``). Every shipped checkpoint given with ``--run`` and ``--seeds`` is scored on mpe2 at the m it
was trained with (or, with ``--m``, at another: MAT's weights do not depend on m), greedily, in agent order and in
``--orders`` random orders drawn from ``--order-seed`` (every order once where there are no more than ``--orders``:
the 6 orders of 3 agents for ``--orders 6``), each over the same ``--episodes`` fixed-seed episodes
(:func:`attnmarl.algos.mat.order_scores`). Only MAT and MAT-Dec
checkpoints decide in an order; MAT-Dec's scores must not depend on it (a check, not a finding).

The JSON written records the command, the CPU time, the orders and, per run and seed, ``agent_order`` and
``scores`` (the mean per-agent return in each order, in the orders' sequence).
"""
from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

import torch

from .algos.mat import order_scores
from .checkpoints import ASSETS, load_run
from .checks import MAX_EPISODES, cli_episodes, cli_int, cli_seed
from .files.atomic import check_writable_file, save_result
from .interrupt import run_command

__all__ = ["ORDERED_ACTORS", "check_ordered", "main"]

ORDERED_ACTORS = ("mat-decoder", "mat-dec")
"""The actors of :class:`attnmarl.algos.mat.MATConfig`: MAT's decoder and MAT-Dec's decentralized head."""


def check_ordered(path: str | Path, run: str, seed: int) -> Path:
    """The shipped checkpoint of ``run`` (``FOLDER/NAME``) and ``seed`` if it exists, holds that run
    (:func:`attnmarl.checkpoints.load_run`) and was trained by MAT or MAT-Dec; else ``ValueError`` naming it."""
    config = load_run(path, run, seed)
    if getattr(config, "actor", None) not in ORDERED_ACTORS:
        raise ValueError(f"{run} seed {seed} is a {getattr(config, 'actor', type(config).__name__)} actor, not "
                         "MAT's: only MAT and MAT-Dec decide in an order (chapter 13)")
    return Path(path)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m attnmarl.orders", description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True,
                        help="a shipped MAT run, FOLDER/NAME (for example mat/mat-spread3); repeatable")
    parser.add_argument("--seeds", type=cli_seed(), nargs="+", default=[0])
    parser.add_argument("--orders", type=cli_int(1, MAX_EPISODES), default=5,
                        help="random decision orders per checkpoint (default 5)")
    parser.add_argument("--order-seed", type=cli_seed(), default=0, help="the seed the orders are drawn from")
    parser.add_argument("--m", type=cli_int(2), help="the team size to score at (default: each run's own)")
    parser.add_argument("--episodes", type=cli_episodes(), default=200)
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--replace", action="store_true", help="replace --out if it exists (refused otherwise)")
    args = parser.parse_args(argv)
    if args.orders * args.episodes > MAX_EPISODES:
        parser.error(f"--orders x --episodes = {args.orders * args.episodes:,} evaluations of an episode; at most "
                     f"{MAX_EPISODES:,} (an evaluation of more would run for days)")
    try:  # everything that could stop the command after the evaluations, checked before them
        out = check_writable_file(args.out, "--out", replace=args.replace)
        paths = {(run, seed): check_ordered(ASSETS / f"{run}-seed{seed}.pt", run, seed)
                 for run in args.run for seed in args.seeds}
    except (ValueError, FileNotFoundError) as error:
        parser.error(str(error))
    torch.set_num_threads(1)
    arguments = argv if argv is not None else sys.argv[1:]
    cpu_start = time.process_time()
    runs = []
    for (run, seed), path in paths.items():
        team = {} if args.m is None else {"N": args.m}
        scored = order_scores(path, orders=args.orders, episodes=args.episodes, seed=args.order_seed, **team)
        runs.append({"run": run, "seed": seed, "m": len(scored["orders"][0]), "orders": scored["orders"],
                     "agent_order": round(scored["agent_order"], 4),
                     "scores": [round(score, 4) for score in scored["scores"]]})
        print(f"{run} seed {seed}: agent order {scored['agent_order']:.2f}, {len(scored['scores'])} orders "
              f"{min(scored['scores']):.2f} to {max(scored['scores']):.2f}")
    result = {"command": "python -m attnmarl.orders " + " ".join(shlex.quote(a) for a in arguments),
              "episodes": args.episodes, "order_seed": args.order_seed,
              "cpu_seconds": round(time.process_time() - cpu_start, 1), "runs": runs}
    save_result(out, result, "--out")
    print(f"wrote {out} ({result['cpu_seconds']:.0f} CPU s)")


if __name__ == "__main__":
    run_command("python -m attnmarl.orders", main, "nothing was written (the scores are computed anew each time)")
