"""Value networks for m agents (chapter 7): the concatenation critic and the self-attention critic.

With centralized training, agent i has a state-value network v([o^1, ..., o^m]; w^i) that reads
every agent's observation. Both critics compute all m values in one pass; they are the two shapes of
:mod:`attnmarl.nets.central` with one number per head:

- :class:`ConcatCritic` (fig. 17.7): v_hat^i = g^i([phi(o^1); ...; phi(o^m)]);
- :class:`AttentionCritic` (fig. 17.8): v_hat^i = g^i(FC([x^i; c^i])), c^i = sum_j alpha^i_j v^j.

Shapes: observations ``o`` are ``(batch, m, obs_dim)``; values ``v_hat`` are ``(batch, m)``;
``alpha`` of one attention block is ``(batch, l, m, m)``.
"""
from __future__ import annotations

from collections.abc import Sequence

from torch import Tensor

from .central import AttentionNet, ConcatNet

__all__ = ["ConcatCritic", "AttentionCritic"]


class ConcatCritic(ConcatNet):
    """The concatenation critic of fig. 17.7: x^i = phi(o^i) shared, v_hat^i = g^i([x^1; ...; x^m]).

    ``forward(o)`` maps observations (batch, m, obs_dim) to values (batch, m).
    """

    def __init__(self, m: int, obs_dim: int, agent_types: Sequence[int] | None = None, d_x: int = 32,
                 d_hidden: int = 64) -> None:
        super().__init__(m, obs_dim, 1, agent_types, d_x=d_x, d_hidden=d_hidden)

    def forward(self, o: Tensor) -> Tensor:
        return super().forward(o).squeeze(-1)


class AttentionCritic(AttentionNet):
    """The self-attention critic of fig. 17.8, all m values in one pass.

    ``forward(o, mask=None)`` returns v_hat (batch, m) using PyTorch's fused attention (training);
    ``values_and_alpha(o, mask=None)`` also returns each block's alpha (batch, l, m, m), row i being
    how much agent i's value attends to each agent. ``mask`` (batch, m), True = the agent takes
    part: an absent agent is never attended to (its own v_hat is meaningless and should be ignored).
    """

    def __init__(self, m: int, obs_dim: int, agent_types: Sequence[int] | None = None, d_x: int = 32,
                 d_q: int = 16, d_out: int = 16, heads: int = 2, depth: int = 1, d_hidden: int = 64) -> None:
        super().__init__(m, obs_dim, 1, agent_types, d_x=d_x, d_q=d_q, d_out=d_out, heads=heads, depth=depth,
                         d_hidden=d_hidden)

    def forward(self, o: Tensor, mask: Tensor | None = None) -> Tensor:
        return self.outputs(o, mask)[0].squeeze(-1)

    def values_and_alpha(self, o: Tensor, mask: Tensor | None = None) -> tuple[Tensor, list[Tensor]]:
        """v_hat (batch, m) and the list of each block's alpha (batch, l, m, m)."""
        y, alphas = self.outputs(o, mask, need_weights=True)
        return y.squeeze(-1), alphas
