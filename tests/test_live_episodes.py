"""Episode explorers that play their episode in the page (issue 43, item 2): chapter 8's entity actor and chapter 11's
targeted-messages actor, the playground's own weights, step through an mpe2 episode in live.js with playground.js's
world and actors, and the reader may move an entity at any step. Held here, in headless Chromium, to the package:
the world's positions to mpe2's (and, after a move, to the batched port's), every step's actions exactly, and alpha
and pi to PyTorch's in float64 within 1e-5; the frames to the Python frame functions' (captions equal)."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from browser import offline_page

from attnmarl.checkpoints import load_agent, shipped_checkpoint
from attnmarl.notebook.explorers.comm import listening_explorer
from attnmarl.notebook.explorers.policy import (
    NOTHING_MOVED,
    continue_episode,
    plays_in_playground,
    policy_checkpoint,
    policy_episode_explorer,
    trained_episode,
)
from attnmarl.notebook.playground import COMM_ACTORS, ENTITY_ACTOR, TREASURE_ACTOR
from attnmarl.notebook.viz import frame_spec

TOL = 1e-5
"""How far a number the page computes may be from PyTorch's in float64 (the page computes in float64 too)."""

POLICY_SETTINGS = [dict(t=0, agent_index=0, head="mean"), dict(t=9, agent_index=4, head="2"),
                   dict(t=25, agent_index=2, head="1"),
                   dict(t=12, agent_index=1, head="mean", moved=9, x=0.37, y=-0.83, at=5),
                   dict(t=20, agent_index=5, head="mean", moved=3, x=-1.2, y=0.41, at=14),
                   dict(t=3, agent_index=0, head="2", moved=7, x=0.0, y=1.5, at=6)]
"""(step, agent, head; an entity moved: index into world.entities, to (x, y), at step ``at``): the last one shows a
step before its move, the recorded episode."""

LISTENING_SETTINGS = [dict(t=0, receiver=0), dict(t=17, receiver=3),
                      dict(t=11, receiver=5, moved=8, x=-0.6, y=0.25, at=4),
                      dict(t=25, receiver=2, moved=1, x=0.9, y=-0.9, at=10)]


@pytest.fixture(scope="module", autouse=True)
def one_thread_here():
    """Small models on one torch thread: on a busy 2-core machine two threads make each step 40 times slower."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def policy():
    """Chapter 8's explorer (the playground's m = 6 entity actor, mpe2 episode 3), its agent and the episode."""
    agent, config = load_agent(policy_checkpoint("pi-spread6-entity", seed=0))
    return agent, config, policy_episode_explorer(agent, config, seed=3), trained_episode(agent, config, 3)


@pytest.fixture(scope="module")
def listening():
    """Chapter 11's explorer (the playground's targeted-messages actor, mpe2 episode 0), its agent and the episode."""
    agent, config = load_agent(shipped_checkpoint("comm", "comm-narrow-spread6-attention", 0))
    return agent, config, listening_explorer(agent, config, seed=0), trained_episode(agent, config, 0)


@pytest.fixture(scope="module")
def page(policy, listening):
    """One offline page with both explorers' in-page faces, as the book embeds them."""
    with offline_page() as p:
        p.set_viewport_size({"width": 1280, "height": 900})
        p.set_content(f"<html><body>{policy[2].static_html()}{listening[2].static_html()}</body></html>")
        p.wait_for_selector(".ax-live .ax-panels svg", timeout=20_000)
        yield p
        assert not p.errors and not p.blocked, (p.errors, p.blocked)


def _settings(explorer, values: dict) -> dict:
    """Explorer settings from test values (an agent or an entity by its index), the other controls at their
    defaults."""
    data = explorer.page.data()
    settings = {c.name: c.default for c in explorer.controls}
    menus = {"agent_index": data["agents"], "receiver": data["agents"], "moved": data["choices"]}
    settings.update({k: menus[k][v] if k in menus else v for k, v in values.items()})
    return settings


def _played(agent, config, recorded, settings: dict, choices: list[str]):
    """The episode the package shows for ``settings``: the recorded one, or the one where an entity is moved."""
    if settings["moved"] == NOTHING_MOVED:
        return recorded
    return continue_episode(agent, config, recorded, choices.index(settings["moved"]), (settings["x"], settings["y"]),
                            settings["at"])


def _in_page(page, model: str, settings: dict, data: dict) -> dict:
    """The page's frame for ``settings`` and what it played: every step's positions and actions."""
    return page.evaluate("""([model, s, d]) => {
      const frame = attnmarlLiveModels[model](s, d);
      const key = s.moved === 'nothing' ? 'recorded' : [d.choices.indexOf(s.moved), s.x, s.y, s.at].join();
      return {frame, positions: d.runs[key].positions, actions: d.runs[key].decisions.map((r) => r.actions)};
    }""", [model, settings, data])


def _greedy(agent, episode) -> np.ndarray:
    """The actions the agent takes at every step of ``episode`` (the argmax of its float32 actor, as mpe2 played)."""
    with torch.no_grad():
        return agent.actor(torch.from_numpy(episode.obs)).argmax(-1).numpy()


def _compare(js: dict, python: dict) -> float:
    """The largest difference between the numbers of two frames, after checking that all else is the same."""
    assert js["caption"] == python["caption"]
    worst = 0.0
    for a, b in zip(js["panels"], python["panels"], strict=True):
        numbers = {"values", "xy", "vmin", "vmax", "lim", "emphasis", "radius"}
        assert {k: v for k, v in a.items() if k not in numbers} == {k: v for k, v in b.items() if k not in numbers}
        for key in numbers & set(b):
            worst = max(worst, float(np.abs(np.asarray(a[key], float) - np.asarray(b[key], float)).max()))
    return worst


def _check_world(run: dict, agent, episode) -> None:
    """The page played the package's episode: every step's positions within 1e-5, every action the same."""
    assert np.abs(np.array(run["positions"]) - episode.positions).max() <= TOL
    np.testing.assert_array_equal(np.array(run["actions"][:-1]), _greedy(agent, episode)[:-1])


@pytest.mark.parametrize("values", POLICY_SETTINGS, ids=str)
def test_the_page_plays_the_policy_episode_as_mpe2_and_pytorch_do(page, policy, values):
    """The page's episode (recorded start, or an entity moved at a step) is the package's step for step, alpha and
    pi are the entity actor's in float64 within 1e-5, and the frame is the package's frame."""
    agent, config, explorer, recorded = policy
    settings = _settings(explorer, values)
    data = explorer.page.data()
    run = _in_page(page, "policyEpisode", settings, data)
    episode = _played(agent, config, recorded, settings, data["choices"])
    _check_world(run, agent, episode)
    actor = copy.deepcopy(agent.actor).double()
    t, i = settings["t"], data["agents"].index(settings["agent_index"])
    with torch.no_grad():
        logits, by_token = actor.outputs_and_alpha(torch.from_numpy(episode.obs[t:t + 1].astype(np.float64)))
    alpha = np.zeros((by_token.shape[2], len(episode.entities)))  # heads x entities, as the page spreads it
    alpha[:, [episode.entities.index(name) for name in actor.token_names[i]]] = by_token[0, i].numpy()
    drawn = np.array(run["frame"]["panels"][1]["values"])
    assert np.abs(drawn[:-1] - alpha).max() <= TOL and np.abs(drawn[-1] - alpha.mean(0)).max() <= TOL
    assert np.abs(np.array(run["frame"]["panels"][2]["values"]) - torch.softmax(logits[0], -1).numpy()).max() <= TOL
    assert _compare(run["frame"], frame_spec(explorer.frame_fn(**settings), digits=12)) <= 1e-4  # float32 frames


@pytest.mark.parametrize("values", LISTENING_SETTINGS, ids=str)
def test_the_page_plays_the_listening_episode_as_mpe2_and_pytorch_do(page, listening, values):
    """Chapter 11's communicating actor in the page: the same episode step for step (an entity moved or not), the
    messages' alpha is PyTorch's in float64 within 1e-5, and the frame (sight disc, rings, caption) the package's."""
    agent, config, explorer, recorded = listening
    settings = _settings(explorer, values)
    data = explorer.page.data()
    run = _in_page(page, "listening", settings, data)
    episode = _played(agent, config, recorded, settings, data["choices"])
    _check_world(run, agent, episode)
    t = settings["t"]
    with torch.no_grad():
        _, alpha = copy.deepcopy(agent.actor).double().outputs_and_alpha(
            torch.from_numpy(episode.obs[t:t + 1].astype(np.float64)))
    assert np.abs(np.array(run["frame"]["panels"][1]["values"]) - alpha[0, 0].numpy()).max() <= TOL
    assert _compare(run["frame"], frame_spec(explorer.frame_fn(**settings), digits=12)) <= 1e-4  # float32 frames


def test_dragging_a_landmark_moves_it_at_the_step_shown(page, policy):
    """Drag landmark L2 at step 7: the controls follow (moved, x, y, at = 7), the landmark lands under the pointer,
    and the page draws the package's frame of that episode; a later step shows the team going on from there."""
    agent, config, explorer, recorded = policy
    root = page.locator(".ax-live").first
    root.locator("input[type=range]").first.evaluate("(s) => { s.value = '7'; s.dispatchEvent(new Event('input')); }")
    data = explorer.page.data()
    m = len(data["agents"])
    handle = root.locator(f'.ax-handle[data-key="{m + 1}"]')
    assert handle.get_attribute("aria-label").startswith("landmark L2")
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    page.mouse.move(x + 20, y + 15, steps=3)
    page.mouse.move(x + 40, y + 30, steps=3)
    page.mouse.up()
    after = root.evaluate("(el) => ({...el.explorer.settings})")
    assert (after["moved"], after["at"], after["t"]) == (data["choices"][m + 1], 7, 7)
    start = recorded.positions[7, m + 1]
    assert after["x"] > start[0] + 0.05 and after["y"] < start[1] - 0.05  # right and down on the screen
    root.locator("input[type=range]").first.evaluate("(s) => { s.value = '15'; s.dispatchEvent(new Event('input')); }")
    expected = frame_spec(explorer.frame_fn(**{**after, "t": 15}), digits=12)
    assert root.locator(".ax-caption").inner_text() == expected["caption"]
    drawn = [float(v) for v in root.locator("svg.ax-heatmap").first.evaluate(
        "(s) => Array.from(s.querySelectorAll('rect[data-value]'), (r) => r.dataset.value)")]
    np.testing.assert_allclose(drawn, np.ravel(expected["panels"][1]["values"]), atol=1e-4)


def test_the_keyboard_moves_an_agent_and_enter_listens_from_it(page, listening):
    """Tab to agent a3 in the listening explorer, move it with the arrow keys (0.05 a press) at the step shown, then
    Enter makes it the receiver; the caption is the package's."""
    agent, config, explorer, recorded = listening
    root = page.locator(".ax-live").nth(1)
    data = explorer.page.data()
    handle = root.locator('.ax-handle[data-key="2"]')
    assert handle.get_attribute("aria-label").startswith("agent a3")
    handle.focus()
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Enter")
    after = root.evaluate("(el) => ({...el.explorer.settings})")
    start = recorded.positions[0, 2]
    assert (after["moved"], after["receiver"], after["at"]) == (data["choices"][2], data["agents"][2], 0)
    assert after["x"] == pytest.approx(round(start[0] - 0.05, 2), abs=0.006)
    assert after["y"] == pytest.approx(round(start[1] + 0.05, 2), abs=0.006)
    assert page.evaluate("document.activeElement.classList.contains('ax-handle')")
    assert root.locator(".ax-caption").inner_text() == frame_spec(explorer.frame_fn(**after), digits=12)["caption"]


@pytest.mark.parametrize(("folder", "name", "ring_heads", "controls"), [
    ("policy", "pi-spread3-entity", True, ["t", "agent_index", "head"]),  # chapter 8's m = 3 actor
    ("scale", "scale-spread12-entity", False, ["t", "agent_index"]),  # chapter 10, section 6 (trained at m = 12)
    ("scale", "scale-treasure12-entity", False, ["t", "agent_index"]),  # chapter 10, section 4 (collect_treasure)
], ids=lambda v: v if isinstance(v, str) else None)
def test_actors_the_page_does_not_carry_keep_precomputed_frames(folder, name, ring_heads, controls):
    """An entity actor whose weights are none of the playground's shows frames precomputed at build time, with the
    controls it had: no page model, no moving. Chapter 10's two episode explorers are such actors (its playground
    carries chapter 8's m = 6 actors only), so they stay precomputed: issue 43 item 2 makes an explorer live only
    where its weights are already in the page."""
    agent, config = load_agent(shipped_checkpoint(folder, name, 0))
    assert not plays_in_playground(agent.actor, [ENTITY_ACTOR, TREASURE_ACTOR, *COMM_ACTORS.values()])
    explorer = policy_episode_explorer(agent, config, seed=0, ring_heads=ring_heads)
    assert explorer.page is None and [c.name for c in explorer.controls] == controls
    assert "attnmarlExplorer(" in explorer.static_html()


def test_the_kernel_face_moves_an_entity_with_ipywidgets(policy):
    """The live face (ipywidgets 8 here): the move controls redraw with the package's frame of the new episode."""
    explorer = policy[2]
    explorer.live()
    widgets = explorer.widgets
    before = explorer.frame["caption"]
    widgets["at"].value = 4
    widgets["moved"].value = explorer.page.data()["choices"][7]
    widgets["x"].value = 0.5
    widgets["t"].value = 10
    assert explorer.frame["caption"] != before and explorer.frame["caption"].endswith("put at (+0.50, +0.00) at step 4")
    assert explorer.frame == frame_spec(explorer.frame_fn(**explorer.settings))
