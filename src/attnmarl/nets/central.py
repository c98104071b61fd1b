"""The two centralized network shapes of the source: m observations in, m per-agent outputs out.

Source: Wang, Li & Zhang, *Deep Reinforcement Learning*, the attention chapter, §"attention in
multi-agent RL". With centralized training, agent i's network reads every agent's observation
[o^1, ..., o^m]; in the non-cooperative setting the m networks have their own parameters and
outputs. Both shapes here compute all m outputs in one pass, and the chapters give them heads of
different sizes: a value v_hat^i (the critics, chapter 7), the logits of pi^i or the mean of mu^i
(the centralized policies, chapter 8).

- :class:`ConcatNet` (fig. 17.7): a shared feature extractor x^i = phi(o^i), the m features
  concatenated, and m unshared heads y^i = g^i([x^1; ...; x^m]). Its input size, and so its
  parameter count, grows with m, and y^i depends on where in the concatenation each observation sits.
- :class:`AttentionNet` (fig. 17.8): a shared encoder x^i = phi(o^i), multi-head self-attention
  (x^1..x^m) -> (c^1..c^m), and m unshared heads y^i = g^i(h^i) where h^i = FC([x^i; c^i]).
  Agent i's head sees its own x^i through that skip connection, and the others only through c^i,
  a weighted sum over the set {x^j}: swapping o^j and o^k (j, k != i) leaves y^i unchanged.

Shapes: observations ``o`` are ``(batch, m, obs_dim)``; outputs ``(batch, m, d_y)``; ``alpha`` of
one attention block is ``(batch, l, m, m)``.
"""
from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor, nn

from ..attention import MultiHeadSelfAttention
from ..checks import check_no_overflow, check_sizes
from .common import AgentHeads, check_obs, check_types, linear, mlp, n_type_features, type_features

__all__ = ["ConcatNet", "AttentionBlock", "AttentionNet"]


class ConcatNet(nn.Module):
    """Fig. 17.7: x^i = phi(o^i) shared, y^i = g^i([x^1; ...; x^m]) with m unshared heads.

    ``forward(o)`` maps observations (batch, m, obs_dim) to outputs (batch, m, d_y). Head i's first
    layer has m * d_x inputs, so the parameters grow as m^2 d_x d_hidden, and which weights read
    o^j depends on j's position in the concatenation (no permutation invariance).
    """

    def __init__(self, m: int, obs_dim: int, d_y: int, agent_types: Sequence[int] | None = None, d_x: int = 32,
                 d_hidden: int = 64, out_gain: float = 1.0) -> None:
        super().__init__()
        self.agent_types = check_types(agent_types, m)
        check_sizes(obs_dim=obs_dim, d_y=d_y, d_x=d_x, d_hidden=d_hidden)
        self.m, self.obs_dim = m, obs_dim
        self.phi = mlp([obs_dim + n_type_features(self.agent_types), d_x, d_x])
        self.heads = AgentHeads(m, m * d_x, d_hidden, d_y, out_gain)

    def forward(self, o: Tensor) -> Tensor:
        check_obs(o, self.m, self.obs_dim, self.heads.out.W)
        x = self.phi(type_features(o, self.agent_types))  # (batch, m, d_x)
        y = self.heads(x.flatten(1))  # [x^1; ...; x^m]: (batch, m d_x) -> (batch, m, d_y)
        return check_no_overflow(type(self).__name__, y, o, self)


class AttentionBlock(nn.Module):
    """One attention -> FC block: c^i = sum_j alpha^i_j v^j over (h^1..h^m), then
    h^i <- ReLU(W [h^i; c^i] + b) with the same W for every agent (a skip connection keeps h^i)."""

    def __init__(self, d_x: int, d_q: int, d_out: int, heads: int) -> None:
        super().__init__()
        self.attention = MultiHeadSelfAttention(d_x, d_q, d_out, heads=heads, scale=True)
        self.fc = linear(d_x + heads * d_out, d_x)

    def forward(self, h: Tensor, mask: Tensor | None = None,
                need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        c, alpha = self.attention(h, mask, need_weights)  # (batch, m, l d_out), (batch, l, m, m) or None
        return torch.relu(self.fc(torch.cat([h, c], dim=-1))), alpha


class AttentionNet(nn.Module):
    """Fig. 17.8, all m outputs in one pass.

    x^i = phi(o^i) (one encoder for every agent), then ``depth`` :class:`AttentionBlock`\\ s
    (multi-head self-attention with l = ``heads`` heads, scores scaled by 1/sqrt(d_q), then a shared
    FC layer on [h^i; c^i]), then m unshared heads y^i = g^i(h^i). Only the heads depend on m.

    ``outputs(o, mask=None, need_weights=False)`` returns y (batch, m, d_y) and each block's alpha
    (batch, l, m, m) — row i is how much agent i's output attends to each agent — or ``None``s
    without ``need_weights`` (PyTorch's fused attention, for training). ``mask`` (batch, m),
    True = the agent takes part: an absent agent is never attended to (its own output is meaningless).
    """

    def __init__(self, m: int, obs_dim: int, d_y: int, agent_types: Sequence[int] | None = None, d_x: int = 32,
                 d_q: int = 16, d_out: int = 16, heads: int = 2, depth: int = 1, d_hidden: int = 64,
                 out_gain: float = 1.0) -> None:
        super().__init__()
        self.agent_types = check_types(agent_types, m)
        check_sizes(obs_dim=obs_dim, d_y=d_y, d_x=d_x, d_q=d_q, d_out=d_out, heads=heads, depth=depth,
                    d_hidden=d_hidden)
        self.m, self.obs_dim = m, obs_dim
        self.phi = mlp([obs_dim + n_type_features(self.agent_types), d_x, d_x])
        self.blocks = nn.ModuleList(AttentionBlock(d_x, d_q, d_out, heads) for _ in range(depth))
        self.heads = AgentHeads(m, d_x, d_hidden, d_y, out_gain)

    def outputs(self, o: Tensor, mask: Tensor | None = None,
                need_weights: bool = False) -> tuple[Tensor, list[Tensor | None]]:
        check_obs(o, self.m, self.obs_dim, self.heads.out.W)
        if mask is not None and (not isinstance(mask, Tensor) or mask.shape != o.shape[:2]):
            raise ValueError(f"mask must be a bool tensor of shape (batch, m) = {tuple(o.shape[:2])}")
        h = check_no_overflow(f"{type(self).__name__}'s encoder", self.phi(type_features(o, self.agent_types)), o,
                              self.phi)
        alphas = []
        for block in self.blocks:
            h, alpha = block(h, mask, need_weights)
            alphas.append(alpha)
        return check_no_overflow(type(self).__name__, self.heads(h), o, self), alphas
