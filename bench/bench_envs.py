"""Env-steps per second: mpe2 vs the batched numpy ports, side by side in one run.

An env-step is one step of one environment (all its agents). mpe2 steps one environment at a time
in Python, so its rate per environment does not depend on how many environments one runs: it is
measured once per configuration (through the parallel API, random actions, resets included) and
compared with the port at 1, 64 and 1024 environments (simple_spread, N = 3, 6, 12), then at 1 and
1024 environments for the default simple_tag and collect_treasure, and for simple_spread with d decoys
per agent (chapter 12's reference environment, :mod:`attnmarl.envs.decoys`, and its port). Each cell runs
for a fixed wall-time budget.

    .venv/bin/python bench/bench_envs.py [--budget SECONDS]
"""
from __future__ import annotations

import argparse
import time

import numpy as np

from attnmarl.envs import make_batched, make_reference
from attnmarl.envs.decoys import NAME as DECOYS

AGENT_COUNTS = (3, 6, 12)
ENV_COUNTS = (1, 64, 1024)
OTHER_SCENARIOS = ("simple_tag", "collect_treasure")
DECOY_TEAMS = ((3, 1), (3, 3), (6, 3), (12, 3))
"""(N agents, d decoys per agent) of the decoy section: the book's d = 1 and 3, up to 12 agents and 36 decoys."""


def mpe2_rate(scenario: str, budget: float, **kwargs: int) -> float:
    """Env-steps/s of an mpe2 scenario (one env, parallel API, precomputed random actions)."""
    env = make_reference(scenario, **kwargs)
    env.reset(seed=0)
    rng = np.random.default_rng(0)
    n_agents = len(env.possible_agents)
    action_dicts = [{a: int(x) for a, x in zip(env.possible_agents, row)} for row in rng.integers(0, 5, (64, n_agents))]
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < budget:
        env.step(action_dicts[steps % len(action_dicts)])
        steps += 1
        if not env.agents:
            env.reset()
    return steps / (time.perf_counter() - start)


def port_rate(scenario: str, num_envs: int, budget: float, **kwargs: int) -> float:
    """Env-steps/s of a batched port of an mpe2 scenario (:func:`stepping_rate`, five discrete actions)."""
    port = make_batched(scenario, num_envs, seed=0, **kwargs)
    return stepping_rate(port, num_envs, port.n_agents, 5, budget)


def stepping_rate(port, num_envs: int, n_agents: int, n_actions: int, budget: float) -> float:
    """Env-steps/s of any batched port stepped for ``budget`` wall seconds with precomputed random actions
    (auto-resets included)."""
    rng = np.random.default_rng(0)
    actions = [rng.integers(0, n_actions, (num_envs, n_agents)) for _ in range(16)]
    port.step(actions[0])  # warm-up
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < budget:
        port.step(actions[steps % len(actions)])
        steps += 1
    return steps * num_envs / (time.perf_counter() - start)


def row(label: object, num_envs: int, reference: float, port: float) -> str:
    return f"| {label} | {num_envs} | {reference:,.0f} | {port:,.0f} | {port / reference:,.1f}× |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=float, default=1.5, help="wall-time seconds per measured cell")
    budget = parser.parse_args().budget
    print("simple_spread, env-steps/s (one env-step = one environment, all agents); "
          f"{budget:g} s per cell; mpe2 measured once per N (one env at a time)\n")
    print("| N | envs | mpe2 | port (numpy) | port / mpe2 |")
    print("|---:|---:|---:|---:|---:|")
    for n_agents in AGENT_COUNTS:
        reference = mpe2_rate("simple_spread", budget, N=n_agents)
        for num_envs in ENV_COUNTS:
            port = port_rate("simple_spread", num_envs, budget, N=n_agents)
            print(row(n_agents, num_envs, reference, port), flush=True)
    print("\nDefault simple_tag (3 adversaries, 1 good agent, 2 obstacles) and collect_treasure "
          "(6 collectors, 2 deposits, 6 treasures)\n")
    print("| scenario | envs | mpe2 | port (numpy) | port / mpe2 |")
    print("|---|---:|---:|---:|---:|")
    for scenario in OTHER_SCENARIOS:
        reference = mpe2_rate(scenario, budget)
        for num_envs in (1, 1024):
            port = port_rate(scenario, num_envs, budget)
            print(row(scenario, num_envs, reference, port), flush=True)
    print("\nsimple_spread with d decoys per agent (N targets, d·N decoys)\n")
    print("| N, d | envs | mpe2 | port (numpy) | port / mpe2 |")
    print("|---|---:|---:|---:|---:|")
    for n_agents, decoys in DECOY_TEAMS:
        reference = mpe2_rate(DECOYS, budget, N=n_agents, decoys=decoys)
        for num_envs in ENV_COUNTS:
            port = port_rate(DECOYS, num_envs, budget, N=n_agents, decoys=decoys)
            print(row(f"{n_agents}, {decoys}", num_envs, reference, port), flush=True)


if __name__ == "__main__":
    main()
