"""SVG drawings of explorer frames, for the live face of :mod:`attnmarl.notebook.widgets`.

The static face draws the same frames in the browser with ``static/explorer.js``. The two
renderers are line-for-line twins and produce the same markup (a test renders frames with both
and compares), so a reader sees the same picture with or without a kernel. Frames arrive here in
their JSON form (:func:`attnmarl.notebook.viz.frame_spec`), already rounded.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from decimal import ROUND_HALF_UP, Decimal

from .labels import label_positions
from .viz import GRID_LINE, MASKED, SHADE, SHADE_OPACITY, shade_box

__all__ = ["render_panels", "COLORMAPS"]

COLORMAPS = {
    "viridis": ["#440154", "#472d7b", "#3b528b", "#2c728e", "#21918c", "#28ae80", "#5ec962", "#addc30", "#fde725"],
    "RdBu_r": ["#053061", "#2166ac", "#4393c3", "#92c5de", "#d1e5f0", "#f7f7f7", "#fddbc7", "#f4a582", "#d6604d",
               "#b2182b", "#67001f"],
}


def _num(v: float) -> str:
    """A number as JavaScript's String(v) writes it (shortest round trip, no '.0')."""
    v = float(v)
    return str(int(v)) if v.is_integer() else repr(v)


def _fixed2(v: float) -> str:
    """JavaScript's v.toFixed(2): the exact value rounded half away from zero."""
    v = float(v) or 0.0
    return str(Decimal(v).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))


def _esc(s: object) -> str:
    return str(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _color(name: str, t: float) -> tuple[str, bool]:
    stops = COLORMAPS.get(name, COLORMAPS["viridis"])
    t = min(1.0, max(0.0, t if math.isfinite(t) else 0.0)) * (len(stops) - 1)
    i = min(len(stops) - 2, math.floor(t))
    f = t - i
    a = [int(stops[i][k:k + 2], 16) for k in (1, 3, 5)]
    b = [int(stops[i + 1][k:k + 2], 16) for k in (1, 3, 5)]
    rgb = [math.floor(v + f * (b[k] - v) + 0.5) for k, v in enumerate(a)]
    return f"rgb({','.join(map(str, rgb))})", 0.299 * rgb[0] + 0.587 * rgb[1] + 0.114 * rgb[2] > 140


TITLE_CHAR = 7
"""Pixels: a generous average width of one character of a 13 px bold title."""


def _title(title: str, cx: float, w: float) -> tuple[str, int]:
    """A panel title centred on ``cx`` in a panel ``w`` pixels wide, wrapped at spaces into lines that
    fit (a word longer than a line stands alone): the ``<text>`` element and its number of lines."""
    room = max(8, math.floor(2 * min(cx, w - cx) / TITLE_CHAR))
    lines: list[str] = []
    for word in str(title).split(" "):
        if lines and len(lines[-1]) + 1 + len(word) <= room:
            lines[-1] += " " + word
        else:
            lines.append(word)
    spans = "".join(f'<tspan x="{_num(cx)}" dy="{0 if i == 0 else 15}">{_esc(line)}</tspan>' for i, line in enumerate(lines))
    return f'<text y="16" text-anchor="middle" font-weight="600" font-size="13">{spans}</text>', len(lines)


def _square(lim: float, left: float, top: float, size: float) -> tuple[Callable, Callable]:
    """World x and y in [-lim, lim] to the pixels of a size x size square whose corner is (left, top)."""
    return (lambda v: left + ((v + lim) / (2 * lim)) * size,
            lambda v: top + ((lim - v) / (2 * lim)) * size)


def _square_data(left: float, top: float, size: float, lim: float) -> str:
    """The square a panel draws the world in, as ``data-square`` holds it ("left,top,size,lim"): what
    ``static/drag.js`` needs to turn a pointer's position back into world coordinates."""
    return ",".join(_num(v) for v in (left, top, size, lim))


CELLS_WIDTH = 600
"""Pixels: the widest a heatmap's cells may be together, so that a long input (chapter 1's 92 characters,
no numbers) or many entities (chapter 10's 24, with numbers) fit an explorer at 1280 px, title and row
labels included; cells with numbers narrow no further than 24 px."""


def heatmap(p: dict) -> str:
    n_rows, n_cols = len(p["rows"]), len(p["cols"])
    # cells are 30 px squares, narrowed to fit CELLS_WIDTH: to 24 px if they carry numbers (then in 9 px
    # type), to 6 px if not, keeping at least 14 px of height for the row labels
    fits = math.floor(CELLS_WIDTH / n_cols)
    cell = min(30, max(24, fits)) if p["annotate"] else max(6, min(30, fits))
    cell_h, cell_font = max(cell, 14), 10 if cell >= 30 else 9
    col_font = 11 if cell >= 11 else 9
    row_label = 8 + 7 * max(len(str(r)) for r in p["rows"])
    left = row_label + 22
    scale = left + cell * n_cols + 10  # the colour scale: a bar right of the cells, vmax on top, vmin below
    scale_label = 6 + 6 * max(len(_fixed2(p["vmax"])), len(_fixed2(p["vmin"])))
    w = scale + 10 + scale_label
    title, n_lines = _title(p["title"], left + cell * n_cols / 2, w)
    top = 10 + 16 * n_lines
    h = top + cell_h * n_rows + 44
    span = (p["vmax"] - p["vmin"]) or 1
    s = f'<svg class="ax-panel ax-heatmap" width="{_num(w)}" height="{_num(h)}" viewBox="0 0 {_num(w)} {_num(h)}" role="img" aria-label="{_esc(p["title"])}">'
    s += title
    for i, row in enumerate(p["values"]):
        for j, v in enumerate(row):
            x, y = left + j * cell, top + i * cell_h
            if p.get("masked") and p["masked"][i][j]:  # no value to read: a plain cell, no number
                s += (f'<rect class="ax-masked" x="{_num(x)}" y="{_num(y)}" width="{cell}" height="{cell_h}" '
                      f'fill="{MASKED}"><title>{_esc(p["rows"][i])} → {_esc(p["cols"][j])}: masked</title></rect>')
                continue
            css, light = _color(p["cmap"], (v - p["vmin"]) / span)
            s += (f'<rect x="{_num(x)}" y="{_num(y)}" width="{cell}" height="{cell_h}" fill="{css}" data-value="{_num(v)}">'
                  f'<title>{_esc(p["rows"][i])} → {_esc(p["cols"][j])}: {_num(v)}</title></rect>')
            if p["annotate"]:
                s += (f'<text class="ax-cell" x="{_num(x + cell / 2)}" y="{_num(y + cell_h / 2 + 4)}" text-anchor="middle" '
                      f'font-size="{cell_font}" fill="{"#000" if light else "#fff"}">{_fixed2(v)}</text>')
    for i, r in enumerate(p["rows"]):
        s += f'<text x="{_num(left - 5)}" y="{_num(top + i * cell_h + cell_h / 2 + 4)}" text-anchor="end" font-size="11">{_esc(r)}</text>'
    for j, c in enumerate(p["cols"]):
        s += f'<text x="{_num(left + j * cell + cell / 2)}" y="{_num(top + cell_h * n_rows + 15)}" text-anchor="middle" font-size="{col_font}">{_esc(c)}</text>'
    stops = COLORMAPS.get(p["cmap"], COLORMAPS["viridis"])
    band = cell_h * n_rows / len(stops)
    for k, stop in enumerate(reversed(stops)):
        s += f'<rect class="ax-scale" x="{_num(scale)}" y="{_num(top + k * band)}" width="10" height="{_num(band)}" fill="{stop}"/>'
    s += (f'<text x="{_num(scale + 13)}" y="{_num(top + 8)}" font-size="10">{_fixed2(p["vmax"])}</text>'
          f'<text x="{_num(scale + 13)}" y="{_num(top + cell_h * n_rows)}" font-size="10">{_fixed2(p["vmin"])}</text>')
    s += f'<text x="{_num(left + cell * n_cols / 2)}" y="{_num(h - 6)}" text-anchor="middle" font-size="12">{_esc(p["xlabel"])}</text>'
    s += f'<text transform="translate(11,{_num(top + cell_h * n_rows / 2)}) rotate(-90)" text-anchor="middle" font-size="12">{_esc(p["ylabel"])}</text>'
    return s + "</svg>"


def points(p: dict) -> str:
    size, left = 210, 44
    w = left + size + 16
    title, n_lines = _title(p["title"], left + size / 2, w)
    top = 10 + 16 * n_lines
    h = top + size + 40
    lim = p["lim"]
    X, Y = _square(lim, left, top, size)
    s = (f'<svg class="ax-panel ax-points" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
         f'aria-label="{_esc(p["title"])}" data-square="{_square_data(left, top, size, lim)}">')
    s += title
    s += f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="none" stroke="#444"/>'
    t = math.ceil(-lim)
    while t <= lim:
        s += (f'<line x1="{_num(X(t))}" y1="{top}" x2="{_num(X(t))}" y2="{top + size}" stroke="#ddd"/>'
              f'<line x1="{left}" y1="{_num(Y(t))}" x2="{left + size}" y2="{_num(Y(t))}" stroke="#ddd"/>')
        s += (f'<text x="{_num(X(t))}" y="{top + size + 14}" text-anchor="middle" font-size="10">{_num(t)}</text>'
              f'<text x="{left - 4}" y="{_num(Y(t) + 3)}" text-anchor="end" font-size="10">{_num(t)}</text>')
        t += 1
    for i, (x, y) in enumerate(p["xy"]):
        s += (f'<circle class="ax-entity" data-entity="{i}" cx="{_num(X(x))}" cy="{_num(Y(y))}" r="4.5" fill="#1f77b4" '
              f'data-x="{_num(x)}" data-y="{_num(y)}"/>')
        if i in p["highlight"]:
            s += f'<circle cx="{_num(X(x))}" cy="{_num(Y(y))}" r="9" fill="none" stroke="#d62728" stroke-width="2"/>'
        s += f'<text x="{_num(X(x) + 7)}" y="{_num(Y(y) - 6)}" font-size="11">{_esc(p["labels"][i])}</text>'
    s += f'<text x="{_num(left + size / 2)}" y="{h - 6}" text-anchor="middle" font-size="12">{_esc(p["xlabel"])}</text>'
    s += f'<text transform="translate(12,{_num(top + size / 2)}) rotate(-90)" text-anchor="middle" font-size="12">{_esc(p["ylabel"])}</text>'
    return s + "</svg>"


def _ticks(lim: float, left: float, top: float, size: float) -> str:
    """Tick marks and labels at the whole world units inside [-lim, lim], under and left of an arena's square."""
    X, Y = _square(lim, left, top, size)
    s = ""
    t = math.ceil(-lim)
    while t <= lim:
        s += (f'<line x1="{_num(X(t))}" y1="{top + size}" x2="{_num(X(t))}" y2="{top + size + 4}" stroke="#444"/>'
              f'<line x1="{left - 4}" y1="{_num(Y(t))}" x2="{left}" y2="{_num(Y(t))}" stroke="#444"/>'
              f'<text x="{_num(X(t))}" y="{top + size + 14}" text-anchor="middle" font-size="9">{_num(t)}</text>'
              f'<text x="{left - 6}" y="{_num(Y(t) + 3)}" text-anchor="end" font-size="9">{_num(t)}</text>')
        t += 1
    return s


def arena(p: dict) -> str:
    size, left = 260, 40
    w = left + size + 10
    title, n_lines = _title(p["title"], left + size / 2, w)
    top = 10 + 16 * n_lines
    h = top + size + 36
    lim = p["lim"]
    X, Y = _square(lim, left, top, size)

    def R(r: float) -> float:
        return (r / (2 * lim)) * size

    s = (f'<svg class="ax-panel ax-arena" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
         f'aria-label="{_esc(p["title"])}" data-square="{_square_data(left, top, size, lim)}">')
    s += title
    s += f'<rect x="{left}" y="{top}" width="{size}" height="{size}" fill="#fafafa" stroke="#444"/>'
    cells = p.get("cells", 0)
    for k in range(1, cells):  # a grid world's cell borders
        v = -lim + k * (2 * lim / cells)
        s += (f'<line x1="{_num(X(v))}" y1="{top}" x2="{_num(X(v))}" y2="{top + size}" stroke="{GRID_LINE}"/>'
              f'<line x1="{left}" y1="{_num(Y(v))}" x2="{left + size}" y2="{_num(Y(v))}" stroke="{GRID_LINE}"/>')
    if p.get("shade") is not None:
        x0, y0, x1, y1 = shade_box(p["shade"], lim)
        s += (f'<rect class="ax-shade" x="{_num(X(x0))}" y="{_num(Y(y1))}" width="{_num(X(x1) - X(x0))}" '
              f'height="{_num(Y(y0) - Y(y1))}" fill="{SHADE}" fill-opacity="{_num(SHADE_OPACITY)}"/>')
    s += _ticks(lim, left, top, size)
    for i, (x, y) in enumerate(p["xy"]):
        r = p["radius"][i]
        s += (f'<circle class="ax-entity" data-entity="{i}" cx="{_num(X(x))}" cy="{_num(Y(y))}" r="{_num(R(r))}" '
              f'fill="{_esc(p["colors"][i])}" fill-opacity="0.85"/>')
        if p["emphasis"][i] > 0:
            s += (f'<circle class="ax-emphasis" cx="{_num(X(x))}" cy="{_num(Y(y))}" r="{_num(R(r + 0.04))}" fill="none" '
                  f'stroke="#d62728" stroke-width="3" stroke-opacity="{_num(p["emphasis"][i])}"/>')
        if i == p["focus"]:
            s += f'<circle cx="{_num(X(x))}" cy="{_num(Y(y))}" r="{_num(R(r + 0.02))}" fill="none" stroke="#000" stroke-width="2"/>'
    # labels after every disc, placed so that none overprints another (attnmarl.notebook.labels); a white halo
    # keeps one readable on a disc
    places = label_positions([(X(x), Y(y)) for x, y in p["xy"]], [R(r) for r in p["radius"]], p["labels"], 9,
                             (left, top, left + size, top + size))
    for (lx, ly), label in zip(places, p["labels"]):
        s += (f'<text x="{_num(lx)}" y="{_num(ly + 3)}" text-anchor="middle" font-size="9" paint-order="stroke" '
              f'stroke="#fff" stroke-width="2.5" stroke-opacity="0.8">{_esc(label)}</text>')
    s += f'<text x="{_num(left + size / 2)}" y="{h - 6}" text-anchor="middle" font-size="12">x</text>'
    s += f'<text transform="translate(12,{_num(top + size / 2)}) rotate(-90)" text-anchor="middle" font-size="12">y</text>'
    return s + "</svg>"


def picture(p: dict) -> str:
    top, scale = 26, p["scale"]
    w, h = p["width"] * scale, p["height"] * scale
    s = f'<svg class="ax-panel ax-picture" width="{_num(w + 8)}" height="{_num(top + h + 8)}" viewBox="0 0 {_num(w + 8)} {_num(top + h + 8)}" role="img" aria-label="{_esc(p["title"])}">'
    s += f'<text x="{_num(4 + w / 2)}" y="16" text-anchor="middle" font-weight="600" font-size="13">{_esc(p["title"])}</text>'
    s += f'<image x="4" y="{top}" width="{_num(w)}" height="{_num(h)}" href="{p["png"]}" style="image-rendering:pixelated"/>'
    for row, col, height, width in p["boxes"]:
        s += (f'<rect x="{_num(4 + col * scale)}" y="{_num(top + row * scale)}" width="{_num(width * scale)}" '
              f'height="{_num(height * scale)}" fill="none" stroke="#d62728" stroke-width="2"/>')
    return s + "</svg>"


def text(p: dict) -> str:
    return f'<div class="ax-panel ax-text"><div class="ax-text-title">{_esc(p["title"])}</div><pre>{_esc(p["text"])}</pre></div>'


PANELS = {"heatmap": heatmap, "points": points, "arena": arena, "picture": picture, "text": text}


def render_panels(frame: dict) -> str:
    """The markup of a frame's panels, side by side (the inside of ``.ax-panels``)."""
    return "".join(PANELS[p["type"]](p) for p in frame["panels"])
