"""Touch in the figures (issue 43): a finger that starts on an entity drags it, a finger that starts on the empty
arena scrolls the page, in chapter 7's in-page probe and in the playground; a phone's page in headless Chromium
with a touch screen (CDP touch events, so that the browser itself applies touch-action)."""
from __future__ import annotations

import pytest
from browser import hold_playground, offline_page, touch_drag

from attnmarl.checkpoints import load_agent
from attnmarl.notebook.explorers.value import probe_explorer, value_checkpoint
from attnmarl.notebook.playground import playground_html


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """A phone-sized page, taller than the screen: chapter 7's probe, then the playground (paused)."""
    probe = probe_explorer(*load_agent(value_checkpoint("spread3-attention")), seed=0, t=10)
    path = tmp_path_factory.mktemp("touch") / "touch.html"
    path.write_text("<!doctype html><meta charset='utf-8'><meta name='viewport' content='width=device-width'><body>"
                    f"{probe.static_html()}{playground_html(m=3, seed=0, tasks=('simple_spread',))}"
                    "<div style='height:3000px'></div></body>")
    with offline_page(touch=True) as p:
        p.set_viewport_size({"width": 390, "height": 844})
        p.goto(path.as_uri())
        p.wait_for_selector(".ax-live .ax-handle")
        p.wait_for_selector(".attnmarl-playground .pg-arena circle")
        hold_playground(p)
        yield p
        assert not p.errors and not p.blocked


_EMPTY = """svg => { // the screen point of the arena's emptiest corner (farthest from every entity)
  const box = svg.getBoundingClientRect();
  const circles = Array.from(svg.querySelectorAll('circle'), (c) => c.getBoundingClientRect());
  const corners = [[0.1, 0.1], [0.9, 0.1], [0.1, 0.9], [0.9, 0.9]].map(([u, v]) =>
    [box.left + u * box.width, box.top + v * box.height]);
  const room = ([x, y]) => Math.min(...circles.map((c) => Math.hypot(c.x + c.width / 2 - x, c.y + c.height / 2 - y)));
  return corners.reduce((a, b) => (room(b) > room(a) ? b : a));
}"""


def _centre(locator) -> tuple[float, float]:
    locator.scroll_into_view_if_needed()
    box = locator.bounding_box()
    return box["x"] + box["width"] / 2, box["y"] + box["height"] / 2


def _scroll(page) -> float:
    return page.evaluate("window.scrollY")


def _check_touch(page, entity, arena, state: str) -> None:
    """A finger on ``entity`` moves it (``state``: a script that reads the moved positions) and leaves the page where
    it was; a finger on the empty ``arena`` moves nothing and scrolls the page."""
    start = _centre(entity)
    before, scrolled = page.evaluate(state), _scroll(page)
    touch_drag(page, start, (start[0] + 30, start[1] - 40))
    moved = page.evaluate(state)
    assert moved != before and _scroll(page) == pytest.approx(scrolled, abs=2)
    arena.scroll_into_view_if_needed()
    corner, scrolled = arena.evaluate(_EMPTY), _scroll(page)
    touch_drag(page, corner, (corner[0], corner[1] - 120))
    assert page.evaluate(state) == moved and _scroll(page) > scrolled + 30


def test_a_finger_drags_an_agent_of_the_probe_and_scrolls_from_the_empty_arena(page):
    root = page.locator(".ax-live")
    assert root.locator(".ax-handle").first.evaluate("(c) => getComputedStyle(c).touchAction") == "none"
    settings = "() => { const s = document.querySelector('.ax-live').explorer.settings; return [s.moved, s.x, s.y]; }"
    _check_touch(page, root.locator('.ax-handle[data-key="1"]'), root.locator("svg.ax-arena"), settings)
    assert root.evaluate("(el) => el.explorer.settings.moved").startswith("a2")


def test_a_finger_drags_a_landmark_in_the_playground_and_scrolls_from_the_empty_arena(page):
    pg = page.locator(".attnmarl-playground")
    assert pg.locator(".pg-arena").evaluate("(s) => getComputedStyle(s).userSelect") == "none"
    _check_touch(page, pg.locator('circle[data-name="L1"]'), pg.locator(".pg-arena"),
                 "() => Array.from(document.querySelector('.attnmarl-playground').playground.worlds.entity.landmarks)")
