"""The Multi-Agent Transformer (MAT; Wen et al., NeurIPS 2022, arXiv 2205.14953), made independent of m
(chapter 13). Derived from the paper's description (its section 4 and fig. 2); the authors' code carries no
licence and none of it is used here.

MAT treats the team as a sequence. By the chain rule, a joint policy factorises into agents deciding one after
another,

    pi(a | o) = prod_i pi(a^i | o^1..o^m, a^1..a^{i-1}),

and the multi-agent advantage decomposition (Kuba et al.) splits the team's advantage the same way, one term per
agent given the earlier agents' actions (HATRPO and HAPPO use it to update agents in turn; MAT, to make them act in
turn). MAT models the product with an encoder-decoder transformer:

- **tokens** — agent i's token x^i is the book's entity encoder over its own entity tokens (itself, every
  landmark, every other agent, egocentric; :class:`AgentTokens`, chapter 8's layer without its head). MAT's
  paper embeds each o^i with one learned layer (in its released code LayerNorm, Linear, GELU) whose input width,
  like the agent count its code is built for, ties the network to one m; entity tokens make every weight here
  independent of m.
- **encoder** — ``blocks`` self-attention blocks over the m tokens, with no mask and no positional code, so
  the representations o_hat^1..o_hat^m are permutation equivariant; a value head gives V(o_hat^i) per agent
  (the paper's encoder loss trains it; :mod:`attnmarl.algos.mat` normalises its targets).
- **decoder** — the shifted joint action: position 1 holds a start token, position i the one-hot of
  a^{i-1}. Each block applies (i) causal self-attention over those positions, then (ii) MAT's attention
  between decoder and encoder, causal too, then (iii) an MLP; a policy head gives agent i's logits from
  position i. In MAT (ii) takes its **query from the encoder's representation** o_hat^i and its keys and
  values from the decoder's stream — the reverse of the Transformer's encoder-decoder attention, where the
  decoder queries the encoder — and its residual path carries o_hat^i (:class:`DecoderBlock`).
- **acting** decodes agent by agent: m decoder passes, each sampled a^i fed back as the next position's
  input (with a cache of keys and values, each pass handles one position). **Training** runs one
  teacher-forced pass over the actions taken: by the causal masks position i sees a^1..a^{i-1} only, so
  the logits are the same numbers either way (a test holds them equal to 1e-5).

The causal mask is built for the m of the input, and no weight depends on m, so one set of weights acts at
every team size (MAT's official implementation fixes the number of agents when the network is built).
``decoder=False`` is **MAT-Dec**, the paper's ablation: the same encoder, now only a critic, and a
decentralized actor pi(a^i | x^i) on agent i's own token — it isolates what the autoregressive decoder adds.

Execution is centralized: MAT's agent i acts on every agent's observation (through o_hat^i) and on the
actions of the agents before it; MAT-Dec's agents act on their own observations only.

Shapes: observations ``o`` (batch, m, obs_dim); tokens and representations (batch, m, d); actions (batch, m)
integers; logits (batch, m, n_actions); values (batch, m). ``order`` (batch, m), a permutation of the agents
per row, is the order in which they decide (``None``: agent order).
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from ..checks import check_bool, check_finite, check_indices, check_sizes
from .common import linear, mlp
from .messages import EntityEncoder
from .policies import POLICY_OUT_GAIN, EntityActor, EntityAttention

__all__ = ["AgentTokens", "MATAttention", "EncoderBlock", "DecoderBlock", "MultiAgentTransformer", "check_order"]

KVCache = dict[str, tuple[Tensor, Tensor]]
"""One decoder block's keys and values of the positions decoded so far: ``"self"`` and ``"cross"``, each
(keys, values) of shape (batch, l, positions, d / l)."""


class AgentTokens(EntityActor):
    """x^i, agent i's token: the entity encoder (:class:`attnmarl.nets.messages.EntityEncoder`) over the entity
    tokens of o^i alone. ``forward(o)`` maps (batch, m, obs_dim) to (batch, m, d); no weight depends on m."""

    def __init__(self, scenario: str, scenario_kwargs: Mapping[str, Any], m: int, obs_dim: int,
                 agent_types: Sequence[int] | None = None, d: int = 32, heads: int = 2, d_ff: int = 64) -> None:
        super().__init__(scenario, dict(scenario_kwargs), m, obs_dim, d, agent_types, d, heads, d_ff)

    @staticmethod
    def _type_net(d_tokens: int, d_y: int, d: int, heads: int, d_ff: int, kind_widths: Sequence[int],
                  mixing: str) -> EntityAttention:
        return EntityEncoder(d_tokens, d, heads, d_ff, kind_widths, mixing)


class MATAttention(nn.Module):
    """Multi-head scaled dot-product attention whose queries come from one sequence and keys and values from
    another (the same one for self-attention):

        Q = X_q W_q,  K = X_kv W_k,  V = X_kv W_v;   head h: softmax(Q_h K_h^T / sqrt(d / l) + M) V_h
        Attn(X_q, X_kv) = W_o [head 1; ...; head l]

    with M = -inf above the diagonal when ``causal`` (position i attends to positions j <= i), else 0.
    :meth:`keys_values` and :meth:`attend` split the two halves so that a decoder can keep the keys and
    values of the positions it has decoded (a cache) and attend with one new query at a time.
    """

    def __init__(self, d: int, heads: int) -> None:
        super().__init__()
        check_sizes(d=d, heads=heads)
        if d % heads:
            raise ValueError(f"d = {d} must be divisible by the number of heads ({heads})")
        self.heads = heads
        self.W_q = nn.Linear(d, d)
        self.W_kv = nn.Linear(d, 2 * d)
        self.W_o = nn.Linear(d, d)

    def _split(self, x: Tensor) -> Tensor:
        """(batch, n, d) -> (batch, l, n, d / l)."""
        return x.unflatten(-1, (self.heads, -1)).transpose(1, 2)

    def keys_values(self, x_kv: Tensor) -> tuple[Tensor, Tensor]:
        """K and V of ``x_kv`` (batch, n, d), each (batch, l, n, d / l)."""
        k, v = self.W_kv(x_kv).chunk(2, dim=-1)
        return self._split(k), self._split(v)

    def attend(self, x_q: Tensor, k: Tensor, v: Tensor, causal: bool) -> Tensor:
        """The attended output (batch, n_q, d) of the queries of ``x_q`` (batch, n_q, d) over k and v."""
        c = F.scaled_dot_product_attention(self._split(self.W_q(x_q)), k, v, is_causal=causal)
        return self.W_o(c.transpose(1, 2).flatten(2))

    def forward(self, x_q: Tensor, x_kv: Tensor, causal: bool = False) -> Tensor:
        return self.attend(x_q, *self.keys_values(x_kv), causal)

    def alpha(self, x_q: Tensor, x_kv: Tensor, causal: bool = False) -> Tensor:
        """The weights :meth:`attend` uses, written out: softmax(Q_h K_h^T / sqrt(d / l) + M) per head,
        (batch, l, n_q, n_kv); each row sums to 1 (for reading them, as chapter 13's explorer does)."""
        k, _ = self.keys_values(x_kv)
        q = self._split(self.W_q(x_q))
        scores = q @ k.transpose(-1, -2) / k.shape[-1] ** 0.5
        if causal:
            scores = scores.masked_fill(torch.ones(scores.shape[-2:], dtype=torch.bool, device=scores.device)
                                        .triu(1), float("-inf"))
        return scores.softmax(-1)


def _feed_forward(d: int, d_ff: int) -> nn.Sequential:
    """The position-wise MLP of a transformer block: d -> d_ff -> d with a GELU."""
    return nn.Sequential(nn.Linear(d, d_ff), nn.GELU(), nn.Linear(d_ff, d))


class EncoderBlock(nn.Module):
    """One encoder block over the m agent tokens, post-norm as in the paper's fig. 2 (and the Transformer):

        x <- LN(x + Attn(x, x));   x <- LN(x + MLP(x))

    No mask and no positional code: permuting the agents permutes the outputs (equivariance)."""

    def __init__(self, d: int, heads: int, d_ff: int) -> None:
        super().__init__()
        self.attn = MATAttention(d, heads)
        self.ff = _feed_forward(d, d_ff)
        self.ln_attn, self.ln_ff = nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x: Tensor) -> Tensor:
        x = self.ln_attn(x + self.attn(x, x))
        return self.ln_ff(x + self.ff(x))


class DecoderBlock(nn.Module):
    """One decoder block over the shifted joint action, with the encoder's representation o_hat:

        x <- LN_1(x + Attn(x, x; causal))                   masked self-attention over the actions so far
        x <- LN_2(o_hat + Attn(query = o_hat, keys/values = x; causal))     MAT's decoder-encoder attention
        x <- LN_3(x + MLP(x))

    The second line is MAT's and reverses the Transformer's encoder-decoder attention, which would be
    LN(x + Attn(query = x, keys/values = o_hat)): here agent i's representation o_hat^i asks, and the action
    stream of positions j <= i (the start token and a^1..a^{i-1}) answers; the residual carries o_hat^i, so the
    observation reaches the policy head directly and the earlier actions come in as a correction. Both
    attentions are causal, so position i never reads a^i or a later action.
    """

    def __init__(self, d: int, heads: int, d_ff: int) -> None:
        super().__init__()
        self.self_attn, self.cross_attn = MATAttention(d, heads), MATAttention(d, heads)
        self.ff = _feed_forward(d, d_ff)
        self.ln_self, self.ln_cross, self.ln_ff = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)

    def forward(self, x: Tensor, o_hat: Tensor) -> Tensor:
        """All m positions at once (teacher forcing): x and o_hat (batch, m, d) -> (batch, m, d)."""
        x = self.ln_self(x + self.self_attn(x, x, causal=True))
        x = self.ln_cross(o_hat + self.cross_attn(o_hat, x, causal=True))
        return self.ln_ff(x + self.ff(x))

    def step(self, x_i: Tensor, o_hat_i: Tensor, cache: KVCache) -> Tensor:
        """Position i alone, given the keys and values of positions < i in ``cache`` (updated in place):
        x_i and o_hat_i (batch, 1, d) -> (batch, 1, d). The one query sees every cached position, so no mask
        is needed: the numbers are those of :meth:`forward` at position i."""
        x_i = self.ln_self(x_i + self.self_attn.attend(x_i, *_extend(cache, "self", self.self_attn, x_i), False))
        keys_values = _extend(cache, "cross", self.cross_attn, x_i)
        x_i = self.ln_cross(o_hat_i + self.cross_attn.attend(o_hat_i, *keys_values, False))
        return self.ln_ff(x_i + self.ff(x_i))


def _extend(cache: KVCache, name: str, attn: MATAttention, x_i: Tensor) -> tuple[Tensor, Tensor]:
    """Append position i's keys and values (from x_i) to ``cache[name]``; return all of them."""
    k, v = attn.keys_values(x_i)
    if name in cache:
        k, v = (torch.cat([old, new], dim=2) for old, new in zip(cache[name], (k, v)))
    cache[name] = (k, v)
    return k, v


def check_order(order: Tensor | None, batch: int, m: int) -> None:
    """``ValueError`` unless ``order`` is ``None`` or a (batch, m) integer tensor whose every row is a
    permutation of 0..m-1 (a repeated agent would decide twice and another never)."""
    if order is None:
        return
    check_indices("order", order, m, (batch, m), "agent index")
    if order.numel() and not bool((order.sort(dim=1).values == torch.arange(m, device=order.device)).all()):
        raise ValueError("order must hold a permutation of the agents 0..m-1 in every row (each agent decides "
                         "exactly once)")


def _permute(x: Tensor, order: Tensor | None) -> Tensor:
    """Rows of x (batch, m, ...) in decision order: x[b, order[b, k]] at position k."""
    if order is None:
        return x
    return x.gather(1, order.view(*order.shape, *(1,) * (x.dim() - 2)).expand_as(x))


def _unpermute(x: Tensor, order: Tensor | None) -> Tensor:
    """The inverse of :func:`_permute`: decision order back to agent order."""
    return x if order is None else _permute(x, order.argsort(dim=1))


class MultiAgentTransformer(nn.Module):
    """MAT (``decoder=True``) or MAT-Dec (``decoder=False``) for m agents of a scenario's entity tokens.

    ``values(o)`` gives V(o_hat^i) (batch, m); ``logits(o, a)`` the teacher-forced logits (batch, m, n_actions)
    of the actions taken, and ``decode(o, choose)`` decodes agent by agent, ``choose`` mapping one position's
    logits (batch, n_actions) to its actions (batch,). All take an optional decision ``order``.
    :attr:`cache` (default True) keeps each decoded position's keys and values, so that each of the m passes
    handles one position; without it every pass reruns the decoder over all m positions.
    """

    def __init__(self, scenario: str, scenario_kwargs: Mapping[str, Any], m: int, obs_dim: int, n_actions: int,
                 agent_types: Sequence[int] | None = None, d: int = 32, heads: int = 2, d_ff: int = 64,
                 entity_heads: int = 2, blocks: int = 1, decoder: bool = True) -> None:
        super().__init__()
        check_sizes(n_actions=n_actions, blocks=blocks, d=d, heads=heads, d_ff=d_ff, entity_heads=entity_heads)
        decoder = check_bool("decoder", decoder)  # 'yes' would build MAT where False was meant, or the reverse
        self.m, self.n_actions = m, n_actions
        self.cache = True
        self.tokens = AgentTokens(scenario, scenario_kwargs, m, obs_dim, agent_types, d, entity_heads, d_ff)
        self.encoder = nn.ModuleList(EncoderBlock(d, heads, d_ff) for _ in range(blocks))
        self.value_head = nn.Sequential(mlp([d, d]), linear(d, 1, gain=1.0))
        self.action_embed = nn.Sequential(nn.Linear(n_actions + 1, d), nn.GELU()) if decoder else None
        """Embeds the start token (the last one-hot column) or the one-hot of the previous agent's action."""
        self.decoder = nn.ModuleList(DecoderBlock(d, heads, d_ff) for _ in range(blocks)) if decoder else None
        self.policy_head = nn.Sequential(mlp([d, d]), linear(d, n_actions, gain=POLICY_OUT_GAIN))

    def encode(self, o: Tensor, order: Tensor | None = None) -> tuple[Tensor, Tensor, Tensor]:
        """The agent tokens x, the encoder's o_hat (both (batch, m, d), in decision order) and the values
        V(o_hat^i) (batch, m, in agent order)."""
        x = self.tokens(o)  # checks o: (batch, m, obs_dim)
        check_order(order, o.shape[0], o.shape[1])
        x = _permute(x, order)
        o_hat = x
        for block in self.encoder:
            o_hat = block(o_hat)
        return x, o_hat, _unpermute(self.value_head(o_hat).squeeze(-1), order)

    def values(self, o: Tensor) -> Tensor:
        """V(o_hat^i) for every agent: (batch, m). The encoder is equivariant, so the order does not matter."""
        return self.encode(o)[2]

    def _shifted(self, a: Tensor) -> Tensor:
        """The decoder's input for actions a (batch, m) in decision order: one-hots (batch, m, n_actions + 1),
        the start token at position 1 and a^{i-1} at position i (a^m is never read)."""
        start = a.new_full((a.shape[0], 1), self.n_actions)
        return F.one_hot(torch.cat([start, a[:, :-1]], dim=1), self.n_actions + 1).to(self.policy_head[-1].weight)

    def _decoded(self, x: Tensor, o_hat: Tensor) -> Tensor:
        """The decoder over all positions of the embedded input x (batch, m, d): (batch, m, d)."""
        for block in self.decoder:
            x = block(x, o_hat)
        return x

    def logits(self, o: Tensor, a: Tensor, order: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Teacher forcing: every agent's logits (batch, m, n_actions) given the actions taken a (batch, m)
        before it, in one pass, and the values (batch, m); both in agent order."""
        x, o_hat, values = self.encode(o, order)
        check_indices("a", a, self.n_actions, tuple(o.shape[:2]), "action")
        if self.decoder is None:
            return _unpermute(self.policy_head(x), order), values
        y = self.policy_head(self._decoded(self.action_embed(self._shifted(_permute(a, order))), o_hat))
        return _unpermute(y, order), values

    def decode(self, o: Tensor, choose: Callable[[Tensor], Tensor],
               order: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Agent by agent: position i's logits from the actions chosen before it, then ``choose`` (logits
        (batch, n_actions) -> actions (batch,)) picks a^i, which becomes position i + 1's input. Returns the
        actions (batch, m) and their logits (batch, m, n_actions), in agent order. MAT-Dec chooses every
        agent's action from its own token at once. ``ValueError`` if ``choose`` is not callable or returns anything
        but integer actions of shape (batch,), each in [0, n_actions)."""
        if not callable(choose):
            raise ValueError(f"choose must be a function from logits (batch, n_actions) to actions (batch,), such as "
                             f"lambda y: y.argmax(-1); got {choose!r}")
        cached = check_bool("cache", self.cache)
        if self.decoder is None:  # acting needs no encoder: it is MAT-Dec's critic only
            y = self.policy_head(self.tokens(o))
            check_order(order, *y.shape[:2])
            return self._chosen(choose, y.flatten(0, 1)).view(y.shape[:2]), y
        _, o_hat, _ = self.encode(o, order)
        batch, m = o.shape[:2]
        a = torch.full((batch, m), self.n_actions, dtype=torch.long, device=o.device)  # later ones: start token
        y = o_hat.new_empty(batch, m, self.n_actions)
        caches: list[KVCache] = [{} for _ in self.decoder]
        for i in range(m):  # m decoder passes
            if cached:
                h = self.action_embed(self._shifted(a)[:, i:i + 1])
                for block, block_cache in zip(self.decoder, caches):
                    h = block.step(h, o_hat[:, i:i + 1], block_cache)
                y[:, i] = self.policy_head(h[:, 0])
            else:
                y[:, i] = self.policy_head(self._decoded(self.action_embed(self._shifted(a)), o_hat)[:, i])
            check_finite("the decoder's logits", y[:, i])
            a[:, i] = self._chosen(choose, y[:, i])
        return _unpermute(a, order), _unpermute(y, order)

    def _chosen(self, choose: Callable[[Tensor], Tensor], y: Tensor) -> Tensor:
        """``choose(y)`` for logits y (rows, n_actions), checked: integer actions (rows,) in [0, n_actions). Anything
        else would broadcast (a scalar, a column), be cut to an integer (a float), or come back as the start
        token n_actions, which no environment takes."""
        a = choose(y)
        check_indices("choose's actions", a, self.n_actions, (y.shape[0],), "action")
        return a

    def extra_repr(self) -> str:
        return f"decoder={self.decoder is not None}, cache={self.cache}"

