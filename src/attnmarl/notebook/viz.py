"""Figures shared by the chapters: labelled heatmaps (after d2l's ``show_heatmaps``), point
clouds, and the panels of an explorer frame (see :mod:`attnmarl.notebook.widgets`).

Figures are made with pyplot, so that a notebook shows them like any other figure (the live
explorers do not use matplotlib: they draw SVG, see :mod:`attnmarl.notebook.svg`).

The book's palette and figure style live here too: one colour per design (:data:`DESIGN_COLOURS`),
actors and critics told apart by line style (:data:`ROLE_STYLES`), baselines in black and grey
(:data:`BASELINE_STYLES`, :data:`BASELINE_BARS`), and text sizes of at least :data:`MIN_FONT_PT`
(:data:`BOOK_STYLE`, applied on import), so that every figure reads at 9 px or more in a 1280 px window.
"""
from __future__ import annotations

import base64
import html
import io
import math
import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import matplotlib.pyplot as plt
import numpy as np
from matplotlib import patheffects
from matplotlib.animation import Animation
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.image import AxesImage
from matplotlib.text import Text as TextArtist
from matplotlib.transforms import IdentityTransform
from PIL import Image

from ..checks import check_bool, check_int, check_real
from ..stats import Interval
from ..stats import verdict as interval_verdict
from .labels import label_positions

__all__ = ["animation_html", "sup", "Heatmap", "Points", "Arena", "Picture", "Text", "Frame", "frame_spec",
           "SHOWN_DIGITS", "heatmap", "show_heatmaps", "draw_frame", "plot_seed_band", "lead_panel",
           "DESIGN_COLOURS", "RUN_COLOURS", "ROLE_STYLES",
           "BASELINE_STYLES", "BASELINE_BARS", "HIGHLIGHT", "design_colour", "run_colour", "baseline_line",
           "keep_in_view", "BOOK_STYLE", "MIN_FONT_PT", "FIGURE_DPI", "MAX_FIGURE_WIDTH", "use_book_style",
           "PIXEL_DENSITY", "FIGURE_COLOURS", "figure_png", "use_sharp_figures",
           "MAX_HEATMAP_CELLS", "MASKED", "seed_strip"]

# ---- the book's palette and figure style ---------------------------------------------------------

DESIGN_COLOURS = {
    "flat": "#7f7f7f",       # an MLP on one agent's own o^i (chapters 8, 10)
    "concat": "#1f77b4",     # concatenation: all agents' vectors joined (fig. 17.7)
    "attention": "#9467bd",  # the source's design: self-attention over agents (figs. 17.8-17.9)
    "entity": "#d62728",     # the book's entity actor: attention over one agent's entity tokens
    "absolute": "#e377c2",   # entity attention on absolute (not egocentric) tokens (chapter 8)
    "mean": "#17becf",       # the entity actor with alpha uniform: mean pooling, the control (chapters 8, 10)
    "mat": "#393b79",        # the Multi-Agent Transformer: the team as a sequence (chapter 13)
    "matdec": "#8c6d31",     # MAT-Dec: MAT's encoder as critic, decentralized actors (chapter 13)
}
"""One colour per network design, the same in every figure of the book (matplotlib's tab10 hues; chapter 13's
two designs, which came after tab10 ran out, take tab20b's).
A design keeps its colour whether it is a critic or an actor; :data:`ROLE_STYLES` tells those apart."""

RUN_COLOURS = {
    "transfer": "#ff7f0e",    # an entity actor trained at one m, run at another (chapter 10)
    "curriculum": "#8c564b",  # an entity actor trained on m = 3 -> 6 -> 12 (chapter 10)
    "maac": "#2ca02c",        # numbers reported by the MAAC paper, not measured here
    "discrete": "#bcbd22",    # a discrete-action policy drawn beside continuous ones for reference (chapter 8)
    "shuffled": "#6b6ecf",    # MAT trained in a random decision order per rollout: a lighter MAT (chapter 13)
}
"""Colours of the other kinds of curves the book draws: none of them is one of the designs' colours."""

GRID_LINE, SHADE, SHADE_OPACITY = "#e0e0e0", "#4c72b0", 0.12
"""An arena's cell lines and shaded square (a grid player's sight, in the players' blue), in every renderer."""

MASKED = "#f0f0f0"
"""The fill of a heatmap's masked cells (no value to read there, as a causal mask's future), in every renderer."""

HIGHLIGHT = "#d62728"
"""The red of rings and boxes that mark what attention picks (a glimpse, an agent's weights in an arena)."""

ROLE_STYLES = {"actor": {"ls": "-", "marker": "o"}, "critic": {"ls": "--", "marker": "s"}}
"""Critics and actors of one design share its colour: actors solid with round markers, critics dashed
with square ones."""

BASELINE_STYLES = {
    "random": {"color": "black", "ls": ":", "lw": 1},
    "greedy": {"color": "black", "ls": "--", "lw": 1},
    "steered": {"color": "#555555", "ls": "-.", "lw": 1},
    "script": {"color": "black", "ls": "--", "lw": 1},
}
"""Reference lines: the random team, the greedy assignment (the top of the "share closed" scale),
chapter 6's steered assignment, and a scenario's scripted team; black or grey, never a design's colour."""


BASELINE_BARS = {
    "random": {"facecolor": "white", "edgecolor": "black", "hatch": "..."},
    "greedy": {"facecolor": "#333333", "edgecolor": "black"},
    "steered": {"facecolor": "white", "edgecolor": "black", "hatch": "///"},
}
"""The same baselines as bars: black, grey and white, hatched, never a design's colour."""


def design_colour(design: str) -> str:
    """The colour of a design (:data:`DESIGN_COLOURS`); a ValueError names the designs for any other."""
    if design not in DESIGN_COLOURS:
        raise ValueError(f"no colour for design {design!r}; the designs are {sorted(DESIGN_COLOURS)}")
    return DESIGN_COLOURS[design]


def run_colour(kind: str) -> str:
    """The colour of a kind of run that is not a design (:data:`RUN_COLOURS`)."""
    if kind not in RUN_COLOURS:
        raise ValueError(f"no colour for {kind!r}; the kinds are {sorted(RUN_COLOURS)}")
    return RUN_COLOURS[kind]


def baseline_line(ax: Axes, y: float, baseline: str, label: str | None = None, **kwargs) -> None:
    """A horizontal reference line at ``y`` in the style of ``baseline`` (:data:`BASELINE_STYLES`)."""
    if baseline not in BASELINE_STYLES:
        raise ValueError(f"no style for baseline {baseline!r}; the baselines are {sorted(BASELINE_STYLES)}")
    ax.axhline(y, **{**BASELINE_STYLES[baseline], **kwargs}, label=label)


def keep_in_view(ax: Axes, low: float, high: float, room: float = 0.5) -> None:
    """Limit the y-axis to the range ``low`` -> ``high`` (say the random and greedy baselines) widened by
    ``room`` of it on each side, so that one early dip of a learning curve does not squeeze everything else
    into a thin band. Only a side that a curve (a line, not a shaded band) crosses is cut, and what runs off
    is said on the axis, in a corner on the right (early dips are on the left): "↓ off the axis, down to -80"."""
    if not high > low:
        raise ValueError(f"keep_in_view needs low < high; got {low} and {high}")
    span = high - low
    lines = [np.asarray(line.get_ydata(), dtype=float).ravel() for line in ax.get_lines()]
    values = np.concatenate(lines) if lines else np.array([ax.dataLim.y0, ax.dataLim.y1])
    data_low, data_high = float(np.nanmin(values)), float(np.nanmax(values))  # the curves, not their bands
    bottom, top = ax.get_ylim()
    new_bottom = low - room * span if data_low < low - room * span else bottom
    new_top = high + room * span if data_high > high + room * span else top
    ax.set_ylim(new_bottom, new_top)
    if data_low < new_bottom:
        ax.text(0.98, 0.02, f"↓ off the axis, down to {data_low:.0f}", transform=ax.transAxes, fontsize=MIN_FONT_PT,
                ha="right", va="bottom", color="#555555")
    if data_high > new_top:
        ax.text(0.98, 0.98, f"↑ off the axis, up to {data_high:.0f}", transform=ax.transAxes, fontsize=MIN_FONT_PT,
                ha="right", va="top", color="#555555")


FIGURE_DPI = 100
"""Pixels per inch of a figure as the page shows it (the inline backend's PNG at the figure's dpi)."""

MAX_FIGURE_WIDTH = 7.5
"""Inches: the widest figure the text column of a 1280 px window shows at full size (the column is
752 px wide); a wider one is shrunk to fit, and its text with it."""

MIN_FONT_PT = 8
"""Points: the smallest text in a figure, 8 pt = 11 px at :data:`FIGURE_DPI`. A figure at most
:data:`MAX_FIGURE_WIDTH` wide is not shrunk at 1280 px, so its smallest text is 11 px there (at least
9 px as long as a figure is shrunk by no more than a factor 0.81)."""

BOOK_STYLE = {
    "figure.dpi": FIGURE_DPI, "savefig.dpi": "figure", "font.size": 10, "axes.titlesize": 11,
    "axes.labelsize": 10, "xtick.labelsize": 9, "ytick.labelsize": 9, "legend.fontsize": 9,
    "legend.title_fontsize": 9, "figure.titlesize": 11, "figure.labelsize": 10,
}
"""matplotlib settings of every figure of the book: the dpi the page assumes and text sizes of at
least :data:`MIN_FONT_PT` (set when this module is imported; see :func:`use_book_style`)."""


def use_book_style() -> None:
    """Apply :data:`BOOK_STYLE` to matplotlib (done once on import; call again after ``rcdefaults``)."""
    plt.rcParams.update(BOOK_STYLE)


use_book_style()

PIXEL_DENSITY = 2
"""Image pixels per CSS pixel of the book's figures: a figure's PNG has twice the pixels of the size it is shown
at, so that it stays sharp on high-density screens (phones, laptops with 2x displays)."""

FIGURE_COLOURS = 256
"""Colours of a figure's PNG (a palette image): with them a figure at :data:`PIXEL_DENSITY` weighs less than the
same figure in full colour at 1x (flat plot colours, few anti-aliased shades)."""


def figure_png(figure: Figure) -> tuple[bytes, dict[str, int]]:
    """``figure`` as the page shows it: a PNG at :data:`PIXEL_DENSITY` times :data:`FIGURE_DPI`, with
    :data:`FIGURE_COLOURS` colours, and the size to show it at (in CSS pixels, the size of a 1x image), which
    the book build writes as the image's width and height. IPython's PNG formatter for figures (see
    :func:`use_sharp_figures`); the same (data, metadata) pair as matplotlib-inline's "retina" format."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=PIXEL_DENSITY * figure.dpi, bbox_inches="tight")
    image = Image.open(buffer)
    palette = image.convert("RGB").quantize(FIGURE_COLOURS, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE)
    out = io.BytesIO()
    palette.save(out, format="PNG", optimize=True, dpi=(PIXEL_DENSITY * figure.dpi,) * 2)
    width, height = image.size
    return out.getvalue(), {"width": width // PIXEL_DENSITY, "height": height // PIXEL_DENSITY}


def use_sharp_figures() -> None:
    """In IPython (a notebook, the book build), show figures with :func:`figure_png` instead of a 1x PNG. Done on
    import; the inline backend is set up first, since setting it up installs its own formatter."""
    try:
        from IPython import get_ipython
    except ImportError:
        return
    shell = get_ipython()
    if shell is None or not hasattr(shell, "display_formatter"):
        return
    if "inline" in str(plt.get_backend()):
        import matplotlib_inline.backend_inline  # noqa: F401  (sets up the inline backend, once)
    shell.display_formatter.formatters["image/png"].for_type(Figure, figure_png)


use_sharp_figures()

_SUPERSCRIPTS = str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹")


def sup(i: int) -> str:
    """The superscript of an agent/input index for labels, e.g. sup(12) == '¹²' (so f"x{sup(3)}" is x³)."""
    return str(i).translate(_SUPERSCRIPTS)


MAX_HEATMAP_CELLS = 40_000
"""The most cells a :class:`Heatmap` may have (200 x 200): a figure cannot show more, and the page's drawing of
one cell per value grew to a gigabyte of markup and a minute of drawing at four million."""


@dataclass
class Heatmap:
    """A labelled matrix: rows are queries, columns are keys (for alpha). ``masked``, None or a boolean matrix of
    the values' shape, marks cells that hold no value to read (a key a causal mask hides): every renderer draws them
    in :data:`MASKED` without a number."""

    values: np.ndarray
    rows: Sequence[str]
    cols: Sequence[str]
    title: str = ""
    xlabel: str = "key"
    ylabel: str = "query"
    vmin: float = 0.0
    vmax: float = 1.0
    cmap: str = "viridis"
    annotate: bool = True
    masked: np.ndarray | None = None

    def __post_init__(self) -> None:
        try:
            self.values = np.asarray(self.values, dtype=float)
        except (TypeError, ValueError):
            raise ValueError(f"heatmap values must be a matrix of numbers, rows of equal length; got "
                             f"{self.values!r:.80}") from None
        if self.values.shape != (len(self.rows), len(self.cols)):
            raise ValueError(
                f"heatmap values of shape {self.values.shape} do not match {len(self.rows)} row and "
                f"{len(self.cols)} column labels"
            )
        if self.values.size > MAX_HEATMAP_CELLS:
            raise ValueError(f"heatmap {self.title!r} would draw {self.values.shape[0]:,} x {self.values.shape[1]:,} = "
                             f"{self.values.size:,} cells, more than a figure can show (at most "
                             f"{MAX_HEATMAP_CELLS:,}); show fewer rows or columns")
        self.vmin, self.vmax = check_real("heatmap vmin", self.vmin), check_real("heatmap vmax", self.vmax)
        if not self.vmin < self.vmax:  # an empty or reversed colour scale draws every value in one colour
            raise ValueError(f"heatmap vmin must be below vmax (the colour scale runs from vmin to vmax); got "
                             f"vmin = {self.vmin:g}, vmax = {self.vmax:g}")
        self.annotate = check_bool("heatmap annotate", self.annotate)
        if self.masked is not None:
            masked = np.asarray(self.masked)
            if masked.dtype != bool or masked.shape != self.values.shape:
                raise ValueError(f"heatmap masked must be None or a boolean matrix of the values' shape "
                                 f"{self.values.shape}; got {masked.dtype} of shape {masked.shape}")
            self.masked = masked


MAX_LIM = 1000.0
"""The largest half-width of a drawn square (:class:`Points`, :class:`Arena`): the renderers draw a grid
line at every integer inside it, so a larger one would take for ever to draw."""


@dataclass
class Points:
    """Labelled points in the plane; ``highlight`` marks some of them (e.g. the one being moved)."""

    xy: np.ndarray
    labels: Sequence[str]
    title: str = ""
    xlabel: str = "1st coordinate"
    ylabel: str = "2nd coordinate"
    lim: float = 3.0
    highlight: Sequence[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.xy = np.asarray(self.xy, dtype=float)
        if self.xy.ndim != 2 or self.xy.shape != (len(self.labels), 2):
            raise ValueError(
                f"points need xy of shape (n, 2) with n labels; got {self.xy.shape} and {len(self.labels)}")
        self.lim = check_real("points lim", self.lim, 0.0, MAX_LIM, low_open=True)


@dataclass
class Arena:
    """An MPE-style arena: entities as circles of their true radius (world units).

    ``emphasis`` in [0, 1] per entity draws a red ring of that opacity (for example the attention
    the ``focus`` entity gives to each other one); ``focus`` is ringed in black. A grid world (chapter 12's
    Level-Based Foraging) adds ``cells``, the lines between its cells, and ``shade``, a square such as a player's
    sight, both under the entities.
    """

    xy: np.ndarray
    radius: Sequence[float]
    colors: Sequence[str]
    labels: Sequence[str]
    emphasis: Sequence[float] | None = None
    focus: int | None = None
    title: str = ""
    lim: float = 1.5
    cells: int = 0
    """Cells across the square [-lim, lim] (0: no grid): a thin line between each two neighbouring cells."""
    shade: tuple[float, float, float] | None = None
    """A square (x, y, half-width) shaded under the entities, cut at the arena's edge."""

    def __post_init__(self) -> None:
        self.xy = np.asarray(self.xy, dtype=float)
        n = len(self.labels)
        self.emphasis = [0.0] * n if self.emphasis is None else [float(e) for e in self.emphasis]
        if self.xy.shape != (n, 2) or len(self.radius) != n or len(self.colors) != n or len(self.emphasis) != n:
            raise ValueError(
                f"an arena needs xy (n, 2) and n radii, colours, labels and emphases; got xy {self.xy.shape}, "
                f"{len(self.radius)} radii, {len(self.colors)} colours, {n} labels, {len(self.emphasis)} emphases"
            )
        if not all(0.0 <= e <= 1.0 for e in self.emphasis):
            raise ValueError("arena emphasis values must lie in [0, 1]")
        self.lim = check_real("arena lim", self.lim, 0.0, MAX_LIM, low_open=True)
        if self.focus is not None and not 0 <= self.focus < n:
            raise ValueError(f"focus {self.focus} is not an entity index (0..{n - 1})")
        self.cells = check_int("arena cells", self.cells, minimum=0, maximum=int(2 * MAX_LIM))
        if self.shade is not None:
            if len(self.shade) != 3:
                raise ValueError(f"an arena's shade is a square (x, y, half-width); got {self.shade!r}")
            x, y, half = self.shade
            self.shade = (check_real("shade x", x), check_real("shade y", y),
                          check_real("shade half-width", half, 0.0, low_open=True))


def shade_box(shade: Sequence[float], lim: float) -> tuple[float, float, float, float]:
    """A square (x, y, half-width) cut to [-lim, lim]²: its corners (x0, y0, x1, y1); ``shadeBox`` in
    ``static/explorer.js`` and :mod:`attnmarl.notebook.svg` compute the same."""
    x, y, half = shade
    return max(x - half, -lim), max(y - half, -lim), min(x + half, lim), min(y + half, lim)


@dataclass
class Picture:
    """An image: ``rgb`` (H, W, 3) with values in [0, 1], drawn with square pixels, ``scale`` screen pixels
    per image pixel. ``boxes`` are red outlines (row, col, height, width) in image pixels, for example
    a glimpse."""

    rgb: np.ndarray
    title: str = ""
    scale: int = 8
    boxes: Sequence[tuple[int, int, int, int]] = ()

    def __post_init__(self) -> None:
        self.rgb = np.asarray(self.rgb, dtype=float)
        if self.rgb.ndim != 3 or self.rgb.shape[2] != 3:
            raise ValueError(f"a picture needs rgb of shape (H, W, 3); got {self.rgb.shape}")
        if not (np.isfinite(self.rgb).all() and self.rgb.min() >= 0.0 and self.rgb.max() <= 1.0):
            raise ValueError("a picture's rgb values must be finite and lie in [0, 1]")
        self.boxes = [tuple(int(v) for v in box) for box in self.boxes]
        if any(len(box) != 4 for box in self.boxes):
            raise ValueError(f"picture boxes are (row, col, height, width); got {self.boxes}")


def png_data_uri(rgb: np.ndarray) -> str:
    """An (H, W, 3) image with values in [0, 1] as a PNG ``data:`` URI (a page needs no file beside it)."""
    buffer = io.BytesIO()
    Image.fromarray(np.round(np.asarray(rgb) * 255).astype(np.uint8)).save(buffer, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


@dataclass
class Text:
    """A short monospaced text block."""

    text: str
    title: str = ""


Panel = Heatmap | Points | Arena | Picture | Text


@dataclass
class Frame:
    """What an explorer shows for one setting of its controls: panels side by side and a caption."""

    panels: list[Panel]
    caption: str = ""

    def __post_init__(self) -> None:
        """Refuse panels that no renderer draws (a string failed later, in ``dataclasses.asdict``)."""
        if not isinstance(self.panels, (list, tuple)) or not all(isinstance(p, Panel) for p in self.panels):
            kinds = ", ".join(kind.__name__ for kind in Panel.__args__)
            got = ([type(p).__name__ for p in self.panels if not isinstance(p, Panel)]
                   if isinstance(self.panels, (list, tuple)) else type(self.panels).__name__)
            raise ValueError(f"a frame's panels must be a list of panels ({kinds}); got {got}")


def _rounded(values: np.ndarray, digits: int) -> list:
    return np.round(np.asarray(values, dtype=float), digits).tolist()


def _check_drawable(panel: Panel) -> None:
    """Raise ``ValueError`` naming the panel and the field if a number it draws is NaN or infinite: it
    has no place on the page, and the static face's JSON cannot hold it (the page would stay blank)."""
    for name in ("values", "vmin", "vmax", "xy", "radius", "lim"):
        if hasattr(panel, name) and not np.isfinite(np.asarray(getattr(panel, name), dtype=float)).all():
            raise ValueError(f"the {type(panel).__name__.lower()} panel {panel.title!r} has NaN or infinite {name}; "
                             "an explorer draws finite numbers only")


SHOWN_DIGITS = 2
"""Decimals of the numbers a static explorer shows only as colours, opacities and two-decimal labels: a heatmap's
values whose colour range is 1 wide (one more decimal for each tenth of that: a range 0.1 wide gets 3) and an
arena's ring opacities. A step of 0.01 moves a colour by under 3 of the colour map's 256 levels, less than the
eye tells apart, and the labels print two decimals anyway; it halves what the page carries for an explorer of
many frames."""


def _colour_digits(panel: Heatmap, digits: int) -> int:
    """:data:`SHOWN_DIGITS` for a colour range 1 wide, one more for each tenth narrower, at most ``digits``."""
    span = float(panel.vmax) - float(panel.vmin)
    return min(digits, SHOWN_DIGITS + (max(0, -math.floor(math.log10(span))) if span > 0 else 0))


def frame_spec(frame: Frame, digits: int = 4, shown: bool = False) -> dict:
    """A frame as plain JSON-ready data, numbers rounded to ``digits`` decimals: what both
    explorer renderers (``attnmarl.notebook.svg`` live, ``static/explorer.js`` static) draw. With ``shown`` (a static
    face's frames), heatmap values and ring opacities only to what the page can show (:data:`SHOWN_DIGITS`)."""
    if not isinstance(frame, Frame):
        raise ValueError(f"an explorer's frame function must return a Frame; got {type(frame).__name__}")
    panels = []
    for panel in frame.panels:
        _check_drawable(panel)
        data = asdict(panel)
        if isinstance(panel, Heatmap):
            value_digits = _colour_digits(panel, digits) if shown else digits
            data.update(type="heatmap", values=_rounded(panel.values, value_digits), rows=list(map(str, panel.rows)),
                        cols=list(map(str, panel.cols)), vmin=float(panel.vmin), vmax=float(panel.vmax))
            if panel.masked is None:  # the key only where a cell is masked: the pages' own frames leave it out
                data.pop("masked")
            else:
                data["masked"] = panel.masked.tolist()
        elif isinstance(panel, Points):
            data.update(type="points", xy=_rounded(panel.xy, digits), labels=list(map(str, panel.labels)),
                        highlight=[int(i) for i in panel.highlight], lim=float(panel.lim))
        elif isinstance(panel, Arena):
            data.update(type="arena", xy=_rounded(panel.xy, digits), radius=_rounded(panel.radius, digits),
                        colors=list(map(str, panel.colors)), labels=list(map(str, panel.labels)),
                        emphasis=_rounded(panel.emphasis, min(digits, SHOWN_DIGITS) if shown else digits),
                        lim=float(panel.lim), cells=int(panel.cells),
                        shade=None if panel.shade is None else _rounded(panel.shade, digits),
                        focus=-1 if panel.focus is None else int(panel.focus))
        elif isinstance(panel, Picture):
            data.pop("rgb")
            data.update(type="picture", png=png_data_uri(panel.rgb), height=int(panel.rgb.shape[0]),
                        width=int(panel.rgb.shape[1]), scale=int(panel.scale), boxes=[list(b) for b in panel.boxes])
        else:
            data.update(type="text")
        panels.append(data)
    return {"panels": panels, "caption": frame.caption}




def heatmap(ax: Axes, panel: Heatmap, colorbar: bool = False, annotate_below: float = 0.3) -> AxesImage:
    """Draw ``panel`` on ``ax`` with labelled rows and columns (and its own colour bar if asked);
    the values are written in the cells when the panel asks for it and the cells are at least
    ``annotate_below`` inches wide."""
    masked = np.zeros(panel.values.shape, bool) if panel.masked is None else panel.masked
    cmap = plt.get_cmap(panel.cmap).with_extremes(bad=MASKED)
    image = ax.imshow(np.ma.masked_array(panel.values, masked), cmap=cmap, vmin=panel.vmin, vmax=panel.vmax,
                      aspect="equal")
    ax.set_xticks(range(len(panel.cols)), panel.cols)
    ax.set_yticks(range(len(panel.rows)), panel.rows)
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    ax.set_title(panel.title)
    ax.tick_params(length=0)
    cell_inches = ax.get_position().width * ax.figure.get_figwidth() / max(1, len(panel.cols))
    if panel.annotate and cell_inches >= annotate_below:
        span = panel.vmax - panel.vmin or 1.0
        for (i, j), value in np.ndenumerate(panel.values):
            if masked[i, j]:
                continue
            dark = (value - panel.vmin) / span < 0.6 if panel.cmap == "viridis" else abs(value) / span > 0.3
            ax.text(j, i, f"{value:.2f}", ha="center", va="center", fontsize=8, color="white" if dark else "black")
    if colorbar:
        ax.figure.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    return image


def points(ax: Axes, panel: Points) -> None:
    """Draw labelled points on ``ax``, highlighted ones ringed in red."""
    ax.scatter(panel.xy[:, 0], panel.xy[:, 1], s=40, color="tab:blue", zorder=2)
    for index, (x, y) in enumerate(panel.xy):
        ax.annotate(panel.labels[index], (x, y), textcoords="offset points", xytext=(5, 5), fontsize=9)
    if len(panel.highlight):
        ring = panel.xy[list(panel.highlight)]
        ax.scatter(ring[:, 0], ring[:, 1], s=160, facecolors="none", edgecolors=HIGHLIGHT, linewidths=2, zorder=3)
    ax.set_xlim(-panel.lim, panel.lim)
    ax.set_ylim(-panel.lim, panel.lim)
    ax.set_aspect("equal")
    ax.grid(alpha=0.3)
    ax.set_xlabel(panel.xlabel)
    ax.set_ylabel(panel.ylabel)
    ax.set_title(panel.title)


class _ArenaLabels(Artist):
    """An arena's labels, placed when the figure is drawn, its layout final, by
    :func:`attnmarl.notebook.labels.label_positions` on the pixels drawn (as the explorers place theirs), so that
    an agent standing on a landmark and the landmark keep their labels apart."""

    def __init__(self, panel: Arena, fontsize: float = 8) -> None:
        super().__init__()
        self.set_zorder(5)
        self.xy, self.radius, self.fontsize = panel.xy, list(panel.radius), fontsize
        halo = [patheffects.withStroke(linewidth=2, foreground="white", alpha=0.8)]
        self.texts = [TextArtist(0, 0, label, ha="center", va="center", fontsize=fontsize,
                           path_effects=halo, transform=IdentityTransform()) for label in panel.labels]

    def draw(self, renderer) -> None:
        ax, height = self.axes, self.figure.bbox.height  # labels.py works in pixels with y downwards
        centres = ax.transData.transform(self.xy)
        edges = ax.transData.transform(self.xy + np.c_[self.radius, np.zeros(len(self.radius))])
        box, labels = ax.bbox, [t.get_text() for t in self.texts]
        bounds = (box.x0, height - box.y1, box.x1, height - box.y0)
        places = label_positions([(x, height - y) for x, y in centres], list(edges[:, 0] - centres[:, 0]), labels,
                                 renderer.points_to_pixels(self.fontsize), bounds)
        for text, (x, y) in zip(self.texts, places):
            text.set_figure(self.figure)
            text.set_position((x, height - y))
            text.draw(renderer)


def arena(ax: Axes, panel: Arena) -> None:
    """Draw entities as circles of their radius; emphasis as red rings, the focus ringed in black; under them the
    grid's cells and the shaded square, if any."""
    for k in range(1, panel.cells):
        v = -panel.lim + k * (2 * panel.lim / panel.cells)
        ax.axvline(v, color=GRID_LINE, lw=0.6, zorder=0)
        ax.axhline(v, color=GRID_LINE, lw=0.6, zorder=0)
    if panel.shade is not None:
        x0, y0, x1, y1 = shade_box(panel.shade, panel.lim)
        ax.add_patch(plt.Rectangle((x0, y0), x1 - x0, y1 - y0, color=SHADE, alpha=SHADE_OPACITY, lw=0, zorder=1))
    for index, ((x, y), r) in enumerate(zip(panel.xy, panel.radius)):
        ax.add_patch(plt.Circle((x, y), r, color=panel.colors[index], alpha=0.85, zorder=2))
        if panel.emphasis[index] > 0:
            ax.add_patch(plt.Circle((x, y), r + 0.04, fill=False, lw=3, color=HIGHLIGHT,
                                    alpha=panel.emphasis[index], zorder=3))
        if index == panel.focus:
            ax.add_patch(plt.Circle((x, y), r + 0.02, fill=False, lw=2, color="black", zorder=4))
    ax.add_artist(_ArenaLabels(panel))
    ax.set_xlim(-panel.lim, panel.lim)
    ax.set_ylim(-panel.lim, panel.lim)
    ax.set_aspect("equal")
    ax.set_xlabel("x")
    ax.set_ylabel("y")
    ax.set_title(panel.title)


def picture(ax: Axes, panel: Picture) -> None:
    """Draw an image with square pixels and its boxes as red outlines."""
    ax.imshow(panel.rgb, interpolation="nearest")
    for row, col, height, width in panel.boxes:
        ax.add_patch(plt.Rectangle((col - 0.5, row - 0.5), width, height, fill=False, lw=2, color=HIGHLIGHT))
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_title(panel.title)


def text(ax: Axes, panel: Text) -> None:
    """Draw a text block on an axes without frame."""
    ax.axis("off")
    ax.text(0, 1, panel.text, family="monospace", va="top", ha="left", fontsize=10, transform=ax.transAxes)
    ax.set_title(panel.title)


def _panel_width(panel: Panel) -> float:
    if isinstance(panel, Heatmap):
        return max(2.2, 0.42 * len(panel.cols) + 1.0)
    return 3.2


TEXT_WIDTH = 7.6
"""Inches: the width of the book's text column, so figures are shown at their true size."""


def draw_frame(frame: Frame) -> Figure:
    """Draw a :class:`Frame` as a new figure: its panels side by side, one colour bar per colour
    scale, the caption underneath. Wide frames are shrunk to the book's text width."""
    widths = [_panel_width(p) for p in frame.panels]
    height = max([3.0] + [0.42 * len(p.rows) + 1.3 for p in frame.panels if isinstance(p, Heatmap)])
    shrink = min(1.0, TEXT_WIDTH / (sum(widths) + 0.8))
    fig = plt.figure(figsize=((sum(widths) + 0.8) * shrink, (height + (0.4 if frame.caption else 0)) * shrink),
                     layout="constrained")
    axes = fig.subplots(1, len(frame.panels), width_ratios=widths, squeeze=False)[0]
    fig.canvas.draw()  # fix the layout once, so that heatmap() knows how wide its cells are
    scales: dict[tuple, tuple[AxesImage, list[Axes]]] = {}
    for ax, panel, width in zip(axes, frame.panels, widths):
        if isinstance(panel, Heatmap):
            image = heatmap(ax, panel)
            scales.setdefault((panel.cmap, panel.vmin, panel.vmax), (image, []))[1].append(ax)
        else:
            {Points: points, Arena: arena, Picture: picture, Text: text}[type(panel)](ax, panel)
        room = max(12, int(11 * width * shrink))  # characters: about 11 an inch
        ax.set_title("\n".join(textwrap.fill(line, room) for line in panel.title.splitlines()))
    for image, group in scales.values():
        fig.colorbar(image, ax=group, shrink=0.8, aspect=25)
    if frame.caption:
        fig.supxlabel(frame.caption, fontsize=10)
    return fig


def show_heatmaps(matrices: Sequence[np.ndarray], rows: Sequence[str], cols: Sequence[str],
                  titles: Sequence[str], suptitle: str = "", **kwargs) -> Figure:
    """Several alpha matrices side by side with shared labels (d2l's ``show_heatmaps``)."""
    return draw_frame(Frame([Heatmap(np.asarray(m), rows, cols, title=t, **kwargs) for m, t in zip(matrices, titles)],
                            caption=suptitle))


_BUTTON_ICONS = {"minus": "−", "fast-backward": "|◀", "step-backward": "◂", "play fa-flip-horizontal": "◀",
                 "pause": "❚❚", "play": "▶", "step-forward": "▸", "fast-forward": "▶|", "plus": "+"}
"""Text for the buttons of matplotlib's JavaScript animation player, which draws them with the
Font Awesome icon font from a CDN."""


def animation_html(animation: Animation, alt: str = "") -> str:
    """A matplotlib animation as a self-contained HTML player (``to_jshtml``) that works offline.

    matplotlib's player loads its button icons from a CDN; here the stylesheet link is dropped and
    each icon is replaced by a text symbol, so that the page needs no network. Its frames are stored with
    at most :data:`ANIMATION_COLOURS` colours (a third of the bytes; the page carries every frame).
    ``alt`` describes the animation for readers who cannot see it (the frame's ``<img>`` gets it as its
    alt text).
    """
    markup = animation.to_jshtml(default_mode="once")
    markup = re.sub(r'<img id="', f'<img alt="{html.escape(alt)}" id="', markup, count=1)
    markup = re.sub(r"<link[^>]*font-awesome[^>]*>", "", markup)

    def icon(match: re.Match) -> str:
        name = match.group(1)
        if name not in _BUTTON_ICONS:
            raise ValueError(f"unknown icon {name!r} in matplotlib's animation player")
        return _BUTTON_ICONS[name]

    markup = re.sub(r'<i class="fa fa-([a-z -]+?)"></i>', icon, markup)
    return re.sub(r'(frames\[\d+\] = "data:image/png;base64,)([^"]+)"', _smaller_frame, markup)


ANIMATION_COLOURS = 64
"""Colours of each embedded animation frame: flat discs on white need few, and a frame is a third the size."""


def _smaller_frame(match: re.Match) -> str:
    """One PNG frame of matplotlib's player (base64, its lines continued with backslashes) re-encoded with at
    most :data:`ANIMATION_COLOURS` colours."""
    image = Image.open(io.BytesIO(base64.b64decode(match.group(2).replace("\\\n", ""))))
    buffer = io.BytesIO()
    image.convert("RGB").quantize(ANIMATION_COLOURS).save(buffer, format="PNG", optimize=True)
    return f'{match.group(1)}{base64.b64encode(buffer.getvalue()).decode()}"'


def lead_panel(ax: Axes, leads: Mapping[tuple[Any, str], Interval], groups: Sequence[Any],
               tick_labels: Sequence[str], names: Mapping[str, str], ylabel: str,
               title: str = "attention's lead, 95% interval", legend_loc: str = "best") -> None:
    """Attention minus each compared design ``b`` of ``names`` (design -> its name in the legend) at each of
    ``groups`` (numbers of decoys, team sizes, ...): ``leads[group, b]``, its estimate and 95% interval, side by side
    in b's colour (:data:`DESIGN_COLOURS`). A marker is filled where the difference is resolved (ahead or behind on
    ten seeds a design, :func:`attnmarl.stats.verdict`), open where it is not or is indicative; a grey line marks 0."""
    if len(tick_labels) != len(groups):
        raise ValueError(f"lead_panel needs one tick label per group; got {len(tick_labels)} for {len(groups)}")
    step = 0.22
    for j, b in enumerate(names):
        if b not in DESIGN_COLOURS:
            raise ValueError(f"lead_panel draws each design in its colour of DESIGN_COLOURS; {b!r} has none")
        colour = DESIGN_COLOURS[b]
        for g, group in enumerate(groups):
            e = leads[group, b]
            x = g + (j - (len(names) - 1) / 2) * step
            filled = interval_verdict(e) in ("ahead", "behind")
            ax.plot([x, x], [e.low, e.high], color=colour, lw=1.6)
            ax.plot(x, e.estimate, "o", color=colour, ms=7, markerfacecolor=colour if filled else "white",
                    label=f"attention − {names[b]}" if g == 0 else None)
    ax.axhline(0, color="0.5", lw=1)
    ax.set_xticks(range(len(groups)), tick_labels)
    ax.set_xlim(-0.5, len(groups) - 0.5)
    ax.set_ylabel(ylabel)
    ax.set_title(title)
    ax.legend(loc=legend_loc, fontsize=8)


def seed_strip(ax: Axes, x: float, values: Sequence[float], color: str, half_width: float = 0.08,
               **marker: Any) -> None:
    """One design's seeds at ``x`` of a strip plot: a dot per seed (``marker``: matplotlib's line keywords, a
    round marker by default) and a bar at their mean, ``half_width`` either side, both in ``color``."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 1 or not values.size:
        raise ValueError(f"seed_strip needs one score per seed, at least one; got shape {values.shape}")
    ax.plot(np.full(len(values), x), values, **{"marker": "o", "ls": "none", "color": color, **marker})
    ax.plot([x - half_width, x + half_width], [values.mean()] * 2, color=color, lw=2.2)


def plot_seed_band(ax: Axes, curves: Sequence[dict[str, np.ndarray]], column: str, color: str, label: str,
                   final_offset: float = 0.3, x: str = "env_steps", ls: str = "-") -> None:
    """Learning curves of one configuration over seeds (``curves``: the CSV columns of each seed's run,
    as ``attnmarl.checkpoints.shipped_curve`` returns them) against env steps (or the column ``x``) in millions.

    Thin lines: each seed's evaluations during training; thick: their mean; shaded: ± 1 std over
    seeds. The last row of every curve is the final score over more episodes (``eval_episodes``
    larger than during training): it is drawn apart, ``final_offset`` million steps to the right, as a
    diamond with the mean ± std over seeds, not joined to the line (it is scored on more episodes, of which the
    line's are the first, so the two need not meet).
    ``color`` is a design's (:data:`DESIGN_COLOURS`) or a run's (:data:`RUN_COLOURS`); ``ls`` the mean's line style.
    """
    if color not in (*DESIGN_COLOURS.values(), *RUN_COLOURS.values()):
        raise ValueError(f"plot_seed_band draws in the book's palette (DESIGN_COLOURS, RUN_COLOURS); got {color!r}")
    if not curves:
        raise ValueError("plot_seed_band needs the curves of at least one seed")
    during = curves[0]["eval_episodes"] < curves[0]["eval_episodes"][-1]
    steps = curves[0][x][during] / 1e6
    values = np.array([c[column][during] for c in curves])
    for v in values:
        ax.plot(steps, v, color=color, alpha=0.3, lw=0.8)
    mean = values.mean(0)
    if len(curves) > 1:
        std = values.std(0, ddof=1)
        ax.fill_between(steps, mean - std, mean + std, color=color, alpha=0.15)
    ax.plot(steps, mean, color=color, lw=2, ls=ls, label=label)
    finals = np.array([c[column][-1] for c in curves])
    ax.errorbar(steps[-1] + final_offset, finals.mean(), yerr=finals.std(ddof=1) if len(finals) > 1 else 0.0,
                fmt="D", ms=4, capsize=3, color=color)
