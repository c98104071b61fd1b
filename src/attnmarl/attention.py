"""Attention: score functions, masked softmax, single- and multi-head self-attention.

Notation follows the source (Wang, Li & Zhang, *Deep Reinforcement Learning*, the attention chapter):
m inputs x^1..x^m in R^{d_in}; for each, a query q^i = W_q x^i and a key k^i = W_k x^i in
R^{d_q} and a value v^i = W_v x^i in R^{d_out}; the weights of query i over all keys,

    alpha^i = softmax(<q^i, k^1>, ..., <q^i, k^m>)          in R^m,        (eq. 1)

and the output c^i = sum_j alpha^i_j v^j in R^{d_out}.                     (eq. 2)

Batched tensors put the batch first and the m inputs second: x is (batch, m, d_in). Every public
function also takes unbatched input (m, d_in) and then returns unbatched results.
A *mask* is boolean with True meaning "this key takes part", as in
:func:`torch.nn.functional.scaled_dot_product_attention`: either a key-padding mask (batch, m),
so one batch can hold sets of different sizes, or a full mask (batch, m, m) whose row i says which
keys query i may look at (for example a causal mask). The self-attention layers also take a numpy bool
array or a nested list of bools, read as the same bool tensor on x's device; :func:`masked_softmax`, the
low-level function, takes a bool tensor only.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from .checks import check_bool, check_finite, check_int, check_like, check_real, check_sizes, has_values, is_int
from .costs import check_numbers

__all__ = [
    "dot_score",
    "scaled_dot_score",
    "general_score",
    "additive_score",
    "cosine_score",
    "masked_softmax",
    "causal_mask",
    "self_attention",
    "SelfAttention",
    "MultiHeadSelfAttention",
    "from_torch_multihead",
    "AttentionFC",
    "SelfAttentionStack",
]


# ---------------------------------------------------------------------------------------------
# Score functions: queries (..., n_q, d) and keys (..., n_k, d') -> scores (..., n_q, n_k)
# ---------------------------------------------------------------------------------------------

def _check_pair(q: Tensor, k: Tensor, same_dim: bool = True) -> None:
    """Queries and keys of a score function: (..., n, d) tensors of one dtype and device, finite."""
    if not isinstance(q, Tensor) or not isinstance(k, Tensor):
        raise ValueError(f"queries and keys must be torch.Tensors; got {type(q).__name__} and {type(k).__name__}")
    if q.dim() < 2 or k.dim() < 2:
        raise ValueError(
            f"queries and keys need at least 2 dimensions (..., n, d); got {tuple(q.shape)} and {tuple(k.shape)}"
        )
    if same_dim and q.shape[-1] != k.shape[-1]:
        raise ValueError(
            f"queries and keys must have the same last dimension for this score; got {q.shape[-1]} and {k.shape[-1]}"
        )
    try:
        torch.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    except RuntimeError:
        raise ValueError(
            f"queries and keys must have the same batch dimensions (or ones that broadcast) before their last two "
            f"(..., n, d); got queries of shape {tuple(q.shape)} and keys of shape {tuple(k.shape)}"
        ) from None
    check_like("keys k", k, q, "the queries q")
    check_finite("queries q", q)
    check_finite("keys k", k)


def dot_score(q: Tensor, k: Tensor) -> Tensor:
    """Dot product score <q, k> = q^T k (Luong et al. 2015 "dot"; the source's eq. 1)."""
    _check_pair(q, k)
    return q @ k.transpose(-1, -2)


def scaled_dot_score(q: Tensor, k: Tensor) -> Tensor:
    """Scaled dot product q^T k / sqrt(d) (Vaswani et al. 2017, eq. 1)."""
    _check_pair(q, k)
    return q @ k.transpose(-1, -2) / math.sqrt(q.shape[-1])


def general_score(q: Tensor, k: Tensor, W: Tensor) -> Tensor:
    """General (bilinear) score q^T W k with W in R^{d_q x d_k} (Luong et al. 2015 "general")."""
    _check_pair(q, k, same_dim=False)
    if not isinstance(W, Tensor):
        raise ValueError(f"W must be a torch.Tensor of shape (d_q, d_k) = {(q.shape[-1], k.shape[-1])}; got "
                         f"{type(W).__name__}")
    if W.shape != (q.shape[-1], k.shape[-1]):
        raise ValueError(f"W must have shape (d_q, d_k) = {(q.shape[-1], k.shape[-1])}; got {tuple(W.shape)}")
    check_like("W", W, q, "the queries q")
    return (q @ W) @ k.transpose(-1, -2)


def additive_score(q: Tensor, k: Tensor, W_q: Tensor, W_k: Tensor, v: Tensor) -> Tensor:
    """Additive score v^T tanh(W_q q + W_k k) (Bahdanau et al. 2015, "concat" in Luong et al.).

    W_q is (d_a, d_q), W_k is (d_a, d_k) and v is (d_a,): each query-key pair goes through one
    hidden layer of width d_a. Memory grows as n_q * n_k * d_a.
    """
    _check_pair(q, k, same_dim=False)
    d_a = v.shape[-1]
    if v.dim() != 1 or W_q.shape != (d_a, q.shape[-1]) or W_k.shape != (d_a, k.shape[-1]):
        raise ValueError(
            f"additive score needs W_q (d_a, d_q), W_k (d_a, d_k), v (d_a,); got {tuple(W_q.shape)}, "
            f"{tuple(W_k.shape)}, {tuple(v.shape)} for d_q={q.shape[-1]}, d_k={k.shape[-1]}"
        )
    for name, weight in (("W_q", W_q), ("W_k", W_k), ("v", v)):
        check_like(name, weight, q, "the queries q")
    hidden = torch.tanh((q @ W_q.T).unsqueeze(-2) + (k @ W_k.T).unsqueeze(-3))  # (..., n_q, n_k, d_a)
    return hidden @ v


def cosine_score(q: Tensor, k: Tensor, eps: float = 1e-8) -> Tensor:
    """Cosine similarity q^T k / (|q| |k|) (content-based addressing, Graves et al. 2014)."""
    _check_pair(q, k)
    check_real("eps", eps, 0.0, low_open=True)  # eps <= 0 would divide a zero vector by zero: NaN
    q_hat = q / _norm(q).clamp_min(eps)
    k_hat = k / _norm(k).clamp_min(eps)
    return q_hat @ k_hat.transpose(-1, -2)


def _norm(x: Tensor) -> Tensor:
    """|x| over the last axis, (..., 1), without overflow: |x| = s |x / s| with s the largest |x_j| (the
    plain sum of squares is inf in float32 once an entry passes 1.8e19, and the cosine would come out 0)."""
    s = x.abs().amax(-1, keepdim=True).clamp_min(torch.finfo(x.dtype).tiny)
    return s * (x / s).norm(dim=-1, keepdim=True)


# ---------------------------------------------------------------------------------------------
# Normalising
# ---------------------------------------------------------------------------------------------

def masked_softmax(scores: Tensor, mask: Tensor | None = None, dim: int = -1) -> Tensor:
    """Softmax over ``dim`` in which masked-out entries get exactly zero weight.

    ``mask`` is boolean, True = takes part, and must broadcast to ``scores``. A row (a slice along
    ``dim``) in which nothing takes part has no softmax; it raises ``ValueError`` instead of
    returning NaN. So do scores that are NaN or +inf, or a row whose every key scores -inf: the
    weights are checked (one sum), and this function never returns NaN.
    """
    if not isinstance(scores, Tensor):
        raise ValueError(f"scores must be a torch.Tensor; got {type(scores).__name__}")
    if scores.dim() == 0:
        raise ValueError("scores must have at least one dimension (the keys); got a 0-dimensional tensor")
    if not scores.is_floating_point():
        raise ValueError(f"scores must be a floating-point tensor (a softmax's weights are fractions); got dtype "
                         f"{scores.dtype}: convert them, for example scores.float()")
    if not is_int(dim) or not -scores.dim() <= dim < scores.dim():
        raise ValueError(f"dim must be an axis of the {scores.dim()}-dimensional scores, an int from {-scores.dim()} "
                         f"to {scores.dim() - 1}; got {dim!r}")
    rows = math.prod(size for axis, size in enumerate(scores.shape) if axis != dim % scores.dim())
    if scores.shape[dim] == 0 and rows:
        raise ValueError(f"scores of shape {tuple(scores.shape)} have no keys along dim {dim}: a softmax over zero "
                         "keys has no weights that sum to 1; each query needs at least one key")
    if mask is not None:
        scores = scores.masked_fill(~_check_mask(scores, mask, dim), float("-inf"))
    alpha = torch.softmax(scores, dim=dim)
    try:
        check_finite("alpha", alpha)
    except ValueError:
        raise ValueError(_softmax_error(scores, dim)) from None
    return alpha


def _as_mask(mask: Any, device: torch.device) -> Tensor:
    """``mask`` as a bool tensor: a tensor as it is; a numpy bool array or a nested list of bools as the same
    values on ``device``. Anything else, or values that are not bools (0/1 integers, floats) in any of these
    forms, is a ``ValueError`` naming what was given."""
    expected = "mask must be a bool tensor, a numpy bool array or a nested list of bools (True = takes part)"
    if isinstance(mask, (np.ndarray, list, tuple)):
        try:
            array = np.asarray(mask)
        except ValueError:
            raise ValueError(f"{expected}; got a ragged {type(mask).__name__}, whose rows differ in length") from None
        if array.dtype != np.bool_:
            raise ValueError(f"{expected}; got {type(mask).__name__} of dtype {array.dtype}")
        return torch.from_numpy(np.ascontiguousarray(array)).to(device)
    if not isinstance(mask, Tensor) or mask.dtype != torch.bool:
        raise ValueError(f"{expected}; got " + (f"a tensor of dtype {mask.dtype}" if isinstance(mask, Tensor)
                                                else type(mask).__name__))
    return mask


def _check_mask(scores: Tensor, mask: Tensor, dim: int) -> Tensor:
    """``mask`` broadcast to ``scores``, after checking that it is boolean and leaves every row a key."""
    if not isinstance(mask, Tensor):
        raise ValueError(f"mask must be a bool tensor (True = takes part); got {type(mask).__name__}")
    if mask.dtype != torch.bool:
        raise ValueError(f"mask must be a bool tensor (True = takes part); got dtype {mask.dtype}")
    if mask.device != scores.device:
        raise ValueError(f"mask is on device {mask.device} but the scores are on {scores.device}; move one of them")
    try:
        mask = mask.expand_as(scores)
    except RuntimeError:
        raise ValueError(
            f"mask of shape {tuple(mask.shape)} does not broadcast to scores of shape {tuple(scores.shape)}"
        ) from None
    empty = ~mask.any(dim=dim)
    if has_values(empty) and empty.any():
        first = [int(i) for i in empty.nonzero()[0]]
        raise ValueError(
            f"{int(empty.sum())} attention row(s) have every key masked, the first at index {first} "
            "(leading dimensions, then the query); each query needs at least one key with mask True"
        )
    return mask


def _softmax_error(scores: Tensor, dim: int) -> str:
    """Why the softmax of ``scores`` (masked keys already at -inf) is not a set of weights."""
    nan, plus_inf = int(torch.isnan(scores).sum()), int((scores == math.inf).sum())
    dead = int((scores == -math.inf).all(dim=dim).sum())
    causes = []
    if nan or plus_inf:
        causes.append(f"NaN and +inf scores come from queries and keys beyond {scores.dtype}'s range (finite but "
                      "too large inputs overflow: scale them down or compute in float64) or from NaN inputs")
    if dead:
        causes.append("a row of -inf scores leaves no key (leave keys out with the mask, True = takes part, and "
                      "keep at least one per row)")
    return (f"the scores have no softmax: they hold {nan} NaN and {plus_inf} +inf value(s), and {dead} row(s) "
            "score every key -inf; " + "; ".join(causes))


def causal_mask(m: int) -> Tensor:
    """The (m, m) mask of a left-to-right decoder: query i may look at keys j <= i (m up to 2^15: the mask
    alone is m^2 bytes)."""
    m = check_int("m", m, maximum=2**15)
    return torch.ones(m, m, dtype=torch.bool).tril()


# ---------------------------------------------------------------------------------------------
# Self-attention
# ---------------------------------------------------------------------------------------------

def _prepare(x: Tensor, W_q: Tensor, mask: Tensor | None) -> tuple[Tensor, Tensor | None, bool]:
    """Validate (batch, m, d_in) or (m, d_in) input — finite, of the weights' dtype and device — and its
    mask; return batched x and a mask of shape (batch, 1, m) or (batch, m, m), in which every query has
    at least one key."""
    if not isinstance(x, Tensor):
        raise ValueError(f"x must be a torch.Tensor of shape (batch, m, d_in) or (m, d_in); got {type(x).__name__}")
    unbatched = x.dim() == 2
    if x.dim() not in (2, 3):
        raise ValueError(f"x must have shape (batch, m, d_in) or (m, d_in); got {tuple(x.shape)}")
    check_like("x", x, W_q)
    check_finite("x", x)
    if mask is not None:
        mask = _as_mask(mask, x.device)
    d_in = W_q.shape[-1]
    if unbatched:
        x = x.unsqueeze(0)
        if mask is not None:
            mask = mask.unsqueeze(0)
    batch, m, d = x.shape
    if d != d_in:
        raise ValueError(f"x has last dimension {d} but the layer was built for d_in = {d_in}")
    if m == 0:
        raise ValueError("x holds m = 0 inputs; self-attention needs at least one")
    if mask is None:
        return x, None, unbatched
    if mask.device != x.device:
        raise ValueError(f"mask is on device {mask.device} but x is on {x.device}; move one of them")
    if mask.shape == (batch, m):
        mask = mask.unsqueeze(1)  # key padding: the same keys for every query
    elif mask.shape != (batch, m, m):
        raise ValueError(
            f"mask must have shape (batch, m) = {(batch, m)} (key padding) or (batch, m, m) = "
            f"{(batch, m, m)}{' without the batch dimension for unbatched x' if unbatched else ''}; "
            f"got {tuple(mask.shape) if not unbatched else tuple(mask.shape[1:])}"
            + ("" if unbatched or mask.shape != (m, m) else
               "; a query-key mask such as causal_mask(m) is given per batch element: mask.expand(batch, m, m)")
        )
    empty = ~mask.any(dim=-1)  # (batch, 1) for key padding, (batch, m) for a full mask
    if has_values(empty) and empty.any():
        b, i = empty.nonzero()[0].tolist()
        where = f"batch element {b}" if mask.shape[1] == 1 else f"query {i} of batch element {b}"
        raise ValueError(f"every key is masked for {where}; each query needs at least one key with mask True")
    return x, mask, unbatched


def _check_weights(d_in: int, d_q: int, d_out: int, heads: int = 1, d_proj: int | None = None) -> None:
    """The sizes of a self-attention layer: positive integers, and no weight tensor beyond the memory budget
    (:func:`attnmarl.costs.check_numbers`; ``SelfAttention(100000, 100000, 5)`` would ask for 40 GB)."""
    check_sizes(d_proj=d_proj)
    check_numbers("W_q and W_k", ("heads", heads), ("d_q", d_q), ("d_in", d_in))
    check_numbers("W_v", ("heads", heads), ("d_out", d_out), ("d_in", d_in))
    if d_proj is not None:
        check_numbers("W_o", ("d_proj", d_proj), ("heads x d_out", heads * d_out))


def _init_weight(*shape: int) -> nn.Parameter:
    """A weight matrix initialised like ``nn.Linear`` (uniform in +-1/sqrt(fan_in))."""
    bound = 1.0 / math.sqrt(shape[-1])
    return nn.Parameter(torch.empty(*shape).uniform_(-bound, bound))


def self_attention(x: Tensor, W_q: Tensor, W_k: Tensor, W_v: Tensor, mask: Tensor | None = None,
                   scale: bool = False, need_weights: bool = True) -> tuple[Tensor, Tensor | None]:
    """Eqs. (1)-(2) for every query at once, for one head or l stacked heads.

    With 2-D weights W_q, W_k (d_q, d_in) and W_v (d_out, d_in) this is one head and returns
    c (batch, m, d_out) and alpha (batch, m, m). With 3-D weights (l, d_q, d_in), (l, d_q, d_in),
    (l, d_out, d_in) it is l heads whose outputs are concatenated: c (batch, m, l*d_out) and
    alpha (batch, l, m, m). ``scale=True`` divides the scores by sqrt(d_q).

    ``need_weights=False`` returns (c, None) and computes c with PyTorch's fused
    ``scaled_dot_product_attention``, which never stores the m x m weights: the same function,
    faster for large m (see ``make bench``). Use it for training; keep the default to look at alpha.
    (A full (batch, m, m) mask is itself m x m; a key-padding mask (batch, m) is not.)

    A 2-D mask on batched x is always key padding, (batch, m): a query-key mask such as ``causal_mask(m)``
    must carry the batch dimension, ``mask.expand(batch, m, m)``. (With batch = m the shape cannot tell the two
    apart, so an (m, m) query-key mask there would be read as key padding.)
    """
    check_bool("scale", scale)
    check_bool("need_weights", need_weights)
    single = W_q.dim() == 2
    if single:
        W_q, W_k, W_v = W_q.unsqueeze(0), W_k.unsqueeze(0), W_v.unsqueeze(0)
    for name, weight in (("W_k", W_k), ("W_v", W_v)):
        check_like(name, weight, W_q, "W_q")
    _check_shapes(W_q, W_k, W_v)
    x, attn_mask, unbatched = _prepare(x, W_q, mask)
    (batch, m, _), (heads, d_q, _), d_out = x.shape, W_q.shape, W_v.shape[1]
    _check_range(x, W_q, W_k, W_v, 1.0 / math.sqrt(d_q) if scale else 1.0)
    # q^i = W_q x^i, k^i = W_k x^i, v^i = W_v x^i for every head, as one matrix product:
    qkv = x @ torch.cat([W_q, W_k, W_v], dim=1).flatten(0, 1).T  # (batch, m, l * (2 d_q + d_out))
    q, k, v = qkv.view(batch, m, heads, 2 * d_q + d_out).transpose(1, 2).split([d_q, d_q, d_out], dim=-1)
    if attn_mask is not None:
        attn_mask = attn_mask.unsqueeze(1)  # broadcast over heads
    if need_weights:
        check_numbers("the attention weights alpha", ("batch", batch), ("heads", heads), ("m", m), ("m", m),
                      hint=" (need_weights=False computes c without them)", minimum=0)
        scores = (q / math.sqrt(d_q) if scale else q) @ k.transpose(-1, -2)  # (batch, l, m, m): <q^i, k^j>
        alpha = masked_softmax(scores, attn_mask)  # eq. (1)
        c = alpha @ v  # eq. (2): (batch, l, m, d_out)
    else:
        alpha = None
        c = _fused_attention(q, k, v, attn_mask, 1.0 / math.sqrt(d_q) if scale else 1.0)
    c = c.transpose(1, 2).flatten(2)  # heads concatenated: (batch, m, l * d_out)
    if alpha is not None and single:
        alpha = alpha.squeeze(1)
    if unbatched:
        return c[0], None if alpha is None else alpha[0]
    return c, alpha


def _check_shapes(W_q: Tensor, W_k: Tensor, W_v: Tensor) -> None:
    """W_q and W_k must be (l, d_q, d_in) and W_v (l, d_out, d_in), one l and one d_in (after a single head's
    2-D weights gained their l = 1); else ``ValueError`` with the three shapes, not torch's size mismatch."""
    shapes = [tuple(W.shape) for W in (W_q, W_k, W_v)]
    if (any(len(shape) != 3 for shape in shapes) or shapes[0] != shapes[1]
            or shapes[2][0] != shapes[0][0] or shapes[2][2] != shapes[0][2]):
        raise ValueError(f"W_q, W_k and W_v must have shapes (d_q, d_in), (d_q, d_in), (d_out, d_in) — or, for l "
                         f"heads, (l, d_q, d_in), (l, d_q, d_in), (l, d_out, d_in); got {shapes}")


def _check_range(x: Tensor, W_q: Tensor, W_k: Tensor, W_v: Tensor, scale: float) -> None:
    """Raise ``ValueError`` if finite x could overflow x's dtype inside attention (float32 ends at 3.4e38).

    Every entry of q = W_q x is at most a_q = max_r sum_c |W_q[r, c]| times the largest |x|, X (likewise
    k and v), so every score scale * <q^i, k^j> is at most scale * d_q * a_q a_k X^2. Where that bound
    exceeds the dtype's range the scores could become inf, and the softmax NaN or, on the fused path, a
    silently wrong c. The common case costs one dot product: X <= |x| (the Euclidean norm of all of x), and
    only when that looser bound fails is the largest entry itself found."""
    if x.numel() == 0 or not has_values(x):
        return
    limit = torch.finfo(x.dtype).max
    a_q, a_k, a_v = (float(W.detach().abs().sum(-1).amax()) for W in (W_q, W_k, W_v))

    def fits(largest: float) -> bool:
        return max(a_q, a_k, a_v) * largest <= limit and scale * W_q.shape[-2] * a_q * a_k * largest**2 <= limit

    flat = x.detach().reshape(-1)
    if fits(math.sqrt(float(torch.dot(flat, flat)))):  # an inf or NaN norm fails, and falls through
        return
    for name, W in (("W_q", W_q), ("W_k", W_k), ("W_v", W_v)):  # NaN or infinite weights are not x's fault
        check_finite(f"the layer's weights {name}", W.detach())
    largest = float(flat.abs().amax())
    if not fits(largest):
        raise ValueError(f"x is finite but too large for attention in {x.dtype}: its largest |x| is {largest:.3g}, so "
                         f"the queries, keys and scores <q^i, k^j> can exceed {x.dtype}'s largest number, "
                         f"{limit:.3g}, and the softmax would return NaN or wrong weights; scale x down (normalise "
                         "the inputs) or compute in float64")


def _fused_attention(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None, scale: float) -> Tensor:
    """c = softmax(scale * q k^T) v by ``scaled_dot_product_attention``, without the m x m weights.

    Its fused kernels need q, k and v of one width; given d_q != d_out it would fall back to a plain
    implementation that stores the m x m scores. So the narrower side is zero-padded to
    d = max(d_q, d_out) — zeros change neither <q, k> nor the first d_out columns of c — and the
    padding of c is cut off again: extra memory grows as m d, not m^2.
    """
    d_q, d_out = q.shape[-1], v.shape[-1]
    d = max(d_q, d_out)
    if d_q < d:
        q, k = F.pad(q, (0, d - d_q)), F.pad(k, (0, d - d_q))
    if d_out < d:
        v = F.pad(v, (0, d - d_out))
    return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)[..., :d_out]


class SelfAttention(nn.Module):
    """Single-head self-attention exactly as the source defines it (eqs. 1-2).

    Parameters W_q, W_k in R^{d_q x d_in} and W_v in R^{d_out x d_in}, no biases. With
    ``scale=True`` the scores are divided by sqrt(d_q), as in the Transformer; the source uses no
    scaling (the default here). ``forward(x, mask=None, need_weights=True)`` returns c
    (batch, m, d_out) and alpha (batch, m, m), alpha[b, i, j] being the weight query i gives key j.
    """

    def __init__(self, d_in: int, d_q: int, d_out: int, scale: bool = False) -> None:
        super().__init__()
        _check_weights(d_in, d_q, d_out)
        self.d_in, self.d_q, self.d_out, self.scale = d_in, d_q, d_out, check_bool("scale", scale)
        self.W_q = _init_weight(d_q, d_in)
        self.W_k = _init_weight(d_q, d_in)
        self.W_v = _init_weight(d_out, d_in)

    def forward(self, x: Tensor, mask: Tensor | None = None, need_weights: bool = True) -> tuple[Tensor, Tensor | None]:
        return self_attention(x, self.W_q, self.W_k, self.W_v, mask, self.scale, need_weights)

    def extra_repr(self) -> str:
        return f"d_in={self.d_in}, d_q={self.d_q}, d_out={self.d_out}, scale={self.scale}"


class MultiHeadSelfAttention(nn.Module):
    """l heads of self-attention, outputs concatenated: (x^1..x^m) -> (c^1..c^m), c^i in R^{l d_out}.

    Head h has its own W_q^h, W_k^h in R^{d_q x d_in} and W_v^h in R^{d_out x d_in}: 3l matrices,
    stored stacked as ``W_q`` and ``W_k`` of shape (l, d_q, d_in) and ``W_v`` of shape
    (l, d_out, d_in). Head h computes eqs. (1)-(2); c^i = [c^i_1; ...; c^i_l]. d_q only shapes the
    scores, never the output size. With ``d_proj`` an output projection W_o in R^{d_proj x l d_out}
    follows the concatenation (as in nn.MultiheadAttention); by default there is none.

    ``forward(x, mask=None, need_weights=True)`` returns (c, alpha): c is (batch, m, l*d_out) (or
    d_proj), alpha is (batch, l, m, m) with alpha[b, h, i, j] the weight query i gives key j in
    head h (None with ``need_weights=False``, the fused path of :func:`self_attention`).
    """

    def __init__(self, d_in: int, d_q: int, d_out: int, heads: int = 1, scale: bool = False,
                 d_proj: int | None = None) -> None:
        super().__init__()
        _check_weights(d_in, d_q, d_out, heads, d_proj)
        self.d_in, self.d_q, self.d_out, self.heads, self.scale = d_in, d_q, d_out, heads, check_bool("scale", scale)
        self.W_q = _init_weight(heads, d_q, d_in)
        self.W_k = _init_weight(heads, d_q, d_in)
        self.W_v = _init_weight(heads, d_out, d_in)
        self.W_o = _init_weight(d_proj, heads * d_out) if d_proj is not None else None

    def extra_repr(self) -> str:
        proj = f", d_proj={self.W_o.shape[0]}" if self.W_o is not None else ""
        return f"d_in={self.d_in}, d_q={self.d_q}, d_out={self.d_out}, heads={self.heads}, scale={self.scale}{proj}"

    @property
    def d_model(self) -> int:
        """Size of each output c^i: l * d_out, or d_proj with an output projection."""
        return self.W_o.shape[0] if self.W_o is not None else self.heads * self.d_out

    def forward(self, x: Tensor, mask: Tensor | None = None, need_weights: bool = True) -> tuple[Tensor, Tensor | None]:
        c, alpha = self_attention(x, self.W_q, self.W_k, self.W_v, mask, self.scale, need_weights)
        if self.W_o is not None:
            c = c @ self.W_o.T
        return c, alpha


def from_torch_multihead(mha: nn.MultiheadAttention) -> MultiHeadSelfAttention:
    """The :class:`MultiHeadSelfAttention` that computes exactly what ``mha`` computes.

    ``nn.MultiheadAttention(E, l, bias=False)`` packs [W_q; W_k; W_v] into ``in_proj_weight``
    (3E, E), splits each of the three E x E blocks row-wise into l heads of size E / l, scales the
    scores by sqrt(E / l) and ends with ``out_proj`` (E x E). So it is our layer with d_in = E,
    d_q = d_out = E / l, scale=True and d_proj = E.
    """
    if not isinstance(mha, nn.MultiheadAttention):
        raise ValueError(f"mha must be a torch.nn.MultiheadAttention; got {type(mha).__name__}")
    if mha.in_proj_weight is None or mha.in_proj_bias is not None or mha.out_proj.bias is not None:
        raise ValueError("only nn.MultiheadAttention(..., bias=False) with a packed in_proj maps exactly")
    E, l = mha.embed_dim, mha.num_heads
    d_head = E // l
    ours = MultiHeadSelfAttention(E, d_head, d_head, heads=l, scale=True, d_proj=E)
    W_q, W_k, W_v = mha.in_proj_weight.detach().chunk(3, dim=0)  # each (E, E)
    with torch.no_grad():
        ours.W_q.copy_(W_q.reshape(l, d_head, E))
        ours.W_k.copy_(W_k.reshape(l, d_head, E))
        ours.W_v.copy_(W_v.reshape(l, d_head, E))
        ours.W_o.copy_(mha.out_proj.weight.detach())
    return ours


class AttentionFC(nn.Module):
    """One block of a deeper network: multi-head self-attention, then the same fully connected
    layer (Linear + ReLU) applied to every c^i. The source (§17.2, below fig. 17.8; §16.2 in the
    older edition) notes that the self-attention layer can be repeated, self-attention layer -> FC
    layer -> self-attention layer -> FC layer -> ..., the number of layers being a hyperparameter."""

    def __init__(self, d_in: int, d_q: int, d_out: int, heads: int, d_hidden: int, scale: bool = False) -> None:
        super().__init__()
        check_sizes(d_hidden=d_hidden)
        self.attention = MultiHeadSelfAttention(d_in, d_q, d_out, heads=heads, scale=scale)
        check_numbers("the FC layer's weights", ("d_hidden", d_hidden), ("heads x d_out", heads * d_out))
        self.fc = nn.Linear(heads * d_out, d_hidden)

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
        c, alpha = self.attention(x, mask)
        return torch.relu(self.fc(c)), alpha


class SelfAttentionStack(nn.Module):
    """``depth`` AttentionFC blocks: attention -> FC -> attention -> FC -> ...

    Every block maps m vectors to m vectors, so the stack keeps the two properties of one layer:
    its parameter count does not depend on m, and it is permutation equivariant.
    ``forward`` returns the last block's outputs (batch, m, d_hidden) and the list of each
    block's alpha (batch, l, m, m).
    """

    def __init__(self, d_in: int, d_q: int, d_out: int, heads: int, d_hidden: int, depth: int,
                 scale: bool = False) -> None:
        super().__init__()
        check_sizes(depth=depth)
        self.blocks = nn.ModuleList(
            AttentionFC(d_in if b == 0 else d_hidden, d_q, d_out, heads, d_hidden, scale) for b in range(depth)
        )

    def forward(self, x: Tensor, mask: Tensor | None = None) -> tuple[Tensor, list[Tensor]]:
        alphas = []
        for block in self.blocks:
            x, alpha = block(x, mask)
            alphas.append(alpha)
        return x, alphas
