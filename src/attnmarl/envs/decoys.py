"""simple_spread with decoys: a PettingZoo environment built on mpe2's own simple_spread scenario (chapter 12).

On simple_spread every landmark matters to some agent, so "more entities" and "more agents" always grow
together. Here they come apart: m agents, m *target* landmarks exactly as in ``simple_spread``, and
k = d·m *decoy* landmarks that carry no reward. An agent sees every landmark alike, except for one bit,
and in an order shuffled for it alone, so that a network must *select* the targets by what they are,
not by where they sit in its input.

World (``DecoyScenario.make_world``): mpe2's simple_spread world, untouched — ``world.agents`` and
``world.landmarks`` (the m targets) — plus ``world.decoys``, k more ``Landmark`` objects (``"decoy k"``,
not movable, not colliding, drawn in :data:`DECOY_COLOR`). Decoys are not in ``world.landmarks``, so
every term of simple_spread that reads the landmarks — the spread reward ``−Σ_l min_j |p_j − p_l|``,
``terminate_on_success``, ``benchmark_data`` — counts the targets only, by construction; the collision
term reads agents only. Decoys are in ``world.entities``, so mpe2 draws them (and skips them in physics:
they neither move nor collide).

Reset (``DecoyScenario.reset_world``): simple_spread's own reset (agents, then targets, uniform in
[−1, 1]², from the env's seeded generator), then the decoys uniform in [−1, 1]², then for each agent i
in turn a permutation ``π_i`` of the m + k landmarks (``np_random.permutation``), fixed for the episode:
``world.landmark_order[i, s] = π_i(s)`` is the landmark (targets 0 … m−1, then decoys m … m+k−1) in
agent i's slot s.

Observation of agent i, for d ≥ 1 (:func:`observation_layout` gives the columns)::

    [v_i (2), p_i (2),
     for each slot s = 0 … m+k−1:  p_{π_i(s)} − p_i (2), is_target(π_i(s)) (1),
     p_j − p_i (2) for each other agent j,  c_j (2) for each other agent j]

— ``4 + 3(m + k) + 4(m − 1)`` numbers; other agents and communication keep mpe2's order and layout.
With d = 0 there are no decoys, no shuffle and no bit: the environment *is* ``mpe2.simple_spread_v3``
(same observations, rewards and ends for the same seed and actions; no extra draw from the generator).

Build it checked, as every other scenario of the book, with
``make_reference("simple_spread_decoys", N=m, decoys=d, ...)`` (:mod:`attnmarl.envs.scenarios`); this
module is shaped like an mpe2 scenario module (``raw_env``, ``env``, ``parallel_env``) so that it can sit
in that registry beside mpe2's own. It imports nothing else of :mod:`attnmarl.envs`, for the same reason.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from gymnasium.utils import EzPickle
from mpe2._mpe_utils.core import Entity, Landmark
from mpe2._mpe_utils.simple_env import SimpleEnv, make_env
from mpe2.simple_spread.simple_spread import ExtendedWorld, Scenario
from pettingzoo.utils.conversions import parallel_wrapper_fn

from ..checks import check_bool, check_int, check_real

NAME = "simple_spread_decoys"
"""The scenario's name in the registry of :mod:`attnmarl.envs.scenarios` (mpe2's names carry no version)."""

DECOY_COLOR = np.array([0.95, 0.6, 0.15])
"""Colour of the decoys when drawn (mpe2 scales colours by 200): orange, beside simple_spread's grey targets."""


class DecoyWorld(ExtendedWorld):
    """simple_spread's world with decoy landmarks beside its targets, and each agent's landmark order."""

    def __init__(self) -> None:
        super().__init__()
        self.decoys: list[Landmark] = []
        self.landmark_order = np.zeros((0, 0), dtype=np.int64)
        """(m, m + k): the landmark in each agent's slots (targets 0 … m−1, decoys m … m+k−1); see the module."""

    @property
    def entities(self) -> list[Entity]:
        """Agents, targets, decoys: what mpe2 steps (decoys do not move or collide) and draws."""
        return self.agents + self.landmarks + self.decoys


class DecoyScenario(Scenario):
    """mpe2's simple_spread ``Scenario`` with ``decoys`` decoy landmarks per agent (see the module)."""

    def __init__(self, decoys: int = 0, terminate_on_success: bool = False) -> None:
        super().__init__(terminate_on_success=terminate_on_success)
        self.decoys = decoys

    def make_world(self, N: int = 3) -> DecoyWorld:
        """simple_spread's world (``Scenario.make_world``) with ``decoys · N`` decoys beside its landmarks."""
        spread = super().make_world(N)
        world = DecoyWorld()
        world.dim_c, world.collaborative = spread.dim_c, spread.collaborative
        world.agents, world.landmarks = spread.agents, spread.landmarks
        world.decoys = [Landmark() for _ in range(self.decoys * N)]
        for k, decoy in enumerate(world.decoys):
            decoy.name = f"decoy {k}"
            decoy.collide = False
            decoy.movable = False
        return world

    def reset_world(self, world: DecoyWorld, np_random: np.random.Generator) -> None:
        """simple_spread's reset, then decoys uniform in [−1, 1]² and one landmark permutation per agent (d ≥ 1)."""
        super().reset_world(world, np_random)
        for decoy in world.decoys:
            decoy.color = DECOY_COLOR
            decoy.state.p_pos = np_random.uniform(-1, +1, world.dim_p)
            decoy.state.p_vel = np.zeros(world.dim_p)
        n_landmarks = len(world.landmarks) + len(world.decoys)
        world.landmark_order = (np.stack([np_random.permutation(n_landmarks) for _ in world.agents])
                                if world.decoys else np.arange(n_landmarks)[None].repeat(len(world.agents), axis=0))

    def observation(self, agent, world: DecoyWorld) -> np.ndarray:
        """simple_spread's observation with its landmark block replaced by the shuffled ``[p_l − p, is_target]``
        entries (d ≥ 1); simple_spread's own observation when there are no decoys."""
        spread = super().observation(agent, world)
        if not world.decoys:
            return spread
        order = world.landmark_order[world.agents.index(agent)]
        landmarks = world.landmarks + world.decoys
        n_targets = len(world.landmarks)
        entries = [np.append(landmarks[k].state.p_pos - agent.state.p_pos, float(k < n_targets)) for k in order]
        return np.concatenate([spread[:4], *entries, spread[4 + 2 * n_targets:]])


class raw_env(SimpleEnv, EzPickle):  # noqa: N801 (mpe2's name for the AEC class of a scenario)
    """The AEC environment, built as ``mpe2.simple_spread_v3.raw_env`` is, on :class:`DecoyScenario`.

    ``N`` agents and targets, ``decoys`` decoys per agent (d), and mpe2's ``local_ratio``, ``max_cycles``,
    ``continuous_actions``, ``terminate_on_success`` (every *target* covered) and ``render_mode``.
    """

    metadata = {**SimpleEnv.metadata, "name": f"{NAME}_v0"}

    def __init__(
        self,
        N: int = 3,
        decoys: int = 0,
        local_ratio: float = 0.5,
        max_cycles: int = 25,
        continuous_actions: bool = False,
        terminate_on_success: bool = False,
        render_mode: str | None = None,
    ) -> None:
        N = check_int(f"{NAME}: N", N)
        decoys = check_int(f"{NAME}: decoys", decoys, minimum=0)
        local_ratio = check_real(f"{NAME}: local_ratio", local_ratio, 0.0, 1.0)
        EzPickle.__init__(self, N=N, decoys=decoys, local_ratio=local_ratio, max_cycles=max_cycles,
                          continuous_actions=continuous_actions, terminate_on_success=terminate_on_success,
                          render_mode=render_mode)
        scenario = DecoyScenario(decoys, check_bool(f"{NAME}: terminate_on_success", terminate_on_success))
        SimpleEnv.__init__(self, scenario=scenario, world=scenario.make_world(N), render_mode=render_mode,
                           max_cycles=check_int(f"{NAME}: max_cycles", max_cycles),
                           continuous_actions=check_bool(f"{NAME}: continuous_actions", continuous_actions),
                           local_ratio=local_ratio)


env = make_env(raw_env)
parallel_env = parallel_wrapper_fn(env)


@dataclass(frozen=True)
class ObservationLayout:
    """Where each part of an agent's decoy observation sits (the same for every agent): the metadata a token
    cutter needs. With d = 0 it describes simple_spread's observation (``landmark_width`` 2, no bit)."""

    n_agents: int
    n_targets: int
    n_decoys: int
    landmark_width: int
    """Numbers per landmark entry: 3 (``dx, dy, is_target``) with decoys, 2 (``dx, dy``) without."""

    @property
    def n_landmarks(self) -> int:
        return self.n_targets + self.n_decoys

    @property
    def landmark_columns(self) -> np.ndarray:
        """(m + k, landmark_width) columns of each landmark slot; ``[:, 2]`` is the ``is_target`` bit (d ≥ 1)."""
        start = 4 + np.arange(self.n_landmarks)[:, None] * self.landmark_width
        return start + np.arange(self.landmark_width)[None, :]

    @property
    def agent_start(self) -> int:
        """First column of the other agents' relative positions (then their communication, 2 each)."""
        return 4 + self.landmark_width * self.n_landmarks

    @property
    def obs_dim(self) -> int:
        return self.agent_start + 4 * (self.n_agents - 1)


def observation_layout(N: int, decoys: int) -> ObservationLayout:
    """The observation layout of simple_spread with ``decoys`` decoys per agent and ``N`` agents (see the module)."""
    N, decoys = check_int("N", N), check_int("decoys", decoys, minimum=0)
    return ObservationLayout(N, N, decoys * N, 3 if decoys else 2)
