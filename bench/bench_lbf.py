"""Env-steps per second: Level-Based Foraging's reference (``lbforaging``) vs the batched numpy port, side by side.

An env-step is one step of one game (all its players). The reference steps one game at a time in Python, so
its rate does not depend on how many games one runs: it is measured once per scenario (random actions, resets
included) and compared with :class:`attnmarl.envs.lbf.BatchedForaging` at 1, 64 and 1024 games (auto-resets
included), for chapter 12's scenarios (:data:`attnmarl.envs.lbf_baselines.SCENARIOS`: 3, 6 and 9 players, sight
2). Each cell runs for a fixed wall-time budget.

    .venv/bin/python bench/bench_lbf.py [--budget SECONDS]
"""
from __future__ import annotations

import argparse
import time

import numpy as np
from bench_envs import stepping_rate

from attnmarl.envs.lbf import N_ACTIONS, BatchedForaging, make_lbf_reference
from attnmarl.envs.lbf_baselines import MAX_STEPS, SCENARIOS, SIGHT

ENV_COUNTS = (1, 64, 1024)


def reference_rate(players: int, size: int, foods: int, budget: float) -> float:
    """Env-steps/s of the reference (one game, precomputed random actions, resets included)."""
    env = make_lbf_reference(players, size, foods, SIGHT, MAX_STEPS, seed=0)
    env.reset()
    actions = np.random.default_rng(0).integers(0, N_ACTIONS, (64, players)).tolist()
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < budget:
        _, _, done, _, _ = env.step(actions[steps % len(actions)])
        steps += 1
        if done:
            env.reset()
    return steps / (time.perf_counter() - start)


def port_rate(players: int, size: int, foods: int, num_envs: int, budget: float) -> float:
    """Env-steps/s of the port (precomputed random actions, auto-resets included)."""
    port = BatchedForaging(num_envs, players, size, foods, SIGHT, MAX_STEPS, seed=0)
    return stepping_rate(port, num_envs, players, N_ACTIONS, budget)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=1.5, help="wall-time seconds per measured cell")
    budget = parser.parse_args().budget
    print(f"Level-Based Foraging, env-steps/s (one env-step = one game, all players); {budget:g} s per cell; "
          "the reference measured once per scenario (one game at a time)\n")
    print("| scenario | games | lbforaging | port (numpy) | port / lbforaging |")
    print("|---|---:|---:|---:|---:|")
    for players, (size, foods) in SCENARIOS.items():
        reference = reference_rate(players, size, foods, budget)
        for num_envs in ENV_COUNTS:
            port = port_rate(players, size, foods, num_envs, budget)
            print(f"| {size}x{size}-{players}p-{foods}f | {num_envs} | {reference:,.0f} | {port:,.0f} | "
                  f"{port / reference:,.1f}× |", flush=True)


if __name__ == "__main__":
    main()
