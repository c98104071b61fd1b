"""Action-value (Q) networks for m agents (chapter 9): the concatenation Q critic and the
self-attention Q critic of fig. 17.9.

MADDPG's agent i has an action-value network on the central controller that reads every agent's
observation *and action*: q_hat^i = q([o^1, ..., o^m], [a^1, ..., a^m]; w^i). The action is what
turns a value network v (chapter 7) into a Q network: each agent's token becomes the pair
z^j = [o^j; a^j], and both critics here are chapter 7's two shapes (:mod:`attnmarl.nets.central`)
run on those tokens, with one number per head:

- :class:`ConcatQ` (MADDPG's original critic, in fig. 17.7's shape): f^j = phi([o^j; a^j]) shared,
  q_hat^i = g^i([f^1; ...; f^m]). Lowe et al. feed the raw concatenation [o^1..o^m, a^1..a^m] to
  an MLP; the shared phi in front changes only the first layer, and the parameters still grow as
  m^2 and still depend on where each (o^j, a^j) sits in the concatenation.
- :class:`AttentionQ` (fig. 17.9): x^j = phi([o^j; a^j]) with one phi for every agent (of a type),
  self-attention (x^1..x^m) -> (c^1..c^m), and m unshared heads q_hat^i = g^i(FC([x^i; c^i])).
  Swapping (o^j, a^j) and (o^k, a^k) for j, k != i (agents of one type) leaves q_hat^i unchanged.

Shapes: observations ``o`` are ``(batch, m, obs_dim)``, actions ``a`` ``(batch, m, action_dim)`` (mpe2's
continuous movement action has 5 numbers), the tokens ``(batch, m, obs_dim + action_dim)``, the values
``q_hat`` ``(batch, m)`` and ``alpha`` of one attention block ``(batch, l, m, m)``.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

from ..checks import check_finite, check_like, check_sizes
from .central import AttentionNet, ConcatNet
from .common import check_obs

__all__ = ["ConcatQ", "AttentionQ", "q_tokens"]


def q_tokens(o: Tensor, a: Tensor, m: int, obs_dim: int, action_dim: int, weight: Tensor | None = None) -> Tensor:
    """The Q critics' tokens z^j = [o^j; a^j], (batch, m, obs_dim + action_dim), after checking that ``o`` is
    (batch, m, obs_dim) and ``a`` (batch, m, action_dim), both finite, of one batch size (``ValueError`` otherwise)."""
    check_obs(o, m, obs_dim, weight)
    if not isinstance(a, Tensor) or not a.is_floating_point():
        raise ValueError(f"actions must be a floating-point torch.Tensor of shape (batch, m, action_dim); got "
                         f"{type(a).__name__ if not isinstance(a, Tensor) else a.dtype}")
    if a.shape != (o.shape[0], m, action_dim):
        raise ValueError(f"actions must have shape (batch, m, action_dim) = ({o.shape[0]}, {m}, {action_dim}) to go "
                         f"with observations {tuple(o.shape)}; got {tuple(a.shape)}")
    check_like("actions", a, o, "the observations")
    check_finite("actions", a)
    return torch.cat([o, a], dim=-1)


class ConcatQ(ConcatNet):
    """MADDPG's concatenation Q critic: q_hat^i = g^i([phi(o^1, a^1); ...; phi(o^m, a^m)]), all m in one pass.

    ``forward(o, a)`` maps observations (batch, m, obs_dim) and actions (batch, m, action_dim) to q_hat (batch, m).
    """

    def __init__(self, m: int, obs_dim: int, action_dim: int, agent_types: Sequence[int] | None = None, d_x: int = 32,
                 d_hidden: int = 64) -> None:
        check_sizes(obs_dim=obs_dim, action_dim=action_dim)
        super().__init__(m, obs_dim + action_dim, 1, agent_types, d_x=d_x, d_hidden=d_hidden)
        self.o_dim, self.action_dim = obs_dim, action_dim

    def forward(self, o: Tensor, a: Tensor) -> Tensor:
        z = q_tokens(o, a, self.m, self.o_dim, self.action_dim, self.heads.out.W)
        return super().forward(z).squeeze(-1)


class AttentionQ(AttentionNet):
    """The self-attention Q critic of fig. 17.9, all m action values in one pass.

    ``forward(o, a)`` returns q_hat (batch, m) with PyTorch's fused attention (training);
    ``values_and_alpha(o, a)`` also returns each block's alpha (batch, l, m, m): row i is how much
    q_hat^i attends to each agent's (o^j, a^j).
    """

    def __init__(self, m: int, obs_dim: int, action_dim: int, agent_types: Sequence[int] | None = None, d_x: int = 32,
                 d_q: int = 16, d_out: int = 16, heads: int = 2, depth: int = 1, d_hidden: int = 64) -> None:
        check_sizes(obs_dim=obs_dim, action_dim=action_dim)
        super().__init__(m, obs_dim + action_dim, 1, agent_types, d_x=d_x, d_q=d_q, d_out=d_out, heads=heads,
                         depth=depth, d_hidden=d_hidden)
        self.o_dim, self.action_dim = obs_dim, action_dim

    def forward(self, o: Tensor, a: Tensor) -> Tensor:
        return self.outputs(q_tokens(o, a, self.m, self.o_dim, self.action_dim, self.heads.out.W))[0].squeeze(-1)

    def values_and_alpha(self, o: Tensor, a: Tensor) -> tuple[Tensor, list[Tensor]]:
        """q_hat (batch, m) and the list of each block's alpha (batch, l, m, m)."""
        z = q_tokens(o, a, self.m, self.o_dim, self.action_dim, self.heads.out.W)
        y, alphas = self.outputs(z, need_weights=True)
        return y.squeeze(-1), alphas
