"""``python -m attnmarl.train --seeds``: a list of seeds writes the files single runs write, and a second call
trains only the seeds that have no complete files (:mod:`attnmarl.seeds`)."""
from __future__ import annotations

import csv
import json

import pytest
import torch

from attnmarl.checkpoints import load_checkpoint
from attnmarl.seeds import MAX_SEEDS, finished_seeds, parse_seeds, single_seed_arguments
from attnmarl.train import main as train_main

NAME = "pi-spread3-flat"
TINY = ["--steps", "3200", "--evals", "1", "--eval-episodes", "1", "--final-episodes", "2"]
TIMES = {"wall_seconds", "cpu_seconds"}


def _curve(path):
    with open(path, newline="") as handle:
        return [{k: v for k, v in row.items() if k not in TIMES} for row in csv.DictReader(handle)]


def _summary(folder, seed):
    return json.loads((folder / f"{NAME}-seed{seed}.json").read_text())


@pytest.mark.parametrize("text, seeds", [("3-9", list(range(3, 10))), ("0,2,5", [0, 2, 5]), ("7, 0-2", [0, 1, 2, 7]),
                                         ("4", [4])])
def test_a_seed_list_names_its_seeds_in_order(text, seeds):
    assert parse_seeds(text) == seeds


@pytest.mark.parametrize("text, message", [("", "must name seeds"), ("3-", "neither a seed nor a range"),
                                           ("a", "neither a seed nor a range"), ("9-3", "runs backwards"),
                                           ("0-3,2", "more than once"), ("-1", "neither a seed"),
                                           (f"0-{MAX_SEEDS}", f"more than {MAX_SEEDS}"), ("0,,1", "neither a seed")])
def test_a_bad_seed_list_is_refused_by_name(text, message):
    with pytest.raises(ValueError, match=message):
        parse_seeds(text)


def test_each_seed_runs_with_the_command_line_that_trains_it_alone():
    given = ["--config", NAME, "--seeds", "3-9", "--jobs", "2", "--out", "runs", "--threads=4", "--steps", "3200"]
    assert single_seed_arguments(given, 5) == ["--config", NAME, "--seed", "5", "--out", "runs", "--steps", "3200"]
    assert single_seed_arguments(["--seeds=0,1", "--config", NAME], 1) == ["--seed", "1", "--config", NAME]


def test_a_seed_list_writes_the_files_single_runs_write_and_resumes_without_repeating_a_seed(tmp_path, capsys):
    """Seeds 0 and 1 trained as a list equal seed 1 trained alone (weights, score, curve, command); a second call
    after seed 1's files are lost trains seed 1 again and leaves seed 0 untouched."""
    listed, alone = tmp_path / "listed", tmp_path / "alone"
    train_main(["--config", NAME, "--seeds", "0-1", "--jobs", "2", "--out", str(listed), *TINY])
    assert sorted(p.name for p in listed.iterdir()) == [f"{NAME}-seed{s}.{x}" for s in (0, 1) for x in ("csv", "json",
                                                                                                        "pt")]
    train_main(["--config", NAME, "--seed", "1", "--out", str(alone), *TINY])
    a, b = _summary(listed, 1), _summary(alone, 1)
    assert a["final_return"] == b["final_return"] and a["final_per_agent"] == b["final_per_agent"]
    assert a["command"] == f"python -m attnmarl.train --config {NAME} --seed 1 --out {listed} {' '.join(TINY)}"
    assert a["torch_threads"] == 1 and a["config"] == b["config"]
    assert _curve(listed / f"{NAME}-seed1.csv") == _curve(alone / f"{NAME}-seed1.csv")
    state_a, state_b = load_checkpoint(listed / f"{NAME}-seed1.pt")[1], load_checkpoint(alone / f"{NAME}-seed1.pt")[1]
    assert state_a.keys() == state_b.keys() and all(torch.equal(state_a[k], state_b[k]) for k in state_a)
    assert _summary(listed, 0)["final_return"] != a["final_return"]  # seed 0 is another run

    seed0_run = _summary(listed, 0)["run_id"]
    (listed / f"{NAME}-seed1.json").unlink()  # seed 1 lost its summary: unfinished
    assert finished_seeds(listed, NAME, [0, 1]) == [0]
    capsys.readouterr()
    train_main(["--config", NAME, "--seeds", "0-1", "--out", str(listed), *TINY])
    printed = capsys.readouterr().out
    assert "seeds 0 already finished" in printed and "training seeds 1," in printed
    assert _summary(listed, 0)["run_id"] == seed0_run
    assert _summary(listed, 1)["final_return"] == b["final_return"]
    assert finished_seeds(listed, NAME, [0, 1]) == [0, 1]


def test_a_summary_that_does_not_describe_its_files_is_not_a_finished_seed(tmp_path):
    """A curve edited after the run (or a summary copied from another run) is not finished work."""
    train_main(["--config", NAME, "--seed", "2", "--out", str(tmp_path), *TINY])
    assert finished_seeds(tmp_path, NAME, [2, 3]) == [2]
    curve = tmp_path / f"{NAME}-seed2.csv"
    curve.write_text(curve.read_text() + "\n")
    assert finished_seeds(tmp_path, NAME, [2]) == []


@pytest.mark.parametrize("arguments, message", [
    (["--seeds", "0-1", "--seed", "3"], "not allowed with argument"),
    (["--seed", "1", "--jobs", "2"], "give --seeds too"),
    (["--seeds", "0-1", "--replace"], "never replaces them"),
    (["--seeds", "2-1"], "runs backwards"),
])
def test_the_command_line_refuses_a_bad_seed_list_before_anything_runs(arguments, message, tmp_path, capsys):
    with pytest.raises(SystemExit):
        train_main(["--config", NAME, "--out", str(tmp_path / "runs"), *arguments])
    assert message in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()


def test_a_run_that_prints_more_than_a_pipe_holds_does_not_block_the_list(tmp_path):
    """A real run's progress bar writes hundreds of kB; read only at the end through a pipe, it would fill the
    pipe and block the run for ever. A stand-in for python that prints 1 MB and exits must let the list end."""
    import subprocess
    import sys
    import textwrap

    fake = tmp_path / "fake-python"
    fake.write_text("#!/bin/sh\nhead -c 1000000 /dev/zero | tr '\\0' x >&2\necho >&2\n"  # args: -m attnmarl.train
                    "echo \"$4 seed $6: mpe2 return over 2 episodes -1.00 ± 0.10\"\n")  # --config NAME --seed S
    fake.chmod(0o755)
    script = textwrap.dedent(f"""
        from attnmarl.seeds import run_seeds
        print(run_seeds("{NAME}", [0, 1, 2], {str(tmp_path / 'out')!r}, ["--config", "{NAME}", "--seeds", "0-2"],
                        jobs=2, python={str(fake)!r}))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "{0: 'trained', 1: 'trained', 2: 'trained'}" in done.stdout
    assert f"{NAME} seed 2: mpe2 return over 2 episodes -1.00" in done.stdout


def test_a_users_file_named_like_a_run_is_not_taken_for_an_incomplete_run(tmp_path, capsys):
    """Only a run's own files (.pt, .csv, .json) left without a summary that describes them make a seed restart
    with --replace: a user's NAME-seed1.notes.txt beside them is not one of them, and is not named as replaced."""
    from attnmarl.seeds import run_seeds

    fake = tmp_path / "fake-python"
    fake.write_text(f"#!/bin/sh\necho \"$*\" > {tmp_path}/args-$6\n")  # -m attnmarl.train --config NAME --seed S
    fake.chmod(0o755)
    out = tmp_path / "out"
    out.mkdir()
    (out / f"{NAME}-seed1.notes.txt").write_text("my notes")
    (out / f"{NAME}-seed2.pt").write_bytes(b"half a checkpoint")
    run_seeds(NAME, [1, 2], out, ["--config", NAME, "--seeds", "1-2"], jobs=1, python=str(fake))
    printed = capsys.readouterr().out
    assert "notes.txt" not in printed and f"seed 2: replacing incomplete files {NAME}-seed2.pt\n" in printed
    assert (tmp_path / "args-1").read_text() == f"-m attnmarl.train --config {NAME} --seed 1\n"  # no --replace
    assert (tmp_path / "args-2").read_text() == f"-m attnmarl.train --config {NAME} --seed 2 --replace\n"
    assert (out / f"{NAME}-seed1.notes.txt").read_text() == "my notes"
