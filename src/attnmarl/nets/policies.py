"""Policy networks for m agents (chapter 8): decentralized, centralized, and entity-token actors.

Every policy here maps the observations of all m agents, ``o`` of shape (batch, m, obs_dim), to one
output vector per agent, (batch, m, d_y): the logits of pi^i over a discrete action set, or the
pre-squashing mean of a continuous action mu^i (:mod:`attnmarl.algos.mappo` turns either into a
distribution). What differs is what agent i's output may depend on:

- :class:`Actor` — decentralized, pi(a^i | o^i; theta): an MLP on agent i's own observation, shared
  by the agents of a type (chapter 7's actor).
- :class:`ConcatPolicy` — centralized, fig. 17.7's shape: y^i = g^i([phi(o^1); ...; phi(o^m)]),
  m unshared heads. The source's "centralized training + centralized decisions":
  pi(. | [o^1, ..., o^m]; theta^i) and mu([o^1, ..., o^m]; theta^i).
- :class:`AttentionPolicy` — centralized, fig. 17.8's shape: self-attention over the m encoded
  observations, then m unshared heads.
- :class:`EntityActor` — decentralized again, but agent i's observation is cut into entity tokens
  (itself, each landmark, each other agent; :mod:`attnmarl.envs.tokens`) and agent i attends over
  them: pi(a^i | tokens of o^i; theta). One set of weights for every agent of a type and for any m.
- :class:`DecoyActor`, :class:`DecoyEntityActor` — the flat and the entity actor under chapter 12's controls on
  simple_spread with decoys (:data:`DECOY_VIEWS`): the decoys hidden (the oracle) or the ``is_target`` bit
  zeroed (no bit), applied inside the actor by :class:`DecoyView`.
"""
from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import torch
from torch import Tensor, nn

from ..attention import masked_softmax
from ..checks import check_like, check_no_overflow, check_sizes, has_values, overflow_error
from ..costs import check_numbers
from ..envs.decoys import NAME as DECOYS
from ..envs.foraging import NAME as FORAGING
from ..envs.scenarios import port_kwargs, scenario_name
from ..envs.tokens import TokenLayout, token_layout
from .central import AttentionNet, ConcatNet
from .common import BufferList, check_obs, check_types, linear, mlp
from .foraging import ForagingView

__all__ = ["Actor", "ConcatPolicy", "AttentionPolicy", "EntityActor", "EntityAttention", "MIXINGS", "INTERVENTIONS",
           "POLICY_OUT_GAIN", "DECOY_VIEWS", "check_decoy_view", "DecoyView", "DecoyActor", "DecoyEntityActor"]

POLICY_OUT_GAIN = 0.01
"""Initial scale of every policy's last layer: outputs start near 0, so every action starts about
equally likely (and a continuous mean starts at the middle of its range)."""


MIXINGS = ("attention", "mean")
"""How the entity actor mixes its tokens: ``"attention"`` (alpha = softmax of the self token's scores) or
``"mean"`` (alpha uniform over the tokens present: mean pooling, a Deep Sets encoder, Zaheer et al. 2017).
Everything else — tokens, embeddings, layer norms, W_v, W_o, the feed-forward block, the head — is the same,
so the two differ in exactly what attention adds: the choice of weights."""

INTERVENTIONS = (None, "uniform", "other-agent")
"""Test-time replacements of a trained entity actor's alpha (:attr:`EntityAttention.intervention`): ``None``
keeps it; ``"uniform"`` gives every present token the same weight (the mean-pooling network on the trained
weights); ``"other-agent"`` gives agent i the alpha that the next agent of its type, i + 1 (cyclically),
computed from its own observation — a real alpha of another state, the same shape, not chosen for o^i."""


DECOY_VIEWS = ("bit", "oracle", "no-bit")
"""What an actor on simple_spread with decoys (chapter 12, :mod:`attnmarl.envs.decoys`) sees of them:

- ``"bit"`` — the observation as it is, every landmark slot with its ``is_target`` bit: the designs compared;
- ``"oracle"`` — the decoys hidden, the upper bound (selection done for the network): the entity actor's key mask
  leaves out every slot whose bit is 0, so a decoy gets exactly zero attention weight and nothing about it reaches
  y^i (REFIL's relevance mask, given rather than learned); the flat actor, which has no mask, reads the decoy
  slots' entries ``[dx, dy, is_target]`` as zeros, the nearest thing an MLP has: the same information (which
  slots hold targets, nothing about the decoys) in the same width and the same shuffled order, so it still has
  to find its targets among the slots, as the masked entity actor does;
- ``"no-bit"`` — every ``is_target`` bit zeroed: a decoy looks exactly like a target, where every design should
  fall to (nothing in o^i can say which landmarks pay).

The view is applied to the raw observation inside the actor's forward pass (:class:`DecoyView`), so a checkpoint
plays the plain environment — the batched port and mpe2's reference alike — and still sees what it trained on.
The centralized critic reads the full observations (CTDE), as under chapter 11's limited sight."""


def check_decoy_view(view: str, scenario: str, scenario_kwargs: Mapping[str, Any]) -> None:
    """``view`` must be one of :data:`DECOY_VIEWS`, and a control (``"oracle"``, ``"no-bit"``) needs decoys to act
    on: simple_spread with decoys and ``decoys >= 1`` (without them there is no bit to zero and nothing to hide,
    so the control would silently train the plain design). ``ValueError`` otherwise."""
    if view not in DECOY_VIEWS:
        raise ValueError(f"decoy_view must be one of {list(DECOY_VIEWS)}; got {view!r}")
    if view == "bit":
        return
    if scenario_name(scenario) != DECOYS:
        raise ValueError(f"decoy_view = {view!r} is a control of simple_spread with decoys ({DECOYS!r}); {scenario!r} "
                         "has no decoys to hide and no is_target bit to zero (leave decoy_view at 'bit')")
    if not port_kwargs(DECOYS, **scenario_kwargs)["decoys"]:
        raise ValueError(f"decoy_view = {view!r} needs decoys, and {dict(scenario_kwargs)} has none (decoys = 0 is "
                         "simple_spread: no is_target bit to zero, nothing to hide, so the control would train the "
                         "plain design); use decoys >= 1, or decoy_view = 'bit'")


class _TypeGroups(nn.Module):
    """Which agents have which type, to run one network per type on its agents' rows and put the
    outputs back in agent order. The indices are buffers (:class:`BufferList`), so they move with the
    network that holds them."""

    def __init__(self, agent_types: tuple[int, ...]) -> None:
        super().__init__()
        n_types = max(agent_types) + 1
        self.members = BufferList(torch.tensor([i for i, t in enumerate(agent_types) if t == k])
                                  for k in range(n_types))
        """Each type's agents, in agent order: one index tensor (m_type,) per type."""
        order = [i for k in range(n_types) for i, t in enumerate(agent_types) if t == k]
        self.register_buffer("restore", torch.tensor(sorted(range(len(agent_types)), key=order.__getitem__)),
                             persistent=False)

    def join(self, per_type: Sequence[Tensor]) -> Tensor:
        """Outputs of each type's agents (batch, m_type, ...) -> (batch, m, ...) in agent order."""
        return per_type[0] if len(per_type) == 1 else torch.cat(list(per_type), dim=1)[:, self.restore]


class Actor(nn.Module):
    """Decentralized policy pi(a^i | o^i; theta): agent i acts on its own observation only.

    Agents of the same type share one MLP (obs_dim -> d_hidden -> d_hidden -> d_y, ReLU), as in
    MAPPO's parameter sharing; there is no agent-id input, so agents of a type differ only through
    what they observe (mpe2's observations are egocentric, which is enough to break the symmetry in
    simple_spread). ``forward(o)`` maps (batch, m, obs_dim) to outputs (batch, m, d_y).
    """

    def __init__(self, m: int, obs_dim: int, d_y: int, agent_types: Sequence[int] | None = None,
                 d_hidden: int = 64) -> None:
        super().__init__()
        self.agent_types = check_types(agent_types, m)
        check_sizes(obs_dim=obs_dim, d_y=d_y, d_hidden=d_hidden)
        self.m, self.obs_dim, self.d_y = m, obs_dim, d_y
        self.pis = nn.ModuleList(
            nn.Sequential(mlp([obs_dim, d_hidden, d_hidden]), linear(d_hidden, d_y, gain=POLICY_OUT_GAIN))
            for _ in range(max(self.agent_types) + 1)
        )
        self._groups = _TypeGroups(self.agent_types)

    def forward(self, o: Tensor) -> Tensor:
        check_obs(o, self.m, self.obs_dim, self.pis[0][-1].weight)
        if len(self.pis) == 1:
            return check_no_overflow("Actor", self.pis[0](o), o, self)
        y = self._groups.join([pi(o[:, members]) for pi, members in zip(self.pis, self._groups.members)])
        return check_no_overflow("Actor", y, o, self)


class ConcatPolicy(ConcatNet):
    """Centralized policy of fig. 17.7's shape: y^i = g^i([phi(o^1); ...; phi(o^m)]; theta^i).

    ``forward(o)`` maps (batch, m, obs_dim) to (batch, m, d_y). Head i's first layer has m d_x
    inputs (parameters grow as m^2), and the weight that reads o^j depends on j's position.
    """

    def __init__(self, m: int, obs_dim: int, d_y: int, agent_types: Sequence[int] | None = None, d_x: int = 32,
                 d_hidden: int = 64) -> None:
        super().__init__(m, obs_dim, d_y, agent_types, d_x=d_x, d_hidden=d_hidden, out_gain=POLICY_OUT_GAIN)


class AttentionPolicy(AttentionNet):
    """Centralized policy of fig. 17.8's shape: y^i = g^i(FC([x^i; c^i]); theta^i), c^i attending over
    all m encoded observations x^j = phi(o^j).

    ``forward(o)`` maps (batch, m, obs_dim) to (batch, m, d_y) with fused attention;
    ``outputs_and_alpha(o)`` also returns each block's alpha (batch, l, m, m).
    """

    def __init__(self, m: int, obs_dim: int, d_y: int, agent_types: Sequence[int] | None = None, d_x: int = 32,
                 d_q: int = 16, d_out: int = 16, heads: int = 2, depth: int = 1, d_hidden: int = 64) -> None:
        super().__init__(m, obs_dim, d_y, agent_types, d_x=d_x, d_q=d_q, d_out=d_out, heads=heads, depth=depth,
                         d_hidden=d_hidden, out_gain=POLICY_OUT_GAIN)

    def forward(self, o: Tensor) -> Tensor:
        return self.outputs(o)[0]

    def outputs_and_alpha(self, o: Tensor) -> tuple[Tensor, list[Tensor]]:
        """Outputs (batch, m, d_y) and the list of each block's alpha (batch, l, m, m)."""
        return self.outputs(o, need_weights=True)


class EntityAttention(nn.Module):
    """The entity-attention actor of one agent type: tokens of o^i -> one pre-LN transformer layer -> y^i.

    For each agent i of the type, its observation is cut into tokens (:func:`attnmarl.envs.token_layout`):
    the self token [v, p], then every landmark p_l - p, then every other agent p_j - p (and, in
    simple_tag, a good agent's velocity). Each kind of token has its own embedding, e_n = E_kind t_n + b_kind
    in R^d. Then, with LN = layer norm and l heads of d / l numbers each,

        z_n = LN(e_n);  q = W_q z_self,  k_n = W_k z_n,  v_n = W_v z_n
        alpha_n = softmax_n(<q, k_n> / sqrt(d / l)),   c = W_o [sum_n alpha_n v_n, for each head]
        h = e_self + c;  h <- h + FF(LN(h));  y^i = W_y LN(h)

    Only the self token's output is read (the logits come from it), so only the self token asks a
    query: this is exactly the self token's row of a full self-attention layer over the n tokens, at
    a fraction of the cost. ``alpha`` is (batch, m_type, l, n): how much agent i attends to each entity.
    Nothing here depends on how many agents or landmarks there are.

    ``mixing="mean"`` (:data:`MIXINGS`) is the control that isolates attention: alpha_n = 1 / n over the
    tokens present, so c = W_o W_v (mean_n z_n), a Deep Sets encoder (Zaheer et al. 2017) with the same
    tokens, widths and head. W_q and W_k are kept (unused, so they get no gradient) so that both mixings
    share one checkpoint layout: the same weights run either way, and :attr:`intervention` swaps alpha at
    test time.

    Input: ``tokens`` (batch, m_type, n, d_tokens), every token's features placed in its kind's own
    block of columns followed by a one-hot of its kind (:class:`EntityActor` builds them), so that
    one linear layer ``embed`` is exactly the per-kind embeddings E_kind with their biases b_kind.
    """

    def __init__(self, d_tokens: int, d_y: int, d: int = 32, heads: int = 2, d_ff: int = 64,
                 kind_widths: Sequence[int] | None = None, mixing: str = "attention") -> None:
        super().__init__()
        check_sizes(d_tokens=d_tokens, d_y=d_y, d=d, heads=heads, d_ff=d_ff)
        if mixing not in MIXINGS:
            raise ValueError(f"mixing must be one of {MIXINGS}; got {mixing!r}")
        for rows, cols in ((("d", d), ("d_tokens", d_tokens)), (("2 d", 2 * d), ("d", d)), (("d_ff", d_ff), ("d", d))):
            check_numbers("a weight matrix of the entity actor", rows, cols)
        if d % heads:
            raise ValueError(f"d = {d} must be divisible by the number of heads ({heads})")
        if kind_widths is not None and sum(kind_widths) + len(kind_widths) != d_tokens:
            raise ValueError(f"kind widths {list(kind_widths)} and one flag per kind make "
                             f"{sum(kind_widths) + len(kind_widths)} token columns, not d_tokens = {d_tokens}")
        self.d, self.heads, self.mixing = d, heads, mixing
        self.intervention: str | None = None
        """A test-time replacement of alpha, one of :data:`INTERVENTIONS` (``None``: the network's own)."""
        self.kind_widths = tuple(kind_widths) if kind_widths is not None else None
        self.embed = nn.Linear(d_tokens, d, bias=False)
        self.ln_attn, self.ln_ff, self.ln_out = nn.LayerNorm(d), nn.LayerNorm(d), nn.LayerNorm(d)
        self.W_q = nn.Linear(d, d, bias=False)
        self.W_kv = nn.Linear(d, 2 * d, bias=False)
        self.W_o = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, d_ff), nn.ReLU(), nn.Linear(d_ff, d))
        self.W_y = linear(d, d_y, gain=POLICY_OUT_GAIN)

    def forward(self, tokens: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        """Returns y (batch, m_type, d_y) and alpha (batch, m_type, l, n).

        With one query, the keys and values of all n tokens need not be formed: per head h,
        <q_h, W_k,h z_n> = <W_k,h^T q_h, z_n> and sum_n alpha_n W_v,h z_n = W_v,h (sum_n alpha_n z_n),
        so the layer projects the query back to d numbers and the weighted sum of z forward to d / l —
        the same numbers as the formulas above, with a fraction of the multiplications.

        ``mask`` (batch, m_type, n), bool, True = a real token: with it, a batch can hold observations
        with different numbers of entities, padded to the same n. Padded tokens get exactly zero weight
        (chapter 2's masked softmax), so they change nothing; the self token (n = 0) must be real.
        """
        d_tokens = self.embed.in_features
        if not isinstance(tokens, Tensor):
            raise ValueError(f"tokens must be a torch.Tensor of shape (batch, m_type, n, {d_tokens}); got "
                             f"{type(tokens).__name__}")
        check_like("tokens", tokens, self.embed.weight)
        if tokens.dim() < 2 or tokens.shape[-1] != d_tokens or tokens.shape[-2] == 0:
            raise ValueError(f"tokens must have shape (batch, m_type, n, d_tokens) with n >= 1 (token 0 is the agent's "
                             f"own) and d_tokens = {d_tokens}; got {tuple(tokens.shape)}")
        e = self.embed(tokens)  # (batch, m_type, n, d)
        e_self = self.embed(tokens[..., 0, :])  # the self token again: cheaper than slicing e in backward
        *lead, n, d = e.shape
        l, d_head = self.heads, d // self.heads
        z = self.ln_attn(e).reshape(-1, n, d)  # (N, n, d), N = batch * m_type
        q = self.W_q(self.ln_attn(e_self)).view(-1, l, d_head).transpose(0, 1)  # (l, N, d_head)
        W_k, W_v = self.W_kv.weight.view(2, l, d_head, d)  # each (l, d_head, d)
        u = (q @ W_k).transpose(0, 1)  # W_k,h^T q_h: (N, l, d)
        if mask is not None:
            if mask.shape != tokens.shape[:-1] or mask.dtype != torch.bool:
                raise ValueError(f"mask must be a bool tensor of shape {tuple(tokens.shape[:-1])} (batch, m_type, n); "
                                 f"got {mask.dtype} {tuple(mask.shape)}")
            if has_values(mask) and not mask[..., 0].all():
                raise ValueError("mask hides a self token (token 0): every agent's own token must be real")
            mask = mask.reshape(-1, 1, n)
        scores = u @ z.transpose(1, 2) / math.sqrt(d_head)  # (N, l, n)
        alpha = masked_softmax(scores, mask) if self.attends else self._uniform(scores, mask, -1)
        if self.intervention == "other-agent":  # agent i takes agent i + 1's alpha (axis -3: m_type)
            alpha = alpha.view(*lead, l, n).roll(-1, dims=-3).reshape(-1, l, n)
        z_bar = (alpha @ z).transpose(0, 1)  # sum_n alpha_n z_n per head: (l, N, d)
        c = (z_bar @ W_v.transpose(1, 2)).transpose(0, 1).reshape(*lead, d)  # W_v,h z_bar_h, heads concatenated
        return self._head(e_self, self.W_o(c)), alpha.view(*lead, l, n)

    @property
    def attends(self) -> bool:
        """Whether alpha is the softmax of the scores; else it is uniform over the present tokens (mean
        pooling, or the ``"uniform"`` intervention). ``ValueError`` for an unknown :attr:`intervention`."""
        if self.intervention not in INTERVENTIONS:
            raise ValueError(f"intervention must be one of {INTERVENTIONS}; got {self.intervention!r}")
        return self.mixing == "attention" and self.intervention != "uniform"

    @staticmethod
    def _uniform(like: Tensor, mask: Tensor | None, dim: int) -> Tensor:
        """alpha_n = 1 / n_present on every present token along axis ``dim`` (0 on padding), shaped ``like``."""
        present = torch.ones_like(like) if mask is None else mask.to(like.dtype).expand_as(like)
        return present / present.sum(dim, keepdim=True)

    def _head(self, e_self: Tensor, attended: Tensor) -> Tensor:
        """y = W_y LN(h), h the self token's :meth:`_encoding`."""
        return self.W_y(self._encoding(e_self, attended))

    def _encoding(self, e_self: Tensor, attended: Tensor) -> Tensor:
        """LN(h): h = e_self + W_o c (``attended``);  h <- h + FF(LN(h)). What the policy head reads, and what
        :class:`attnmarl.nets.messages.EntityEncoder` returns as agent i's encoding h^i."""
        h = e_self + attended
        h = h + self.ff(self.ln_ff(h))
        return self.ln_out(h)

    def _kind_columns(self) -> list[tuple[slice, int]]:
        """Each kind's feature columns in ``embed.weight`` and its flag column, whose weights are the
        kind's bias: the layout of :func:`_token_index`, feature blocks side by side, then the flags."""
        if self.kind_widths is None:
            raise ValueError("this EntityAttention was built without kind_widths, so it has no folded form")
        flags = sum(self.kind_widths)
        starts = itertools.accumulate((0,) + self.kind_widths[:-1])
        return [(slice(start, start + width), flags + k)
                for k, (start, width) in enumerate(zip(starts, self.kind_widths))]

    def folded(self, parts: Sequence[Tensor], mask: Tensor | None = None) -> Tensor:
        """The same y as :meth:`forward`, computed from each kind's raw features without forming any
        d-wide per-token tensor. Returns y (batch, m_type, d_y).

        ``parts[k]`` holds the tokens of kind k feature-major, (w_k, n_k, m_type, batch), in the order
        of ``kind_widths``; the self token (kind 0) comes first. Feature-major because every feature
        then is one long array over tokens and rows, and each per-token step below is one vectorised
        pass (token-major, (..., n_k, w_k), every step is a loop over 2-4 numbers, several times
        slower on a CPU). ``mask`` (n, m_type, batch), True = a real token, lists the tokens in the
        same order: parts[0]'s, then parts[1]'s, ...

        Why it is exact: a token's embedding is affine in its features, e_n = E_k t_n + b_k, so after
        the layer norm z_n = gamma (e_n - mu_n) / sigma_n + beta, where, with C = [E_k, b_k] centred
        over its d outputs, e_n - mu_n = C [t_n; 1] and sigma_n^2 = |C [t_n; 1]|^2 / d + eps: a
        quadratic form in the w_k features. Head h's score is then <q_h, W_k,h z_n> =
        <(W_k,h diag(gamma) C)^T q_h, [t_n; 1]> / sigma_n plus <q_h, W_k,h beta>, the same for every
        token, which the softmax ignores. And its output is W_v,h sum_n alpha_n z_n =
        W_v,h beta + (W_v,h diag(gamma) C) sum_n (alpha_n / sigma_n) [t_n; 1]. Every per-token quantity
        has w_k + 1 numbers (3 to 7) instead of d.
        """
        columns = self._kind_columns()
        if len(parts) != len(columns):
            raise ValueError(f"expected tokens of {len(columns)} kinds, got {len(parts)}")
        for part, width in zip(parts, self.kind_widths):
            check_like("tokens", part, self.embed.weight)
            if part.dim() != 4 or part.shape[0] != width or part.shape[2:] != parts[0].shape[2:]:
                raise ValueError(f"each kind's tokens must be feature-major, (w_k, n_k, m_type, batch) with "
                                 f"w_k = {width}; got {tuple(part.shape)}")
        m_type, batch = parts[0].shape[2:]
        d, l = self.d, self.heads
        d_head, d_tokens = d // l, self.embed.in_features
        W = self.embed.weight  # (d, d_tokens)
        C = W - W.mean(0)  # every kind's [E_k, b_k], centred over the d outputs
        gram = C.T @ C / d
        W_k, W_v = self.W_kv.weight.view(2, l, d_head, d)
        gamma, beta = self.ln_attn.weight, self.ln_attn.bias
        K, V = W_k @ (gamma[:, None] * C), W_v @ (gamma[:, None] * C)  # (l, d_head, d_tokens) each
        # q_h = W_q,h z_self only ever meets K_h, and c_h only W_o: fold W_q (and 1 / sqrt(d_head)) into the
        # scores' matrix and W_o into the output's, so that neither is applied to every agent
        W_q, W_o = self.W_q.weight.view(l, d_head, d), self.W_o.weight.view(d, l, d_head)
        U = (K.transpose(1, 2) @ W_q).flatten(0, 1) / math.sqrt(d_head)  # (l d_tokens, d)
        O = torch.einsum("dlj,ljt->dlt", W_o, V).flatten(1)  # (d, l d_tokens)
        o_bias = self.W_o((W_v @ beta).flatten())  # W_o [W_v,h beta for each head] + b_o: (d,)
        t = [part.flatten(2) for part in parts]  # (w_k, n_k, N), N = m_type * batch
        block, flag = columns[0]
        e_self = torch.addmm(W[:, flag], t[0][:, 0].T, W[:, block].T)  # (N, d)
        u = (U @ self.ln_attn(e_self).T).unflatten(0, (l, d_tokens))  # (l, d_tokens, N), scaled
        scores, inv_sigma, attends = [], [], self.attends
        for t_k, (block, flag) in zip(t, columns):
            features = t_k.flatten(1)  # (w_k, n_k N)
            var = ((gram[block, block] @ features + 2 * gram[block, flag, None]) * features).sum(0) + gram[flag, flag]
            if has_values(var) and not torch.isfinite(var.sum()):  # else a huge token would get sigma = inf, weight 0
                raise overflow_error("the entity actor (a token's layer-norm variance)", torch.cat(
                    [part.reshape(-1) for part in parts]), self, "the observations' token features")
            inv_sigma.append(torch.rsqrt(var.clamp_min(0) + self.ln_attn.eps).view(t_k.shape[1:]))  # (n_k, N)
            if attends:
                raw = (u[:, block, None] * t_k).sum(1) + u[:, flag, None]  # (l, n_k, N)
                scores.append(raw * inv_sigma[-1])
        n = sum(t_k.shape[1] for t_k in t)
        if mask is not None:
            if mask.shape != (n, m_type, batch) or mask.dtype != torch.bool:
                raise ValueError(f"mask must be a bool tensor of shape {(n, m_type, batch)} (n, m_type, batch); "
                                 f"got {mask.dtype} {tuple(mask.shape)}")
            if has_values(mask) and not mask[0].all():
                raise ValueError("mask hides a self token (token 0): every agent's own token must be real")
            mask = mask.reshape(1, n, -1)
        if attends:  # softmax over the n tokens
            scores = torch.cat(scores, dim=1)  # (l, n, N)
            if mask is not None:
                scores = scores.masked_fill(~mask, float("-inf"))
            exp = (scores - scores.amax(1, keepdim=True).detach()).exp()
            alpha = exp / exp.sum(1, keepdim=True)
        else:
            alpha = self._uniform(u.new_empty(l, n, m_type * batch), mask, 1)
        if self.intervention == "other-agent":  # agent i takes agent i + 1's alpha (N is m_type, then batch)
            alpha = alpha.unflatten(2, (m_type, batch)).roll(-1, dims=2).flatten(2)
        alpha = alpha.split([t_k.shape[1] for t_k in t], dim=1)
        weighted = [a_k * s_k for a_k, s_k in zip(alpha, inv_sigma)]  # alpha_n / sigma_n: (l, n_k, N)
        r = torch.cat([(a_k[:, None] * t_k).sum(2) for a_k, t_k in zip(weighted, t)] + [a_k.sum(1, keepdim=True)
                       for a_k in weighted], dim=1)  # sum_n (alpha_n / sigma_n) [t_n; 1], embed's column order
        attended = torch.addmm(o_bias, r.flatten(0, 1).T, O.T)  # W_o [W_v,h sum_n alpha_n z_n]: (N, d)
        return self._head(e_self, attended).unflatten(0, (m_type, batch)).transpose(0, 1)  # (batch, m_type, d_y)


class EntityActor(nn.Module):
    """Decentralized entity-attention policy pi(a^i | tokens of o^i; theta), for every agent at once.

    Agents of a type share one :class:`EntityAttention` (so a team of any size runs the same weights);
    agent i reads only its own observation, cut into its tokens. The scenario's token layout
    (which columns of o^i form which token) is built for the given ``scenario`` and
    ``scenario_kwargs``; it is not a parameter, so the weights of a network built for one m load into
    one built for another.

    ``frame="absolute"`` (simple_spread only) keeps the same tokens and network but builds the tokens in
    world coordinates from every agent's observation — self [v, p], landmark p_l, other agent
    [v_j, p_j] — so the policy is centralized (it reads o^j for j's velocity and position) and its
    tokens no longer move with the agent: the comparison that isolates what egocentric tokens buy.

    ``mixing="mean"`` replaces attention by mean pooling over the tokens (:data:`MIXINGS`), the control
    that changes nothing else; :attr:`intervention` replaces a trained actor's alpha at test time
    (:data:`INTERVENTIONS`).

    On Level-Based Foraging (``"lbforaging"``) the tokens are cut from :attr:`view`'s egocentric observation
    (:class:`attnmarl.nets.foraging.ForagingView`: positions relative to the player) and the slots where the
    player sees nothing are masked out of attention (:meth:`masks`); ``view`` is ``None`` elsewhere.

    ``forward(o)`` maps (batch, m, obs_dim) to (batch, m, d_y); ``outputs_and_alpha(o)`` also returns
    alpha (batch, m, l, n_tokens) when every agent has the same number of tokens (else a list per type),
    and :attr:`token_names` names each agent's tokens (mpe2 entity names). The gather indices that cut
    observations into tokens are buffers (:class:`attnmarl.nets.common.BufferList`): they move with
    ``.to(device)`` and are not in the ``state_dict``.
    """

    @property
    def mixing(self) -> str:
        """``"attention"`` or ``"mean"`` (:data:`MIXINGS`)."""
        return self.nets[0].mixing

    @property
    def intervention(self) -> str | None:
        """The test-time replacement of alpha in every type's network (:data:`INTERVENTIONS`); ``None`` = none."""
        return self.nets[0].intervention

    @intervention.setter
    def intervention(self, value: str | None) -> None:
        if value not in INTERVENTIONS:
            raise ValueError(f"intervention must be one of {INTERVENTIONS}; got {value!r}")
        for net in self.nets:
            net.intervention = value

    def __init__(self, scenario: str, scenario_kwargs: dict[str, Any], m: int, obs_dim: int, d_y: int,
                 agent_types: Sequence[int] | None = None, d: int = 32, heads: int = 2, d_ff: int = 64,
                 frame: str = "egocentric", mixing: str = "attention") -> None:
        super().__init__()
        self.agent_types = check_types(agent_types, m)
        check_sizes(obs_dim=obs_dim, d_y=d_y)
        self.m, self.obs_dim, self.d_y = m, obs_dim, d_y
        if frame not in ("egocentric", "absolute"):
            raise ValueError(f"frame must be 'egocentric' or 'absolute'; got {frame!r}")
        if frame == "absolute" and scenario != "simple_spread":
            raise ValueError(f"absolute tokens are built for simple_spread only, not {scenario!r}")
        self.frame = frame
        if not isinstance(scenario_kwargs, Mapping):
            raise ValueError(f"scenario_kwargs must be a dict of the scenario's arguments (for example {{'N': 3}}); "
                             f"got {scenario_kwargs!r}")
        layouts = [_layout(scenario, scenario_kwargs, i, m) for i in range(m)]
        try:  # an agent beyond the m given: the scenario has more agents than the actor would serve
            token_layout(scenario, m, **scenario_kwargs)
        except ValueError:
            pass
        else:
            raise ValueError(f"m = {m}, but {scenario} with {dict(scenario_kwargs)} has more agents; give the m of "
                             "the scenario the actor is built for")
        if any(layout.padded_dim != obs_dim for layout in layouts):
            raise ValueError(f"{scenario} {scenario_kwargs} has observations of width {layouts[0].padded_dim}, "
                             f"not obs_dim = {obs_dim}")
        self.token_names = tuple(layout.names for layout in layouts)
        self.view = ForagingView(layouts[0].kinds.count("food")) if scenario_name(scenario) == FORAGING else None
        """LBF's egocentric view and key mask, or ``None`` (tokens cut from ``o`` as it is, every token present)."""
        self._groups = _TypeGroups(self.agent_types)
        self.nets = nn.ModuleList()
        gather, kind_gather, kind_order = [], [], []
        for members in self._groups.members:
            group = [layouts[i] for i in members.tolist()]
            index = _token_index(group, obs_dim)  # (m_type, n, d_tokens)
            blocks = _kind_blocks(group[0])
            kind_order.append(torch.tensor([n for tokens, _, _ in blocks for n in tokens]))
            self.nets.append(self._type_net(index.shape[-1], d_y, d, heads, d_ff, [w for _, _, w in blocks], mixing))
            gather.append(index)
            rows = members[:, None, None] * obs_dim  # where agent i's o^i starts in o.flatten(1)
            kind_gather.append(BufferList(_feature_major(rows + index[:, tokens, start:start + width])
                                          for tokens, start, width in blocks))
        self._gather = BufferList(gather)
        self._kind_order = BufferList(kind_order)
        """Per type: the tokens kind by kind (n,), the order in which :meth:`EntityAttention.folded` lists them."""
        """Per type: where each token feature sits in the extended observation [o^i; 0; 1], (m_type, n, d_tokens)."""
        self._kind_gather = nn.ModuleList(kind_gather)
        """Per type, per kind of token: the rows of o.flatten(1) :meth:`kind_tokens` gathers, (w_k, n_k, m_type)."""
        self._kind_offset = BufferList()
        """Absolute tokens only: per kind, the rows added to :attr:`_kind_gather`'s (p_i + (p_l - p_i), say)."""
        if frame == "absolute":
            main, offset = _absolute_spread_index(m, obs_dim)
            self._absolute = BufferList([main, offset])
            """simple_spread's world-coordinate tokens: table[main] + table[offset] (:func:`_absolute_spread_index`)."""
            blocks = _kind_blocks(layouts[0])
            self._kind_gather = nn.ModuleList([BufferList(_feature_major(main[:, tokens, start:start + width])
                                                          for tokens, start, width in blocks)])
            self._kind_offset = BufferList(_feature_major(offset[:, tokens, start:start + width])
                                           for tokens, start, width in blocks)

    @staticmethod
    def _type_net(d_tokens: int, d_y: int, d: int, heads: int, d_ff: int, kind_widths: Sequence[int],
                  mixing: str) -> EntityAttention:
        """The network one agent type shares (a subclass may build another one on the same tokens)."""
        return EntityAttention(d_tokens, d_y, d, heads, d_ff, kind_widths, mixing)

    def tokens(self, o: Tensor) -> list[Tensor]:
        """Each type's token tensor (batch, m_type, n, d_tokens), gathered from ``o`` (batch, m, obs_dim)."""
        o = self._viewed(o)
        if self.frame == "absolute":
            table = torch.cat([o.flatten(1), o.new_zeros(o.shape[0], 1), o.new_ones(o.shape[0], 1)], dim=-1)
            main, offset = self._absolute
            return [table[:, main] + table[:, offset]]
        o = torch.cat([o, o.new_zeros(o.shape[:-1] + (1,)), o.new_ones(o.shape[:-1] + (1,))], dim=-1)
        return [o[:, members[:, None, None], index] for members, index in zip(self._groups.members, self._gather)]

    def _viewed(self, o: Tensor) -> Tensor:
        """``o`` after the checks of :func:`attnmarl.nets.common.check_obs`, through :attr:`view` where there is one."""
        check_obs(o, self.m, self.obs_dim, self.nets[0].embed.weight)
        return o if self.view is None else self.view(o)

    def masks(self, o: Tensor) -> list[Tensor | None]:
        """Each type's key mask (batch, m_type, n), True = the token takes part, or ``None``: every token does, except
        on LBF, where the slots the player sees nothing in are masked out (:meth:`ForagingView.key_mask`). An actor
        that hides tokens from itself (:class:`DecoyEntityActor`'s oracle) returns its mask, which both forms apply
        (:meth:`outputs_and_alpha` and :meth:`forward`)."""
        if self.view is None:
            return [None] * len(self.nets)
        check_obs(o, self.m, self.obs_dim, self.nets[0].embed.weight)
        mask = self.view.key_mask(o)
        return [mask[:, members] for members in self._groups.members]

    def outputs_and_alpha(self, o: Tensor) -> tuple[Tensor, Tensor | list[Tensor]]:
        ys, alphas = zip(*(net(t, mask) for net, t, mask in zip(self.nets, self.tokens(o), self.masks(o))))
        if len({a.shape[-1] for a in alphas}) == 1:
            return self._groups.join(ys), self._groups.join(alphas)
        return self._groups.join(ys), list(alphas)

    def kind_tokens(self, o: Tensor) -> list[list[Tensor]]:
        """For each type, its tokens kind by kind, feature-major: (w_k, n_k, m_type, batch), raw features only
        (the input of :meth:`EntityAttention.folded`); the same numbers as :meth:`tokens` without the zeros."""
        o = self._viewed(o)
        table = o.flatten(1)  # o^1, ..., o^m side by side; in world coordinates, then a zero and a one
        if self.frame == "absolute":
            table = torch.cat([table, o.new_zeros(o.shape[0], 1), o.new_ones(o.shape[0], 1)], dim=-1)
        table = table.T.contiguous()  # one row per column of the table: a gathered row is a feature's batch

        def gather(index: Tensor) -> Tensor:  # one row copy per kind: (w_k, n_k, m_type, batch)
            return table.index_select(0, index.flatten()).view(*index.shape, -1)

        if self.frame == "absolute":  # one type; each world-coordinate feature is the sum of two columns
            return [[gather(main) + gather(offset) for main, offset in zip(self._kind_gather[0], self._kind_offset)]]
        return [[gather(main) for main in kinds] for kinds in self._kind_gather]

    def forward(self, o: Tensor) -> Tensor:
        """Outputs (batch, m, d_y) by :meth:`EntityAttention.folded`: the same numbers as
        :meth:`outputs_and_alpha`, without alpha, 2-3 times faster to train at m = 12."""
        return self._groups.join(self._folded(o))

    def _folded(self, o: Tensor) -> list[Tensor]:
        """Each type's output of its network's folded form on :meth:`kind_tokens`, with the key mask of
        :meth:`masks` put in the folded form's token order, kind by kind (:attr:`_kind_order`)."""
        folded_masks = [None if mask is None else mask[..., order].permute(2, 1, 0)
                        for mask, order in zip(self.masks(o), self._kind_order)]
        return [net.folded(parts, mask) for net, parts, mask in zip(self.nets, self.kind_tokens(o), folded_masks)]


class DecoyView(nn.Module):
    """Chapter 12's controls (:data:`DECOY_VIEWS`) on the raw observations o (batch, m, obs_dim) of simple_spread
    with decoys, inside an actor. Every agent's observation has the same layout
    (:func:`attnmarl.envs.decoys.observation_layout`), read here from the token layout
    (:func:`attnmarl.envs.tokens.token_layout`): the landmark slots are the tokens with an ``is_target`` feature.

    - :meth:`seen` — what the actor reads: o, or with ``"no-bit"`` o with every ``is_target`` bit zeroed;
    - :meth:`key_mask` — with ``"oracle"``, the entity actor's key mask (batch, m, n_tokens), False exactly on the
      decoy slots (bit 0 in the true observation), True on every other token; ``None`` with ``"no-bit"``;
    - :meth:`without_decoys` — the flat actor's oracle: the decoy slots' entries ``[dx, dy, is_target]`` zeroed.

    The column and token indices are buffers (not in the state dict), so they move with the actor.
    """

    def __init__(self, view: str, scenario: str, scenario_kwargs: Mapping[str, Any], obs_dim: int) -> None:
        super().__init__()
        check_decoy_view(view, scenario, scenario_kwargs)
        if view == "bit":
            raise ValueError("decoy_view = 'bit' is the plain actor (Actor, EntityActor): there is no view to apply")
        layout = token_layout(scenario, 0, **scenario_kwargs)
        if layout.obs_dim != obs_dim:
            raise ValueError(f"{scenario} {dict(scenario_kwargs)} has observations of width {layout.obs_dim}, not "
                             f"obs_dim = {obs_dim}")
        slots = [n for n, features in enumerate(layout.features) if "is_target" in features]
        bit = layout.features[slots[0]].index("is_target")
        self.view, self.n_tokens = view, len(layout.names)
        self.register_buffer("slot_tokens", torch.tensor(slots), persistent=False)
        """The landmark slots' places among the tokens (n_slots,)."""
        self.register_buffer("slot_columns", torch.tensor([layout.columns[n] for n in slots]), persistent=False)
        """Each slot's columns in o^i, ``[dx, dy, is_target]`` (n_slots, 3)."""
        self.register_buffer("bit_columns", self.slot_columns[:, bit].clone(), persistent=False)
        """Each slot's ``is_target`` column in o^i (n_slots,)."""

    def is_target(self, o: Tensor) -> Tensor:
        """Which slots hold a target, (batch, m, n_slots) bool: the true bits of o."""
        return o.index_select(-1, self.bit_columns) == 1.0

    def seen(self, o: Tensor) -> Tensor:
        """The observations the actor reads: with ``"no-bit"`` every ``is_target`` bit zeroed, else ``o`` itself."""
        return o.index_fill(-1, self.bit_columns, 0.0) if self.view == "no-bit" else o

    def key_mask(self, o: Tensor) -> Tensor | None:
        """With ``"oracle"``, the key mask (batch, m, n_tokens), True = takes part: every token but the decoy slots;
        ``None`` (every token takes part) otherwise."""
        if self.view != "oracle":
            return None
        mask = torch.ones(o.shape[:-1] + (self.n_tokens,), dtype=torch.bool, device=o.device)
        return mask.index_copy(-1, self.slot_tokens, self.is_target(o))

    def without_decoys(self, o: Tensor) -> Tensor:
        """``o`` with every decoy slot's entries ``[dx, dy, is_target]`` zeroed (the flat actor's oracle)."""
        kept = o[..., self.slot_columns] * self.is_target(o).unsqueeze(-1).to(o.dtype)  # (batch, m, n_slots, 3)
        return o.index_copy(-1, self.slot_columns.flatten(), kept.flatten(-2))


class DecoyActor(Actor):
    """The flat actor (:class:`Actor`, the same weights and state dict) under a decoy control (:data:`DECOY_VIEWS`):
    its MLP reads o^i with the bits zeroed (``"no-bit"``) or the decoy slots zeroed (``"oracle"``), applied to the
    raw observations by :attr:`decoys` (:class:`DecoyView`). ``forward(o)`` (batch, m, obs_dim) -> (batch, m, d_y)."""

    def __init__(self, scenario: str, scenario_kwargs: Mapping[str, Any], m: int, obs_dim: int, d_y: int, view: str,
                 agent_types: Sequence[int] | None = None, d_hidden: int = 64) -> None:
        super().__init__(m, obs_dim, d_y, agent_types, d_hidden)
        self.decoys = DecoyView(view, scenario, scenario_kwargs, obs_dim)

    def forward(self, o: Tensor) -> Tensor:
        check_obs(o, self.m, self.obs_dim, self.pis[0][-1].weight)
        return super().forward(self.decoys.without_decoys(o) if self.decoys.view == "oracle" else self.decoys.seen(o))


class DecoyEntityActor(EntityActor):
    """The entity actor (:class:`EntityActor`, the same weights and state dict, attention or mean pooling) under a
    decoy control (:data:`DECOY_VIEWS`): its tokens are cut from :meth:`DecoyView.seen` (bits zeroed with
    ``"no-bit"``), and with ``"oracle"`` its key mask (:meth:`masks`) hides the decoy slots, so alpha is exactly 0
    on them — in both forms, :meth:`outputs_and_alpha` and the folded :meth:`forward`. Runs at any m and d >= 1."""

    def __init__(self, scenario: str, scenario_kwargs: Mapping[str, Any], m: int, obs_dim: int, d_y: int, view: str,
                 agent_types: Sequence[int] | None = None, d: int = 32, heads: int = 2, d_ff: int = 64,
                 mixing: str = "attention") -> None:
        check_decoy_view(view, scenario, scenario_kwargs)  # before the layouts: the scenario's own error first
        super().__init__(scenario, dict(scenario_kwargs), m, obs_dim, d_y, agent_types, d, heads, d_ff, mixing=mixing)
        self.decoys = DecoyView(view, scenario, scenario_kwargs, obs_dim)

    def _seen(self, o: Tensor) -> Tensor:
        check_obs(o, self.m, self.obs_dim, self.nets[0].embed.weight)
        return self.decoys.seen(o)

    def tokens(self, o: Tensor) -> list[Tensor]:
        """:meth:`EntityActor.tokens` of the observations the actor sees (:meth:`DecoyView.seen`)."""
        return super().tokens(self._seen(o))

    def kind_tokens(self, o: Tensor) -> list[list[Tensor]]:
        """:meth:`EntityActor.kind_tokens` of the observations the actor sees (:meth:`DecoyView.seen`)."""
        return super().kind_tokens(self._seen(o))

    def masks(self, o: Tensor) -> list[Tensor | None]:
        """Each type's oracle key mask (batch, m_type, n) from the true bits (:meth:`DecoyView.key_mask`), or
        ``None`` without the oracle."""
        check_obs(o, self.m, self.obs_dim, self.nets[0].embed.weight)
        mask = self.decoys.key_mask(o)
        return [None if mask is None else mask[:, members] for members in self._groups.members]


def _layout(scenario: str, scenario_kwargs: Mapping[str, Any], i: int, m: int) -> TokenLayout:
    """Agent i's token layout, or ``ValueError`` saying that the scenario has fewer than m agents."""
    try:
        return token_layout(scenario, i, **scenario_kwargs)
    except ValueError as error:
        if i == 0 or "agent index" not in str(error):
            raise
        raise ValueError(f"m = {m}, but {scenario} with {dict(scenario_kwargs)} has {i} agents; give the m of the "
                         "scenario the actor is built for") from None


def _feature_major(index: Tensor) -> Tensor:
    """A gather index (m_type, n_k, w_k) reordered to (w_k, n_k, m_type), as :meth:`EntityActor.kind_tokens`
    lays the tokens out."""
    return index.permute(2, 1, 0).contiguous()


def _kind_blocks(layout: TokenLayout) -> list[tuple[list[int], int, int]]:
    """For each kind of token, in order of first appearance: which tokens have it, and where its
    block of columns starts in the token features of :func:`_token_index`, and how wide it is."""
    kinds = list(dict.fromkeys(layout.kinds))
    widths = [len(layout.columns[layout.kinds.index(kind)]) for kind in kinds]
    starts = itertools.accumulate([0] + widths[:-1])
    return [([n for n, k in enumerate(layout.kinds) if k == kind], start, width)
            for kind, start, width in zip(kinds, starts, widths)]


def _token_index(layouts: Sequence[TokenLayout], obs_dim: int) -> Tensor:
    """Where each token feature comes from, for agents with the same kinds of tokens: (m_type, n, d_tokens).

    Column ``obs_dim`` of the extended observation [o; 0; 1] is a zero and ``obs_dim + 1`` a one. A
    token's features land in its kind's own block of columns (zeros elsewhere), then one column per
    kind holds 1 for the token's own kind: [t_self | 0 | 0 | 1 0 0] for the self token, and so on.
    """
    kinds = list(dict.fromkeys(layouts[0].kinds))
    blocks = _kind_blocks(layouts[0])
    offsets = {kind: start for kind, (_, start, _) in zip(kinds, blocks)}
    d_tokens = sum(width for _, _, width in blocks) + len(kinds)
    shapes = {tuple((k, len(c)) for k, c in zip(layout.kinds, layout.columns)) for layout in layouts}
    if len(shapes) != 1:
        raise ValueError("agents of one type must have the same kinds of tokens in the same order")
    zero, one = obs_dim, obs_dim + 1
    index = torch.full((len(layouts), len(layouts[0].kinds), d_tokens), zero)
    for a, layout in enumerate(layouts):
        for n, (kind, columns) in enumerate(zip(layout.kinds, layout.columns)):
            index[a, n, offsets[kind]:offsets[kind] + len(columns)] = torch.tensor(columns)
            index[a, n, d_tokens - len(kinds) + kinds.index(kind)] = one
    return index


def _absolute_spread_index(m: int, obs_dim: int) -> tuple[Tensor, Tensor]:
    """simple_spread's tokens in world coordinates, as two index maps (m, n, d_tokens) into the table
    [o^1; ...; o^m; 0; 1] (all observations flattened, then a zero and a one): tokens = table[main] +
    table[offset]. Agent i's tokens, in the egocentric layout's order and feature blocks: self [v_i, p_i];
    landmark l at p_i + (p_l - p_i), the relative position in o^i plus p_i; agent j [v_j, p_j] from o^j."""
    n, zero, one = 2 * m, m * obs_dim, m * obs_dim + 1
    main = torch.full((m, n, 13), zero)  # blocks: self 0-3, landmark 4-5, agent 6-9, kind flags 10-12
    offset = torch.full((m, n, 13), zero)
    for i in range(m):
        main[i, 0, 0:4] = torch.arange(4) + i * obs_dim
        main[i, 0, 10] = one
        for l in range(m):
            main[i, 1 + l, 4:6] = torch.arange(2) + i * obs_dim + 4 + 2 * l
            offset[i, 1 + l, 4:6] = torch.arange(2, 4) + i * obs_dim
            main[i, 1 + l, 11] = one
        for k, j in enumerate(j for j in range(m) if j != i):
            main[i, 1 + m + k, 6:10] = torch.arange(4) + j * obs_dim
            main[i, 1 + m + k, 12] = one
    return main, offset
