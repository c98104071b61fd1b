"""The explorer of "Scoring and normalising attention": one query among fixed keys in the plane.

Each of the five score functions of :mod:`attnmarl.attention` compares a query q in R^2 with
m = 6 fixed keys k^1..k^6 in R^2 (:data:`KEYS`), and the weights are

    s_j = score(q, k^j),        alpha = softmax(s / tau)        (tau: the temperature).

The general score q^T W k and the additive score v_a^T tanh(W_q q + W_k k) have weight matrices;
here they are not learned but drawn once, from the fixed seed :data:`WEIGHT_SEED`
(:func:`score_weights`), so that every reader sees the same weights.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from numbers import Real

import numpy as np
import torch
from torch import Tensor

from attnmarl.attention import (
    additive_score,
    cosine_score,
    dot_score,
    general_score,
    masked_softmax,
    scaled_dot_score,
)
from attnmarl.checks import check_distributions
from attnmarl.notebook.viz import MAX_LIM, Frame, Heatmap, Points, sup
from attnmarl.notebook.widgets import Dropdown, Explorer, Slider

__all__ = ["SCORES", "KEYS", "KEY_NAMES", "WEIGHT_SEED", "D_A", "ScoreWeights", "score_weights", "score",
           "score_alpha", "entropy", "scoring_frame", "scoring_explorer"]

SCORES = ("dot", "scaled dot", "general", "additive", "cosine")
"""The score functions, by the names the explorer's menu shows."""

KEYS = torch.tensor([[0.2, 0.1], [2.4, 1.2], [-1.0, 1.6], [-2.0, -0.6], [0.6, -1.8], [2.2, -2.0]])
"""The m = 6 fixed keys k^1..k^6, shape (6, 2). k^2 = 12 k^1: same direction, longer."""

KEY_NAMES = [f"k{sup(j + 1)}" for j in range(len(KEYS))]

WEIGHT_SEED = 8
"""The seed the weights of the general and additive scores are drawn from."""

D_A = 8
"""Hidden width d_a of the additive score."""


@dataclass(frozen=True)
class ScoreWeights:
    """The fixed parameters of the parametric scores: ``W`` (d, d) for the general score q^T W k;
    ``W_q``, ``W_k`` (d_a, d) and ``v_a`` (d_a,) for the additive score v_a^T tanh(W_q q + W_k k)."""

    W: Tensor
    W_q: Tensor
    W_k: Tensor
    v_a: Tensor


def score_weights(seed: int = WEIGHT_SEED, d: int = 2, d_a: int = D_A) -> ScoreWeights:
    """Weights drawn N(0, 1) from ``seed``. Not trained: what the general and additive scores prefer
    with them is arbitrary, and only shows how each score *can* depend on q and k. (At this scale
    their scores span a range like that of the dot score; a N(0, 1/d) initialisation gives a
    nearly uniform alpha for the additive score, whose value is bounded by sum_h |v_a[h]|.)"""
    generator = torch.Generator().manual_seed(seed)
    W = torch.randn(d, d, generator=generator)
    W_q, W_k = torch.randn(2, d_a, d, generator=generator)
    return ScoreWeights(W=W, W_q=W_q, W_k=W_k, v_a=torch.randn(d_a, generator=generator))


def score(name: str, q: Tensor, k: Tensor, weights: ScoreWeights | None = None) -> Tensor:
    """Scores s[i, j] = score(q^i, k^j) of queries q (n_q, d) against keys k (m, d): (n_q, m).

    ``weights`` are used by the general and additive scores (default: :func:`score_weights`).
    """
    if name not in SCORES:
        raise ValueError(f"unknown score {name!r}; choose one of {SCORES}")
    weights = score_weights() if weights is None else weights
    if name == "dot":
        return dot_score(q, k)
    if name == "scaled dot":
        return scaled_dot_score(q, k)
    if name == "general":
        return general_score(q, k, weights.W)
    if name == "additive":
        return additive_score(q, k, weights.W_q, weights.W_k, weights.v_a)
    return cosine_score(q, k)


def score_alpha(name: str, q: Tensor, tau: float = 1.0, keys: Tensor = KEYS,
                mask: Tensor | None = None) -> tuple[Tensor, Tensor]:
    """Scores s (n_q, m) and weights alpha = masked_softmax(s / tau, mask) (n_q, m) of queries q (n_q, d)."""
    if isinstance(tau, (bool, np.bool_)) or not (isinstance(tau, Real) and math.isfinite(tau) and tau > 0):
        raise ValueError(f"the temperature tau must be a positive number; got {tau!r}")
    s = score(name, q, keys)
    if s.isfinite().all() and not (s / tau).isfinite().all():
        raise ValueError(f"the temperature tau = {tau!r} is too small: the scores divided by it exceed {s.dtype}'s "
                         f"largest number, {torch.finfo(s.dtype).max:.3g}; take a larger tau")
    return s, masked_softmax(s / tau, mask)


def entropy(alpha: np.ndarray | Tensor) -> np.ndarray:
    """Entropy H(alpha) = -sum_j alpha_j ln alpha_j of each row, in nats (0 log 0 = 0); each row must be
    a distribution (:func:`attnmarl.checks.check_distributions`)."""
    alpha = check_distributions("alpha", alpha)
    return 0.0 - (alpha * np.log(np.where(alpha > 0, alpha, 1.0))).sum(-1)  # 0.0 - : never -0.0


def scoring_frame(score: str = "dot", qx: float = 1.0, qy: float = 0.5, tau: float = 1.0) -> Frame:
    """One query q = (qx, qy) among :data:`KEYS`: the points, and alpha as a 1 x m row."""
    if not all(isinstance(v, Real) and not isinstance(v, (bool, np.bool_)) and math.isfinite(v) for v in (qx, qy)):
        raise ValueError(f"the query coordinates must be finite numbers; got qx={qx!r}, qy={qy!r}")
    lim = max(3.0, 1.1 * max(abs(qx), abs(qy)))  # the drawing's square shows the query wherever it is
    if lim > MAX_LIM:
        raise ValueError(f"the query must lie within the drawing, |qx| and |qy| at most {MAX_LIM / 1.1:.0f} (the "
                         f"keys lie within 3 of the centre); got qx={qx!r}, qy={qy!r}")
    q = torch.tensor([[float(qx), float(qy)]])
    s, alpha = score_alpha(score, q, tau)
    s, alpha = s[0].numpy(), alpha.numpy()
    m = len(KEYS)
    return Frame(
        [
            Points(torch.cat([KEYS, q]).numpy(), [*KEY_NAMES, "q"], title="keys kʲ and the query q (ringed)",
                   xlabel="first coordinate", ylabel="second coordinate", highlight=[m], lim=lim),
            Heatmap(alpha, ["q"], KEY_NAMES, title=f"α: {score}, τ = {tau:g}",
                    xlabel="key kʲ", ylabel="query"),
        ],
        caption=f"scores s = ({', '.join(f'{v:.2f}' for v in s)}); H(α) = {entropy(alpha)[0]:.2f} nats "
                f"(uniform: ln {m} = {math.log(m):.2f})",
    )


def scoring_explorer() -> Explorer:
    """The explorer of "Scoring and normalising attention": score function, query position, temperature.

    Static face: 5 scores x 11 x 11 query positions x 3 temperatures = 1815 frames.
    """
    fine = [round(float(v), 2) for v in np.arange(-2.5, 2.51, 0.25)]
    coarse = [round(float(v), 2) for v in np.arange(-2.5, 2.51, 0.5)]
    return Explorer(scoring_frame, [
        Dropdown("score", list(SCORES), default="dot", label="score"),
        Slider("qx", fine, default=1.0, label="q, first coordinate", static=coarse),
        Slider("qy", fine, default=0.5, label="q, second coordinate", static=coarse),
        Slider("tau", [0.25, 0.5, 1.0, 2.0, 4.0], default=1.0, label="temperature τ", static=[0.25, 1.0, 4.0]),
    ], title="Score explorer: one query, six keys, five score functions")
