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
HEADS_SETTINGS = [dict(heads=h, m=m, d_q=d, scale=s, seed=seed) for h, m, d, s, seed in
                  [(4, 5, 2, False, 0), (1, 2, 1, True, 9), (3, 8, 8, False, 4), (2, 7, 4, True, 6)]]


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
    np.testing.assert_allclose(_drawn_alpha(page, 1), expected["panels"][0]["values"], atol=TOL)


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


@pytest.mark.parametrize("setting", POLICY_SETTINGS, ids=str)
def test_the_pages_policy_probe_computes_what_pytorch_computes(page, policy_probe, setting):
    """Move an agent or a landmark anywhere: the page recomputes the observations and runs the entity actor;
    its α and π are PyTorch's within 1e-5 (in float64), and the frame is the package's probe frame."""
    probe_state, explorer = policy_probe
    moved, x, y, query = setting
    data = explorer.page.data()
    settings = {"moved": data["choices"][moved], "x": x, "y": y, "query": data["choices"][query]}
    js = page.evaluate("([s, d]) => attnmarlLiveModels.policyProbe(s, d)", [settings, data])
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
    pi = torch.softmax(logits[0], -1).numpy()
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

@pytest.mark.parametrize("t,i,j", [(0, 0, 1), (7, 2, 2), (19, 1, 0)])
def test_the_pages_q_landscape_computes_what_pytorch_computes(page, q_explorer, t, i, j):
    """The page runs the Q critic on the recorded step with agent j's force swept over a 21 x 21 grid: every
    q^i it draws is PyTorch's within 1e-5 (in float64), and the frame is the package's."""
    agent, episode, q_hat, alpha, actions, explorer = q_explorer
    data = explorer.page.data()
    settings = {"t": t, "i": data["choices"][i], "j": data["choices"][j]}
    js = page.evaluate("([s, d]) => attnmarlLiveModels.qEpisode(s, d)", [settings, data])
    critic = copy.deepcopy(agent.critic).double()
    grid = FINE_FORCE_GRID
    fx, fy = np.meshgrid(grid, grid[::-1])
    a = torch.from_numpy(actions[t]).double().expand(fx.size, -1, -1).clone()
    a[:, j] = force_to_action(torch.from_numpy(np.stack([fx.ravel(), fy.ravel()], -1)))
    o = torch.from_numpy(episode.obs[t]).double().expand(fx.size, -1, -1)
    with torch.no_grad():
        response = critic(o, a)[:, i].numpy().reshape(fx.shape)
        taken, alphas = critic.values_and_alpha(o[:1], torch.from_numpy(actions[t:t + 1]).double())
    assert np.abs(np.array(js["panels"][2]["values"]) - (response - taken[0, i].item())).max() <= TOL
    assert np.abs(np.array(js["panels"][1]["values"])[:-1] - alphas[0][0][:, i].numpy()).max() <= TOL
    python = frame_spec(q_episode_frame(agent, episode, q_hat, alpha, actions, t, i, j, grid), digits=12)
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


def test_at_390_px_every_explorer_fits_without_a_sideways_swipe(page):
    """A phone's width: each panel scales down to the explorer's width (its SVG keeps a viewBox), so neither the
    page nor any explorer's row of panels scrolls sideways."""
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        page.wait_for_timeout(100)
        wide = page.evaluate("""() => [document.documentElement.scrollWidth,
            ...Array.from(document.querySelectorAll('.ax-panels'), (p) => p.scrollWidth - p.clientWidth)]""")
    finally:
        page.set_viewport_size({"width": 1280, "height": 720})
    assert wide[0] <= 390 and max(wide[1:]) <= 1, wide
