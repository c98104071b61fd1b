"""Diagrams of the source's figures 17.1–17.9: block-and-arrow drawings, built as SVG.

One builder, :class:`Diagram`, draws boxes, arrows and text; one function per figure lays its figure
out with it, in the source's notation: inputs and agents are numbered from 1 (x¹, …, xᵐ), as in the
formulas. SVG keeps the drawings crisp at any zoom and small, and a notebook shows a :class:`Diagram`
as it is (``_repr_svg_``), in Jupyter and in the built book alike. Fig. 17.9 (the attention Q network)
is fig. 17.8 with the pair (oⁱ, aⁱ) in place of oⁱ, laid out by the same function.

Where a chapter computes the numbers, the figure takes them as arguments — the attention view (fig. 17.5,
extended from one output to all) draws every arrow xʲ → cⁱ with a width proportional to the αⁱⱼ passed
in — and checks them first: bad input is a ``ValueError`` that names the problem, never a silently wrong picture.

One drawing is not the source's: :func:`maac_critic` draws MAAC's Q critic (Iqbal & Sha 2019, fig. 1),
to set beside fig. 17.9.

Labels are plain strings with Unicode superscripts (``f"x{sup(3)}"`` is x³) and ``_`` for a subscript:
``"W_q"``, ``"d_{out}"`` (SVG text is not TeX).
"""
from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from .svg import _esc
from .viz import sup

__all__ = ["Box", "Diagram", "sequence_mapping", "query_key_value", "attention_weights", "attention_output",
           "attention_view", "multi_head", "concatenation_critic", "attention_critic", "attention_q_critic",
           "maac_critic"]

Point = tuple[float, float]

# The colour of each kind of quantity, the same in every figure (matplotlib's tab10 hues).
OBSERVATION = "#8c6d1f"  # oⁱ
INPUT = "#1f77b4"  # xⁱ: what a layer reads
QUERY = "#e07000"  # qⁱ, W_q
KEY = "#2ca02c"  # kⁱ, W_k
VALUE = "#9467bd"  # vⁱ, W_v (the attention value vectors)
WEIGHT = "#d62728"  # scores and αⁱⱼ
OUTPUT = "#138d90"  # cⁱ, v̂ⁱ, q̂ⁱ
ACTION = "#bc3c8c"  # aⁱ
SHARED = "#555555"  # a network whose weights all agents share
OWN = "#8c564b"  # a network of one agent's own (gⁱ with wⁱ)
HEADS = ("#1b9e77", "#d95f02", "#7570b3", "#e7298a", "#66a61e", "#e6ab02", "#a6761d", "#666666")
INK, MUTED = "#222222", "#666666"

FONT, SMALL = 14, 12  # px: labels in boxes; row labels, notes and numbers
MARGIN, HEADER = 16, 62  # px: around the drawing; the title and subtitle above it
BOX_H = 30
ALPHA_WIDTH = 9.0  # px: the stroke width of an arrow of weight α = 1 (figs. 17.4, 17.5)
FONT_FAMILY = "DejaVu Sans, Verdana, Helvetica, Arial, sans-serif"

_SUBSCRIPT = re.compile(r"_(\{[^}]*\}|[^\s{])")


def _fmt(v: float) -> str:
    return f"{v:.2f}".rstrip("0").rstrip(".") if abs(v - round(v)) > 1e-9 else str(round(v))


def _number(v: float) -> str:
    """A number as the figures print it: two decimals (three significant digits from 10^5 on, so that a
    huge score fits its box: 1e+308 has 309 digits) and a true minus sign."""
    return (f"{v:.2f}" if abs(v) < 1e5 else f"{v:.3g}").replace("-", "−")


def _plain(label: str) -> str:
    """A label as a reader reads it, without the subscript markup: 'W_q' -> 'Wq'."""
    return _SUBSCRIPT.sub(lambda m: m.group(1).strip("{}"), label)


def _text_width(label: str, size: float) -> float:
    """Estimated width in px of a label set in ``size`` px (DejaVu Sans averages about 0.57 em a character)."""
    return 0.57 * size * len(_plain(label))


def _markup(label: str, size: float) -> str:
    """SVG text content for a label: ``_x`` and ``_{xy}`` become subscripts (shifted tspans)."""
    shift, small = _fmt(0.3 * size), _fmt(0.75 * size)
    parts, pos, lowered = [], 0, False
    for match in _SUBSCRIPT.finditer(label):
        before = label[pos:match.start()]
        if before:
            parts.append(f'<tspan dy="-{shift}">{_esc(before)}</tspan>' if lowered else _esc(before))
            lowered = False
        dy = "0" if lowered else shift
        parts.append(f'<tspan dy="{dy}" font-size="{small}">{_esc(match.group(1).strip("{}"))}</tspan>')
        lowered, pos = True, match.end()
    rest = label[pos:]
    if rest:
        parts.append(f'<tspan dy="-{shift}">{_esc(rest)}</tspan>' if lowered else _esc(rest))
    return "".join(parts)


def _pale(colour: str, keep: float = 0.16) -> str:
    """``colour`` mixed with white, keeping the share ``keep`` of it: the fill of a box outlined in ``colour``."""
    rgb = [int(colour[k:k + 2], 16) for k in (1, 3, 5)]
    return "#" + "".join(f"{round(255 - keep * (255 - c)):02x}" for c in rgb)


def _data(data: dict | None) -> str:
    return "".join(f' data-{k}="{_esc(v)}"' for k, v in (data or {}).items())


@dataclass(frozen=True)
class Box:
    """A drawn box: top-left corner (x, y) and size (w, h) in px; y grows downwards."""

    x: float
    y: float
    w: float
    h: float

    def at(self, u: float, v: float) -> Point:
        """The point at the fractions (u, v) of the width and the height: at(0.5, 0) is the top middle."""
        return self.x + u * self.w, self.y + v * self.h

    @property
    def top(self) -> Point:
        return self.at(0.5, 0.0)

    @property
    def bottom(self) -> Point:
        return self.at(0.5, 1.0)


class Diagram:
    """A block-and-arrow drawing under a title that names the source's figure it follows.

    Coordinates are px, y downwards; the drawing starts below the header, at y = ``HEADER``. The canvas
    grows to hold everything drawn. ``svg()`` is a standalone SVG document (on a white ground, so it
    reads in a dark theme too); a notebook displays a Diagram as that SVG.
    """

    def __init__(self, title: str, figure: str, note: str = "", after: str = "the source's") -> None:
        self.title, self.figure = title, figure
        self.subtitle = f"after {after} fig. {figure}" + (f" · {note}" if note else "")
        self._parts: list[str] = []
        self._right = MARGIN + max(_text_width(title, 15), _text_width(self.subtitle, SMALL))
        self._bottom = float(HEADER)

    def _extend(self, x: float, y: float) -> None:
        self._right, self._bottom = max(self._right, x), max(self._bottom, y)

    def text(self, at: Point, label: str, *, size: float = SMALL, colour: str = MUTED, anchor: str = "start",
             bold: bool = False, halo: bool = False) -> None:
        """A label whose baseline starts (``anchor="start"``), centres or ends at ``at``."""
        x, y = at
        width = _text_width(label, size)
        left = {"start": x, "middle": x - width / 2, "end": x - width}[anchor]
        self._extend(left + width, y + 0.3 * size)
        style = ' font-weight="600"' if bold else ""
        if halo:  # a white outline under the letters, so that a label on crossing lines stays legible
            style += ' stroke="#ffffff" stroke-width="3" paint-order="stroke"'
        self._parts.append(f'<text x="{_fmt(x)}" y="{_fmt(y)}" font-size="{_fmt(size)}" fill="{colour}" '
                           f'text-anchor="{anchor}"{style}>{_markup(label, size)}</text>')

    def box(self, centre: Point, label: str | Sequence[str], colour: str, *, width: float = 48,
            height: float = BOX_H, size: float = FONT, fill: str | None = None, data: dict | None = None) -> Box:
        """A rounded box centred at ``centre`` with a label of one or more lines, outlined in ``colour``."""
        lines = [label] if isinstance(label, str) else list(label)
        box = Box(centre[0] - width / 2, centre[1] - height / 2, width, height)
        self._extend(box.x + box.w, box.y + box.h)
        self._parts.append(
            f'<g class="box"{_data(data)}><rect x="{_fmt(box.x)}" y="{_fmt(box.y)}" width="{_fmt(width)}" '
            f'height="{_fmt(height)}" rx="5" fill="{fill or _pale(colour)}" stroke="{colour}" stroke-width="1.5"/>')
        first = centre[1] - (len(lines) - 1) * 0.6 * size + 0.35 * size
        for k, line in enumerate(lines):  # a second line is a note, in the smaller size
            line_size = size if k == 0 else SMALL
            self._parts.append(f'<text x="{_fmt(centre[0])}" y="{_fmt(first + 1.2 * size * k)}" '
                               f'font-size="{_fmt(line_size)}" fill="{INK}" text-anchor="middle">'
                               f'{_markup(line, line_size)}</text>')
        self._parts.append("</g>")
        return box

    def concatenation(self, centre: Point, labels: Sequence[str], colours: Sequence[str], *,
                      segment: float = 30, height: float = BOX_H, size: float = SMALL) -> list[Box]:
        """A concatenated vector [a; b; …] drawn as boxes side by side, one per part, framed together."""
        left = centre[0] - segment * len(labels) / 2
        parts = [self.box((left + segment * (k + 0.5), centre[1]), label, colour, width=segment, height=height,
                          size=size) for k, (label, colour) in enumerate(zip(labels, colours))]
        self._parts.append(f'<rect x="{_fmt(left)}" y="{_fmt(centre[1] - height / 2)}" '
                           f'width="{_fmt(segment * len(labels))}" height="{_fmt(height)}" rx="5" fill="none" '
                           f'stroke="{INK}" stroke-width="1.5"/>')
        return parts

    def node(self, centre: Point, symbol: str, colour: str, radius: float = 17) -> Box:
        """An operation drawn as a circle (Σ); returns its bounding box, for the arrows' ends."""
        self._extend(centre[0] + radius, centre[1] + radius)
        self._parts.append(
            f'<g class="node"><circle cx="{_fmt(centre[0])}" cy="{_fmt(centre[1])}" r="{_fmt(radius)}" '
            f'fill="{_pale(colour)}" stroke="{colour}" stroke-width="1.5"/><text x="{_fmt(centre[0])}" '
            f'y="{_fmt(centre[1] + 0.35 * 18)}" font-size="18" fill="{INK}" text-anchor="middle">{_esc(symbol)}'
            f'</text></g>')
        return Box(centre[0] - radius, centre[1] - radius, 2 * radius, 2 * radius)

    def band(self, top: float, bottom: float, left: float, right: float) -> None:
        """A pale strip behind everything else: the place of a layer drawn by its connections (fig. 17.8)."""
        self._extend(right, bottom)
        self._parts.insert(0, f'<rect x="{_fmt(left)}" y="{_fmt(top)}" width="{_fmt(right - left)}" '
                           f'height="{_fmt(bottom - top)}" rx="8" fill="#f4f4f4" stroke="none"/>')

    def arrow(self, start: Point, end: Point, colour: str = MUTED, width: float = 1.5, *, head: bool = True,
              dashed: bool = False, opacity: float = 1.0, data: dict | None = None) -> None:
        """A line from ``start`` to ``end`` with its head at ``end`` (none with ``head=False``).

        The head grows with the line, so that a weighted arrow (width ∝ α) reads as one shape.
        """
        (x0, y0), (x1, y1) = start, end
        length = math.hypot(x1 - x0, y1 - y0)
        if length == 0:
            raise ValueError(f"an arrow needs two different points; got {start} twice")
        ux, uy = (x1 - x0) / length, (y1 - y0) / length
        self._extend(max(x0, x1), max(y0, y1))
        parts = [f'<g class="arrow"{_data(data)} opacity="{_fmt(opacity)}">']
        if head:
            long, half = 5 + 1.6 * width, 3 + 1.1 * width
            bx, by = x1 - ux * long, y1 - uy * long
            corners = [(x1, y1), (bx - uy * half, by + ux * half), (bx + uy * half, by - ux * half)]
            x1, y1 = x1 - ux * long * 0.8, y1 - uy * long * 0.8
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        parts.append(f'<line x1="{_fmt(x0)}" y1="{_fmt(y0)}" x2="{_fmt(x1)}" y2="{_fmt(y1)}" stroke="{colour}" '
                     f'stroke-width="{width:.4g}"{dash}/>')
        if head:
            points = " ".join(f"{_fmt(x)},{_fmt(y)}" for x, y in corners)
            parts.append(f'<polygon points="{points}" fill="{colour}"/>')
        self._parts.append("".join(parts) + "</g>")

    def legend(self, at: Point, entries: Sequence[tuple[str, str]]) -> None:
        """Colour swatches with their meaning, in one row starting at ``at``: entries (colour, label)."""
        x, y = at
        for colour, label in entries:
            self._parts.append(f'<rect x="{_fmt(x)}" y="{_fmt(y - 10)}" width="14" height="12" rx="3" '
                               f'fill="{_pale(colour)}" stroke="{colour}" stroke-width="1.5"/>')
            self.text((x + 20, y), label)
            x += 20 + _text_width(label, SMALL) + 18

    def svg(self) -> str:
        """The drawing as a standalone SVG document."""
        width, height = math.ceil(self._right + MARGIN), math.ceil(self._bottom + MARGIN)
        title = f"{self.title} ({self.subtitle})"
        return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
                f'viewBox="0 0 {width} {height}" font-family="{FONT_FAMILY}" role="img" '
                f'aria-label="{_esc(_plain(title))}" data-figure="{_esc(self.figure)}">'
                f'<title>{_esc(_plain(title))}</title>'
                f'<rect width="{width}" height="{height}" fill="#ffffff"/>'
                f'<text x="{MARGIN}" y="24" font-size="15" font-weight="600" fill="{INK}">'
                f'{_markup(self.title, 15)}</text>'
                f'<text x="{MARGIN}" y="44" font-size="{SMALL}" font-style="italic" fill="{MUTED}">'
                f'{_markup(self.subtitle, SMALL)}</text>'
                + "".join(self._parts) + "</svg>")

    def _repr_svg_(self) -> str:
        return self.svg()


# ---- checks on what the figures are given ----------------------------------------------------------

MAX_DRAWN = 64
"""The most boxes a figure draws in one row (inputs, agents, heads, keys): a wider figure is unreadable, and
one of 10^5 inputs takes seconds and ~100 MB of SVG."""


def _count(n: int, name: str, what: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int | np.integer) or n < 1:
        raise ValueError(f"{name} must be a whole number of {what}, at least 1; got {n!r}")
    if what != "dimensions" and n > MAX_DRAWN:
        raise ValueError(f"{name} = {n} {what} is more than a figure can show (at most {MAX_DRAWN} in a row)")
    return int(n)


def _array(values: Any, what: str) -> np.ndarray:
    """``values`` as a float array, or ``ValueError`` naming ``what`` (not numpy's message about sequences)."""
    try:
        a = np.asarray(values, dtype=float)
    except (TypeError, ValueError):
        raise ValueError(f"{what} must be numbers in a rectangular array (one per input); "
                         f"got {values!r:.120}") from None
    if a.ndim and max(a.shape) > MAX_DRAWN:
        raise ValueError(f"{what} of shape {a.shape} is more than a figure can show (at most {MAX_DRAWN} in a row)")
    return a


def _index(i: int, m: int) -> int:
    """A 1-based input index, as the figures number them (x¹, …, xᵐ)."""
    if isinstance(i, bool) or not isinstance(i, int | np.integer) or not 1 <= i <= m:
        raise ValueError(f"i = {i!r} is not one of the inputs 1, …, {m} (the figures number them from 1)")
    return int(i)


def _scores(scores: Sequence[float] | np.ndarray) -> np.ndarray:
    s = _array(scores, "the scores")
    if s.ndim != 1 or s.size == 0:
        raise ValueError(f"the scores of one query must be a vector (m,), one per key; got shape {s.shape}")
    if not np.all(np.isfinite(s)):
        raise ValueError("the scores contain NaN or infinite values")
    return s


def _alpha(alpha: Sequence | np.ndarray, ndim: int) -> np.ndarray:
    """α as given: one row αⁱ (ndim 1) or the matrix of all rows (ndim 2, square); each row a distribution."""
    a = _array(alpha, "α")
    if ndim == 1 and (a.ndim != 1 or a.size == 0):
        raise ValueError(f"αⁱ must be a vector (m,), one weight per input; got shape {a.shape}")
    if ndim == 2 and (a.ndim != 2 or a.shape[0] != a.shape[1] or a.size == 0):
        raise ValueError(f"α must be a square matrix (m, m), row i being αⁱ; got shape {a.shape}")
    if not np.all(np.isfinite(a)):
        raise ValueError("α contains NaN or infinite values")
    if np.any(a < 0):
        raise ValueError(f"α has a negative weight ({a.min():.3g}): each row is a softmax, its weights are ≥ 0")
    sums = np.atleast_2d(a).sum(axis=1)
    bad = np.flatnonzero(np.abs(sums - 1) > 1e-3)
    if bad.size:
        row = f"row {bad[0] + 1} of α" if ndim == 2 else "αⁱ"
        raise ValueError(f"{row} sums to {sums[bad[0]]:.4g}, not 1: each αⁱ is a softmax over the m inputs")
    return a


# ---- layout ------------------------------------------------------------------------------------------

def _columns(n: int, pitch: float, left: float) -> list[float]:
    """The x of n columns ``pitch`` px apart, the first half a pitch right of ``left``."""
    return [left + pitch * (k + 0.5) for k in range(n)]


def _row_labels(d: Diagram, labels: dict[float, str]) -> float:
    """Write each row's label at the left margin, at its row's y; returns where the columns may start."""
    for y, label in labels.items():
        d.text((MARGIN, y + 0.35 * SMALL), label)
    return MARGIN + max(_text_width(label, SMALL) for label in labels.values()) + 14


def _row(d: Diagram, xs: Sequence[float], y: float, labels: Sequence[str], colour: str, **box) -> list[Box]:
    return [d.box((x, y), label, colour, **box) for x, label in zip(xs, labels)]


def _names(symbol: str, m: int) -> list[str]:
    """x¹, …, xᵐ: a symbol with the 1-based superscripts of the figures."""
    return [f"{symbol}{sup(j)}" for j in range(1, m + 1)]


def _at_height(start: Point, end: Point, y: float) -> Point:
    """The point of the line start → end at height y: where a label on the arrow goes."""
    t = (y - start[1]) / (end[1] - start[1])
    return start[0] + t * (end[0] - start[0]), y


def _bus(d: Diagram, sources: Sequence[Box], targets: Sequence[Box], y: float) -> None:
    """Every source feeds every target: lines from the sources up to a rail at height ``y``, arrows up from it."""
    xs = [b.top[0] for b in (*sources, *targets)]
    for b in sources:
        d.arrow(b.top, (b.top[0], y), head=False)
    d.arrow((min(xs), y), (max(xs), y), head=False)
    for b in targets:
        d.arrow((b.bottom[0], y), b.bottom)


# ---- the figures -------------------------------------------------------------------------------------

def sequence_mapping(m: int) -> Diagram:
    """Fig. 17.1: a layer that maps a set of m inputs x¹, …, xᵐ to m outputs c¹, …, cᵐ."""
    m = _count(m, "m", "inputs")
    d = Diagram("A layer for a set: m inputs in, m outputs out", "17.1", f"m = {m}")
    y_out, y_layer, y_in = HEADER + 24, HEADER + 110, HEADER + 196
    left = _row_labels(d, {y_out: "outputs cⁱ", y_layer: "one layer", y_in: "inputs xʲ"})
    xs = _columns(m, 72, left)
    outputs = _row(d, xs, y_out, _names("c", m), OUTPUT)
    inputs = _row(d, xs, y_in, _names("x", m), INPUT)
    span = xs[-1] - xs[0] + 72
    layer = d.box(((xs[0] + xs[-1]) / 2, y_layer), ["self-attention", "each cⁱ depends on every xʲ"], SHARED,
                  width=max(span - 12, 220), height=50)
    for b in inputs:
        d.arrow(b.top, (b.top[0], layer.y + layer.h))
    for b in outputs:
        d.arrow((b.bottom[0], layer.y), b.bottom)
    d.text((left, y_in + 44), "its parameters do not depend on m: the same layer takes a set of any size")
    return d


def query_key_value(m: int, d_in: int, d_q: int, d_out: int) -> Diagram:
    """Fig. 17.2: qⁱ = W_q xⁱ, kⁱ = W_k xⁱ, vⁱ = W_v xⁱ, the same three matrices for every input."""
    m = _count(m, "m", "inputs")
    d_in, d_q, d_out = (_count(n, name, "dimensions") for n, name in ((d_in, "d_in"), (d_q, "d_q"), (d_out, "d_out")))
    d = Diagram("Query, key and value of every input, by three shared matrices", "17.2",
                f"m = {m}, d_{{in}} = {d_in}, d_q = {d_q}, d_{{out}} = {d_out}")
    y_top, y_in = HEADER + 24, HEADER + 114
    xs = _columns(m, 108, MARGIN)
    matrices = (("q", QUERY, "W_q", d_q), ("k", KEY, "W_k", d_q), ("v", VALUE, "W_v", d_out))
    for x, name in zip(xs, _names("", m)):
        source = d.box((x, y_in), f"x{name}", INPUT)
        for offset, (symbol, colour, _, _) in zip((-34, 0, 34), matrices):
            target = d.box((x + offset, y_top), f"{symbol}{name}", colour, width=32)
            d.arrow(source.at(0.5 + offset / 96, 0), target.bottom, colour)
    d.legend((MARGIN, y_in + 46), [(colour, f"{symbol}ⁱ = {w} xⁱ ∈ ℝ{sup(n)}") for symbol, colour, w, n in matrices])
    shapes = ", ".join(f"{w}: {n} × {d_in}" for _, _, w, n in matrices)
    d.text((MARGIN, y_in + 70), f"xⁱ ∈ ℝ{sup(d_in)}; one set of matrices for all m inputs ({shapes})")
    return d


def attention_weights(scores: Sequence[float] | np.ndarray, i: int = 1) -> Diagram:
    """Fig. 17.3: αⁱ = softmax(⟨qⁱ, k¹⟩, …, ⟨qⁱ, kᵐ⟩), the query qⁱ scored against every key.

    ``scores``: the m scores ⟨qⁱ, kʲ⟩ of query i (1-based); the weights drawn are their softmax.
    """
    s = _scores(scores)
    m, i = s.size, _index(i, s.size)
    alpha = np.exp(s - s.max())
    alpha /= alpha.sum()
    q = f"q{sup(i)}"
    d = Diagram(f"The weights α{sup(i)}: query {q} against every key, then a softmax", "17.3",
                f"the numbers of this example, m = {m}")
    y_alpha, y_soft, y_score, y_pair = HEADER + 26, HEADER + 96, HEADER + 166, HEADER + 246
    left = _row_labels(d, {y_alpha: f"weights α{sup(i)}_j", y_soft: "softmax over j",
                           y_score: f"scores ⟨{q}, kʲ⟩", y_pair: f"query {q}, key kʲ"})
    xs = _columns(m, 84, left)
    weights = [d.box((x, y_alpha), _number(a), WEIGHT, width=58, fill=_pale(WEIGHT, 0.1 + 0.6 * a),
                     data={"j": j, "weight": f"{a:.6f}"}) for j, (x, a) in enumerate(zip(xs, alpha), start=1)]
    softmax = d.box(((xs[0] + xs[-1]) / 2, y_soft), "softmax", SHARED, width=xs[-1] - xs[0] + 62)
    for x, name, score, target in zip(xs, _names("k", m), s, weights):
        box = d.box((x, y_score), _number(score), WEIGHT, width=58, fill="#ffffff")
        d.arrow(box.top, (x, softmax.y + softmax.h))
        d.arrow((x, softmax.y), target.bottom)
        for offset, label, colour in ((-17, q, QUERY), (17, name, KEY)):
            d.arrow(d.box((x + offset, y_pair), label, colour, width=32).top, box.at(0.5 + offset / 80, 1), colour)
    return d


def attention_output(alpha_row: Sequence[float] | np.ndarray, i: int = 1) -> Diagram:
    """Fig. 17.4: cⁱ = Σⱼ αⁱⱼ vʲ, each value's arrow as wide as its weight αⁱⱼ (i is 1-based)."""
    alpha = _alpha(alpha_row, ndim=1)
    m, i = alpha.size, _index(i, alpha.size)
    c = f"c{sup(i)}"
    d = Diagram(f"The output {c} = Σ_j α{sup(i)}_j vʲ: the values averaged with the weights α{sup(i)}", "17.4",
                f"arrow width ∝ α{sup(i)}_j, the numbers of this example")
    y_out, y_sum, y_weights, y_values = HEADER + 24, HEADER + 90, HEADER + 190, HEADER + 250
    left = _row_labels(d, {y_out: f"output {c}", y_sum: "weighted sum", y_weights: f"weights α{sup(i)}_j",
                           y_values: "values vʲ"})
    xs = _columns(m, 84, left)
    centre = (xs[0] + xs[-1]) / 2
    total = d.node((centre, y_sum), "Σ", SHARED)
    d.arrow(total.top, d.box((centre, y_out), c, OUTPUT).bottom)
    for j, (x, a, name) in enumerate(zip(xs, alpha, _names("v", m)), start=1):
        start = d.box((x, y_values), name, VALUE).top
        angle = math.atan2(start[0] - centre, start[1] - y_sum)  # end on the circle, pointing at its centre
        end = (centre + math.sin(angle) * total.h / 2, y_sum + math.cos(angle) * total.h / 2)
        d.arrow(start, end, VALUE, ALPHA_WIDTH * a, data={"j": j, "weight": f"{a:.6f}"})
        x_label, _ = _at_height(start, end, y_weights)
        d.text((x_label, y_weights + 4), _number(a), colour=WEIGHT, anchor="middle", bold=True, halo=True)
    return d


def attention_view(alpha: Sequence[Sequence[float]] | np.ndarray, i: int = 1) -> Diagram:
    """Fig. 17.5 extended to the whole layer: the source draws one output cⁱ and its weights αⁱ; this draws
    x → c with an arrow xʲ → cⁱ for every pair, of width ∝ αⁱⱼ.

    ``alpha``: the (m, m) weights, row i = αⁱ. The arrows into cⁱ for the given (1-based) i are drawn
    in colour and labelled with their weights; the others in grey.
    """
    a = _alpha(alpha, ndim=2)
    m, i = a.shape[0], _index(i, a.shape[0])
    d = Diagram("The attention view: every output reads every input, with weight αⁱ_j", "17.5",
                f"width ∝ αⁱ_j, the numbers of this example; into c{sup(i)} in red")
    y_out, y_weights, y_in = HEADER + 24, HEADER + 196, HEADER + 254
    left = _row_labels(d, {y_out: "outputs cⁱ", y_weights: f"weights α{sup(i)}_j", y_in: "inputs xʲ"})
    xs = _columns(m, 84, left)
    outputs = _row(d, xs, y_out, _names("c", m), OUTPUT)
    inputs = _row(d, xs, y_in, _names("x", m), INPUT)
    pairs = [(r, j) for r in range(1, m + 1) for j in range(1, m + 1)]
    for r, j in sorted(pairs, key=lambda p: p[0] == i):  # the highlighted arrows last, on top
        colour, opacity = (WEIGHT, 0.9) if r == i else ("#999999", 0.45)
        d.arrow(inputs[j - 1].top, outputs[r - 1].bottom, colour, ALPHA_WIDTH * a[r - 1, j - 1], opacity=opacity,
                data={"i": r, "j": j, "weight": f"{a[r - 1, j - 1]:.6f}"})
    for b, weight in zip(inputs, a[i - 1]):
        x_label, _ = _at_height(b.top, outputs[i - 1].bottom, y_weights)
        d.text((x_label, y_weights + 4), _number(weight), colour=WEIGHT, anchor="middle", bold=True, halo=True)
    return d


def multi_head(m: int, l: int, d_out: int) -> Diagram:
    """Fig. 17.6: l heads side by side on the same inputs; cⁱ = [cⁱ₁; …; cⁱₗ] ∈ ℝ^(l·d_out)."""
    m, l, d_out = _count(m, "m", "inputs"), _count(l, "l", "heads"), _count(d_out, "d_out", "dimensions")
    d = Diagram(f"Multi-head self-attention: {l} heads, their outputs concatenated", "17.6",
                f"m = {m}, l = {l}, d_{{out}} = {d_out}")
    y_out, y_heads, y_in = HEADER + 26, HEADER + 150, HEADER + 254
    left = _row_labels(d, {y_out: f"cⁱ ∈ ℝ{sup(l * d_out)}", y_heads: f"{l} heads", y_in: "inputs xʲ"})
    segment, head_width = 26, 104
    pitch = max(l * segment + 14, 72)
    width = max(m * pitch, l * (head_width + 12))
    xs = _columns(m, pitch, left + (width - m * pitch) / 2)
    colours = [HEADS[h % len(HEADS)] for h in range(l)]
    outputs = [d.concatenation((x, y_out), [f"c{sup(r)}_{h}" for h in range(1, l + 1)], colours, segment=segment)
               for r, x in enumerate(xs, start=1)]
    heads = [d.box((x, y_heads), [f"head {h}", f"W_{{q,{h}}}, W_{{k,{h}}}, W_{{v,{h}}}"], colour,
                   width=head_width, height=46)
             for h, (x, colour) in enumerate(zip(_columns(l, width / l, left), colours), start=1)]
    for h, (head, colour) in enumerate(zip(heads, colours)):
        for parts in outputs:
            d.arrow(head.top, parts[h].bottom, colour, 1.3, opacity=0.8)
    _bus(d, _row(d, xs, y_in, _names("x", m), INPUT), heads, y_in - 40)
    d.text((left, y_in + 44), f"cⁱ = [cⁱ_1; …; cⁱ_{l}]: l · d_{{out}} = {l} · {d_out} = {l * d_out} numbers")
    return d


def _critic_inputs(d: Diagram, xs: Sequence[float], ys: Sequence[float], feature: str,
                   actions: bool = False, agents: Sequence[int] | None = None) -> list[Box]:
    """The common start of figs. 17.7–17.9 (and of MAAC's critic): oʲ (or the pair [oʲ; aʲ]) → the shared
    network φ → a feature per agent, for agents 1, …, m or the given ``agents``, one per column ``xs``."""
    agents = range(1, len(xs) + 1) if agents is None else agents
    def names(symbol: str) -> list[str]:
        return [f"{symbol}{sup(j)}" for j in agents]
    if actions:
        observations = [Box(pair[0].x, pair[0].y, pair[1].x + pair[1].w - pair[0].x, pair[0].h) for pair in
                        (d.concatenation((x, ys[2]), [o, a], [OBSERVATION, ACTION], segment=38, size=FONT)
                         for x, o, a in zip(xs, names("o"), names("a")))]
    else:
        observations = _row(d, xs, ys[2], names("o"), OBSERVATION)
    phis = _row(d, xs, ys[1], ["φ"] * len(xs), SHARED)
    features = _row(d, xs, ys[0], names(feature), INPUT)
    for chain in zip(observations, phis, features):
        for a, b in zip(chain, chain[1:]):
            d.arrow(a.top, b.bottom)
    return features


def _critic_outputs(d: Diagram, xs: Sequence[float], y_heads: float, y_values: float, symbol: str = "v̂") -> list[Box]:
    """The common end of figs. 17.7–17.9: one head gⁱ per agent, with its own weights, → v̂ⁱ (or q̂ⁱ)."""
    m = len(xs)
    heads = _row(d, xs, y_heads, _names("g", m), OWN)
    for head, value in zip(heads, _row(d, xs, y_values, _names(symbol, m), OUTPUT)):
        d.arrow(head.top, value.bottom)
    return heads


def _critic_legend(d: Diagram, y: float) -> None:
    d.legend((MARGIN, y), [(SHARED, "one network shared by all agents"), (OWN, "one per agent (own wⁱ)")])


def concatenation_critic(m: int, d_o: int, d_x: int) -> Diagram:
    """Fig. 17.7: xⁱ = φ(oⁱ) by one shared φ, [x¹; …; xᵐ] concatenated, and m unshared heads v̂ⁱ = gⁱ([x¹; …; xᵐ]).

    The source draws φ as a CNN; the book's is an MLP (an MPE observation is a short vector).
    """
    m, d_o, d_x = _count(m, "m", "agents"), _count(d_o, "d_o", "dimensions"), _count(d_x, "d_x", "dimensions")
    d = Diagram("The concatenation critic: every head reads all m features", "17.7",
                f"m = {m}; φ is an MLP here, a CNN in the source")
    ys = [HEADER + 24 + 64 * k for k in range(6)]
    left = _row_labels(d, {ys[0]: "values v̂ⁱ", ys[1]: "heads gⁱ(·; wⁱ)", ys[2]: f"[x¹; …; xᵐ] ∈ ℝ{sup(m * d_x)}",
                           ys[3]: f"features xⁱ ∈ ℝ{sup(d_x)}", ys[4]: "shared φ", ys[5]: f"oⁱ ∈ ℝ{sup(d_o)}"})
    xs = _columns(m, 96, left)
    features = _critic_inputs(d, xs, ys[3:], "x")
    parts = d.concatenation(((xs[0] + xs[-1]) / 2, ys[2]), _names("x", m), [INPUT] * m, segment=40, size=FONT)
    heads = _critic_outputs(d, xs, ys[1], ys[0])
    for feature, part in zip(features, parts):
        d.arrow(feature.top, part.bottom, INPUT)
    for part in parts:  # m² connections: each head has weights for every slot of the concatenation
        for head in heads:
            d.arrow(part.top, head.bottom, opacity=0.7)
    _critic_legend(d, ys[5] + 44)
    return d


def attention_critic(m: int, d_o: int, d_x: int, l: int, d_out: int) -> Diagram:
    """Fig. 17.8: xⁱ = φ(oⁱ), c = self-attention(x), zⁱ = ReLU(W [xⁱ; cⁱ] + b) shared, v̂ⁱ = gⁱ(zⁱ) unshared.

    The skip of xⁱ into the FC layer is the book's choice (the source feeds cⁱ alone).
    """
    m, d_o, d_x = _count(m, "m", "agents"), _count(d_o, "d_o", "dimensions"), _count(d_x, "d_x", "dimensions")
    l, d_out = _count(l, "l", "heads"), _count(d_out, "d_out", "dimensions")
    d = Diagram("The self-attention critic: agents meet only in the attention layer", "17.8",
                f"m = {m}, l = {l} heads; the skip xⁱ → FC is the book's choice")
    return _attention_layout(d, m, f"oⁱ ∈ ℝ{sup(d_o)}", d_x, l, d_out, "v̂", "values v̂ⁱ", actions=False)


def attention_q_critic(m: int, d_o: int, d_a: int, d_x: int, l: int, d_out: int) -> Diagram:
    """Fig. 17.9: the self-attention action-value network of MADDPG. xʲ = φ([oʲ; aʲ]) by one shared φ,
    c = self-attention(x), zⁱ = ReLU(W [xⁱ; cⁱ] + b) shared, q̂ⁱ = gⁱ(zⁱ) unshared: fig. 17.8 with each
    agent's action beside its observation."""
    m, d_o, d_a = _count(m, "m", "agents"), _count(d_o, "d_o", "dimensions"), _count(d_a, "d_a", "dimensions")
    d_x, l, d_out = _count(d_x, "d_x", "dimensions"), _count(l, "l", "heads"), _count(d_out, "d_out", "dimensions")
    d = Diagram("The self-attention Q network: each token is an observation and an action", "17.9",
                f"m = {m}, l = {l} heads; the skip xⁱ → FC is the book's choice")
    return _attention_layout(d, m, f"[oⁱ; aⁱ] ∈ ℝ{sup(d_o + d_a)}", d_x, l, d_out, "q̂", "action values q̂ⁱ",
                             actions=True)


def _attention_layout(d: Diagram, m: int, input_label: str, d_x: int, l: int, d_out: int, value: str,
                      value_label: str, actions: bool) -> Diagram:
    """Figs. 17.8 and 17.9 (which differ in their inputs and outputs) drawn on ``d``."""
    ys = [HEADER + 24 + 64 * k for k in range(4)] + [HEADER + 24 + 64 * 3 + 130 + 64 * k for k in range(4)]
    y_mesh = (ys[3] + ys[4]) / 2
    left = _row_labels(d, {ys[0]: value_label, ys[1]: "heads gⁱ(·; wⁱ)", ys[2]: "shared FC, ReLU",
                           ys[3]: f"[xⁱ; cⁱ], cⁱ ∈ ℝ{sup(l * d_out)}", y_mesh: f"self-attention, {l} heads",
                           ys[4]: f"xⁱ ∈ ℝ{sup(d_x)}", ys[5]: "shared φ", ys[6]: input_label})
    xs = _columns(m, 110, left)
    d.band(ys[3] + 24, ys[4] - 24, MARGIN - 6, xs[-1] + 55)
    features = _critic_inputs(d, xs, ys[4:], "x", actions)
    pairs = [d.concatenation((x, ys[3]), [name, f"c{name[1:]}"], [INPUT, OUTPUT], segment=38, size=FONT)
             for x, name in zip(xs, _names("x", m))]
    for feature, (skip, _) in zip(features, pairs):
        d.arrow(feature.at(0.25, 0), skip.bottom, INPUT, dashed=True)
    for feature in features:  # every cⁱ reads every xʲ
        for _, mixed in pairs:
            d.arrow(feature.at(0.6, 0), mixed.bottom, OUTPUT, opacity=0.75)
    heads = _critic_outputs(d, xs, ys[1], ys[0], value)
    for (skip, _), head in zip(pairs, heads):
        fc = d.box((skip.x + skip.w, ys[2]), "FC", SHARED)
        d.arrow((fc.bottom[0], skip.y), fc.bottom)
        d.arrow(fc.top, head.bottom)
    _critic_legend(d, ys[6] + 44)
    return d


def maac_critic(m: int, n_actions: int, l: int, i: int = 1) -> Diagram:
    """MAAC's Q critic of agent i (Iqbal & Sha 2019, fig. 1; :class:`attnmarl.nets.MAACAttentionCritic`) in
    the book's notation, to set beside fig. 17.9: xʲ = φ([oʲ; aʲ]) by one shared φ, as in fig. 17.9, but
    only for the *other* agents j ≠ i, whose xʲ give the keys and values; agent i's query comes from
    xⁱ_o = φ_o(oⁱ), its observation alone; l heads give cⁱ = Σ_{j≠i} αⁱⱼ vʲ; agent i's own head
    gⁱ([xⁱ_o; cⁱ]) gives one value per action of agent i, q̂ⁱ(a′) for a′ = 0, …, |A| − 1. (MAAC writes eʲ, sⁱ,
    xⁱ and fⁱ for xʲ, xⁱ_o, cⁱ and gⁱ.)"""
    m, n_actions, l = _count(m, "m", "agents"), _count(n_actions, "n_actions", "actions"), _count(l, "l", "heads")
    if m < 2:
        raise ValueError(f"MAAC's critic attends over the other agents: it needs m >= 2 agents; got m = {m}")
    i = _index(i, m)
    d = Diagram(f"MAAC's Q critic of agent {i}: its query attends over the other agents only", "1",
                f"m = {m}, l = {l} heads, |A| = {n_actions}; compare fig. 17.9", after="MAAC's")
    ys = [HEADER + 24 + 64 * k for k in range(3)] + [HEADER + 24 + 64 * 2 + 120 + 64 * k for k in range(3)]
    y_mesh = (ys[2] + ys[3]) / 2
    query_name = f"x{sup(i)}_o"
    left = _row_labels(d, {ys[0]: f"values q̂{sup(i)}(a′) ∈ ℝ{sup(n_actions)}", ys[1]: f"own head g{sup(i)}",
                           ys[2]: f"[{query_name}; c{sup(i)}]", y_mesh: f"attention, {l} heads, over j ≠ {i}",
                           ys[3]: f"{query_name} (query), xʲ (keys, values)", ys[4]: "shared φ_o, φ",
                           ys[5]: "inputs"})
    others = [j for j in range(1, m + 1) if j != i]
    xs = _columns(m, 104, left)
    x_i, x_others = xs[0], xs[1:]
    d.band(ys[2] + 24, ys[3] - 24, MARGIN - 6, xs[-1] + 56)
    own_input = d.box((x_i, ys[5]), f"o{sup(i)}", OBSERVATION)
    encoder = d.box((x_i, ys[4]), "φ_o", SHARED)
    query = d.box((x_i, ys[3]), query_name, QUERY)
    d.arrow(own_input.top, encoder.bottom)
    d.arrow(encoder.top, query.bottom)
    keys = _critic_inputs(d, x_others, ys[3:], "x", actions=True, agents=others)
    joined = d.concatenation((x_i + 19, ys[2]), [query_name, f"c{sup(i)}"], [QUERY, OUTPUT], segment=38,
                             size=FONT)
    d.arrow(query.top, joined[0].bottom, QUERY, dashed=True)
    d.arrow(query.at(0.8, 0), joined[1].bottom, QUERY, opacity=0.75)
    for key in keys:  # every other agent's key and value reach cⁱ, weighted by αⁱⱼ
        d.arrow(key.top, joined[1].bottom, INPUT, opacity=0.75)
    head = d.box((x_i + 19, ys[1]), f"g{sup(i)}", OWN)
    d.arrow((head.bottom[0], joined[0].y), head.bottom)
    values = d.box((x_i + 19, ys[0]), f"q̂{sup(i)}(1), …, q̂{sup(i)}({n_actions})", OUTPUT, width=150)
    d.arrow(head.top, values.bottom)
    d.text((left, ys[5] + 44), f"a{sup(i)} is no input: one pass gives agent {i}'s value of every action a′;")
    d.text((left, ys[5] + 62), f"(o{sup(i)}, a{sup(i)}) is not among the keys")
    d.legend((MARGIN, ys[5] + 90), [(SHARED, "shared by all agents"), (OWN, f"agent {i}'s own (wⁱ)")])
    return d
