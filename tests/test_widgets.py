"""Both faces of the explorers: the live one driven from Python, the static one in Chromium."""

import re

import numpy as np
import pytest
from browser import offline_page
from ipywidgets7 import run_with_ipywidgets7

from attnmarl.notebook.explorers.self_attention import alpha_explorer, alpha_frame, heads_explorer, heads_frame
from attnmarl.notebook.svg import render_panels
from attnmarl.notebook.viz import Arena, Frame, Heatmap, Picture, Points, Text, draw_frame, frame_spec
from attnmarl.notebook.widgets import Dropdown, Explorer, Slider, Toggle, static_mode
from attnmarl.site import sphinxext

ARENA = Frame([Arena(np.array([[0.2, -0.3], [-1.1, 0.75], [0.5, 0.5]]), [0.15, 0.05, 0.15],
                     ["#4c72b0", "#999999", "#dd8452"], ["a1", "L", "a<2>"], emphasis=[0.0, 0.125, 0.875],
                     focus=0, title="arena")])
CROWDED = Frame([Arena(np.array([[0.2, -0.3], [0.21, -0.31], [-1.2, 1.15], [-1.12, 1.13], [0.9, -1.25]]),
                       [0.15, 0.05, 0.03, 0.03, 0.05], ["#4c72b0", "#999999", "#999999", "#dd8452", "#999999"],
                       ["a1", "L1", "t6", "c2", "L2"], title="an agent on its landmark, two treasures touching")])
"""Labels that would overprint: the explorer's twin renderers must place them the same way."""
GRID = Frame([Arena(np.array([[1.5, -0.5], [-0.5, 0.5]]), [0.42, 0.3], ["#4c72b0", "#8c6d31"], ["p1", "f1·2"],
                    lim=2.5, cells=5, shade=(1.5, -0.5, 1.5), focus=0, title="p1's sight cut at the wall")])
"""Chapter 12's Level-Based Foraging as an arena: cell borders and a shaded sight square."""
PICTURE = Frame([Picture(np.linspace(0.0, 1.0, 4 * 5 * 3).reshape(4, 5, 3), title="a<b", scale=6,
                         boxes=[(1, 2, 3, 2)])])


WIDE = Frame([Heatmap(np.linspace(0.0, 1.0, 22 * 93).reshape(22, 93), [f"r{k}" for k in range(22)],
                      list("from Friday, the sixteenth of February, 2024 to Thursday, the twenty-sixth of No")
                      + list("vember, 2026") + ["<eos>"], title="α (additive attention)", annotate=False)])
"""Chapter 1's longest alignment: 22 output tokens by 93 input characters, no numbers in the cells."""
ENTITIES = Frame([Heatmap(np.linspace(0.0, 1.0, 3 * 24).reshape(3, 24), ["head 1", "head 2", "mean"],
                          [f"a{k}" for k in range(1, 13)] + [f"L{k}" for k in range(1, 13)], title="α of a1's policy")])
"""Chapter 10's entity policy at m = 12: 24 keys, numbers in the cells."""


def alpha_of(frame: dict) -> np.ndarray:
    return np.array(next(p for p in frame["panels"] if p["type"] == "heatmap")["values"])


# ---- live face ------------------------------------------------------------------------------------

def test_live_alpha_explorer_redraws_when_controls_move():
    explorer = alpha_explorer()
    box = explorer.live()
    assert set(explorer.widgets) == {"m", "d_q", "scale", "seed", "x1_0", "x1_1"}
    before, markup = alpha_of(explorer.frame), explorer.markup
    assert before.shape == (4, 4) and explorer._view.value == markup

    explorer.widgets["x1_0"].value = -2.0  # move x^1: its row and column of alpha change
    moved = alpha_of(explorer.frame)
    assert not np.allclose(moved, before) and explorer._view.value != markup

    explorer.widgets["m"].value = 7
    assert alpha_of(explorer.frame).shape == (7, 7)
    assert explorer._view.value.count("<rect") > markup.count("<rect")

    explorer.widgets["scale"].value = True
    assert "1/√d_q" in explorer.frame["panels"][1]["title"]
    assert box.children[-1] is explorer._view


def test_live_heads_explorer_draws_one_heatmap_per_head():
    explorer = heads_explorer()
    explorer.live()
    assert len(explorer.frame["panels"]) == 1 + 4  # the inputs, then fig. 17.6's l = 4 by default
    explorer.widgets["heads"].value = 3
    assert [p["title"] for p in explorer.frame["panels"][1:]] == ["head 1", "head 2", "head 3"]
    explorer.widgets["x1_0"].value = -2.0  # the continuous control: x¹ anywhere
    assert explorer.frame["panels"][0]["xy"][0] == [-2.0, 0.0]
    assert explorer._view.value.count('class="ax-panel ax-heatmap"') == 3


def test_live_widgets_match_control_kinds():
    explorer = Explorer(lambda a, b, c: Frame([Text(f"{a}{b}{c}")]), [
        Slider("a", [1, 2, 3]), Slider("b", [0.5, 1.5, 4.0]), Dropdown("c", ["x", "y"])])
    explorer.live()
    kinds = {name: type(w).__name__ for name, w in explorer.widgets.items()}
    assert kinds == {"a": "IntSlider", "b": "SelectionSlider", "c": "Dropdown"}
    explorer.widgets["c"].value = "y"
    assert explorer.frame["panels"][0]["text"] == "10.5y"


def test_the_frame_shows_the_real_model():
    import torch

    from attnmarl.attention import SelfAttention
    from attnmarl.notebook.explorers.self_attention import example_inputs, random_layer

    frame = alpha_frame(m=5, d_q=4, scale=True, seed=3, x1_0=-1.5, x1_1=2.0)
    layer = random_layer(3, 2, 4, 2, scale=True)
    assert isinstance(layer, SelfAttention) and layer.scale
    x = example_inputs(5, 2, 3)
    x[0] = torch.tensor([-1.5, 2.0])
    c, alpha = layer(x)
    np.testing.assert_allclose(frame.panels[1].values, alpha.detach().numpy(), atol=1e-6)
    np.testing.assert_allclose(frame.panels[2].values, c.detach().numpy(), atol=1e-6)


LIVE_CHECK = """
from attnmarl.notebook.explorers.self_attention import alpha_explorer, heads_explorer
explorer = alpha_explorer()
box = explorer.live()
before = explorer.markup
explorer.widgets["m"].value = 7
assert explorer.frame["panels"][1]["rows"][-1] == "q\u2077" and explorer.markup != before
assert type(explorer.widgets["d_q"]).__name__ == "SelectionSlider"
heads = heads_explorer()
heads.live()
assert len(heads.frame["panels"]) == 1 + 4  # the inputs, then fig. 17.6's l = 4 by default
heads.widgets["heads"].value = 3
assert len(heads.frame["panels"]) == 1 + 3
"""


def test_live_face_works_with_colabs_ipywidgets_7():
    """Colab has ipywidgets 7.7; `make test` installs a copy beside the venv's 8.x to drive it."""
    run_with_ipywidgets7(LIVE_CHECK)


# ---- the controls and their errors -----------------------------------------------------------

def test_arena_panel_draws_and_checks_its_input():
    markup = render_panels(frame_spec(ARENA))
    assert markup.count("<circle") == 3 + 2 + 1  # entities, emphasis rings, the focus ring
    assert 'stroke-opacity="0.875"' in markup and "a&lt;2&gt;" in markup
    assert len(draw_frame(ARENA).axes[0].patches) == 6
    with pytest.raises(ValueError, match="n radii"):
        Arena(np.zeros((2, 2)), [0.1], ["#000", "#000"], ["a", "b"])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        Arena(np.zeros((1, 2)), [0.1], ["#000"], ["a"], emphasis=[1.5])
    with pytest.raises(ValueError, match="focus"):
        Arena(np.zeros((1, 2)), [0.1], ["#000"], ["a"], focus=3)
    grid = render_panels(frame_spec(GRID))
    assert grid.count('stroke="#e0e0e0"') == 2 * 4  # four borders between five cells, each way
    shade = re.search(r'<rect class="ax-shade" x="([0-9.]+)" y="([0-9.]+)" width="([0-9.]+)" height="([0-9.]+)"', grid)
    left, top, size, lim = map(float, re.search(r'data-square="([^"]+)"', grid).group(1).split(","))
    unit = size / (2 * lim)  # the square from x = 0 to the wall at 2.5, y = -2 to 1
    assert [float(v) for v in shade.groups()] == pytest.approx([left + 2.5 * unit, top + 1.5 * unit, 2.5 * unit,
                                                                3 * unit])
    assert len(draw_frame(GRID).axes[0].patches) == 1 + 2 + 1  # the shade, entities, the focus ring
    with pytest.raises(ValueError, match="arena cells must be"):
        Arena(np.zeros((1, 2)), [0.1], ["#000"], ["a"], cells=2.5)
    with pytest.raises(ValueError, match="half-width"):
        Arena(np.zeros((1, 2)), [0.1], ["#000"], ["a"], shade=(0.0, 0.0, -1.0))
    with pytest.raises(ValueError, match=r"square \(x, y, half-width\)"):
        Arena(np.zeros((1, 2)), [0.1], ["#000"], ["a"], shade=(0.0, 0.0))


def test_picture_panel_embeds_its_pixels_and_checks_its_input():
    """A picture travels as a PNG data URI that decodes to its own pixels; boxes are drawn in screen pixels."""
    import base64
    import io

    from PIL import Image

    spec = frame_spec(PICTURE)["panels"][0]
    decoded = np.asarray(Image.open(io.BytesIO(base64.b64decode(spec["png"].split(",", 1)[1]))))
    np.testing.assert_array_equal(decoded, np.round(PICTURE.panels[0].rgb * 255).astype(np.uint8))
    markup = render_panels(frame_spec(PICTURE))
    assert 'width="30" height="24"' in markup and '<rect x="16" y="32" width="12" height="18"' in markup
    assert len(draw_frame(PICTURE).axes[0].patches) == 1
    with pytest.raises(ValueError, match=r"\(H, W, 3\)"):
        Picture(np.zeros((4, 5)))
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        Picture(np.full((2, 2, 3), 1.5))
    with pytest.raises(ValueError, match="row, col, height, width"):
        Picture(np.zeros((2, 2, 3)), boxes=[(0, 0, 1)])


def test_bad_controls_raise_value_error():
    with pytest.raises(ValueError, match="default 5 is not one of its values"):
        Slider("m", [1, 2, 3], default=5)
    with pytest.raises(ValueError, match="static values"):
        Slider("m", [1, 2, 3], static=[1, 4])
    with pytest.raises(ValueError, match="unique"):
        Explorer(lambda m: None, [Slider("m", [1]), Toggle("m")])
    with pytest.raises(ValueError, match="unknown control"):
        alpha_explorer().update(n=3)
    with pytest.raises(ValueError, match="must return a Frame"):
        Explorer(lambda m: "not a frame", [Slider("m", [1, 2])]).update()
    with pytest.raises(ValueError, match="more than"):
        Explorer(lambda a, b: None, [Slider("a", list(range(100))), Slider("b", list(range(100)))]).static_html()
    with pytest.raises(ValueError, match="do not match"):
        Heatmap(np.zeros((2, 3)), ["a", "b"], ["x", "y"])
    for bad in (np.ones((2, 3)), np.ones((3, 2), bool), [[True, False]]):
        with pytest.raises(ValueError, match="masked must be None or a boolean matrix"):
            Heatmap(np.zeros((2, 3)), ["a", "b"], ["x", "y", "z"], masked=bad)


def test_masked_heatmap_cells_are_drawn_without_a_value_by_every_renderer() -> None:
    """A masked cell (a causal mask's future) shows no number: the SVG gives it the MASKED fill, no data-value and a
    title that says "masked"; matplotlib leaves its value out of the image and writes no number on it."""
    import matplotlib.pyplot as plt

    from attnmarl.notebook.viz import MASKED, heatmap

    panel = Heatmap(np.array([[0.0, 0.0], [0.5, 0.0]]), ["a1", "a2"], ["a1", "a2"],
                    masked=np.triu(np.ones((2, 2), bool)))
    markup = render_panels(frame_spec(Frame([panel])))
    assert markup.count('class="ax-masked"') == 3 and markup.count(f'fill="{MASKED}"') == 3
    assert markup.count("data-value=") == 1 and markup.count(": masked</title>") == 3
    assert re.findall(r'class="ax-cell"[^>]*>([^<]*)<', markup) == ["0.50"]
    fig, ax = plt.subplots()
    image = heatmap(ax, panel)
    assert image.get_array().mask.tolist() == panel.masked.tolist()
    assert [text.get_text() for text in ax.texts] == ["0.50"]
    plt.close(fig)


def test_a_seed_strip_draws_each_seed_and_a_bar_at_their_mean() -> None:
    """seed_strip: one dot per seed at x, in the design's colour (marker keywords passed on), and a bar of the given
    half-width at the mean; no seeds is refused."""
    import matplotlib.pyplot as plt

    from attnmarl.notebook.viz import seed_strip

    fig, ax = plt.subplots()
    seed_strip(ax, 2.0, [90.0, 94.0, 98.0], "#123456", 0.1, marker="^", label="design")
    dots, bar = ax.lines
    assert dots.get_xdata().tolist() == [2.0] * 3 and dots.get_ydata().tolist() == [90.0, 94.0, 98.0]
    assert dots.get_marker() == "^" and dots.get_linestyle() == "None" and dots.get_label() == "design"
    assert bar.get_xdata() == pytest.approx([1.9, 2.1]) and bar.get_ydata().tolist() == [94.0, 94.0]
    assert dots.get_color() == bar.get_color() == "#123456"
    with pytest.raises(ValueError, match="one score per seed"):
        seed_strip(ax, 0.0, [], "#123456")
    plt.close(fig)


# ---- static face ----------------------------------------------------------------------------------

def test_sphinx_extension_selects_the_static_face(monkeypatch):
    monkeypatch.delenv("ATTNMARL_STATIC", raising=False)
    assert not static_mode()
    metadata = sphinxext.setup(app=None)
    assert static_mode() and metadata["parallel_read_safe"]


@pytest.fixture(scope="module")
def static_page(tmp_path_factory):
    """One HTML file holding both explorers' static faces, opened offline in Chromium."""
    path = tmp_path_factory.mktemp("static") / "explorers.html"
    path.write_text("<!doctype html><meta charset='utf-8'><body>" + alpha_explorer().static_html()
                    + heads_explorer().static_html() + "</body>")
    assert path.stat().st_size < 2_000_000
    with offline_page() as page:
        page.goto(path.as_uri())
        page.wait_for_selector(".attnmarl-explorer .ax-panels svg")
        yield page
        assert not page.blocked and not page.errors


def panels_html(page, index: int) -> str:
    return page.locator(".attnmarl-explorer .ax-panels").nth(index).inner_html()


def test_static_explorer_steps_change_the_drawing(static_page):
    page = static_page
    before = panels_html(page, 0)
    explorer = page.locator(".attnmarl-explorer").first
    slider = explorer.locator("input[type=range]").first  # m
    slider.focus()
    page.keyboard.press("ArrowRight")
    after = panels_html(page, 0)
    assert after != before
    assert after.count("<rect") > before.count("<rect")  # more inputs, a larger alpha
    explorer.locator("input[type=checkbox]").check()
    assert panels_html(page, 0) != after
    assert "scaled" in explorer.locator(".ax-caption").inner_text() or "1/√d_q" in panels_html(page, 0)


def test_static_and_live_draw_the_same_markup(static_page):
    """explorer.js and attnmarl/notebook/svg.py are twins: for the same frame they produce the same SVG."""
    page = static_page
    frames = [
        frame_spec(alpha_frame()),
        frame_spec(alpha_frame(m=8, d_q=16, scale=True, seed=2, x1_0=-2.0, x1_1=2.0)),
        frame_spec(heads_frame(heads=4, m=3, d_q=8)),
        frame_spec(Frame([Heatmap(np.array([[0.125, -0.375], [0.0, 1.0]]), ["a<b", "c&d"], ["x", "y"],
                                  vmin=-1, vmax=1, cmap="RdBu_r"),
                          Heatmap(np.array([[0.0, 0.0], [0.25, 0.0]]), ["a1", "a2"], ["a1", "a2"],
                                  masked=np.triu(np.ones((2, 2), bool))),
                          Points(np.array([[0.5, -2.25]]), ['"p"'], lim=2.5, highlight=[0]),
                          Text("a\n<b>", title="t")])),
        frame_spec(ARENA),
        frame_spec(CROWDED),
        frame_spec(GRID),
        frame_spec(PICTURE),
        frame_spec(WIDE),
        frame_spec(ENTITIES),
    ]
    for frame in frames:
        same = page.evaluate(
            """([frame, python]) => {
                const a = document.createElement('div'), b = document.createElement('div');
                a.innerHTML = window.attnmarlRenderPanels(frame);
                b.innerHTML = python;
                return [a.innerHTML === b.innerHTML, a.innerHTML.length];
            }""",
            [frame, render_panels(frame)],
        )
        assert same[0] and same[1] > 100


def test_static_frames_hold_the_models_numbers(static_page):
    """Step the static face to a setting and read alpha off the page: it is the model's alpha."""
    page = static_page
    page.reload()
    page.wait_for_selector(".attnmarl-explorer .ax-panels svg")
    explorer = page.locator(".attnmarl-explorer").first
    sliders = explorer.locator("input[type=range]")
    for index, position in ((1, 3), (3, 4)):  # range inputs: m, d_q, seed, x1_0, x1_1 -> d_q = 8, x1_0 = 2.5
        sliders.nth(index).evaluate("(el, v) => { el.value = v; el.dispatchEvent(new Event('input')); }", position)
    cells = explorer.locator(".ax-heatmap").first.locator("rect[data-value]")  # the cells, not the colour scale
    values = cells.evaluate_all("rects => rects.map(r => Number(r.dataset.value))")
    expected = alpha_frame(m=4, d_q=8, scale=False, seed=0, x1_0=2.5, x1_1=0.0).panels[1].values
    np.testing.assert_allclose(np.array(values).reshape(expected.shape), expected, atol=6e-4)


def test_long_panel_titles_wrap_to_fit_their_panel() -> None:
    """A title wider than its panel is broken into lines at spaces (SVG text would be clipped); the JS twin draws
    the same markup (the renderer test compares them)."""
    title = "t = 12: rings = α of a1's policy over one long episode (opacity α / max α)"
    frame = Frame([Arena(np.zeros((1, 2)), [0.1], ["#333"], ["a1"], title=title)])
    markup = render_panels(frame_spec(frame))
    lines = re.findall(r'<tspan x="[^"]+" dy="[^"]+">([^<]*)</tspan>', markup)
    assert len(lines) > 1 and " ".join(lines) == title
    width = float(re.search(r'<svg class="ax-panel ax-arena" width="([0-9.]+)"', markup).group(1))
    assert all(7 * len(line) <= width for line in lines)


# ---- legibility: text sizes, the palette ----------------------------------------------------------

def font_sizes(markup: str) -> list[float]:
    return [float(v) for v in re.findall(r'font-size="([0-9.]+)"', markup)]


@pytest.mark.parametrize("frame", [ARENA, PICTURE, WIDE, ENTITIES], ids=["arena", "picture", "wide", "entities"])
def test_explorer_text_is_at_least_9_px(frame) -> None:
    """The SVG of an explorer is shown at its size (the panels scroll rather than shrink): every text in it
    is at least 9 px."""
    assert min(font_sizes(render_panels(frame_spec(frame)))) >= 9


def test_a_long_unannotated_heatmap_fits_an_explorer_with_its_title_and_row_labels() -> None:
    """Chapter 1's longest example (93 input characters) narrows its cells so that the panel fits the
    explorer's 726 px at 1280 px; its title is centred on the cells and the row labels stay at the left."""
    markup = render_panels(frame_spec(WIDE))
    width = float(re.search(r'<svg class="ax-panel ax-heatmap" width="([0-9.]+)"', markup).group(1))
    assert width <= 726
    title_x = float(re.search(r'<tspan x="([0-9.]+)"', markup).group(1))
    assert 0 < title_x < width / 2 + 40
    first_row = re.search(r'<text x="([0-9.]+)" y="[0-9.]+" text-anchor="end" font-size="11">r0</text>', markup)
    assert first_row and float(first_row.group(1)) > 0
    annotated = render_panels(frame_spec(Frame([Heatmap(np.eye(3), list("abc"), list("xyz"))])))
    assert 'width="30" height="30"' in annotated  # a few cells with numbers keep their 30 px
    many = render_panels(frame_spec(ENTITIES))  # 24 cells with numbers narrow to 25 px and still fit
    assert 'width="25" height="25"' in many
    assert float(re.search(r'<svg class="ax-panel ax-heatmap" width="([0-9.]+)"', many).group(1)) <= 726


def test_the_book_style_sets_every_text_size_to_at_least_the_minimum() -> None:
    import matplotlib.pyplot as plt
    from matplotlib.font_manager import FontProperties

    from attnmarl.notebook import viz

    assert viz.MIN_FONT_PT * viz.FIGURE_DPI / 72 >= 9 / 0.81  # 9 px even if a figure is shrunk to 0.81
    assert viz.MAX_FIGURE_WIDTH * viz.FIGURE_DPI <= 752  # the text column at 1280 px
    viz.use_book_style()
    for key in ("font.size", "axes.titlesize", "axes.labelsize", "xtick.labelsize", "ytick.labelsize",
                "legend.fontsize", "legend.title_fontsize", "figure.titlesize", "figure.labelsize"):
        size = FontProperties(size=plt.rcParams[key]).get_size_in_points()
        assert size >= viz.MIN_FONT_PT, (key, size)
    assert plt.rcParams["figure.dpi"] == viz.FIGURE_DPI


def test_draw_frame_writes_no_text_smaller_than_the_minimum() -> None:
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.text import Text as MplText

    from attnmarl.notebook.viz import MIN_FONT_PT

    frame = Frame([Heatmap(np.eye(3), list("abc"), list("xyz"), title="α"), ARENA.panels[0],
                   Points(np.zeros((2, 2)), ["p", "q"]), Text("a")], caption="caption")
    figure = draw_frame(frame)
    sizes = [t.get_fontsize() for t in figure.findobj(MplText) if t.get_text().strip()]
    assert sizes and min(sizes) >= MIN_FONT_PT


def test_one_colour_per_design_none_shared_with_other_kinds_of_curve() -> None:
    from attnmarl.notebook.viz import (
        BASELINE_BARS,
        BASELINE_STYLES,
        DESIGN_COLOURS,
        RUN_COLOURS,
        design_colour,
        run_colour,
    )

    colours = list(DESIGN_COLOURS.values()) + list(RUN_COLOURS.values())
    assert len(set(colours)) == len(colours)
    assert not set(colours) & {style["color"] for style in BASELINE_STYLES.values()}
    assert not set(colours) & {style["facecolor"] for style in BASELINE_BARS.values()}
    assert set(BASELINE_BARS) <= set(BASELINE_STYLES)
    assert len({tuple(sorted(style.items())) for style in BASELINE_BARS.values()}) == len(BASELINE_BARS)
    assert design_colour("entity") == DESIGN_COLOURS["entity"] and run_colour("maac") == RUN_COLOURS["maac"]
    with pytest.raises(ValueError, match="no colour for design 'mlp'"):
        design_colour("mlp")


def test_learning_curves_are_drawn_in_the_palette_only() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnmarl.notebook.viz import DESIGN_COLOURS, baseline_line, plot_seed_band

    curve = {"env_steps": np.arange(4.0) * 1e5, "eval_return": np.arange(4.0),
             "eval_episodes": np.array([20, 20, 20, 200])}
    fig, ax = plt.subplots()
    plot_seed_band(ax, [curve, curve], "eval_return", DESIGN_COLOURS["concat"], "concat")
    with pytest.raises(ValueError, match="palette"):
        plot_seed_band(ax, [curve], "eval_return", "tab:red", "a colour of its own")
    with pytest.raises(ValueError, match="no style for baseline"):
        baseline_line(ax, 0.0, "oracle")
    plt.close(fig)


def test_keep_in_view_cuts_an_early_dip_and_says_so() -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from attnmarl.notebook.viz import keep_in_view

    fig, ax = plt.subplots()
    ax.plot([0, 1, 2, 3], [-30, -80, -31, -29])  # random -33, greedy -10: the dip to -80 is one point
    keep_in_view(ax, -33.0, -10.0)
    assert ax.get_ylim()[0] == pytest.approx(-33.0 - 11.5)
    assert [t.get_text() for t in ax.texts] == ["↓ off the axis, down to -80"]
    ax.cla()
    ax.plot([0, 1], [-30, -20])
    keep_in_view(ax, -33.0, -10.0)  # nothing off the axis: limits and texts untouched
    assert ax.get_ylim()[0] > -33.0 - 11.5 and not ax.texts
    with pytest.raises(ValueError, match="low < high"):
        keep_in_view(ax, 1.0, 1.0)
    plt.close(fig)


def test_figures_are_drawn_at_twice_the_pixels_of_the_size_they_are_shown_at() -> None:
    """Sharp on a 2x screen: the PNG has PIXEL_DENSITY times the pixels of the size the page shows it at (the
    width and height IPython passes on), records its dpi, and is a palette image (smaller than a 1x RGBA PNG)."""
    import io

    import matplotlib.pyplot as plt
    from PIL import Image

    from attnmarl.notebook.viz import FIGURE_DPI, PIXEL_DENSITY, figure_png

    figure, ax = plt.subplots(figsize=(4, 2))
    ax.plot([0, 1, 4], label="a curve")
    ax.legend()
    data, shown = figure_png(figure)
    one_x = io.BytesIO()
    figure.savefig(one_x, format="png", bbox_inches="tight")
    plt.close(figure)
    image, plain = Image.open(io.BytesIO(data)), Image.open(io.BytesIO(one_x.getvalue()))
    assert all(0 <= size - PIXEL_DENSITY * shown[key] < PIXEL_DENSITY
               for size, key in zip(image.size, ("width", "height")))
    assert abs(shown["width"] - plain.size[0]) <= 1 and abs(shown["height"] - plain.size[1]) <= 1
    assert image.mode == "P" and round(image.info["dpi"][0]) == PIXEL_DENSITY * FIGURE_DPI
    assert len(data) < len(one_x.getvalue())


def test_the_static_face_rounds_colours_and_opacities_to_what_the_page_shows():
    """frame_spec(..., shown=True): heatmap values to SHOWN_DIGITS decimals for a colour range 1 wide (one more
    per tenth narrower), ring opacities to SHOWN_DIGITS; positions and radii keep their digits. The rounding moves
    a colour by less than 3 of the map's 256 levels."""
    from attnmarl.notebook.viz import SHOWN_DIGITS

    wide = Heatmap(np.array([[0.123456, 0.876543]]), ["r"], ["a", "b"], vmin=0.0, vmax=1.0)
    narrow = Heatmap(np.array([[0.0123456, 0.0876543]]), ["r"], ["a", "b"], vmin=0.0, vmax=0.1)
    arena = Arena(np.array([[0.123456, -0.654321]]), [0.15], ["#000"], ["a1"], emphasis=[0.123456])
    spec = frame_spec(Frame([wide, narrow, arena]), digits=4, shown=True)
    assert SHOWN_DIGITS == 2
    assert spec["panels"][0]["values"] == [[0.12, 0.88]]
    assert spec["panels"][1]["values"] == [[0.012, 0.088]]
    assert spec["panels"][2]["emphasis"] == [0.12] and spec["panels"][2]["xy"] == [[0.1235, -0.6543]]
    for panel, original in ((spec["panels"][0], wide), (spec["panels"][1], narrow)):
        levels = 256 * np.abs(np.array(panel["values"]) - original.values) / (original.vmax - original.vmin)
        assert levels.max() < 3
    assert frame_spec(Frame([wide]), digits=1, shown=True)["panels"][0]["values"] == [[0.1, 0.9]]
    assert frame_spec(Frame([narrow]), digits=4)["panels"][0]["values"] == [[0.0123, 0.0877]]  # not shown


def test_a_page_of_several_explorers_keeps_one_copy_of_their_code_and_each_still_draws(tmp_path, static_page):
    """sphinxext.drop_repeated_blocks: the second explorer's renderer and stylesheet go, its data and its start
    call stay, short blocks are never touched; in Chromium both explorers still draw and respond."""
    first, second = alpha_explorer().static_html(), heads_explorer().static_html()
    page = "<!doctype html><meta charset='utf-8'><body>" + first + second + "<script>x=1</script>" * 2 + "</body>"
    slim = sphinxext.drop_repeated_blocks(page)
    assert len(slim) < len(page) - 10_000
    assert slim.count("<script>x=1</script>") == 2  # under 200 characters: kept
    starts = re.compile(r"<script>attnmarl(?:Explorer|Live)\(")
    assert len(starts.findall(slim)) == len(starts.findall(page)) == 2
    assert slim.count('type="application/octet-stream"') == 2
    assert sphinxext.drop_repeated_blocks(slim) == slim
    path = tmp_path / "page.html"
    path.write_text(slim)
    browser = static_page.context.browser.new_page()  # the module's browser: one Playwright per worker
    browser.route("**/*", lambda r: r.continue_() if r.request.url.startswith(("file:", "data:")) else r.abort())
    errors: list[str] = []
    browser.on("pageerror", lambda e: errors.append(str(e)))
    try:
        browser.goto(path.as_uri())
        explorers = browser.locator(".attnmarl-explorer")
        assert explorers.count() == 2
        for k in range(2):
            assert explorers.nth(k).locator("svg").count() >= 1, f"explorer {k + 1} did not draw"
            before = explorers.nth(k).inner_html()
            explorers.nth(k).locator("select, input").first.evaluate(
                "el => { if (el.tagName === 'SELECT') el.selectedIndex = (el.selectedIndex + 1) % el.options.length;"
                " else el.value = el.value === el.max ? el.min : el.max;"
                " el.dispatchEvent(new Event('input')); el.dispatchEvent(new Event('change')); }")
            assert explorers.nth(k).inner_html() != before, f"explorer {k + 1} did not redraw"
        assert not errors
    finally:
        browser.close()
