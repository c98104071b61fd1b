"""Value and policy networks for m agents: the concatenation critic, the self-attention critic and a
decentralized actor.

Source: Wang, Li & Zhang, *Deep Reinforcement Learning*, the attention chapter, §"attention in
multi-agent RL". With centralized training, agent i has a state-value network
v([o^1, ..., o^m]; w^i) that reads every agent's observation; in the non-cooperative setting the m
networks have their own parameters and outputs. Both critics here compute all m values in one pass:

- :class:`ConcatCritic` (fig. 17.7): a shared feature extractor f^i = phi(o^i), the m features
  concatenated, and m unshared fully connected heads v_hat^i = g^i([f^1; ...; f^m]). Its input
  size, and so its parameter count, grows with m, and v_hat^i depends on where in the
  concatenation each observation sits.
- :class:`AttentionCritic` (fig. 17.8): a shared encoder x^i = phi(o^i), multi-head self-attention
  (x^1..x^m) -> (c^1..c^m), and m unshared heads v_hat^i = g^i(h^i) where h^i = FC([x^i; c^i]).
  Agent i's head sees its own x^i through that skip connection, and the others only through c^i,
  a weighted sum over the set {x^j}: swapping o^j and o^k (j, k != i) leaves v_hat^i unchanged.

Shapes: observations ``o`` are ``(batch, m, obs_dim)`` — agents in mpe2's ``possible_agents``
order, zero-padded where agents' observations differ (the batched ports' layout); values
``v_hat`` are ``(batch, m)``; ``alpha`` of one attention block is ``(batch, l, m, m)``.

Heterogeneous agents (simple_tag's adversaries and good agents) have an *agent type*. A network that
shares parameters across agents cannot tell the types apart from a zero-padded observation, so
with more than one type every o^i gets its type as a one-hot appended before the shared encoder
(and each type has its own actor). Swapping agents of the same type keeps every property above.
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from .attention import MultiHeadSelfAttention

__all__ = ["AgentLinear", "AgentHeads", "ConcatCritic", "AttentionBlock", "AttentionCritic", "Actor",
           "check_obs", "type_features"]


def check_obs(o: Tensor, m: int, obs_dim: int) -> None:
    """Raise ``ValueError`` unless ``o`` is a float tensor of shape (batch, m, obs_dim)."""
    if not isinstance(o, Tensor):
        raise ValueError(f"observations must be a torch.Tensor of shape (batch, m, obs_dim); got {type(o).__name__}")
    if not o.is_floating_point():
        raise ValueError(f"observations must be a floating-point tensor; got dtype {o.dtype}")
    if o.dim() != 3 or o.shape[1:] != (m, obs_dim):
        raise ValueError(
            f"observations must have shape (batch, m, obs_dim) = (batch, {m}, {obs_dim}); got {tuple(o.shape)}"
        )


def _check_types(agent_types: Sequence[int] | None, m: int) -> tuple[int, ...]:
    """Agent types as a tuple of m ints numbering the types 0, 1, ... (all 0 by default)."""
    if isinstance(m, bool) or not isinstance(m, int) or m < 1:
        raise ValueError(f"m (the number of agents) must be a positive int; got {m!r}")
    types = tuple(int(t) for t in agent_types) if agent_types is not None else (0,) * m
    if len(types) != m:
        raise ValueError(f"agent_types must give one type per agent (m = {m}); got {len(types)}")
    if sorted(set(types)) != list(range(len(set(types)))):
        raise ValueError(f"agent types must be numbered 0, 1, ... without gaps; got {types}")
    return types


def type_features(o: Tensor, agent_types: tuple[int, ...]) -> Tensor:
    """[o^i; one-hot(type of i)] for every agent when there is more than one type, else o itself."""
    n_types = max(agent_types) + 1
    if n_types == 1:
        return o
    one_hot = torch.eye(n_types, dtype=o.dtype, device=o.device)[list(agent_types)]  # (m, n_types)
    return torch.cat([o, one_hot.expand(o.shape[0], -1, -1)], dim=-1)


def _linear(d_in: int, d_out: int, gain: float = math.sqrt(2)) -> nn.Linear:
    """A linear layer with orthogonal weights of the given gain and zero bias (as in CleanRL's PPO)."""
    layer = nn.Linear(d_in, d_out)
    nn.init.orthogonal_(layer.weight, gain)
    nn.init.zeros_(layer.bias)
    return layer


def _mlp(sizes: Sequence[int], activation: type[nn.Module] = nn.ReLU) -> nn.Sequential:
    """Linear layers of the given sizes, each followed by ``activation``: the shared encoder phi."""
    layers: list[nn.Module] = []
    for d_in, d_out in zip(sizes[:-1], sizes[1:]):
        layers += [_linear(d_in, d_out), activation()]
    return nn.Sequential(*layers)


class AgentLinear(nn.Module):
    """m unshared linear layers side by side, y^i = W^i h^i + b^i for i = 1..m, in one batched product.

    ``W`` is (m, d_out, d_in) and ``b`` (m, d_out). The input is either (batch, m, d_in) — a separate
    h^i for each agent — or (batch, d_in), one input that all m layers read (the concatenation
    critic's [f^1; ...; f^m]). The output is (batch, m, d_out).
    """

    def __init__(self, m: int, d_in: int, d_out: int, gain: float = math.sqrt(2)) -> None:
        super().__init__()
        self.m, self.d_in, self.d_out = m, d_in, d_out
        self.W = nn.Parameter(torch.empty(m, d_out, d_in))
        self.b = nn.Parameter(torch.zeros(m, d_out))
        for W_i in self.W.data:
            nn.init.orthogonal_(W_i, gain)

    def extra_repr(self) -> str:
        return f"m={self.m}, d_in={self.d_in}, d_out={self.d_out}"

    def forward(self, h: Tensor) -> Tensor:
        if h.dim() == 2:  # one shared input: a single (batch, d_in) x (d_in, m d_out) product
            return (h @ self.W.flatten(0, 1).T).view(h.shape[0], self.m, self.d_out) + self.b
        return torch.einsum("bmi,moi->bmo", h, self.W) + self.b


class AgentHeads(nn.Module):
    """m unshared MLP heads d_in -> d_hidden -> 1: v_hat^i = g^i(h^i; w^i), the per-agent outputs of
    figs. 17.7 and 17.8. Input (batch, m, d_in) or a shared (batch, d_in); output (batch, m)."""

    def __init__(self, m: int, d_in: int, d_hidden: int) -> None:
        super().__init__()
        self.hidden = AgentLinear(m, d_in, d_hidden)
        self.out = AgentLinear(m, d_hidden, 1, gain=1.0)

    def forward(self, h: Tensor) -> Tensor:
        return self.out(torch.relu(self.hidden(h))).squeeze(-1)


class ConcatCritic(nn.Module):
    """The concatenation critic of fig. 17.7: f^i = phi(o^i) shared, v_hat^i = g^i([f^1; ...; f^m]).

    ``forward(o)`` maps observations (batch, m, obs_dim) to values (batch, m). Head i's first layer
    has m * d_x inputs, so the parameters grow as m^2 d_x d_hidden, and which weights read o^j
    depends on j's position in the concatenation (no permutation invariance).
    """

    def __init__(self, m: int, obs_dim: int, agent_types: Sequence[int] | None = None, d_x: int = 32,
                 d_hidden: int = 64) -> None:
        super().__init__()
        self.agent_types = _check_types(agent_types, m)
        self.m, self.obs_dim = m, obs_dim
        self.phi = _mlp([obs_dim + _n_type_features(self.agent_types), d_x, d_x])
        self.heads = AgentHeads(m, m * d_x, d_hidden)

    def forward(self, o: Tensor) -> Tensor:
        check_obs(o, self.m, self.obs_dim)
        f = self.phi(type_features(o, self.agent_types))  # (batch, m, d_x)
        return self.heads(f.flatten(1))  # [f^1; ...; f^m]: (batch, m d_x) -> (batch, m)


class AttentionBlock(nn.Module):
    """One attention -> FC block: c^i = sum_j alpha^i_j v^j over (h^1..h^m), then
    h^i <- ReLU(W [h^i; c^i] + b) with the same W for every agent (a skip connection keeps h^i)."""

    def __init__(self, d_x: int, d_q: int, d_out: int, heads: int) -> None:
        super().__init__()
        self.attention = MultiHeadSelfAttention(d_x, d_q, d_out, heads=heads, scale=True)
        self.fc = _linear(d_x + heads * d_out, d_x)

    def forward(self, h: Tensor, mask: Tensor | None = None, need_weights: bool = False) -> tuple[Tensor, Tensor | None]:
        c, alpha = self.attention(h, mask, need_weights)  # (batch, m, l d_out), (batch, l, m, m) or None
        return torch.relu(self.fc(torch.cat([h, c], dim=-1))), alpha


class AttentionCritic(nn.Module):
    """The self-attention critic of fig. 17.8, all m values in one pass.

    x^i = phi(o^i) (one encoder for every agent), then ``depth`` :class:`AttentionBlock`\\ s
    (multi-head self-attention with l = ``heads`` heads, scores scaled by 1/sqrt(d_q), then a shared
    FC layer on [h^i; c^i]), then m unshared heads v_hat^i = g^i(h^i). Only the heads depend on m.

    ``forward(o, mask=None)`` returns v_hat (batch, m) using PyTorch's fused attention (training);
    ``values_and_alpha(o, mask=None)`` also returns each block's alpha (batch, l, m, m), row i being
    how much agent i's value attends to each agent. ``mask`` (batch, m), True = the agent takes
    part: an absent agent is never attended to (its own v_hat is meaningless and should be ignored).
    """

    def __init__(self, m: int, obs_dim: int, agent_types: Sequence[int] | None = None, d_x: int = 32,
                 d_q: int = 16, d_out: int = 16, heads: int = 2, depth: int = 1, d_hidden: int = 64) -> None:
        super().__init__()
        self.agent_types = _check_types(agent_types, m)
        self.m, self.obs_dim = m, obs_dim
        self.phi = _mlp([obs_dim + _n_type_features(self.agent_types), d_x, d_x])
        self.blocks = nn.ModuleList(AttentionBlock(d_x, d_q, d_out, heads) for _ in range(depth))
        self.heads = AgentHeads(m, d_x, d_hidden)

    def _run(self, o: Tensor, mask: Tensor | None, need_weights: bool) -> tuple[Tensor, list[Tensor | None]]:
        check_obs(o, self.m, self.obs_dim)
        if mask is not None and (not isinstance(mask, Tensor) or mask.shape != o.shape[:2]):
            raise ValueError(f"mask must be a bool tensor of shape (batch, m) = {tuple(o.shape[:2])}")
        h = self.phi(type_features(o, self.agent_types))  # x^i: (batch, m, d_x)
        alphas = []
        for block in self.blocks:
            h, alpha = block(h, mask, need_weights)
            alphas.append(alpha)
        return self.heads(h), alphas

    def forward(self, o: Tensor, mask: Tensor | None = None) -> Tensor:
        return self._run(o, mask, need_weights=False)[0]

    def values_and_alpha(self, o: Tensor, mask: Tensor | None = None) -> tuple[Tensor, list[Tensor]]:
        """v_hat (batch, m) and the list of each block's alpha (batch, l, m, m)."""
        v_hat, alphas = self._run(o, mask, need_weights=True)
        return v_hat, alphas


class Actor(nn.Module):
    """Decentralized policy pi(a^i | o^i; theta): agent i acts on its own observation only.

    Agents of the same type share one MLP (obs_dim -> d_hidden -> d_hidden -> n_actions, ReLU), as
    in MAPPO's parameter sharing; there is no agent-id input, so agents of a type differ only
    through what they observe (mpe2's observations are egocentric, which is enough to break the
    symmetry in simple_spread). ``forward(o)`` maps (batch, m, obs_dim) to logits (batch, m, n_actions).
    """

    def __init__(self, m: int, obs_dim: int, n_actions: int, agent_types: Sequence[int] | None = None,
                 d_hidden: int = 64) -> None:
        super().__init__()
        self.agent_types = _check_types(agent_types, m)
        self.m, self.obs_dim, self.n_actions = m, obs_dim, n_actions
        self.pis = nn.ModuleList(
            nn.Sequential(_mlp([obs_dim, d_hidden, d_hidden]), _linear(d_hidden, n_actions, gain=0.01))
            for _ in range(max(self.agent_types) + 1)
        )
        groups = [[i for i, t in enumerate(self.agent_types) if t == k] for k in range(len(self.pis))]
        self._groups = [torch.tensor(g) for g in groups]
        order = [i for g in groups for i in g]
        self._restore = torch.tensor(sorted(range(m), key=order.__getitem__))

    def forward(self, o: Tensor) -> Tensor:
        check_obs(o, self.m, self.obs_dim)
        if len(self.pis) == 1:
            return self.pis[0](o)
        logits = torch.cat([pi(o[:, group]) for pi, group in zip(self.pis, self._groups)], dim=1)
        return logits[:, self._restore]


def _n_type_features(agent_types: tuple[int, ...]) -> int:
    n_types = max(agent_types) + 1
    return n_types if n_types > 1 else 0
