"""Where an arena's labels go, so that no two overprint.

An agent standing on its landmark, or a treasure beside a collector, would otherwise have their labels drawn
on top of each other. Each entity, in index order, tries a few places beside its own disc (a large disc first
tries its own upper half) and takes the first that overlaps no label placed before it and, where it can, no
other disc and nothing outside the arena: a greedy search of the kind cartographers use for map labels.

Everything here is in pixels, y downwards, as SVG draws; :func:`attnmarl.notebook.viz.arena` runs it at draw
time on matplotlib's own pixels. ``static/explorer.js``'s ``labelPositions`` is its line-for-line twin (a test
compares the markup both draw), so a figure, its explorer and its page place the same labels the same way.
"""
from __future__ import annotations

from collections.abc import Sequence

__all__ = ["label_positions", "CHAR_WIDTH"]

CHAR_WIDTH = 0.6
"""A character's width as a share of the font size (a sans-serif's lower case and digits average about it)."""
GAP = 1.0
"""Pixels between a disc and a label beside it."""


def _overlaps(a: tuple[float, float, float, float], b: tuple[float, float, float, float]) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def _touches_disc(box: tuple[float, float, float, float], cx: float, cy: float, r: float) -> bool:
    nx, ny = min(max(cx, box[0]), box[2]), min(max(cy, box[1]), box[3])  # the box's point nearest the centre
    return (nx - cx) * (nx - cx) + (ny - cy) * (ny - cy) < r * r


def label_positions(centres: Sequence[tuple[float, float]], radii: Sequence[float], labels: Sequence[str],
                    font: float, bounds: tuple[float, float, float, float]) -> list[tuple[float, float]]:
    """The centre of each label's box, in pixels: ``centres[k]`` and ``radii[k]`` are entity k's disc, ``font``
    the type size in pixels, ``bounds`` the arena's ``(left, top, right, bottom)``.

    A label's box is ``CHAR_WIDTH * font`` a character wide (plus 2 px of halo) and ``font`` high. Its places, in
    the order tried: in the disc's upper half (only if the radius is at least ``font`` less one pixel), below,
    above, right, left, then the four diagonals. Each place costs 1000 for every label placed before it that it
    overlaps, 10 if it leaves the arena, and 1 for every other disc it touches; the cheapest wins, the first
    tried on a tie.
    """
    placed: list[tuple[float, float, float, float]] = []
    out: list[tuple[float, float]] = []
    for k, ((cx, cy), r, label) in enumerate(zip(centres, radii, labels)):
        w, h = CHAR_WIDTH * font * len(label) + 2, font
        dx, dy = r + GAP + w / 2, r + GAP + h / 2
        ex, ey = 0.7 * r + GAP + w / 2, 0.7 * r + GAP + h / 2
        places = [(cx, cy - 0.4 * r)] if r >= font - 1 else []
        places += [(cx, cy + dy), (cx, cy - dy), (cx + dx, cy), (cx - dx, cy),
                   (cx + ex, cy + ey), (cx - ex, cy + ey), (cx + ex, cy - ey), (cx - ex, cy - ey)]
        best, best_cost = places[0], -1.0
        for x, y in places:
            box = (x - w / 2, y - h / 2, x + w / 2, y + h / 2)
            cost = 1000.0 * sum(_overlaps(box, other) for other in placed)
            if box[0] < bounds[0] or box[1] < bounds[1] or box[2] > bounds[2] or box[3] > bounds[3]:
                cost += 10.0
            cost += sum(_touches_disc(box, ox, oy, orr) for j, ((ox, oy), orr) in enumerate(zip(centres, radii))
                        if j != k)
            if best_cost < 0 or cost < best_cost:
                best, best_cost = (x, y), cost
        x, y = best
        placed.append((x - w / 2, y - h / 2, x + w / 2, y + h / 2))
        out.append(best)
    return out
