"""The more-agents chapter's shipped results and measurements: flat vs entity-attention actors as m grows,
and one entity network run at every m.

- :data:`SCALE_CONFIGS` names the run behind each point (scenario, m, actor) of the scaling experiment,
  and :func:`scale_runs` / :func:`scale_curve` read them: simple_spread at m = 3, 9 and 12 and
  collect_treasure at m = 4, 8 and 12 from ``attnmarl/assets/scale``, simple_spread at m = 6 from the
  policy chapter's ``attnmarl/assets/policy`` (the same budget in agent-decisions);
- :data:`CRITIC_CONFIGS` and :func:`critic_runs`: MAAC's comparison on collect_treasure, the flat actor with
  the concatenation or the self-attention critic;
- :data:`CURRICULUM` and :func:`curriculum_curve`: the entity actor trained at m = 3, then 6, then 12;
- :func:`zero_shot_results` reads ``assets/scale/zero-shot.json`` (or another zero-shot table) and
  :func:`treasure_baselines` ``assets/scale/treasure-baselines.json`` (made by ``python -m attnmarl.transfer``);
- :func:`parameter_counts` counts every network's parameters at each m, as the training CLI builds them;
- :func:`attention_concentration` measures how many of its 2m entities an entity actor's alpha spreads over;
- :func:`pad_spread_tokens` places simple_spread tokens of m agents into the token slots of a larger team,
  with the mask that hides the empty slots (a batch that mixes team sizes).
"""
from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ...algos.mappo import MAPPOAgent, MAPPOConfig, make_agent
from ...checkpoints import shipped_checkpoint, shipped_curve, shipped_runs, shipped_table
from ...checks import check_episodes, check_int, check_real
from ...costs import check_numbers
from ...nets import EntityActor
from ...train import CURRICULUM_MS
from ...transfer import closed_share
from .policy import policy_alpha
from .self_attention import alpha_entropy
from .value import trained_episode

__all__ = ["MAAC_ADVANTAGE", "MAAC_MS", "MAAC_CONFIGS", "MAAC_LONG_CONFIGS", "maac_runs", "maac_improvement",
           "SCALE_MS", "TREASURE_MS", "SCALE_CONFIGS", "CRITIC_MS", "CRITIC_CONFIGS", "CURRICULUM",
           "scale_runs", "scale_curve", "transfer_table", "critic_runs", "curriculum_curve", "scale_checkpoint",
           "zero_shot_results",
           "treasure_baselines", "continuous_baselines", "FAR_TABLES", "far_zero_shot", "parameter_counts",
           "attention_concentration",
           "pad_spread_tokens"]

MAAC_ADVANTAGE = {4: 17.0, 8: 98.0, 12: 208.0}
"""MAAC's reported advantage of its attention critic over the best baseline, whose critic concatenates
(MADDPG with SAC-style updates), on Cooperative Treasure Collection: the improvement of the average reward
"normalized by the range of rewards attained in the environment", in percent, by the number of agents
(Iqbal & Sha 2019, table 3); :func:`maac_improvement` computes it."""

MAAC_MS = (4, 8, 12)
"""The m of MAAC's scaling experiment (its table 3), where the book runs MAAC itself."""

MAAC_CONFIGS = {(m, critic): f"maac-treasure{m}-{critic}" for m in MAAC_MS for critic in ("concat", "attention")}
"""The config behind each MAAC point (m, critic): MAAC's attention critic or its MADDPG+SAC concatenation
critic, trained by :mod:`attnmarl.algos.maac` with the same budget."""

MAAC_LONG_CONFIGS = {(4, critic): f"maac-treasure4-long-{critic}" for critic in ("concat", "attention")}
"""Chapter 10's exercise 4, "Is it the budget?": the m = 4 point trained for three times the env steps
(``maac-treasure4-long-{critic}``, 1.5 million); only the budget differs from :data:`MAAC_CONFIGS`."""

SCALE_MS = (3, 6, 9, 12)
"""The m of the scaling experiment on simple_spread (N = m)."""

TREASURE_MS = (4, 8, 12)
"""The m of the scaling experiment on collect_treasure (m − 2 collectors and 2 deposits), MAAC's sizes."""

SCALE_CONFIGS = {
    **{("simple_spread", m, actor): (f"pi-spread6-{actor}" if m == 6 else f"scale-spread{m}-{actor}")
       for m in SCALE_MS for actor in ("flat", "entity")},
    **{(scenario, m, "mean"): f"scale-{task}{m}-entity-mean"
       for scenario, task, ms in (("simple_spread", "spread", SCALE_MS), ("collect_treasure", "treasure", TREASURE_MS))
       for m in ms},
    **{("collect_treasure", m, actor): f"scale-treasure{m}-{actor}"
       for m in TREASURE_MS for actor in ("flat", "entity")},
}
"""The config behind each point (scenario, m, design), every one with the self-attention critic and 12 million
agent-decisions (m x env steps). The designs: ``"flat"``, ``"entity"`` (the entity actor, attention) and
``"mean"`` (the entity actor with alpha uniform, mean pooling: the control)."""

SEEDS = {("simple_spread", m, design): 10 for m in (6, 12) for design in ("entity", "mean", "flat")}
"""Seeds per point (scenario, m, design) where the designs are compared most closely: the entity actor, its
mean-pooling control and the flat actor at m = 6 and 12 on simple_spread ran seeds 0-9, for bootstrap intervals
over seeds that can back an answer; every other point has seeds 0-2."""


def seeds_at(scenario: str, m: int, design: str) -> int:
    """How many seeds (0, 1, ...) the point (scenario, m, design) of :data:`SCALE_CONFIGS` ran."""
    return SEEDS.get((scenario, m, design), 3)


CRITIC_MS = (4, 12)
"""The m of MAAC's critic comparison on collect_treasure: MAAC's smallest and largest teams."""

CRITIC_CONFIGS = {
    (m, critic): f"scale-treasure{m}-flat" if critic == "attention" else f"critic-treasure{m}-concat"
    for m in CRITIC_MS for critic in ("concat", "attention")
}
"""MAAC's comparison on collect_treasure, the config behind each point (m, critic): the flat actor with
chapter 7's concatenation critic or with the self-attention critic (the latter is the scaling experiment's
flat point), the same budget and PPO settings."""

CURRICULUM = {m: f"curriculum-spread{m}-entity" for m in CURRICULUM_MS}
"""The stages of the curriculum over m, in order (m: config): each starts from the previous stage's actor."""


def _folder(name: str) -> str:
    """The asset folder of a config's runs: chapter 8's ``policy``, the mean-pooling control's ``ablation``, or
    ``scale``."""
    return "policy" if name.startswith("pi-") else "ablation" if name.endswith("-entity-mean") else "scale"


def scale_runs(m: int, actor: str, scenario: str = "simple_spread") -> list[dict[str, Any]]:
    """The shipped runs (every seed) of the scaling point (scenario, m, actor), as their asset index lists them."""
    if (scenario, m, actor) not in SCALE_CONFIGS:
        raise ValueError(f"no scaling point ({scenario!r}, m={m}, actor={actor!r}); "
                         f"the points are {sorted(SCALE_CONFIGS)}")
    name = SCALE_CONFIGS[scenario, m, actor]
    return shipped_runs(_folder(name), name)


def critic_runs(m: int, critic: str) -> list[dict[str, Any]]:
    """The shipped runs (every seed) of MAAC's comparison at m agents with the ``critic`` ("concat" or
    "attention"), as their asset index lists them."""
    if (m, critic) not in CRITIC_CONFIGS:
        raise ValueError(f"no critic comparison at (m={m}, critic={critic!r}); the points are {sorted(CRITIC_CONFIGS)}")
    return shipped_runs("scale", CRITIC_CONFIGS[m, critic])


def maac_runs(m: int, critic: str, long: bool = False) -> list[dict[str, Any]]:
    """The shipped runs (every seed) of MAAC itself at m agents with the ``critic`` ("concat" or
    "attention"), as the ``maac`` asset index lists them; with ``long``, the runs of three times the budget
    (:data:`MAAC_LONG_CONFIGS`, m = 4 only)."""
    configs = MAAC_LONG_CONFIGS if long else MAAC_CONFIGS
    if (m, critic) not in configs:
        raise ValueError(f"no {'long ' if long else ''}MAAC run at (m={m}, critic={critic!r}); the points are "
                         f"{sorted(configs)}")
    return shipped_runs("maac", configs[m, critic])


def maac_improvement(with_attention: float, without: float, bottom: float) -> float:
    """MAAC's measure (its table 3): the relative improvement of the normalized average reward,
    (n_a - n_c) / n_c with n = (R - bottom) / (top - bottom), which is (R_a - R_c) / (R_c - bottom): the
    top of the range cancels, the bottom does not. MAAC does not say which bottom it used ("the range of
    rewards attained in the environment"); the book takes the random team's return. Undefined (a
    ``ValueError``) when the concatenation critic's return is not above the bottom."""
    with_attention, without, bottom = (check_real(name, value) for name, value in
                                       (("with_attention", with_attention), ("without", without), ("bottom", bottom)))
    if without <= bottom:
        raise ValueError(f"MAAC's measure divides by the concatenation critic's return above the bottom of the "
                         f"range, {without:.3f} - {bottom:.3f} <= 0: undefined")
    gain = (with_attention - without) / (without - bottom)
    if not math.isfinite(gain):
        raise ValueError(f"MAAC's measure overflows: ({with_attention:.3g} - {without:.3g}) / ({without:.3g} - "
                         f"{bottom:.3g}) is beyond a float's range; the returns are not on one scale")
    return gain


def curriculum_curve(seed: int) -> dict[str, np.ndarray]:
    """One seed's curriculum as one learning curve: the rows of the three stages in order, with
    ``agent_decisions`` (m x env steps, summed over the stages so far), ``m`` (the stage's team size),
    ``cpu_seconds`` summed over the stages, and each stage's own columns (``eval_return`` is at that m)."""
    parts, decisions, cpu = [], 0.0, 0.0
    for m, name in CURRICULUM.items():
        curve = scale_curve(name, seed)
        parts.append({"agent_decisions": decisions + m * curve["env_steps"], "m": np.full(len(curve["env_steps"]), m),
                      "cpu_seconds": cpu + curve["cpu_seconds"], "env_steps": curve["env_steps"],
                      "eval_return": curve["eval_return"], "eval_sem": curve["eval_sem"],
                      "eval_episodes": curve["eval_episodes"]})
        decisions, cpu = parts[-1]["agent_decisions"][-1], parts[-1]["cpu_seconds"][-1]
    return {key: np.concatenate([part[key] for part in parts]) for key in parts[0]}


def scale_curve(name: str, seed: int) -> dict[str, np.ndarray]:
    """The learning curve of a run of this chapter (``scale-*``, ``finetune-*``) or of the m = 6 point."""
    return shipped_curve(_folder(name), name, seed)


def scale_checkpoint(name: str, seed: int = 0) -> Path:
    """Path of a shipped checkpoint of this chapter (or of the m = 6 point)."""
    return shipped_checkpoint(_folder(name), name, seed)


def transfer_table(filename: str, folder: str = "scale") -> dict[str, Any]:
    """A JSON written by ``python -m attnmarl.transfer``, with its m keys (strings in JSON) as ints."""
    data = shipped_table(folder, filename)
    data["baselines"] = {int(m): b for m, b in data["baselines"].items()}
    for run in data["runs"]:
        run["scores"] = {int(m): s for m, s in run["scores"].items()}
    return data


def zero_shot_results(filename: str = "zero-shot.json") -> dict[str, Any]:
    """A zero-shot table of simple_spread: ``baselines[m]`` (random and greedy [mean, sem]), ``runs``
    (each with ``trained_m`` and ``scores[m]`` = [mean, sem]), ``episodes``, ``command`` and ``cpu_seconds``.
    ``zero-shot.json`` holds chapter 8's m = 6 entity actor, ``zero-shot-curriculum.json`` the curriculum's
    last stage."""
    return transfer_table(filename)


FAR_TABLES = ("zero-shot-mean.json", "zero-shot-large.json")
"""``assets/ablation``'s zero-shot tables of the m = 6 actors with attention and with mean pooling: m = 2 to 16 on
200 episodes, and m = 24, 32, 48 on 50 (an episode at m = 48 takes about a second on mpe2)."""


def far_zero_shot() -> dict[str, Any]:
    """The two tables of :data:`FAR_TABLES` as one: ``baselines[m]`` (random, greedy and steered [mean, sem]),
    ``episodes[m]``, and ``shares[run]``, an array (seeds, m) of the share of the random → greedy range each
    seed of ``run`` (``policy/pi-spread6-entity``, ``ablation/scale-spread6-entity-mean``) closes at each m of
    ``ms``, in percent."""
    tables = [transfer_table(name, "ablation") for name in FAR_TABLES]
    baselines = {m: b for t in tables for m, b in t["baselines"].items()}
    ms = sorted(baselines)
    scores: dict[str, dict[int, dict[int, float]]] = {}
    for table in tables:
        for run in table["runs"]:
            for m, (mean, _) in run["scores"].items():
                scores.setdefault(run["run"], {}).setdefault(run["seed"], {})[m] = mean
    shares = {name: 100 * np.array([[closed_share(seeds[seed][m], baselines[m]["random"][0], baselines[m]["greedy"][0])
                                     for m in ms] for seed in sorted(seeds)])
              for name, seeds in scores.items()}
    return {"ms": ms, "baselines": baselines, "shares": shares,
            "episodes": {m: t["episodes"] for t in tables for m in t["baselines"]}}


def treasure_baselines() -> dict[str, Any]:
    """collect_treasure's baselines at :data:`TREASURE_MS`: ``baselines[m]`` (random and the treasure-hunter
    script as "greedy", [mean, sem]), ``episodes``, ``command`` and ``cpu_seconds``."""
    return transfer_table("treasure-baselines.json")


def continuous_baselines() -> dict[str, Any]:
    """simple_spread's random and greedy baselines with continuous forces at m = 3 and 6 (``baselines[m]``,
    [mean, sem] over 200 episodes): the range on which the book reads its continuous-action designs (the
    centralized policies μ of chapter 8 and the Q critics of chapter 9), in chapter 10's table and the synthesis."""
    return transfer_table("continuous-baselines.json")


def parameter_counts(ms: list[int], config: MAPPOConfig | None = None) -> dict[str, list[int]]:
    """Parameters of every actor and critic design at each m of simple_spread, built by
    :func:`attnmarl.algos.mappo.make_agent` with the book's settings (``config``, default
    ``MAPPOConfig()``): ``{"flat actor": [...], ..., "attention critic": [...]}``, one count per m."""
    config = config or MAPPOConfig()
    counts: dict[str, list[int]] = {}
    for m in ms:
        base = replace(config, scenario="simple_spread", scenario_kwargs={"N": m})
        for actor in ("flat", "concat", "attention", "entity"):
            agent = make_agent(replace(base, actor=actor))
            counts.setdefault(f"{actor} actor", []).append(sum(p.numel() for p in agent.actor.parameters()))
        for critic in ("concat", "attention"):
            agent = make_agent(replace(base, critic=critic))
            counts.setdefault(f"{critic} critic", []).append(sum(p.numel() for p in agent.critic.parameters()))
    return counts


def attention_concentration(agent: MAPPOAgent, config: MAPPOConfig, episodes: int = 5,
                            top: int = 3) -> dict[str, np.ndarray]:
    """How concentrated a trained entity actor's alpha is, per head, over every step and agent of
    ``episodes`` greedy mpe2 episodes (seeds 0, 1, ...) of simple_spread:

    - ``effective``: exp(entropy of alpha), the number of entities the weight is effectively spread
      over (1 for a one-hot alpha, ``n_entities`` = 2m for a uniform one);
    - ``top_share``: the share of the weight on the ``top`` most-attended entities (``top / 2m`` if uniform);
    - ``max``: the largest single weight. Each is an array with one value per head.
    """
    if config.scenario != "simple_spread" or not isinstance(agent.actor, EntityActor):
        raise ValueError("attention_concentration is defined for the entity actor on simple_spread")
    top = check_int("top", top)
    check_episodes("episodes", episodes)  # 0 was numpy's 'need at least one array to concatenate'
    alpha = np.concatenate([policy_alpha(agent, config, trained_episode(agent, config, seed).obs).alpha
                            for seed in range(episodes)])  # (steps, l, m, 2m)
    ranked = -np.sort(-alpha, axis=-1)
    return {"effective": np.exp(alpha_entropy(alpha)).mean((0, 2)),
            "top_share": ranked[..., :top].sum(-1).mean((0, 2)), "max": ranked[..., 0].mean((0, 2)),
            "n_entities": alpha.shape[-1]}


def pad_spread_tokens(tokens: Tensor, m_max: int, fill: float = 0.0) -> tuple[Tensor, Tensor]:
    """simple_spread entity tokens of m agents (batch, m, 2m, d_tokens), as :class:`EntityActor` builds
    them (self, m landmarks, m - 1 others), placed into the 2 m_max token slots of an m_max-agent team:
    self in slot 0, the landmarks in slots 1..m, the other agents in slots m_max + 1 ... The empty slots
    hold ``fill``. Returns the padded tokens (batch, m, 2 m_max, d_tokens) and the mask (batch, m, 2 m_max),
    True on real tokens, for :meth:`EntityAttention.forward`."""
    if not isinstance(tokens, Tensor) or tokens.dim() != 4:
        shape = tuple(tokens.shape) if isinstance(tokens, Tensor) else type(tokens).__name__
        raise ValueError(f"tokens must be a tensor of shape (batch, m, 2m, d_tokens), as EntityActor builds them; "
                         f"got {shape}")
    batch, m, n, d_tokens = tokens.shape
    check_int("m_max", m_max)
    check_numbers("the padded tokens", ("batch", batch), ("m", m), ("2 m_max", 2 * m_max), ("d_tokens", d_tokens),
                  minimum=0)
    fill = check_real("fill", fill)  # NaN in the empty slots would be refused by the attention that reads them
    if n != 2 * m:
        raise ValueError(f"simple_spread tokens of {m} agents number 2m = {2 * m}, not {n}")
    if m_max < m:
        raise ValueError(f"cannot pad the tokens of {m} agents into a team of m_max = {m_max}")
    slots = [0, *range(1, m + 1), *range(m_max + 1, m_max + m)]
    padded = tokens.new_full((batch, m, 2 * m_max, d_tokens), fill)
    padded[:, :, slots] = tokens
    mask = torch.zeros(batch, m, 2 * m_max, dtype=torch.bool)
    mask[:, :, slots] = True
    return padded, mask
