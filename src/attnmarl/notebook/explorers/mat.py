"""Chapter 13's shipped results and its explorer of a Multi-Agent Transformer team.

- :func:`mat_name` names the config behind a point (m, design): MAT, MAT-Dec, MAT trained in shuffled orders
  (:data:`MAT_DESIGNS`), or chapter 10's entity actor with MAPPO at the same budget (``"entity"``);
- :func:`mat_runs` reads a point's shipped runs (``attnmarl/assets/mat``; the entity actor's from chapter 10's
  folders) and :func:`mat_shares` their final mpe2 scores as shares (%) of simple_spread's random → greedy range;
  :func:`mat_curve` one seed's learning curve, and :func:`mat_table` the zero-shot and decision-order tables;
- :func:`mat_decoy_runs` and :func:`mat_decoy_shares` do the same at chapter 12's decisive point (:data:`DECOY_POINT`,
  simple_spread with three decoys per agent at m = 6), where MAT and MAT-Dec meet chapter 12's five actors;

In one recorded mpe2 episode, step by step, the explorer shows how much each agent's choice draws on the actions of
the agents that decided before it, and where the encoder's attention lands:

- :func:`mat_episode` plays and records one simple_spread episode with a MAT agent (:mod:`attnmarl.algos.mat`),
  greedily and in agent order, as its evaluation does;
- :func:`encoder_alpha` is the first encoder block's alpha over the m agent tokens, averaged over heads;
- :func:`mat_frame` draws step t for agent i: the arena with each earlier agent ringed by its influence on agent
  i's policy (:func:`attnmarl.analysis.action_influence`), the whole influence matrix and the encoder's alpha;
- :func:`mat_explorer` puts the frames behind two sliders, the step and the agent.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import torch
from torch import Tensor

from ...algos.mat import MATAgent, MATConfig
from ...analysis import action_influence, nearest_landmarks
from ...checkpoints import agent_policy, config_runs, shipped_curve, shipped_table
from ...checks import check_index, check_int, check_real, check_seed
from ...nets.mat import MultiAgentTransformer
from ...train import DECOY_DESIGNS
from ...transfer import closed_share
from ..viz import Frame, Heatmap
from ..widgets import Dropdown, Explorer, Slider
from .decoys import DECOY_POINT, decoy_run_shares, decoy_runs
from .mpe import Episode, arena_panel, check_step, record_episode
from .scale import SCALE_CONFIGS, scale_curve, scale_runs, transfer_table, zero_shot_results

__all__ = ["FOLDER", "MAT_MS", "SHIPPED_MAT_MS", "SHUFFLED_MAT_MS", "MAT_DESIGNS", "mat_name", "mat_runs",
           "mat_shares", "mat_curve", "DECOY_POINT", "MAT_DECOY_CONFIGS", "mat_decoy_runs", "mat_decoy_shares",
           "mat_range_share", "mat_zero_shot_shares", "mat_table", "mat_episode", "encoder_alpha", "NO_INFLUENCE",
           "mat_frame", "mat_explorer"]

FOLDER = "mat"
"""The asset folder of chapter 13's runs."""

MAT_MS = (3, 6, 12)
"""The team sizes chapter 13 trains at."""

SHIPPED_MAT_MS = (3, 6, 12)
"""The team sizes whose runs have shipped: every one of :data:`MAT_MS`, three seeds of MAT and MAT-Dec at each, and
of MAT in shuffled orders at :data:`SHUFFLED_MAT_MS`."""

SHUFFLED_MAT_MS = (3,)
"""The team sizes at which MAT trained in shuffled orders has shipped: the order ablation is run where every order
can be scored (six orders of three agents)."""

MAT_DESIGNS = {"mat": "mat-spread{m}", "matdec": "matdec-spread{m}", "shuffled": "mat-spread{m}-shuffled"}
"""Chapter 13's designs and their configs' names: MAT, MAT-Dec (its encoder as critic, decentralized actors) and
MAT trained with a random decision order per environment and rollout."""


def mat_name(m: int, design: str) -> str:
    """The config of the point (m, design): a :data:`MAT_DESIGNS` config, or for ``"entity"`` chapter 10's entity
    actor with MAPPO at the same budget (chapter 8's ``pi-spread6-entity`` at m = 6). ``ValueError`` for a point the
    chapter has no config for."""
    m = check_int("m", m)
    if m not in MAT_MS or design not in (*MAT_DESIGNS, "entity"):
        raise ValueError(f"no chapter 13 config for m = {m}, design {design!r}: the team sizes are {list(MAT_MS)} and "
                         f"the designs {[*MAT_DESIGNS, 'entity']}")
    return SCALE_CONFIGS["simple_spread", m, "entity"] if design == "entity" else MAT_DESIGNS[design].format(m=m)


def mat_runs(m: int, design: str) -> list[dict[str, Any]]:
    """The shipped runs (every seed, in seed order) of the point (m, design); ``ValueError`` naming the command that
    trains them if none has shipped."""
    name = mat_name(m, design)
    if design == "entity":
        return sorted(scale_runs(m, "entity"), key=lambda r: r["seed"])
    return config_runs(FOLDER, name)


def mat_shares(m: int, design: str) -> np.ndarray:
    """Each shipped seed's final mpe2 score (200 episodes) as a share (%) of simple_spread's random → greedy range
    at m (chapter 10's baselines)."""
    return mat_range_share(np.array([r["final_return"] for r in mat_runs(m, design)]), m)


MAT_DECOY_CONFIGS = {"mat": "mat-decoys3-spread6", "matdec": "matdec-decoys3-spread6"}
"""MAT's and MAT-Dec's configs at :data:`DECOY_POINT` (the budget of chapter 12's actors there, 2 million
env-steps)."""


def mat_decoy_runs(design: str) -> list[dict[str, Any]]:
    """The shipped runs (every seed, in seed order) at :data:`DECOY_POINT`: MAT's and MAT-Dec's from ``assets/mat``
    (``"mat"``, ``"matdec"``), or one of chapter 12's actors (``"entity"``, ``"mean"``, ``"flat"``, ``"oracle"``,
    ``"nobit"``) from ``assets/decoys``; ``ValueError`` for another design, or naming the command if none shipped."""
    if design in MAT_DECOY_CONFIGS:
        return config_runs(FOLDER, MAT_DECOY_CONFIGS[design])
    if design not in DECOY_DESIGNS:
        raise ValueError(f"no run at chapter 12's decisive point for design {design!r}: the designs are "
                         f"{[*MAT_DECOY_CONFIGS, *DECOY_DESIGNS]}")
    return decoy_runs(*DECOY_POINT, design)


def mat_decoy_shares(design: str) -> np.ndarray:
    """Each shipped seed's final score at :data:`DECOY_POINT` (mpe2 with decoys, 200 episodes) as a share (%) of
    chapter 12's random → greedy range there, the scale chapter 12 reads its own actors on."""
    return decoy_run_shares(mat_decoy_runs(design), *DECOY_POINT)


def mat_range_share(scores: Any, m: int) -> np.ndarray:
    """mpe2 scores at m (a number or an array) as shares (%) of simple_spread's random → greedy range there (chapter
    10's baselines, on the same 200 episode seeds as every shipped final score and order table)."""
    baselines = zero_shot_results()["baselines"][m]
    return 100 * closed_share(np.asarray(scores, dtype=float), baselines["random"][0], baselines["greedy"][0])


def mat_curve(m: int, design: str, seed: int) -> dict[str, np.ndarray]:
    """The learning curve of one shipped seed of the point (m, design) (:func:`attnmarl.checkpoints.shipped_curve`),
    with ``share``: each evaluation as a share (%) of simple_spread's random → greedy range at m, as
    :func:`mat_shares` reads the final scores."""
    name = mat_name(m, design)
    curve = dict(scale_curve(name, seed) if design == "entity" else shipped_curve(FOLDER, name, seed))
    curve["share"] = mat_range_share(curve["eval_return"], m)
    return curve


def mat_table(filename: str) -> dict[str, Any]:
    """A table of chapter 13 in ``assets/mat``: ``zero-shot.json`` (``python -m attnmarl.transfer``: the m = 3
    checkpoints at other m, its m keys as ints) or ``orders.json`` (``python -m attnmarl.orders``)."""
    return transfer_table(filename, FOLDER) if filename.startswith("zero-shot") else shipped_table(FOLDER, filename)


def mat_zero_shot_shares(filename: str = "zero-shot.json") -> dict[tuple[str, int], dict[int, float]]:
    """A zero-shot table of chapter 13 (:func:`mat_table`) as shares: ``{(run, seed): {m: share}}``, each score read
    against the table's own random → greedy range at that m (measured beside it, on the same episodes)."""
    table = mat_table(filename)
    base = table["baselines"]
    return {(r["run"], r["seed"]): {m: 100 * closed_share(s[0], base[m]["random"][0], base[m]["greedy"][0])
                                    for m, s in r["scores"].items()} for r in table["runs"]}


def mat_episode(agent: MATAgent, config: MATConfig, seed: int = 0) -> Episode:
    """One mpe2 episode of simple_spread (reset with ``seed``) played by ``agent`` at its config's m, greedily and
    in agent order, every step recorded."""
    if not isinstance(agent, MATAgent) or config.scenario != "simple_spread":
        raise ValueError(f"mat_episode plays a MAT agent on simple_spread; got a {type(agent).__name__} for "
                         f"{config.scenario!r}")
    return record_episode("simple_spread", check_seed(seed), agent_policy(agent, config, deterministic=True),
                          **config.scenario_kwargs)


def encoder_alpha(net: MultiAgentTransformer, o: Tensor) -> Tensor:
    """alpha of the first encoder block over the agent tokens x^1..x^m of ``o`` (batch, m, obs_dim), averaged over
    its heads: (batch, m, m), row i the weights of agent i's query over every agent (keys)."""
    x = net.tokens(o)
    with torch.no_grad():
        return net.encoder[0].attn.alpha(x, x).mean(1)


def _influence(net: MultiAgentTransformer, episode: Episode, t: int) -> tuple[Tensor, np.ndarray]:
    """Step t's observations (1, m, obs_dim) on the net's device and :func:`attnmarl.analysis.action_influence` at the
    actions the team decodes there, greedily: (m, m)."""
    weight = next(net.parameters())
    o = torch.as_tensor(episode.obs[t][None], dtype=weight.dtype, device=weight.device)
    with torch.no_grad():
        a = net.decode(o, lambda logits: logits.argmax(-1))[0]
    return o, action_influence(net, o, a)[0].cpu().numpy()


NO_INFLUENCE = 1e-3
"""A total variation below which :func:`mat_frame`'s caption says that no earlier action moves an agent's policy: a
thousandth of its probability, a twentieth of what chapter 13 measures on average."""


def mat_frame(net: MultiAgentTransformer, episode: Episode, t: int = 8, i: int = 1,
              vmax: float | None = None) -> Frame:
    """Step ``t`` of ``episode`` seen from agent ``i``: the arena with every earlier agent k ringed by how far agent
    i's policy moves when k's action changes (:func:`attnmarl.analysis.action_influence` at the actions the team
    decodes there, greedily), agent i ringed in black; that influence for every pair (rows: the agent deciding,
    columns: the earlier agent whose action changes); and the encoder's alpha (:func:`encoder_alpha`). Rings and
    colours run from 0 to ``vmax`` (a total variation; ``None``: this step's largest influence), so that frames
    drawn with one ``vmax`` compare."""
    if not isinstance(net, MultiAgentTransformer) or net.decoder is None:
        raise ValueError("mat_frame reads MAT's decoder; MAT-Dec has none (its agents read no earlier action)")
    t = check_step(episode, t)
    m = len(episode.agents)
    i = check_index("i", i, m, "agent index")
    if vmax is not None:
        vmax = check_real("vmax (a total variation)", vmax, 0.0, low_open=True)
    o, influence = _influence(net, episode, t)
    alpha = encoder_alpha(net, o)[0].cpu().numpy()
    nearest = nearest_landmarks(o, m)[0].tolist()
    names = [f"a{k + 1}" for k in range(m)]
    row = influence[i, :i]
    scale = max(float(influence.max()), 1e-12) if vmax is None else vmax
    arena = arena_panel(episode, t, focus=i, title=f"t = {t}: a{i + 1} and the agents before it")
    emphasis = np.zeros(len(arena.labels))
    emphasis[:i] = np.clip(row / scale, 0.0, 1.0)  # agents come first in the arena
    arena = replace(arena, emphasis=emphasis.tolist())
    title = f"how far a_i's policy moves with a_k's action (TV, 0–{scale:.2g})"
    later = np.triu(np.ones((m, m), bool))  # k >= i: not an earlier agent, no influence to read
    heat = Heatmap(influence, names, names, title=title, xlabel="earlier agent k", ylabel="agent i (deciding)",
                   vmax=scale, masked=later)
    enc = Heatmap(alpha, names, names, title="encoder α (mean over heads)", xlabel="agent (key)",
                  ylabel="agent (query)")
    if i == 0:
        caption = "a1 decides first: it reads no earlier action, only the encoder's view of the team"
    else:
        k = int(row.argmax())
        same = "the same landmark as" if nearest[k] == nearest[i] else "another landmark than"
        before = "a1" if i == 1 else f"a1…a{i}"
        if row[k] < NO_INFLUENCE:
            caption = (f"a{i + 1} decides after {before}, but no earlier action moves its policy here "
                       f"(the largest, a{k + 1}'s, by TV {row[k]:.1g})")
        else:
            caption = (f"a{i + 1} decides after {before}; its policy moves most with a{k + 1}'s action "
                       f"(TV {row[k]:.2g}), which is nearest {same} a{i + 1}")
    return Frame([arena, heat, enc], caption=caption)


def mat_explorer(net: MultiAgentTransformer, episode: Episode, steps: tuple[int, ...] = (0, 6, 12, 18, 24)
                 ) -> Explorer:
    """Choose a step of ``episode`` and an agent: whose earlier action its choice draws on (:func:`mat_frame`), every
    frame on one scale, from 0 to the largest influence over the steps offered."""
    for t in steps:
        check_step(episode, t)
    vmax = max(max(float(_influence(net, episode, t)[1].max()) for t in steps), 1e-12)

    first = steps[min(1, len(steps) - 1)]  # the second step offered: agents are on their way by then

    agents = [f"a{i + 1}" for i in range(len(episode.agents))]  # the arena's names
    second = agents[min(1, len(agents) - 1)]  # the first agent with an earlier action to draw on

    def frame(t: int = first, agent: str = second) -> Frame:
        return mat_frame(net, episode, t, agents.index(agent), vmax)

    return Explorer(frame, [Slider("t", list(steps), default=first, label="step t"),
                            Dropdown("agent", agents, default=second, label="agent (deciding)")],
                    title="Whose action a MAT agent's choice draws on")
