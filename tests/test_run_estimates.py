"""Estimates that cover a run (issue 44, item 2): one estimate of a whole run's CPU time and peak memory, from every
size its config sets, checked before anything of the run exists (:mod:`attnmarl.algos.estimate`).

The estimate is held to what runs measure: tiny runs' peak resident memory, and the CPU time recorded for every
shipped run, each within a stated range (a tiny run's CPU time against the estimate depends on the machine, so
``bench/bench_estimates.py`` measures it in ``make bench``). Sizes no machine can serve are refused within a second of
CPU, naming the biggest part and the override; every shipped config passes.
"""
import json
import math
import os
import re
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import attnmarl
from attnmarl.algos import estimate as estimates
from attnmarl.algos import maac, maddpg, mappo, mat, qmix
from attnmarl.algos.estimate import RUN_SECONDS, measure, run_memory_budget
from attnmarl.costs import ALLOW_COSTLY
from attnmarl.train import CONFIGS, ESTIMATES, TRAINERS, check_command, check_evals, named_config, run_estimate
from attnmarl.train import main as train_main

pytestmark = pytest.mark.usefixtures("one_thread")

ALGORITHMS = {mappo.MAPPOConfig: mappo, maddpg.MADDPGConfig: maddpg, maac.MAACConfig: maac, qmix.QMIXConfig: qmix,
              mat.MATConfig: mat}

MEMORY_RANGE = (0.6, 1.5)
"""A run's peak resident memory over its estimate (measured 0.99-1.03 for these runs, 0.96-1.23 for runs of 0.5-3
GB of every algorithm)."""


def sized(name, **changes):
    """The named config with ``changes``, and a budget of at least one update of its new size."""
    config = CONFIGS[name]
    batch = changes.get("num_envs", config.num_envs) * changes.get("rollout_steps", config.rollout_steps)
    return replace(config, **{"total_steps": max(config.total_steps, batch), **changes})


@pytest.fixture(scope="module")
def warm():
    """One estimate, so that torch's one-off import of its dispatch machinery (torch._dynamo: seconds without
    compiled bytecode) is not timed as a refusal."""
    mappo.estimate(CONFIGS["pi-spread3-flat"])


@pytest.fixture
def fresh_probes(monkeypatch, warm):
    """Every network measured anew (no probe kept from an earlier config), as in a new process after its imports."""
    monkeypatch.setattr(estimates, "_PROBES", {})


# --- what the estimate counts ------------------------------------------------------------------------------------

def test_measure_counts_a_linear_layers_products_and_what_it_keeps_for_backward():
    torch.manual_seed(0)
    layer = torch.nn.Linear(7, 5)
    x = torch.randn(4, 7)
    trains = measure(lambda b: layer(x[:b]).sum().backward())
    assert trains.flops_per_sample == 2 * 7 * 5  # y = x W^T, then dL/dW = dy^T x (x needs no gradient)
    assert trains.saved == 7 * 4  # x, kept for dL/dW
    with torch.no_grad():
        infers = measure(lambda b: layer(x[:b]))
    assert infers.flops_per_sample == 7 * 5 and infers.saved == 0 and infers.largest == 5 * 4
    assert infers.seconds(10_000) > infers.seconds(10) > 0 and trains.peak_bytes(100) == 100 * (28 + 2 * trains.largest)


def test_the_estimate_leaves_every_random_state_as_it_was(monkeypatch):
    """Measuring builds and runs networks; a run that starts after its estimate draws the same numbers as before."""
    monkeypatch.setattr(estimates, "_PROBES", {})
    torch.manual_seed(5)
    np.random.seed(5)
    torch_state, numpy_state = torch.get_rng_state(), np.random.get_state()[1].copy()
    for name in ("comm-spread3-attention", "q-spread3-attention", "mat-spread3-shuffled"):
        ESTIMATES[type(CONFIGS[name])](CONFIGS[name])
    assert torch.equal(torch.get_rng_state(), torch_state) and np.array_equal(np.random.get_state()[1], numpy_state)


@pytest.mark.parametrize("name, field, own_weights", [("comm-spread3-attention", "message_rounds", False),
                                                      ("spread3-attention", "depth", True),
                                                      ("mat-spread3", "blocks", True)])
def test_rounds_and_blocks_beyond_three_are_extrapolated_exactly(name, field, own_weights):
    """Five rounds (or blocks) estimated from two and three equal five measured: every call's work (the
    accumulation of shared weights' gradients too), and the parameters, which grow with blocks (each its own
    weights) and not with rounds (the same weights again)."""
    module = ALGORITHMS[type(CONFIGS[name])]
    five = replace(CONFIGS[name], **{field: 5})
    extrapolated = estimates.probe(module._probe, five, {field: own_weights})
    measured = module._probe(five)
    for call, work in measured.calls.items():
        for key, value in vars(work).items():
            assert getattr(extrapolated.calls[call], key) == pytest.approx(value, rel=1e-9, abs=1e-6), (call, key)
    assert (extrapolated.parameters, extrapolated.tensors) == (measured.parameters, measured.tensors)
    three = module._probe(replace(CONFIGS[name], **{field: 3}))
    assert (measured.parameters > three.parameters) is own_weights


SIZES = [  # (config, field, doubled value, what must grow): every size a user can set
    ("pi-spread3-flat", "num_envs", 256, "memory"), ("pi-spread3-flat", "rollout_steps", 50, "memory"),
    ("pi-spread3-flat", "total_steps", 3_000_000, "time"), ("pi-spread3-flat", "actor_hidden", 128, "both"),
    ("spread3-attention", "d_x", 64, "both"), ("spread3-attention", "critic_hidden", 128, "both"),
    ("spread3-attention", "depth", 2, "both"), ("spread3-attention", "heads", 4, "both"),
    ("pi-spread3-entity", "entity_d", 64, "both"), ("pi-spread3-entity", "entity_ff", 128, "both"),
    ("comm-spread3-attention", "message_rounds", 2, "both"), ("comm-spread3-attention", "message_d_k", 32, "both"),
    ("pi-spread3-flat", "update_epochs", 8, "time"), ("pi-spread3-flat", "scenario_kwargs", {"N": 6}, "both"),
    ("q-spread3-attention", "buffer_size", 400_000, "memory"), ("q-spread3-attention", "minibatch_size", 1024, "both"),
    ("q-spread3-attention", "num_envs", 128, "memory"), ("q-spread3-attention", "updates_per_iteration", 2, "time"),
    ("maac-treasure4-attention", "d", 128, "both"), ("maac-treasure4-attention", "buffer_size", 400_000, "memory"),
    ("qmix-spread3-qatten", "qatten_d", 64, "both"), ("qmix-spread3-qmix", "qmix_embed", 64, "both"),
    ("qmix-spread3-qatten", "minibatch_size", 512, "both"), ("mat-spread3", "blocks", 2, "both"),
    ("mat-spread3", "d", 64, "both"), ("mat-spread3", "scenario_kwargs", {"N": 6}, "both"),
]


@pytest.mark.parametrize("name, field, value, grows", SIZES)
def test_every_size_a_user_sets_enters_the_estimate(name, field, value, grows):
    """Doubling a size — a width, rounds, blocks, worlds, the rollout, the budget, a buffer, a minibatch, the team —
    makes the estimated run hold more memory (its buffers, activations or weights), take more CPU time (more work
    per env step, or more steps), or both. (Twice the worlds on the same budget is half the updates: more memory,
    not more time.)"""
    config = CONFIGS[name]
    before, after = (ESTIMATES[type(config)](c) for c in (config, sized(name, **{field: value})))
    if grows in ("time", "both"):
        assert after.total_seconds > before.total_seconds, (str(before), str(after))
    if grows in ("memory", "both"):
        assert after.total_bytes > before.total_bytes, (str(before), str(after))


# --- refusals ----------------------------------------------------------------------------------------------------

HUGE = [  # (config, the sizes, what the message names as the biggest part)
    (sized("pi-spread3-flat", num_envs=10**6), r"the activations of an update's minibatch of 12,500,000 observations"),
    (sized("pi-spread3-flat", rollout_steps=10**6), r"the rollout's buffers \(1,000,000 steps of 128 worlds\)"),
    (sized("comm-spread6-attention", message_rounds=10**6), r"the activations of an update's minibatch"),
    (replace(CONFIGS["pi-spread6-entity"], scenario_kwargs={"N": 1000}), r"the rollout's buffers"),
    (sized("spread3-attention", depth=10**5), "the activations of an update's minibatch"),
    (sized("pi-spread3-flat", total_steps=2_000_000_000), r"of CPU, over this package's limit of 24.0 h; the biggest "
                                                          "part is the epochs of updates"),
    (sized("mat-spread3", num_envs=10**6), "the activations of an update's minibatch of 25,000,000 observations"),
    (sized("mat-spread3", blocks=10**5), "the activations of an update's minibatch"),
    (sized("q-spread3-attention", num_envs=10**7, buffer_size=10**7, learning_starts=0), "the worlds"),
    (sized("qmix-spread12-qatten", buffer_size=10**8), r"the replay buffer \(100,000,000 transitions\)"),
    (sized("maac-treasure12-attention", minibatch_size=10**6, buffer_size=10**6),
     "the activations of an update's minibatch of 1,000,000 transitions"),
    (replace(CONFIGS["maac-treasure4-attention"],
             scenario_kwargs={"num_collectors": 400, "num_deposits": 2, "num_treasures": 400}), "the replay buffer"),
]


@pytest.mark.parametrize("config, biggest", HUGE, ids=[f"{type(c).__name__}-{i}" for i, (c, _) in enumerate(HUGE)])
def test_a_run_no_machine_can_serve_is_refused_within_a_second_naming_its_biggest_part(monkeypatch, fresh_probes,
                                                                                     config, biggest):
    """num_envs = 10**6, a rollout of a million steps, a million message rounds, a team of a thousand, ... used to
    pass every check and die in torch's allocator (or run for days): each is refused before the run builds its
    worlds or seeds its random numbers, in under a second of CPU, naming what is too big and the override."""
    monkeypatch.setattr(torch, "manual_seed", lambda *a: pytest.fail("the run started before it was refused"))
    started = time.process_time()
    with pytest.raises(ValueError, match=biggest) as refusal:
        TRAINERS[type(config)](config)
    assert time.process_time() - started < 1.0
    assert str(refusal.value).endswith(f"to run it anyway, set {ALLOW_COSTLY}=1 in the environment")
    assert "estimated before the run starts" in str(refusal.value)


@pytest.mark.parametrize("value", ["0", "false", "No", "off", ""])
def test_a_no_in_the_override_keeps_the_estimate(monkeypatch, warm, value):
    config = sized("pi-spread3-flat", num_envs=10**6)
    monkeypatch.setenv(ALLOW_COSTLY, value)
    with pytest.raises(ValueError, match="would need about"):
        mappo.estimate(config).check()


def test_the_override_lets_a_refused_run_start_and_refuses_a_value_that_is_neither_yes_nor_no(monkeypatch, warm):
    config = sized("pi-spread3-flat", num_envs=10**6)
    monkeypatch.setattr(torch, "manual_seed", lambda *a: pytest.fail("started"))
    monkeypatch.setenv(ALLOW_COSTLY, "yes")
    with pytest.raises(pytest.fail.Exception, match="started"):  # past the estimate: the run starts
        mappo.train(config)
    monkeypatch.setenv(ALLOW_COSTLY, "perhaps")
    with pytest.raises(ValueError, match="ATTNMARL_ALLOW_COSTLY='perhaps' is neither a yes"):
        mappo.estimate(config).check()


def test_the_command_line_refuses_a_costly_run_as_a_usage_error(tmp_path, capsys, warm):
    arguments = ["--config", "pi-spread3-flat", "--steps", "2000000000", "--out", str(tmp_path / "runs")]
    with pytest.raises(SystemExit) as exit_:
        train_main(arguments)
    error = capsys.readouterr().err
    assert exit_.value.code == 2 and "h of CPU, over this package's limit of 24.0 h" in error
    assert f"set {ALLOW_COSTLY}=1" in error and not (tmp_path / "runs").exists()
    with pytest.raises(ValueError, match="the biggest part is the epochs of updates"):
        check_command(arguments[:4])


# --- every shipped config passes, and the estimate holds against runs ----------------------------------------------

def test_every_shipped_config_passes_its_estimate():
    """Every named config, with the command line's evaluations, is estimated within the limits (no training)."""
    budget = run_memory_budget()
    for name in CONFIGS:
        config = named_config(name)
        run = run_estimate(config, check_evals(config, None))
        run.check()
        assert 0 < run.total_seconds < RUN_SECONDS and 0 < run.total_bytes < budget, name
        assert min(run.seconds.values()) >= 0 and min(run.memory.values()) > 0, name


def _recorded_runs():
    """(name, env steps, the command's evaluations, recorded CPU seconds) of every shipped run of a named config."""
    assets = Path(attnmarl.__file__).parent / "assets"
    for index in sorted(assets.glob("*/index.json")):
        for run in json.loads(index.read_text()):
            words = run["command"].split()
            option = {key: int(words[words.index(key) + 1]) for key in ("--evals", "--eval-episodes",
                                                                         "--final-episodes") if key in words}
            yield run["name"], run["env_steps"], option, run["cpu_seconds"]


def test_the_recorded_cpu_time_of_every_shipped_run_is_within_the_range_the_book_quotes():
    """Every shipped run's recorded CPU time over today's estimate of it (the whole run: training, its evaluations
    on mpe2), within the range the reproducing appendix quotes, to its one decimal; their median near 1."""
    page = (Path(attnmarl.__file__).resolve().parents[2] / "book" / "reproducing.md").read_text()
    quoted = re.search(r"every shipped run took ([\d.]+)–([\d.]+) times the time estimated", page)
    ratios = []
    for name, env_steps, option, cpu_seconds in _recorded_runs():
        config = replace(named_config(name), total_steps=env_steps)
        run = run_estimate(config, check_evals(config, option.get("--evals")), option.get("--eval-episodes", 20),
                           option.get("--final-episodes", 200))
        ratios.append(cpu_seconds / run.total_seconds)
    assert len(ratios) > 300 and (f"{min(ratios):.1f}", f"{max(ratios):.1f}") == quoted.groups()
    assert 0.75 < float(np.median(ratios)) < 1.33


PEAK = """
import json, sys, torch
from dataclasses import replace
from attnmarl.train import CONFIGS, ESTIMATES, TRAINERS
torch.set_num_threads(1)
for name, changes in json.loads(sys.argv[1]):
    config = replace(CONFIGS[name], **changes)
    estimate = ESTIMATES[type(config)](config)
    open("/proc/self/clear_refs", "w").write("5")  # the peak resident set starts again from here
    TRAINERS[type(config)](config)
    peak = next(int(line.split()[1]) * 1024 for line in open("/proc/self/status") if line.startswith("VmHWM"))
    print(json.dumps([name, peak, estimate.total_bytes, str(estimate)]))
"""


@pytest.mark.skipif(not os.access("/proc/self/clear_refs", os.W_OK), reason="needs Linux's /proc/self/clear_refs")
def test_a_runs_peak_memory_is_within_the_stated_range_of_its_estimate():
    """Two small runs whose own memory is hundreds of MB, in a fresh process: MAPPO whose minibatch of 12,800
    observations dominates, and value decomposition whose replay buffer of 400,000 transitions does."""
    runs = [["pi-spread3-flat", {"num_envs": 1024, "total_steps": 25_600}],
            ["qmix-spread6-vdn", {"buffer_size": 400_000, "total_steps": 1024, "learning_starts": 1008,
                                  "minibatch_size": 1024}]]
    env = dict(os.environ, PYTHONPATH=str(Path(attnmarl.__file__).parents[1]), OMP_NUM_THREADS="1")
    done = subprocess.run([sys.executable, "-c", PEAK, json.dumps(runs)], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    rows = [json.loads(line) for line in done.stdout.splitlines()]
    assert [row[0] for row in rows] == [name for name, _ in runs]
    for name, peak, estimated, summary in rows:
        assert MEMORY_RANGE[0] < peak / estimated < MEMORY_RANGE[1], (name, peak, summary)
        assert math.isfinite(peak) and estimated > 5e8
