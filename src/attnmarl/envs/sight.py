"""Limited sight (chapter 11): agent i sees a landmark or another agent only within a radius rho.

In simple_spread agent i's observation already holds every entity *relative* to itself,
``o^i = [v, p, (p_l − p) for each landmark l, (p_j − p) for each other agent j, c_j for each j]``
(:mod:`attnmarl.envs.spread`), so what it can see follows from o^i alone:

    visible^i_l = |p_l − p_i| <= rho,     visible^i_j = |p_j − p_i| <= rho,

and the sighted observation keeps the features of the visible entities and sets those of the others to
exactly zero (an unseen agent's channel c_j too). The self token [v, p] is always visible. Because it reads
only the observation, :func:`apply_sight` is one function for an mpe2 observation (``(6N,)``), the batched
port's arrays (``(num_envs, N, 6N)``) and a network's tensors (numpy or torch): training on the port and
evaluating on mpe2 see the same thing (the parity test of ``tests/test_sight.py``). The zeros alone would
be ambiguous — a zero offset also means "a landmark right here" — so the flags ``visible`` go with them: the
flat actor reads both, the entity actor takes ``visible`` as its key mask (:mod:`attnmarl.nets.sighted`).

mpe2's own partial observability (``num_landmark_neighbors``, ``num_agent_neighbors``) is another rule: the k
nearest entities, sorted by distance, so a slot no longer names an entity. Sight by radius keeps every slot's
identity and lets the number seen vary, which is what a key mask expresses.

The radius belongs to a run's config (``MAPPOConfig.sight_radius``) and the actor applies it to the raw
observation in its forward pass, so a trained policy plays plain mpe2. :data:`SIGHT_RHO` is the radius the
chapter uses; :func:`visible_fraction` measures what it hides.
"""
from __future__ import annotations

import math
from typing import Any, TypeVar

import numpy as np
import torch
from torch import Tensor

from ..checks import check_episodes, check_finite, check_int, check_real, check_seed, derived_seed
from .reference import Policy, make_reference
from .scenarios import scenario_name

__all__ = ["SIGHT_RHO", "NARROW_SIGHT_RHO", "SIGHT_SCENARIOS", "check_rho", "check_sight_scenario", "sight_entities",
           "visibility", "apply_sight", "sighted_policy", "visible_fraction"]

SIGHT_RHO = 1.0
"""The sight radius of chapter 11's runs. Measured on 1,000 mpe2 resets of simple_spread with N = 6 (seeds
0-999, all 6 agents of each: :func:`visible_fraction`): an agent sees 48.3% of the landmarks and 48.1% of the
other agents at reset, and 4.0% of agents see no landmark at all (rho = 1.02 would give 49.8%; the round
radius, half the arena's width, is kept). The fraction does not depend on N: positions are uniform in
[-1, 1]^2 whatever the team size."""

NARROW_SIGHT_RHO = 0.5
"""A second, narrower radius for chapter 11's decisive point (m = 6). At :data:`SIGHT_RHO` the chapter 8 actors
lose almost nothing (an agent needs its nearest landmarks, which it sees), so messages have little to carry.
At rho = 0.5, measured as above (:func:`visible_fraction`, 1,000 resets at N = 6), an agent sees 15.8% of the
landmarks and 15.6% of the other agents at reset, and 36.4% of agents see no landmark at all: what one agent
sees, the others often cannot."""

SIGHT_SCENARIOS = ("simple_spread",)
"""The scenarios whose observations :func:`apply_sight` can cut by radius."""

Array = TypeVar("Array", np.ndarray, Tensor)


def check_rho(rho: Any) -> float:
    """``rho`` as a float if it is a sight radius: a finite real number >= 0 (0 sees only oneself); else
    ``ValueError`` (a NaN radius would hide everything silently, a negative one too)."""
    return check_real("the sight radius rho", rho, 0.0, math.inf)


def check_sight_scenario(scenario: str) -> str:
    """The scenario's name if limited sight is defined for it (:data:`SIGHT_SCENARIOS`); else ``ValueError``."""
    name = scenario_name(scenario)
    if name not in SIGHT_SCENARIOS:
        raise ValueError(f"limited sight is defined for {list(SIGHT_SCENARIOS)}, not {name!r}: its observation does "
                         "not hold every entity as an offset from the agent")
    return name


def sight_entities(obs_dim: int) -> tuple[int, np.ndarray]:
    """For a simple_spread observation of ``obs_dim = 6N`` numbers: N, and the entity each column belongs to
    (``(obs_dim,)`` ints): 0 for the self features [v, p], 1 … N for the landmarks, N + 1 … 2N − 1 for the other
    agents (their offsets and their channels) — the order of the flags of :func:`visibility`, after a leading 0."""
    obs_dim = check_int("obs_dim", obs_dim)
    if obs_dim % 6:
        raise ValueError(f"a simple_spread observation has 6N numbers (N agents and N landmarks); got {obs_dim}")
    n = obs_dim // 6
    landmarks = np.repeat(np.arange(1, n + 1), 2)
    others = np.repeat(np.arange(n + 1, 2 * n), 2)
    return n, np.concatenate([np.zeros(4, dtype=np.int64), landmarks, others, others])


def _offsets(obs: Array, n: int) -> Array:
    """The offsets of the N landmarks and N − 1 other agents in ``obs`` (..., 6N), as (..., 2N − 1, 2)."""
    return obs[..., 4:4 + 2 * n + 2 * (n - 1)].reshape(*obs.shape[:-1], 2 * n - 1, 2)


def _check_obs(obs: Any) -> None:
    """``obs`` must be a numpy array or a torch tensor of floating-point numbers (any float dtype: it is kept),
    with a last axis, and finite: a NaN offset is never within the radius, so a NaN observation would be
    silently zeroed (and an integer one is no observation of positions). Else ``ValueError``."""
    if not isinstance(obs, (np.ndarray, Tensor)):
        raise ValueError(f"obs must be a numpy array or a torch tensor of shape (..., 6N); got {type(obs).__name__}")
    if obs.ndim < 1:
        raise ValueError("obs must have a last axis of 6N numbers; got a scalar")
    tensor = isinstance(obs, Tensor)
    if not (obs.is_floating_point() if tensor else np.issubdtype(obs.dtype, np.floating)):
        raise ValueError(f"obs must hold floating-point numbers (positions and velocities); got dtype {obs.dtype}: "
                         f"convert it, for example {'obs.float()' if tensor else 'obs.astype(np.float32)'}")
    check_finite("obs", torch.as_tensor(obs))


def visibility(obs: Array, rho: float) -> Array:
    """Which entities agent i sees, from its own observation(s) ``obs`` (..., 6N), finite floats: bool
    (..., 2N − 1), the N landmarks then the N − 1 other agents in the observation's order; True where
    |offset| <= rho."""
    _check_obs(obs)
    return _visible(obs, check_rho(rho))


def _visible(obs: Array, rho: float) -> Array:
    n, _ = sight_entities(obs.shape[-1])
    offsets = _offsets(obs, n)
    return (offsets * offsets).sum(-1) <= rho * rho


def apply_sight(obs: Array, rho: float) -> tuple[Array, Array]:
    """Limited sight on simple_spread observations ``obs`` (..., 6N), numpy or torch, of finite floats: the
    sighted observations (the same shape and dtype, every feature of an unseen entity exactly 0, the rest
    unchanged) and the flags ``visible`` (..., 2N − 1) of :func:`visibility`. A non-float ``obs``, or one that
    holds NaN or an infinity (which the zeros would hide), is a ``ValueError``."""
    _check_obs(obs)
    visible = _visible(obs, check_rho(rho))
    _, entity = sight_entities(obs.shape[-1])
    if isinstance(obs, Tensor):
        seen = torch.cat([visible.new_ones(visible.shape[:-1] + (1,)), visible], -1)
        keep = seen[..., torch.as_tensor(entity, device=obs.device)]
        return torch.where(keep, obs, obs.new_zeros(())), visible
    seen = np.concatenate([np.ones(visible.shape[:-1] + (1,), dtype=bool), visible], -1)
    return np.where(seen[..., entity], obs, np.zeros((), obs.dtype)), visible


def sighted_policy(policy: Policy, rho: float) -> Policy:
    """A dict policy that is shown sighted observations: every mpe2 observation passes through
    :func:`apply_sight` (zeros only; the flags are dropped) before ``policy`` sees it. It is how an actor that
    was trained with full sight and cannot read flags (chapter 8's flat actor) meets limited sight; an entity
    actor should take the flags as its key mask instead (``MAPPOConfig.sight_radius``), since for it a zeroed
    token is a landmark at its own position."""
    rho = check_rho(rho)

    def sighted(obs: dict[str, np.ndarray]) -> dict[str, Any]:
        return policy({agent: apply_sight(np.asarray(o), rho)[0] for agent, o in obs.items()})

    if hasattr(policy, "built_for"):
        sighted.built_for = policy.built_for
    return sighted


def visible_fraction(rho: float = SIGHT_RHO, N: int = 6, resets: int = 1000, seed: int = 0) -> dict[str, float]:
    """What sight radius ``rho`` hides in simple_spread with N agents, measured on ``resets`` mpe2 resets (seeds
    ``seed`` … ``seed + resets − 1``, within 64 bits: :func:`attnmarl.checks.derived_seed`; every agent of each):
    the mean fraction of landmarks and of other agents an agent sees, and the share of agents that see no landmark
    (the numbers of :data:`SIGHT_RHO`'s docstring). ``seed`` must be an integer from 0 to
    :data:`attnmarl.checks.SEED_MAX` (:func:`attnmarl.checks.check_seed`)."""
    rho, N = check_rho(rho), check_int("N", N, minimum=2)
    check_episodes("resets", resets)
    seed = check_seed(seed)
    env = make_reference("simple_spread", N=N)
    seen = []
    for k in range(resets):
        obs, _ = env.reset(seed=derived_seed(seed, k))
        seen.append(_visible(np.stack([obs[agent] for agent in env.possible_agents]), rho))
    visible = np.concatenate(seen)  # (resets * N, 2N - 1)
    return {"rho": rho, "landmarks": float(visible[:, :N].mean()), "agents": float(visible[:, N:].mean()),
            "no_landmark": float((~visible[:, :N].any(1)).mean())}
