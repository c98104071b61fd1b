"""The explorer of "Multi-agent RL on MPE": real mpe2 episodes, one agent's view as entity tokens.

A recorded episode (:func:`record_episode`) is an mpe2 episode played by a fixed policy from a
fixed seed, kept step by step: where every entity is (world units), its radius and colour, and
every agent's observation o^i and reward r^i. :func:`episode_frame` draws step t of it — the arena,
and agent i's observation cut into entity tokens (:func:`attnmarl.envs.entity_tokens`) — and
:func:`episode_explorer` pairs it with its controls (scenario, t, i).

The policies (:func:`scripted_policy`) are simple scripts, not trained agents: the centralized
greedy baseline in simple_spread; in simple_tag the adversaries chase the good agent, which flees;
in collect_treasure empty collectors head for the nearest treasure, loaded ones for the deposit of
its type, and each deposit for the nearest collector carrying its type. Each agent of the two latter
scripts reads only its own observation.

What readers see is numbered from 1, like the formulas (o^1 … o^m): mpe2's ``agent_0`` is ``a1`` in a
figure (:func:`short_label`), ``agent 1`` in a table (:func:`long_label`) and ``a1 (agent_0)`` in a menu
(:func:`choice_label`). Functions take array indices, from 0.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from attnmarl.checks import check_index, check_int, check_seed, is_int
from attnmarl.envs import (
    EntityTokens,
    Policy,
    entity_tokens,
    greedy_assignment_policy,
    make_reference,
    obs_to_array,
    token_layout,
    treasure_hunter_policy,
)
from attnmarl.envs.actions import DISCRETE_DIRECTION
from attnmarl.envs.reference import play
from attnmarl.notebook.viz import Arena, Frame, Heatmap, Text, sup
from attnmarl.notebook.widgets import Dropdown, Explorer, Slider

__all__ = [
    "SCENARIOS",
    "Episode",
    "scripted_policy",
    "record_episode",
    "check_step",
    "token_table",
    "feature_legend",
    "screen_color",
    "arena_panel",
    "short_label",
    "long_label",
    "choice_label",
    "scenario_text",
    "token_heatmap",
    "episode_frame",
    "agent_choices",
    "episode_explorer",
]

SCENARIOS: dict[str, dict[str, Any]] = {
    "simple_spread": {"N": 3},
    "simple_tag": {},
    "collect_treasure": {},
}
"""The scenarios of the explorer and their arguments (mpe2's defaults otherwise)."""

_FEATURE_SYMBOLS = {
    "vel": ("v", "velocity"), "pos": ("p", "position"), "d": ("d", "offset to the entity"),
    "c": ("cm", "message (comm channel)"), "holding": ("h", "holding type"), "deposit": ("D", "deposit of type"),
    "type": ("T", "treasure of type"),
}
"""Feature name stem → (short symbol for a heatmap column, meaning): ``vel_x`` → ``vx``."""

_SHORT = {"agent": "a", "landmark": "L", "adversary": "A", "collector": "c", "deposit": "d", "treasure": "t"}


def _move(direction: np.ndarray) -> int:
    """The discrete mpe2 move (0–4) whose unit force points most along ``direction`` (0 if none)."""
    if not np.any(direction):
        return 0
    return int(np.argmax(DISCRETE_DIRECTION @ direction))


def _nearest(deltas: np.ndarray) -> np.ndarray:
    """The shortest of the offsets ``deltas`` (n, 2)."""
    return deltas[np.argmin(np.linalg.norm(deltas, axis=-1))]


def _tag_move(tokens: EntityTokens) -> int:
    """simple_tag script: an adversary steers at the nearest good agent; a good agent steers away
    from the nearest adversary and back towards the centre (the border costs it reward)."""
    if "good" in tokens.kinds:
        return _move(_nearest(tokens.by_kind("good")[:, :2]))
    away = -_nearest(tokens.by_kind("adversary"))
    return _move(away / max(np.linalg.norm(away), 1e-9) - tokens.by_kind("self")[0, 2:4])


def scripted_policy(scenario: str, **scenario_kwargs: Any) -> Policy:
    """The fixed policy of the recorded episodes (see the module docstring), as an mpe2 dict policy.

    simple_spread uses :func:`attnmarl.envs.greedy_assignment_policy` and collect_treasure
    :func:`attnmarl.envs.treasure_hunter_policy` (the baselines of chapters 6 and 10); simple_tag moves
    each agent from its own observation's entity tokens.
    """
    if scenario == "simple_spread":
        return greedy_assignment_policy()
    if scenario == "collect_treasure":
        return treasure_hunter_policy(**scenario_kwargs)
    if scenario != "simple_tag":
        raise ValueError(f"no scripted policy for {scenario!r}; there are {list(SCENARIOS)}")

    def policy(obs: dict[str, np.ndarray]) -> dict[str, int]:
        return {agent: _tag_move(entity_tokens(scenario, o, agent, **scenario_kwargs)) for agent, o in obs.items()}

    return policy


@dataclass(frozen=True)
class Episode:
    """One recorded mpe2 episode, steps t = 0 (after reset) … T (the last step)."""

    scenario: str
    kwargs: dict[str, Any]
    seed: int
    agents: tuple[str, ...]
    """mpe2's ``possible_agents``."""
    entities: tuple[str, ...]
    """Names of ``world.entities`` (agents first, then landmarks)."""
    radius: np.ndarray
    """``(n_entities,)`` radius of each entity, world units."""
    positions: np.ndarray
    """``(T + 1, n_entities, 2)`` position of each entity at each step."""
    colors: np.ndarray
    """``(T + 1, n_entities, 3)`` colour (RGB in [0, 1]) of each entity at each step."""
    visible: np.ndarray
    """``(T + 1, n_entities)`` False for a collected treasure (mpe2 parks it off the arena)."""
    obs: np.ndarray
    """``(T + 1, n_agents, max obs_dim)`` each agent's observation (zero-padded, as ``obs_to_array``)."""
    rewards: np.ndarray
    """``(T + 1, n_agents)`` reward received on arriving at step t (0 at t = 0)."""

    @property
    def steps(self) -> int:
        """T, the number of steps taken."""
        return len(self.positions) - 1


def _snapshot(env) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    entities = env.unwrapped.world.entities
    positions = np.array([e.state.p_pos for e in entities], dtype=float)
    colors = np.array([e.color for e in entities], dtype=float)
    visible = np.array([getattr(e, "alive", True) for e in entities])
    return positions, colors, visible


def record_episode(scenario: str, seed: int = 0, policy: Policy | None = None,
                   **scenario_kwargs: Any) -> Episode:
    """Play one mpe2 episode (reset with ``seed``) with ``policy`` (default: :func:`scripted_policy`)
    and record every step of it."""
    check_seed(seed)
    env = make_reference(scenario, **scenario_kwargs)
    policy = scripted_policy(scenario, **scenario_kwargs) if policy is None else policy
    obs, _ = env.reset(seed=seed)
    snaps, observations = [_snapshot(env)], [obs_to_array(env, obs)]
    rewards = [np.zeros(len(env.possible_agents))]
    while env.agents:
        obs, reward, *_ = play(env, policy, obs)
        snaps.append(_snapshot(env))
        observations.append(obs_to_array(env, obs))
        rewards.append(np.array([reward[a] for a in env.possible_agents]))
    world = env.unwrapped.world
    positions, colors, visible = (np.stack(parts) for parts in zip(*snaps))
    return Episode(scenario, dict(scenario_kwargs), seed, tuple(env.possible_agents),
                   tuple(e.name for e in world.entities), np.array([e.size for e in world.entities]),
                   positions, colors, visible, np.stack(observations), np.stack(rewards))


@lru_cache(maxsize=8)
def _explorer_episode(scenario: str) -> Episode:
    if scenario not in SCENARIOS:
        raise ValueError(f"unknown scenario {scenario!r}; the explorer shows {list(SCENARIOS)}")
    return record_episode(scenario, seed=0, **SCENARIOS[scenario])


def _split_feature(feature: str) -> tuple[str, str]:
    """``vel_x`` → ``("vel", "x")``, ``holding_1`` → ``("holding", "1")``, ``dx`` → ``("d", "x")``."""
    stem, _, suffix = feature.rpartition("_")
    return (stem, suffix) if stem else (feature[0], feature[1:])


def feature_legend(cols: list[str]) -> str:
    """What the symbols of ``token_table``'s columns mean, e.g. ``"v = velocity, p = position"``
    (a column is a symbol followed by its axis, ``x`` or ``y``, or by a type index)."""
    symbols = dict(_FEATURE_SYMBOLS.values())
    used = dict.fromkeys(c.rstrip("0123456789xy") for c in cols)
    return ", ".join(f"{s} = {symbols[s]}" for s in used)


def token_table(tokens: EntityTokens) -> tuple[np.ndarray, list[str], list[str]]:
    """One observation's tokens as a table: ``(values (n_tokens, n_features), rows, cols)``.

    Rows are the tokens (the observer marked ``(self)``); columns are every feature that some
    token has, in order of first appearance, named by short symbols that fit a heatmap cell
    (``vel_x`` → ``vx``, ``holding_1`` → ``h1``; :func:`feature_legend` spells them out); a
    feature a token does not have is 0.
    """
    if tokens.tokens[0].ndim != 1:
        raise ValueError(f"token_table takes the tokens of one observation, got a batch "
                         f"{tokens.tokens[0].shape[:-1]}")
    names = list(dict.fromkeys(f for features in tokens.layout.features for f in features))
    values = np.zeros((len(tokens.names), len(names)))
    for row, (token, features) in enumerate(zip(tokens.tokens, tokens.layout.features)):
        values[row, [names.index(f) for f in features]] = token
    cols = [_FEATURE_SYMBOLS[stem][0] + suffix for stem, suffix in map(_split_feature, names)]
    rows = [long_label(name) + (" (self)" if kind == "self" else "") for name, kind in zip(tokens.names, tokens.kinds)]
    return values, rows, cols


def _split_number(name: str) -> tuple[str, int | None]:
    """``agent_0`` → (``agent``, 0), ``landmark 1`` → (``landmark``, 1), ``nearest_agent_2`` →
    (``nearest_agent``, 2); a name without a trailing number → (name, None)."""
    kind, _, number = name.replace(" ", "_").rpartition("_")
    return (kind, int(number)) if kind and number.isdigit() else (name, None)


def short_label(name: str) -> str:
    """A short label of an mpe2 entity, numbered from 1 like the formulas (mpe2 numbers from 0):
    ``agent_0`` → ``a1``, ``landmark 1`` → ``L2``, ``adversary_2`` → ``A3``."""
    kind, number = _split_number(name)
    return _SHORT.get(kind, kind[:1]) + ("" if number is None else str(number + 1))


def long_label(name: str) -> str:
    """An entity or token name as the figures show it, numbered from 1: ``agent_0`` → ``agent 1``,
    ``landmark 0`` → ``landmark 1``, ``nearest_treasure_0`` (the nearest treasure) → ``nearest treasure 1``."""
    kind, number = _split_number(name)
    return kind.replace("_", " ") + ("" if number is None else f" {number + 1}")


def choice_label(name: str) -> str:
    """An entity in an explorer's menu: the figures' label with mpe2's own name, ``agent_0`` → ``a1 (agent_0)``."""
    return f"{short_label(name)} ({name})"


_SCENARIO_WORDS = {
    "N": ("m = {}", None), "num_good": ("{} prey", "{} prey"), "num_adversaries": ("{} predator", "{} predators"),
    "num_obstacles": ("{} obstacle", "{} obstacles"), "num_collectors": ("{} collector", "{} collectors"),
    "num_deposits": ("{} deposit", "{} deposits"), "num_treasures": ("{} treasure", "{} treasures"),
    "max_cycles": ("{} steps", "{} steps"),
}


def scenario_text(scenario: str, scenario_kwargs: dict[str, Any] | None = None) -> str:
    """A scenario and its arguments as a reader reads them: ``simple_spread, m = 6`` for
    ``("simple_spread", {"N": 6})``, ``collect_treasure, 10 collectors, 2 deposits`` for
    ``{"num_collectors": 10, "num_deposits": 2}`` (an unknown argument stays ``name = value``)."""
    parts = [scenario]
    for key, value in (scenario_kwargs or {}).items():
        if key in _SCENARIO_WORDS:  # counts: a reader would read 'm = x' as a number
            check_int(key, value)
        one, many = _SCENARIO_WORDS.get(key, (f"{key} = {{}}", None))
        parts.append((one if many is None or value == 1 else many).format(value))
    return ", ".join(parts)


def screen_color(rgb: np.ndarray) -> str:
    """An entity's colour as mpe2 draws it (``entity.color * 200``), as ``#rrggbb``."""
    return "#" + "".join(f"{int(min(max(200 * c, 0.0), 255.0)):02x}" for c in rgb)


def check_step(episode: Episode, t: int) -> int:
    """``t`` as an int if it is a step of ``episode``, 0 … T (a negative t would count from the end)."""
    if not is_int(t) or not 0 <= t <= episode.steps:
        raise ValueError(f"t must be an int in [0, {episode.steps}], got {t!r}")
    return int(t)


def arena_panel(episode: Episode, t: int, focus: int | None = None, title: str = "") -> Arena:
    """The world at step ``t``: every visible entity at its position, radius and colour.
    ``focus`` (an agent index) rings that agent."""
    t = check_step(episode, t)
    shown = np.flatnonzero(episode.visible[t])
    reach = (np.abs(episode.positions) + episode.radius[:, None])[episode.visible].max()
    lim = max(1.0, math.ceil(10 * reach + 0.5) / 10)  # everything of the episode in view
    return Arena(episode.positions[t, shown], episode.radius[shown],
                 [screen_color(c) for c in episode.colors[t, shown]],
                 [short_label(episode.entities[k]) for k in shown],
                 focus=None if focus is None else int(np.flatnonzero(shown == focus)[0]),
                 title=title or f"{episode.scenario}, t = {t}", lim=lim)


def token_heatmap(episode: Episode, t: int, i: int) -> Heatmap:
    """Agent ``i``'s observation at step ``t`` as entity tokens: rows = tokens, columns = features,
    on a symmetric colour scale fixed for the whole episode."""
    t = check_step(episode, t)
    agent = episode.agents[check_index("i", i, len(episode.agents), "agent index")]
    tokens = entity_tokens(episode.scenario, episode.obs[t, i], agent, **episode.kwargs)
    values, rows, cols = token_table(tokens)
    vmax = max(0.5, math.ceil(2 * np.abs(episode.obs).max()) / 2)  # a colour scale of positive width
    return Heatmap(values, rows, cols, title=f"o{sup(i + 1)} of {long_label(agent)}", xlabel="feature",
                   ylabel="token (entity)", vmin=-vmax, vmax=vmax, cmap="RdBu_r")


def _sizes(columns: tuple[tuple[int, ...], ...]) -> str:
    """Token sizes, runs collapsed: ``(4, 2, 2, 2, 4, 4)`` → ``"4 + 3×2 + 2×4"``."""
    runs: list[list[int]] = []
    for size in map(len, columns):
        if runs and runs[-1][0] == size:
            runs[-1][1] += 1
        else:
            runs.append([size, 1])
    return " + ".join(f"{count}×{size}" if count > 1 else f"{size}" for size, count in runs)


def episode_frame(scenario: str = "simple_spread", t: int = 8, i: int = 0) -> Frame:
    """Step ``t`` of the explorer's recorded episode of ``scenario``: the arena with agent ``i`` (an
    array index, from 0) ringed, and agent ``i``'s observation cut into entity tokens."""
    episode = _explorer_episode(scenario)
    m = len(episode.agents)
    if is_int(i) and i >= m:
        message = (f"{scenario} has m = {m} agents,\ni = 1 … {m}:\n"
                   + "\n".join(f"  {k + 1}: {choice_label(a)}" for k, a in enumerate(episode.agents)))
        return Frame([arena_panel(episode, t, title=f"t = {t}"), Text(message, title=f"there is no agent {i + 1}")],
                     caption=f"{scenario}: choose an agent i of at most {m}.")
    heatmap = token_heatmap(episode, t, i)
    agent = episode.agents[i]
    layout = token_layout(scenario, agent, **episode.kwargs)
    reward = f"r{sup(i + 1)} = {episode.rewards[t, i]:+.2f} on arriving at step t" if t else "t = 0: just reset"
    return Frame([arena_panel(episode, t, focus=i, title=f"t = {t}, {choice_label(agent)} ringed"), heatmap],
                 caption=f"o{sup(i + 1)} ∈ ℝ{sup(layout.obs_dim)}: {len(layout.names)} tokens of "
                         f"{_sizes(layout.columns)} numbers; {reward}. Features: "
                         f"{feature_legend(heatmap.cols)}.")


def agent_choices() -> dict[str, tuple[str, int]]:
    """The episode explorer's menu: one entry per agent of each scenario, so that only agents that exist
    can be chosen, e.g. ``"simple_tag, i = 4: a1 (agent_0)"`` -> (``"simple_tag"``, 3)."""
    return {f"{scenario}, i = {k + 1}: {choice_label(agent)}": (scenario, k)
            for scenario in SCENARIOS for k, agent in enumerate(_explorer_episode(scenario).agents)}


def episode_explorer() -> Explorer:
    """The episode explorer: an agent i of one of the scenarios (one menu) and the time step t of a
    recorded mpe2 episode."""
    steps = min(_explorer_episode(s).steps for s in SCENARIOS)
    choices = agent_choices()

    def frame(agent: str = next(iter(choices)), t: int = 8) -> Frame:
        if agent not in choices:
            raise ValueError(f"unknown agent {agent!r}; the explorer shows {list(choices)}")
        scenario, i = choices[agent]
        return episode_frame(scenario, t, i)

    return Explorer(frame, [
        Dropdown("agent", list(choices), label="scenario and agent i"),
        Slider("t", list(range(steps + 1)), default=8, label="time step t"),
    ], title="Episode explorer: the arena at step t and agent i's observation as entity tokens")
