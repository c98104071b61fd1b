"""Judging a checkpoint on mpe2: its episodes side by side vs one after another, timed in turn in one run.

Every trained policy on the MPE tasks is judged on mpe2 (:func:`attnmarl.envs.evaluate`), which steps one game at a
time. A greedy checkpoint with discrete actions carries ``many`` (:func:`attnmarl.checkpoints.agent_policy`), so
:func:`attnmarl.envs.episode_returns` plays up to ``SIDE_BY_SIDE`` of its episodes at once and asks the network once
per step for all of them; with ``many`` removed it asks once per game and step. The table gives the wall time of
each and their ratio, with one torch thread, and how many episodes' returns differ: a batched matrix product may round
the last bit of a logit otherwise, which flips a greedy choice where two actions tie to that bit.

    .venv/bin/python bench/bench_evaluate.py [--episodes N]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
import torch

from attnmarl.checkpoints import load_policy, shipped_checkpoint
from attnmarl.envs import episode_returns

CHECKPOINTS = (
    ("policy", "pi-spread3-entity", "simple_spread", {"N": 3}, "the entity actor, m = 3"),
    ("policy", "pi-spread6-entity", "simple_spread", {"N": 6}, "the entity actor, m = 6"),
    ("mat", "mat-spread3", "simple_spread", {"N": 3}, "MAT, m = 3 (decoded agent by agent)"),
    ("mat", "mat-spread6", "simple_spread", {"N": 6}, "MAT, m = 6"),
    ("value", "spread3-attention", "simple_spread", {"N": 3}, "chapter 7's actor, m = 3"),
)
"""(folder, config, scenario, its arguments, what the row says) of the shipped seed-0 checkpoints timed."""


def timed(policy, scenario: str, episodes: int, kwargs: dict) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    returns = episode_returns(policy, scenario, episodes, seed=0, **kwargs)
    return time.perf_counter() - start, returns


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"mpe2 episodes of shipped checkpoints (seed 0), {args.episodes} episodes, one torch thread")
    print("| checkpoint | one by one (s) | side by side (s) | one by one / side by side | episodes that differ | "
          "mean's change |")
    print("|---|---:|---:|---:|---:|---:|")
    for folder, name, scenario, kwargs, label in CHECKPOINTS:
        policy = load_policy(shipped_checkpoint(folder, name, 0))
        side, side_returns = timed(policy, scenario, args.episodes, kwargs)
        del policy.many
        one, one_returns = timed(policy, scenario, args.episodes, kwargs)
        differ = int((side_returns != one_returns).any(axis=1).sum())
        change = side_returns.mean() - one_returns.mean()
        print(f"| {label} | {one:.1f} | {side:.1f} | {one / side:.1f}× | {differ} | {change:+.4f} |")


if __name__ == "__main__":
    main()
