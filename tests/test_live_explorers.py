"""Explorers that run their model in the page (DESIGN §4, in-page models; issue #35): the JavaScript twins in
``static/live.js`` of chapters 3 and 4's frame functions, held to the package in headless Chromium.

The page computes each frame from the weights and inputs the explorer exports; these tests compare every
number it draws with :func:`attnmarl.notebook.viz.frame_spec` of the Python frame function (which runs the real
PyTorch layer) at settings the precomputed grids never held, and drive the page's own controls.
"""
from __future__ import annotations

import copy
import re

import numpy as np
import pytest
import torch
from browser import offline_page

from attnmarl.algos.maddpg import force_to_action
from attnmarl.checkpoints import load_agent
from attnmarl.notebook.explorers.policy import (
    make_policy_probe,
    policy_alpha,
    policy_checkpoint,
    policy_probe_explorer,
    policy_probe_frame,
)
from attnmarl.notebook.explorers.qnet import (
    FINE_FORCE_GRID,
    J_FORCE,
    q_alpha,
    q_episode_explorer,
    q_episode_frame,
    qnet_checkpoint,
)
from attnmarl.notebook.explorers.self_attention import (
    alpha_explorer,
    alpha_frame,
    alpha_page_data,
    heads_explorer,
    heads_frame,
    heads_page_data,
)
from attnmarl.notebook.explorers.value import (
    make_probe,
    probe_explorer,
    probe_frame,
    trained_episode,
    value_checkpoint,
)
from attnmarl.notebook.viz import frame_spec
from attnmarl.notebook.widgets import Range

TOL = 1e-5
"""How far a number the page computes may be from PyTorch's (float32 in the package, float64 in the page)."""

ALPHA_SETTINGS = [
    dict(m=4, d_q=4, scale=False, seed=0, x1_0=1.5, x1_1=0.0),
    dict(m=2, d_q=1, scale=True, seed=7, x1_0=0.37, x1_1=-1.23),
    dict(m=8, d_q=16, scale=False, seed=3, x1_0=-2.49, x1_1=2.5),
    dict(m=6, d_q=8, scale=True, seed=9, x1_0=0.01, x1_1=0.99),
    dict(m=5, d_q=2, scale=False, seed=5, x1_0=-0.73, x1_1=-0.07),
]
HEADS_SETTINGS = [dict(heads=h, m=m, d_q=d, scale=s, seed=seed, x1_0=x, x1_1=y) for h, m, d, s, seed, x, y in
                  [(4, 5, 2, False, 0, 1.5, 0.0), (1, 2, 1, True, 9, -0.37, 2.41), (3, 8, 8, False, 4, 2.5, -2.5),
                   (2, 7, 4, True, 6, 0.03, -1.19)]]


@pytest.fixture(scope="module")
def probe():
    """Chapter 7's probe: the frozen state (seed 0, step 10) of the shipped critic, and its explorer."""
    agent, config = load_agent(value_checkpoint("spread3-attention"))
    return make_probe(agent, config, seed=0, t=10), probe_explorer(agent, config, seed=0, t=10)


@pytest.fixture(scope="module")
def policy_probe():
    """Chapter 8's probe: the frozen state (seed 0, step 5) of the shipped m = 3 entity actor, and its explorer."""
    agent, config = load_agent(policy_checkpoint("pi-spread3-entity", seed=0))
    return make_policy_probe(agent, config, seed=0, t=5), policy_probe_explorer(agent, config, seed=0, t=5)


@pytest.fixture(scope="module")
def q_explorer():
    """Chapter 9's explorer: the shipped m = 3 attention Q critic over mpe2 episode 3, and what it reads."""
    agent, config = load_agent(qnet_checkpoint("q-spread3-attention"))
    episode = trained_episode(agent, config, 3)
    q_hat, alpha, actions = q_alpha(agent, episode)
    return agent, episode, q_hat, alpha, actions, q_episode_explorer(agent, config, seed=3)


@pytest.fixture(scope="module")
def page(probe, policy_probe, q_explorer):
    """One offline page with the five in-page explorers: chapters 3 and 4's layers, the probes of chapters 7 and
    8, and chapter 9's Q landscape."""
    explorers = [alpha_explorer(), heads_explorer(), probe[1], policy_probe[1], q_explorer[-1]]
    with offline_page() as p:
        p.set_content(f"<html><body>{''.join(e.static_html() for e in explorers)}</body></html>")
        p.wait_for_selector(".ax-live .ax-panels svg", timeout=20_000)
        yield p
        assert not p.errors, p.errors


def _compare(js: dict, python: dict) -> float:
    """The largest difference between the numbers of two frames, after checking that everything else (panel
    kinds, titles, labels, colour scales, the caption) is the same."""
    assert js["caption"] == python["caption"]
    assert len(js["panels"]) == len(python["panels"])
    worst = 0.0
    for a, b in zip(js["panels"], python["panels"]):
        numbers = {"values", "xy", "vmin", "vmax", "lim", "emphasis", "radius"}
        assert {k: v for k, v in a.items() if k not in numbers} == {k: v for k, v in b.items() if k not in numbers}
        for key in numbers & set(b):
            worst = max(worst, float(np.abs(np.asarray(a[key], float) - np.asarray(b[key], float)).max()))
    return worst


@pytest.mark.parametrize("settings", ALPHA_SETTINGS, ids=lambda s: "-".join(f"{v}" for v in s.values()))
def test_the_pages_alpha_explorer_computes_what_pytorch_computes(page, settings):
    js = page.evaluate("([s, d]) => attnmarlLiveModels.alpha(s, d)", [settings, alpha_page_data()])
    python = frame_spec(alpha_frame(**settings), digits=12)
    worst = _compare(js, python)
    assert worst <= TOL, f"{settings}: the page is {worst:.1e} from PyTorch"


@pytest.mark.parametrize("settings", HEADS_SETTINGS, ids=lambda s: "-".join(f"{v}" for v in s.values()))
def test_the_pages_heads_explorer_computes_what_pytorch_computes(page, settings):
    js = page.evaluate("([s, d]) => attnmarlLiveModels.heads(s, d)", [settings, heads_page_data()])
    worst = _compare(js, frame_spec(heads_frame(**settings), digits=12))
    assert worst <= TOL, f"{settings}: the page is {worst:.1e} from PyTorch"


def _drawn_alpha(page, explorer: int) -> np.ndarray:
    """The α the explorer's second panel draws (its cells' data-value), as a matrix."""
    svg = page.locator(".ax-live").nth(explorer).locator("svg.ax-heatmap").first
    values = [float(v) for v in re.findall(r'data-value="([^"]+)"', svg.inner_html())]
    side = int(round(len(values) ** 0.5))
    return np.array(values).reshape(side, side)


def test_moving_x1_anywhere_redraws_alpha_as_pytorch_computes_it(page):
    """Drive the page's own controls: x¹ to 0.37 (between every grid stop the precomputed face had) and m to 6;
    the drawn α is the package's at those settings, and the caption follows."""
    root = page.locator(".ax-live").first
    x1 = root.locator("input[type=range]").nth(3)  # m, d_q, seed, then x¹'s coordinates
    assert x1.get_attribute("step") == "0.01"
    x1.evaluate("(s) => { s.value = '0.37'; s.dispatchEvent(new Event('input')); }")
    m = root.locator("input[type=range]").first
    m.evaluate("(s) => { s.value = '4'; s.dispatchEvent(new Event('input')); }")  # the 5th of m = 2..8: 6
    expected = frame_spec(alpha_frame(m=6, d_q=4, scale=False, seed=0, x1_0=0.37, x1_1=0.0), digits=12)
    np.testing.assert_allclose(_drawn_alpha(page, 0), expected["panels"][1]["values"], atol=TOL)
    assert root.locator(".ax-caption").inner_text() == expected["caption"]
    assert root.locator(".ax-value").nth(3).inner_text() == "0.37"
    assert "Live in this page" in root.locator(".ax-note").inner_text()


def test_the_heads_explorer_draws_one_panel_per_head_in_the_page(page):
    root = page.locator(".ax-live").nth(1)
    heads = root.locator("input[type=range]").first
    heads.evaluate("(s) => { s.value = '1'; s.dispatchEvent(new Event('input')); }")  # l = 2
    assert root.locator("svg.ax-heatmap").count() == 2
    root.locator("input[type=checkbox]").check()  # scaled scores: other weights, the same layer
    expected = frame_spec(heads_frame(heads=2, m=5, d_q=2, scale=True, seed=0), digits=12)
    np.testing.assert_allclose(_drawn_alpha(page, 1), expected["panels"][1]["values"], atol=TOL)


def test_ranges_and_page_models_refuse_what_they_cannot_show():
    with pytest.raises(ValueError, match="low < high"):
        Range("x", 1.0, -1.0, 0.1, default=0.0)
    with pytest.raises(ValueError, match="finite numbers"):
        Range("x", -1.0, 1.0, float("nan"), default=0.0)
    with pytest.raises(ValueError, match="include the default"):
        Range("x", -1.0, 1.0, 0.1, default=0.5, static=[0.0])
    with pytest.raises(ValueError, match=r"lie in \[0.0, 1.0\]"):
        Range("x", 0.0, 1.0, 0.5, 0.5, static=[0.5, 2.0])
    with pytest.raises(ValueError, match="finite numbers"):
        Range("x", False, 1.0, 0.5, 0.5)


# ---- chapter 7's arena probe: the trained critic in the page --------------------------------------------

PROBE_SETTINGS = [(0, 0.37, -0.83, 0), (1, -1.0, 1.0, 2), (2, 0.05, 0.61, 1), (0, -0.42, 0.0, 1)]


def _torch_probe(probe, moved: int, x: float, y: float) -> tuple[np.ndarray, np.ndarray]:
    """v_hat (m,) and the first block's alpha (l, m, m) with agent ``moved`` at (x, y), in float64."""
    port, critic = probe.port, copy.deepcopy(probe.agent.critic).double()
    saved = port.agent_pos.copy()
    port.agent_pos[0, moved] = (x, y)
    o = torch.from_numpy(port.observe().astype(np.float64))
    port.agent_pos[:] = saved
    with torch.no_grad():
        v, alphas = critic.values_and_alpha(o)
        norm = probe.agent.value_norm
        v = v * (norm.var.double() + norm.eps).sqrt() + norm.mean.double()
    return v[0].numpy(), alphas[0][0].numpy()


@pytest.mark.parametrize("setting", PROBE_SETTINGS, ids=str)
def test_the_pages_critic_probe_computes_what_pytorch_computes(page, probe, setting):
    """Move an agent anywhere: the page recomputes every observation and runs the trained critic; its α is
    PyTorch's within 1e-5, and the frame (rings, values, caption) is the package's probe frame."""
    probe_state, explorer = probe
    moved, x, y, query = setting
    data = explorer.page.data()
    settings = {"moved": data["choices"][moved], "x": x, "y": y, "query": data["choices"][query]}
    js = page.evaluate("([s, d]) => attnmarlLiveModels.probe(s, d)", [settings, data])
    v, alpha = _torch_probe(probe_state, moved, x, y)
    drawn = np.array(js["panels"][1]["values"])
    assert np.abs(drawn[:-1] - alpha[:, query]).max() <= TOL and np.abs(drawn[-1] - alpha.mean(0)[query]).max() <= TOL
    python = frame_spec(probe_frame(probe_state, moved, x, y, query), digits=12)
    assert js["panels"][2] == python["panels"][2] and js["caption"] == python["caption"]
    assert _compare(js, python) <= 1e-4  # the package's frame runs in float32
    assert float(re.search(r"value: (-?[\d.]+)", js["caption"]).group(1)) == pytest.approx(v[query], abs=0.006)


def test_moving_a_probe_agent_in_the_page_moves_its_values(page, probe):
    """The page's own controls: agent a2, moved to x = 0.37, and the values and rings follow."""
    root = page.locator(".ax-live").nth(2)
    root.locator("select").first.select_option(index=1)
    x = root.locator("input[type=range]").first
    x.evaluate("(s) => { s.value = '0.37'; s.dispatchEvent(new Event('input')); }")
    y = float(root.locator("input[type=range]").nth(1).input_value())
    expected = frame_spec(probe_frame(probe[0], 1, 0.37, y, 0), digits=12)
    assert root.locator(".ax-caption").inner_text() == expected["caption"]
    assert root.locator(".ax-text pre").inner_text() == expected["panels"][2]["text"]


# ---- chapter 8's policy probe: the trained entity actor in the page -------------------------------------

POLICY_SETTINGS = [(3, 0.37, -0.83, 0), (0, -0.61, 0.22, 2), (5, 0.9, 0.9, 1), (1, 0.0, -1.0, 1)]
"""(moved entity: agents 0-2, landmarks 3-5; x; y; the agent whose rings are drawn)."""


def _torch_policy(probe_state, moved: int, x: float, y: float) -> tuple[np.ndarray, np.ndarray]:
    """The entity actor in float64 with entity ``moved`` at (x, y): every agent's α over the entities (mean of the
    heads; m, entities) and its π (m, 5)."""
    port, m = probe_state.port, probe_state.port.n_agents
    positions = port.agent_pos if moved < m else port.landmark_pos
    saved = positions.copy()
    positions[0, moved if moved < m else moved - m] = (x, y)
    obs = port.observe().astype(np.float64)
    positions[:] = saved
    actor64 = copy.deepcopy(probe_state.agent.actor).double()
    with torch.no_grad():
        logits, by_token = actor64.outputs_and_alpha(torch.from_numpy(obs))  # (1, m, 5), (1, m, l, tokens)
    entities = list(policy_alpha(probe_state.agent, probe_state.config, obs).entities)
    alpha = np.zeros((m, len(entities)))
    for i, names in enumerate(actor64.token_names):
        alpha[i, [entities.index(n) for n in names]] = by_token[0, i].mean(0).numpy()
    return alpha, torch.softmax(logits[0], -1).numpy()


@pytest.mark.parametrize("setting", POLICY_SETTINGS, ids=str)
def test_the_pages_policy_probe_computes_what_pytorch_computes(page, policy_probe, setting):
    """Move an agent or a landmark anywhere: the page recomputes the observations and runs the entity actor;
    its α and π are PyTorch's within 1e-5 (in float64), and the frame is the package's probe frame."""
    probe_state, explorer = policy_probe
    moved, x, y, query = setting
    data = explorer.page.data()
    settings = {"moved": data["choices"][moved], "x": x, "y": y, "query": data["choices"][query]}
    js = page.evaluate("([s, d]) => attnmarlLiveModels.policyProbe(s, d)", [settings, data])
    alpha, pi = _torch_policy(probe_state, moved, x, y)
    assert np.abs(np.array(js["panels"][1]["values"]) - alpha).max() <= TOL
    assert np.abs(np.array(js["panels"][2]["values"]) - pi).max() <= TOL
    python = frame_spec(policy_probe_frame(probe_state, moved, x, y, query), digits=12)
    assert js["caption"] == python["caption"]
    assert _compare(js, python) <= 1e-4  # the package's frame runs in float32


def test_moving_a_landmark_in_the_page_redraws_the_policy(page, policy_probe):
    root = page.locator(".ax-live").nth(3)
    assert root.locator("select").first.input_value() == "3"  # a landmark by default
    y = root.locator("input[type=range]").nth(1)
    y.evaluate("(s) => { s.value = '-0.77'; s.dispatchEvent(new Event('input')); }")
    x = float(root.locator("input[type=range]").first.input_value())
    expected = frame_spec(policy_probe_frame(policy_probe[0], 3, x, -0.77, 0), digits=12)
    assert root.locator(".ax-caption").inner_text() == expected["caption"]
    drawn = [float(v) for v in re.findall(r'data-value="([^"]+)"', root.locator("svg.ax-heatmap").nth(1).inner_html())]
    np.testing.assert_allclose(drawn, np.ravel(expected["panels"][2]["values"]), atol=1e-4)


# ---- chapter 9's Q landscape: the trained Q critic in the page ------------------------------------------

@pytest.mark.parametrize("t,i,j,force", [(0, 0, 1, None), (7, 2, 2, None), (19, 1, 0, None), (4, 0, 1, (0.3, -0.7)),
                                         (11, 2, 2, (-1.0, 0.1))])
def test_the_pages_q_landscape_computes_what_pytorch_computes(page, q_explorer, t, i, j, force):
    """The page runs the Q critic on the recorded step with agent j's force swept over a 21 x 21 grid: every
    q^i it draws is PyTorch's within 1e-5 (in float64), and the frame is the package's. With j's force set (a click
    on the grid), α and the values are the critic's with that action for j."""
    agent, episode, q_hat, alpha, actions, explorer = q_explorer
    data = explorer.page.data()
    settings = {"t": t, "i": data["choices"][i], "j": data["choices"][j], "force": J_FORCE[force is not None],
                "fx": (force or (0.0, 0.0))[0], "fy": (force or (0.0, 0.0))[1]}
    js = page.evaluate("([s, d]) => attnmarlLiveModels.qEpisode(s, d)", [settings, data])
    critic = copy.deepcopy(agent.critic).double()
    grid = FINE_FORCE_GRID
    fx, fy = np.meshgrid(grid, grid[::-1])
    a = torch.from_numpy(actions[t]).double().expand(fx.size, -1, -1).clone()
    a[:, j] = force_to_action(torch.from_numpy(np.stack([fx.ravel(), fy.ravel()], -1)))
    o = torch.from_numpy(episode.obs[t]).double().expand(fx.size, -1, -1)
    now = torch.from_numpy(actions[t:t + 1]).double()
    if force is not None:
        now[0, j] = force_to_action(torch.tensor(force, dtype=torch.float64))
    with torch.no_grad():
        response = critic(o, a)[:, i].numpy().reshape(fx.shape)
        taken = critic(o[:1], torch.from_numpy(actions[t:t + 1]).double())
        q_now, alphas = critic.values_and_alpha(o[:1], now)
    assert np.abs(np.array(js["panels"][2]["values"]) - (response - taken[0, i].item())).max() <= TOL
    assert np.abs(np.array(js["panels"][1]["values"])[:-1] - alphas[0][0][:, i].numpy()).max() <= TOL
    drawn = [float(v) for v in re.findall(r"q̂ of \S+:\s+(-?[\d.]+)", js["panels"][3]["text"])]
    assert np.abs(np.array(drawn) - q_now[0].numpy()).max() <= 0.006  # shown to 2 decimals
    python = frame_spec(q_episode_frame(agent, episode, q_hat, alpha, actions, t, i, j, grid, force), digits=12)
    assert js["caption"] == python["caption"] and js["panels"][3] == python["panels"][3]
    assert _compare(js, python) <= 1e-4  # the package's frame runs in float32


def test_stepping_the_q_explorer_in_the_page_redraws_the_landscape(page, q_explorer):
    agent, episode, q_hat, alpha, actions, _ = q_explorer
    root = page.locator(".ax-live").nth(4)
    assert "Live in this page" in root.locator(".ax-note").inner_text()
    root.locator("input[type=range]").first.evaluate("(s) => { s.value = '12'; s.dispatchEvent(new Event('input')); }")
    expected = frame_spec(q_episode_frame(agent, episode, q_hat, alpha, actions, 12, 0, 1, FINE_FORCE_GRID), digits=12)
    assert root.locator(".ax-caption").inner_text() == expected["caption"]
    assert root.locator("svg.ax-heatmap").nth(1).locator("rect[data-value]").count() == 21 * 21


def test_at_390_px_every_explorer_fits_and_its_panels_keep_their_size(page):
    """A phone's width: no explorer pushes the page sideways; a panel is never shrunk (its labels and cells keep
    their size, issue 43): a row of panels wider than the explorer scrolls sideways in its own box."""
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        page.wait_for_timeout(100)
        wide = page.evaluate("""() => [document.documentElement.scrollWidth,
            ...Array.from(document.querySelectorAll('.ax-panels'), (p) => p.getBoundingClientRect().right)]""")
        shrunk = page.evaluate("""() => Array.from(document.querySelectorAll('.ax-panels > svg'),
            (s) => s.getBoundingClientRect().width - s.width.baseVal.value).filter((d) => Math.abs(d) >= 1)""")
    finally:
        page.set_viewport_size({"width": 1280, "height": 720})
    assert wide[0] <= 390 and max(wide[1:]) <= 390, wide
    assert not shrunk, shrunk


# ---- the figure as a control (issue 43): drag, keyboard, touch, a steady height -------------------------------

def _explorer(page, index: int):
    """The index-th in-page explorer of the page: its root element and its current settings."""
    root = page.locator(".ax-live").nth(index)
    return root, root.evaluate("(el) => ({...el.explorer.settings})")


def _drag(page, handle, dx: float, dy: float) -> tuple[float, float]:
    """Drag ``handle`` with the mouse by (dx, dy) screen pixels, from its centre; returns where the pointer let go."""
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + dx / 2, y + dy / 2, steps=3)
    page.mouse.move(x + dx, y + dy, steps=3)
    page.mouse.up()
    return x + dx, y + dy


def _world(page, root, panel: int, pixel: tuple[float, float]) -> tuple[float, float]:
    """The world point drawn at screen ``pixel`` in panel ``panel`` of an explorer (its data-square)."""
    return root.locator(".ax-panels > *").nth(panel).evaluate(
        "(svg, p) => attnmarlDrag.toWorld(svg, {clientX: p[0], clientY: p[1]})", list(pixel))


def test_dragging_x1_in_the_figure_moves_it_as_its_sliders_would(page):
    """Chapter 3: drag x¹ in the input plot; the sliders follow (value and shown number), x¹ lands under the
    pointer, and the drawn α is PyTorch's for the new position within 1e-5."""
    root, before = _explorer(page, 0)
    handle = root.locator(".ax-handle")
    assert handle.count() == 1 and handle.get_attribute("tabindex") == "0"
    assert handle.get_attribute("aria-label").startswith("input x¹")
    end = _drag(page, handle, -60, -45)
    _, after = _explorer(page, 0)
    x, y = _world(page, root, 0, end)
    assert abs(after["x1_0"] - x) <= 0.006 and abs(after["x1_1"] - y) <= 0.006 and after["x1_0"] != before["x1_0"]
    sliders = root.locator("input[type=range]")
    assert float(sliders.nth(3).input_value()) == after["x1_0"] and float(sliders.nth(4).input_value()) == after["x1_1"]
    assert root.locator(".ax-value").nth(4).inner_text() == f"{after['x1_1']:.2f}"
    settings = {k: after[k] for k in ("m", "d_q", "scale", "seed", "x1_0", "x1_1")}
    expected = frame_spec(alpha_frame(**settings), digits=12)
    np.testing.assert_allclose(_drawn_alpha(page, 0), expected["panels"][1]["values"], atol=TOL)
    assert root.locator(".ax-caption").inner_text() == expected["caption"]


def test_the_keyboard_moves_x1_in_the_heads_explorer_and_keeps_its_focus(page):
    """Chapter 4's continuous control: Tab to x¹, arrows move it by 0.05 (Shift: 0.25); focus stays on x¹ through
    the redraws, and every head's α is PyTorch's for the new x¹ within 1e-5."""
    root, before = _explorer(page, 1)
    root.locator("input[type=range]").last.focus()
    page.keyboard.press("Tab")  # from the last control into the figure: x¹
    assert page.evaluate("document.activeElement.getAttribute('aria-label')").startswith("input x¹")
    for key in ("ArrowRight", "ArrowRight", "ArrowDown", "Shift+ArrowLeft"):
        page.keyboard.press(key)
    _, after = _explorer(page, 1)
    assert after["x1_0"] == pytest.approx(before["x1_0"] - 0.15)
    assert after["x1_1"] == pytest.approx(before["x1_1"] - 0.05)
    assert page.evaluate("document.activeElement.classList.contains('ax-handle')")
    assert root.locator(".ax-value").nth(4).inner_text() == f"{after['x1_0']:.2f}"
    expected = frame_spec(heads_frame(**{k: after[k] for k in ("heads", "m", "d_q", "scale", "seed", "x1_0", "x1_1")}),
                          digits=12)
    drawn = [[float(v) for v in re.findall(r'data-value="([^"]+)"', svg.inner_html())]
             for svg in root.locator("svg.ax-heatmap").all()]
    np.testing.assert_allclose(np.ravel(drawn), np.ravel([p["values"] for p in expected["panels"][1:]]), atol=TOL)


def test_dragging_an_agent_in_the_critic_probe_moves_that_agent(page, probe):
    """Chapter 7: drag agent a3 (another than the one the controls moved): the 'move agent' control switches to it,
    x and y follow the pointer, and α and v̂ are PyTorch's for the new state within 1e-5; Enter on a3 puts the
    rings on its value."""
    root, _ = _explorer(page, 2)
    handle = root.locator('.ax-handle[data-key="2"]')
    assert handle.get_attribute("aria-label").startswith("agent a3")
    _drag(page, handle, 25, 30)
    _, after = _explorer(page, 2)
    data = probe[1].page.data()
    assert after["moved"] == data["choices"][2] and root.locator("select").first.input_value() == "2"
    query = data["choices"].index(after["query"])
    v, alpha = _torch_probe(probe[0], 2, after["x"], after["y"])
    drawn = np.array(_drawn_rows(root))
    assert np.abs(drawn[:-1] - alpha[:, query]).max() <= TOL and np.abs(drawn[-1] - alpha.mean(0)[query]).max() <= TOL
    root.locator('.ax-handle[data-key="2"]').focus()
    page.keyboard.press("Enter")
    assert _explorer(page, 2)[1]["query"] == data["choices"][2]
    expected = frame_spec(probe_frame(probe[0], 2, after["x"], after["y"], 2), digits=12)
    assert root.locator(".ax-caption").inner_text() == expected["caption"]


def _drawn_rows(root) -> np.ndarray:
    """The values of an explorer's first heatmap, row by row (its cells' data-value, grouped by their y)."""
    cells = root.locator("svg.ax-heatmap").first.evaluate(
        "(s) => Array.from(s.querySelectorAll('rect[data-value]'), (r) => [Number(r.getAttribute('y')), "
        "Number(r.dataset.value)])")
    return np.array([[v for y, v in cells if y == row] for row in sorted({y for y, _ in cells})])


def test_the_keyboard_moves_a_landmark_in_the_policy_probe(page, policy_probe):
    """Chapter 8: a landmark moved with the arrow keys; α and π are the entity actor's (PyTorch, float64) for the
    new position within 1e-5, and the sliders show it."""
    root, before = _explorer(page, 3)
    data = policy_probe[1].page.data()
    m = len(data["pos"])
    handle = root.locator(f'.ax-handle[data-key="{m + 1}"]')  # landmark 2
    assert handle.get_attribute("aria-label").startswith("landmark")
    handle.focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowUp")
    _, after = _explorer(page, 3)
    start = data["landmarks"][1]
    assert after["moved"] == data["choices"][m + 1]
    assert after["x"] == pytest.approx(round(start[0] - 0.05, 2), abs=0.006)
    assert after["y"] == pytest.approx(round(start[1] + 0.05, 2), abs=0.006)
    assert float(root.locator("input[type=range]").first.input_value()) == after["x"]
    alpha, pi = _torch_policy(policy_probe[0], m + 1, after["x"], after["y"])
    drawn = root.locator("svg.ax-heatmap")
    shown = [[float(v) for v in re.findall(r'data-value="([^"]+)"', drawn.nth(k).inner_html())] for k in (0, 1)]
    assert np.abs(np.array(shown[0]) - alpha[:, data["keys"]].ravel()).max() <= TOL
    assert np.abs(np.array(shown[1]) - pi.ravel()).max() <= TOL


def test_clicking_a_force_in_the_q_grid_sets_agent_js_action(page, q_explorer):
    """Chapter 9: a click on a cell of the force grid sets j's force to it (the controls follow, the cell is
    outlined), and α and q̂ are the critic's for that action (the package's frame); the arrow keys move the force
    by one cell, Enter goes back to the action taken."""
    agent, episode, q_hat, alpha, actions, _ = q_explorer
    root, before = _explorer(page, 4)
    grid = root.locator("svg.ax-handle-grid")
    grid.locator("rect[data-value]").nth(3 * 21 + 15).click()  # F_y = 0.7 (row 3 from the top), F_x = 0.5
    _, after = _explorer(page, 4)
    assert (after["force"], after["fx"], after["fy"]) == (J_FORCE[1], 0.5, 0.7)
    assert root.locator(".ax-chosen").count() == 1 and root.locator("select").nth(2).input_value() == "1"
    names = q_explorer[-1].page.data()["choices"]
    i, j = names.index(after["i"]), names.index(after["j"])

    def expected(force):
        return frame_spec(q_episode_frame(agent, episode, q_hat, alpha, actions, after["t"], i, j, FINE_FORCE_GRID,
                                          force), digits=12)

    assert root.locator(".ax-caption").inner_text() == expected((0.5, 0.7))["caption"]
    assert root.locator(".ax-text pre").inner_text() == expected((0.5, 0.7))["panels"][3]["text"]
    np.testing.assert_allclose(_drawn_rows(root), expected((0.5, 0.7))["panels"][1]["values"], atol=1e-4)
    assert page.evaluate("document.activeElement.classList.contains('ax-handle-grid')")
    page.keyboard.press("ArrowDown")
    assert _explorer(page, 4)[1]["fy"] == pytest.approx(0.6)
    assert root.locator(".ax-caption").inner_text() == expected((0.5, 0.6))["caption"]
    page.keyboard.press("Enter")
    assert _explorer(page, 4)[1]["force"] == J_FORCE[0] and root.locator(".ax-chosen").count() == 0
    assert root.locator(".ax-caption").inner_text() == expected(None)["caption"]


def test_explorer_panels_keep_their_height_when_controls_change(page):
    """No jump under the reader: the panels and caption keep their height when m, l or j's force changes."""
    def heights(k):
        return page.locator(".ax-live").nth(k).evaluate(
            "(el) => [el.querySelector('.ax-panels').offsetHeight, el.querySelector('.ax-caption').offsetHeight]")

    for k, index, values in ((0, 0, ("0", "6")), (1, 1, ("0", "6")), (1, 0, ("0", "3")), (4, 0, ("0", "25"))):
        slider = page.locator(".ax-live").nth(k).locator("input[type=range]").nth(index)
        seen = []
        for value in values:
            slider.evaluate("(s, v) => { s.value = v; s.dispatchEvent(new Event('input')); }", value)
            seen.append(heights(k))
        assert seen[0] == seen[1], (k, index, seen)
