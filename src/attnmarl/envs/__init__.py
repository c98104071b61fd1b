"""Environments: the real `mpe2` Multi-Particle Environments, and fast batched ports of three of them.

The reference (book §5): ``make_reference`` builds the mpe2 environment (PettingZoo parallel
API) by name, ``evaluate`` scores a policy on it, ``render_episode`` draws its frames.

The ports: ``make_batched("simple_spread" | "simple_tag" | "collect_treasure", num_envs)`` steps
many worlds as numpy arrays with the same observations, rewards and episode ends as mpe2 —
checked by parity tests that copy an mpe2 state into a port (``load_state``) and replay whole
episodes. ``entity_tokens`` cuts an observation into the per-entity vectors self-attention reads, and
``apply_sight`` limits what it shows to a radius (chapter 11's limited sight, :mod:`attnmarl.envs.sight`).

The book's own scenario, simple_spread with decoys (``"simple_spread_decoys"``, chapter 12), is built on
mpe2's machinery as a reference (:mod:`attnmarl.envs.decoys`) with its port and tokens beside it
(:mod:`attnmarl.envs.decoys_port`).

Chapter 12's second benchmark, Level-Based Foraging, is a grid world outside mpe2: :mod:`attnmarl.envs.lbf` holds
the reference (``make_lbf_reference``, from the ``lbforaging`` package), its exact batched port ``BatchedForaging``
and its tokens ``lbf_tokens``; :mod:`attnmarl.envs.lbf_baselines` the random and scripted teams. It is in the
registry too, as ``"lbforaging"`` with the team reward (:mod:`attnmarl.envs.foraging`): ``make_reference`` gives
``lbforaging``'s game in the parallel API above, so that ``evaluate`` scores a policy on it, and ``make_batched``
the port.

Typical use::

    env = make_batched("simple_spread", num_envs=1024, N=3)
    obs = env.reset()                                                 # (1024, 3, 18) float32
    obs, rewards, terminated, truncated, info = env.step(actions)     # actions: (1024, 3) ints
    mean, sem = evaluate(policy, "simple_spread", N=3)                # judged on mpe2 itself
"""
from __future__ import annotations

from typing import Any

from .baselines import (
    chase_policy,
    greedy_assignment_policy,
    random_policy,
    steered_assignment_policy,
    treasure_hunter_policy,
)
from .batched import BatchedEnv
from .decoys_port import BatchedDecoySpread
from .evaluate import cross_play, episode_returns, evaluate
from .foraging import BatchedTeamForaging
from .lbf import BatchedForaging, lbf_token_names, lbf_tokens, make_lbf_reference
from .reference import (
    Policy,
    actions_to_dict,
    make_reference,
    mixed_teams,
    obs_to_array,
    policy_from_arrays,
    render_episode,
    step_arrays,
)
from .scenarios import PORTED, scenario_name
from .sight import SIGHT_RHO, apply_sight, sighted_policy, visibility, visible_fraction
from .spread import BatchedSpread
from .tag import BatchedTag
from .tokens import EntityTokens, TokenLayout, entity_tokens, token_layout
from .treasure import BatchedCollectTreasure

PORTS: dict[str, type[BatchedEnv] | type[BatchedTeamForaging]] = {
    port.scenario: port
    for port in (BatchedSpread, BatchedTag, BatchedCollectTreasure, BatchedDecoySpread, BatchedTeamForaging)
}
"""Scenario name → batched port class."""


def make_batched(scenario: str, num_envs: int, seed: int = 0,
                 **scenario_kwargs: Any) -> BatchedEnv | BatchedTeamForaging:
    """A batched port of ``scenario`` running ``num_envs`` worlds (see :mod:`attnmarl.envs.batched`
    for the array conventions). Arguments are the reference's (defaults too); an unknown scenario or one
    without a port, an argument the port does not implement, ``N < 1``, … raise ``ValueError``."""
    name = scenario_name(scenario)
    if name not in PORTS:
        raise ValueError(f"no batched port of {name!r}; ported scenarios are {list(PORTED)}")
    return PORTS[name](num_envs, seed, **scenario_kwargs)


__all__ = [
    "PORTS",
    "SIGHT_RHO",
    "apply_sight",
    "sighted_policy",
    "visibility",
    "visible_fraction",
    "BatchedCollectTreasure",
    "BatchedDecoySpread",
    "BatchedEnv",
    "BatchedForaging",
    "BatchedSpread",
    "BatchedTag",
    "BatchedTeamForaging",
    "EntityTokens",
    "chase_policy",
    "Policy",
    "TokenLayout",
    "actions_to_dict",
    "cross_play",
    "entity_tokens",
    "episode_returns",
    "evaluate",
    "greedy_assignment_policy",
    "lbf_token_names",
    "lbf_tokens",
    "steered_assignment_policy",
    "treasure_hunter_policy",
    "make_batched",
    "make_lbf_reference",
    "make_reference",
    "mixed_teams",
    "obs_to_array",
    "policy_from_arrays",
    "random_policy",
    "render_episode",
    "step_arrays",
    "token_layout",
]
