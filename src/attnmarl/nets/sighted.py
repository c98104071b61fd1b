"""Actors under limited sight (chapter 11): the policy applies the sight radius rho to the raw observation.

Each actor here is given the full simple_spread observation o^i, as mpe2 and the batched port produce it,
and cuts it itself with :func:`attnmarl.envs.sight.apply_sight`: the features of every landmark and other
agent farther than rho become 0, and the flags ``visible^i`` say which ones. The radius is part of the actor
(and of the run's config, ``MAPPOConfig.sight_radius``), so a checkpoint plays plain mpe2 with the scenario's
own arguments and still sees only what it was trained to see. The centralized critic is not limited:
it reads every agent's full observation during training (centralized training, decentralized execution),
which is what lets it judge actions whose consequences the actor could not see.

- :class:`SightedActor` — the flat actor pi(a^i | [o^i_sighted; visible^i]; theta): an MLP on the zeroed
  observation and the 2N − 1 flags (without the flags a zeroed offset would read as "right here").
- :class:`SightedEntityActor` — the entity actor with ``visible^i`` as its key mask: an unseen entity's
  token gets exactly zero attention weight (chapter 2's masked softmax), so nothing about it reaches y^i;
  the self token is always visible. Its weights are those of :class:`EntityActor` (the same state dict),
  and it runs at any m.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from ..envs.sight import apply_sight, check_rho, check_sight_scenario, sight_entities, visibility
from .common import check_obs
from .policies import Actor, EntityActor

__all__ = ["SightedActor", "SightedEntityActor"]


class SightedActor(nn.Module):
    """Decentralized flat policy under limited sight: pi(a^i | [o^i with unseen entities zeroed; visible^i]).

    ``forward(o)`` maps the raw observations (batch, m, 6N) to outputs (batch, m, d_y); the inner
    :class:`Actor` (``pi``) reads 6N + 2N − 1 numbers per agent. Its shapes depend on m, like the flat actor's.
    """

    def __init__(self, scenario: str, m: int, obs_dim: int, d_y: int, rho: float,
                 agent_types: Sequence[int] | None = None, d_hidden: int = 64) -> None:
        super().__init__()
        check_sight_scenario(scenario)
        self.rho = check_rho(rho)
        n, _ = sight_entities(obs_dim)
        self.m, self.obs_dim, self.d_y = m, obs_dim, d_y
        self.pi = Actor(m, obs_dim + 2 * n - 1, d_y, agent_types, d_hidden)

    def forward(self, o: Tensor) -> Tensor:
        check_obs(o, self.m, self.obs_dim, self.pi.pis[0][-1].weight)
        sighted, visible = apply_sight(o, self.rho)
        return self.pi(torch.cat([sighted, visible.to(o.dtype)], dim=-1))


class SightedEntityActor(EntityActor):
    """Decentralized entity-attention policy under limited sight: agent i attends over the tokens it sees.

    The tokens are those of :class:`EntityActor` cut from the sighted observation, and the key mask is
    [True (self); visible^i] (batch, m, n): the same token order, self, N landmarks, N − 1 other agents.
    ``rho=None`` is full sight (no mask): the network is then exactly :class:`EntityActor`.
    ``forward(o)`` (batch, m, 6N) -> (batch, m, d_y) by the folded form; ``outputs_and_alpha(o)`` also gives
    alpha (batch, m, l, n), exactly 0 on every unseen token.
    """

    def __init__(self, scenario: str, scenario_kwargs: Mapping[str, Any], m: int, obs_dim: int, d_y: int,
                 rho: float | None, agent_types: Sequence[int] | None = None, d: int = 32, heads: int = 2,
                 d_ff: int = 64, mixing: str = "attention") -> None:
        check_sight_scenario(scenario)
        super().__init__(scenario, dict(scenario_kwargs), m, obs_dim, d_y, agent_types, d, heads, d_ff,
                         mixing=mixing)
        self.rho = None if rho is None else check_rho(rho)

    def sighted(self, o: Tensor) -> Tensor:
        """The observations the actor sees (batch, m, 6N): every feature of an unseen entity 0 (``o`` itself with
        full sight)."""
        check_obs(o, self.m, self.obs_dim, self.nets[0].embed.weight)
        return o if self.rho is None else apply_sight(o, self.rho)[0]

    def tokens(self, o: Tensor) -> list[Tensor]:
        """Each type's tokens (batch, m_type, n, d_tokens), cut from the *sighted* observations."""
        return super().tokens(self.sighted(o))

    def kind_tokens(self, o: Tensor) -> list[list[Tensor]]:
        """:meth:`EntityActor.kind_tokens` of the *sighted* observations."""
        return super().kind_tokens(self.sighted(o))

    def masks(self, o: Tensor) -> list[Tensor | None]:
        """Each type's key mask (batch, m_type, n), [True (self); visible^i], or ``None`` with full sight: the hook
        of :class:`EntityActor` that both its forms apply (:meth:`outputs_and_alpha` and the folded
        :meth:`forward`)."""
        check_obs(o, self.m, self.obs_dim, self.nets[0].embed.weight)
        if self.rho is None:
            return [None] * len(self.nets)
        visible = visibility(o, self.rho)
        mask = torch.cat([visible.new_ones(visible.shape[:-1] + (1,)), visible], dim=-1)
        return [mask[:, members] for members in self._groups.members]
