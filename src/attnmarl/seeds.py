"""Train one named config over a list of seeds, on every core, resuming where an earlier call stopped.

    python -m attnmarl.train --config pi-spread3-attention --seeds 3-9 --out runs/policy [--jobs 2]

Each seed is one ordinary run in a process of its own, started with exactly the command line that trains that
seed alone (``--seed S`` in place of ``--seeds``, one torch thread): it writes the three files a single run
writes (``NAME-seedS.{pt,csv,json}``) and records that single-seed command in its summary, so a seed trained in
a list is the seed trained alone, and its summary says how to re-run it. ``--jobs`` processes run at once (one
per core by default).

A seed is finished when ``--out`` holds its summary and the checkpoint and curve that summary describes
(:func:`finished_seeds`); a call skips those, so running the same command again after an interruption, a crash
or a lost machine trains only the seeds that have no complete files. A run writes its files only at its end, so
an interrupted seed has none and starts again from scratch (a run cannot resume part-way); files of a seed that is
not finished (a checkpoint without its summary, a curve that is not the one its summary describes) are replaced.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from .checks import SEED_MAX

__all__ = ["MAX_SEEDS", "RUN_SUFFIXES", "parse_seeds", "finished_seeds", "single_seed_arguments", "run_seeds",
           "seed_span"]

RUN_SUFFIXES = (".pt", ".csv", ".json")
"""The files one run writes, ``NAME-seedS`` with each suffix: its checkpoint, curve and summary. Another file whose
name starts the same (a user's ``NAME-seedS.notes.txt``) is not the run's."""

MAX_SEEDS = 1000
"""The longest list ``--seeds`` takes: more is a typo (``0-99999``), not a plan."""


def parse_seeds(text: str) -> list[int]:
    """The seeds a ``--seeds`` value names, in increasing order: a comma-separated list of seeds and inclusive
    ranges, ``"3-9"``, ``"0,2,5"``, ``"0-2,7"``. ``ValueError`` for anything else: an empty item, a range that
    runs backwards, a seed named twice, a seed outside 0 … :data:`attnmarl.checks.SEED_MAX`, or more than
    :data:`MAX_SEEDS` seeds."""
    if not isinstance(text, str) or not text.strip():
        raise ValueError(f"--seeds must name seeds, such as 3-9 or 0,2,5; got {text!r}")
    seeds: list[int] = []
    for item in text.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?", item)
        if match is None:
            raise ValueError(f"--seeds: {item!r} is neither a seed nor a range like 3-9 (in {text!r})")
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise ValueError(f"--seeds: the range {item.strip()!r} runs backwards; write {last}-{first}")
        if last > SEED_MAX:
            raise ValueError(f"--seeds: a seed must be at most {SEED_MAX:,}; got {last}")
        if len(seeds) + last - first + 1 > MAX_SEEDS:
            raise ValueError(f"--seeds: {text!r} names more than {MAX_SEEDS} seeds")
        seeds.extend(range(first, last + 1))
    twice = sorted({seed for seed in seeds if seeds.count(seed) > 1})
    if twice:
        raise ValueError(f"--seeds: {text!r} names seed(s) {twice} more than once")
    return sorted(seeds)


def finished_seeds(out: str | Path, name: str, seeds: Sequence[int]) -> list[int]:
    """The seeds of ``seeds`` whose run of config ``name`` is complete in ``out``: a readable summary
    ``NAME-seedS.json`` whose checkpoint and curve are the ones beside it (what ``--index`` accepts)."""
    from .train import _disagreement, _summary  # train imports this module for --seeds

    done = []
    for seed in seeds:
        path = Path(out) / f"{name}-seed{seed}.json"
        if not path.exists():
            continue
        entry, why = _summary(path)
        if why is None and _disagreement(Path(out), entry) is None:
            done.append(seed)
    return done


def single_seed_arguments(arguments: Sequence[str], seed: int) -> list[str]:
    """The command line (after ``python -m attnmarl.train``) that trains ``seed`` alone: ``arguments`` with
    ``--seeds LIST`` replaced by ``--seed S``, and without ``--jobs``, ``--threads`` and ``--replace`` (each
    seed runs on one torch thread; a seed with a complete run is skipped, never replaced)."""
    single: list[str] = []
    given = iter(arguments)
    for argument in given:
        option, has_value, _ = argument.partition("=")
        if option in ("--seeds", "--jobs", "--threads"):
            if not has_value:
                next(given, None)
            if option == "--seeds":
                single += ["--seed", str(seed)]
        elif argument != "--replace":
            single.append(argument)
    return single


def run_seeds(name: str, seeds: Sequence[int], out: str | Path, arguments: Sequence[str],
              jobs: int | None = None, python: str = sys.executable) -> dict[int, str]:
    """Train the unfinished seeds of ``seeds``, ``jobs`` at a time (default: one per core), each as
    ``python -m attnmarl.train`` with :func:`single_seed_arguments`; returns each seed's outcome ("skipped",
    "trained", or "failed: <the run's last line>") and prints a line per seed as it ends. Ctrl-C stops the
    runs under way (each says that it wrote nothing) and ends with a line naming the seeds that are finished
    and how to train the rest, then exits with status 130."""
    jobs = jobs or os.cpu_count() or 1
    done = finished_seeds(out, name, seeds)
    outcome: dict[int, str] = dict.fromkeys(done, "skipped")
    waiting = [seed for seed in seeds if seed not in done]
    if done:
        print(f"{name}: seeds {seed_span(done)} already finished in {out}; skipped")
    if waiting:
        print(f"{name}: training seeds {seed_span(waiting)}, {min(jobs, len(waiting))} at a time")
    running: dict[int, tuple[subprocess.Popen, IO[bytes]]] = {}
    environment = {**os.environ, "OMP_NUM_THREADS": "1"}
    try:
        while waiting or running:
            while waiting and len(running) < jobs:
                seed = waiting.pop(0)
                command = [python, "-m", "attnmarl.train", *single_seed_arguments(arguments, seed)]
                stem = Path(out) / f"{name}-seed{seed}"
                stray = [stem.with_suffix(suffix).name for suffix in RUN_SUFFIXES if stem.with_suffix(suffix).exists()]
                if stray:  # left by a run whose summary is gone or does not describe them: not finished work
                    print(f"{name} seed {seed}: replacing incomplete files {', '.join(sorted(stray))}")
                    command.append("--replace")
                # a file, not a pipe: a run's progress bar would fill a pipe and block it; closed when it ends
                log = tempfile.TemporaryFile()  # noqa: SIM115
                running[seed] = (subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, env=environment),
                                 log)
            for seed, (process, log) in list(running.items()):
                if process.poll() is None:
                    continue
                log.seek(0)
                lines = [line for line in log.read().decode(errors="replace").splitlines() if line.strip()]
                log.close()
                del running[seed]
                if process.returncode == 0:
                    outcome[seed] = "trained"
                    score = next((line for line in reversed(lines) if " return over " in line), f"{name} seed {seed}")
                    print(score)
                else:
                    last = lines[-1].split("\r")[-1].strip() if lines else f"exit status {process.returncode}"
                    outcome[seed] = f"failed: {last}"
                    print(f"{name} seed {seed}: failed: {last}")
            time.sleep(0.2)
    except KeyboardInterrupt:
        for process, _ in running.values():
            process.wait()
        finished = sorted(finished_seeds(out, name, seeds))
        left = [seed for seed in seeds if seed not in finished]
        sys.stderr.write(f"\npython -m attnmarl.train: interrupted; seeds {seed_span(finished) or 'none'} of {name} "
                         f"are finished in {out}, each with its files complete; seeds {seed_span(left)} have no files: "
                         "run the same command again to train them\n")
        sys.exit(130)
    failed = sorted(seed for seed, state in outcome.items() if state.startswith("failed"))
    if failed:
        raise ValueError(f"seeds {seed_span(failed)} of {name} failed (each line above says why); the others are "
                         "finished: run the same command again to retry the failed ones")
    return dict(sorted(outcome.items()))


def seed_span(seeds: Sequence[int]) -> str:
    """Seeds as the shortest list of ranges, as ``--seeds`` takes them: [0, 1, 2, 5] -> '0-2,5'."""
    parts: list[list[int]] = []
    for seed in sorted(seeds):
        if parts and parts[-1][1] == seed - 1:
            parts[-1][1] = seed
        else:
            parts.append([seed, seed])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in parts)
