"""End-to-end training throughput: env-steps per second, learning included — MAPPO for both critics
and for every actor, and MADDPG for both Q critics.

An env-step is one step of one environment (all its agents). Each cell runs
:func:`attnmarl.algos.mappo.train` on simple_spread — batched numpy port, rollout, critic pass,
GAE, PPO epochs — with the default config (128 environments x 25 steps per update, 4 epochs,
2 minibatches) and one torch thread, as ``python -m attnmarl.train`` does. The first update is a
warm-up; the rate is taken over the next ``--updates`` updates, in wall time and in CPU time
(the two differ when other processes share the CPU: the load average is printed alongside).
The critics' table ends with the batched port alone with random actions, the ceiling for training.
The actors' table trains each policy of chapter 8 with the self-attention critic at N = 3, 6 and 12.
The MADDPG table trains chapter 9's configs (continuous simple_spread, 64 environments stepped once per
update of a 512-transition minibatch, entity actor) with each Q critic at N = 3 and 6; its first
``learning_starts`` steps are cut to the warm-up iteration, so every timed iteration includes an update.

    .venv/bin/python bench/bench_train.py [--updates 6]
"""
from __future__ import annotations

import argparse
import os
import time
from dataclasses import replace

import numpy as np
import torch

from attnmarl.algos import maddpg
from attnmarl.algos.mappo import MAPPOConfig, train
from attnmarl.envs import make_batched

AGENT_COUNTS = (3, 12)
CRITICS = ("attention", "concat")
ACTOR_AGENT_COUNTS = (3, 6, 12)
ACTORS = ("flat", "concat", "attention", "entity")
Q_AGENT_COUNTS = (3, 6)


def training_rate(config: MAPPOConfig | maddpg.MADDPGConfig, part: str = "critic") -> tuple[float, float, int]:
    """Env-steps per wall second and per CPU second over all updates but the first; the parameters of
    the agent's ``part`` ("critic" or "actor")."""
    marks: list[tuple[float, float]] = []
    parameters = 0

    def on_update(stats: dict[str, float], agent) -> None:
        nonlocal parameters
        marks.append((time.perf_counter(), time.process_time()))
        parameters = sum(p.numel() for p in getattr(agent, part).parameters())

    (train if isinstance(config, MAPPOConfig) else maddpg.train)(config, on_update)
    steps = (len(marks) - 1) * config.batch_size
    return steps / (marks[-1][0] - marks[0][0]), steps / (marks[-1][1] - marks[0][1]), parameters


def env_rate(N: int, num_envs: int, seconds: float = 1.0) -> float:
    """Env-steps/s of the batched simple_spread port alone (random actions, auto-reset included)."""
    env = make_batched("simple_spread", num_envs, N=N)
    actions = np.random.default_rng(0).integers(0, 5, (16, num_envs, N))
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.step(actions[steps % 16])
        steps += 1
    return steps * num_envs / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=6, help="timed updates per cell (after one warm-up)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    base = MAPPOConfig()
    print(f"torch {torch.__version__}, 1 thread; {base.num_envs} envs x {base.rollout_steps} steps per update, "
          f"{base.update_epochs} epochs x {base.num_minibatches} minibatches; {args.updates} timed updates per cell; "
          f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print()
    print("| N | critic | critic parameters | env-steps/s (wall) | env-steps per CPU second | "
          "attention / concat (wall) | port alone, env-steps/s |")
    print("|---|---|---|---|---|---|---|")
    for N in AGENT_COUNTS:
        rates = {}
        for critic in CRITICS:
            config = replace(base, scenario_kwargs={"N": N}, critic=critic,
                             total_steps=(args.updates + 1) * base.batch_size)
            rates[critic] = training_rate(config)
        ceiling = env_rate(N, base.num_envs)
        for critic in CRITICS:
            wall, cpu, parameters = rates[critic]
            ratio = f"{rates['attention'][0] / rates['concat'][0]:.2f}" if critic == "attention" else ""
            print(f"| {N} | {critic} | {parameters:,} | {wall:,.0f} | {cpu:,.0f} | {ratio} | {ceiling:,.0f} |",
                  flush=True)
    print()
    print("| N | actor (attention critic) | actor parameters | env-steps/s (wall) | env-steps per CPU second | "
          "actor / flat (wall) |")
    print("|---|---|---|---|---|---|")
    for N in ACTOR_AGENT_COUNTS:
        rates = {}
        for actor in ACTORS:
            config = replace(base, scenario_kwargs={"N": N}, actor=actor,
                             total_steps=(args.updates + 1) * base.batch_size)
            rates[actor] = training_rate(config, "actor")
            wall, cpu, parameters = rates[actor]
            print(f"| {N} | {actor} | {parameters:,} | {wall:,.0f} | {cpu:,.0f} | {wall / rates['flat'][0]:.2f} |",
                  flush=True)
    print()
    q_base = maddpg.MADDPGConfig()
    iterations = 20 * args.updates
    print(f"MADDPG: {q_base.num_envs} envs x {q_base.rollout_steps} step and {q_base.updates_per_iteration} update "
          f"of {q_base.minibatch_size} transitions per iteration, {q_base.actor} actor; {iterations} timed iterations")
    print()
    print("| N | Q critic | critic parameters | env-steps/s (wall) | env-steps per CPU second "
          "| attention / concat (wall) |")
    print("|---|---|---|---|---|---|")
    for N in Q_AGENT_COUNTS:
        rates = {}
        for critic in CRITICS:
            config = replace(q_base, scenario_kwargs={"N": N, "continuous_actions": True}, critic=critic,
                             learning_starts=q_base.batch_size, total_steps=(iterations + 1) * q_base.batch_size)
            rates[critic] = training_rate(config)
        for critic in CRITICS:
            wall, cpu, parameters = rates[critic]
            ratio = f"{rates['attention'][0] / rates['concat'][0]:.2f}" if critic == "attention" else ""
            print(f"| {N} | {critic} | {parameters:,} | {wall:,.0f} | {cpu:,.0f} | {ratio} |", flush=True)
    print()
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
