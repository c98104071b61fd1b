"""Command line: re-run the book's shipped runs on Ray and say how each re-run compares with it.

    python -m attnmarl.reproduce [--chapter value policy qnet scale] [--configs NAME ...] [--seeds S ...]
                                 [--address auto|HOST:PORT|ray://HOST:10001] [--cpus N] [--retries R]
                                 [--device cpu|cuda] [--out reproduction]
    python -m attnmarl.reproduce --index DIR ...

Every shipped run is listed in its chapter's ``index.json`` (written by ``python -m attnmarl.train --index``)
with the command that made it and its final score: the mean per-agent return on mpe2 over 200 fixed-seed
episodes ± its standard error. This command runs the selected runs' recorded commands again, each as one
Ray task with one CPU and one torch thread (:func:`attnmarl.train.main`, so every run is trained and
evaluated exactly as the shipped one was), and compares the two scores. ``--index DIR`` re-runs the runs of
any folder that ``python -m attnmarl.train --index`` has indexed instead of a chapter's.

``--device cuda`` trains each run on a GPU (``python -m attnmarl.train --device cuda``): each task then asks
Ray for one, and a Ray without GPUs is refused before any run starts. The shipped runs trained on a CPU; a
run re-trained on a GPU is the same run with differently rounded sums, so its score is expected within noise
of the shipped one, not equal to it.

Where it runs: by default on a Ray started on this machine's cores (``--cpus`` to use fewer); with
``--address`` on an existing Ray cluster (``auto`` finds one started by ``ray start`` on this machine;
``ray://HOST:10001`` connects through Ray Client, which needs ``RAY_AUTH_MODE=token`` and the cluster's token
where the cluster uses Ray's token authentication). Every node needs ``attnmarl`` installed, the same version.
Ray is an optional extra: ``pip install "attnmarl[cluster]"``.

What it writes to ``--out``: each reproduced run's checkpoint, curve and summary in ``OUT/<chapter>/``, as
the training command writes them (the summary last, :func:`attnmarl.files.atomic.write_atomically`), and
``report.json`` and ``report.md``, rewritten after every finished run. Interrupted and started again
with the same arguments, it keeps every run whose summary is in ``OUT/<chapter>/`` and runs the others. One
reproduction writes to a folder at a time (a lock, :func:`_only_writer`): a second one into the same
folder is refused, since each rewrites the report with its own runs. Files that cannot be written (a full disk)
are kept in a new folder in the temporary folder, and the error says where (:func:`attnmarl.files.atomic.save_files`);
a cluster that stops answering mid-run ends the command in one line, with the finished runs kept.
A task that raises or whose worker dies is run again by Ray up to ``--retries`` times, then reported as
failed with its error (and tried again on the next start). A run whose recorded command the training command
line refuses, or which trains another run, is reported as failed at once, without a task (:func:`unrunnable`).

The verdict (:func:`verdict`) compares the re-run with the shipped run of the same seed: *identical* when
both have the same score and standard error (the same run, number for number); else z = (reproduced - shipped)
/ sqrt(se_shipped^2 + se_reproduced^2), the difference in combined standard errors, and the re-run is *within
noise* when |z| <= 3 and *differs* otherwise. That tests the evaluation's noise only, and generously: both
scores come from the same episode seeds, so their errors are not independent. The seed check
(:func:`seed_check`) asks the question of replication: is the re-run's score where a new seed of the same
config would score, inside the 95% prediction interval of the shipped seeds' scores
(:func:`attnmarl.stats.prediction_interval`; 3 seeds or more)? The exit status is 0 when every selected run
is identical or within noise, 1 otherwise.
"""
from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import logging
import math
import os
import shlex
import socket
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch
from tqdm.auto import tqdm

from . import train
from .checkpoints import shipped_runs
from .checks import MAX_THREADS, check_int, cli_int, cli_seed, cli_threads
from .files.atomic import check_writable_folder, save_files
from .interrupt import restore_sigint
from .stats import prediction_interval

__all__ = ["CHAPTERS", "THRESHOLD", "VERDICTS", "PASSING", "TRAIN_COMMAND", "DEVICES", "ClusterLostError",
           "select_runs", "unrunnable", "rerun_arguments", "rerun", "task_options", "verdict", "seed_check",
           "reproduce", "main"]

CHAPTERS = ("value", "policy", "qnet", "scale", "ablation", "maac", "comm", "mix", "decoys", "lbf", "mat")
"""The asset folders with shipped runs: chapters 7 (value network), 8 (policy), 9 (Q network), 10 (more agents,
the mean-pooling control of chapters 8 and 10, and MAAC's runs in it), 11 (messages under limited sight,
value decomposition), 12 (simple_spread with decoys, Level-Based Foraging) and 13 (the Multi-Agent Transformer)."""

THRESHOLD = 3.0
"""A re-run is within noise when its score is within this many combined standard errors of the shipped score."""

VERDICTS = ("identical", "within noise", "differs", "failed", "pending")
"""What :func:`verdict` and the report say of a re-run; "failed" is a run that raised, "pending" one not run yet."""

PASSING = ("identical", "within noise")
"""The verdicts of a re-run that matches its shipped run (exit status 0)."""

TRAIN_COMMAND = "python -m attnmarl.train"
"""How every recorded command starts."""

DEVICES = ("cpu", "cuda")
"""Where a re-run trains (``--device``). Not ``auto``: a Ray task that asks for no GPU is given none."""


class ClusterLostError(ConnectionError):
    """The Ray cluster stopped answering while runs were pending (its head died, the network or Ray Client's
    connection dropped): the finished runs are kept, and the same command resumes the others."""


RAY_MISSING = ('python -m attnmarl.reproduce runs its tasks on Ray, an optional extra that is not installed here: '
               'pip install "attnmarl[cluster]" (or pip install "ray[client]")')


def select_runs(chapters: list[str] | None = None, configs: list[str] | None = None, seeds: list[int] | None = None,
                index: str | Path | None = None) -> list[dict[str, Any]]:
    """The runs to reproduce, each its ``index.json`` entry plus ``"chapter"`` (the folder it is listed in) and
    ``"seed_scores"`` (the final scores of every seed of its config listed there, for :func:`seed_check`).

    From the shipped ``chapters`` (default: all of :data:`CHAPTERS`), or from the folder ``index``, keeping the
    configs named in ``configs`` and the seeds in ``seeds`` (default: all). ``ValueError`` names what does not
    exist: a chapter, a folder without an index, a config or seed listed nowhere, a command that is not
    ``python -m attnmarl.train ...``."""
    if index is not None:
        path = Path(index) / "index.json"
        if not path.exists():
            raise ValueError(f"no index.json in {str(index)!r} (python -m attnmarl.train --index DIR writes one)")
        listed = [{**entry, "chapter": Path(index).resolve().name} for entry in _index_entries(path)]
        if not listed:
            raise ValueError(f"{path} lists no runs: there is nothing to re-run (python -m attnmarl.train --index "
                             f"{index} indexes the runs the folder holds)")
    else:
        unknown = sorted(set(chapters or ()) - set(CHAPTERS))
        if unknown:
            raise ValueError(f"unknown chapter(s) {unknown}; the chapters with shipped runs are {list(CHAPTERS)}")
        listed = [{**entry, "chapter": chapter} for chapter in chapters or CHAPTERS for entry in shipped_runs(chapter)]
    names, numbers = sorted({e["name"] for e in listed}), sorted({e["seed"] for e in listed})
    if set(configs or ()) - set(names):
        raise ValueError(f"config(s) {sorted(set(configs) - set(names))} are not among the selected runs; "
                         f"they have {names}")
    if set(seeds or ()) - set(numbers):
        raise ValueError(f"seed(s) {sorted(set(seeds) - set(numbers))} are not among the selected runs; "
                         f"they have seeds {numbers}")
    runs = [{**e, "seed_scores": [s["final_return"] for s in listed if s["name"] == e["name"]]}
            for e in listed if (not configs or e["name"] in configs) and (not seeds or e["seed"] in seeds)]
    for entry in runs:
        _train_arguments(entry["command"])
    if not runs:
        raise ValueError("no run matches both --configs and --seeds")
    return runs


def unrunnable(entry: dict[str, Any]) -> str | None:
    """Why the recorded command of ``entry`` cannot re-run it, or None: the training command line refuses it
    (an unknown config, a budget it would not train, a missing fine-tuning start; checked without training by
    :func:`attnmarl.train.check_command`), or it trains another config or seed than the run's. Such a run is
    reported as failed at once, without a task: as a task it would fail after Ray started, and with another
    seed only after hours of training."""
    try:
        name, seed = train.check_command(_train_arguments(entry["command"]))
    except ValueError as error:
        return f"not run: its recorded command cannot re-run it: {error}"
    if (name, seed) != (entry["name"], entry["seed"]):
        return f"not run: its recorded command trains {name}-seed{seed}, another run"
    return None


ENTRY_FIELDS = {"name": str, "seed": int, "command": str, "final_return": (int, float), "final_sem": (int, float),
                "final_episodes": int, "cpu_seconds": (int, float)}
"""The fields of an ``index.json`` entry that a reproduction reads, and their types."""


def _index_entries(path: Path) -> list[dict[str, Any]]:
    """The entries of the index ``path``; ``ValueError`` naming the file and the entry if it is not valid JSON,
    not a list of objects, or an entry lacks a field a reproduction reads (:data:`ENTRY_FIELDS`)."""
    try:
        entries = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} is not a readable index (python -m attnmarl.train --index DIR writes one): "
                         f"{error}") from None
    if not isinstance(entries, list) or not all(isinstance(e, dict) for e in entries):
        raise ValueError(f"{path} must hold a list of run entries (objects); got {type(entries).__name__}")
    seen: dict[tuple[str, int], int] = {}
    for i, entry in enumerate(entries):
        for field, kind in ENTRY_FIELDS.items():
            value = entry.get(field)
            if not isinstance(value, kind) or isinstance(value, bool) or not _in_range(field, value):
                raise ValueError(f"entry {i} of {path} ({entry.get('name', 'unnamed')}) has no valid {field!r} "
                                 f"(got {value!r}); python -m attnmarl.train --index DIR writes it again")
        if Path(entry["name"]).name != entry["name"] or entry["name"] in ("", ".", ".."):
            raise ValueError(f"entry {i} of {path} is named {entry['name']!r}, not a config's name: its files would "
                             "be read and written outside --out")
        first = seen.setdefault((entry["name"], entry["seed"]), i)
        if first != i:  # two tasks would train the run and write the same files
            raise ValueError(f"entries {first} and {i} of {path} are both run {entry['name']}-seed{entry['seed']}; "
                             "python -m attnmarl.train --index DIR lists each run once")
    return entries


def _in_range(field: str, value: Any) -> bool:
    """Whether an entry's number can be a run's: scores finite, standard errors, CPU times and seeds >= 0, and
    at least one final episode (a NaN score would read as a run that differs, a NaN error as one within noise)."""
    if isinstance(value, str):
        return True
    minimum = {"final_sem": 0, "cpu_seconds": 0, "seed": 0, "final_episodes": 1}.get(field, -math.inf)
    return math.isfinite(value) and value >= minimum


def _check_reachable(address: str | None, timeout: float = 5.0) -> None:
    """``ValueError`` at once, rather than Ray's minutes of retries, if nothing listens at ``address``
    (``HOST:PORT`` or ``ray://HOST:PORT``; ``auto`` and ``None`` are not checked)."""
    if address is None or address == "auto":
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    bare = host.startswith("[") and host.endswith("]") or ":" not in host and "/" not in host  # IPv6 in brackets
    if not host or not bare or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError(f"--address must be auto, HOST:PORT or ray://HOST:PORT; got {address!r}")
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=timeout).close()
    except socket.gaierror as error:  # no such host: nothing was asked, so nothing timed out
        raise ValueError(f"cannot join a Ray cluster at {address!r}: its host {host!r} is no name or address this "
                         f"machine can resolve ({error.strerror or error})") from None
    except OSError as error:
        raise ValueError(f"cannot join a Ray cluster at {address!r}: nothing answered within {timeout:.0f} s "
                         f"({error.strerror or error}); is the cluster running (ray start --head)?") from None


def _train_arguments(command: str) -> list[str]:
    """The arguments of a recorded training command (``ValueError`` for any other command)."""
    try:
        words = shlex.split(command)
    except ValueError as error:  # an unclosed quote
        raise ValueError(f"a recorded command cannot be read as a command line ({error}): {command!r}") from None
    if words[:3] != TRAIN_COMMAND.split() or not any(w.split("=")[0] == "--config" for w in words[3:]):
        raise ValueError(f"a recorded command is {TRAIN_COMMAND!r} --config NAME ...; got {command!r}")
    return words[3:]


def rerun_arguments(command: str, out: str, device: str = "cpu") -> list[str]:
    """The arguments of ``python -m attnmarl.train`` that re-run a recorded training command: its own, then one
    torch thread, the folder ``out`` and the ``device`` (the last of each option wins, so a recorded
    ``--threads``, ``--out`` or ``--device`` is overridden)."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {list(DEVICES)}; got {device!r}")
    return [*_train_arguments(command), "--threads", "1", "--out", out, "--device", device]


def rerun(command: str, device: str = "cpu") -> dict[str, Any]:
    """Run a recorded training command again, in a temporary folder, with one torch thread, on ``device``: the
    new run's summary and its files' bytes by suffix (``.pt``, ``.csv``, ``.json``), so that the caller,
    wherever it runs, can keep them. A command the training CLI refuses raises ``RuntimeError`` with its message."""
    with tempfile.TemporaryDirectory(prefix="attnmarl-reproduce-") as folder:
        arguments = rerun_arguments(command, folder, device)
        messages = io.StringIO()
        try:  # the CLI's messages and progress bar go to the buffer, not to the worker's log
            with contextlib.redirect_stderr(messages), contextlib.redirect_stdout(messages):
                train.main(arguments)
        except SystemExit:
            refusal = (messages.getvalue().strip().splitlines() or [""])[-1]
            raise RuntimeError(f"python -m attnmarl.train refused {command!r}: {refusal}") from None
        files = {path.suffix: path.read_bytes() for path in Path(folder).iterdir()}
    return {"summary": json.loads(files[".json"]), "files": files}


def verdict(shipped: dict[str, Any], reproduced: dict[str, Any] | None) -> tuple[float | None, str]:
    """z = (reproduced - shipped) / sqrt(se_shipped^2 + se_reproduced^2) of the two final scores, and the
    verdict (:data:`VERDICTS`): ``identical`` for the same score and error, ``within noise`` when
    |z| <= :data:`THRESHOLD`, else ``differs`` (``pending`` without a result). ``ValueError`` for a score or
    standard error that is NaN or infinite, or an error below 0."""
    if reproduced is None:
        return None, "pending"
    for which, result in (("shipped", shipped), ("reproduced", reproduced)):
        score, sem = result["final_return"], result["final_sem"]
        if not (math.isfinite(score) and math.isfinite(sem) and sem >= 0):
            raise ValueError(f"the {which} score {score} ± {sem} is not a finite score with a standard error >= 0; "
                             "there is no verdict on it")
    difference = reproduced["final_return"] - shipped["final_return"]
    combined = math.hypot(shipped["final_sem"], reproduced["final_sem"])
    z = difference / combined if combined > 0 else (0.0 if difference == 0 else math.copysign(math.inf, difference))
    if difference == 0 and shipped["final_sem"] == reproduced["final_sem"]:
        return z, "identical"
    return z, "within noise" if abs(z) <= THRESHOLD else "differs"


def seed_check(seed_scores: list[float], reproduced: dict[str, Any] | None) -> dict[str, Any] | None:
    """Whether a re-run scores where a new seed of its config would: the 95% prediction interval of the shipped
    seeds' scores (:func:`attnmarl.stats.prediction_interval`) and whether the re-run's score lies inside it.
    None without a result or with fewer than 3 shipped seeds."""
    if reproduced is None or len(seed_scores) < 3:
        return None
    low, high = prediction_interval(seed_scores)
    return {"seeds": len(seed_scores), "interval": [round(low, 3), round(high, 3)],
            "inside": bool(low <= reproduced["final_return"] <= high)}


def task_options(device: str, retries: int) -> dict[str, Any]:
    """The Ray resources and retries of one re-run: one CPU, and one GPU when it trains on ``device`` cuda."""
    if device not in DEVICES:
        raise ValueError(f"device must be one of {list(DEVICES)}; got {device!r}")
    return {"num_cpus": 1, "num_gpus": 1 if device == "cuda" else 0, "max_retries": retries, "retry_exceptions": True}


def _check_gpus(ray: Any) -> None:
    """``ValueError`` if the joined Ray has no GPU: a task that asks for one would wait for ever."""
    if not ray.cluster_resources().get("GPU"):
        raise ValueError("--device cuda: the Ray cluster has no GPU, so runs that ask for one would never start; "
                         "use --device cpu, or a cluster with GPUs")


def _key(entry: dict[str, Any]) -> str:
    return f"{entry['chapter']}/{entry['name']}-seed{entry['seed']}"


def _kept(out: Path, entry: dict[str, Any]) -> dict[str, Any] | None:
    """The summary of a run reproduced by an earlier start, or None; ``ValueError`` naming the file if it is
    damaged (the command would otherwise stop at a bare JSON error, or report a verdict on nothing)."""
    path = out / f"{_key(entry)}.json"
    if not path.exists():
        return None
    try:
        summary = json.loads(path.read_text())
        reason = None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        summary, reason = None, f"it is not readable JSON ({error})"
    scored = isinstance(summary, dict) and all(
        isinstance(summary.get(key), (int, float)) and not isinstance(summary.get(key), bool) and
        _in_range(key, summary[key]) for key in ("final_return", "final_sem", "final_episodes", "cpu_seconds"))
    if not reason and scored and (summary.get("name"), summary.get("seed")) != (entry["name"], entry["seed"]):
        reason = (f"it describes run {summary.get('name')}-seed{summary.get('seed')}, not "
                  f"{entry['name']}-seed{entry['seed']}")
    if reason or not scored:
        reason = reason or ("it is not a run summary with a final score (final_return, final_sem, final_episodes "
                            "and cpu_seconds)")
        raise ValueError(f"{path}, the summary of a run reproduced by an earlier start, is damaged: {reason}; remove "
                         f"{path.with_suffix('')}.* to reproduce the run again")
    return summary


def _keep(out: Path, entry: dict[str, Any], files: dict[str, bytes]) -> None:
    """Write a reproduced run's files into ``OUT/<chapter>/``, the summary last (it marks the run finished); if
    they cannot be written there, they are kept elsewhere and ``OSError`` says where (:func:`save_files`)."""
    stem = out / _key(entry)
    with contextlib.suppress(OSError):  # a folder that cannot be made: save_files keeps the files elsewhere
        stem.parent.mkdir(parents=True, exist_ok=True)
    save_files({stem.with_suffix(suffix): files[suffix] for suffix in (".pt", ".csv", ".json") if suffix in files},
               "--out")


def _row(entry: dict[str, Any], reproduced: dict[str, Any] | None, error: str | None) -> dict[str, Any]:
    z, said = verdict(entry, reproduced)
    return {
        "run": _key(entry), "chapter": entry["chapter"], "name": entry["name"], "seed": entry["seed"],
        "command": entry["command"],
        "shipped": {k: entry[k] for k in ("final_return", "final_sem", "final_episodes", "cpu_seconds")},
        "reproduced": None if reproduced is None else
        {k: reproduced[k] for k in ("final_return", "final_sem", "final_episodes", "cpu_seconds")},
        "z": None if z is None else round(z, 2),
        "verdict": "failed" if error else said,
        "seed_check": None if error else seed_check(entry.get("seed_scores", []), reproduced),
        "error": error,
    }


def _seeds(check: dict[str, Any] | None) -> str:
    """The seed check in a report's table: ``yes, -37.9 to -28.1 (3 seeds)``, or — where there is none."""
    if check is None:
        return "—"
    low, high = check["interval"]
    return f"{'yes' if check['inside'] else 'no'}, {low:.1f} to {high:.1f} ({check['seeds']} seeds)"


def _report(out: Path, rows: list[dict[str, Any]], retries: int, date: str | None = None) -> dict[str, Any]:
    """Write ``report.json`` and ``report.md`` (atomically) and return the report, dated ``date`` (default:
    today)."""
    counts = {v: sum(r["verdict"] == v for r in rows) for v in VERDICTS}
    references = sorted({train.reference_of(train.CONFIGS[r["name"]].scenario) for r in rows
                         if r["name"] in train.CONFIGS}) or ["mpe2"]
    rule = (f"A re-run is identical when its score and standard error are the shipped run's; else z = (reproduced - "
            f"shipped) / sqrt(se_shipped^2 + se_reproduced^2), and it is within noise when |z| <= {THRESHOLD:g} "
            "(a test of evaluation noise only, and a lenient one: both scores come from the same episode seeds), "
            "and differs otherwise. New seed? says whether the re-run's score lies in the 95% prediction interval of "
            "the shipped seeds' scores of its config (3 seeds or more): where a new seed would score. Scores: mean "
            f"per-agent {' or '.join(references)} return ± standard error over the same fixed-seed episodes. A failed "
            "run raised an "
            f"error, or lost its worker, {retries + 1} time(s).")
    today = date or datetime.date.today().isoformat()
    report = {"date": today, "rule": rule, "threshold": THRESHOLD, "retries": retries, "counts": counts, "runs": rows}
    lines = ["# Reproduction of the shipped runs", "", f"Made on {today}. {rule}", "",
             ", ".join(f"{n} {v}" for v, n in counts.items()), "",
             "| run | shipped score | reproduced score | difference (se) | CPU s, shipped | CPU s, reproduced "
             "| verdict | new seed? (95%) |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        shipped, reproduced = r["shipped"], r["reproduced"]
        z = "—" if r["z"] is None else f"{r['z']:+.2f}"
        cpu = "—" if reproduced is None else f"{reproduced['cpu_seconds']:.0f}"
        lines.append(f"| {r['run']} | {_score(shipped)} | {_score(reproduced)} | {z} | {shipped['cpu_seconds']:.0f} "
                     f"| {cpu} | {r['verdict']} | {_seeds(r.get('seed_check'))} |")
    failed = [r for r in rows if r["error"]]
    if failed:
        lines += ["", "Errors:", ""] + [f"- {r['run']}: {r['error']}" for r in failed]
    save_files({out / "report.json": (json.dumps(report, indent=1) + "\n").encode(),
                out / "report.md": ("\n".join(lines) + "\n").encode()}, "--out")
    return report


def _score(result: dict[str, Any] | None) -> str:
    return "—" if result is None else f"{result['final_return']:.2f} ± {result['final_sem']:.2f}"


def _ray() -> Any:
    """The ``ray`` module, or ``ModuleNotFoundError`` saying how to install it."""
    try:
        import ray
    except ModuleNotFoundError:
        raise ModuleNotFoundError(RAY_MISSING) from None
    return ray


def _connect(ray: Any, address: str | None, cpus: int | None) -> bool:
    """Join a Ray: the one this process already joined, the cluster at ``address``, or a new local Ray on
    ``cpus`` cores (default: all). True if this call started the connection (and so should end it)."""
    if ray.is_initialized():
        return False
    quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
    try:
        if address is None:
            ray.init(address="local", num_cpus=cpus, include_dashboard=False, **quiet)
        else:
            ray.init(address=address, **quiet)
    except (ConnectionError, RuntimeError) as error:
        hint = (" (a cluster that uses Ray's token authentication also needs RAY_AUTH_MODE=token and the cluster's "
                "token in this process's environment: Ray's own log lines say InvalidAuthToken when that is the cause)")
        raise ValueError(f"cannot join a Ray cluster at {address!r}: {error}{hint}") from None
    return True


@contextlib.contextmanager
def _only_writer(out: Path) -> Iterator[None]:
    """Hold a lock on ``out`` while the block runs — an advisory lock on a file in the temporary folder named after
    ``out``'s real path, which the system releases when the process ends, however it ends, and which leaves nothing
    in ``out`` — and raise ``ValueError`` at once if another reproduction holds it: two into one folder would each
    rewrite the report with only their own runs. Where ``fcntl`` is missing (Windows) nothing is held."""
    try:
        import fcntl
    except ImportError:
        yield
        return
    import hashlib

    name = hashlib.sha256(os.path.realpath(out).encode()).hexdigest()[:16]
    path = Path(tempfile.gettempdir()) / f"attnmarl-reproduce-{name}.lock"
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            raise ValueError(f"another reproduction ({holder}) is writing to {out}; each rewrites the report with its "
                             "own runs, so wait for it to finish, or give another --out") from None
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}, started {datetime.datetime.now().isoformat(timespec='seconds')}")
        handle.flush()
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _drop_if_new_and_empty(out: Path, created: bool) -> None:
    """Remove ``out`` if this command created it and nothing was written to it (a cluster it could not
    join leaves no empty folder behind)."""
    if created and out.is_dir() and not any(out.iterdir()):
        out.rmdir()


def _gcs_address(ray: Any) -> str | None:
    """``HOST:PORT`` of the cluster's head (its GCS) that this process joined, or None where Ray does not say
    (Ray Client, whose lost connection raises in ``ray.wait`` instead)."""
    try:
        address = ray.get_runtime_context().gcs_address
    except Exception:  # noqa: BLE001 - any Ray that cannot tell: no check
        return None
    if not isinstance(address, str) or ":" not in address:
        return None
    host, _, port = address.rpartition(":")
    return f"[{host}]:{port}" if ":" in host and not host.startswith("[") else address  # IPv6 in brackets


def _lost(error: Exception, address: str | None, out: Path, pending: Any) -> ClusterLostError:
    """The error that ends a reproduction whose cluster stopped answering (``error``, raised by Ray)."""
    where = f"the Ray cluster at {address!r}" if address else "the local Ray"
    names = [_key(e) for e in pending]
    listed = ", ".join(names[:5]) + (" …" if len(names) > 5 else "")
    return ClusterLostError(f"{where} stopped answering ({type(error).__name__}: {str(error).strip()[:200]}) while "
                            f"{len(names)} run(s) were pending ({listed}); the finished runs are kept in {out}, and "
                            "the same command resumes the others")


def _message(error: Exception) -> str:
    """What went wrong in a task: the exception the run raised, or why its worker was lost."""
    cause = getattr(error, "cause", None) or error
    return f"{type(cause).__name__}: {str(cause).strip()}"


def reproduce(runs: list[dict[str, Any]], out: str | Path = "reproduction", address: str | None = None,
              cpus: int | None = None, retries: int = 2, progress: bool = True, device: str = "cpu") -> dict[str, Any]:
    """Re-run ``runs`` (from :func:`select_runs`) as Ray tasks, keep their files in ``out`` and write the report;
    returns it (``report.json``'s content). Runs already reproduced in ``out`` are kept, not run again. ``device``
    cuda trains every run on a GPU, each task asking Ray for one (``ValueError`` if the Ray has none)."""
    check_int("retries", retries, minimum=0)
    options = task_options(device, retries)
    if cpus is not None:
        check_int("cpus", cpus, maximum=MAX_THREADS)
    ray = _ray()
    _check_reachable(address)
    created = not Path(out).exists()
    out = check_writable_folder(out, "out")
    try:
        with _only_writer(out):
            for chapter in sorted({e["chapter"] for e in runs}):  # before any run: a run's files go there
                if (out / chapter).exists() and not (out / chapter).is_dir():
                    raise ValueError(f"{out / chapter} is a file, where the reproduced runs of {chapter} go (a "
                                     "folder); move it, or give another --out")
            return _reproduce(ray, runs, out, created, address, cpus, retries, progress, options, device)
    except ValueError:
        _drop_if_new_and_empty(out, created)
        raise


def _reproduce(ray: Any, runs: list[dict[str, Any]], out: Path, created: bool, address: str | None,
               cpus: int | None, retries: int, progress: bool, options: dict[str, Any],
               device: str) -> dict[str, Any]:
    """:func:`reproduce` once ``out`` is checked and locked; each run a Ray task with ``options``
    (:func:`task_options`) that trains on ``device``."""
    results = {_key(e): summary for e in runs if (summary := _kept(out, e)) is not None}
    errors = {_key(e): reason for e in runs if _key(e) not in results and (reason := unrunnable(e))}

    def report() -> dict[str, Any]:
        rows = [_row(e, results.get(_key(e)), errors.get(_key(e))) for e in runs]
        return _report(out, rows, retries)

    todo = sorted((e for e in runs if _key(e) not in results and _key(e) not in errors),
                  key=lambda e: -e["cpu_seconds"])  # longest first
    started = False
    try:
        started = _connect(ray, address, cpus) if todo else False
        if todo and options["num_gpus"]:
            _check_gpus(ray)
    except ValueError:
        if started:
            ray.shutdown()
        raise
    bar = tqdm(total=len(runs), initial=len(results) + len(errors), unit="run", desc="reproduce",
               disable=not progress)
    try:
        if results:
            bar.write(f"{len(results)} run(s) already reproduced in {out} are kept")
        for key, reason in errors.items():
            bar.write(f"{key}: {reason}")
        task = ray.remote(**options)(rerun)
        pending = {task.remote(entry["command"], device): entry for entry in todo}
        report()
        gcs, waited = (_gcs_address(ray) if pending else None), 0  # asking an idle Ray would start one
        while pending:
            try:
                finished, _ = ray.wait(list(pending), num_returns=1, timeout=1.0)
            except Exception as error:  # the cluster, not a task: its head died, or the connection dropped
                raise _lost(error, address, out, pending.values()) from None
            if not finished:
                bar.refresh()  # the clock moves while the runs do
                waited += 1
                if gcs and waited % 5 == 0:  # a stopped head makes Ray end this process after a minute's silence
                    try:
                        _check_reachable(gcs, timeout=5.0)
                    except ValueError:
                        raise _lost(ConnectionError(f"its head at {gcs} no longer answers"), address, out,
                                    pending.values()) from None
                continue
            entry = pending.pop(finished[0])
            key = _key(entry)
            try:
                result = ray.get(finished[0])
            except ray.exceptions.RayError as error:
                errors[key] = f"failed after {retries} retr{'y' if retries == 1 else 'ies'}: {_message(error)}"
            except Exception as error:  # Ray Client's connection dropped, or Ray was shut down meanwhile
                raise _lost(error, address, out, [entry, *pending.values()]) from None
            else:
                made = f"{result['summary']['name']}-seed{result['summary']['seed']}"
                if made != f"{entry['name']}-seed{entry['seed']}":
                    errors[key] = f"its recorded command made {made}"
                else:
                    try:
                        _keep(out, entry, result["files"])
                    except OSError as error:  # kept elsewhere: the error says where
                        errors[key] = f"reproduced, but not written to {out}: {error}"
                    else:
                        results[key] = result["summary"]
            row = _row(entry, results.get(key), errors.get(key))
            bar.write(f"{key}: {errors[key]}" if key in errors else
                      f"{key}: shipped {_score(row['shipped'])}, reproduced {_score(row['reproduced'])}, "
                      f"z = {row['z']:+.2f}: {row['verdict']} ({row['reproduced']['cpu_seconds']:.0f} CPU s)")
            counts = report()["counts"]
            bar.set_postfix({verdict: n for verdict, n in counts.items() if n})
            bar.update()
        return report()
    finally:
        bar.close()
        if started:
            ray.shutdown()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m attnmarl.reproduce", description=__doc__.splitlines()[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--chapter", nargs="+", choices=CHAPTERS, metavar="CHAPTER",
                       help=f"chapters whose shipped runs to re-run: {', '.join(CHAPTERS)} (default: all)")
    where.add_argument("--index", metavar="DIR", help="re-run the runs listed in DIR/index.json instead")
    parser.add_argument("--configs", nargs="+", metavar="NAME", help="only these configs (default: all)")
    parser.add_argument("--seeds", nargs="+", type=cli_seed(), metavar="S", help="only these seeds (default: all)")
    parser.add_argument("--address", help="an existing Ray cluster: auto, HOST:PORT or ray://HOST:10001 "
                        "(default: start a Ray on this machine)")
    parser.add_argument("--cpus", type=cli_threads(), help="cores of the local Ray (default: all of this machine's)")
    parser.add_argument("--retries", type=cli_int(0), default=2, help="retries of a failed run (default: 2)")
    parser.add_argument("--device", choices=DEVICES, default="cpu",
                        help="where each run trains: cpu (default) or cuda, a GPU per task")
    parser.add_argument("--out", default="reproduction", help="output folder (default: reproduction)")
    args = parser.parse_args(argv)
    if args.cpus is not None and args.address is not None:
        parser.error("--cpus sizes the local Ray; a cluster given by --address has its own cores")
    if args.device == "cuda" and args.address is None and not torch.cuda.is_available():
        parser.error("--device cuda: torch sees no GPU on this machine for the local Ray; use --device cpu, or "
                     "--address for a cluster with GPUs")
    created = not Path(args.out).exists()
    try:
        runs = select_runs(args.chapter, args.configs, args.seeds, args.index)
        _check_reachable(args.address)
        check_writable_folder(args.out, "--out")
        _ray()
    except ValueError as error:
        parser.error(str(error))
    except ModuleNotFoundError as error:
        print(error, file=sys.stderr)
        return 2
    hours = sum(e["cpu_seconds"] for e in runs) / 3600
    print(f"{len(runs)} run(s), {hours:.1f} CPU-hours as recorded; results in {args.out}/")
    try:
        report = reproduce(runs, args.out, args.address, args.cpus, args.retries, device=args.device)
    except ValueError as error:
        _drop_if_new_and_empty(Path(args.out), created)
        parser.error(str(error))
    except OSError as error:  # a cluster lost mid-run, a full disk (the files kept elsewhere, the error says where)
        print(f"{parser.prog}: error: {error}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print(f"\ninterrupted: finished runs are kept in {args.out}/; the same command resumes", file=sys.stderr)
        return 130
    counts = report["counts"]
    print(", ".join(f"{n} {verdict}" for verdict, n in counts.items() if n) + f"; report: {args.out}/report.md")
    return 0 if sum(counts[v] for v in PASSING) == len(runs) else 1


if __name__ == "__main__":
    restore_sigint()
    sys.exit(main())
