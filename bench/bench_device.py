"""GPU vs CPU, side by side in one run: the entity actor's forward + backward pass, and MAPPO end to end.

The entity actor (chapter 8's, in the folded form that training uses) on simple_spread observations of
m = 12, 24 and 48 agents, a batch of 4,096 joint observations: one forward pass for all m agents and the
backward pass of a loss on its outputs, timed on the CPU (all of torch's threads) and on the GPU in turn,
``--repeats`` times each after a warm-up (medians). Then MAPPO end to end at m = 12 and 24 (chapter 10's
``scale-spread12-entity`` config at that m: entity actor, self-attention critic, 128 environments x 25 steps
per update, 4 epochs of 2 minibatches), as ``python -m attnmarl.train --device cpu`` and ``--device cuda``
train it: the batched port steps on the CPU either way. The rate is env-steps per wall second over
``--updates`` updates after a warm-up update, and the table turns it into the minutes that one of chapter
10's points, 12 million agent-decisions (12M / m env-steps), takes to train (the training loop alone, without
the mpe2 evaluations a run adds). On a machine where torch sees no GPU there is nothing to compare: one line
says so, and the script exits 0. ``--json PATH`` also writes the figures, with the card's name, for the
benchmarks appendix.

    .venv/bin/python bench/bench_device.py [--repeats 5] [--updates 3] [--json PATH]
"""
from __future__ import annotations

import argparse
import copy
import datetime
import os
import statistics
import time
from dataclasses import replace

import torch

from attnmarl.algos import mappo
from attnmarl.envs import make_batched
from attnmarl.files.atomic import write_json_atomically
from attnmarl.nets import EntityActor
from attnmarl.train import named_config

ENTITY_MS = (12, 24, 48)
MAPPO_MS = (12, 24)
BATCH = 4096
ACTIONS = 5


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def entity_pass_ms(m: int, devices: list[torch.device], repeats: int, batch: int = BATCH) -> dict[str, float]:
    """Median milliseconds of one forward + backward pass of the entity actor on ``batch`` joint observations
    of simple_spread with m agents, on each device, the devices timed in turn (after one warm-up pass each)."""
    o = torch.from_numpy(make_batched("simple_spread", batch, seed=0, N=m).reset())
    torch.manual_seed(0)
    actor = EntityActor("simple_spread", {"N": m}, m, o.shape[-1], ACTIONS)
    on = {device.type: (copy.deepcopy(actor).to(device), o.to(device)) for device in devices}
    times: dict[str, list[float]] = {device.type: [] for device in devices}

    def one_pass(device: torch.device) -> float:
        net, x = on[device.type]
        net.zero_grad(set_to_none=True)
        _synchronize(device)
        start = time.perf_counter()
        net(x).square().mean().backward()
        _synchronize(device)
        return (time.perf_counter() - start) * 1e3

    for device in devices:  # warm-up: allocations, kernels chosen
        one_pass(device)
    for _ in range(repeats):
        for device in devices:
            times[device.type].append(one_pass(device))
    return {name: statistics.median(t) for name, t in times.items()}


def mappo_rate(m: int, device: torch.device, updates: int) -> float:
    """MAPPO's env-steps per wall second with the entity actor at m agents on ``device``, over ``updates``
    updates after a warm-up update (each update ends by reading its losses, so the GPU has finished it)."""
    base = named_config("scale-spread12-entity")
    config = replace(base, scenario_kwargs={"N": m}, total_steps=(updates + 1) * base.batch_size)
    marks: list[float] = []
    mappo.train(config, lambda stats, agent: marks.append(time.perf_counter()), device=device)
    return (len(marks) - 1) * config.batch_size / (marks[-1] - marks[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="timed passes of the entity actor per device and m")
    parser.add_argument("--updates", type=int, default=3, help="timed MAPPO updates per device and m")
    parser.add_argument("--json", metavar="PATH", help="also write the figures to this JSON file")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("bench_device: skipped, torch sees no GPU here (torch.cuda.is_available() is False), so there is no "
              "CPU / GPU table to print" + (f"; nothing written to {args.json}" if args.json else ""))
        return
    cpu, cuda = torch.device("cpu"), torch.device("cuda")
    card = torch.cuda.get_device_name(cuda)
    threads = torch.get_num_threads()
    print(f"torch {torch.__version__}; GPU: {card}; CPU: {threads} torch threads on {os.cpu_count()} cores; "
          f"load average at start {os.getloadavg()[0]:.1f}")
    figures: dict = {"date": datetime.date.today().isoformat(), "torch": torch.__version__, "gpu": card,
                     "cpu_threads": threads, "cpu_cores": os.cpu_count(), "entity_actor": [], "mappo": []}

    print(f"\nEntity actor, forward + backward on {BATCH:,} joint observations of simple_spread, median of "
          f"{args.repeats}\n")
    print("| m | tokens per agent | CPU (ms) | GPU (ms) | CPU / GPU |")
    print("|---|---|---|---|---|")
    for m in ENTITY_MS:
        ms = entity_pass_ms(m, [cpu, cuda], args.repeats)
        print(f"| {m} | {2 * m} | {ms['cpu']:,.1f} | {ms['cuda']:,.1f} | {ms['cpu'] / ms['cuda']:.1f} |", flush=True)
        figures["entity_actor"].append({"m": m, "batch": BATCH, "cpu_ms": round(ms["cpu"], 2),
                                        "gpu_ms": round(ms["cuda"], 2), "speedup": round(ms["cpu"] / ms["cuda"], 2)})

    base = named_config("scale-spread12-entity")
    print(f"\nMAPPO end to end, entity actor and self-attention critic, {base.num_envs} envs x {base.rollout_steps} "
          f"steps per update ({base.batch_size:,} env-steps), {args.updates} timed updates after a warm-up; minutes: "
          "the training loop of a 12M-decision run, without its mpe2 evaluations\n")
    print("| m | CPU env-steps/s | GPU env-steps/s | GPU / CPU | CPU min per 12M agent-decisions "
          "| GPU min per 12M agent-decisions |")
    print("|---|---|---|---|---|---|")
    for m in MAPPO_MS:
        rates = {device.type: mappo_rate(m, device, args.updates) for device in (cpu, cuda)}
        minutes = {name: 12e6 / m / rate / 60 for name, rate in rates.items()}
        print(f"| {m} | {rates['cpu']:,.0f} | {rates['cuda']:,.0f} | {rates['cuda'] / rates['cpu']:.1f} "
              f"| {minutes['cpu']:.1f} | {minutes['cuda']:.1f} |", flush=True)
        figures["mappo"].append({"m": m, "cpu_env_steps_per_s": round(rates["cpu"]),
                                 "gpu_env_steps_per_s": round(rates["cuda"]),
                                 "speedup": round(rates["cuda"] / rates["cpu"], 2),
                                 "cpu_minutes_per_12m_decisions": round(minutes["cpu"], 1),
                                 "gpu_minutes_per_12m_decisions": round(minutes["cuda"], 1)})
    print(f"\nload average at end {os.getloadavg()[0]:.1f}")
    if args.json:
        write_json_atomically(args.json, figures)
        print(f"figures written to {args.json}")


if __name__ == "__main__":
    main()
