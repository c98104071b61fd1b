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
The entity-actor table times that actor's two formulations in turn, in the same run: the folded form
that training uses (:meth:`attnmarl.nets.EntityAttention.folded`) and the reference formulation that
chapter 8 teaches (``outputs_and_alpha``, which builds every token's d-wide embedding). The critic-path
table times the self-attention critic's forward and backward pass on one MAPPO minibatch with plain
attention and with PyTorch's fused kernel (the one training uses): is plain attention worth using at
small m? The compile table trains the entity actor at N = 12 with and without ``torch.compile``
(``python -m attnmarl.train --compile``). The MADDPG table trains chapter 9's configs (continuous
simple_spread, 64 environments stepped once per update of a 512-transition minibatch, entity actor) with
each Q critic at N = 3 and 6; its first ``learning_starts`` steps are cut to the warm-up iteration, so
every timed iteration includes an update.

    .venv/bin/python bench/bench_train.py [--updates 6] [--tables entity compile ...]
"""
from __future__ import annotations

import argparse
import math
import os
import time
from dataclasses import replace

import numpy as np
import torch

from attnmarl.algos import maddpg
from attnmarl.algos.mappo import MAPPOConfig, train
from attnmarl.envs import make_batched
from attnmarl.nets import AttentionCritic, EntityActor

AGENT_COUNTS = (3, 12)
CRITICS = ("attention", "concat")
ACTOR_AGENT_COUNTS = (3, 6, 12)
ACTORS = ("flat", "concat", "attention", "entity")
Q_AGENT_COUNTS = (3, 6)
ENTITY_AGENT_COUNTS = (6, 12)
CRITIC_PATH_AGENT_COUNTS = (3, 6, 8, 12)
ENTITY_TARGET = 2.5  # folded / reference at m = 12 (issue: the entity actor 2.5x faster, same math)
ENTITY_FLAT_TARGET = 0.6  # entity / flat actor at m = 6


def training_rate(config: MAPPOConfig | maddpg.MADDPGConfig, part: str = "critic",
                  compile_nets: bool = False) -> tuple[float, float, int]:
    """Env-steps per wall second and per CPU second over all updates but the first; the parameters of
    the agent's ``part`` ("critic" or "actor"). With ``compile_nets`` the first update also compiles."""
    marks: list[tuple[float, float]] = []
    parameters = 0

    def on_update(stats: dict[str, float], agent) -> None:
        nonlocal parameters
        marks.append((time.perf_counter(), time.process_time()))
        parameters = sum(p.numel() for p in getattr(agent, part).parameters())

    (train if isinstance(config, MAPPOConfig) else maddpg.train)(config, on_update, compile_nets=compile_nets)
    steps = (len(marks) - 1) * config.batch_size
    return steps / (marks[-1][0] - marks[0][0]), steps / (marks[-1][1] - marks[0][1]), parameters


def _reference_forward(actor: EntityActor, o: torch.Tensor) -> torch.Tensor:
    return actor.outputs_and_alpha(o)[0]


def entity_rates(N: int, base: MAPPOConfig, updates: int, rounds: int = 2) -> dict[str, float]:
    """Best rate per CPU second over ``rounds`` of MAPPO with the entity actor in its folded form, with it
    in the reference formulation, and with the flat actor, the three timed in turn. (CPU time, not wall
    time: on a machine shared with other work, the wall clock also counts the time spent waiting.)"""
    config = replace(base, scenario_kwargs={"N": N}, actor="entity", total_steps=(updates + 1) * base.batch_size)
    folded = EntityActor.forward
    rates: dict[str, float] = {}
    for _ in range(rounds):
        for name, forward in (("reference", _reference_forward), ("folded", folded)):
            EntityActor.forward = forward
            try:
                rates[name] = max(rates.get(name, 0.0), training_rate(config, "actor")[1])
            finally:
                EntityActor.forward = folded
        rates["flat"] = max(rates.get("flat", 0.0), training_rate(replace(config, actor="flat"), "actor")[1])
    return rates


def critic_pass_ms(N: int, minibatch: int, repeats: int = 20, rounds: int = 3) -> dict[str, float]:
    """CPU milliseconds of one forward + backward pass of the self-attention critic on a minibatch, with
    plain attention (``need_weights=True``: scores, softmax, weighted sum) and with the fused kernel that
    training uses (``need_weights=False``), timed in turn (best of ``rounds``)."""
    critic = AttentionCritic(N, 6 * N)
    o = torch.randn(minibatch, N, 6 * N)
    best = {"plain": math.inf, "fused": math.inf}
    for _ in range(rounds):
        for path in best:
            plain = path == "plain"
            critic.outputs(o, need_weights=plain)[0].sum().backward()  # warm-up
            start = time.process_time()
            for _ in range(repeats):
                critic.outputs(o, need_weights=plain)[0].sum().backward()
            best[path] = min(best[path], (time.process_time() - start) / repeats * 1e3)
    return best


def env_rate(N: int, num_envs: int, seconds: float = 1.0) -> float:
    """Env-steps/s of the batched simple_spread port alone (random actions, auto-reset included)."""
    env = make_batched("simple_spread", num_envs, N=N)
    actions = np.random.default_rng(0).integers(0, 5, (16, num_envs, N))
    steps, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        env.step(actions[steps % 16])
        steps += 1
    return steps * num_envs / (time.perf_counter() - start)


def critics_table(base: MAPPOConfig, updates: int) -> None:
    print("| N | critic | critic parameters | env-steps/s (wall) | env-steps per CPU second | "
          "attention / concat (wall) | port alone, env-steps/s |")
    print("|---|---|---|---|---|---|---|")
    for N in AGENT_COUNTS:
        rates = {}
        for critic in CRITICS:
            config = replace(base, scenario_kwargs={"N": N}, critic=critic, total_steps=(updates + 1) * base.batch_size)
            rates[critic] = training_rate(config)
        ceiling = env_rate(N, base.num_envs)
        for critic in CRITICS:
            wall, cpu, parameters = rates[critic]
            ratio = f"{rates['attention'][0] / rates['concat'][0]:.2f}" if critic == "attention" else ""
            print(f"| {N} | {critic} | {parameters:,} | {wall:,.0f} | {cpu:,.0f} | {ratio} | {ceiling:,.0f} |",
                  flush=True)


def actors_table(base: MAPPOConfig, updates: int) -> None:
    print("| N | actor (attention critic) | actor parameters | env-steps/s (wall) | env-steps per CPU second | "
          "actor / flat (wall) |")
    print("|---|---|---|---|---|---|")
    for N in ACTOR_AGENT_COUNTS:
        rates = {}
        for actor in ACTORS:
            config = replace(base, scenario_kwargs={"N": N}, actor=actor, total_steps=(updates + 1) * base.batch_size)
            rates[actor] = training_rate(config, "actor")
            wall, cpu, parameters = rates[actor]
            print(f"| {N} | {actor} | {parameters:,} | {wall:,.0f} | {cpu:,.0f} | {wall / rates['flat'][0]:.2f} |",
                  flush=True)


def entity_table(base: MAPPOConfig, updates: int) -> None:
    print(f"Entity actor, folded form (training) vs reference formulation (chapter 8), MAPPO end to end, best of "
          f"2 rounds; targets: folded / reference >= {ENTITY_TARGET} at N = 12, entity / flat >= "
          f"{ENTITY_FLAT_TARGET} at N = 6")
    print()
    print("| N | reference, env-steps per CPU s | folded, env-steps per CPU s | flat actor, env-steps per CPU s "
          "| folded / reference | entity / flat |")
    print("|---|---|---|---|---|---|")
    for N in ENTITY_AGENT_COUNTS:
        rates = entity_rates(N, base, updates)
        print(f"| {N} | {rates['reference']:,.0f} | {rates['folded']:,.0f} | {rates['flat']:,.0f} "
              f"| {rates['folded'] / rates['reference']:.2f} | {rates['folded'] / rates['flat']:.2f} |", flush=True)


def critic_path_table(base: MAPPOConfig, updates: int) -> None:
    minibatch = base.batch_size // base.num_minibatches
    print(f"Self-attention critic, forward + backward on one minibatch of {minibatch} env-steps, best of 3 rounds: "
          f"plain attention vs the fused kernel (training uses the fused kernel)")
    print()
    print("| N | plain (CPU ms) | fused (CPU ms) | fused / plain |")
    print("|---|---|---|---|")
    for N in CRITIC_PATH_AGENT_COUNTS:
        ms = critic_pass_ms(N, minibatch)
        print(f"| {N} | {ms['plain']:.1f} | {ms['fused']:.1f} | {ms['fused'] / ms['plain']:.2f} |", flush=True)


def compile_table(base: MAPPOConfig, updates: int) -> None:
    config = replace(base, scenario_kwargs={"N": 12}, actor="entity", total_steps=(updates + 1) * base.batch_size)
    start = time.process_time()
    compiled = training_rate(config, "actor", compile_nets=True)[1]
    total = time.process_time() - start
    eager = training_rate(config, "actor")[1]
    print("Entity actor at N = 12, MAPPO end to end, eager vs --compile (torch.compile; the first update, "
          "which compiles, is not timed)")
    print()
    print("| eager, env-steps per CPU s | compiled, env-steps per CPU s | compiled / eager | CPU s of the compiled "
          "run, compiling included |")
    print("|---|---|---|---|")
    print(f"| {eager:,.0f} | {compiled:,.0f} | {compiled / eager:.2f} | {total:.0f} |", flush=True)


def maddpg_table(base: MAPPOConfig, updates: int) -> None:
    q_base = maddpg.MADDPGConfig()
    iterations = 20 * updates
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


TABLES = {"critics": critics_table, "actors": actors_table, "entity": entity_table, "critic-path": critic_path_table,
          "compile": compile_table, "maddpg": maddpg_table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--updates", type=int, default=6, help="timed updates per cell (after one warm-up)")
    parser.add_argument("--tables", nargs="+", choices=list(TABLES), default=list(TABLES),
                        help="which tables to print (default: all)")
    args = parser.parse_args()
    torch.set_num_threads(1)
    base = MAPPOConfig()
    print(f"torch {torch.__version__}, 1 thread; {base.num_envs} envs x {base.rollout_steps} steps per update, "
          f"{base.update_epochs} epochs x {base.num_minibatches} minibatches; {args.updates} timed updates per cell; "
          f"load average at start {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for name in args.tables:
        print()
        TABLES[name](base, args.updates)
    print()
    print(f"load average at end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
