"""MAAC's Q critics (Iqbal & Sha 2019, §3.2 and fig. 1): agent i's values of *every* action it could take,
given the others' observations and actions, with attention or concatenation over the others.

Agent i's critic reads every agent's observation and the *other* agents' actions and outputs one value
per action of agent i, q_all^i(a') = Q^i(o, (a', a^{-i})) for a' = 1..|A| (MAAC's eqs. 5 and 10):

- s^i = g^o(o^i) — agent i's observation encoding (its own action is *not* an input: MAAC removes it so
  that one pass gives the value of every action, the counterfactual baseline's ingredients);
- e^j = g(o^j, a^j) — agent j's (observation, action) encoding, for every j;
- x^i — what the others contribute:

  - :class:`MAACAttentionCritic` (MAAC): l heads; head l's query is W_q^l s^i, its keys W_k^l e^j and its
    values v^j = LeakyReLU(V^l e^j) over the others j != i only; alpha^i_j = softmax_{j != i}(
    (W_q^l s^i) . (W_k^l e^j) / sqrt(d_k)) and x^i = [sum_{j != i} alpha^i_j v^j over heads l];
  - :class:`MAACConcatCritic` (MAAC's MADDPG+SAC baseline): x^i = [e^j for j != i], concatenated in
    agent order — the same encoders, the attention block replaced by concatenation;

- q_all^i = f^i([s^i; x^i]) — agent i's own two-layer head with |A| outputs.

These are MAAC's symbols. The book writes them in its own notation (chapter 10, and
:func:`attnmarl.notebook.diagrams.maac_critic`): e^j is x^j = phi([o^j; a^j]) as in fig. 17.9, s^i is x^i_o =
phi_o(o^i), MAAC's x^i is c^i (the attention output) and f^i is the head g^i.

Agent i is not among its own keys: (o^i, a^i) reach q_all^i only through the query s^i (and a^i not at
all), and alpha^i has one entry per *other* agent, shape (batch, l, m, m - 1). Swapping two other agents
of one type leaves q_all^i unchanged with attention (a weighted sum over a set) and changes it with
concatenation (the weights that read e^j depend on j's place).

Where this differs from MAAC's code (``utils/critics.py``): the encoders g, g^o (and W_q, W_k, V, as in
MAAC) are shared by all agents, with a one-hot of the agent's type appended as in the book's other
critics (:mod:`attnmarl.nets.common`), where MAAC gives every agent its own g_i and g_i^o — sharing is
what makes the swap property hold, and it keeps the parameters from growing with m apart from the heads
f^i; and there is no BatchNorm on the inputs (collect_treasure's observations are already of order 1).

Shapes: observations ``o`` (batch, m, obs_dim); actions ``a`` one-hot (batch, m, n_actions); values
``q_all`` (batch, m, n_actions).
"""
from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import Tensor, nn

from ..checks import check_no_overflow, check_sizes, has_values
from ..costs import check_numbers
from .common import AgentLinear, check_types, linear, n_type_features, type_features
from .qnets import q_tokens

__all__ = ["MAACAttentionCritic", "MAACConcatCritic", "others_index", "chosen"]


def others_index(m: int) -> Tensor:
    """(m, m - 1) indices: row i lists the agents j != i in order — agent i's keys and values."""
    check_sizes(m=m)
    if m < 2:
        raise ValueError(f"a critic over the other agents needs m >= 2 agents; got m = {m}")
    return torch.tensor([[j for j in range(m) if j != i] for i in range(m)])


def chosen(q_all: Tensor, a: Tensor) -> Tensor:
    """q_hat^i = q_all^i(a^i): the value of the action each agent took, (batch, m), from q_all
    (batch, m, n_actions) and one-hot actions a (batch, m, n_actions)."""
    if a.shape != q_all.shape:
        raise ValueError(f"actions a must be one-hot, (batch, m, n_actions) = {tuple(q_all.shape)} like q_all; "
                         f"got shape {tuple(a.shape)}")
    if has_values(a) and not bool(((a == 0) | (a == 1)).all() and (a.sum(-1) == 1).all()):
        raise ValueError("actions a must be one-hot: every agent's row holds one 1 and zeros")
    return (q_all * a).sum(-1)


class _MAACCritic(nn.Module):
    """The parts both critics share: the encoders g and g^o and the m heads f^i; :meth:`others`
    (attention or concatenation) is what differs."""

    def __init__(self, m: int, obs_dim: int, n_actions: int, agent_types: Sequence[int] | None, d: int,
                 d_others: int) -> None:
        super().__init__()
        self.agent_types = check_types(agent_types, m)
        check_sizes(obs_dim=obs_dim, n_actions=n_actions, d=d)
        self.m, self.obs_dim, self.n_actions, self.d = m, obs_dim, n_actions, d
        n_type = n_type_features(self.agent_types)
        self.g = nn.Sequential(linear(obs_dim + n_actions + n_type, d), nn.LeakyReLU())
        """e^j = g(o^j, a^j), shared by all agents."""
        self.g_o = nn.Sequential(linear(obs_dim + n_type, d), nn.LeakyReLU())
        """s^i = g^o(o^i), shared by all agents."""
        self.f_hidden = AgentLinear(m, d + d_others, d)
        self.f_out = AgentLinear(m, d, n_actions, gain=1.0)
        self.register_buffer("others_j", others_index(m), persistent=False)
        self.register_buffer("rows_i", torch.arange(m)[:, None].expand(m, m - 1), persistent=False)
        self.register_buffer("own", torch.eye(m, dtype=torch.bool), persistent=False)

    def encode(self, o: Tensor, a: Tensor) -> tuple[Tensor, Tensor]:
        """s (batch, m, d) and e (batch, m, d), after checking o and a."""
        z = q_tokens(o, a, self.m, self.obs_dim, self.n_actions, self.f_out.W)
        return self.g_o(type_features(o, self.agent_types)), self.g(type_features(z, self.agent_types))

    def others(self, e: Tensor, s: Tensor) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """x (batch, m, d_others) from the others' encodings, and alpha and the logits (or None)."""
        raise NotImplementedError

    def outputs(self, o: Tensor, a: Tensor) -> tuple[Tensor, Tensor | None, Tensor | None]:
        """q_all (batch, m, n_actions), alpha (batch, l, m, m - 1) and the unscaled attention logits
        of the same shape (both None for concatenation)."""
        s, e = self.encode(o, a)
        x, alpha, logits = self.others(e, s)
        h = nn.functional.leaky_relu(self.f_hidden(torch.cat([s, x], dim=-1)))
        return check_no_overflow(type(self).__name__, self.f_out(h), o, self), alpha, logits

    def forward(self, o: Tensor, a: Tensor) -> Tensor:
        return self.outputs(o, a)[0]


class MAACAttentionCritic(_MAACCritic):
    """MAAC's attention critic: q_all^i = f^i([s^i; x^i]) with x^i from l heads of attention whose query
    is agent i's observation encoding s^i and whose keys and values are the other agents' (o^j, a^j)
    encodings e^j (j != i). W_q, W_k and V are shared by all agents (as in MAAC); d_k = d / l.

    ``forward(o, a)`` returns q_all (batch, m, n_actions); ``outputs`` also alpha and the logits
    (batch, l, m, m - 1): entry [.., l, i, k] is head l's weight of agent i on its k-th other agent,
    :func:`others_index`\\ (m)[i, k].
    """

    def __init__(self, m: int, obs_dim: int, n_actions: int, agent_types: Sequence[int] | None = None,
                 d: int = 128, heads: int = 4) -> None:
        check_sizes(heads=heads)
        check_numbers("the attention critic's W_q and W_k", ("d", d), ("d", d))
        if d % heads:
            raise ValueError(f"d = {d} must be a multiple of heads = {heads} (each head has d / heads dimensions)")
        super().__init__(m, obs_dim, n_actions, agent_types, d, d)
        self.heads, self.d_k = heads, d // heads
        self.W_q = nn.Linear(d, d, bias=False)
        self.W_k = nn.Linear(d, d, bias=False)
        self.V = nn.Sequential(linear(d, d), nn.LeakyReLU())

    def others(self, e: Tensor, s: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        batch, m, l, d_k = e.shape[0], self.m, self.heads, self.d_k
        query = self.W_q(s).view(batch, m, l, d_k).transpose(1, 2)  # (batch, l, m, d_k)
        keys = self.W_k(e).view(batch, m, l, d_k).transpose(1, 2)
        values = self.V(e).view(batch, m, l, d_k).transpose(1, 2)
        scores = query @ keys.transpose(-1, -2)  # (batch, l, m, m): every pair at once ...
        alpha_all = torch.softmax((scores / math.sqrt(d_k)).masked_fill(self.own, -math.inf), dim=-1)
        x = (alpha_all @ values).transpose(1, 2).reshape(batch, m, l * d_k)  # ... with weight exactly 0 on j = i
        rows = (slice(None), slice(None), self.rows_i, self.others_j)  # each row without its own column
        return x, alpha_all[rows], scores[rows]

    def values_and_alpha(self, o: Tensor, a: Tensor) -> tuple[Tensor, Tensor]:
        """q_all (batch, m, n_actions) and alpha (batch, l, m, m - 1)."""
        q_all, alpha, _ = self.outputs(o, a)
        return q_all, alpha


class MAACConcatCritic(_MAACCritic):
    """MAAC's MADDPG+SAC critic: the same encoders and heads, with x^i = [e^j for j != i] concatenated in
    agent order (head i's first layer reads (m - 1) d of them: its size grows with m).

    ``forward(o, a)`` returns q_all (batch, m, n_actions).
    """

    def __init__(self, m: int, obs_dim: int, n_actions: int, agent_types: Sequence[int] | None = None,
                 d: int = 128) -> None:
        check_sizes(m=m, d=d)
        super().__init__(m, obs_dim, n_actions, agent_types, d, (m - 1) * d)

    def others(self, e: Tensor, s: Tensor) -> tuple[Tensor, None, None]:
        return e[:, self.others_j].flatten(2), None, None  # (batch, m, (m - 1) d)
