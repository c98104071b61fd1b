"""Where an entity actor's attention lands on simple_spread with decoys (chapter 12's read-out).

A decoy is a landmark that carries no reward: an actor that selects its targets should put less of its weight on
the decoys than an even spread would. :func:`decoy_alpha` reads it off the actor's own alpha (the self token's row,
:class:`attnmarl.nets.policies.EntityAttention`), averaged over heads, agents and a fixed set of worlds:

    share on decoys    = sum of alpha over the decoy slots,
    share on landmarks = sum of alpha over every landmark slot (targets and decoys).

Their ratio is the decoys' part of the attention the landmarks get; with the k = d·m decoys among m + k landmark
slots, an actor that did not tell them apart would give them k / (m + k) of it (the uniform share).
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
from .nets.policies import DecoyView

__all__ = ["decoy_alpha", "uniform_decoy_share", "READOUT_WORLDS", "READOUT_SEED"]

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
