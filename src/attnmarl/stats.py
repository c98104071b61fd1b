"""How sure is a comparison over seeds? Intervals of the difference between two designs, and how often they cover.

A design's score is one number per training seed (each the mean return of 200 mpe2 episodes); seeds are
the unit of replication, since two runs of one design differ far more than two evaluations of one run.
With few seeds a point estimate says little, so wherever the book says that one design beats another it
gives a 95% interval of the difference of the means over seeds.

**Which interval.** An interval is only as good as how often it contains the true difference, and that can be
measured: :func:`coverage` draws many sets of seed scores from distributions whose difference is known and
counts. The book's interval is Welch's t interval (:func:`welch_difference`), because it is the one that passes
that test (``tests/test_stats.py``): at 3, 5 and 10 seeds per design it covers 95% ± 2 points, for normal scores
with equal or unequal spreads and for skewed ones (a long tail of bad seeds, as the shipped runs show), erring
wide at 3 seeds (up to about 97%): wider than it needs to be, on the safe side. The
percentile bootstrap that rliable uses (Agarwal et al. 2021; :func:`bootstrap_difference`: each design's seeds
resampled with replacement, separately) covers only about 80% at 3 seeds and 92% at 10, because a resample of a
few seeds is less spread than the seeds' population. Welch's interval has one known weakness, measured by the same
test: when one design is strongly skewed and four times as spread as the other, it covers about 91%.

The statistic is the mean over seeds; the bootstrap also takes the interquartile mean (IQM: the mean of the
middle half, robust to one outlying seed; rliable's recommendation; with n seeds it trims floor(n / 4) from each
end, and for n < 4 it is the mean). No t interval exists for the IQM, and its bootstrap undercovers as the mean's
does, so the book reports it only beside a Welch interval, never as the evidence.

A comparison is *resolved* (one design ahead or behind) only where its interval excludes 0 **and** each design
has at least :data:`RESOLVING_SEEDS` seeds; with fewer, a difference is indicative (:func:`resolved`).

:func:`prediction_interval` asks the other question a re-run raises: where would the score of one *new* seed
of a design fall, given the seeds already trained?
"""
from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.stats import t as student_t

from .checks import check_choice, check_int, check_real, check_seed, is_int
from .costs import check_numbers

__all__ = ["STATISTICS", "METHODS", "RESOLVING_SEEDS", "Interval", "iqm", "welch_difference", "welch_change",
           "bootstrap_difference", "resolved", "verdict", "contrast_table", "normal_scores", "skewed_scores",
           "coverage", "prediction_interval"]

METHODS = ("welch", "percentile bootstrap")
"""The intervals of a difference the package computes; the book uses the first (:func:`coverage` says why)."""

RESOLVING_SEEDS = 10
"""Seeds per design below which no difference is called resolved, whatever its interval (DESIGN.md §6): with 3
seeds against 3 no exact permutation test can even reach p < 0.10, and one odd seed moves the mean a third of
its distance."""

STATISTICS = ("mean", "iqm")
"""The statistics :func:`bootstrap_difference` takes over each design's seeds."""


@dataclass(frozen=True)
class Interval:
    """A difference between two designs: the statistic of the scores as measured (``estimate``) and the
    bounds of its ``level`` interval (``method``: Welch's t, or a bootstrap); ``n_a`` and ``n_b`` seeds went in."""

    estimate: float
    low: float
    high: float
    level: float
    statistic: str
    n_a: int
    n_b: int
    method: str = "welch"

    def __post_init__(self) -> None:
        """The bounds and the estimate are finite numbers with ``low <= high``, the level in (0, 1), the seed counts
        positive integers (``ValueError`` naming the field otherwise: a string would sort or compare wrongly)."""
        for name in ("estimate", "low", "high"):
            object.__setattr__(self, name, check_real(name, getattr(self, name)))
        if self.low > self.high:
            raise ValueError(f"an interval's low bound must not exceed its high bound; got [{self.low}, {self.high}]")
        check_choice("statistic", self.statistic, STATISTICS)
        check_choice("method", self.method, METHODS)
        if self.method == "welch" and not self.low <= self.estimate <= self.high:  # Welch's is centred on it
            raise ValueError(f"a Welch interval holds its estimate; got {self.estimate} outside [{self.low}, "
                             f"{self.high}]")
        object.__setattr__(self, "level", _check_level(self.level))
        for name in ("n_a", "n_b"):
            object.__setattr__(self, name, check_int(name, getattr(self, name)))

    @property
    def seeds(self) -> int:
        """The fewer of the two designs' seed counts: what a verdict rests on."""
        return min(self.n_a, self.n_b)

    @property
    def excludes_zero(self) -> bool:
        """Whether the interval lies wholly on one side of 0 (with fewer than :data:`RESOLVING_SEEDS` seeds a
        design, that is not yet a resolved difference: :func:`resolved`)."""
        return self.low > 0 or self.high < 0

    def __str__(self) -> str:
        return f"{self.estimate:+.1f} [{self.low:+.1f}, {self.high:+.1f}]"


def iqm(scores: np.ndarray, axis: int = -1) -> np.ndarray:
    """Interquartile mean along ``axis``: sort, drop floor(n / 4) scores at each end, average the rest. ``scores``
    must be finite numbers, at least one along ``axis`` (``ValueError`` for strings, bools, NaN or none: numpy
    would read ``'3'`` as 3.0 and ``True`` as 1.0, and average nothing into NaN)."""
    array = _numbers("scores", scores)
    if not is_int(axis) or not -array.ndim <= axis < array.ndim:
        raise ValueError(f"axis must be an axis of the scores' {array.ndim} dimension(s); got {axis!r}")
    if array.shape[axis] == 0 or not np.isfinite(array).all():
        raise ValueError(f"scores must hold at least one finite number along axis {axis}; got shape {array.shape}"
                         + ("" if np.isfinite(array).all() else " with NaN or infinite values"))
    scores = np.sort(array, axis=axis)
    n = scores.shape[axis]
    cut = n // 4
    return np.take(scores, np.arange(cut, n - cut), axis=axis).mean(axis=axis)


def _numbers(name: str, scores: Any) -> np.ndarray:
    """``scores`` as a float array if it holds real numbers only; ``ValueError`` for strings, bools and complex
    numbers, which numpy would convert silently (``'3'`` to 3.0, ``True`` to 1.0, ``1+1j`` to 1.0), and anything
    else that is not a number."""
    _check_container(name, scores)
    if isinstance(scores, np.ndarray) and scores.dtype.kind in "iuf":
        return scores.astype(float)
    refused = (str, bytes, bool, np.bool_, complex, np.complexfloating)  # numpy would drop an imaginary part too
    if isinstance(scores, (str, bytes)) or any(isinstance(s, refused) for s in np.ravel(np.asarray(scores,
                                                                                                 dtype=object))):
        raise ValueError(f"{name} must hold real numbers only (no strings, bools or complex numbers); got {scores!r}")
    try:
        return np.asarray(scores, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must hold numbers only; got {scores!r}") from None


def _check_container(name: str, scores: Any) -> None:
    """``ValueError`` for the containers of numbers that would be read wrongly or not at all: a generator (read
    once, then empty), a masked array (numpy's conversion drops its mask, so masked scores would count), a tensor
    that requires grad (torch refuses to convert it), or a single number (no scores to take a statistic over)."""
    if isinstance(scores, Iterator):
        raise ValueError(f"{name} must be a list or an array of scores; got a {type(scores).__name__} (pass "
                         f"list(...) of it)")
    if isinstance(scores, np.ma.MaskedArray):
        raise ValueError(f"{name} is a masked array: its mask would be ignored and the masked scores counted; pass "
                         f"{name}.compressed() (the unmasked scores)")
    if getattr(scores, "requires_grad", False):
        raise ValueError(f"{name} is a tensor that requires grad; pass {name}.detach()")
    single = isinstance(scores, (int, float, np.integer, np.floating)) and not isinstance(scores, bool)
    if single or (isinstance(scores, np.ndarray) and scores.ndim == 0):
        raise ValueError(f"{name} must be a list or an array of scores; got a single number {scores!r}")


def _check_spread(name: str, array: np.ndarray) -> None:
    """``ValueError`` if the mean or variance of finite scores overflows float64 (scores near 1e154 or more)."""
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.isfinite(array.mean()) and np.isfinite(array.var(ddof=1))
    if not finite:
        raise ValueError(f"{name} holds scores too large for float64 arithmetic: their mean or variance overflows "
                         f"(largest |score| {np.abs(array).max():.3g}); divide them all by a common scale first")


def _scores(name: str, scores: Sequence[float]) -> np.ndarray:
    _check_container(name, scores)
    try:
        array = _numbers(name, scores)
    except ValueError:
        raise ValueError(f"{name} must be a flat sequence of numbers, one score per seed; got {scores!r}") from None
    if array.ndim != 1 or array.size < 2:
        raise ValueError(f"{name} must be a flat sequence of at least 2 scores, one per seed (one seed gives no "
                         f"interval); got {scores!r}")
    if not np.isfinite(array).all():
        raise ValueError(f"{name} holds a score that is NaN or infinite: {scores!r}")
    _check_spread(name, array)
    return array


def _check_bounds(low: float, high: float, what: str) -> None:
    """``ValueError`` if an interval computed from finite scores came out infinite or NaN: float64 overflowed."""
    if not (np.isfinite(low) and np.isfinite(high)):
        raise ValueError(f"{what} overflows float64 for these scores (its bounds come out as [{low}, {high}]); "
                         "divide the scores by a common scale first")


def _check_level(level: float) -> float:
    try:
        return check_real("level", level, 0.0, 1.0, low_open=True, high_open=True)
    except ValueError:
        raise ValueError(f"level must be a number strictly between 0 and 1 (0.95 for a 95% interval); got "
                         f"{level!r}") from None


def _welch_half(groups: Sequence[np.ndarray], level: float) -> np.ndarray:
    """The half-width of Welch's interval of a sum ± of independent groups' means along the last axis:
    t_{(1 + level) / 2, ν} · se, with se² = Σ_g s_g² / n_g and ν = se⁴ / Σ_g (s_g² / n_g)² / (n_g - 1) (the
    Welch–Satterthwaite degrees of freedom). Seeds that all score alike give se = 0 and a half-width of 0."""
    v = [g.var(axis=-1, ddof=1) / g.shape[-1] for g in groups]
    se2 = sum(v)
    with np.errstate(invalid="ignore", divide="ignore"):
        nu = se2**2 / sum(vg**2 / (g.shape[-1] - 1) for vg, g in zip(v, groups))
    return np.where(se2 > 0, student_t.ppf((1 + level) / 2, np.where(se2 > 0, nu, 1.0)) * np.sqrt(se2), 0.0)


def _welch_bounds(a: np.ndarray, b: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """Welch's interval of mean(a) - mean(b) along the last axis: the difference ± :func:`_welch_half`."""
    half = _welch_half([a, b], level)
    d = a.mean(axis=-1) - b.mean(axis=-1)
    return d - half, d + half


def welch_difference(a: Sequence[float], b: Sequence[float], level: float = 0.95) -> Interval:
    """Design A's mean seed score minus design B's, with Welch's t interval (unequal variances): the book's
    interval, chosen by its coverage (:func:`coverage`; the module's docstring gives the figures).
    ``ValueError`` for fewer than 2 scores in a design, a score that is not a finite number, or a level outside
    (0, 1)."""
    a_scores, b_scores = _scores("a", a), _scores("b", b)
    level = _check_level(level)
    with np.errstate(over="ignore", invalid="ignore"):
        low, high = _welch_bounds(a_scores, b_scores, level)
    _check_bounds(float(low), float(high), "the Welch interval of a - b")
    return Interval(float(a_scores.mean() - b_scores.mean()), float(low), float(high), level, "mean",
                    a_scores.size, b_scores.size, "welch")


def welch_change(a: Sequence[float], b: Sequence[float], a_before: Sequence[float], b_before: Sequence[float],
                 level: float = 0.95) -> Interval:
    """How much design A's lead over design B changes from one setting to another: (mean a - mean b) -
    (mean a_before - mean b_before), four independent sets of seeds, with Welch's interval of that contrast
    (:func:`_welch_half` over the four groups). Chapter 12 asks it of attention's lead over mean pooling with and
    without decoys. ``n_a`` and ``n_b`` are the fewer seeds of A's and of B's two settings. ``ValueError`` as
    :func:`welch_difference` gives it."""
    groups = [_scores(name, scores) for name, scores in
              (("a", a), ("b", b), ("a_before", a_before), ("b_before", b_before))]
    level = _check_level(level)
    with np.errstate(over="ignore", invalid="ignore"):
        half = float(_welch_half(groups, level))
    change = float(groups[0].mean() - groups[1].mean() - (groups[2].mean() - groups[3].mean()))
    _check_bounds(change - half, change + half, "the Welch interval of the change")
    return Interval(change, change - half, change + half, level, "mean", min(groups[0].size, groups[2].size),
                    min(groups[1].size, groups[3].size), "welch")


def _check_interval(interval: Any) -> Interval:
    if not isinstance(interval, Interval):
        raise ValueError(f"interval must be an Interval (from welch_difference or bootstrap_difference); got "
                         f"{type(interval).__name__}")
    return interval


def resolved(interval: Interval) -> bool:
    """Whether the seeds resolve a difference: its interval excludes 0 and each design has at least
    :data:`RESOLVING_SEEDS` seeds. Anything less is indicative, whatever the interval."""
    return _check_interval(interval).excludes_zero and interval.seeds >= RESOLVING_SEEDS


def verdict(interval: Interval) -> str:
    """The book's word for a difference: "ahead", "behind" or "not resolved" where each design has at least
    :data:`RESOLVING_SEEDS` seeds (where the interval lies against 0); with fewer, "indicative, n seeds",
    whatever the interval."""
    if _check_interval(interval).seeds < RESOLVING_SEEDS:
        return f"indicative, {interval.seeds} seeds"
    if not resolved(interval):
        return "not resolved"
    return "ahead" if interval.low > 0 else "behind"


def contrast_table(rows: Sequence[tuple[str, Interval]]) -> str:
    """The differences a page's prose cites, one line each, so that a reader can check every one where it is
    stated: the contrast's label, its estimate, its interval, the seeds of each design (A / B; for
    :func:`welch_change`, the fewer of each design's two settings) and :func:`verdict`'s word for it. ``ValueError``
    for no rows, a label that is not a non-empty string, or an interval that is not an :class:`Interval`."""
    if isinstance(rows, (str, bytes)) or not isinstance(rows, Sequence) or not rows:
        raise ValueError("rows must be a non-empty sequence of (label, Interval) pairs")
    for row in rows:
        if not (isinstance(row, tuple) and len(row) == 2 and isinstance(row[0], str) and row[0].strip()):
            raise ValueError(f"each row must be a (label, Interval) pair with a non-empty label; got {row!r}")
        _check_interval(row[1])
    width = max(len(label) for label, _ in rows)
    levels = {f"{e.level:.0%}" for _, e in rows}
    head = f"{'contrast':{width}s}  {'estimate':>8s}  {' / '.join(sorted(levels)) + ' interval':>16s}  " \
           f"{'seeds':>7s}  verdict"
    lines = [head, "-" * len(head)]
    for label, e in rows:
        lines.append(f"{label:{width}s}  {e.estimate:+8.1f}  {f'[{e.low:+.1f}, {e.high:+.1f}]':>16s}  "
                     f"{f'{e.n_a} / {e.n_b}':>7s}  {verdict(e)}")
    return "\n".join(lines)


def bootstrap_difference(a: Sequence[float], b: Sequence[float], statistic: str = "mean", level: float = 0.95,
                         resamples: int = 20_000, seed: int = 0) -> Interval:
    """The statistic of design A's seed scores minus design B's, with rliable's stratified percentile bootstrap
    interval (which covers less than ``level`` with few seeds: :func:`coverage`; the book uses
    :func:`welch_difference` for its evidence): each of ``resamples`` draws takes len(a) of A's scores and
    len(b) of B's, with replacement, each design separately, and the interval spans the middle ``level`` of the
    draws' differences.

    ``statistic`` is ``"mean"`` or ``"iqm"`` (:data:`STATISTICS`); ``seed`` fixes the draws, so a number in
    the book is the same on every build. ``ValueError`` for fewer than 2 scores in a design, NaN, or a
    level outside (0, 1).
    """
    a_scores, b_scores = _scores("a", a), _scores("b", b)
    if statistic not in STATISTICS:
        raise ValueError(f"statistic must be one of {STATISTICS}; got {statistic!r}")
    level = _check_level(level)
    resamples = check_int("resamples", resamples, minimum=100, maximum=1_000_000)
    check_numbers("the bootstrap's draws", ("resamples", resamples), ("scores", a_scores.size + b_scores.size),
                  itemsize=16, hint=" (an index and a score per draw); give fewer resamples")
    rng = np.random.default_rng(check_seed(seed))
    reduce = np.mean if statistic == "mean" else iqm
    draws_a = a_scores[rng.integers(0, a_scores.size, (resamples, a_scores.size))]
    draws_b = b_scores[rng.integers(0, b_scores.size, (resamples, b_scores.size))]
    with np.errstate(over="ignore", invalid="ignore"):
        differences = reduce(draws_a, axis=1) - reduce(draws_b, axis=1)
        low, high = np.quantile(differences, [(1 - level) / 2, (1 + level) / 2])
    _check_bounds(float(low), float(high), "the bootstrap interval of a - b")
    return Interval(float(reduce(a_scores) - reduce(b_scores)), float(low), float(high), float(level), statistic,
                    a_scores.size, b_scores.size, "percentile bootstrap")


Draw = Callable[[np.random.Generator, tuple[int, int]], np.ndarray]
"""Seed scores for :func:`coverage`: ``draw(rng, (sims, n))`` gives ``sims`` sets of ``n`` seeds' scores."""


def normal_scores(mean: float = 0.0, sd: float = 1.0) -> Draw:
    """Seeds' scores from a normal distribution: a design whose seeds scatter evenly about its mean (``mean`` a
    finite number, ``sd`` >= 0; ``ValueError`` otherwise)."""
    mean, sd = check_real("mean", mean), check_real("sd", sd, 0.0)
    return lambda rng, shape: rng.normal(mean, sd, shape)


def skewed_scores(mean: float = 0.0, sd: float = 1.0, skewness: float = -1.5) -> Draw:
    """Seeds' scores from a gamma distribution shifted to ``mean`` and scaled to ``sd``, with the given
    ``skewness`` (negative: most seeds near the top and a long tail of bad ones, as the shipped ten-seed runs
    show, whose sample skewness is -1.0 to -1.8). ``skewness`` must not be 0 (no gamma distribution is
    symmetric: use :func:`normal_scores`); ``ValueError`` for it, or for anything but finite numbers."""
    mean, sd, skewness = check_real("mean", mean), check_real("sd", sd, 0.0), check_real("skewness", skewness)
    if skewness == 0:
        raise ValueError("skewness must not be 0 (a gamma distribution is never symmetric); for symmetric scores "
                         "use normal_scores")
    shape = (2 / skewness) ** 2
    sign = -1.0 if skewness < 0 else 1.0
    return lambda rng, size: mean + sign * (rng.gamma(shape, 1.0, size) - shape) / np.sqrt(shape) * sd


def coverage(method: str, draw_a: Draw, draw_b: Draw, n: int, difference: float, sims: int = 4000,
             level: float = 0.95, seed: int = 0, resamples: int = 1000) -> float:
    """How often ``method``'s ``level`` interval of mean(A) - mean(B) contains the true ``difference``, over
    ``sims`` simulated comparisons of ``n`` seeds per design drawn by ``draw_a`` and ``draw_b`` (whose means
    differ by ``difference``). ``method`` is one of :data:`METHODS`; the percentile bootstrap uses ``resamples``
    draws per comparison. A 95% interval should give 0.95 here; with 4,000 simulations the estimate's own
    standard error is about 0.35 points."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {METHODS}; got {method!r}")
    difference = check_real("difference", difference)
    n = check_int("n", n, minimum=2, maximum=1000)
    sims = check_int("sims", sims, minimum=100, maximum=1_000_000)
    level = _check_level(level)
    rng = np.random.default_rng(check_seed(seed))
    a, b = draw_a(rng, (sims, n)), draw_b(rng, (sims, n))
    if method == "welch":
        low, high = _welch_bounds(a, b, level)
    else:
        low, high = np.empty(sims), np.empty(sims)
        for start in range(0, sims, 200):  # 200 comparisons at a time: (200, resamples, n) draws in memory
            chunk = slice(start, start + 200)
            rows = a[chunk].shape[0]
            pick_a = rng.integers(0, n, (rows, resamples, n))
            pick_b = rng.integers(0, n, (rows, resamples, n))
            means = (np.take_along_axis(a[chunk][:, None, :].repeat(resamples, 1), pick_a, 2).mean(2)
                     - np.take_along_axis(b[chunk][:, None, :].repeat(resamples, 1), pick_b, 2).mean(2))
            low[chunk], high[chunk] = np.quantile(means, [(1 - level) / 2, (1 + level) / 2], axis=1)
    return float(np.mean((low <= difference) & (difference <= high)))


def prediction_interval(scores: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """The interval in which the score of one more seed falls with probability ``level``, from the scores of
    n seeds already trained, if seeds' scores are normal: mean ± t_{(1 + level) / 2, n - 1} · s · sqrt(1 + 1/n),
    with s the seeds' sample standard deviation (the classical prediction interval; wider than a confidence
    interval of the mean by the new seed's own spread). It needs at least 3 seeds (with 2 the t quantile is
    12.7 and the interval says nothing). ``ValueError`` for fewer, for NaN, or a level outside (0, 1)."""
    array = _scores("scores", scores)
    if array.size < 3:
        raise ValueError(f"a prediction interval needs the scores of at least 3 seeds; got {array.size}")
    level = _check_level(level)
    n = array.size
    half = float(student_t.ppf((1 + level) / 2, n - 1)) * array.std(ddof=1) * np.sqrt(1 + 1 / n)
    with np.errstate(over="ignore"):
        low, high = float(array.mean() - half), float(array.mean() + half)
    _check_bounds(low, high, "the prediction interval")
    return low, high
