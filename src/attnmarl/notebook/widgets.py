"""Explorers with two faces (DESIGN §4): live ipywidgets in a kernel, kernel-free HTML in the book.

An explorer is a function ``frame_fn(**settings) -> Frame`` (see :mod:`attnmarl.notebook.viz`) and the
controls that choose its arguments. The same call shows

- the **live face** when a kernel is running (Jupyter, JupyterLab, VS Code, Colab): ipywidgets
  controls (works with ipywidgets 7.7 and 8.x) call ``frame_fn`` with the real model and redraw
  the panels with matplotlib;
- the **static face** in the built book: ``frame_fn`` is evaluated for every combination of the
  controls' static values, and the frames are embedded as JSON next to a small SVG renderer
  (``static/explorer.js``). No kernel, no CDN, no network: it works from a file on disk.
- or, for an explorer whose model is small enough to run in the browser (a :class:`PageModel`), the
  **in-page face** instead of the precomputed one: the model's weights and inputs are embedded, and
  ``static/live.js`` computes every frame in the page, for any setting, continuous controls
  (:class:`Range`) included; a twin of ``frame_fn`` in JavaScript, held to it by tests in Chromium. There the
  figure is a control too: the reader drags an entity or moves it with the keyboard (``static/drag.js``), and the
  controls follow.

The book build selects the static face on its own: the Sphinx extension
:mod:`attnmarl.site.sphinxext` sets ``ATTNMARL_STATIC=1``, which the executing kernels inherit.
"""
from __future__ import annotations

import base64
import gzip
import html
import inspect
import itertools
import json
import math
import os
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

import numpy as np
import torch

from attnmarl.checks import is_int
from attnmarl.notebook.svg import render_panels
from attnmarl.notebook.viz import Frame, frame_spec

__all__ = ["Slider", "Range", "Toggle", "Dropdown", "PageModel", "Explorer", "explore", "static_mode", "page_script",
           "MAX_STATIC_FRAMES"]

MAX_STATIC_FRAMES = 5000
"""Upper bound on the frames a static face embeds (the product of the controls' static values)."""


def static_mode() -> bool:
    """True while the book is being built (``ATTNMARL_STATIC=1``): explorers render their static face."""
    return os.environ.get("ATTNMARL_STATIC", "") == "1"


@dataclass
class _Choice:
    """A control with a list of values; ``static`` (default: ``values``) are the ones embedded in
    the static face, to keep the page small."""

    name: str
    values: Sequence
    default: Any = None
    label: str | None = None
    static: Sequence | None = None

    def __post_init__(self) -> None:
        if isinstance(self.values, (str, bytes)) or not isinstance(self.values, Iterable):
            raise ValueError(f"control {self.name!r}: values must be a list of the values to offer, given after the "
                             f"name ({type(self).__name__}(name, values, default)); got {self.values!r}")
        self.values = list(self.values)
        if not self.values:
            raise ValueError(f"control {self.name!r} has no values")
        _check_values(self, self.values)
        self.static = list(self.static) if self.static is not None else self.values
        self.default = self.values[0] if self.default is None else self.default
        _check_choice(self.name, self.default, self.values, self.static)


class Slider(_Choice):
    """A numeric control (an integer slider when the values are evenly spaced integers)."""


class Dropdown(_Choice):
    """A choice among named options (strings)."""


@dataclass
class Toggle:
    """An on/off control."""

    name: str
    default: bool = False
    label: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.default, (bool, np.bool_)):  # "no" or 1 would act as True, then fail to draw
            raise ValueError(f"toggle {self.name!r}: default must be True or False; got {self.default!r}")
        self.default = bool(self.default)

    @property
    def static(self) -> list[bool]:
        return [False, True]


@dataclass
class Range:
    """A continuous numeric control from ``low`` to ``high`` in steps of ``step``. Its ``static`` values are
    the frames a precomputed face embeds; an in-page face (:class:`PageModel`) offers the whole range."""

    name: str
    low: float
    high: float
    step: float
    default: float
    label: str | None = None
    static: Sequence[float] | None = None

    def __post_init__(self) -> None:
        numbers = (self.low, self.high, self.step, self.default)
        if not all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in numbers):
            raise ValueError(f"range {self.name!r}: low, high, step and default must be finite numbers; got {numbers}")
        low, high, step, default = numbers
        if not (low < high and 0 < step <= high - low and low <= default <= high):
            raise ValueError(f"range {self.name!r} needs low < high, 0 < step <= high - low and low <= default <= "
                             f"high; got low={low}, high={high}, step={step}, default={default}")
        self.static = [self.default] if self.static is None else [float(v) for v in self.static]
        if self.default not in self.static or not all(self.low <= v <= self.high for v in self.static):
            raise ValueError(f"range {self.name!r}: static values {self.static} must lie in [{self.low}, {self.high}] "
                             f"and include the default {self.default}")

    @property
    def values(self) -> list[float]:
        """The values a precomputed face and an ipywidgets selection offer: the static ones."""
        return list(self.static)


@dataclass(frozen=True)
class PageModel:
    """An explorer's model, run in the page by ``static/live.js``: ``name`` picks the JavaScript twin of the frame
    function there, ``data()`` returns what it computes from (weights, inputs; plain JSON), and ``note`` says
    in a few words what runs (shown under the explorer)."""

    name: str
    data: Callable[[], dict]
    note: str
    scripts: tuple[str, ...] = ()
    """Other scripts of ``static/`` that the model calls, loaded before live.js (``playground.js``)."""


Control = Slider | Dropdown | Toggle | Range


def _check_values(control: _Choice, values: list) -> None:
    """A slider's values are finite numbers, a dropdown's strings, each offered once (a NaN stop or a
    repeated one cannot be told apart on the page, and a static face keys its frames by value)."""
    if isinstance(control, Dropdown):
        wrong = [v for v in values if not isinstance(v, str)]
        kind = "strings (the names of its options)"
    else:
        wrong = [v for v in values if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                                                             np.floating))
                 or not math.isfinite(v)]
        kind = "finite numbers"
    if wrong:
        raise ValueError(f"control {control.name!r}: its values must be {kind}; got {wrong[0]!r}")
    if len(set(values)) != len(values):
        raise ValueError(f"control {control.name!r} offers a value more than once: {values}")


def _check_choice(name: str, default: Any, values: list, static: list) -> None:
    if default not in values:
        raise ValueError(f"control {name!r}: default {default!r} is not one of its values {values}")
    if default not in static:
        raise ValueError(f"control {name!r}: default {default!r} must also be one of the static values {static}")
    if not set(static) <= set(values):
        raise ValueError(f"control {name!r}: static values {static} must be among its values {values}")


def _check_setting(control: Control, value: Any) -> None:
    """A new setting of ``control``: one of a dropdown's choices, True or False for a toggle (a slider's
    numbers are checked by the frame function, which may take values between its stops)."""
    if isinstance(control, Dropdown) and value not in control.values:
        raise ValueError(f"control {control.name!r} takes one of {control.values}; got {value!r}")
    if isinstance(control, Toggle) and not isinstance(value, (bool, np.bool_)):
        raise ValueError(f"control {control.name!r} takes True or False; got {value!r}")


def _is_int_range(values: list) -> bool:
    if not all(is_int(v) for v in values) or len(values) < 2:
        return False
    steps = np.diff(values)
    return bool(np.all(steps == steps[0]) and steps[0] > 0)


class Explorer:
    """``frame_fn`` plus its controls; :meth:`show` picks the face (see the module docstring)."""

    def __init__(self, frame_fn: Callable[..., Frame], controls: Sequence[Control], title: str = "",
                 page: PageModel | None = None) -> None:
        names = [c.name for c in controls]
        if len(set(names)) != len(names):
            raise ValueError(f"control names must be unique; got {names}")
        _check_parameters(frame_fn, names)
        self.frame_fn, self.controls, self.title, self.page = frame_fn, list(controls), title, page
        self.settings = {c.name: c.default for c in self.controls}
        self.frame: dict | None = None
        self.markup = ""
        self._view = None
        self._widgets: dict[str, Any] = {}

    # ---- live face ----------------------------------------------------------------------------

    def update(self, **changes: Any) -> dict:
        """Recompute the frame for the current settings (with ``changes`` applied) and redraw it;
        returns the frame's data (:func:`attnmarl.notebook.viz.frame_spec`)."""
        unknown = set(changes) - set(self.settings)
        if unknown:
            raise ValueError(f"unknown control(s) {sorted(unknown)}; this explorer has {sorted(self.settings)}")
        for control in self.controls:
            if control.name in changes:
                _check_setting(control, changes[control.name])
        settings = {**self.settings, **changes}
        self.frame = frame_spec(self.frame_fn(**settings))  # a refused change leaves the settings as they were
        self.settings = settings
        self.markup = (f"<style>{_asset('explorer.css')}</style><div class=\"attnmarl-explorer\">"
                       f"<div class=\"ax-panels\">{render_panels(self.frame)}</div>"
                       f"<div class=\"ax-caption\">{html.escape(self.frame['caption'])}</div></div>")
        if self._view is not None:
            self._view.value = self.markup
        return self.frame

    def live(self):
        """The ipywidgets face: controls above, the frame (SVG, same drawing as the static face) below."""
        import ipywidgets as W

        self._view = W.HTML()
        row = []
        for control in self.controls:
            widget = self._make_widget(W, control)
            widget.observe(lambda change, name=control.name: self.update(**{name: change["new"]}), names="value")
            self._widgets[control.name] = widget
            row.append(widget)
        self.update()
        header = [W.HTML(f"<b>{html.escape(self.title)}</b>")] if self.title else []
        return W.VBox(header + [W.HBox(row, layout=W.Layout(flex_flow="row wrap")), self._view])

    @property
    def widgets(self) -> dict[str, Any]:
        """The live controls by name (after :meth:`live`), e.g. to drive them from code."""
        return self._widgets

    @staticmethod
    def _make_widget(W, control: Control):
        label = control.label or control.name
        style = {"description_width": "initial"}
        if isinstance(control, Toggle):
            return W.Checkbox(value=control.default, description=label, style=style, indent=False)
        if isinstance(control, Dropdown):
            return W.Dropdown(options=control.values, value=control.default, description=label, style=style)
        if isinstance(control, Range):
            return W.FloatSlider(value=control.default, min=control.low, max=control.high, step=control.step,
                                 description=label, continuous_update=True, style=style)
        if _is_int_range(control.values):
            step = int(control.values[1] - control.values[0])
            return W.IntSlider(value=int(control.default), min=int(control.values[0]), max=int(control.values[-1]),
                               step=step, description=label, continuous_update=False, style=style)
        return W.SelectionSlider(options=control.values, value=control.default, description=label,
                                 continuous_update=False, style=style)

    # ---- static face --------------------------------------------------------------------------

    def static_html(self, digits: int = 4) -> str:
        """The kernel-free face: the in-page model (live.js) where the explorer has one, else every combination
        of static values, rendered by explorer.js (numbers to ``digits`` decimals, colours and opacities to what
        the page can show: ``frame_spec(..., shown=True)``)."""
        if self.page is not None:
            return self._page_html()
        grids = [c.static for c in self.controls]
        count = int(np.prod([len(g) for g in grids])) if grids else 1
        if count > MAX_STATIC_FRAMES:
            raise ValueError(
                f"the static face would embed {count} frames (more than {MAX_STATIC_FRAMES}); "
                "give some controls fewer static values"
            )
        threads = torch.get_num_threads()
        torch.set_num_threads(1)  # thousands of tiny forward passes: threads only add overhead
        frames = []
        try:
            for combo in itertools.product(*grids):
                settings = {c.name: v for c, v in zip(self.controls, combo)}
                try:
                    frames.append(frame_spec(self.frame_fn(**settings), digits, shown=True))
                except ValueError as error:
                    raise ValueError(f"{self.title or 'explorer'} at {settings}: {error}") from None
        finally:
            torch.set_num_threads(threads)
        spec = {
            "title": self.title,
            "controls": [_control_json(c) for c in self.controls],
            "frames": frames,
        }
        return _embed(spec, "attnmarl-explorer", ["explorer.js"], "attnmarlExplorer")

    def _page_html(self) -> str:
        """The in-page face: the model's data and the controls over their whole ranges, computed by live.js."""
        spec = {"title": self.title, "model": self.page.name, "note": self.page.note, "data": self.page.data(),
                "controls": [_page_control_json(c) for c in self.controls]}
        scripts = ["explorer.js", "drag.js", *self.page.scripts, "live.js"]
        return _embed(spec, "attnmarl-explorer ax-live", scripts, "attnmarlLive")

    def show(self):
        """Display the face that fits where this runs and return it."""
        from IPython.display import HTML, display

        face = HTML(self.static_html()) if static_mode() else self.live()
        display(face)
        return face


def _check_parameters(frame_fn: Callable[..., Frame], names: Sequence[str]) -> None:
    """Refuse controls that ``frame_fn`` has no parameter for (unless it takes ``**kwargs``), naming them."""
    if not callable(frame_fn):
        raise ValueError(f"an explorer needs a frame function of its controls' values; got {frame_fn!r}")
    try:
        parameters = inspect.signature(frame_fn).parameters
    except (TypeError, ValueError):  # a builtin without a signature: nothing to check
        return
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters.values()):
        return
    unknown = [name for name in names if name not in parameters]
    if unknown:
        name = getattr(frame_fn, "__name__", repr(frame_fn))
        raise ValueError(f"control(s) {unknown} name no parameter of {name}; its parameters are {list(parameters)}")


def explore(frame_fn: Callable[..., Frame], *controls: Control, title: str = "") -> Explorer:
    """Build an :class:`Explorer` and show it; returns the explorer (its ``widgets`` are live)."""
    explorer = Explorer(frame_fn, controls, title)
    explorer.show()
    return explorer


def _embed(spec: dict, classes: str, scripts: Sequence[str], start: str) -> str:
    """An explorer's kernel-free HTML: ``spec`` as gzip + base64 JSON in a data element beside a ``div`` of
    ``classes``, then the ``static/`` scripts, one block each as :func:`page_script` gives them, and, in a block of
    its own, the call ``start(id)`` that draws it from the data. The book's build keeps one copy of each block a
    page (``sphinxext.drop_repeated_blocks``), so a script shared with the playground (drag.js) loads once."""
    ident = f"attnmarl-{uuid.uuid4().hex[:10]}"
    payload = base64.b64encode(gzip.compress(json.dumps(spec, separators=(",", ":")).encode(), mtime=0)).decode()
    code = "".join(f"<script>{page_script(name)}</script>\n" for name in scripts)
    return (
        f"<style>{_asset('explorer.css')}</style>\n"
        f'<div class="{classes}" id="{ident}"><div class="ax-title">{html.escape(spec["title"])}</div>'
        "<noscript>This explorer needs JavaScript.</noscript></div>\n"
        f'<script type="application/octet-stream" id="{ident}-data">{payload}</script>\n'
        f"{code}<script>{start}({json.dumps(ident)});</script>"
    )


def _asset(name: str) -> str:
    return resources.files("attnmarl.notebook").joinpath("static", name).read_text(encoding="utf-8")


def page_script(name: str) -> str:
    """``static/<name>`` as the page carries it: without its comment lines (a line that starts with ``//``, a
    ``/* ... */`` block that starts a line) and its indentation, a third less to load on every page that embeds
    it (the package's file is the commented source). ``ValueError`` for a script this could break: one with a
    template literal over several lines (its text would lose its indentation)."""
    lines, block = [], False
    for line in _asset(name).splitlines():
        text = line.strip()
        if line.count("`") % 2:
            raise ValueError(f"{name}: a template literal spans lines ({text[:60]!r}); page_script would alter it")
        if block or text.startswith("/*"):
            block = not text.endswith("*/")
        elif text and not text.startswith("//"):
            lines.append(text)
    return "\n".join(lines)


def _page_control_json(control: Control) -> dict:
    """A control for live.js: a range over its whole span, a slider or a dropdown with all its values, a toggle."""
    label = control.label or control.name
    if isinstance(control, Range):
        return {"name": control.name, "label": label, "kind": "range", "min": control.low, "max": control.high,
                "step": control.step, "default": float(control.default)}
    if isinstance(control, Toggle):
        return {"name": control.name, "label": label, "kind": "toggle", "default": control.default}
    if isinstance(control, Dropdown):
        return {"name": control.name, "label": label, "kind": "select", "values": list(control.values),
                "default": control.values.index(control.default)}
    values = [float(v) if not is_int(v) else int(v) for v in control.values]
    return {"name": control.name, "label": label, "kind": "slider", "values": values,
            "default": control.values.index(control.default)}


def _control_json(control: Control) -> dict:
    kind = "toggle" if isinstance(control, Toggle) else "select" if isinstance(control, Dropdown) else "slider"
    values = control.static
    return {
        "name": control.name,
        "label": control.label or control.name,
        "kind": kind,
        "values": [v if isinstance(v, (str, bool)) else float(v) for v in values],
        "default": values.index(control.default),
    }
