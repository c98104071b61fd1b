"""Targeted messages between agents (chapter 11): TarMAC (Das et al. 2019) on the entity actor.

Every agent i encodes its own sighted tokens into h^i (:class:`EntityEncoder`: chapter 8's entity layer
without its policy head), and then, in one round of communication,

    sends      k^i = W_k h^i  (a signature: who should listen),   v^i = W_v h^i  (the content),
    asks       q^i = W_q h^i,
    listens    alpha^{ij} = softmax_j(<q^i, k^j> / sqrt(d_k)),     c^i = sum_j alpha^{ij} v^j,

and acts on [h^i; c^i]: y^i = W_y ReLU(W_a [h^i; c^i] + b_a). As in TarMAC's aggregation, c^i = sum over
*all* N senders, so j ranges over every agent, i itself included: alpha^{ii} is how much agent i keeps to its
own message, and every receiver always has at least one message to read. Messages are not limited by the
sight radius: the point is that what j sees can reach i. With two rounds (``rounds=2``, TarMAC's multi-round
communication) the encoding is updated from what was heard, h^i <- tanh(W_u [h^i; c^i] + b_u), and the
messages are sent again with the same W_q, W_k, W_v; the actor acts on the last round's [h^i; c^i].

Controls (:data:`MESSAGES`), which change only alpha: ``"attention"`` is the targeted softmax above;
``"mean"`` sets alpha^{ij} = 1 / m for every sender (CommNet's averaged messages; the same control as the
entity actor's mean pooling); ``"none"`` sets alpha = 0, so c^i = 0 and each agent acts on its own h^i.
Every mode has the same weights (unused ones get no gradient), so one checkpoint layout serves all three.

Execution stays decentralized in the sense of TarMAC: each message is computed from its sender's own
observation only (never from the critic or the state), and :func:`attnmarl.checkpoints.load_policy` runs all
m agents' actors and messages at once from the observation dict mpe2 hands out at each step.

Chapter 11's Algorithm 11.2 states one forward pass of :class:`CommActor` in six steps; the comments
``# Algorithm 11.2, step n`` mark the lines of each, which the book shows under the step
(:mod:`attnmarl.site.codelines`).
"""
from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from ..checks import check_choice, check_finite, check_int, check_like, check_sizes
from ..envs.sight import check_sight_scenario
from .common import linear, mlp
from .policies import POLICY_OUT_GAIN, EntityAttention
from .sighted import SightedEntityActor

__all__ = ["MESSAGES", "EntityEncoder", "TargetedMessages", "CommActor"]

MESSAGES = ("none", "mean", "attention")
"""How a receiver weighs the senders' messages: not at all (c^i = 0), uniformly (alpha^{ij} = 1 / m), or by
its own query (TarMAC's targeted attention)."""


class EntityEncoder(EntityAttention):
    """Agent i's encoding h^i of its own tokens: :class:`EntityAttention` up to LN(h) of the self token
    (d numbers), without the policy head W_y. ``forward`` returns (h, alpha over tokens) and ``folded`` h."""

    def __init__(self, d_tokens: int, d: int = 32, heads: int = 2, d_ff: int = 64,
                 kind_widths: Sequence[int] | None = None, mixing: str = "attention") -> None:
        super().__init__(d_tokens, d, d, heads, d_ff, kind_widths, mixing)
        del self.W_y  # the encoding is read by the messages and by CommActor's own head

    def _head(self, e_self: Tensor, attended: Tensor) -> Tensor:
        return self._encoding(e_self, attended)


class TargetedMessages(nn.Module):
    """One round of messages among m agents: h (batch, m, d) -> c (batch, m, d_v) and alpha (batch, m, m),
    rows the receivers i, columns the senders j (the equations of :mod:`attnmarl.nets.messages`). ``h`` must be
    finite and of the weights' dtype and device (``ValueError``): one sender's NaN would reach every receiver
    through the softmax over senders."""

    def __init__(self, d: int, d_k: int = 16, d_v: int | None = None, messages: str = "attention") -> None:
        super().__init__()
        d_v = d if d_v is None else d_v
        check_sizes(d=d, d_k=d_k, d_v=d_v)
        check_choice("messages", messages, MESSAGES)
        self.messages, self.d_k = messages, d_k
        self.W_q = nn.Linear(d, d_k, bias=False)
        self.W_k = nn.Linear(d, d_k, bias=False)
        self.W_v = nn.Linear(d, d_v, bias=False)

    def forward(self, h: Tensor) -> tuple[Tensor, Tensor]:
        if not isinstance(h, Tensor) or h.dim() != 3 or h.shape[-1] != self.W_q.in_features:
            shape = tuple(h.shape) if isinstance(h, Tensor) else type(h).__name__
            raise ValueError(f"h must be a tensor (batch, m, d = {self.W_q.in_features}); got {shape}")
        check_like("h", h, self.W_q.weight)
        check_finite("h, the senders' encodings (batch, sender j, feature),", h)
        v = self.W_v(h)  # Algorithm 11.2, step 2: what each sender says, (batch, m, d_v)
        m = h.shape[1]
        if self.messages == "attention":
            q, k = self.W_q(h), self.W_k(h)  # Algorithm 11.2, step 3: (batch, m, d_k) each
            alpha = torch.softmax(q @ k.transpose(1, 2) / math.sqrt(self.d_k), dim=-1)  # over senders j
        elif self.messages == "mean":
            alpha = h.new_full((h.shape[0], m, m), 1.0 / m)
        else:
            alpha = h.new_zeros((h.shape[0], m, m))
        return alpha @ v, alpha  # Algorithm 11.2, step 4: c^i = sum_j alpha^{ij} v^j


class CommActor(SightedEntityActor):
    """Decentralized entity actors that talk: pi(a^i | tokens of o^i, c^i; theta), c^i the attended messages.

    The token machinery, the sight radius ``rho`` (``None``: full sight) and the key mask are those of
    :class:`SightedEntityActor`; its per-type networks are :class:`EntityEncoder` s, whose h^i go through
    ``rounds`` rounds of :class:`TargetedMessages` and a head W_a, W_y on [h^i; c^i]. No weight depends on m.

    ``forward(o)`` (batch, m, 6N) -> (batch, m, d_y); ``outputs_and_alpha(o)`` also returns alpha over
    senders, (batch, rounds, m, m): row i, column j is how much agent i listens to agent j.
    """

    def __init__(self, scenario: str, scenario_kwargs: Mapping[str, Any], m: int, obs_dim: int, d_y: int,
                 rho: float | None, agent_types: Sequence[int] | None = None, d: int = 32, heads: int = 2,
                 d_ff: int = 64, mixing: str = "attention", messages: str = "attention", rounds: int = 1,
                 d_k: int = 16, d_hidden: int = 64) -> None:
        check_sight_scenario(scenario)
        super().__init__(scenario, scenario_kwargs, m, obs_dim, d_y, rho, agent_types, d, heads, d_ff, mixing)
        self.rounds = check_int("rounds", rounds)
        self.talk = TargetedMessages(d, d_k, d, messages)
        self.W_u = nn.Linear(2 * d, d) if self.rounds > 1 else None
        """TarMAC's update between rounds, h^i <- tanh(W_u [h^i; c^i] + b_u) (only with two rounds or more)."""
        self.head = nn.Sequential(mlp([2 * d, d_hidden]), linear(d_hidden, d_y, gain=POLICY_OUT_GAIN))

    @property
    def messages(self) -> str:
        """``"none"``, ``"mean"`` or ``"attention"`` (:data:`MESSAGES`)."""
        return self.talk.messages

    @staticmethod
    def _type_net(d_tokens: int, d_y: int, d: int, heads: int, d_ff: int, kind_widths: Sequence[int],
                  mixing: str) -> EntityAttention:
        return EntityEncoder(d_tokens, d, heads, d_ff, kind_widths, mixing)

    def encodings(self, o: Tensor) -> Tensor:
        """h^i of every agent from its own sighted tokens: (batch, m, d)."""
        return self._groups.join(self._folded(o))  # Algorithm 11.2, step 1

    def speak(self, h: Tensor) -> tuple[Tensor, Tensor]:
        """The rounds of messages from encodings h (batch, m, d): y (batch, m, d_y) and alpha
        (batch, rounds, m, m)."""
        alphas = []
        for r in range(self.rounds):  # Algorithm 11.2, step 5
            c, alpha = self.talk(h)
            alphas.append(alpha)
            if r + 1 < self.rounds:
                h = torch.tanh(self.W_u(torch.cat([h, c], dim=-1)))
        return self.head(torch.cat([h, c], dim=-1)), torch.stack(alphas, dim=1)  # Algorithm 11.2, step 6

    def outputs_and_alpha(self, o: Tensor) -> tuple[Tensor, Tensor]:
        return self.speak(self.encodings(o))

    def forward(self, o: Tensor) -> Tensor:
        return self.speak(self.encodings(o))[0]
