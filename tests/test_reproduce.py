"""python -m attnmarl.reproduce: tiny runs re-run as Ray tasks on one local Ray (2 CPUs) shared by the module.

The index the tests reproduce is made the way the shipped ones are (``python -m attnmarl.train`` runs, then
``--index``), with budgets of one or a few PPO updates and 4 final evaluation episodes, so that a run takes
about a second of CPU; one "long" run (30 updates) gives the tests time to kill something while it runs."""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import ray

from attnmarl import reproduce
from attnmarl.checkpoints import shipped_runs
from attnmarl.train import main as train_main
from attnmarl.train import write_index

TINY = ["--evals", "1", "--eval-episodes", "2", "--final-episodes", "4"]
SHORT = {"spread3-attention": 3200, "q-spread3-concat": 10_048}  # MADDPG: the first budget that updates
LONG = ("spread3-concat", 96_000)


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray on 2 CPUs for the whole module (starting one takes seconds); its GCS address."""
    ray.init(address="local", num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield ray.get_runtime_context().gcs_address
    ray.shutdown()


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    """A folder of three trained runs and their index.json: two short runs and a long one."""
    folder = tmp_path_factory.mktemp("runs") / "tiny"
    for name, steps in [*SHORT.items(), LONG]:
        train_main(["--config", name, "--seed", "0", "--steps", str(steps), "--out", str(folder), *TINY])
    train_main(["--index", str(folder)])
    return folder


def _index_of(folder: Path, names, label: str) -> Path:
    """A copy of the tiny index with only the runs called ``names``, in ``label/tiny`` (the runs' own files
    are not needed: the index holds their commands and scores)."""
    runs = [e for e in json.loads((folder / "index.json").read_text()) if e["name"] in names]
    copy = folder.parent / label / "tiny"
    copy.mkdir(parents=True, exist_ok=True)
    (copy / "index.json").write_text(json.dumps(runs))
    return copy


def _report(out: Path) -> dict:
    return {row["name"]: row for row in json.loads((out / "report.json").read_text())["runs"]}


def test_a_tiny_reproduction_matches_the_recorded_runs(local_ray, indexed, tmp_path, capsys):
    out = tmp_path / "out"
    status = reproduce.main(["--index", str(_index_of(indexed, SHORT, "short")), "--out", str(out)])
    assert status == 0
    rows = _report(out)
    assert sorted(rows) == sorted(SHORT)
    for name, row in rows.items():
        recorded = json.loads((indexed / f"{name}-seed0.json").read_text())
        kept = json.loads((out / "tiny" / f"{name}-seed0.json").read_text())
        # the same command on the same machine trains the same agent: the same score, z = 0
        assert row["reproduced"]["final_return"] == recorded["final_return"] == kept["final_return"]
        assert row["shipped"]["final_sem"] == recorded["final_sem"] and row["z"] == 0.0
        assert row["verdict"] == "identical" and row["error"] is None
        assert row["seed_check"] is None  # one seed of each config is listed: no interval for a new seed
        assert kept["env_steps"] == recorded["env_steps"] and kept["torch_threads"] == 1
        assert (out / "tiny" / f"{name}-seed0.pt").exists() and (out / "tiny" / f"{name}-seed0.csv").exists()
    table = (out / "report.md").read_text()
    assert "| tiny/spread3-attention-seed0 |" in table and "| identical | — |" in table and "|z| <= 3" in table
    assert "2 identical" in capsys.readouterr().out
    # the report shipped beside a folder of runs adds the re-runs' CPU time to that folder's README
    folder = tmp_path / "assets" / "tiny"
    shutil.copytree(indexed, folder)
    write_index(folder)
    assert "Re-run with newer code" not in (folder / "README.md").read_text()
    (folder.parent / "reproduction").mkdir()
    shutil.copy(out / "report.json", folder.parent / "reproduction")
    write_index(folder)
    readme = (folder / "README.md").read_text()
    assert f"re-ran the runs below on {json.loads((out / 'report.json').read_text())['date']}" in readme
    for name, row in rows.items():
        cpu = row["shipped"]["cpu_seconds"] / 60, row["reproduced"]["cpu_seconds"] / 60
        assert f"| tiny/{name}-seed0 | " in readme
        assert f"| +0.00 | {cpu[0]:.1f} | {cpu[1]:.1f} | identical |" in readme


def test_a_failing_run_is_reported_as_failed_after_its_retries(local_ray, indexed, tmp_path):
    folder = _index_of(indexed, SHORT, "broken")
    runs = json.loads((folder / "index.json").read_text())
    broken = next(e for e in runs if e["name"] == "spread3-attention")
    broken["command"] = broken["command"].replace("--steps 3200", "--steps 1")  # less than one update
    (folder / "index.json").write_text(json.dumps(runs))
    out = tmp_path / "out"
    status = reproduce.main(["--index", str(folder), "--out", str(out), "--retries", "1"])
    assert status == 1
    rows = _report(out)
    assert rows["spread3-attention"]["verdict"] == "failed" and rows["spread3-attention"]["reproduced"] is None
    assert "less than one update" in rows["spread3-attention"]["error"]
    assert rows["q-spread3-concat"]["verdict"] == "identical"  # one failure does not stop the others
    assert not (out / "tiny" / "spread3-attention-seed0.json").exists()
    markdown = (out / "report.md").read_text()
    assert "| failed |" in markdown and "less than one update" in markdown and "2 time(s)" in markdown


def _descendants_named(title: str) -> set[int]:
    """Processes of this test's own Ray (descendants of this process) whose title starts with ``title``."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if not (entry / "cmdline").read_bytes().startswith(title.encode()):
                continue
            pid = int(entry.name)
            while pid > 1:  # walk up to this process, or to init
                pid = int((Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[1])
                if pid == os.getpid():
                    found.add(int(entry.name))
                    break
        except (OSError, ValueError):  # the process ended while we looked
            continue
    return found


def test_a_run_whose_worker_dies_is_retried(local_ray, indexed, tmp_path):
    before = _descendants_named("ray::rerun")
    killed = []

    def kill_the_worker():
        deadline = time.monotonic() + 60
        while not killed and time.monotonic() < deadline:
            for pid in _descendants_named("ray::rerun") - before:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_worker)
    killer.start()
    out, folder = tmp_path / "out", _index_of(indexed, [LONG[0]], "long")
    status = reproduce.main(["--index", str(folder), "--out", str(out), "--retries", "1"])
    killer.join()
    assert len(killed) == 1  # its worker was killed mid-run ...
    assert status == 0 and _report(out)[LONG[0]]["verdict"] == "identical"  # ... and Ray ran it again


def test_a_killed_reproduction_resumes_without_rerunning_finished_runs(local_ray, indexed, tmp_path):
    folder, out = _index_of(indexed, [*SHORT, LONG[0]], "all"), tmp_path / "out"
    command = [sys.executable, "-m", "attnmarl.reproduce", "--index", str(folder), "--out", str(out),
               "--address", local_ray]
    first = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    short = [out / "tiny" / f"{name}-seed0.json" for name in SHORT]
    deadline = time.monotonic() + 240  # generous: on a loaded 2-core machine the short runs took over 90 s
    while not all(path.exists() for path in short) and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.05)
    first.send_signal(signal.SIGKILL)  # mid-way: the short runs are done, the long one is running
    ended = first.wait()
    long_summary = out / "tiny" / f"{LONG[0]}-seed0.json"
    assert all(path.exists() for path in short), f"the short runs did not finish (exit code {ended})"
    assert not long_summary.exists()
    finished = {path: (path.stat().st_mtime_ns, json.loads(path.read_text())["run_id"]) for path in short}
    assert reproduce.main(["--index", str(folder), "--out", str(out)]) == 0
    # the finished runs were kept as they were, not run again; the long one was run to the end
    assert {path: (path.stat().st_mtime_ns, json.loads(path.read_text())["run_id"]) for path in short} == finished
    assert long_summary.exists()
    assert {name: row["verdict"] for name, row in _report(out).items()} == dict.fromkeys([*SHORT, LONG[0]],
                                                                                        "identical")


def test_selection_reads_the_shipped_indexes_and_refuses_what_is_not_there():
    runs = reproduce.select_runs(["value"], ["spread3-attention"], [0])
    shipped = next(e for e in shipped_runs("value") if e["name"] == "spread3-attention" and e["seed"] == 0)
    assert len(runs) == 1 and runs[0]["chapter"] == "value" and runs[0]["command"] == shipped["command"]
    assert len(reproduce.select_runs()) == sum(len(shipped_runs(c)) for c in reproduce.CHAPTERS)
    with pytest.raises(ValueError, match="no-such-config"):
        reproduce.select_runs(["value"], ["no-such-config"])
    with pytest.raises(ValueError, match=r"seed\(s\) \[99\]"):
        reproduce.select_runs(["qnet"], seeds=[99])
    with pytest.raises(ValueError, match="unknown chapter"):
        reproduce.select_runs(["seq2seq"])
    with pytest.raises(SystemExit):
        reproduce.main(["--chapter", "value", "--cpus", "2", "--address", "auto"])


def test_the_verdict_is_the_difference_in_combined_standard_errors():
    shipped = {"final_return": -20.0, "final_sem": 0.3}
    z, said = reproduce.verdict(shipped, {"final_return": -21.0, "final_sem": 0.4})  # combined se 0.5
    assert z == pytest.approx(-2.0) and said == "within noise"
    z, said = reproduce.verdict(shipped, {"final_return": -18.0, "final_sem": 0.4})
    assert z == pytest.approx(4.0) and said == "differs"
    assert reproduce.verdict(shipped, {"final_return": -20.0, "final_sem": 0.3}) == (0.0, "identical")
    assert reproduce.verdict(shipped, {"final_return": -20.0, "final_sem": 0.31})[1] == "within noise"
    assert reproduce.verdict(shipped, None) == (None, "pending")


def test_the_seed_check_asks_whether_a_new_seed_would_score_there():
    """The 95% prediction interval of the shipped seeds: mean ± t(0.975, n - 1) s sqrt(1 + 1/n), here with
    n = 3, mean -33, s = 1 and t = 4.303; a re-run inside it scores like a new seed, one outside does not."""
    seeds = [-34.0, -33.0, -32.0]
    half = 4.302653 * 1.0 * (1 + 1 / 3) ** 0.5
    inside = reproduce.seed_check(seeds, {"final_return": -33.0 + 0.99 * half})
    outside = reproduce.seed_check(seeds, {"final_return": -33.0 - 1.01 * half})
    assert inside["interval"] == pytest.approx([-33.0 - half, -33.0 + half], abs=1e-3) and inside["seeds"] == 3
    assert inside["inside"] and not outside["inside"]
    assert reproduce.seed_check(seeds[:2], {"final_return": -33.0}) is None  # two seeds give no interval
    assert reproduce.seed_check(seeds, None) is None
    runs = reproduce.select_runs(["policy"], ["pi-spread6-entity"], [0])
    assert len(runs[0]["seed_scores"]) == 10  # every seed of the config, whichever were selected


def test_without_ray_the_command_says_how_to_install_it(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray now fails as if it were not installed
    assert reproduce.main(["--chapter", "value", "--out", str(tmp_path)]) == 2
    assert 'pip install "attnmarl[cluster]"' in capsys.readouterr().err


@pytest.mark.parametrize("page", ["book/reproducing.md", "README.md"])
def test_the_quoted_cpu_hours_are_the_sums_of_the_recorded_cpu_times(page):
    """The cost table that the book and the README print: runs, CPU-hours and the longest run of each chapter,
    computed from the shipped index.json files."""
    text = (Path(__file__).resolve().parents[1] / page).read_text()
    rows = dict(re.findall(r"^\| [^|]+ \| `(\w+)` \| (\d+ \| [\d.]+ \| [\d.]+) \|$", text, flags=re.M))
    everything = [e for chapter in reproduce.CHAPTERS for e in shipped_runs(chapter)]
    for chapter in [*reproduce.CHAPTERS, "all"]:
        runs = everything if chapter == "all" else shipped_runs(chapter)
        hours, longest = sum(e["cpu_seconds"] for e in runs) / 3600, max(e["cpu_seconds"] for e in runs) / 60
        pattern = r"^\| all \| +\| (\d+ \| [\d.]+ \| [\d.]+) \|$"
        quoted = rows.get(chapter) if chapter != "all" else re.search(pattern, text, flags=re.M).group(1)
        assert quoted == f"{len(runs)} | {hours:.2f} | {longest:.1f}", f"{page}, {chapter}"


def test_the_book_shows_the_shipped_reproduction_reports_as_written():
    """The re-runs that the reproducing appendix shows are the tables of the reports the command wrote (shipped in
    assets/reproduction: report.* for chapters 7-10, report-maac.* for MAAC's runs, report-ablation.* for the
    mean-pooling control, report-between.* for chapter 11's runs, report-tenseed.* for the decisive ten-seed run,
    report-decoys.* and report-lbf.* for chapter 12's and report-mat.* for chapter 13's, made later), together one
    run of every asset folder, and every one of them is identical or within noise, and scores where a new seed of
    its config would."""
    root = Path(__file__).resolve().parents[1]
    folder = root / "src" / "attnmarl" / "assets" / "reproduction"
    page = (root / "book" / "reproducing.md").read_text()
    runs = []
    for name in ("report", "report-maac", "report-ablation", "report-between", "report-tenseed", "report-decoys",
                 "report-lbf", "report-mat"):
        blocks = (folder / f"{name}.md").read_text().split("\n\n")
        table = next(block for block in blocks if block.startswith("| run |"))
        assert table.strip() in page, name
        runs += json.loads((folder / f"{name}.json").read_text())["runs"]
    assert {r["chapter"] for r in runs} == set(reproduce.CHAPTERS)
    assert all(r["verdict"] in reproduce.PASSING and r["seed_check"]["inside"] for r in runs)


def test_a_cluster_that_cannot_be_joined_leaves_no_empty_out_folder(tmp_path, monkeypatch, capsys):
    """Joining Ray fails after the checks (say a port answers that is not Ray's): the command fails with the
    reason and leaves no empty --out behind; an --out that existed before is kept."""
    folder = tmp_path / "runs" / "tiny"
    folder.mkdir(parents=True)
    (folder / "index.json").write_text(json.dumps(shipped_runs("value")[:1]))

    def cannot_join(ray, address, cpus):
        raise ValueError("cannot join a Ray cluster at '127.0.0.1:1234': not a Ray cluster")

    monkeypatch.setattr(reproduce, "_connect", cannot_join)
    for out, existed in ((tmp_path / "new" / "out", False), (tmp_path / "old", True)):
        if existed:
            out.mkdir()
        with pytest.raises(SystemExit):
            reproduce.main(["--index", str(folder), "--out", str(out)])
        assert "not a Ray cluster" in capsys.readouterr().err
        assert out.exists() == existed
