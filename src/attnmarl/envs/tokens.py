"""Entity tokens: an agent's flat mpe2 observation cut into one feature vector per entity.

mpe2 concatenates an agent's view of the world into one vector o^i. Self-attention wants it as a
*set* of entities — the agent itself, each landmark, each other agent — so that the same weights
score every entity and the number of entities can change. :func:`entity_tokens` does the cutting,
following how each scenario's ``observation`` builds the vector:

- **simple_spread**: ``self = [v, p]``; ``landmark l = p_l − p``; ``agent j = [p_j − p, c_j]``
  (an agent's position and its communication channel, which is silent — zeros — in simple_spread);
- **simple_tag**: ``self = [v, p]``; ``landmark l = p_l − p`` (obstacles);
  ``adversary j = p_j − p``; ``good agent j = [p_j − p, v_j]`` (mpe2 shows only good agents' velocities);
- **collect_treasure**: ``self = [p, v, holding one-hot (collectors only)]``; then the other agents
  *sorted by distance* ``[p_j − p, v_j, deposit type, holding]`` and the treasures sorted by
  distance ``[p_t − p, type]`` (zeros for a picked-up treasure). Because mpe2 sorts them, these
  tokens are named by rank (``nearest_agent_0`` is the closest), not by identity;
- **simple_spread_decoys** (chapter 12, :mod:`attnmarl.envs.decoys`): ``self = [v, p]``; one token per landmark
  *slot* ``landmark slot s = [p_l − p, is_target]`` (targets and decoys in the agent's shuffled order, named by
  slot, since which landmark fills a slot changes with every episode and agent); ``agent j = [p_j − p, c_j]``.
  With no decoys it is simple_spread, and so are its tokens (the same layout, names included).
- **lbforaging** (Level-Based Foraging, :mod:`attnmarl.envs.foraging`): LBF lists ``(y, x, level)`` triples,
  foods first, then the players, the observer first. The layout reads them as ``self = [x, y, level]``, one token
  per food slot and one per other player's slot ``[x, y, level]``, named by slot (LBF lists the entities it sees
  first); the entity actor makes the food and player positions relative to its own and masks the unseen slots
  before it reads them (:class:`attnmarl.nets.foraging.ForagingView`), as :func:`attnmarl.envs.lbf.lbf_tokens`
  does in numpy.

Tokens of one kind have the same features, so ``EntityTokens.by_kind`` stacks them into the
``(..., n_entities, d)`` array an attention layer reads.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from .decoys import NAME as DECOYS
from .decoys import observation_layout
from .foraging import NAME as FORAGING
from .foraging import agent_names
from .lbf import lbf_token_names
from .reference import make_reference, obs_dims
from .scenarios import PORTED, port_kwargs, scenario_name


@dataclass(frozen=True)
class TokenLayout:
    """Where each entity's features sit in one agent's observation vector."""

    names: tuple[str, ...]
    """Entity of each token (mpe2 names, or ranks for sorted entities)."""
    kinds: tuple[str, ...]
    """Kind of each token: ``self``, ``landmark``, ``agent``, ``adversary``, ``good``, ``treasure``."""
    columns: tuple[tuple[int, ...], ...]
    """Observation columns of each token, in feature order."""
    features: tuple[tuple[str, ...], ...]
    """Name of each feature of each token."""
    obs_dim: int
    """Length of this agent's observation."""
    padded_dim: int
    """Width of the zero-padded arrays of the batched ports and ``obs_to_array``."""


@dataclass(frozen=True)
class EntityTokens:
    """An observation (or a batch ``(..., obs_dim)`` of them) as per-entity feature vectors."""

    layout: TokenLayout
    tokens: tuple[np.ndarray, ...]
    """Features of each token, ``(..., d_token)``, in the order of ``layout.names``."""

    @property
    def names(self) -> tuple[str, ...]:
        return self.layout.names

    @property
    def kinds(self) -> tuple[str, ...]:
        return self.layout.kinds

    def __getitem__(self, name: str) -> np.ndarray:
        """Features of the token of entity ``name``."""
        if name not in self.layout.names:
            raise ValueError(f"no token named {name!r}; tokens are {list(self.layout.names)}")
        return self.tokens[self.layout.names.index(name)]

    def by_kind(self, kind: str) -> np.ndarray:
        """All tokens of one kind stacked: ``(..., n_of_kind, d_kind)``."""
        chosen = [token for token, k in zip(self.tokens, self.layout.kinds) if k == kind]
        if not chosen:
            raise ValueError(f"no tokens of kind {kind!r}; kinds are {sorted(set(self.layout.kinds))}")
        return np.stack(chosen, axis=-2)

    def to_obs(self) -> np.ndarray:
        """Put the tokens back into mpe2's flat observation ``(..., obs_dim)`` (inverse of the split)."""
        obs = np.zeros(self.tokens[0].shape[:-1] + (self.layout.obs_dim,), dtype=self.tokens[0].dtype)
        for token, columns in zip(self.tokens, self.layout.columns):
            obs[..., list(columns)] = token
        return obs


def _pairs(start: int, count: int) -> list[tuple[int, int]]:
    """Column pairs ``(start + 2k, start + 2k + 1)`` of ``count`` consecutive 2-vectors."""
    return [(start + 2 * k, start + 2 * k + 1) for k in range(count)]


def _spread_layout(world: Any, observer: int) -> list[tuple[str, str, tuple[int, ...], tuple[str, ...]]]:
    """Tokens of ``simple_spread``'s ``Scenario.observation``: ``[v, p, landmarks, others' p, others' c]``."""
    agents, landmarks, dim_c = world.agents, world.landmarks, world.dim_c
    others = [a for k, a in enumerate(agents) if k != observer]
    layout = [(agents[observer].name, "self", (0, 1, 2, 3), ("vel_x", "vel_y", "pos_x", "pos_y"))]
    layout += [(lm.name, "landmark", cols, ("dx", "dy")) for lm, cols in zip(landmarks, _pairs(4, len(landmarks)))]
    pos_start = 4 + 2 * len(landmarks)
    comm_start = pos_start + 2 * len(others)
    comm_features = tuple(f"c_{k}" for k in range(dim_c))
    for m, other in enumerate(others):
        comm = tuple(range(comm_start + dim_c * m, comm_start + dim_c * (m + 1)))
        layout.append((other.name, "agent", _pairs(pos_start, len(others))[m] + comm, ("dx", "dy") + comm_features))
    return layout


def _tag_layout(world: Any, observer: int) -> list[tuple[str, str, tuple[int, ...], tuple[str, ...]]]:
    """Tokens of ``simple_tag``'s ``Scenario.observation``: ``[v, p, obstacles, others' p, other good agents' v]``."""
    agents, landmarks = world.agents, world.landmarks
    others = [a for k, a in enumerate(agents) if k != observer]
    layout = [(agents[observer].name, "self", (0, 1, 2, 3), ("vel_x", "vel_y", "pos_x", "pos_y"))]
    layout += [(lm.name, "landmark", cols, ("dx", "dy")) for lm, cols in zip(landmarks, _pairs(4, len(landmarks)))]
    pos_columns = _pairs(4 + 2 * len(landmarks), len(others))
    vel_columns = iter(_pairs(4 + 2 * len(landmarks) + 2 * len(others), len(others)))
    for other, cols in zip(others, pos_columns):
        if other.adversary:
            layout.append((other.name, "adversary", cols, ("dx", "dy")))
        else:
            layout.append((other.name, "good", cols + next(vel_columns), ("dx", "dy", "vel_x", "vel_y")))
    return layout


def _treasure_layout(world: Any, observer: int) -> list[tuple[str, str, tuple[int, ...], tuple[str, ...]]]:
    """Tokens of ``collect_treasure``'s ``Scenario.observation``: self, others and treasures sorted by distance."""
    n_types = len(world.treasure_types)
    deposit_features = tuple(f"deposit_{t}" for t in range(n_types))
    holding_features = tuple(f"holding_{t}" for t in range(n_types))
    own_holding = holding_features if world.agents[observer].collector else ()
    self_features = ("pos_x", "pos_y", "vel_x", "vel_y") + own_holding
    layout = [(world.agents[observer].name, "self", tuple(range(len(self_features))), self_features)]
    start = len(self_features)
    agent_features = ("dx", "dy", "vel_x", "vel_y") + deposit_features + holding_features
    for m in range(len(world.agents) - 1):
        columns = tuple(range(start, start + len(agent_features)))
        layout.append((f"nearest_agent_{m}", "agent", columns, agent_features))
        start += len(agent_features)
    treasure_features = ("dx", "dy") + tuple(f"type_{t}" for t in range(n_types))
    for m in range(len(world.landmarks)):
        columns = tuple(range(start, start + len(treasure_features)))
        layout.append((f"nearest_treasure_{m}", "treasure", columns, treasure_features))
        start += len(treasure_features)
    return layout


def _decoy_layout(world: Any, observer: int) -> list[tuple[str, str, tuple[int, ...], tuple[str, ...]]]:
    """Tokens of ``DecoyScenario.observation`` (:mod:`attnmarl.envs.decoys`): simple_spread's self token, one token
    per landmark slot at the columns of :func:`attnmarl.envs.decoys.observation_layout`, then simple_spread's other
    agents (names and features) at the columns after the slots. Without decoys, simple_spread's layout."""
    spread = _spread_layout(world, observer)
    if not world.decoys:
        return spread
    m = len(world.agents)
    layout = observation_layout(m, len(world.decoys) // m)
    slots = [(f"landmark slot {s}", "landmark", tuple(int(c) for c in columns), ("dx", "dy", "is_target"))
             for s, columns in enumerate(layout.landmark_columns)]
    pos, comm = layout.agent_start, layout.agent_start + 2 * (m - 1)
    dim_c = world.dim_c
    others = [(name, kind, (pos + 2 * j, pos + 2 * j + 1) + tuple(range(comm + dim_c * j, comm + dim_c * (j + 1))),
               features) for j, (name, kind, _, features) in enumerate(spread[1 + m:])]
    return [spread[0], *slots, *others]


_LAYOUTS = {"simple_spread": _spread_layout, "simple_tag": _tag_layout, "collect_treasure": _treasure_layout,
            DECOYS: _decoy_layout}


@lru_cache(maxsize=32)
def _cached_layouts(scenario: str,
                    kwargs: tuple[tuple[str, Any], ...]) -> tuple[tuple[str, ...], tuple[TokenLayout, ...]]:
    """The agents of ``scenario`` with these arguments and every agent's layout, from one mpe2 world (building
    one per agent would make a team of m cost m worlds, each with m agents' observation spaces: minutes at
    m = 200)."""
    env = make_reference(scenario, **dict(kwargs))
    agents, world, dims = tuple(env.possible_agents), env.unwrapped.world, obs_dims(env)
    layouts = []
    for observer in range(len(agents)):
        names, kinds, columns, features = zip(*_LAYOUTS[scenario](world, observer))
        layouts.append(TokenLayout(names, kinds, columns, features, obs_dim=dims[observer], padded_dim=max(dims)))
    return agents, tuple(layouts)


def _foraging_layouts(players: int, foods: int) -> tuple[tuple[str, ...], tuple[TokenLayout, ...]]:
    """The players of an LBF game and each one's layout (the same for all): the triple ``(y, x, level)`` of slot k
    sits at columns ``3k … 3k + 2`` (foods 0 … foods − 1, then the players, the observer first), read as
    ``(x, y, level)``; self first, then the food slots, then the other players' slots."""
    triples = [(3 * k + 1, 3 * k, 3 * k + 2) for k in range(foods + players)]
    names = lbf_token_names(foods, players)
    kinds = ("self", *("food",) * foods, *("player",) * (players - 1))
    columns = (triples[foods], *triples[:foods], *triples[foods + 1:])
    features = (("x", "y", "level"), *(("dx", "dy", "level"),) * (foods + players - 1))
    width = 3 * (foods + players)
    layout = TokenLayout(names, kinds, columns, features, obs_dim=width, padded_dim=width)
    return agent_names(players), (layout,) * players


def _cached_layout(scenario: str, agent: str | int, kwargs: tuple[tuple[str, Any], ...]) -> TokenLayout:
    if scenario == FORAGING:
        agents, layouts = _foraging_layouts(dict(kwargs)["players"], dict(kwargs)["foods"])
    else:
        agents, layouts = _cached_layouts(scenario, kwargs)
    if isinstance(agent, str):
        if agent not in agents:
            raise ValueError(f"{scenario} has no agent {agent!r}; agents are {list(agents)}")
        return layouts[agents.index(agent)]
    if not 0 <= agent < len(agents):
        raise ValueError(f"agent index must be in [0, {len(agents)}), got {agent}")
    return layouts[agent]


def token_layout(scenario: str, agent: str | int, **scenario_kwargs: Any) -> TokenLayout:
    """The token layout of ``agent`` (its mpe2 name or index) in ``scenario`` with these arguments
    (those of the batched ports: full observability, as in mpe2's default)."""
    name = scenario_name(scenario)
    if name not in _LAYOUTS and name != FORAGING:
        raise ValueError(f"entity tokens are defined for {list(PORTED)}, not {name!r}")
    if isinstance(agent, bool) or not isinstance(agent, (str, int, np.integer)):
        raise ValueError(f"agent must be a name or an index, got {agent!r}")
    kwargs = port_kwargs(name, **scenario_kwargs)
    agent = agent if isinstance(agent, str) else int(agent)
    return _cached_layout(name, agent, tuple(sorted(kwargs.items())))


def entity_tokens(scenario: str, obs: np.ndarray, agent: str | int, **scenario_kwargs: Any) -> EntityTokens:
    """Split ``agent``'s observation into entity tokens.

    ``obs`` is ``(..., obs_dim)`` — one observation or any batch of them, e.g. ``obs[:, i]`` from a
    batched port — and its last axis is either the agent's own ``obs_dim`` or the zero-padded
    width of the batched arrays (the padding is ignored). For agents with the same layout (all
    simple_spread agents, all adversaries, …) the tokens of ``obs[:, i]`` for several ``i`` have
    the same shapes; only the names of the other agents differ.
    """
    if scenario_name(scenario) == FORAGING:
        raise ValueError("LBF's entity tokens are relative to the player and masked where it sees nothing, not a cut "
                         "of its observation: use attnmarl.envs.lbf_tokens")
    layout = token_layout(scenario, agent, **scenario_kwargs)
    obs = np.asarray(obs)
    if obs.ndim < 1 or obs.shape[-1] not in (layout.obs_dim, layout.padded_dim):
        padded = f" (or the padded {layout.padded_dim})" if layout.padded_dim != layout.obs_dim else ""
        raise ValueError(f"obs of agent {agent!r} must end in {layout.obs_dim}{padded} numbers, got shape {obs.shape}")
    return EntityTokens(layout, tuple(obs[..., list(columns)] for columns in layout.columns))
