"""How sure is a comparison over seeds? Bootstrap intervals of the difference between two designs.

A design's score is one number per training seed (each the mean return of 200 mpe2 episodes); seeds are
the unit of replication, since two runs of one design differ far more than two evaluations of one run.
With few seeds a point estimate says little, so wherever the book says that one design beats another it
gives a 95% interval of the difference, computed as rliable does (Agarwal et al. 2021): a *stratified*
bootstrap, which resamples each design's seeds with replacement, separately (each design is a stratum),
and recomputes the statistic of each resample.

The statistic is the mean over seeds or the interquartile mean (IQM: the mean of the middle half, robust
to one outlying seed; rliable's recommendation). With n seeds, IQM trims floor(n / 4) from each end
(for n < 4 it is the mean).

:func:`prediction_interval` asks the other question a re-run raises: where would the score of one *new* seed
of a design fall, given the seeds already trained?
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.stats import t as student_t

from .guards import check_int, check_seed

__all__ = ["STATISTICS", "Interval", "iqm", "bootstrap_difference", "prediction_interval"]

STATISTICS = ("mean", "iqm")
"""The statistics :func:`bootstrap_difference` takes over each design's seeds."""


@dataclass(frozen=True)
class Interval:
    """A difference between two designs: the statistic of the scores as measured (``estimate``) and the
    bounds of its ``level`` bootstrap interval; ``n_a`` and ``n_b`` seeds went in."""

    estimate: float
    low: float
    high: float
    level: float
    statistic: str
    n_a: int
    n_b: int

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of 0: the seeds support a difference."""
        return self.low > 0 or self.high < 0

    def __str__(self) -> str:
        return f"{self.estimate:+.1f} [{self.low:+.1f}, {self.high:+.1f}]"


def iqm(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean along ``axis``: sort, drop floor(n / 4) scores at each end, average the rest."""
    scores = np.sort(np.asarray(scores, dtype=float), axis=axis)
    n = scores.shape[axis]
    cut = n // 4
    return np.take(scores, np.arange(cut, n - cut), axis=axis).mean(axis=axis)


def _scores(name: str, scores: Sequence[float]) -> np.ndarray:
    array = np.asarray(scores, dtype=float) if not isinstance(scores, (str, bytes)) else np.array([])
    if array.ndim != 1 or array.size < 2:
        raise ValueError(f"{name} must be a flat sequence of at least 2 scores, one per seed (one seed gives no "
                         f"interval); got {scores!r}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds a score that is NaN or infinite: {scores!r}")
    return array


def bootstrap_difference(a: Sequence[float], b: Sequence[float], statistic: str = "mean", level: float = 0.95,
                         resamples: int = 20_000, seed: int = 0) -> Interval:
    """The statistic of design A's seed scores minus design B's, with a stratified bootstrap percentile
    interval: each of ``resamples`` draws takes len(a) of A's scores and len(b) of B's, with replacement,
    each design separately, and the interval spans the middle ``level`` of the draws' differences.

    ``statistic`` is ``"mean"`` or ``"iqm"`` (:data:`STATISTICS`); ``seed`` fixes the draws, so a number in
    the book is the same on every build. ``ValueError`` for fewer than 2 scores in a design, NaN, or a
    level outside (0, 1).
    """
    a_scores, b_scores = _scores("a", a), _scores("b", b)
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}; got {statistic!r}")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number strictly between 0 and 1 (0.95 for a 95% interval); got {level!r}")
    resamples = check_int("resamples", resamples, minimum=100, maximum=1_000_000)
    rng = np.random.default_rng(check_seed(seed))
    reduce = np.mean if statistic == "mean" else iqm
    draws_a = a_scores[rng.integers(0, a_scores.size, (resamples, a_scores.size))]
    draws_b = b_scores[rng.integers(0, b_scores.size, (resamples, b_scores.size))]
    differences = reduce(draws_a, axis=1) - reduce(draws_b, axis=1)
    low, high = np.quantile(differences, [(1 - level) / 2, (1 + level) / 2])
    return Interval(float(reduce(a_scores) - reduce(b_scores)), float(low), float(high), float(level), statistic,
                    a_scores.size, b_scores.size)


def prediction_interval(scores: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """The interval in which the score of one more seed falls with probability ``level``, from the scores of
    n seeds already trained, if seeds' scores are normal: mean ± t_{(1 + level) / 2, n - 1} · s · sqrt(1 + 1/n),
    with s the seeds' sample standard deviation (the classical prediction interval; wider than a confidence
    interval of the mean by the new seed's own spread). It needs at least 3 seeds (with 2 the t quantile is
    12.7 and the interval says nothing). ``ValueError`` for fewer, for NaN, or a level outside (0, 1)."""
    array = _scores("scores", scores)
    if array.size < 3:
        raise ValueError(f"a prediction interval needs the scores of at least 3 seeds; got {array.size}")
    if isinstance(level, bool) or not isinstance(level, (int, float)) or not 0 < level < 1:
        raise ValueError(f"level must be a number strictly between 0 and 1 (0.95 for a 95% interval); got {level!r}")
    n = array.size
    half = float(student_t.ppf((1 + level) / 2, n - 1)) * array.std(ddof=1) * np.sqrt(1 + 1 / n)
    return float(array.mean() - half), float(array.mean() + half)
