"""The value-network chapter's shipped results and its explorer: what a trained self-attention critic
attends to over an mpe2 episode.

- :func:`value_runs`, :func:`value_curve`, :func:`value_checkpoint` read the trained agents and
  learning curves shipped in ``attnmarl/assets/value`` (made by ``python -m attnmarl.train``; listed
  in its ``index.json``);
- :func:`trained_episode` plays one mpe2 episode with a trained agent's decentralized actors and keeps
  every observation and position; :func:`critic_alpha` runs the centralized critic on it;
- :func:`alpha_episode_explorer` shows, step by step, the arena with each agent ringed by the weight
  alpha^i_j that agent i's value gives it, next to the whole alpha matrix and the values v_hat^i;
- :func:`relevance` measures, over episodes, how the weight alpha^i_j and the sensitivity
  ||d v_hat^i / d o^j|| of a trained critic depend on the distance between agents i and j;
- :func:`probe_explorer` freezes one mpe2 state and lets the reader move one agent: the
  observations are recomputed (by the batched port, loaded with the mpe2 state) and the critic rerun.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ...algos.mappo import MAPPOAgent, MAPPOConfig
from ...analysis import value_sensitivity
from ...checkpoints import ASSETS, agent_policy, shipped_checkpoint, shipped_curve, shipped_runs
from ...checks import check_distributions, check_episodes, check_index, check_real, is_int
from ...envs import BatchedEnv, make_batched, make_reference, obs_to_array
from ...nets import AttentionCritic
from ..viz import Frame, Heatmap, Text, frame_spec
from ..widgets import Dropdown, Explorer, PageModel, Range, Slider
from .mpe import Episode, arena_panel, check_step, choice_label, record_episode, scenario_text, short_label

__all__ = ["VALUE_ASSETS", "freeze_state", "value_runs", "value_curve", "value_checkpoint", "agent_labels",
           "trained_episode", "critic_alpha", "alpha_statistics", "head_names", "select_head", "alpha_episode_frame",
           "alpha_episode_explorer", "relevance", "binned_mean", "Probe", "make_probe", "probe_values", "probe_frame",
           "probe_explorer"]

VALUE_ASSETS = ASSETS / "value"
"""Where the trained value-network agents and their learning curves are shipped."""


def value_runs() -> list[dict[str, Any]]:
    """Every shipped run of the value chapter (:func:`attnmarl.checkpoints.shipped_runs`)."""
    return shipped_runs("value")


def value_curve(name: str, seed: int) -> dict[str, np.ndarray]:
    """The learning curve of one shipped run (:func:`attnmarl.checkpoints.shipped_curve`)."""
    return shipped_curve("value", name, seed)


def value_checkpoint(name: str, seed: int = 0) -> Path:
    """Path of a shipped checkpoint (:func:`attnmarl.checkpoints.shipped_checkpoint`)."""
    return shipped_checkpoint("value", name, seed)


def agent_labels(config: MAPPOConfig) -> list[str]:
    """Short names of the agents of a run's scenario, as the arena labels them (``agent_0`` -> a1,
    ``adversary_1`` -> A2), in the order of the critic's rows and columns."""
    return [short_label(a) for a in make_reference(config.scenario, **config.scenario_kwargs).possible_agents]


def trained_episode(agent: MAPPOAgent, config: MAPPOConfig, seed: int = 0) -> Episode:
    """One mpe2 episode (reset with ``seed``) played by the agent's greedy decentralized actors,
    recorded step by step (:func:`attnmarl.notebook.explorers.mpe.record_episode`)."""
    return record_episode(config.scenario, seed, agent_policy(agent, config, deterministic=True),
                          **config.scenario_kwargs)


def critic_alpha(agent: MAPPOAgent, episode: Episode) -> tuple[np.ndarray, np.ndarray]:
    """The centralized critic on every step of an episode: v_hat (T + 1, m) in return units and the
    first attention block's alpha (T + 1, l, m, m) (row i: the weights of agent i's value)."""
    if not isinstance(agent.critic, AttentionCritic):
        raise ValueError(f"alpha needs a self-attention critic; this agent has a {type(agent.critic).__name__}")
    with torch.no_grad():
        v_normalized, alphas = agent.critic.values_and_alpha(torch.from_numpy(episode.obs))
        return agent.value_norm.denormalize(v_normalized).numpy(), alphas[0].numpy()


def alpha_statistics(alpha: np.ndarray) -> dict[str, float]:
    """How peaked and how query-specific attention weights ``alpha`` (..., m, m) are (for example
    :func:`relevance`'s ``alpha``, steps x heads x queries x keys); averages over everything but keys of

    - ``max_weight``: max_j alpha^i_j (``uniform`` = 1/m for comparison);
    - ``entropy``: the entropy of alpha^i divided by log m (1 = uniform, 0 = one agent only);
    - ``row_difference``: the total-variation distance between the rows of two agents i != i',
      (1/2) sum_j |alpha^i_j - alpha^i'_j| (0 = every agent's value weighs the others alike);
    - ``same_argmax``: how often row i's largest weight falls on the agent most rows pick (1 = every
      query attends to the same agent).
    """
    alpha = np.asarray(alpha, dtype=float)
    m = alpha.shape[-1] if alpha.ndim else 0
    if alpha.ndim < 2 or alpha.shape[-2] != m or m < 2 or alpha.size == 0:
        raise ValueError(f"alpha must have shape (..., m, m) with m >= 2 and at least one row; got {alpha.shape}")
    check_distributions("alpha", alpha)
    entropy = -(alpha * np.log(np.clip(alpha, 1e-12, None))).sum(-1) / np.log(m)
    pairs = 0.5 * np.abs(alpha[..., :, None, :] - alpha[..., None, :, :]).sum(-1)  # (..., m, m)
    argmax = alpha.argmax(-1)  # (..., m)
    majority = np.apply_along_axis(lambda keys: np.bincount(keys, minlength=m).argmax(), -1, argmax)
    return {"uniform": 1.0 / m, "max_weight": float(alpha.max(-1).mean()), "entropy": float(entropy.mean()),
            "row_difference": float(pairs.sum((-1, -2)).mean() / (m * (m - 1))),
            "same_argmax": float((argmax == majority[..., None]).mean())}


def alpha_episode_frame(episode: Episode, v_hat: np.ndarray, alpha: np.ndarray, t: int = 0, agent: int = 0,
                        head: str = "mean") -> Frame:
    """Step ``t`` of an episode seen by agent ``agent``'s value: the arena with every agent j ringed
    by alpha^i_j (head ``head``, or the mean over heads), the alpha matrix, and v_hat."""
    t = check_step(episode, t)
    m = len(episode.agents)
    agent = check_index("agent", agent, m, "agent index")
    weights = select_head(alpha[t], head)  # (m, m)
    arena = arena_panel(episode, t, focus=agent)
    names = list(arena.labels[:m])  # mpe2 lists the agents first among the world's entities
    emphasis = list(weights[agent]) + [0.0] * (len(arena.labels) - m)
    arena = replace(arena, emphasis=emphasis, title=f"t = {t}: rings = α of {names[agent]}'s value")
    title = "α (mean of heads)" if head == "mean" else f"α, head {head}"
    matrix = Heatmap(weights, names, names, title=title, xlabel="key: agent j", ylabel="query: value of i")
    values = Text("\n".join(f"v̂ of {n}: {v:7.2f}" for n, v in zip(names, v_hat[t])), title="values")
    return Frame([arena, matrix, values],
                 caption=f"step {t} of {episode.steps}: {names[agent]}'s value gives the most weight "
                         f"{_strongest(weights[agent], names)}; uniform would be {1 / m:.2f}")


def head_names(heads: int) -> list[str]:
    """The explorers' names of the choices of head: "mean" (of all heads), then "1" … "l"."""
    return ["mean"] + [str(h + 1) for h in range(heads)]


def select_head(alpha: np.ndarray, head: str | int) -> np.ndarray:
    """alpha (l, ...) of head ``head`` ("1" … "l", counted from 1 as the explorers label them; an int
    is taken as its string) or the mean over heads ("mean"). Anything else — "0", "-1" — raises
    ``ValueError`` instead of silently drawing another head under that label."""
    names = head_names(alpha.shape[0])
    name = str(head) if isinstance(head, (int, np.integer)) and not isinstance(head, bool) else head
    if name not in names:
        raise ValueError(f"head must be one of {names}; got {head!r}")
    return alpha.mean(0) if name == "mean" else alpha[int(name) - 1]


def _strongest(row: np.ndarray, names: list[str]) -> str:
    """The largest weight of an alpha row and who gets it, e.g. ``(0.91) to a1`` or, when weights
    tie within 0.005, ``(0.50 each) to a1 and a2``."""
    top = row.max()
    winners = [n for n, w in zip(names, row) if w > top - 0.005]
    if len(winners) == 1:
        return f"({top:.2f}) to {winners[0]}"
    return f"({top:.2f} each) to {', '.join(winners[:-1])} and {winners[-1]}"


def alpha_episode_explorer(agent: MAPPOAgent, config: MAPPOConfig, seed: int = 0) -> Explorer:
    """Step through one mpe2 episode of a trained agent and watch its critic's alpha."""
    episode = trained_episode(agent, config, seed)
    v_hat, alpha = critic_alpha(agent, episode)
    heads = head_names(alpha.shape[1])
    steps = list(range(episode.steps + 1))

    choices = [choice_label(a) for a in episode.agents]

    def frame(t: int = 0, agent_index: str = choices[0], head: str = "1") -> Frame:
        return alpha_episode_frame(episode, v_hat, alpha, t, choices.index(agent_index), head)

    return Explorer(frame, [
        Slider("t", steps, default=0, label="step t"),
        Dropdown("agent_index", choices, label="agent i (query)"),
        Dropdown("head", heads, default="1", label="head"),
    ], title=f"α of the self-attention critic over one mpe2 episode "
             f"({scenario_text(config.scenario, config.scenario_kwargs)}, seed {seed})")


def relevance(agent: MAPPOAgent, config: MAPPOConfig, episodes: int = 20) -> dict[str, np.ndarray]:
    """Where a trained critic puts its weight, over every step of ``episodes`` mpe2 episodes (seeds
    0, 1, ...) played by the agent's own actors. Returns, stacked over all steps (S in total):

    - ``distance`` (S, m, m): |p^i - p^j| between agents i and j (world units);
    - ``sensitivity`` (S, m, m): row i holds the shares S^i_j / sum_k S^i_k of the sensitivity
      S^i_j = ||d v_hat^i / d o^j|| (:func:`attnmarl.analysis.value_sensitivity`), for any critic;
    - ``alpha`` (S, l, m, m), for a self-attention critic only: the first block's alpha per head.

    Rows of ``sensitivity`` and ``alpha`` are in [0, 1] and sum to 1.
    """
    check_episodes("episodes", episodes)  # 10^6 would play mpe2 for many hours, holding every step
    parts: dict[str, list[np.ndarray]] = {"distance": [], "sensitivity": [], "alpha": []}
    for seed in range(episodes):
        episode = trained_episode(agent, config, seed)
        p = episode.positions[:, :len(episode.agents)]  # mpe2 lists the agents first among the entities
        parts["distance"].append(np.linalg.norm(p[:, :, None] - p[:, None, :], axis=-1))
        s = value_sensitivity(agent.critic, torch.from_numpy(episode.obs)).numpy()
        parts["sensitivity"].append(s / s.sum(-1, keepdims=True))
        if isinstance(agent.critic, AttentionCritic):
            parts["alpha"].append(critic_alpha(agent, episode)[1])
    return {key: np.concatenate(value) for key, value in parts.items() if value}


def binned_mean(x: np.ndarray, y: np.ndarray, edges: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Mean and standard error of ``y`` in the bins of ``x`` given by ``edges``, and each bin's
    count (bins with fewer than 2 points give NaN)."""
    x, y, edges = (np.asarray(v, dtype=float) for v in (x, y, edges))
    if x.shape != y.shape:
        raise ValueError(f"x and y must have the same shape; got {x.shape} and {y.shape}")
    for name, v in (("x", x), ("y", y), ("edges", edges)):
        if not np.isfinite(v).all():
            raise ValueError(f"{name} holds {int(np.isnan(v).sum())} NaN and {int(np.isinf(v).sum())} infinite "
                             "value(s); binned means need finite numbers")
    if edges.ndim != 1 or len(edges) < 2 or not (np.diff(edges) > 0).all():
        raise ValueError(f"edges must be at least 2 increasing numbers (the bins' bounds); got {edges.tolist()}")
    which = np.digitize(x, edges) - 1
    mean, sem, count = (np.full(len(edges) - 1, np.nan) for _ in range(3))
    for b in range(len(edges) - 1):
        values = y[which == b]
        count[b] = len(values)
        if len(values) >= 2:
            mean[b], sem[b] = values.mean(), values.std(ddof=1) / np.sqrt(len(values))
    return mean, sem, count


@dataclass(frozen=True)
class Probe:
    """One frozen mpe2 state for the arena probe: the episode it comes from, the step ``t``, and a
    one-environment batched port holding that state (its ``observe`` recomputes the observations
    after an agent has been moved)."""

    agent: MAPPOAgent
    config: MAPPOConfig
    episode: Episode
    t: int
    port: BatchedEnv

    @cached_property
    def true_values(self) -> np.ndarray:
        """v_hat (m,) in the frozen state itself, computed once: every probe frame compares with it."""
        return probe_values(self, 0, None)[1]


def freeze_state(agent: MAPPOAgent, config: MAPPOConfig, seed: int = 0, t: int = 10) -> tuple[Episode, BatchedEnv]:
    """Play mpe2 (reset with ``seed``) for ``t`` steps with the agent's greedy policy and freeze the
    state: the recorded episode, and a one-environment port holding the state of step ``t`` (copied
    with :meth:`BatchedEnv.load_state` and checked to give mpe2's observation)."""
    episode = trained_episode(agent, config, seed)
    if not is_int(t) or not 0 <= t <= episode.steps:
        raise ValueError(f"t must be an int in [0, {episode.steps}], got {t!r}")
    env = make_reference(config.scenario, **config.scenario_kwargs)
    policy = agent_policy(agent, config, deterministic=True)
    obs, _ = env.reset(seed=seed)
    for _ in range(t):
        obs, *_ = env.step(policy(obs))
    port = make_batched(config.scenario, 1, **config.scenario_kwargs)
    port.load_state(0, env)
    if not np.array_equal(port.observe()[0], obs_to_array(env, obs)):
        raise RuntimeError("the port does not reproduce mpe2's observation of the frozen state")
    return episode, port


def make_probe(agent: MAPPOAgent, config: MAPPOConfig, seed: int = 0, t: int = 10) -> Probe:
    """The critic probe's frozen state (:func:`freeze_state`)."""
    episode, port = freeze_state(agent, config, seed, t)
    return Probe(agent, config, episode, t, port)


DRAG_LIMIT = 100.0
"""How far from the centre a probe may move an entity, in world units along each axis (the arena spans about
[-1, 1]): farther, the drawing would be a dot in a square hundreds of arenas wide, and the observations soon
overflow float32 inside the networks."""


def check_drag(x: Any, y: Any) -> tuple[float, float]:
    """(x, y) as floats if each is a finite number within :data:`DRAG_LIMIT` of the centre; else ``ValueError``
    naming the coordinate (a bool, a string or None is not a position)."""
    return tuple(check_real(name, value, -DRAG_LIMIT, DRAG_LIMIT) for name, value in (("x", x), ("y", y)))


def drag_lim(lim: float, x: float, y: float) -> float:
    """The half-width of an arena drawing that shows an entity dragged to (x, y) as well as the others."""
    return max(lim, 1.2, 1.1 * max(abs(x), abs(y)))


def probe_values(probe: Probe, moved: int, xy: tuple[float, float] | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Move agent ``moved`` to ``xy`` (None: leave it), recompute every observation, run the critic:
    returns the observations (m, d_o), v_hat (m,) in return units and alpha (l, m, m) of the first
    block (the port's state is restored afterwards)."""
    port = probe.port
    moved = check_index("moved", moved, port.n_agents, "agent index")
    xy = None if xy is None else check_drag(*xy)
    saved = port.agent_pos.copy()
    try:
        if xy is not None:
            port.agent_pos[0, moved] = xy
        o = torch.from_numpy(port.observe())
    finally:
        port.agent_pos[:] = saved
    with torch.no_grad():
        v_normalized, alphas = probe.agent.critic.values_and_alpha(o)
    return o[0].numpy(), probe.agent.value_norm.denormalize(v_normalized)[0].numpy(), alphas[0][0].numpy()


def probe_frame(probe: Probe, moved: int = 0, x: float = 0.0, y: float = 0.0, query: int = 0) -> Frame:
    """The frozen state with agent ``moved`` at (x, y): the arena ringed by alpha^query (mean over
    heads), alpha^query per head, and every v_hat^i next to its value in the true state."""
    m = probe.port.n_agents
    query = check_index("query", query, m, "agent index")
    x, y = check_drag(x, y)
    v_true = probe.true_values
    _, v_hat, alpha = probe_values(probe, moved, (x, y))
    arena = arena_panel(probe.episode, probe.t, focus=query)
    names = list(arena.labels[:m])
    xy = arena.xy.copy()
    xy[moved] = (x, y)
    weights = alpha.mean(0)[query]
    arena = replace(arena, xy=xy, emphasis=list(weights) + [0.0] * (len(arena.labels) - m),
                    lim=drag_lim(arena.lim, x, y), title=f"{names[moved]} moved; rings = α of {names[query]}'s value")
    rows = [f"head {h + 1}" for h in range(alpha.shape[0])] + ["mean"]
    per_head = Heatmap(np.vstack([alpha[:, query], weights]), rows, names, title=f"α of {names[query]}'s value",
                       xlabel="key: agent j", ylabel="head")
    lines = [f"{'*' if k == query else ' '} v̂ of {n}: {v:7.2f} ({v - v0:+.2f})" for k, (n, v, v0) in
             enumerate(zip(names, v_hat, v_true))]
    values = Text("\n".join(lines), title="values (change from true state)")
    true_x, true_y = probe.episode.positions[probe.t, moved]
    return Frame([arena, per_head, values],
                 caption=f"{names[moved]} at ({x:+.2f}, {y:+.2f}); it really stood at ({true_x:+.2f}, "
                         f"{true_y:+.2f}). {names[query]}'s value: {v_hat[query]:.2f} (true state "
                         f"{v_true[query]:.2f}); the most weight, mean of heads, goes "
                         f"{_strongest(weights, names)}")


def _array(x: Any) -> list:
    """A tensor or an array as nested lists of floats (float32 weights are exact in float64)."""
    return np.asarray(x.detach() if isinstance(x, torch.Tensor) else x, dtype=np.float64).tolist()


def probe_page_data(probe: Probe) -> dict[str, Any]:
    """What the page computes :func:`probe_frame` from (``static/live.js``, model ``probe``): the frozen state
    (velocities, positions, landmarks), the trained critic's weights and value statistics, the arena as drawn at
    step ``t``, and the agents' names. Only simple_spread, one agent type, as chapter 7's probe shows it."""
    critic, port = probe.agent.critic, probe.port
    if probe.config.scenario != "simple_spread" or len(set(critic.agent_types)) != 1:
        raise ValueError("the in-page probe computes simple_spread's observations for one agent type; got "
                         f"{probe.config.scenario} with types {critic.agent_types}")
    phi = [layer for layer in critic.phi if isinstance(layer, torch.nn.Linear)]
    blocks = [{"W_q": _array(b.attention.W_q), "W_k": _array(b.attention.W_k), "W_v": _array(b.attention.W_v),
               "fc_W": _array(b.fc.weight), "fc_b": _array(b.fc.bias)} for b in critic.blocks]
    norm = probe.agent.value_norm
    arena = frame_spec(Frame([arena_panel(probe.episode, probe.t)]), digits=12)["panels"][0]
    return {
        "vel": _array(port.agent_vel[0]), "pos": _array(port.agent_pos[0]), "landmarks": _array(port.landmark_pos[0]),
        "obs_dim": critic.obs_dim,
        "phi": [{"W": _array(layer.weight), "b": _array(layer.bias)} for layer in phi], "blocks": blocks,
        "heads": {"W1": _array(critic.heads.hidden.W), "b1": _array(critic.heads.hidden.b),
                  "W2": _array(critic.heads.out.W), "b2": _array(critic.heads.out.b)},
        "value_mean": _array(norm.mean), "value_std": _array((norm.var + norm.eps).sqrt()),
        "arena": arena, "names": arena["labels"][: port.n_agents],
        "choices": [choice_label(a) for a in probe.episode.agents],
        "true_xy": _array(probe.episode.positions[probe.t, : port.n_agents]),
    }


def probe_explorer(agent: MAPPOAgent, config: MAPPOConfig, seed: int = 0, t: int = 10) -> Explorer:
    """Freeze an mpe2 state (:func:`make_probe`), move one agent over the arena and watch alpha^i
    and v_hat^i of the trained critic. Positions run over [-1, 1] in steps of 0.01; the page of the built book
    runs the critic itself (:func:`probe_page_data`)."""
    if not isinstance(agent.critic, AttentionCritic):
        raise ValueError(f"the probe needs a self-attention critic; this agent has a {type(agent.critic).__name__}")
    probe = make_probe(agent, config, seed, t)
    static = [round(float(v), 2) for v in np.linspace(-1.0, 1.0, 9)]
    agents = [choice_label(a) for a in probe.episode.agents]
    nearest = [min(static, key=lambda v: abs(v - c)) for c in probe.episode.positions[t, 0]]

    def frame(moved: str = agents[0], x: float = nearest[0], y: float = nearest[1], query: str = agents[0]) -> Frame:
        return probe_frame(probe, agents.index(moved), x, y, agents.index(query))

    return Explorer(frame, [
        Dropdown("moved", agents, label="move agent"),
        Range("x", -1.0, 1.0, 0.01, default=nearest[0], label="x", static=static),
        Range("y", -1.0, 1.0, 0.01, default=nearest[1], label="y", static=static),
        Dropdown("query", agents, label="agent i (query)"),
    ], title=f"Arena probe: move one agent, watch α and v̂ "
             f"({scenario_text(config.scenario, config.scenario_kwargs)}, "
             f"mpe2 seed {seed}, step {t})",
        page=PageModel("probe", lambda: probe_page_data(probe),
                       "the trained critic runs here, in JavaScript, on its exported weights, and the observations "
                       "are recomputed for every position (held to PyTorch within 1e-5 by the book's tests)."))
