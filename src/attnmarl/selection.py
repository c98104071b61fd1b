"""Where an entity actor's attention lands on chapter 12's two benchmarks (its read-outs).

**simple_spread with decoys** (:func:`decoy_alpha`). A decoy is a landmark that carries no reward: an actor that
selects its targets should put less of its weight on the decoys than an even spread would. :func:`decoy_alpha` reads
it off the actor's own alpha (the self token's row, :class:`attnmarl.nets.policies.EntityAttention`), averaged over
heads, agents and a fixed set of worlds:

    share on decoys    = sum of alpha over the decoy slots,
    share on landmarks = sum of alpha over every landmark slot (targets and decoys).

Their ratio is the decoys' part of the attention the landmarks get; with the k = d·m decoys among m + k landmark
slots, an actor that did not tell them apart would give them k / (m + k) of it (the uniform share).

**Level-Based Foraging** (:func:`lbf_alpha`). LBF has distractors of its own: a food too heavy for the players that
can reach it. The read-out sorts the foods a player sees by who could lift them (:data:`LBF_CLASSES`) and says
which share of alpha each class gets, beside the share mean pooling would give it.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
from torch import nn

from .checks import check_int, check_seed
from .envs import make_batched
from .envs.decoys import NAME as DECOYS
from .envs.foraging import NAME as FORAGING
from .envs.lbf import lbf_tokens
from .envs.lbf_baselines import random_actions
from .nets.foraging import ForagingView
from .nets.policies import DecoyView

__all__ = ["decoy_alpha", "uniform_decoy_share", "READOUT_WORLDS", "READOUT_SEED", "LBF_CLASSES", "LBF_READOUT_STEPS",
           "lbf_readout_observations", "lbf_token_classes", "lbf_alpha"]

READOUT_WORLDS = 256
"""Worlds the read-out averages over: their first observations, the moment each agent picks its landmark."""
READOUT_SEED = 10_000
"""The port's seed for those worlds, apart from every training and evaluation seed (0-199) of the book."""


def uniform_decoy_share(m: int, decoys: int) -> float:
    """k / (m + k) with k = decoys · m: the decoys' part of the landmarks' attention if alpha ignored the bit."""
    return decoys * m / (m + decoys * m)


def decoy_alpha(actor: nn.Module, scenario_kwargs: dict[str, Any], worlds: int = READOUT_WORLDS,
                seed: int = READOUT_SEED) -> dict[str, float]:
    """The share of ``actor``'s alpha on the decoy slots and on all landmark slots, over the first observations of
    ``worlds`` worlds of simple_spread with decoys (``scenario_kwargs``: ``N`` and ``decoys`` >= 1).

    ``actor`` is an entity actor (:class:`attnmarl.nets.policies.EntityActor` or its decoy control) of one agent
    type; with mean pooling alpha is uniform over the tokens, and the read-out says so. Nothing of the actor or of
    any random generator but the port's own changes. ``ValueError`` without decoys, or for an actor that has no
    alpha (the flat actor)."""
    if not hasattr(actor, "outputs_and_alpha"):
        raise ValueError(f"{type(actor).__name__} has no attention weights to read; the read-out needs an entity actor")
    if not isinstance(scenario_kwargs, Mapping):
        raise ValueError(f"scenario_kwargs must be a mapping such as {{'N': 3, 'decoys': 1}}; "
                         f"got {type(scenario_kwargs).__name__} {scenario_kwargs!r}")
    worlds, seed = check_int("worlds", worlds), check_seed(seed)
    if int(scenario_kwargs.get("decoys", 0)) < 1:
        raise ValueError(f"the read-out needs decoys >= 1; got scenario_kwargs {dict(scenario_kwargs)}")
    weight = next(actor.parameters())
    o = make_batched(DECOYS, worlds, seed=seed, **scenario_kwargs).reset()
    o = torch.as_tensor(np.asarray(o), dtype=weight.dtype, device=weight.device)
    view = DecoyView("no-bit", DECOYS, scenario_kwargs, o.shape[-1]).to(o.device)  # its slots and true bits only
    with torch.no_grad():
        _, alpha = actor.outputs_and_alpha(o)  # (worlds, m, l, n_tokens)
    if isinstance(alpha, list):
        raise ValueError("the read-out needs one agent type (simple_spread's agents are one)")
    slots = alpha.index_select(-1, view.slot_tokens).mean(-2)  # (worlds, m, n_slots), averaged over heads
    decoy = ~view.is_target(o)
    return {"decoys": float((slots * decoy).sum(-1).mean()), "landmarks": float(slots.sum(-1).mean())}


# --------------------------------------------------------------------------------------------
# Level-Based Foraging: who could lift the food a player looks at
# --------------------------------------------------------------------------------------------

LBF_CLASSES = ("self", "players", "alone", "together", "beyond")
"""The classes of an LBF player's tokens (:func:`attnmarl.envs.lbf.lbf_tokens`), for :func:`lbf_alpha`. With L the
player's own level and S the sum of the levels of the players it sees, itself included (LBF shows the level of
every player in sight), a food of level f it sees is

- ``"alone"``: f <= L, the player can lift it by itself;
- ``"together"``: L < f <= S, it can be lifted only with players in view loading beside it;
- ``"beyond"``: f > S, the players in view cannot lift it however they team up: LBF's own distractor, a food that
  pays nothing to this group unless players out of sight come.

``"self"`` is the player's own token and ``"players"`` the others it sees. Empty slots (LBF's ``(−1, −1, 0)``,
masked out of attention) belong to no class."""

LBF_READOUT_STEPS = 10
"""The steps of each read-out world whose observations count (:func:`lbf_readout_observations`)."""


def lbf_readout_observations(scenario_kwargs: Mapping[str, Any], worlds: int = READOUT_WORLDS,
                             seed: int = READOUT_SEED, steps: int = LBF_READOUT_STEPS) -> np.ndarray:
    """The observations :func:`lbf_alpha` reads, (steps · worlds, m, obs_dim): ``worlds`` LBF games of the port
    (``make_batched("lbforaging", worlds, seed, **scenario_kwargs)``) at reset and after each of ``steps`` − 1 steps
    of the random team (:func:`attnmarl.envs.lbf_baselines.random_actions`, its generator seeded with ``seed``).

    Fixed worlds, played by a team that learns nothing, so that every actor is read on the same observations. A few
    steps of each world rather than its first observation alone give views of its foods from other cells; they do
    not bring food into view more often (a random walk leaves the players spread as the spawn put them: at every m
    of the book about half of the observations show a food, at reset and after ten random steps alike), which is
    why :func:`lbf_alpha` counts only the observations that show one. ``ValueError`` for bad arguments."""
    if not isinstance(scenario_kwargs, Mapping):
        raise ValueError(f"scenario_kwargs must be a mapping such as {{'players': 3, 'size': 10, 'foods': 3}}; "
                         f"got {type(scenario_kwargs).__name__} {scenario_kwargs!r}")
    worlds, steps, seed = check_int("worlds", worlds), check_int("steps", steps), check_seed(seed)
    env = make_batched(FORAGING, worlds, seed=seed, **scenario_kwargs)
    rng = np.random.default_rng(seed)
    obs, seen = env.reset(), []
    for t in range(steps):
        seen.append(obs)
        if t < steps - 1:
            obs = env.step(random_actions(obs, rng))[0]
    return np.concatenate(seen)


def lbf_token_classes(obs: np.ndarray, foods: int) -> np.ndarray:
    """Each token's class (..., n_tokens) as an index into :data:`LBF_CLASSES`, −1 for an empty slot, for LBF
    observations (..., 3·(foods + m)) cut as :func:`attnmarl.envs.lbf.lbf_tokens` cuts them (self, foods, players)."""
    tokens, present = lbf_tokens(obs, foods)
    level = tokens[..., 2]  # 0 in every empty slot
    own = level[..., :1]
    team = own + level[..., 1 + foods:].sum(-1, keepdims=True)  # itself and every player it sees
    food = level[..., 1:1 + foods]
    alone, together, beyond = (LBF_CLASSES.index(c) for c in ("alone", "together", "beyond"))
    food_class = np.select([food <= own, food <= team], [alone, together], beyond)
    players = np.full(level.shape[:-1] + (level.shape[-1] - 1 - foods,), LBF_CLASSES.index("players"))
    classes = np.concatenate([np.full_like(food_class[..., :1], LBF_CLASSES.index("self")), food_class, players], -1)
    return np.where(present, classes, -1)


def lbf_alpha(actor: nn.Module, scenario_kwargs: Mapping[str, Any], worlds: int = READOUT_WORLDS,
              seed: int = READOUT_SEED, steps: int = LBF_READOUT_STEPS) -> dict[str, Any]:
    """Where an LBF entity actor's alpha lands: its share on each class of :data:`LBF_CLASSES`, and the share mean
    pooling would give it, on the observations of :func:`lbf_readout_observations` in which the player sees at
    least one food (elsewhere there is no food to choose). Returns ``{"alpha": {class: share}, "uniform": {class:
    share}, "observations": n}``: each share is the sum of alpha over the class's tokens (the self token's row,
    :class:`attnmarl.nets.policies.EntityAttention`), averaged over heads and over the n (world, step, player)
    observations counted; ``"uniform"`` gives every token present 1 / (tokens present). Each set of shares sums to 1.
    An attention actor that prefers a class gives it more than the uniform share; mean pooling gives it exactly that.

    ``actor`` is an entity actor built for LBF (:class:`attnmarl.nets.policies.EntityActor` on ``"lbforaging"``,
    attention or mean pooling) and ``scenario_kwargs`` the game it plays (players, size, foods). Nothing of the
    actor changes. ``ValueError`` for an actor without alpha (the flat actor), one built for another scenario or
    another game, or bad arguments."""
    if not hasattr(actor, "outputs_and_alpha"):
        raise ValueError(f"{type(actor).__name__} has no attention weights to read; the read-out needs an entity actor")
    view = getattr(actor, "view", None)
    if not isinstance(view, ForagingView):
        raise ValueError(f"{type(actor).__name__} is not built for Level-Based Foraging ({FORAGING!r}); the read-out "
                         "needs an LBF entity actor")
    obs = lbf_readout_observations(scenario_kwargs, worlds, seed, steps)
    players, foods = obs.shape[1], obs.shape[2] // 3 - obs.shape[1]
    if (players, foods) != (actor.m, view.foods):
        raise ValueError(f"the actor is built for {actor.m} players and {view.foods} foods; scenario_kwargs "
                         f"{dict(scenario_kwargs)} give {players} and {foods}")
    weight = next(actor.parameters())
    with torch.no_grad():
        _, alpha = actor.outputs_and_alpha(torch.as_tensor(obs, dtype=weight.dtype, device=weight.device))
    alpha = alpha.mean(-2).cpu().double().numpy()  # (N, m, n_tokens), averaged over heads
    classes = lbf_token_classes(obs, foods)
    present = classes >= 0
    uniform = present / present.sum(-1, keepdims=True)
    counted = present[..., 1:1 + foods].any(-1)  # (N, m): the player sees a food
    if not counted.any():
        raise ValueError(f"no player sees a food in the {worlds} x {steps} read-out observations; more worlds")

    def shares(weights: np.ndarray) -> dict[str, float]:
        return {name: float((weights * (classes == c)).sum(-1)[counted].mean()) for c, name in enumerate(LBF_CLASSES)}

    return {"alpha": shares(alpha), "uniform": shares(uniform), "observations": int(counted.sum())}
