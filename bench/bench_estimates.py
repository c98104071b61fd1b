"""How close the run estimate (attnmarl.algos.estimate) comes to what a run takes, one kind of run per algorithm.

For each config, a few updates (2-5 CPU-seconds) are timed as the estimate counts them, CPU time with one torch
thread, and printed beside the estimate: measured / estimated near 1 is a good estimate. A benchmark, not a test:
the ratio depends on the machine (the coefficients were fitted on a busy 2-core CPU), so the book records it
(the benchmarks appendix) instead of asserting it.

    .venv/bin/python bench/bench_estimates.py
"""
from __future__ import annotations

import os
import time
from dataclasses import replace

import torch

from attnmarl.train import CONFIGS, ESTIMATES, TRAINERS

TINY = [("pi-spread6-entity", 4), ("comm-spread3-attention-2rounds", 3), ("mat-spread3", 2),
        ("q-spread3-attention", None), ("qmix-spread3-qatten", None)]
"""The runs timed, each with its number of updates (off-policy: 40 iterations of updates after learning_starts)."""


def main() -> None:
    torch.set_num_threads(1)
    print(f"load average {os.getloadavg()[0]:.1f}; CPU seconds, one torch thread\n")
    print("| config | env-steps | estimated | measured | measured / estimated |")
    print("|---|---:|---:|---:|---:|")
    for name, updates in TINY:
        config = CONFIGS[name]
        if updates is None:
            updates = -(-config.learning_starts // config.batch_size) + 40
        config = replace(config, total_steps=updates * config.batch_size)
        estimate = ESTIMATES[type(config)](config)
        started = time.process_time()
        TRAINERS[type(config)](config)
        measured = time.process_time() - started
        print(f"| {name} | {config.total_steps:,} | {estimate.total_seconds:.2f} | {measured:.2f} | "
              f"{measured / estimate.total_seconds:.2f} |", flush=True)


if __name__ == "__main__":
    main()
