"""The Q-network chapter's shipped results and its explorer: what a trained self-attention Q critic
(fig. 17.9) attends to over an mpe2 episode, and how q_hat^i answers when another agent's action changes.

- :func:`qnet_runs`, :func:`qnet_curve`, :func:`qnet_checkpoint` read the MADDPG agents and learning
  curves shipped in ``attnmarl/assets/qnet`` (made by ``python -m attnmarl.train``; listed in its
  ``index.json``), and :func:`tag_versus` the simple_tag teams of every seed against fixed opponents
  (made by ``python -m attnmarl.versus``);
- :func:`q_alpha` runs the Q critic on a recorded episode with the actions mu(o^i) the actors took;
- :func:`force_response` sweeps one agent's force over a grid, the others' actions fixed, and
  returns how q_hat^i changes;
- :func:`q_episode_explorer` steps through an episode: the arena ringed by alpha^i, alpha^i per head,
  and q_hat^i over agent j's force; a force clicked in that grid is set as j's action (:func:`set_force`).
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...algos.maddpg import MADDPGAgent, MADDPGConfig, force_to_action
from ...checkpoints import shipped_checkpoint, shipped_curve, shipped_runs, shipped_table
from ...checks import check_index, check_real
from ...nets import AttentionQ
from ..viz import Frame, Heatmap, Text, frame_spec
from ..widgets import Dropdown, Explorer, PageModel, Range, Slider
from .mpe import Episode, arena_panel, check_step, choice_label
from .value import trained_episode

__all__ = ["qnet_runs", "qnet_curve", "qnet_checkpoint", "tag_versus", "q_alpha", "FORCE_GRID", "force_response",
           "change_scale", "set_force", "q_episode_frame", "q_page_data", "q_episode_explorer", "FINE_FORCE_GRID"]

FORCE_GRID = np.linspace(-1.0, 1.0, 5)
"""The forces F_x, F_y the explorer tries for agent j (F^j in [-1, 1]^2, the book's notation; mpe2 scales it by the
agent's sensitivity)."""


FINE_FORCE_GRID = np.round(np.linspace(-1.0, 1.0, 21), 10)
"""The landscape an explorer draws when it runs in the page (or in a kernel): agent j's force in steps of 0.1."""


J_FORCE = ("as taken", "set to F_x, F_y")
"""The explorer's choices for agent j's action: the one its actor took, or the force the reader set."""


def qnet_runs() -> list[dict[str, Any]]:
    """Every shipped run of the Q-network chapter (:func:`attnmarl.checkpoints.shipped_runs`)."""
    return shipped_runs("qnet")


def qnet_curve(name: str, seed: int) -> dict[str, np.ndarray]:
    """The learning curve of one shipped run (:func:`attnmarl.checkpoints.shipped_curve`)."""
    return shipped_curve("qnet", name, seed)


def qnet_checkpoint(name: str, seed: int = 0) -> Path:
    """Path of a shipped checkpoint (:func:`attnmarl.checkpoints.shipped_checkpoint`)."""
    return shipped_checkpoint("qnet", name, seed)


def tag_versus() -> dict[str, Any]:
    """The simple_tag teams of every seed, each role against the chase script and a random team
    (``tag-versus.json``, written by :mod:`attnmarl.versus`): ``references`` (the script and the random
    team) and ``runs`` (``run``, ``seed``), each ``{role: {opponent: [mean, sem]}}``; also ``episodes``,
    ``command`` and ``cpu_seconds``."""
    return shipped_table("qnet", "tag-versus.json")


def _attention_critic(agent: MADDPGAgent) -> AttentionQ:
    if not isinstance(agent.critic, AttentionQ):
        raise ValueError(f"alpha needs a self-attention Q critic; this agent has a {type(agent.critic).__name__}")
    return agent.critic


def q_alpha(agent: MADDPGAgent, episode: Episode) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The Q critic on every step of an episode, with the actions a^i = mu(o^i) the actors took: q_hat
    (T + 1, m), the first attention block's alpha (T + 1, l, m, m) and the actions (T + 1, m, 5)."""
    critic = _attention_critic(agent)
    with torch.no_grad():
        o = torch.from_numpy(episode.obs)
        a = agent.mu(o)
        q_hat, alphas = critic.values_and_alpha(o, a)
    return q_hat.numpy(), alphas[0].numpy(), a.numpy()


def force_response(agent: MADDPGAgent, o: np.ndarray, a: np.ndarray, i: int, j: int,
                   grid: np.ndarray = FORCE_GRID) -> np.ndarray:
    """q_hat^i when agent j pushes with force (F_x, F_y) for every F_x, F_y in ``grid`` and every other agent
    keeps its action in ``a`` (m, 5); o is (m, obs_dim). Returns (len(grid), len(grid)): row = F_y
    from the top (largest first), column = F_x."""
    m = a.shape[0]
    i, j = check_index("i", i, m, "agent index"), check_index("j", j, m, "agent index")
    grid, a = np.asarray(grid, dtype=float), np.asarray(a)
    if grid.ndim != 1 or not grid.size or not (np.isfinite(grid).all() and np.abs(grid).max() <= 1.0):
        raise ValueError(f"grid must be forces in [-1, 1] (each a difference of two action entries in [0, 1]); got "
                         f"{grid!r:.80}")
    if not (np.isfinite(a).all() and a.min() >= 0.0 and a.max() <= 1.0):
        raise ValueError("a must hold mpe2's continuous actions, every entry in [0, 1]; got values from "
                         f"{np.nanmin(a):g} to {np.nanmax(a):g}")
    ux, uy = np.meshgrid(grid, grid[::-1])
    forces = torch.tensor(np.stack([ux.ravel(), uy.ravel()], -1), dtype=torch.float32)
    actions = torch.from_numpy(a).float().expand(len(forces), -1, -1).clone()
    actions[:, j] = force_to_action(forces)
    with torch.no_grad():
        q = agent.q_hat(torch.from_numpy(o).float().expand(len(forces), -1, -1), actions)[:, i]
    return q.numpy().reshape(ux.shape)


def _force_of(a: np.ndarray) -> tuple[float, float]:
    """The force (F_x, F_y) = (a_2 - a_1, a_4 - a_3) of one mpe2 continuous action."""
    return float(a[2] - a[1]), float(a[4] - a[3])


def change_scale(change: np.ndarray, floor: float = 0.01) -> float:
    """The half-width of a symmetric colour scale for changes of q_hat: the largest |change|, rounded up
    to 1, 2 or 5 times a power of ten (at least ``floor``), so that white is "no change" and the
    largest change is a full colour, however small the changes are."""
    check_real("floor", floor, 0.0, low_open=True)
    change = np.asarray(change, dtype=float)
    if change.size == 0:
        raise ValueError("change holds no values; the colour scale needs at least one change of q_hat")
    if not np.isfinite(change).all():
        raise ValueError(f"change holds {int(np.isnan(change).sum())} NaN and {int(np.isinf(change).sum())} infinite "
                         "value(s); a colour scale needs finite changes of q_hat")
    largest = max(float(np.abs(change).max()), floor)
    power = 10.0 ** np.floor(np.log10(largest))
    return float(next(k * power for k in (1, 2, 5, 10) if k * power >= largest * (1 - 1e-9)))


def set_force(agent: MADDPGAgent, o: np.ndarray, a: np.ndarray, j: int, force: tuple[float, float]) -> tuple[
        np.ndarray, np.ndarray]:
    """The Q critic on one step (o (m, obs_dim), actions a (m, 5)) with agent j's action replaced by the one that
    pushes with ``force`` (F_x, F_y in [-1, 1]): q_hat (m,) and the first block's alpha (l, m, m). What chapter 9's
    explorer shows when the reader clicks a force in the grid."""
    fx, fy = (check_real(name, v, -1.0, 1.0) for name, v in (("F_x", force[0]), ("F_y", force[1])))
    actions = torch.from_numpy(np.asarray(a)).float().clone()
    actions[j] = force_to_action(torch.tensor([fx, fy]))
    with torch.no_grad():
        q_hat, alphas = _attention_critic(agent).values_and_alpha(torch.from_numpy(o).float()[None], actions[None])
    return q_hat[0].numpy(), alphas[0][0].numpy()


def q_episode_frame(agent: MADDPGAgent, episode: Episode, q_hat: np.ndarray, alpha: np.ndarray, actions: np.ndarray,
                    t: int = 0, i: int = 0, j: int = 1, grid: np.ndarray = FORCE_GRID,
                    force: tuple[float, float] | None = None) -> Frame:
    """Step ``t`` of an episode seen by agent ``i``'s Q critic: the arena ringed by alpha^i (mean of the
    heads), alpha^i per head, and q_hat^i over ``grid`` x ``grid`` forces of agent ``j`` (the others' actions as
    taken; the cells carry numbers up to a 7 x 7 grid). With ``force`` (F_x, F_y), agent j pushes with that force
    instead of its own action (:func:`set_force`): the rings, alpha^i and the values are the critic's then; the
    grid still shows the change from q_hat^i with the actions taken."""
    t = check_step(episode, t)
    m = len(episode.agents)
    i, j = check_index("i", i, m, "agent index"), check_index("j", j, m, "agent index")
    q_now, alpha_now = (q_hat[t], alpha[t]) if force is None else set_force(agent, episode.obs[t], actions[t], j, force)
    arena = arena_panel(episode, t, focus=i)
    names = list(arena.labels[:m])
    weights = alpha_now.mean(0)[i]
    arena = replace(arena, emphasis=list(weights) + [0.0] * (len(arena.labels) - m),
                    title=f"t = {t}: rings = α of q̂ of {names[i]}")
    rows = [f"head {h + 1}" for h in range(alpha.shape[1])] + ["mean"]
    per_head = Heatmap(np.vstack([alpha_now[:, i], weights]), rows, names, title=f"α of q̂ of {names[i]}",
                       xlabel="key: agent j", ylabel="head")
    response = force_response(agent, episode.obs[t], actions[t], i, j, grid)
    labels = [f"{f:+.1f}" for f in grid]
    taken = _force_of(actions[t, j])
    change = response - q_hat[t, i]
    reach = change_scale(change)
    sweep = Heatmap(change, labels[::-1], labels,
                    title=f"q̂ of {names[i]} − as taken, {names[j]}'s force varied",
                    xlabel=f"{names[j]}'s force F_x", ylabel="F_y", vmin=-reach, vmax=reach, cmap="RdBu_r",
                    annotate=len(grid) <= 7)
    spread = float(response.max() - response.min())
    lines = [f"{'*' if k == i else ' '} q̂ of {n}: {v:7.2f}" for k, (n, v) in enumerate(zip(names, q_now))]
    values = Text("\n".join(lines),
                  title="q̂ with the actions taken" if force is None else f"q̂ with {names[j]}'s force set")
    pushed = (f"{names[j]} pushed with F = ({taken[0]:+.2f}, {taken[1]:+.2f})" if force is None else
              f"{names[j]}'s force set to F = ({force[0]:+.2f}, {force[1]:+.2f}) (it pushed with "
              f"({taken[0]:+.2f}, {taken[1]:+.2f}))")
    return Frame([arena, per_head, sweep, values],
                 caption=f"step {t}: {pushed}; over the grid of its forces q̂ of {names[i]} spans {spread:.2f}; "
                         f"α of {names[i]} on {names[j]}: {weights[j]:.2f} (uniform {1 / m:.2f})")


def _array(x: Any) -> list:
    return np.asarray(x.detach() if isinstance(x, torch.Tensor) else x, dtype=np.float64).tolist()


def q_page_data(agent: MADDPGAgent, episode: Episode, actions: np.ndarray, grid: np.ndarray) -> dict[str, Any]:
    """What the page computes :func:`q_episode_frame` from (``static/live.js``, model ``qEpisode``): the episode's
    observations and the actions mu(o) the actors took, the Q critic's weights, the arena at every step, the
    names and the force grid. One agent type only (simple_spread, as chapter 9 shows it)."""
    critic = _attention_critic(agent)
    if len(set(critic.agent_types)) != 1:
        raise ValueError(f"the in-page Q explorer runs one agent type; this critic has types {critic.agent_types}")
    phi = [layer for layer in critic.phi if isinstance(layer, torch.nn.Linear)]
    return {
        "obs": _array(episode.obs), "actions": _array(actions), "grid": [float(f) for f in grid],
        "phi": [{"W": _array(layer.weight), "b": _array(layer.bias)} for layer in phi],
        "blocks": [{"W_q": _array(b.attention.W_q), "W_k": _array(b.attention.W_k), "W_v": _array(b.attention.W_v),
                    "fc_W": _array(b.fc.weight), "fc_b": _array(b.fc.bias)} for b in critic.blocks],
        "heads": {"W1": _array(critic.heads.hidden.W), "b1": _array(critic.heads.hidden.b),
                  "W2": _array(critic.heads.out.W), "b2": _array(critic.heads.out.b)},
        "arenas": [frame_spec(Frame([arena_panel(episode, t)]), digits=12)["panels"][0]
                   for t in range(episode.steps + 1)],
        "choices": [choice_label(a) for a in episode.agents],
    }


def q_episode_explorer(agent: MADDPGAgent, config: MADDPGConfig, seed: int = 0) -> Explorer:
    """Step through one mpe2 episode of a trained MADDPG agent; choose agent i (whose q_hat) and agent j
    (whose force is varied). With one agent type the Q critic also runs in the page of the built book, over
    :data:`FINE_FORCE_GRID`, where a click on the grid sets j's force (the controls ``force``, ``fx``, ``fy``, which a
    kernel offers too); otherwise it shows frames precomputed over :data:`FORCE_GRID`, with j's action as taken."""
    critic = _attention_critic(agent)
    episode = trained_episode(agent, config, seed)
    q_hat, alpha, actions = q_alpha(agent, episode)
    agents = [choice_label(a) for a in episode.agents]
    in_page = len(set(critic.agent_types)) == 1
    grid = FINE_FORCE_GRID if in_page else FORCE_GRID

    def frame(t: int = 0, i: str = agents[0], j: str = agents[1 % len(agents)], force: str = J_FORCE[0],
              fx: float = 0.0, fy: float = 0.0) -> Frame:
        return q_episode_frame(agent, episode, q_hat, alpha, actions, t, agents.index(i), agents.index(j), grid,
                               None if force == J_FORCE[0] else (fx, fy))

    force = [Dropdown("force", list(J_FORCE), label="j's action (click the grid to set it)", static=[J_FORCE[0]]),
             Range("fx", -1.0, 1.0, 0.1, default=0.0, label="F_x"),
             Range("fy", -1.0, 1.0, 0.1, default=0.0, label="F_y")]
    return Explorer(frame, [
        Slider("t", list(range(episode.steps + 1)), default=0, label="step t"),
        Dropdown("i", agents, label="agent i (whose q̂)"),
        Dropdown("j", agents, default=agents[1 % len(agents)], label="agent j (force varied)"),
        *(force if in_page else []),
    ], title=f"The self-attention Q critic over one mpe2 episode ({config.scenario}, seed {seed})",
        page=PageModel("qEpisode", lambda: q_page_data(agent, episode, actions, grid),
                       "the trained Q critic runs here, in JavaScript, on its exported weights, over a 21 x 21 grid of "
                       "forces (held to PyTorch within 1e-5 by the book's tests).") if in_page else None)
