"""Command line: train a named MAPPO, MADDPG or MAAC configuration, evaluate it on mpe2 (Level-Based Foraging
on lbforaging), write a checkpoint and a curve.

    python -m attnmarl.train --config spread3-attention [--seed 0] [--steps N] [--out runs] [--replace]
                             [--compile] [--device cpu|cuda|auto]
    python -m attnmarl.train --config spread3-attention --seeds 3-9 [--jobs 2] [--out runs] ...
    python -m attnmarl.train --list
    python -m attnmarl.train --index src/attnmarl/assets/value

A run trains on the batched port with the algorithm its config belongs to (:func:`attnmarl.algos.mappo.train`
for a :class:`MAPPOConfig`, :func:`attnmarl.algos.maddpg.train` for a :class:`MADDPGConfig`,
:func:`attnmarl.algos.maac.train` for a :class:`MAACConfig`, :func:`attnmarl.algos.qmix.train` for value
decomposition's :class:`QMIXConfig`) with a tqdm progress bar,
evaluates the current policy on the real mpe2 environment ``--evals`` times along the way
(``--eval-episodes`` episodes each) and over 200 fixed-seed episodes at the end, and writes to
``--out``:

- ``NAME-seedS.pt`` — the checkpoint (:mod:`attnmarl.checkpoints`; ``load_policy`` plays it);
- ``NAME-seedS.csv`` — the learning curve: env steps, wall and CPU seconds, the training return
  (mean over the episodes that ended since the previous row), and the mpe2 evaluation return ± sem;
- ``NAME-seedS.json`` — a summary: config, exact command, CPU time, final score.

Everything that can be checked is checked before training starts: the config, a budget that is a
whole number of updates (and, for MADDPG, reaches ``learning_starts``: a run that never updates is
not saved as trained), the numbers of episodes, the whole run's estimated CPU time and peak memory
(:func:`run_estimate`, printed as the run starts; more than a day or half this machine's memory is refused,
naming the biggest part, unless ``ATTNMARL_ALLOW_COSTLY=1``), that ``--out`` is writable, that a fine-tuning
checkpoint exists and fits, and that ``--out`` holds no earlier run of the same config and seed
(``--replace`` replaces it on purpose, and says that ``index.json`` still describes the old one). The
exact budget is printed as the run starts; Ctrl-C ends it with one line saying that nothing was
written (a run cannot resume). The three files are written to temporary files first and
renamed into place only when all three are complete — the checkpoint, then the curve, then the
summary — and the summary and the checkpoint carry the same ``run_id`` (and the summary the curve's
SHA-256), so a run killed at any moment leaves each file whole, old or new, and never a summary that
describes other files than those beside it. If they cannot be written at all (a full disk), they are
kept whole in a temporary folder, and the error says where (:func:`attnmarl.files.atomic.save_files`).

``--seeds 3-9`` (or ``0,2,5``) trains a list of seeds of one config, ``--jobs`` at a time (one per core by
default), each exactly as ``--seed S`` would alone, and skips the seeds already finished in ``--out``, so the same
command resumes a list after an interruption (:mod:`attnmarl.seeds`).

``--index DIR`` collects the summaries in DIR into ``index.json`` and a ``README.md`` table (how
the shipped assets in ``attnmarl/assets/value`` are listed), leaving out (with a warning) any run
whose checkpoint or curve is not the one its summary describes. The CPU time of a run is printed at
its end; torch uses one thread unless ``--threads`` says otherwise (on a 2-core machine shared
with other work, one thread per run is the fastest). ``--compile`` runs the networks through
``torch.compile`` (where a C++ compiler exists): the same training after a one-off compile, not faster
on the book's 2-core CPU (the benchmarks appendix), so it is off by default.

``--device cuda`` trains the networks on a GPU (``auto``: on a GPU where torch sees one, else on the CPU;
the default is ``cpu``); the environments still step on the CPU, and the checkpoint holds CPU tensors, so
it loads anywhere. The device is not part of a run: the same config and seed on a CPU and on a GPU start
from the same weights and draw the same random numbers, and differ only by how floating-point sums round
(so their curves drift apart, and their scores agree within noise). The summary records which device ran
it. Where torch sees no GPU, ``--device cuda`` is refused before anything starts.
"""
from __future__ import annotations

import argparse
import csv
import hashlib
import inspect
import io
import json
import math
import shlex
import sys
import time
import uuid
import warnings
from collections.abc import Callable
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from .algos import maac, maddpg, mappo, mat, qmix
from .algos.compile import check_compiler
from .algos.estimate import RunEstimate
from .algos.maac import MAACConfig
from .algos.maddpg import MADDPGConfig
from .algos.mappo import MAPPOConfig
from .algos.mat import MATConfig
from .algos.qmix import QMIXConfig
from .checkpoints import ASSETS, Agent, Config, agent_policy, checkpoint_data, load_checkpoint
from .checks import check_bool, check_episodes, check_int, cli_episodes, cli_int, cli_seed, cli_threads
from .devices import DEVICES, check_device
from .envs import episode_returns
from .envs.decoys import NAME as DECOYS
from .envs.foraging import NAME as FORAGING
from .envs.lbf_baselines import SCENARIOS as LBF_SCENARIOS
from .envs.scenarios import reference_module
from .envs.sight import NARROW_SIGHT_RHO, SIGHT_RHO
from .files.atomic import check_writable_folder, save_files, write_atomically
from .interrupt import run_command
from .nets.messages import MESSAGES
from .seeds import RUN_SUFFIXES, parse_seeds, run_seeds
from .selection import decoy_alpha
from .transfer import team_kwargs

__all__ = ["CONFIGS", "CURRICULUM_MS", "DECOY_MS", "DECOY_DS", "DECOY_DESIGNS", "DECOY_DECISIVE", "LBF_MS",
           "LBF_DESIGNS", "LBF_GAMMA", "SIGHT_MS", "ESTIMATES", "named_config", "budget", "run_estimate",
           "existing_run", "check_init_actor", "reference_of", "evaluate_agent", "run", "device_name", "write_index",
           "check_command", "main"]

CONFIGS: dict[str, Config] = {
    "spread3-attention": MAPPOConfig("simple_spread", {"N": 3}, critic="attention", total_steps=5_000_000),
    "spread3-concat": MAPPOConfig("simple_spread", {"N": 3}, critic="concat", total_steps=5_000_000),
    "spread6-attention": MAPPOConfig("simple_spread", {"N": 6}, critic="attention", total_steps=5_000_000),
    "spread6-concat": MAPPOConfig("simple_spread", {"N": 6}, critic="concat", total_steps=5_000_000),
    "tag-attention": MAPPOConfig("simple_tag", {}, critic="attention", total_steps=5_000_000, adv_norm_per_agent=True),
    "tag-concat": MAPPOConfig("simple_tag", {}, critic="concat", total_steps=5_000_000, adv_norm_per_agent=True),
}
"""The named configurations of chapter 7 (the value network). Within a scenario the two critics differ
only in ``critic``: the same actor, the same PPO settings, the same budget. In simple_tag the
predators' and the prey's advantages are normalised separately (their returns differ in sign and scale)."""

_SPREAD_BUDGET = {3: 1_500_000, 6: 2_000_000}
for _n, _steps in _SPREAD_BUDGET.items():
    for _actor in ("flat", "concat", "attention", "entity"):
        CONFIGS[f"pi-spread{_n}-{_actor}"] = MAPPOConfig("simple_spread", {"N": _n}, critic="attention", actor=_actor,
                                                        total_steps=_steps)
    for _actor in ("concat", "attention"):
        CONFIGS[f"mu-spread{_n}-{_actor}"] = MAPPOConfig("simple_spread", {"N": _n, "continuous_actions": True},
                                                        critic="attention", actor=_actor, total_steps=_steps)
CONFIGS["pi-spread6-absolute"] = replace(CONFIGS["pi-spread6-entity"], entity_frame="absolute")
for _actor in ("flat", "attention"):
    CONFIGS[f"pi-tag-{_actor}"] = MAPPOConfig("simple_tag", {}, critic="attention", actor=_actor, total_steps=2_000_000,
                                              adv_norm_per_agent=True)
"""Chapter 8 (the policy network): ``pi-`` discrete and ``mu-`` continuous policies, all with the
self-attention critic; within a row (scenario and m) only the actor differs. ``flat`` is chapter 7's
decentralized MLP actor, ``concat`` and ``attention`` the centralized policies of figs. 17.7 and
17.8's shapes, ``entity`` the decentralized entity-token attention actor, ``absolute`` the same network
on tokens in world coordinates built from every agent's observation (a centralized token design)."""

_SCALE_AGENT_STEPS = 12_000_000
for _n in (3, 9, 12):
    for _actor in ("flat", "entity"):
        CONFIGS[f"scale-spread{_n}-{_actor}"] = replace(CONFIGS["pi-spread6-flat"], scenario_kwargs={"N": _n},
                                                        actor=_actor, total_steps=_SCALE_AGENT_STEPS // _n)
CONFIGS["finetune-spread12-entity"] = replace(CONFIGS["scale-spread12-entity"], total_steps=400_000,
                                              init_actor="policy/pi-spread6-entity-seed{seed}.pt")
"""Chapter 10 (more agents): simple_spread at m = 3, 9 and 12 with chapter 8's flat and entity actors and
self-attention critic, every m with the same budget in agent-decisions, m x env steps = 12 million (at
m = 6 that is chapter 8's ``pi-spread6-*``, 2 million env steps). ``finetune-spread12-entity`` starts
from chapter 8's m = 6 entity actor of the same seed (fresh critic) and trains 400k env steps at m = 12."""

for _m in (4, 8, 12):
    for _actor in ("flat", "entity"):
        CONFIGS[f"scale-treasure{_m}-{_actor}"] = replace(
            CONFIGS["pi-spread6-flat"], scenario="collect_treasure", actor=_actor, total_steps=_SCALE_AGENT_STEPS // _m,
            scenario_kwargs=team_kwargs("collect_treasure", _m))
"""Chapter 10 on MAAC's task, collect_treasure, at m = 4, 8 and 12 agents (MAAC's sizes): m − 2 collectors,
2 deposits and as many treasures as collectors (:func:`attnmarl.transfer.team_kwargs`); the same 12 million
agent-decisions per point as simple_spread, the same PPO settings and self-attention critic; only the
actor differs."""

for _m in (4, 12):
    CONFIGS[f"critic-treasure{_m}-concat"] = replace(CONFIGS[f"scale-treasure{_m}-flat"], critic="concat")
"""MAAC's comparison on collect_treasure at its smallest and largest teams: the flat actor with chapter 7's
concatenation critic, to set beside ``scale-treasure{m}-flat`` (the same actor and budget with the
self-attention critic); only the critic differs."""

CURRICULUM_MS = (3, 6, 12)
"""The team sizes of the curriculum's stages, in order."""
for _m, _previous in zip(CURRICULUM_MS, (None, *CURRICULUM_MS[:-1])):
    CONFIGS[f"curriculum-spread{_m}-entity"] = replace(
        CONFIGS["scale-spread12-entity"], scenario_kwargs={"N": _m}, total_steps=_SCALE_AGENT_STEPS // 3 // _m,
        init_actor="" if _previous is None else f"scale/curriculum-spread{_previous}-entity-seed{{seed}}.pt")
"""A curriculum over m (as EPC grows its population): the entity actor trains at m = 3, then continues at
m = 6, then at m = 12 (each stage starts from the previous stage's actor of the same seed, with a fresh
critic), a third of the 12 million agent-decisions of a ``scale-`` point in each stage."""

for _n in (3, 6, 9, 12):
    CONFIGS[f"scale-spread{_n}-entity-mean"] = replace(
        CONFIGS["pi-spread6-entity" if _n == 6 else f"scale-spread{_n}-entity"], entity_mixing="mean")
for _m in (4, 8, 12):
    CONFIGS[f"scale-treasure{_m}-entity-mean"] = replace(CONFIGS[f"scale-treasure{_m}-entity"], entity_mixing="mean")
"""Is it attention? The entity actor with alpha replaced by uniform weights over the tokens present (mean
pooling, a Deep Sets encoder), everything else as in the entity run of the same m: tokens, embeddings,
widths, feed-forward block, head, critic, PPO settings and budget (at m = 6, chapter 8's ``pi-spread6-entity``).
Only ``entity_mixing`` differs."""

DECOY_MS, DECOY_DS = (3, 6, 12), (0, 1, 3)
"""Chapter 12's team sizes m and decoys per agent d (k = d·m decoys beside the m targets)."""
DECOY_DESIGNS: dict[str, dict[str, str]] = {"entity": {}, "mean": {"entity_mixing": "mean"}, "flat": {"actor": "flat"},
                                            "oracle": {"decoy_view": "oracle"}, "nobit": {"decoy_view": "no-bit"}}
"""Chapter 12's designs and controls, each as its change to the entity run: attention, mean pooling, the flat
actor, the oracle (decoys hidden) and no bit (decoys indistinguishable); :data:`attnmarl.nets.policies.DECOY_VIEWS`."""
DECOY_DECISIVE = ((6, 0), (6, 3))
"""The (m, d) where each design has ten seeds (three elsewhere): chapter 12's decisive comparison, attention's
lead over pooling without decoys and with three per agent, at chapter 8's team size. At d = 0 they are chapter 8's
and chapter 10's ten seeds (the same training, below)."""
for _m in DECOY_MS:
    for _d in DECOY_DS:
        for _design, _change in DECOY_DESIGNS.items():
            if _d == 0 and "decoy_view" in _change:  # no decoys: no bit to zero, nothing to hide (refused)
                continue
            CONFIGS[f"decoys{_d}-spread{_m}-{_design}"] = replace(
                CONFIGS["pi-spread6-entity" if _m == 6 else f"scale-spread{_m}-entity"],
                scenario="simple_spread_decoys", scenario_kwargs={"N": _m, "decoys": _d}, **_change)
"""Chapter 12 (selection on purpose): simple_spread with d decoys per agent, ``decoys{d}-spread{m}-{design}``, at
chapter 10's entity runs' budget for that m (12 million agent-decisions, m x env steps; at m = 6 chapter 8's
``pi-spread6-entity``), PPO settings and self-attention critic; within an (m, d) only the design's field differs
(:data:`DECOY_DESIGNS`). At d = 0 the environment is simple_spread itself, so ``decoys0-spread{m}-{entity,mean,flat}``
train bit for bit as chapter 8's and 10's runs of the same design (a test), which stand for them; the controls do
not exist there (no bit to zero, nothing to hide: the config refuses them). Estimated cost with one torch thread
(one update's CPU time per design, m and d, times the budget, plus 600 mpe2 evaluation episodes): 0.09 (flat,
m = 3) to 0.23 (oracle, m = 12, d = 3) CPU-hours a seed; the first runs (m = 6, d = 3) took 0.14-0.15, where the
estimate gives 0.15."""

LBF_MS = tuple(LBF_SCENARIOS)
"""Chapter 12's team sizes on Level-Based Foraging (:data:`attnmarl.envs.lbf_baselines.SCENARIOS`)."""
LBF_DESIGNS = {design: DECOY_DESIGNS[design] for design in ("entity", "mean", "flat")}
"""The designs compared on LBF, each as its change to the entity run: attention, mean pooling and the flat actor."""
LBF_GAMMA = 0.99
for _m in LBF_MS:
    _size, _foods = LBF_SCENARIOS[_m]
    for _design, _change in LBF_DESIGNS.items():
        CONFIGS[f"lbf{_m}p-{_design}"] = replace(
            CONFIGS["pi-spread6-entity"], scenario=FORAGING, total_steps=_SCALE_AGENT_STEPS // _m, gamma=LBF_GAMMA,
            eval_deterministic=False, scenario_kwargs={"players": _m, "size": _size, "foods": _foods}, **_change)
"""Chapter 12's second benchmark: Level-Based Foraging (``"lbforaging"``, :mod:`attnmarl.envs.foraging`) with m = 3,
6 and 9 players on the grids of :data:`attnmarl.envs.lbf_baselines.SCENARIOS` (sight 2, 50 steps),
``lbf{m}p-{design}``: the entity actor, mean pooling and the flat actor (:data:`LBF_DESIGNS`), with chapter 8's entity
run's PPO settings and self-attention critic and chapter 10's budget of 12 million agent-decisions per point (m x env
steps, in whole updates), except two settings LBF needs:

- the discount, gamma = :data:`LBF_GAMMA`: an LBF episode is 50 steps, and its only rewards come when food is
  loaded, often more than 20 steps (MPE's horizon at 0.95) after the moves that led there;
- sampled evaluation (``eval_deterministic=False``): the actor sees two cells around it and remembers nothing, so a
  greedy player that sees no food takes the same action at every step until a wall stops it, and stays there. The
  calibration run below scored 0.33 +- 0.02 played greedily, 0.63 +- 0.03 sampled.

Every player is rewarded with the team's reward, so a run's score is the team's return, the share of the food
collected, on the scale of :mod:`attnmarl.envs.lbf_baselines`' random (0.084 at m = 3) and scripted (0.256) teams.
Within an m only the design's field differs. Calibration, ``lbf3p-entity`` seed 0 with one torch thread: 0.633 +-
0.025 on lbforaging (200 episodes), 570 CPU seconds with its evaluations; its training return was 0.30 at 0.2M env
steps, 0.51 at 0.8M, 0.60 at 2M and 0.64-0.67 at the end, still rising slowly. From one update's CPU time per
design and m, every config takes 6-10 CPU-minutes a seed (flat about 6, mean pooling 7-9, attention 8-10), about
3.5 CPU-hours for three seeds of all nine."""

SIGHT_MS = (3, 6, 12)
"""The team sizes of chapter 11's runs under limited sight."""
for _m in SIGHT_MS:
    for _actor in ("flat", "entity"):
        CONFIGS[f"sight-spread{_m}-{_actor}"] = replace(
            CONFIGS["pi-spread6-flat"], scenario_kwargs={"N": _m}, actor=_actor, total_steps=_SCALE_AGENT_STEPS // _m,
            sight_radius=SIGHT_RHO)
    for _messages in MESSAGES:
        CONFIGS[f"comm-spread{_m}-{_messages}"] = replace(CONFIGS[f"sight-spread{_m}-entity"], actor="comm",
                                                          messages=_messages)
    for _messages in ("mean", "attention"):
        CONFIGS[f"comm-spread{_m}-{_messages}-2rounds"] = replace(CONFIGS[f"comm-spread{_m}-{_messages}"],
                                                                  message_rounds=2)
"""Chapter 11 (attention between agents): simple_spread at m = 3, 6 and 12 under limited sight, rho =
:data:`attnmarl.envs.sight.SIGHT_RHO` (an agent sees about half the landmarks), with chapter 10's budget of
12 million agent-decisions per point (m x env steps), PPO settings and self-attention critic, which reads
the full observations. ``sight-spread{m}-flat`` and ``sight-spread{m}-entity`` are chapters 8 and 10's
actors with the sight radius (the flat one also reads the visibility flags, the entity one masks the unseen
tokens). ``comm-spread{m}-{none,mean,attention}`` are the TarMAC-style actor with no messages, messages
averaged over the senders (alpha uniform) and targeted messages: they differ in ``messages`` only.
``comm-spread{m}-{mean,attention}-2rounds`` send the messages twice before acting (only
``message_rounds`` differs)."""

for _m in SIGHT_MS:
    for _name in [f"sight-spread{_m}-{_actor}" for _actor in ("flat", "entity")] + [
            f"comm-spread{_m}-{_messages}" for _messages in MESSAGES] + [
            f"comm-spread{_m}-{_messages}-2rounds" for _messages in ("mean", "attention")]:
        CONFIGS[_name.replace("-spread", "-narrow-spread")] = replace(CONFIGS[_name], sight_radius=NARROW_SIGHT_RHO)
"""Chapter 11's runs again with the narrower radius :data:`attnmarl.envs.sight.NARROW_SIGHT_RHO` (0.5: at m = 6
an agent sees about a sixth of the landmarks); ``sight-narrow-spread{m}-*`` and ``comm-narrow-spread{m}-*``
differ from ``sight-spread{m}-*`` and ``comm-spread{m}-*`` only in ``sight_radius``."""

_Q_CONTINUOUS = {"continuous_actions": True}
for _critic in ("attention", "concat"):
    CONFIGS[f"q-spread3-{_critic}"] = MADDPGConfig("simple_spread", {"N": 3, **_Q_CONTINUOUS}, critic=_critic,
                                                   total_steps=200_000)
    CONFIGS[f"q-spread6-{_critic}"] = MADDPGConfig("simple_spread", {"N": 6, **_Q_CONTINUOUS}, critic=_critic,
                                                   total_steps=150_000)
    CONFIGS[f"q-spread6-long-{_critic}"] = replace(CONFIGS[f"q-spread6-{_critic}"], total_steps=450_000)
    CONFIGS[f"q-tag-{_critic}"] = MADDPGConfig("simple_tag", dict(_Q_CONTINUOUS), critic=_critic,
                                               total_steps=150_000)
"""Chapter 9 (the Q network): MADDPG on continuous actions with the concatenation Q critic or fig. 17.9's
self-attention Q critic; within a scenario only ``critic`` differs. ``q-spread6-long-{critic}`` tests
"attention helps most when m is large" at three times the budget of ``q-spread6-{critic}`` (450,000
env-steps); only the budget differs."""

MAAC_STEPS = {4: 500_000, 8: 250_000, 12: 166_700}
"""The env-step budget of the ``maac-treasure{m}-*`` runs: 2 million agent-decisions (m x env steps) at every m,
as chapter 10 budgets its points (MAAC's 5 million env steps at 100 steps an episode would take hours of CPU
here); each run takes at most about 10 CPU-minutes with one torch thread, evaluations included."""
for _m, _steps in MAAC_STEPS.items():
    for _critic in ("attention", "concat"):
        CONFIGS[f"maac-treasure{_m}-{_critic}"] = MAACConfig("collect_treasure", team_kwargs("collect_treasure", _m),
                                                             critic=_critic, total_steps=_steps)
"""MAAC's scaling experiment (Iqbal & Sha 2019, table 3) on collect_treasure at m = 4, 8 and 12: discrete-action
soft actor-critic with MAAC's attention critic or the MADDPG+SAC concatenation critic (only ``critic``
differs), m − 2 collectors, 2 deposits and m − 2 treasures as in chapter 10. MAAC's code fixes only its 8-agent
team (6 hunters, 2 banks, 6 treasures), which this split gives at m = 8; the split at 4 and 12 is the book's."""

MAAC_LONG_STEPS = 3 * MAAC_STEPS[4]
for _critic in ("attention", "concat"):
    CONFIGS[f"maac-treasure4-long-{_critic}"] = replace(CONFIGS[f"maac-treasure4-{_critic}"],
                                                        total_steps=MAAC_LONG_STEPS)
"""Is it the budget? ``maac-treasure4-long-{critic}`` trains m = 4 for three times the env steps of
``maac-treasure4-{critic}`` (1.5 million, 30% of MAAC's 5 million); only the budget differs."""

QMIX_STEPS = {3: 200_000, 6: 200_000, 12: 150_000}
"""The env-step budget of the ``qmix-spread{m}-*`` runs: one update of 256 transitions per 16 env steps,
so 12,500 / 12,500 / 9,375 updates. With one torch thread, evaluations included, ``qmix-spread3-qatten``
took 6.8 CPU-minutes (seed 0: -9.37 +- 0.26 on mpe2, 98% of the random -> greedy range); from the cost of
an update, Qatten (the costliest mixer) at m = 6 and 12 should take about 11 and 15."""
for _m, _steps in QMIX_STEPS.items():
    for _mixer in ("vdn", "qmix", "qatten"):
        CONFIGS[f"qmix-spread{_m}-{_mixer}"] = QMIXConfig("simple_spread", {"N": _m}, mixer=_mixer,
                                                          total_steps=_steps)
CONFIGS["qmix-spread3-qatten-uniform"] = replace(CONFIGS["qmix-spread3-qatten"], qatten_uniform=True)
"""Chapter 11 (value decomposition): simple_spread's agents learn one shared Q^i(o^i, a) (the entity
network) from the team reward through a mixer — VDN's sum, QMIX's hypernetwork mixer or Qatten's
attention over the agents; within an m only ``mixer`` differs. ``qmix-spread3-qatten-uniform`` is
Qatten with lambda fixed at 1/m (``qatten_uniform``), its attention ablation (exercise 3)."""

MAT_MS = (3, 6, 12)
"""The team sizes of chapter 13's runs."""
for _m in MAT_MS:
    CONFIGS[f"mat-spread{_m}"] = MATConfig("simple_spread", {"N": _m}, total_steps=_SCALE_AGENT_STEPS // _m)
    CONFIGS[f"matdec-spread{_m}"] = replace(CONFIGS[f"mat-spread{_m}"], variant="mat-dec")
    CONFIGS[f"mat-spread{_m}-shuffled"] = replace(CONFIGS[f"mat-spread{_m}"], shuffle_order=True)
"""Chapter 13 (the team as a sequence): the Multi-Agent Transformer on simple_spread at m = 3, 6 and 12 with
chapter 10's budget of 12 million agent-decisions per point (m x env steps), to set beside
``scale-spread{m}-entity`` (``pi-spread6-entity`` at m = 6). ``matdec-spread{m}`` keeps the encoder as critic
and replaces the decoder by decentralized actors (only ``variant`` differs); ``mat-spread{m}-shuffled`` draws a
random decision order per environment for every rollout (only ``shuffle_order`` differs). MAT acts with every
agent's observation (centralized execution); MAT-Dec and the entity actor do not."""
for _prefix in ("mat", "matdec"):
    CONFIGS[f"{_prefix}-decoys3-spread6"] = replace(CONFIGS[f"{_prefix}-spread6"], scenario="simple_spread_decoys",
                                                    scenario_kwargs={"N": 6, "decoys": 3})
"""Chapter 13's MAT and MAT-Dec on chapter 12's decisive point, simple_spread with three decoys per agent at m = 6
(``mat-decoys3-spread6``, ``matdec-decoys3-spread6``), at the budget of ``decoys3-spread6-entity`` (the entity actor
they are read beside, 2 million env steps) and of their own m = 6 runs; only the scenario differs from those."""

TRAINERS = {MAPPOConfig: mappo.train, MADDPGConfig: maddpg.train, MAACConfig: maac.train,
            QMIXConfig: qmix.train, MATConfig: mat.train}
"""The training loop of each algorithm, by the type of its config."""

ESTIMATES = {MAPPOConfig: mappo.estimate, MADDPGConfig: maddpg.estimate, MAACConfig: maac.estimate,
             QMIXConfig: qmix.estimate, MATConfig: mat.estimate}
"""The estimate of a whole run of each algorithm (:mod:`attnmarl.algos.estimate`), by the type of its config."""

FINAL_EPISODES = 200

INDEX_TITLES = {
    "value": "Trained value-network agents (MAPPO, concatenation vs self-attention critic)",
    "policy": "Trained policy-network agents (MAPPO: flat, centralized and entity-attention policies)",
    "qnet": "Trained Q-network agents (MADDPG on continuous actions: concatenation vs self-attention Q critic)",
    "maac": "Trained MAAC agents (discrete soft actor-critic on collect_treasure: attention vs concatenation "
            "all-actions Q critic)",
    "scale": "Trained agents at more m (MAPPO: flat vs entity-attention actor on simple_spread and collect_treasure, "
             "and fine-tuning across m)",
    "mix": "Value decomposition (VDN, QMIX and the Qatten attention mixer) on simple_spread",
    "comm": "Attention between agents: MAPPO under limited sight, without messages, with averaged messages and "
            "with targeted (TarMAC) messages",
    "decoys": "Selection on purpose: simple_spread with decoys (MAPPO: attention, mean pooling and flat actors, the "
              "oracle and no-bit controls)",
    "ablation": "Is it attention? The entity actor with mean pooling (alpha uniform) in place of attention, everything "
                "else as in the entity runs of chapters 8 and 10 (MAPPO)",
    "mat": "The team as a sequence: the Multi-Agent Transformer, MAT-Dec and MAT with shuffled decision orders on "
           "simple_spread",
    "lbf": "Level-Based Foraging (MAPPO: attention, mean pooling and flat actors; score: the team's share of the food, "
           "on lbforaging)",
}
"""The title of ``--index``'s README, by the name of the asset folder."""


def named_config(name: str, seed: int = 0, steps: int | None = None) -> Config:
    """The config called ``name`` with the given seed (and budget, if given: ``None`` means the config's
    own). A budget that is 0, negative, less than one update (or, for MADDPG, ends before its first
    update) or not a whole number of updates raises ``ValueError``: it would train another budget than
    asked, or nothing."""
    if name not in CONFIGS:
        raise ValueError(f"unknown config {name!r}; the configs are {sorted(CONFIGS)}")
    config = replace(CONFIGS[name], seed=seed, total_steps=CONFIGS[name].total_steps if steps is None else steps)
    if steps is not None and steps % config.batch_size:
        below, above = steps - steps % config.batch_size, steps - steps % config.batch_size + config.batch_size
        raise ValueError(f"steps = {steps:,} is not a whole number of {name}'s updates of num_envs * rollout_steps "
                         f"= {config.batch_size:,} env steps (it would train {below:,}); give "
                         + (f"{below:,} or " if below else "") + f"{above:,}")
    return config


def config_differences(name: str, base: str, width: int = 92) -> str:
    """What the config ``name`` changes from the config ``base``, one ``field = value`` per field that
    differs, wrapped at ``width`` characters: how a chapter shows that two runs it compares differ only
    where its text says they do."""
    config, reference = named_config(name), named_config(base)
    if type(config) is not type(reference):
        raise ValueError(f"{name!r} is a {type(config).__name__} and {base!r} a {type(reference).__name__}: "
                         f"configs of two algorithms share no fields to compare")
    changed = [f"{key} = {value!r}" for key, value in vars(config).items() if getattr(reference, key) != value]
    lines = [f"{name} vs {base}:"]
    for item in changed or ["no difference"]:  # a new line between fields, never inside a value
        if len(lines[-1]) + 1 + len(item) + 1 > width and lines[-1].strip():
            lines.append("   ")
        lines[-1] += f" {item};"
    return "\n".join(lines).removesuffix(";")


def budget(config: Config) -> str:
    """The budget a run of ``config`` trains, exactly: ``1,562 updates of 3,200 = 4,998,400 env steps``."""
    unit = "updates" if isinstance(config, (MAPPOConfig, MATConfig)) else "iterations"
    steps = config.num_updates * config.batch_size
    return f"{config.num_updates:,} {unit} of {config.batch_size:,} = {steps:,} env steps"


def evaluation_count(num_updates: int, evals: int) -> int:
    """How many mpe2 evaluations :func:`run` makes for ``evals`` asked: one after every
    ``num_updates // evals`` updates (at least one) and one at the end, so sometimes one more than asked
    when ``evals`` does not divide ``num_updates`` (more than ``num_updates`` is refused: :func:`check_evals`)."""
    every = max(1, num_updates // max(1, evals))
    return num_updates // every + (1 if num_updates % every else 0)


DEFAULT_EVALS = 20
"""Evaluations during training when none are asked for (fewer if the run has fewer updates)."""


def check_evals(config: Config, evals: int | None, name: str = "evals") -> int:
    """``evals`` if a run of ``config`` can make that many evaluations during training: an integer from 0 to its
    number of updates (it evaluates at most once per update); else ``ValueError`` naming the run's budget.
    ``None`` means :data:`DEFAULT_EVALS`, or one per update if the run has fewer."""
    if evals is None:
        return min(DEFAULT_EVALS, config.num_updates)
    check_int(name, evals, minimum=0)
    if evals > config.num_updates:
        raise ValueError(f"{name} {evals} asks for more evaluations during training than the run has updates "
                         f"({budget(config)}); a run evaluates at most once per update: give {name} <= "
                         f"{config.num_updates:,}, or more steps")
    return int(evals)


def run_estimate(config: Config, evals: int, eval_episodes: int = 20,
                 final_episodes: int = FINAL_EPISODES) -> RunEstimate:
    """The estimated CPU time and peak memory of :func:`run` of ``config`` (:mod:`attnmarl.algos.estimate`): its
    training, and its ``evals`` evaluations of ``eval_episodes`` episodes on mpe2 and the final one of
    ``final_episodes``. Its :meth:`~attnmarl.algos.estimate.RunEstimate.check` refuses, before anything starts, a
    run estimated beyond a day of CPU or half this machine's memory (``ATTNMARL_ALLOW_COSTLY=1`` lets it start)."""
    episodes = (evaluation_count(config.num_updates, evals) - 1) * eval_episodes + final_episodes
    return ESTIMATES[type(config)](config, episodes)


def existing_run(out: str | Path, name: str, seed: int) -> str | None:
    """What already sits in ``out`` under ``NAME-seedS.*`` (a run of the same config and seed), or None."""
    stem = Path(out) / f"{name}-seed{seed}"
    found = [stem.with_suffix(suffix).name for suffix in RUN_SUFFIXES if stem.with_suffix(suffix).exists()]
    if not found:
        return None
    try:
        made = json.loads(stem.with_suffix(".json").read_text())["command"]
        return f"{', '.join(found)} (made by `{made}`)"
    except (OSError, ValueError, KeyError, TypeError):
        return ", ".join(found)


def check_init_actor(config: Config) -> None:
    """Fine-tuning: the checkpoint ``config.init_actor`` names must exist and hold an actor this config
    can start from; ``ValueError`` otherwise — before training, not after building the run."""
    if isinstance(config, MAPPOConfig) and config.init_actor:
        path = config.init_actor.format(seed=config.seed)
        try:
            mappo.load_actor_from(mappo.make_agent(config), config, path)
        except FileNotFoundError:
            raise ValueError(f"init_actor: {path} is neither a file nor a shipped asset (under {ASSETS}); "
                             f"{config.init_actor!r} must name the checkpoint this run fine-tunes") from None


def reference_of(scenario: str) -> str:
    """The reference environment a run of ``scenario`` is scored on, by name: ``lbforaging`` for Level-Based
    Foraging, ``mpe2`` for the rest."""
    return FORAGING if scenario == FORAGING else "mpe2"


def evaluate_agent(agent: Agent, config: Config, episodes: int) -> dict[str, Any]:
    """Score on the reference (mpe2; for Level-Based Foraging, ``lbforaging``'s game, where every player's return is
    the team's) over ``episodes`` fixed-seed episodes (seeds 0, 1, ...): the mean per-agent return and its sem, as
    :func:`attnmarl.envs.evaluate` computes them, plus each agent's mean return."""
    returns = episode_returns(agent_policy(agent, config), config.scenario, episodes, seed=0, **config.scenario_kwargs)
    per_episode = returns.mean(axis=1)
    sem = float(per_episode.std(ddof=1) / math.sqrt(episodes)) if episodes > 1 else 0.0
    return {"mean": float(per_episode.mean()), "sem": sem, "per_agent": [float(r) for r in returns.mean(axis=0)]}


def _decoy_readout(agent: Agent, config: Config) -> dict[str, float]:
    """On simple_spread with decoys, an entity actor's alpha on the decoy and on all landmark slots
    (:func:`attnmarl.selection.decoy_alpha`, chapter 12), as two more columns of the curve; nothing elsewhere."""
    actor = getattr(agent, "actor", None)
    decoys = config.scenario_kwargs.get("decoys", 0) if config.scenario == DECOYS else 0
    if decoys < 1 or not hasattr(actor, "outputs_and_alpha"):
        return {}
    shares = decoy_alpha(actor, config.scenario_kwargs)
    return {"alpha_decoys": round(shares["decoys"], 4), "alpha_landmarks": round(shares["landmarks"], 4)}


def run(name: str, seed: int = 0, steps: int | None = None, out: str | Path = "runs", evals: int | None = None,
        eval_episodes: int = 20, final_episodes: int = FINAL_EPISODES, command: str | None = None,
        progress: bool = True, replace_run: bool = False, compile_nets: bool = False,
        device: str | torch.device = "cpu") -> dict[str, Any]:
    """Train config ``name``, evaluate it, write ``NAME-seedS.{pt,csv,json}`` to ``out``; returns the summary.

    ``compile_nets`` trains with ``torch.compile`` (:mod:`attnmarl.algos.compile`; the summary records it,
    since it changes the CPU time); ``device`` ("cpu", "cuda" or "auto") is where the networks train and
    are evaluated (the summary records it too). Bad arguments, an ``out`` that cannot be written, a
    fine-tuning checkpoint that is missing or does not fit, a GPU that torch does not see, and an earlier
    run of the same config and seed in ``out`` (unless ``replace_run``) raise ``ValueError`` before
    training starts."""
    device = check_device(device)
    config = named_config(name, seed, steps)
    evals = check_evals(config, evals)
    check_episodes("eval_episodes", eval_episodes)
    check_episodes("final_episodes", final_episodes)
    check_bool("replace_run", replace_run)
    run_estimate(config, evals, eval_episodes, final_episodes).check()
    stem = check_writable_folder(out) / f"{name}-seed{seed}"
    earlier = existing_run(out, name, seed)
    if earlier and not replace_run:
        raise ValueError(f"{out} already holds a run of {name} with seed {seed}: {earlier}. A new run would replace "
                         "it; choose another out folder, or replace it on purpose (replace_run=True, --replace)")
    check_init_actor(config)
    cpu_start, wall_start = time.process_time(), time.perf_counter()
    eval_every = max(1, config.num_updates // max(1, evals))  # evaluation_count(num_updates, evals) in all
    rows: list[dict[str, Any]] = []
    since_last: list[float] = []
    bar = tqdm(total=config.num_updates * config.batch_size, unit="step", unit_scale=True, desc=name,
               disable=not progress)

    def on_update(stats: dict[str, float], agent: Agent) -> None:
        bar.update(config.batch_size)
        if not math.isnan(stats["train_return"]):
            since_last.append(stats["train_return"])
        last = stats["update"] == config.num_updates
        if stats["update"] % eval_every and not last:
            return
        score = evaluate_agent(agent, config, final_episodes if last else eval_episodes)
        rows.append({
            "env_steps": stats["env_steps"],
            "wall_seconds": round(time.perf_counter() - wall_start, 2),
            "cpu_seconds": round(time.process_time() - cpu_start, 2),
            "train_return": round(float(np.mean(since_last)), 4) if since_last else "",
            "eval_return": round(score["mean"], 4),
            "eval_sem": round(score["sem"], 4),
            "eval_episodes": final_episodes if last else eval_episodes,
            **{f"eval_return_{i}": round(r, 4) for i, r in enumerate(score["per_agent"])},
            **_decoy_readout(agent, config),
        })
        since_last.clear()
        bar.set_postfix({"train": rows[-1]["train_return"],
                         reference_of(config.scenario): f"{score['mean']:.2f}±{score['sem']:.2f}"})
        if last:
            final.update(score)

    final: dict[str, Any] = {}
    try:
        agent = TRAINERS[type(config)](config, on_update, compile_nets=compile_nets, device=device)
    finally:  # closed before an interruption is reported, so that the report is the last line
        bar.close()
    cpu_seconds, wall_seconds = time.process_time() - cpu_start, time.perf_counter() - wall_start
    curve = _csv_bytes(rows)
    summary = {
        "name": name,
        "seed": seed,
        "scenario": config.scenario,
        "scenario_kwargs": config.scenario_kwargs,
        "critic": config.critic,
        "actor": config.actor,
        "env_steps": config.num_updates * config.batch_size,
        "command": command or f"python -m attnmarl.train --config {name} --seed {seed}"
                              + (f" --steps {steps}" if steps else ""),
        "cpu_seconds": round(cpu_seconds, 1),
        "wall_seconds": round(wall_seconds, 1),
        "torch_threads": torch.get_num_threads(),
        "compiled": compile_nets,
        "device": device_name(device),
        "final_return": round(final["mean"], 3),
        "final_sem": round(final["sem"], 3),
        "final_per_agent": [round(r, 3) for r in final["per_agent"]],
        "final_episodes": final_episodes,
        "critic_parameters": sum(p.numel() for p in agent.critic.parameters()),
        "actor_parameters": sum(p.numel() for p in agent.actor.parameters()),
        "run_id": uuid.uuid4().hex,
        "curve_sha256": hashlib.sha256(curve).hexdigest(),
        "config": asdict(config),
    }
    checkpoint = io.BytesIO()
    torch.save(checkpoint_data(agent, config, **{k: v for k, v in summary.items() if k != "config"}), checkpoint)
    save_files({  # the summary last: it says that the checkpoint and the curve beside it are complete
        stem.with_suffix(".pt"): checkpoint.getvalue(),
        stem.with_suffix(".csv"): curve,
        stem.with_suffix(".json"): (json.dumps(summary, indent=1) + "\n").encode(),
    }, "out")
    if earlier and (Path(out) / "index.json").exists():
        warnings.warn(f"{stem.name}.* replaced an earlier run; {Path(out) / 'index.json'} still describes the "
                      f"earlier one until `python -m attnmarl.train --index {out}` is run again", stacklevel=2)
    return summary


def device_name(device: torch.device) -> str:
    """``cpu``, or ``cuda`` and the card's name: which device trained a run, as its summary records it."""
    return "cpu" if device.type == "cpu" else f"cuda ({torch.cuda.get_device_name(device)})"


def _csv_bytes(rows: list[dict[str, Any]]) -> bytes:
    """The learning curve as CSV text (a header, then one line per row)."""
    buffer = io.StringIO(newline="")
    writer = csv.DictWriter(buffer, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue().encode()


def _disagreement(directory: Path, entry: dict[str, Any]) -> str | None:
    """Why the files beside a run summary are not the ones it describes, or None if they are.

    The checkpoint, where there is one, must carry the summary's ``run_id`` (both lack it in runs made
    before runs had one) and load; the curve must have the summary's ``curve_sha256``, where it has one."""
    stem = directory / f"{entry['name']}-seed{entry['seed']}"
    if stem.with_suffix(".pt").exists():
        try:
            _, _, metadata = load_checkpoint(stem.with_suffix(".pt"))
        except ValueError as error:
            return str(error)
        if metadata.get("run_id") != entry.get("run_id"):
            return f"{stem.name}.pt is from run {metadata.get('run_id')}, the summary from run {entry.get('run_id')}"
    if "curve_sha256" in entry:
        curve = stem.with_suffix(".csv")
        if not curve.exists() or hashlib.sha256(curve.read_bytes()).hexdigest() != entry["curve_sha256"]:
            return f"{curve.name} is not the curve of run {entry['run_id']}"
    return None


SUMMARY_FIELDS = {"name": str, "seed": int, "scenario": str, "scenario_kwargs": dict, "critic": str,
                  "env_steps": int, "command": str, "cpu_seconds": (int, float), "final_return": (int, float),
                  "final_sem": (int, float), "final_per_agent": list, "final_episodes": int, "config": dict}
"""The fields ``--index`` reads from a run summary, and their types."""


def _summary(path: Path) -> tuple[dict[str, Any], str | None]:
    """A run summary and None, or (``{}``, why it is not one: unreadable, not JSON, a field missing or of
    another type, or a name and seed that are not its file name's)."""
    try:
        entry = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as error:
        return {}, f"it is not readable JSON ({error})"
    if not isinstance(entry, dict):
        return {}, f"it holds a {type(entry).__name__}, not a run summary"
    wrong = [key for key, kind in SUMMARY_FIELDS.items()
             if not isinstance(entry.get(key), kind) or isinstance(entry.get(key), bool)]
    if wrong:
        return {}, f"it is not a run summary of attnmarl.train: fields {wrong} are missing or of another type"
    if path.name != f"{entry['name']}-seed{entry['seed']}.json":
        return {}, f"it describes run {entry['name']}-seed{entry['seed']}, not {path.stem}"
    return entry, None


def _actor_variant(config: dict[str, Any]) -> str:
    """How an entity actor differs from chapter 8's, for the index's actor column: '' or ' (absolute)',
    ' (mean pooling)', chapter 12's controls (' (oracle: decoys hidden)') and chapter 11's sight radius and
    messages: ' (sight 1, attention messages)'."""
    variants = [variant for key, default, variant in (("entity_frame", "egocentric", "absolute"),
                                                       ("entity_mixing", "attention", "mean pooling"))
                if config.get(key, default) != default]
    if config.get("decoy_view", "bit") != "bit":
        variants.append({"oracle": "oracle: decoys hidden", "no-bit": "no is_target bit"}[config["decoy_view"]])
    if config.get("sight_radius") is not None:
        variants.append(f"sight {config['sight_radius']:g}")
    if config.get("messages", "none") != "none":
        variants.append(f"{config['messages']} messages")
    if config.get("message_rounds", 1) != 1:
        variants.append(f"{config['message_rounds']} rounds")
    return f" ({', '.join(variants)})" if variants else ""


def write_index(directory: str | Path) -> list[dict[str, Any]]:
    """Collect the run summaries (``NAME-seedS.json``) in ``directory`` into
    ``index.json`` and a ``README.md`` that lists every run, its command, CPU time and mpe2 score.

    A run whose checkpoint or curve is not the one its summary describes (a run killed while its files
    were being renamed into place, or files copied from elsewhere), and a file that is no run summary
    (damaged, or another program's JSON), are left out with a warning. If every one is, an ``index.json``
    that lists runs is not replaced by an empty one (``ValueError``): it may hold the only whole copy of the
    damaged summaries' data."""
    directory = Path(directory)
    if not directory.is_dir():
        raise ValueError(f"{directory} is not a folder of runs (it does not exist or is a file)")
    runs = []
    for path in sorted(directory.glob("*-seed*.json")):  # run summaries only
        entry, reason = _summary(path)
        if reason is None:
            reason = _disagreement(directory, entry)
        if reason is None:
            runs.append(entry)
        else:
            warnings.warn(f"{path.name} left out of the index: {reason}", stacklevel=2)
    if not runs and _listed_runs(directory / "index.json"):  # the only whole copy of damaged summaries' data
        raise ValueError(f"no run summary in {directory} could be indexed (each was left out: see the warnings), and "
                         f"{directory / 'index.json'} lists {_listed_runs(directory / 'index.json')} run(s): it is "
                         "left as it was, not replaced by an index of none; repair or remove the summaries first")
    for entry in runs:
        stem = f"{entry['name']}-seed{entry['seed']}"
        entry["curve"] = f"{stem}.csv"
        entry["checkpoint"] = f"{stem}.pt" if (directory / f"{stem}.pt").exists() else None
        # say whether the actions were continuous even where the run left mpe2's default (discrete), for every
        # scenario that takes the argument (lbforaging does not: its actions are discrete only)
        if "continuous_actions" in inspect.signature(reference_module(entry["scenario"]).raw_env).parameters:
            entry["scenario_kwargs"] = {"continuous_actions": False, **entry["scenario_kwargs"]}
    runs.sort(key=lambda e: (list(CONFIGS).index(e["name"]) if e["name"] in CONFIGS else 99, e["seed"]))
    title = INDEX_TITLES.get(directory.name, "Trained MAPPO agents")
    reference = " or ".join(sorted({reference_of(e["scenario"]) for e in runs}))
    lines = [
        f"# {title}",
        "",
        "Made by `python -m attnmarl.train` (see `attnmarl/train.py`); this table and `index.json` by",
        "`python -m attnmarl.train --index` on this folder, from the runs' summaries (`NAME-seedS.json`).",
        f"Score: the mean per-agent return on {reference} over fixed-seed episodes (seeds 0, 1, ...) ± its standard",
        "error. CPU seconds: the whole run, training and evaluations, with one torch thread. `index.json`",
        "also holds each run's full config. Learning curves: `NAME-seedS.csv`; checkpoints where listed.",
        "",
        f"| config | seed | scenario | arguments | critic | actor | env steps | CPU s | {reference} return ± sem "
        "| episodes | per agent | checkpoint | command |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for e in runs:
        arguments = ", ".join(f"{k}={v}" for k, v in e["scenario_kwargs"].items() if k != "continuous_actions")
        arguments = (arguments or "defaults") + (", continuous" if e["scenario_kwargs"].get("continuous_actions")
                                                 else "")
        per_agent = " / ".join(f"{r:.1f}" for r in e["final_per_agent"])
        lines.append(
            f"| {e['name']} | {e['seed']} | {e['scenario']} | {arguments} | {e['critic']} "
            f"| {e.get('actor', 'flat')}{_actor_variant(e['config'])} "
            f"| {e['env_steps']:,} "
            f"| {e['cpu_seconds']:.0f} "
            f"| {e['final_return']:.2f} ± {e['final_sem']:.2f} | {e['final_episodes']} | {per_agent} "
            f"| {e['checkpoint'] or '—'} | `{e['command']}` |"
        )
    lines += _rerun_lines(directory)
    index, readme = (json.dumps(runs, indent=1) + "\n").encode(), ("\n".join(lines) + "\n").encode()
    write_atomically({directory / "index.json": lambda handle: handle.write(index),
                      directory / "README.md": lambda handle: handle.write(readme)})
    return runs


def _listed_runs(path: Path) -> int:
    """How many runs the index ``path`` lists (0 if there is none, or it is not a readable list)."""
    try:
        listed = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError):
        return 0
    return len(listed) if isinstance(listed, list) else 0


def _rerun_lines(directory: Path) -> list[str]:
    """A README section on this folder's runs that ``python -m attnmarl.reproduce`` re-ran with the current
    code, from the report shipped beside the chapters' folders (``reproduction/report.json``): the CPU
    time a run takes now, which drops when the code gets faster, and whether its score held."""
    report_path = directory.parent / "reproduction" / "report.json"
    if not report_path.exists():
        return []
    report = json.loads(report_path.read_text())
    rows = [r for r in report["runs"] if r["chapter"] == directory.name and r["reproduced"]]
    if not rows:
        return []
    lines = ["", "## Re-run with newer code", "",
             f"`python -m attnmarl.reproduce` re-ran the runs below on {report['date']} with the package of that day "
             "(whole report: `../reproduction/report.md`). The CPU times above are those of the recorded runs; "
             "these are what a run cost then.", "",
             "| run | recorded score | re-run score | difference (se) | CPU min, recorded | CPU min, re-run "
             "| verdict |",
             "|---|---|---|---|---|---|---|"]
    for r in rows:
        shipped, rerun = r["shipped"], r["reproduced"]
        lines.append(f"| {r['run']} | {shipped['final_return']:.2f} ± {shipped['final_sem']:.2f} "
                     f"| {rerun['final_return']:.2f} ± {rerun['final_sem']:.2f} | {r['z']:+.2f} "
                     f"| {shipped['cpu_seconds'] / 60:.1f} | {rerun['cpu_seconds'] / 60:.1f} | {r['verdict']} |")
    return lines


def cli_seeds() -> Callable[[str], list[int]]:
    """The ``argparse`` type of ``--seeds``: :func:`attnmarl.seeds.parse_seeds`, its refusals as usage errors."""

    def parse(text: str) -> list[int]:
        try:
            return parse_seeds(text)
        except ValueError as error:
            raise argparse.ArgumentTypeError(str(error).removeprefix("--seeds: ")) from None

    return parse


class _Refusal(argparse.ArgumentParser):
    """A parser whose usage errors are ``ValueError``s, for checking a recorded command without running it."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise ValueError(message)


def _parser(kind: type[argparse.ArgumentParser] = argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The command line's options (``kind`` :class:`_Refusal` raises instead of exiting)."""
    parser = kind(prog="python -m attnmarl.train", description=__doc__.splitlines()[0])
    what = parser.add_mutually_exclusive_group(required=True)
    what.add_argument("--config", help="a named configuration (see --list)")
    what.add_argument("--list", action="store_true", help="list the named configurations")
    what.add_argument("--index", metavar="DIR", help="write index.json and README.md for the runs in DIR")
    seeds = parser.add_mutually_exclusive_group()
    seeds.add_argument("--seed", type=cli_seed(), default=0)
    seeds.add_argument("--seeds", metavar="LIST", type=cli_seeds(),
                       help="train a list of seeds, such as 3-9 or 0,2,5, one process each; seeds already finished "
                            "in --out are skipped, so the same command resumes an interrupted list")
    parser.add_argument("--jobs", type=cli_int(), default=None,
                        help="with --seeds: how many seeds train at once (default: one per core)")
    parser.add_argument("--steps", type=cli_int(), default=None, help="env steps (default: the config's budget)")
    parser.add_argument("--out", default="runs", help="output directory (default: runs)")
    parser.add_argument("--evals", type=cli_int(0), default=None,
                        help=f"mpe2 evaluations during training (default: {DEFAULT_EVALS}, or one per update if fewer)")
    parser.add_argument("--eval-episodes", type=cli_episodes(), default=20,
                        help="episodes per evaluation during training")
    parser.add_argument("--final-episodes", type=cli_episodes(), default=FINAL_EPISODES,
                        help=f"mpe2 episodes of the final evaluation (default: {FINAL_EPISODES})")
    parser.add_argument("--threads", type=cli_threads(), default=1, help="torch threads (default: 1)")
    parser.add_argument("--replace", action="store_true",
                        help="replace an earlier run of the same config and seed in --out (refused otherwise)")
    parser.add_argument("--compile", action="store_true",
                        help="run the networks through torch.compile (needs a C++ compiler; measured no faster on "
                             "the book's 2-core CPU: see the benchmarks appendix)")
    parser.add_argument("--device", choices=DEVICES, default="cpu",
                        help="where the networks train: cpu (default), cuda (a GPU), or auto (cuda where torch sees "
                             "a GPU, else cpu); the environments step on the CPU either way")
    return parser


def check_command(arguments: list[str]) -> tuple[str, int]:
    """The config name and seed that ``python -m attnmarl.train ARGUMENTS`` would train, after every check the
    command line makes before training (:func:`named_config`, ``--evals``, a fine-tuning start), without training;
    ``ValueError`` with the command line's own message otherwise. ``--threads`` and ``--out`` are not checked:
    a re-run (:mod:`attnmarl.reproduce`) gives its own."""
    args = _parser(_Refusal).parse_args([*arguments, "--threads", "1"])
    if args.config is None:
        raise ValueError("it trains no --config (it lists the configs or writes an index)")
    if args.config not in CONFIGS:
        raise ValueError(f"unknown config {args.config!r}; choose from {sorted(CONFIGS)}")
    config = named_config(args.config, args.seed, args.steps)
    evals = check_evals(config, args.evals, "--evals")
    run_estimate(config, evals, args.eval_episodes, args.final_episodes).check()
    check_init_actor(config)
    return args.config, args.seed


def main(argv: list[str] | None = None) -> None:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.list:
        for name, config in CONFIGS.items():
            print(f"{name:20s} {config.scenario} {config.scenario_kwargs} critic={config.critic} actor={config.actor} "
                  f"steps={config.total_steps:,}")
        return
    if args.index is not None:
        if not args.index.strip():
            parser.error("--index must name a folder of runs; got ''")
        if Path(args.index).is_dir() and not any(Path(args.index).glob("*-seed*.json")):
            parser.error(f"--index: {args.index} holds no run summaries (NAME-seedS.json, written by a run); there is "
                         "nothing to index")
        try:
            runs = write_index(args.index)
        except ValueError as error:
            parser.error(f"--index: {error}")
        print(f"indexed {len(runs)} runs in {args.index}")
        return
    if args.config not in CONFIGS:
        parser.error(f"unknown config {args.config!r}; choose from {sorted(CONFIGS)}")
    if args.jobs is not None and args.seeds is None:
        parser.error("--jobs sets how many seeds of --seeds train at once; give --seeds too (one --seed runs alone)")
    if args.seeds is not None and args.replace:
        parser.error("--seeds skips the seeds already finished in --out and never replaces them; without --replace, "
                     "or choose another --out")
    try:  # what run() would refuse, as a usage error before anything starts (or creates --out)
        device = check_device(args.device, "--device")
        config = named_config(args.config, args.seed, args.steps)
        args.evals = check_evals(config, args.evals, "--evals")
        estimate = run_estimate(config, args.evals, args.eval_episodes, args.final_episodes)
        estimate.check()
        check_writable_folder(args.out, "--out")
        for seed in args.seeds or [args.seed]:
            check_init_actor(replace(config, seed=seed))
        if args.compile:
            check_compiler()
    except ValueError as error:
        parser.error(str(error))
    arguments = argv if argv is not None else sys.argv[1:]
    if args.seeds is not None:
        run_seeds(args.config, args.seeds, args.out, arguments, args.jobs)
        return
    earlier = existing_run(args.out, args.config, args.seed)
    if earlier and not args.replace:
        parser.error(f"{args.out} already holds a run of {args.config} with seed {args.seed}: {earlier}; choose "
                     "another --out, or pass --replace to replace it")
    torch.set_num_threads(args.threads)
    command = "python -m attnmarl.train " + " ".join(shlex.quote(a) for a in arguments if a != "--replace")
    print(f"{args.config} seed {args.seed}: {budget(config)}" + (f"; replacing {earlier}" if earlier else ""))
    print(f"estimated: {estimate}")
    made = evaluation_count(config.num_updates, args.evals)
    if made != args.evals:
        print(f"note: --evals {args.evals} asked for {args.evals} evaluations; a run of {config.num_updates:,} "
              f"updates makes {made} (one after every {max(1, config.num_updates // max(1, args.evals)):,} "
              "updates, and one at the end)")
    summary = run(args.config, args.seed, args.steps, args.out, args.evals, args.eval_episodes, args.final_episodes,
                  command, replace_run=args.replace, compile_nets=args.compile, device=device)
    print(f"{args.config} seed {args.seed}: {reference_of(config.scenario)} return over {args.final_episodes} episodes "
          f"{summary['final_return']:.2f} ± {summary['final_sem']:.2f}")
    print(f"CPU time: {summary['cpu_seconds']:.1f} s (wall {summary['wall_seconds']:.1f} s, "
          f"{summary['torch_threads']} torch thread(s), on {summary['device']}); outputs in "
          f"{args.out}/{args.config}-seed{args.seed}.*")


if __name__ == "__main__":
    run_command("python -m attnmarl.train", main,
                "no file of this run was written, and a run cannot resume: start it again to train it",
                imports=("torch._dynamo",))
