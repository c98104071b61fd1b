"""Mixing networks of value decomposition (chapter 11): agents' values Q^i -> team value Q_tot.

Each agent i has its own action value Q^i(o^i, a^i) (:mod:`attnmarl.algos.qmix`); a mixer f
combines the values of the agents' actions into the team's value, Q_tot = f(Q^1, .., Q^m; s),
trained on the team's reward. When f is monotonic in every Q^i (dQ_tot / dQ^i >= 0), the joint
action that maximises Q_tot is the one in which every agent maximises its own Q^i: greedy agents
acting alone act as the greedy team would (Rashid et al. 2018; Son et al. 2019 named the property
individual-global-max, IGM). All three mixers here are monotonic.

- :class:`VDN` (Sunehag et al. 2018): Q_tot = sum_i Q^i, no state, no weights.
- :class:`QMIX` (Rashid et al. 2018): a two-layer network of the Q^i whose weights come from
  hypernetworks of the state s, made non-negative by |.|.
- :class:`Qatten` (Yang et al. 2020): Q_tot = c(s) + sum_h w_h(s) sum_i lambda^{i,h} Q^i, with
  attention weights lambda^{i,h} over the agents in every head h.

Shapes: ``Q`` (batch, m) holds the values of the agents' actions, ``o`` (batch, m, obs_dim)
their observations, from which each mixer builds what it knows of the state. Every mixer
returns ``Q_tot`` (batch,).
"""
from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn

from ..checks import check_finite, check_like, check_sizes
from .common import check_obs, check_types
from .policies import EntityActor

__all__ = ["VDN", "QMIX", "Qatten", "MIXERS", "check_agent_values"]


def check_agent_values(Q: Tensor, m: int, reference: Tensor | None = None) -> None:
    """Raise ``ValueError`` unless ``Q`` is a finite float tensor (batch, m) (of the dtype and
    on the device of ``reference``, a weight of the mixer, if given): one value per agent, never
    a silent broadcast."""
    if not isinstance(Q, Tensor):
        raise ValueError(f"Q must be a torch.Tensor of shape (batch, m); got "
                         f"{type(Q).__name__}")
    if not Q.is_floating_point():
        raise ValueError(f"Q must be a floating-point tensor; got dtype {Q.dtype}")
    if Q.dim() != 2 or Q.shape[1] != m:
        raise ValueError(f"Q must have shape (batch, m) = (batch, {m}), the value of each "
                         f"agent's action; got {tuple(Q.shape)}")
    if reference is not None:
        check_like("Q", Q, reference, "the mixer's weights")
    check_finite("Q", Q)


def _check_inputs(Q: Tensor, o: Tensor, m: int, obs_dim: int, reference: Tensor) -> None:
    """The checks of every mixer's inputs: Q (batch, m) and o (batch, m, obs_dim), one batch."""
    check_agent_values(Q, m, reference)
    check_obs(o, m, obs_dim, reference)
    if o.shape[0] != Q.shape[0]:
        raise ValueError(f"Q and o must hold one batch: Q has {Q.shape[0]} rows, o "
                         f"{o.shape[0]}")


class VDN(nn.Module):
    """Value decomposition networks (Sunehag et al. 2018, eq. 1): Q_tot = sum_i Q^i.

    No weights and no state: each agent's value is its additive share of the team's. Invariant
    to permutations of the agents, and the same at any m. ``o`` is checked and not used (every
    mixer takes the same inputs)."""

    def __init__(self, m: int, obs_dim: int) -> None:
        super().__init__()
        check_sizes(m=m, obs_dim=obs_dim)
        self.m, self.obs_dim = m, obs_dim

    def forward(self, Q: Tensor, o: Tensor | None = None) -> Tensor:
        check_agent_values(Q, self.m)
        if o is not None:
            _check_inputs(Q, o, self.m, self.obs_dim, Q)
        return Q.sum(-1)


class QMIX(nn.Module):
    """QMIX's monotonic mixing network (Rashid et al. 2018, sec. 4.2), s = [o^1; ...; o^m].

    The state is mpe2's ``env.state()``: every agent's observation, concatenated in agent order
    (m obs_dim numbers). Hypernetworks (two layers, ReLU; V too) map s to the mixing weights,
    and |.| makes the weights non-negative::

        W_1 = |hyper_W1(s)| in R^{m x E},  b_1 = hyper_b1(s) in R^E,  h = ELU(Q W_1 + b_1)
        W_2 = |hyper_W2(s)| in R^E,        b_2 = V(s) in R,           Q_tot = h W_2 + b_2

    so dQ_tot / dQ^i = sum_e W_2,e ELU'(.) W_1,ie >= 0: monotonic in every Q^i. The biases may
    have either sign (they multiply no Q^i).

    Not permutation-invariant: row i of W_1 belongs to agent i's *place*, and s is a
    concatenation, so giving the agents other places (their Q^i and o^i permuted together)
    changes Q_tot. Its weights depend on m (W_1 has m rows, s has m obs_dim numbers): it mixes a
    team of the size it was built for.
    """

    def __init__(self, m: int, obs_dim: int, embed: int = 32, hyper_hidden: int = 64) -> None:
        super().__init__()
        check_sizes(m=m, obs_dim=obs_dim, embed=embed, hyper_hidden=hyper_hidden)
        self.m, self.obs_dim, self.embed = m, obs_dim, embed
        d_s = m * obs_dim
        self.hyper_W1 = _two_layers(d_s, hyper_hidden, m * embed)
        self.hyper_b1 = nn.Linear(d_s, embed)
        self.hyper_W2 = _two_layers(d_s, hyper_hidden, embed)
        self.V = _two_layers(d_s, embed, 1)

    def state(self, o: Tensor) -> Tensor:
        """s = [o^1; ...; o^m]: (batch, m obs_dim)."""
        return o.flatten(1)

    def forward(self, Q: Tensor, o: Tensor) -> Tensor:
        _check_inputs(Q, o, self.m, self.obs_dim, self.hyper_b1.weight)
        s = self.state(o)
        W_1 = self.hyper_W1(s).abs().view(-1, self.m, self.embed)
        b_1 = self.hyper_b1(s)
        h = nn.functional.elu(torch.einsum("bi,bie->be", Q, W_1) + b_1)  # (batch, E)
        W_2 = self.hyper_W2(s).abs()
        return (h * W_2).sum(-1) + self.V(s).squeeze(-1)


class Qatten(nn.Module):
    """Qatten's multi-head attention mixer (Yang et al. 2020, eqs. 7-8) on a state for any m.

        Q_tot = c(s) + sum_h w_h(s) sum_i lambda^{i,h} Q^i,
        lambda^{i,h} = softmax_i(<q_h(s), k_h(u^i)> / sqrt(d))

    - **u^i**, agent i's own features: u^i = phi(o^i) in R^d_u, an entity-token encoder of agent
      i's observation (:class:`attnmarl.nets.EntityActor` with mean pooling over its tokens, a
      Deep Sets encoder), one network for every agent. With mean pooling, the only attention in
      the mixer is the one over the agents.
    - **s**, the state: the mean of the agents' features, s = (1/m) sum_i u^i, a summary of the
      team as a set (each o^i shows every landmark and agent, from agent i's place), of one size
      for any m.
    - per head h: the query q_h(s) = W_q,h ReLU(W_s s) and the keys k_h(u^i) = W_k,h u^i, d
      numbers each; the head's weight w_h(s) = |MLP(s)_h| >= 0 and the bias c(s) = MLP(s).

    lambda and w_h depend on the observations only, not on Q, so
    dQ_tot / dQ^i = sum_h w_h(s) lambda^{i,h} >= 0: monotonic. Permuting the agents (their Q^i
    and o^i together) permutes their lambda and leaves Q_tot unchanged. No weight depends on m,
    so a Qatten mixer trained at one m loads into one built for another. (Qatten's paper takes s
    and u^i from the environment's global state; here both come from the observations.)
    :meth:`outputs` also returns lambda (batch, heads, m): how much each head credits each
    agent.

    ``uniform=True`` is the attention ablation of chapter 11's exercise 3: W_k is fixed at zero
    (and not trained), so every key is 0, every score the same and lambda^{i,h} = 1/m for every
    head and state; Q_tot = c(s) + (1/m) sum_h w_h(s) sum_i Q^i. Every other weight is drawn
    as Qatten's are (W_k is drawn first, then zeroed), so a seed starts both mixers alike.
    """

    def __init__(self, scenario: str, scenario_kwargs: dict[str, Any], m: int, obs_dim: int,
                 agent_types: Sequence[int] | None = None, heads: int = 4, d: int = 32,
                 d_u: int = 32, hidden: int = 64, uniform: bool = False) -> None:
        super().__init__()
        check_sizes(heads=heads, d=d, d_u=d_u, hidden=hidden)
        if not isinstance(uniform, bool):
            raise ValueError(f"uniform must be True or False; got {uniform!r}")
        self.m, self.obs_dim, self.heads, self.d = m, obs_dim, heads, d
        self.phi = EntityActor(scenario, scenario_kwargs, m, obs_dim, d_u,
                               check_types(agent_types, m), d=d_u, mixing="mean")
        self.W_s = nn.Linear(d_u, hidden)
        self.W_q = nn.Linear(hidden, heads * d, bias=False)
        self.W_k = nn.Linear(d_u, heads * d, bias=False)
        self.w_h = _two_layers(d_u, hidden, heads)
        self.c = _two_layers(d_u, hidden, 1)
        self.uniform = uniform
        if uniform:
            nn.init.zeros_(self.W_k.weight)
            self.W_k.weight.requires_grad_(False)

    def features(self, o: Tensor) -> tuple[Tensor, Tensor]:
        """The agents' features u (batch, m, d_u) and the state s = mean_i u^i (batch, d_u)."""
        u = self.phi(o)
        return u, u.mean(1)

    def outputs(self, Q: Tensor, o: Tensor) -> tuple[Tensor, Tensor]:
        """Q_tot (batch,) and lambda (batch, heads, m), each head's weights over the agents."""
        _check_inputs(Q, o, self.m, self.obs_dim, self.W_s.weight)
        u, s = self.features(o)
        q = self.W_q(torch.relu(self.W_s(s))).view(-1, self.heads, 1, self.d)  # q_h(s)
        k = self.W_k(u).view(-1, self.m, self.heads, self.d).transpose(1, 2)  # (batch, h, m, d)
        scores = (q * k).sum(-1) / math.sqrt(self.d)  # (batch, heads, m)
        lambda_ = torch.softmax(scores, dim=-1)
        Q_h = (lambda_ * Q.unsqueeze(1)).sum(-1)  # sum_i lambda^{i,h} Q^i: (batch, heads)
        w_h = self.w_h(s).abs()
        Q_tot = (w_h * Q_h).sum(-1) + self.c(s).squeeze(-1)
        return Q_tot, lambda_

    def forward(self, Q: Tensor, o: Tensor) -> Tensor:
        return self.outputs(Q, o)[0]


def _two_layers(d_in: int, d_hidden: int, d_out: int) -> nn.Sequential:
    """Linear, ReLU, Linear (PyTorch's default initialisation, as in pymarl's mixers)."""
    return nn.Sequential(nn.Linear(d_in, d_hidden), nn.ReLU(), nn.Linear(d_hidden, d_out))


MIXERS: dict[str, type[nn.Module]] = {"vdn": VDN, "qmix": QMIX, "qatten": Qatten}
"""The mixers by name, as :class:`attnmarl.algos.qmix.QMIXConfig` names them."""
