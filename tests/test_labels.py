"""Arena labels never overprint (issue #43's residue: chapter 6's scenario figure and chapter 7's probe).

:func:`attnmarl.notebook.labels.label_positions` places them; the SVG arena of the explorers and matplotlib's arena
of the figures both use it (tests/test_widgets.py holds explorer.js's twin to the same markup)."""
import itertools
import re

import matplotlib
import numpy as np

matplotlib.use("Agg")

from attnmarl.notebook.labels import CHAR_WIDTH, label_positions  # noqa: E402
from attnmarl.notebook.svg import render_panels  # noqa: E402
from attnmarl.notebook.viz import Arena, Frame, arena, frame_spec  # noqa: E402

FONT = 9.0
BOUNDS = (0.0, 0.0, 300.0, 300.0)


def boxes(centres, labels, font=FONT):
    places = label_positions(centres, RADII[: len(centres)], labels, font, BOUNDS)
    return [(x - (CHAR_WIDTH * font * len(s) + 2) / 2, y - font / 2, x + (CHAR_WIDTH * font * len(s) + 2) / 2,
             y + font / 2) for (x, y), s in zip(places, labels)]


def overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


RADII = [20.0, 4.0, 4.0, 4.0, 3.0, 3.0, 20.0, 4.0]
SCENE = [(150.0, 150.0), (151.0, 149.0), (60.0, 60.0), (64.0, 61.0), (66.0, 58.0), (240.0, 250.0), (220.0, 90.0),
         (221.0, 92.0)]
"""An agent standing on its landmark (twice), three small entities touching, one near the edge."""
NAMES = ["a1", "L1", "t6", "c2", "t2", "L2", "a2", "L3"]


def test_no_two_labels_of_a_crowded_arena_overprint():
    placed = boxes(SCENE, NAMES)
    assert not [(i, j) for i, j in itertools.combinations(range(len(placed)), 2) if overlap(placed[i], placed[j])]
    assert all(BOUNDS[0] <= b[0] and b[2] <= BOUNDS[2] and BOUNDS[1] <= b[1] and b[3] <= BOUNDS[3] for b in placed)


def test_a_label_keeps_its_old_place_when_nothing_is_in_the_way():
    """Alone, a small disc is labelled just below itself and a large one in its upper half, as before the placer."""
    (x, y), = label_positions([(100.0, 100.0)], [4.0], ["L1"], FONT, BOUNDS)
    assert x == 100.0 and 100.0 + 4.0 < y - FONT / 2 < 100.0 + 4.0 + 2
    (x, y), = label_positions([(100.0, 100.0)], [20.0], ["a1"], FONT, BOUNDS)
    assert (x, y) == (100.0, 100.0 - 0.4 * 20.0)


def test_the_placer_is_needed_two_touching_discs_labelled_below_would_overprint():
    """Without the search (every small disc labelled below itself, the old rule), two touching treasures' labels
    overlap; the placer moves the second."""
    below = [(x, y + 4.0 + 1 + FONT / 2) for x, y in SCENE[2:4]]
    w = CHAR_WIDTH * FONT * 2 + 2
    old = [(x - w / 2, y - FONT / 2, x + w / 2, y + FONT / 2) for x, y in below]
    assert overlap(*old)
    assert not overlap(*boxes(SCENE[2:4], NAMES[2:4]))


def test_the_explorers_arena_draws_every_label_clear_of_the_others():
    frame = Frame([Arena(np.array([[0.2, -0.3], [0.21, -0.31], [-1.2, 1.15], [-1.12, 1.13]]),
                         [0.15, 0.05, 0.03, 0.03], ["#4c72b0", "#999", "#999", "#dd8452"], ["a1", "L1", "t6", "c2"],
                         lim=1.5)])
    markup = render_panels(frame_spec(frame))
    spots = [(float(x), float(y) - 3, s) for x, y, s in
             re.findall(r'<text x="([-\d.e]+)" y="([-\d.e]+)" text-anchor="middle" font-size="9" paint-order="stroke"'
                        r'[^>]*>([^<]*)</text>', markup)]
    assert [s for _, _, s in spots] == ["a1", "L1", "t6", "c2"]
    placed = [(x - (CHAR_WIDTH * 9 * len(s) + 2) / 2, y - 4.5, x + (CHAR_WIDTH * 9 * len(s) + 2) / 2, y + 4.5)
              for x, y, s in spots]
    assert not any(overlap(a, b) for a, b in itertools.combinations(placed, 2))
    assert re.search(r'<line x1="[\d.]+" y1="[\d.]+" x2="[\d.]+" y2="[\d.]+" stroke="#444"/><line', markup)  # ticks
    ticks = re.findall(r'<text x="[\d.]+" y="[\d.]+" text-anchor="middle" font-size="9">(-?\d)</text>', markup)
    assert ticks == ["-1", "0", "1"]


def test_the_figures_arena_draws_every_label_clear_of_the_others_at_its_final_size():
    """matplotlib places the labels at draw time on its own pixels, after the layout has settled: the text boxes
    it drew do not overlap."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(7.5, 3.3), layout="constrained")
    scene = Arena(np.array([[0.2, -0.3], [0.21, -0.31], [-1.0, 0.95], [-0.92, 0.93], [0.9, -1.1]]),
                  [0.15, 0.05, 0.03, 0.03, 0.05], ["#4c72b0", "#999", "#999", "#dd8452", "#999"],
                  ["a1", "L1", "t6", "c2", "L2"], lim=1.3)
    for ax in axes:
        arena(ax, scene)
    fig.suptitle("two lines\nof title")
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    for ax in axes:
        labels = ax.artists[0].texts
        assert [t.get_text() for t in labels] == ["a1", "L1", "t6", "c2", "L2"]
        extents = [t.get_window_extent(renderer) for t in labels]
        assert not [(a, b) for a, b in itertools.combinations(range(5), 2) if extents[a].overlaps(extents[b])]
        assert all(ax.bbox.contains(*e.p0) and ax.bbox.contains(*e.p1) for e in extents)
    plt.close(fig)
