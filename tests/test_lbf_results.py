"""Chapter 12's readers of the Level-Based Foraging runs (attnmarl.notebook.explorers.lbf), on a fake asset folder:
configs named for every point, the shipped random → forager range, runs in seed order, and shares of the range."""
import json

import pytest

import attnmarl.checkpoints
from attnmarl.envs.lbf_baselines import BASELINES_PATH
from attnmarl.notebook.explorers.lbf import lbf_baselines, lbf_name, lbf_runs, lbf_shares
from attnmarl.train import CONFIGS, LBF_DESIGNS, LBF_MS


@pytest.fixture
def assets(tmp_path, monkeypatch):
    """An empty asset folder in place of the package's: ``write(runs)`` puts an ``lbf/index.json`` in it."""
    monkeypatch.setattr(attnmarl.checkpoints, "ASSETS", tmp_path)
    (tmp_path / "lbf").mkdir()

    def write(runs):
        (tmp_path / "lbf" / "index.json").write_text(json.dumps(runs))

    return write


def fake_run(name: str, seed: int, final_return: float) -> dict:
    return {"name": name, "seed": seed, "scenario": "lbforaging", "final_return": final_return, "final_sem": 0.02,
            "final_episodes": 200, "curve": f"{name}-seed{seed}.csv", "checkpoint": ""}


def test_every_point_has_its_config():
    names = {lbf_name(m, design) for m in LBF_MS for design in LBF_DESIGNS}
    assert names == {name for name in CONFIGS if name.startswith("lbf")}
    assert lbf_name(6, "mean") == "lbf6p-mean"


@pytest.mark.parametrize("m, design", [(4, "entity"), (12, "mean"), (3, "oracle"), (3, "nobit"), (6, "attention")])
def test_a_point_without_a_config_is_refused(m, design):
    with pytest.raises(ValueError, match="no LBF config"):
        lbf_name(m, design)
    with pytest.raises(ValueError, match="no LBF config"):
        lbf_shares(m, design)


@pytest.mark.parametrize("m", ["3", 3.0, True, 0, -3])
def test_a_team_size_that_is_no_positive_integer_is_refused(m):
    with pytest.raises(ValueError, match="^m must be"):
        lbf_name(m, "entity")


def test_the_range_is_the_shipped_random_and_forager_team_returns():
    ranges = lbf_baselines()
    rows = json.loads(BASELINES_PATH.read_text())["rows"]
    assert set(ranges) == set(LBF_MS)
    for row in rows:
        assert ranges[row["m"]] == (row["random"]["team_return"][0], row["forager"]["team_return"][0])
    assert all(0 < random < forager < 1 for random, forager in ranges.values())


def test_runs_come_in_seed_order_and_their_shares_are_of_the_range(assets):
    random, forager = lbf_baselines()[3]
    middle, above = (random + forager) / 2, forager + (forager - random)
    assets([fake_run("lbf3p-entity", 2, above), fake_run("lbf3p-mean", 0, 0.5), fake_run("lbf3p-entity", 0, random),
            fake_run("lbf6p-entity", 1, 0.5), fake_run("lbf3p-entity", 1, middle)])
    assert [(r["name"], r["seed"]) for r in lbf_runs(3, "entity")] == [("lbf3p-entity", s) for s in (0, 1, 2)]
    assert lbf_shares(3, "entity") == pytest.approx([0.0, 50.0, 200.0])  # beating the forager is possible
    assert [r["seed"] for r in lbf_runs(6, "entity")] == [1]


def test_a_point_without_shipped_runs_names_the_command_that_trains_them(assets):
    with pytest.raises(ValueError, match=r"no shipped runs of lbf9p-flat .* python -m attnmarl.train --config "
                                         r"lbf9p-flat --seeds 0-2"):
        lbf_runs(9, "flat")  # no index.json yet
    assets([fake_run("lbf3p-entity", 0, 0.5)])
    with pytest.raises(ValueError, match="no shipped runs of lbf3p-mean"):
        lbf_shares(3, "mean")


def test_a_damaged_index_is_not_read_as_a_missing_one(assets, tmp_path):
    (tmp_path / "lbf" / "index.json").write_text("[{")
    with pytest.raises(json.JSONDecodeError):
        lbf_runs(3, "entity")
