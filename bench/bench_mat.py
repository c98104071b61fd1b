"""The cost of the Multi-Agent Transformer (chapter 13) beside the entity actor's MAPPO, as ratios in one run.

An env-step is one step of one environment (all its agents). Three tables, every cell in CPU time with one torch
thread (on a machine shared with other work the wall clock also counts waiting; the load average is printed):

- **acting** — milliseconds of one step of ``num_envs`` environments' actions (no gradient): the entity actor
  (one pass, every agent at once), MAT-Dec (the same, on MAT's tokens), MAT decoding agent by agent with its cache
  of keys and values (m passes of one position each) and without it (m passes over all m positions), at m = 3, 6
  and 12; ratios to the entity actor, and cache / no cache.
- **update** — CPU microseconds per env-step of the PPO phase of one update (forward and backward of the loss on
  every minibatch of every epoch, teacher-forced for MAT): MAPPO's 4 epochs x 2 minibatches with the entity actor
  and the self-attention critic against MAT's and MAT-Dec's 10 epochs x 1 minibatch (the recipe's), and per
  gradient pass (one forward and backward over ``num_envs x rollout_steps`` env-steps), which compares the
  networks without the recipes' epoch counts.
- **train** (``--tables train``) — end-to-end training, env-steps per CPU second, the first update a warm-up.

    .venv/bin/python bench/bench_mat.py [--tables act update train] [--updates 2]
"""
from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial

import torch

from attnmarl.algos import mappo, mat
from attnmarl.envs import make_batched

AGENT_COUNTS = (3, 6, 12)
NUM_ENVS = 128


def cpu_seconds(run: Callable[[], object], repeats: int, rounds: int = 3) -> float:
    """Best CPU seconds per call of ``run`` over ``rounds`` rounds of ``repeats`` calls, after a warm-up call."""
    run()
    best = float("inf")
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(repeats):
            run()
        best = min(best, (time.process_time() - start) / repeats)
    return best


def agents(m: int) -> dict[str, torch.nn.Module]:
    """The entity actor's MAPPO agent (chapter 10's config), MAT-Dec, and MAT with and without its cache."""
    torch.manual_seed(0)
    entity = mappo.make_agent(mappo.MAPPOConfig(scenario_kwargs={"N": m}, actor="entity"))
    built = {"entity (MAPPO)": entity}
    built["MAT-Dec"] = mat.make_agent(mat.MATConfig(scenario_kwargs={"N": m}, variant="mat-dec"))
    built["MAT, cache"] = mat.make_agent(mat.MATConfig(scenario_kwargs={"N": m}))
    built["MAT, no cache"] = mat.make_agent(mat.MATConfig(scenario_kwargs={"N": m}))
    built["MAT, no cache"].net.cache = False
    return built


def observations(m: int, batch: int) -> torch.Tensor:
    return torch.from_numpy(make_batched("simple_spread", batch, seed=0, N=m).reset())


def act_table(updates: int) -> None:
    print(f"Acting: CPU ms per step of {NUM_ENVS} environments (sampled actions, no gradient), best of 3 rounds")
    print()
    print("| m | entity (MAPPO) | MAT-Dec | MAT, cache (m passes of 1 position) | MAT, no cache (m passes of m) "
          "| MAT-Dec / entity | MAT cache / entity | MAT no cache / entity | no cache / cache |")
    print("|---|---|---|---|---|---|---|---|---|")
    for m in AGENT_COUNTS:
        o = observations(m, NUM_ENVS)
        generator = torch.Generator().manual_seed(0)
        ms = {}
        with torch.no_grad():
            for name, agent in agents(m).items():
                ms[name] = cpu_seconds(partial(agent.act, o, generator), repeats=10) * 1e3
        entity, dec, cached, uncached = ms.values()
        print(f"| {m} | {entity:.2f} | {dec:.2f} | {cached:.2f} | {uncached:.2f} | {dec / entity:.2f} | "
              f"{cached / entity:.2f} | {uncached / entity:.2f} | {uncached / cached:.2f} |", flush=True)


def _mappo_pass(agent: mappo.MAPPOAgent, o: torch.Tensor, a: torch.Tensor) -> Callable[[], None]:
    def run() -> None:
        log_pi, entropy = agent.evaluate_actions(o, a)
        (log_pi.mean() + entropy.mean() + agent.critic(o).pow(2).mean()).backward()
    return run


def _mat_pass(agent: mat.MATAgent, o: torch.Tensor, a: torch.Tensor) -> Callable[[], None]:
    def run() -> None:
        log_pi, entropy, values = agent.evaluate_actions(o, a)
        (log_pi.mean() + entropy.mean() + values.pow(2).mean()).backward()
    return run


def update_table(updates: int) -> None:
    ppo, recipe = mappo.MAPPOConfig(), mat.MATConfig()
    batch = ppo.batch_size
    passes = {"entity (MAPPO)": (ppo.update_epochs, ppo.num_minibatches),
              "MAT-Dec": (recipe.update_epochs, recipe.num_minibatches),
              "MAT": (recipe.update_epochs, recipe.num_minibatches)}
    print(f"Update: CPU us per env-step of the PPO phase of one update ({batch} env-steps: MAPPO {ppo.update_epochs} "
          f"epochs x {ppo.num_minibatches} minibatches, MAT {recipe.update_epochs} x {recipe.num_minibatches}), and "
          f"CPU ms per gradient pass over all {batch} env-steps (forward + backward), best of 3 rounds")
    print()
    print("| m | entity (MAPPO), us/env-step | MAT-Dec | MAT | MAT-Dec / entity | MAT / entity "
          "| pass over the batch, ms: entity, MAT-Dec, MAT | MAT pass / entity pass |")
    print("|---|---|---|---|---|---|---|---|")
    for m in AGENT_COUNTS:
        o = observations(m, batch)
        a = torch.randint(0, 5, (batch, m), generator=torch.Generator().manual_seed(0))
        built = agents(m)
        pass_s = {}
        for name, agent in (("entity (MAPPO)", built["entity (MAPPO)"]), ("MAT-Dec", built["MAT-Dec"]),
                            ("MAT", built["MAT, cache"])):
            minibatches = passes[name][1]
            size = batch // minibatches
            make = _mappo_pass if name.startswith("entity") else _mat_pass
            pass_s[name] = cpu_seconds(make(agent, o[:size], a[:size]), repeats=2) * minibatches
        per_step = {name: pass_s[name] * passes[name][0] / batch * 1e6 for name in pass_s}
        entity, dec, full = per_step.values()
        ms = ", ".join(f"{s * 1e3:.0f}" for s in pass_s.values())
        print(f"| {m} | {entity:.1f} | {dec:.1f} | {full:.1f} | {dec / entity:.2f} | {full / entity:.2f} | {ms} "
              f"| {pass_s['MAT'] / pass_s['entity (MAPPO)']:.2f} |", flush=True)


def training_rate(config: mappo.MAPPOConfig | mat.MATConfig) -> float:
    """Env-steps per CPU second of training ``config`` over all updates but the first."""
    marks: list[float] = []
    trainer = mappo.train if isinstance(config, mappo.MAPPOConfig) else mat.train
    trainer(config, lambda stats, agent: marks.append(time.process_time()))
    return (len(marks) - 1) * config.batch_size / (marks[-1] - marks[0])


def train_table(updates: int) -> None:
    print(f"Training end to end: env-steps per CPU second over {updates} updates after a warm-up update "
          f"({NUM_ENVS} environments x 25 steps, each recipe's epochs)")
    print()
    print("| m | entity (MAPPO) | MAT-Dec | MAT | MAT-Dec / entity | MAT / entity |")
    print("|---|---|---|---|---|---|")
    for m in AGENT_COUNTS:
        steps = (updates + 1) * NUM_ENVS * 25
        entity = training_rate(mappo.MAPPOConfig(scenario_kwargs={"N": m}, actor="entity", total_steps=steps))
        base = mat.MATConfig(scenario_kwargs={"N": m}, total_steps=steps)
        dec, full = training_rate(replace(base, variant="mat-dec")), training_rate(base)
        print(f"| {m} | {entity:,.0f} | {dec:,.0f} | {full:,.0f} | {dec / entity:.2f} | {full / entity:.2f} |",
              flush=True)


TABLES = {"act": act_table, "update": update_table, "train": train_table}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tables", nargs="+", choices=list(TABLES), default=["act", "update"])
    parser.add_argument("--updates", type=int, default=2, help="timed updates per cell of the train table")
    args = parser.parse_args()
    torch.set_num_threads(1)
    print(f"torch {torch.__version__}, 1 thread, load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    for name in args.tables:
        print()
        TABLES[name](args.updates)


if __name__ == "__main__":
    main()
