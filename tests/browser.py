"""Headless Debian Chromium, driven by Playwright, with the network off (DESIGN §4)."""
from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
        "--disable-component-update", "--disable-sync"]


@contextlib.contextmanager
def offline_page(touch: bool = False) -> Iterator:
    """A Chromium page that refuses every request that is not a local file (with a touch screen if ``touch``)."""
    if not shutil.which(CHROMIUM):
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (make test does it)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        page = browser.new_page(has_touch=touch)
        blocked: list[str] = []

        def route(r):
            if r.request.url.startswith(("file://", "data:", "blob:")):
                return r.continue_()
            blocked.append(r.request.url)
            return r.abort()

        page.route("**/*", route)
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        console: list[str] = []  # what the page's scripts report as errors (console.error, a failed fetch)
        page.on("console", lambda m: console.append(m.text) if m.type == "error" else None)
        missing: list[str] = []  # local files the page asked for and could not load (a font, a script)
        page.on("requestfailed", lambda r: missing.append(r.url) if r.url.startswith("file://") else None)
        page.blocked, page.errors, page.missing, page.console_errors = blocked, errors, missing, console
        try:
            yield page
        finally:
            browser.close()


_PLAYGROUND_GLOBALS = """
window.ready = attnmarlPlayground.loadSpec(
  document.querySelector('script[type="application/json"]').id.replace(/-data$/, '')
).then((data) => {
  const decode = attnmarlPlayground.decodeWeights;
  if (data.simple_spread) {
    window.SPEC = data.simple_spread;
    window.W = {entity: decode(SPEC.entity), flat: decode(SPEC.flat)};
  }
  if (data.collect_treasure) {
    window.TSPEC = data.collect_treasure;
    window.TW = {entity: TSPEC.entity.map(decode)};
  }
  if (data.messages) {
    window.MSPEC = data.messages;
    window.MW = {comm: Object.fromEntries(Object.entries(MSPEC.comm).map(([p, w]) => [p, decode(w)]))};
  }
  if (data.decoys) {
    window.DSPEC = data.decoys;
    window.DW = {entity: decode(DSPEC.entity)};
  }
  if (data.sequence) {
    window.QSPEC = data.sequence;
    window.QW = {mat: decode(QSPEC.mat), entity: decode(QSPEC.entity)};
  }
  window.DATA = data;
});
"""


@contextlib.contextmanager
def playground_page(folder: Path, markup: str, touch: bool = False) -> Iterator:
    """An offline Chromium page with one playground's HTML (attnmarl.notebook.playground.playground_html) as the book
    embeds it, paused, so that only the tests step it; the twins' inputs are globals: for simple_spread SPEC (the
    task's data, weights inflated) and W (its decoded weights), for collect_treasure TSPEC and TW (TW.entity: one
    network per agent type), for messages MSPEC and MW (MW.comm: one communicating actor per policy), for decoys
    DSPEC and DW, for sequence QSPEC and QW. Checks at the end that the page neither asked the network for anything
    nor threw. ``touch``: a touch screen."""
    path = folder / "playground.html"
    path.write_text(f"<!doctype html><meta charset='utf-8'><body>{markup}<script>{_PLAYGROUND_GLOBALS}</script></body>")
    with offline_page(touch) as page:
        page.set_viewport_size({"width": 1200, "height": 900})
        page.goto(path.as_uri())
        page.wait_for_selector(".attnmarl-playground .pg-arena circle")
        page.wait_for_function("window.DATA !== undefined")
        hold_playground(page)
        yield page
        assert not page.blocked and not page.errors


def hold_playground(page) -> None:
    """Stop the page's playground and mark it touched, so that it neither plays on nor starts by itself while a
    test drives it."""
    page.evaluate("() => { const pg = document.querySelector('.attnmarl-playground').playground;"
                  " pg.touched = true; pg.setRunning(false); }")


def touch_drag(page, start: tuple[float, float], end: tuple[float, float], steps: int = 6) -> None:
    """A finger put down at screen point ``start``, drawn to ``end`` and lifted, as the touch screen reports it
    (CDP's Input.dispatchTouchEvent on a ``touch`` page): the browser decides, by touch-action, whether the page
    scrolls or the page's scripts get the pointer events."""
    cdp = page.context.new_cdp_session(page)
    for k in range(steps + 1):
        x, y = (start[i] + (end[i] - start[i]) * k / steps for i in (0, 1))
        cdp.send("Input.dispatchTouchEvent", {"type": "touchStart" if k == 0 else "touchMove",
                                              "touchPoints": [{"x": x, "y": y}]})
    cdp.send("Input.dispatchTouchEvent", {"type": "touchEnd", "touchPoints": []})
    page.wait_for_timeout(300)  # a scroll the drag started settles
    cdp.detach()


_JS_LABEL_BOXES = """() => Array.from(document.querySelectorAll('.pg-arena text'))
  .filter((t) => t.getAttribute('visibility') !== 'hidden' && t.textContent && !t.textContent.startsWith('x, y'))
  .map((t) => { const b = t.getBBox();
    return {name: t.textContent, box: [b.x, b.y, b.x + b.width, b.y + b.height]}; })"""


def arena_labels(page) -> tuple[list[str], list[tuple[str, str]]]:
    """The labels the playground's arena shows, and every pair of them whose drawn boxes (getBBox, in the arena's
    units) touch: the overprints."""
    labels = page.evaluate(_JS_LABEL_BOXES)
    overprints = [(a["name"], b["name"]) for k, a in enumerate(labels) for b in labels[k + 1:]
                  if not (a["box"][2] <= b["box"][0] or b["box"][2] <= a["box"][0]
                          or a["box"][3] <= b["box"][1] or b["box"][3] <= a["box"][1])]
    return [label["name"] for label in labels], overprints


_JS_SMALLEST_TEXT = """() => Math.min(...Array.from(document.querySelectorAll('.attnmarl-playground svg text'))
  .filter((t) => t.textContent.trim() && t.getAttribute('visibility') !== 'hidden' && t.getScreenCTM())
  .map((t) => {
    const m = t.getScreenCTM();
    return parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b);
  }))"""


def smallest_svg_text(page) -> float:
    """The smallest text the playground draws in its SVGs, in screen pixels."""
    return page.evaluate(_JS_SMALLEST_TEXT)


def spread_observations(m: int, episodes: int = 2, seed: int = 0) -> np.ndarray:
    """Observations (batch, m, 6m) of ``episodes`` random-action episodes of simple_spread's batched port (every
    step of each), for the playground's parity tests; ``seed`` picks the actions, m the starts."""
    from attnmarl.envs.spread import BatchedSpread

    rng = np.random.default_rng(seed)
    env = BatchedSpread(episodes, seed=m, N=m)
    rows = []
    for _ in range(env.max_cycles):
        obs, *_ = env.step(rng.integers(0, 5, (episodes, m)))
        rows.append(obs)
    return np.concatenate(rows)


def argmax_rollout(actor, env) -> np.ndarray:
    """The actions (max_cycles, m) the actor's argmax takes in world 0 of a one-world batched port ``env``, from its
    current observation to the episode's end: the Python side of a page-rollout parity test."""
    import torch

    obs, actions = env.observe(), []
    with torch.no_grad():
        for _ in range(env.max_cycles):
            a = actor(torch.from_numpy(obs)).argmax(-1).numpy()
            actions.append(a[0])
            obs, *_ = env.step(a)
    return np.array(actions)


def page_episode_returns(page, lead: str, episodes: int = 48, m: int = 6, seed: int = 1000) -> dict[str, list[float]]:
    """Every team's returns over the playground's next ``episodes`` episodes at m, from the port's start for
    ``seed`` on (the page counts episodes by its lead team, ``lead``)."""
    return page.evaluate("""args => {
      const pg = document.querySelector('.attnmarl-playground').playground;
      pg.setM(args.m, args.seed);
      while (pg.finished[args.lead].length < args.episodes) pg.tick();
      return pg.finished;
    }""", {"lead": lead, "episodes": episodes, "m": m, "seed": seed})
