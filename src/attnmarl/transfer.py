"""Trained agents at numbers of agents they were not trained with: zero-shot scores on mpe2.

    python -m attnmarl.transfer --run policy/pi-spread6-entity --seeds 0 1 2 --m 2-16 --out zero-shot.json

For every m, the random and greedy baselines of simple_spread (:mod:`attnmarl.envs.baselines`) and every
checkpoint, rebuilt for m by :func:`attnmarl.checkpoints.load_policy` (``N=m``), are scored on mpe2 over
the same fixed-seed episodes (seeds 0, 1, ...). Only an actor whose weights do not depend on m (the
entity actor) can run at another m; the others raise ``ValueError``. The JSON written records the
command, the CPU time and every score as [mean, sem] of the per-agent return.
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
import time
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from .checkpoints import ASSETS, load_checkpoint, load_policy
from .envs import evaluate, greedy_assignment_policy, random_policy
from .guards import check_writable_folder, cli_int, write_atomically

__all__ = ["closed_share", "baseline_scores", "zero_shot_scores", "parse_ms", "main"]


def closed_share(score: float, random: float, greedy: float) -> float:
    """The share of the random → greedy range a score closes: (score − random) / (greedy − random);
    1 means as good as the greedy assignment, above 1 better."""
    if not greedy > random:
        raise ValueError(f"the greedy score ({greedy}) must be above the random one ({random})")
    return (score - random) / (greedy - random)


def baseline_scores(ms: list[int], episodes: int = 200) -> dict[int, dict[str, tuple[float, float]]]:
    """``{m: {"random": (mean, sem), "greedy": (mean, sem)}}`` on mpe2 simple_spread with N = m."""
    return {m: {"random": evaluate(random_policy("simple_spread", N=m), "simple_spread", episodes, N=m),
                "greedy": evaluate(greedy_assignment_policy(), "simple_spread", episodes, N=m)}
            for m in tqdm(ms, desc="baselines")}


def zero_shot_scores(path: str | Path, ms: list[int], episodes: int = 200) -> dict[int, tuple[float, float]]:
    """``{m: (mean, sem)}``: the checkpoint at ``path`` acting on mpe2 simple_spread with N = m."""
    return {m: evaluate(load_policy(path, N=m), "simple_spread", episodes, N=m)
            for m in tqdm(ms, desc=Path(path).stem)}


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
    if not ms or min(ms) < 2:
        raise ValueError(f"--m must list numbers of agents of at least 2; got {text!r}")
    return ms


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m attnmarl.transfer", description=__doc__.splitlines()[0])
    parser.add_argument("--run", action="append", required=True,
                        help="a shipped run, FOLDER/NAME (for example policy/pi-spread6-entity); repeatable")
    parser.add_argument("--seeds", type=cli_int(0), nargs="+", default=[0])
    parser.add_argument("--m", default="2-16", help="numbers of agents: a range LOW-HIGH or a list 3,6,12")
    parser.add_argument("--episodes", type=cli_int(), default=200)
    parser.add_argument("--out", required=True, help="the JSON file to write")
    args = parser.parse_args(argv)
    try:
        ms = parse_ms(args.m)
        check_writable_folder(Path(args.out).parent, "the folder of --out")
    except ValueError as error:
        parser.error(str(error))
    torch.set_num_threads(1)
    arguments = argv if argv is not None else sys.argv[1:]
    cpu_start = time.process_time()
    runs: list[dict[str, Any]] = []
    for run in args.run:
        for seed in args.seeds:
            path = ASSETS / f"{run}-seed{seed}.pt"
            config, _, _ = load_checkpoint(path)
            scores = zero_shot_scores(path, ms, args.episodes)
            runs.append({"run": run, "seed": seed, "trained_m": config.scenario_kwargs["N"],
                         "scores": {str(m): [round(v, 4) for v in score] for m, score in scores.items()}})
    baselines = baseline_scores(ms, args.episodes)
    result = {
        "command": "python -m attnmarl.transfer " + " ".join(shlex.quote(a) for a in arguments),
        "episodes": args.episodes,
        "cpu_seconds": round(time.process_time() - cpu_start, 1),
        "baselines": {str(m): {k: [round(v, 4) for v in score] for k, score in b.items()}
                      for m, b in baselines.items()},
        "runs": runs,
    }
    text = (json.dumps(result, indent=1) + "\n").encode()
    write_atomically({args.out: lambda handle: handle.write(text)})
    print(f"wrote {args.out} ({result['cpu_seconds']:.0f} CPU s)")


if __name__ == "__main__":
    main()
