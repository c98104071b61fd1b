"""The playground's decoys task (chapter 12's entity actor on simple_spread with decoys) against the package, in
headless Chromium with the network off:

- numpy's shuffle: the page permutes as Generator.permutation and permuted do, bit for bit, between other draws;
- the world: its seeded start (agents, targets, decoys and every agent's slot order) is the port's first episode
  and mpe2's reference episode for that seed, and over whole episodes it steps as the reference (state, rewards and
  each agent's observation in its own slot order);
- the decoy actor's logits and alpha against torch, at d = 1 and 3, with and without hidden tokens; whole episodes'
  actions against Python rollouts, and the page's score against the shipped mpe2 score;
- the widget as a reader uses it: alpha by entity, the decoys' part of the landmarks' alpha against the uniform
  share, dragging a decoy, hiding one, the d menu, m up to 16 (labels clear, text 9 px or more), the keyboard and a
  finger, each checked against the Python reference;
- on the Python side: the export (every weight, refusals) and what the task adds to the page.

One Chromium, with a touch screen, serves the whole module.
"""
from __future__ import annotations

import base64
import copy
import gzip
from functools import cache

import numpy as np
import pytest
import torch
from browser import arena_labels, argmax_rollout, playground_page, smallest_svg_text, touch_drag

from attnmarl.algos.mappo import MAPPOConfig, make_agent
from attnmarl.checkpoints import load_agent, load_agent_at, save_checkpoint, shipped_checkpoint, shipped_runs
from attnmarl.envs.decoys import DECOY_COLOR
from attnmarl.envs.decoys import NAME as DECOYS
from attnmarl.envs.decoys_port import BatchedDecoySpread
from attnmarl.envs.reference import make_reference
from attnmarl.notebook.playground import (
    DECOY_ACTOR,
    DECOY_CHOICES,
    TASKS,
    export_decoy_actor,
    playground_html,
    playground_spec,
    world_constants,
)

TOL = 1e-5
"""The parity the page must hold: environment state, logits and alpha to 1e-5 (DESIGN §4)."""
SIZE = 400
"""The arena's width and height in pixels in playground.js."""
BAR = 240
"""The width in pixels of the decoy-share bar in playground.js."""

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny networks: conftest.py


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The playground starting on the decoys task (m = 6, seed 3), with simple_spread in its menu, on a screen that
    takes a mouse and touch; the decoy twins' inputs are the globals DSPEC and DW (browser.playground_page)."""
    markup = playground_html(m=6, seed=3, tasks=("decoys", "simple_spread"))
    with playground_page(tmp_path_factory.mktemp("decoys"), markup, touch=True) as page:
        yield page


@cache
def _actor(m: int, d: int):
    folder, name, seed = DECOY_ACTOR
    return load_agent_at(shipped_checkpoint(folder, name, seed), N=m, decoys=d)[0].actor


def _names(order: np.ndarray, m: int) -> list[str]:
    """The landmark in each slot by name, targets L1.., decoys D1.., as the page names them."""
    return [f"L{l + 1}" if l < m else f"D{l - m + 1}" for l in order]


# ---- numpy's shuffle --------------------------------------------------------------------------------

_JS_DRAWS = """args => {
  const random = attnmarlPlayground.numpyRandom(args.seed), out = [];
  for (const [kind, n] of args.ops) {
    if (kind === 'shuffle') out.push(Array.from(random.shuffle(Int32Array.from({length: n}, (_, s) => s))));
    else out.push(kind === 'uniform' ? random.uniform(-1, 1) : random.integers(n));
  }
  return out;
}"""


@pytest.mark.parametrize("seed", [0, 7, 2**31 - 1])
def test_page_shuffles_as_numpy_between_other_draws(page, seed):
    """Shuffles of 1 to 80 entries between uniform and integers draws (so numpy's spare upper half of a 64-bit draw
    is used and kept across kinds): Generator.permutation's numbers exactly, and one row of Generator.permuted."""
    plan = np.random.default_rng(seed + 1)
    ops = []
    for _ in range(120):
        kind = ["shuffle", "uniform", "integers"][plan.integers(3)]
        ops.append([kind, int(plan.integers(1, 81)) if kind == "shuffle" else int(plan.integers(1, 8))])
    rng = np.random.default_rng(seed)
    python = [rng.permutation(n).tolist() if kind == "shuffle" else rng.uniform(-1, 1) if kind == "uniform"
              else int(rng.integers(0, n)) for kind, n in ops]
    assert page.evaluate(_JS_DRAWS, {"seed": seed, "ops": ops}) == python
    rows = np.random.default_rng(seed).permuted(np.tile(np.arange(30), (1, 4, 1)), axis=-1)[0]  # the port's draw
    js = page.evaluate(_JS_DRAWS, {"seed": seed, "ops": [["shuffle", 30]] * 4})
    assert np.array_equal(js, rows)


# ---- the world --------------------------------------------------------------------------------------

_JS_WORLD = """const {DecoyWorld, numpyRandom} = attnmarlPlayground;
const w = new DecoyWorld(Object.assign({}, DSPEC.world, {decoys: args.d}), args.m);
w.reset(numpyRandom(args.seed));
const state = () => ({pos: Array.from(w.pos), vel: Array.from(w.vel), landmarks: Array.from(w.landmarks),
  decoys: Array.from(w.decoys), order: w.order.map((row) => Array.from(row))});
"""

_JS_SEEDED = "args => {" + _JS_WORLD + "return state(); }"


def _port_state(env: BatchedDecoySpread) -> dict:
    return {"pos": env.agent_pos[0].ravel().tolist(), "vel": env.agent_vel[0].ravel().tolist(),
            "landmarks": env.landmark_pos[0].ravel().tolist(), "decoys": env.decoy_pos[0].ravel().tolist(),
            "order": env.landmark_order[0].tolist()}


def _reference_state(world) -> dict:
    flat = lambda entities, key: np.array([getattr(e.state, key) for e in entities]).ravel().tolist()  # noqa: E731
    return {"pos": flat(world.agents, "p_pos"), "vel": flat(world.agents, "p_vel"),
            "landmarks": flat(world.landmarks, "p_pos"), "decoys": flat(world.decoys, "p_pos"),
            "order": world.landmark_order.tolist()}


@pytest.mark.parametrize(("m", "d"), [(3, 1), (3, 3), (6, 3), (16, 1), (16, 3)])
def test_page_seeds_start_where_the_port_and_the_reference_start(page, m, d):
    """Agents, then targets, then decoys uniform in [-1, 1]^2, then a shuffle of the m + k slots per agent: the
    page's episode for a seed is the port's first episode and mpe2's reference episode for that seed, exactly."""
    for seed in (0, 5, 2**40 + 3):
        js = page.evaluate(_JS_SEEDED, {"m": m, "d": d, "seed": seed})
        assert js == _port_state(BatchedDecoySpread(1, seed=seed, N=m, decoys=d)), seed
        reference = make_reference(DECOYS, N=m, decoys=d)
        reference.reset(seed=seed)
        assert js == _reference_state(reference.unwrapped.world), seed
        assert len({tuple(row) for row in js["order"]}) == m  # each agent its own order


_JS_EPISODE = "args => {" + _JS_WORLD + """
  const out = {start: state(), obs: [], rewards: [], states: [], names: []};
  for (const a of args.actions) {
    out.rewards.push(Array.from(w.step(a)));
    out.obs.push(Array.from({length: args.m}, (_, i) => Array.from(w.observe(i))));
    out.states.push(state());
  }
  out.names = Array.from({length: args.m}, (_, i) => w.tokenNames(i));
  return out;
}"""


@pytest.mark.parametrize(("m", "d"), [(3, 1), (6, 3), (16, 3)])
def test_world_steps_as_the_reference_over_whole_episodes(page, m, d):
    """From the seed's start, random actions: every agent's observation (its slots in its own order, with the
    is_target bit), the rewards (targets only; decoys pay nothing) and the agents' positions and velocities, as
    mpe2's reference computes them, within 1e-5, every step of the episode; decoys and slot orders never change."""
    rng = np.random.default_rng(m + d)
    worst = 0.0
    for seed in (1, 2):
        reference = make_reference(DECOYS, N=m, decoys=d)
        obs, _ = reference.reset(seed=seed)
        agents, world = reference.possible_agents, reference.unwrapped.world
        actions = rng.integers(0, 5, (25, m))
        js = page.evaluate(_JS_EPISODE, {"m": m, "d": d, "seed": seed, "actions": actions.tolist()})
        assert js["start"] == _reference_state(world)
        for t, a in enumerate(actions):
            obs, rewards, _, truncated, _ = reference.step(dict(zip(agents, a.tolist())))
            expected = _reference_state(world)
            diffs = [np.abs(np.array(js["obs"][t]) - np.stack([obs[agent] for agent in agents])).max(),
                     np.abs(np.array(js["rewards"][t]) - [rewards[agent] for agent in agents]).max(),
                     np.abs(np.array(js["states"][t]["pos"]) - expected["pos"]).max(),
                     np.abs(np.array(js["states"][t]["vel"]) - expected["vel"]).max()]
            assert max(diffs) <= TOL, (seed, t, diffs)
            assert js["states"][t]["decoys"] == expected["decoys"] and js["states"][t]["order"] == expected["order"]
            worst = max(worst, *diffs)
        assert all(truncated.values())
        for i in range(m):  # the token names follow each agent's slots
            assert js["names"][i][1:1 + m + d * m] == _names(world.landmark_order[i], m)
    print(f"m = {m}, d = {d}: observations, rewards and state within {worst:.1e} of mpe2's reference")


# ---- the actor --------------------------------------------------------------------------------------

def _decoy_observations(m: int, d: int, seed: int) -> np.ndarray:
    """Observations (batch, m, obs_dim) of two random-action episodes of the port, every fifth step."""
    rng = np.random.default_rng(seed)
    env = BatchedDecoySpread(2, seed=m, N=m, decoys=d)
    rows = []
    for _ in range(env.max_cycles):
        obs, *_ = env.step(rng.integers(0, 5, (2, m)))
        rows.append(obs)
    return np.concatenate(rows)[::5]


_JS_ENTITY = """args => args.obs.map(team => team.map((o, i) => {
  const {entityForward, spreadTokens} = attnmarlPlayground;
  const tokens = spreadTokens(Float64Array.from(o), args.m, args.slots, 3);
  const r = entityForward(DW.entity, tokens, args.masks ? args.masks[i] : null);
  return {logits: Array.from(r.logits), alpha: Array.from(r.alpha)};
}))"""


def _double(actor, tokens, mask=None):
    with torch.no_grad():
        y, alpha = copy.deepcopy(actor.nets[0]).double()(tokens.double(), mask)
    return y.numpy(), alpha.numpy()


@pytest.mark.parametrize(("m", "d"), [(3, 1), (6, 1), (6, 3), (16, 3)])
def test_decoy_actor_logits_and_alpha_match_torch(page, m, d):
    actor = _actor(m, d)
    o = torch.from_numpy(_decoy_observations(m, d, seed=100 + m))
    y, alpha = _double(actor, actor.tokens(o)[0])
    js = page.evaluate(_JS_ENTITY, {"m": m, "slots": m + d * m, "obs": o.tolist(), "masks": None})
    js_y = np.array([[agent["logits"] for agent in team] for team in js])
    js_alpha = np.array([[agent["alpha"] for agent in team] for team in js]).reshape(alpha.shape)
    dy, da = np.abs(js_y - y).max(), np.abs(js_alpha - alpha).max()
    print(f"m = {m}, d = {d}: logits within {dy:.1e}, alpha within {da:.1e} of torch in float64")
    assert dy <= TOL and da <= TOL
    assert np.abs(y).max() > 0.1  # trained logits
    with torch.no_grad():
        y32 = actor(o).numpy()
    assert np.abs(js_y - y32).max() <= 1e-4  # and of the actor as the book runs it, in float32


def test_decoy_actor_with_hidden_tokens_matches_torch(page):
    m, d = 6, 3
    actor = _actor(m, d)
    o = torch.from_numpy(_decoy_observations(m, d, seed=7)[:4])
    tokens = actor.tokens(o)[0]
    mask = torch.from_numpy(np.random.default_rng(0).random(tokens.shape[:-1]) > 0.5)
    mask[..., 0] = True  # an agent always sees itself
    y, alpha = _double(actor, tokens, mask)
    js = [page.evaluate(_JS_ENTITY, {"m": m, "slots": m + d * m, "obs": [o[b].tolist()], "masks": mask[b].tolist()})[0]
          for b in range(len(o))]
    js_y = np.array([[agent["logits"] for agent in team] for team in js])
    js_alpha = np.array([[agent["alpha"] for agent in team] for team in js]).reshape(alpha.shape)
    assert np.abs(js_y - y).max() <= TOL and np.abs(js_alpha - alpha).max() <= TOL
    assert np.all(js_alpha[~mask[:, :, None, :].expand(alpha.shape).numpy()] == 0)


_JS_ROLLOUT = "args => {" + _JS_WORLD + """
  const actions = [];
  for (let t = 0; t < DSPEC.world.max_cycles; t++) {
    const a = attnmarlPlayground.teamActions('entity', w, DW, null).actions;
    actions.push(Array.from(a)); w.step(a);
  }
  return actions;
}"""


@pytest.mark.parametrize(("m", "d"), [(3, 3), (6, 1), (6, 3), (16, 3)])
def test_page_episodes_take_the_python_rollouts_actions(page, m, d):
    """For a fixed seed, the page's episode (its world, each agent's slots, tokens, actor and argmax) takes the
    actions of the Python episode (the port, torch, argmax) at every step."""
    actor = _actor(m, d)
    for seed in (1, 2):
        python = argmax_rollout(actor, BatchedDecoySpread(1, seed=seed, N=m, decoys=d))
        js = np.array(page.evaluate(_JS_ROLLOUT, {"m": m, "d": d, "seed": seed}))
        assert js.shape == python.shape == (25, m)
        assert np.array_equal(js, python), f"seed {seed}: first differing step {np.argmax((js != python).any(1))}"
        assert len(np.unique(python)) > 1


def test_page_team_scores_what_the_shipped_checkpoint_scores_on_mpe2(page):
    """48 of the page's episodes at m = 6, d = 3 (the port's starts for seeds 1000-1047): the mean return agrees
    with the checkpoint's shipped 200-episode mpe2 score within three standard errors of both."""
    returns = np.array(page.evaluate("""() => {
      const pg = document.querySelector('.attnmarl-playground').playground;
      pg.setTask('decoys', 1000); pg.setD(3); pg.setM(6, 1000);
      while (pg.finished.entity.length < 48) pg.tick();
      return pg.finished.entity;
    }"""))
    _, name, seed = DECOY_ACTOR
    run = {(r["name"], r["seed"]): r for r in shipped_runs("decoys")}[(name, seed)]
    sem = returns.std(ddof=1) / np.sqrt(len(returns))
    assert abs(returns.mean() - run["final_return"]) <= 3 * np.hypot(sem, run["final_sem"]), returns.mean()


# ---- the widget, as a reader uses it ----------------------------------------------------------------

_JS_STATE = """() => {
  const pg = document.querySelector('.attnmarl-playground').playground, w = pg.worlds.entity;
  const bar = document.querySelector('.pg-share-bar');
  return {m: pg.m, d: pg.P.decoys, focus: pg.focus, t: w.steps, pos: Array.from(w.pos), vel: Array.from(w.vel),
          landmarks: Array.from(w.landmarks), decoys: Array.from(w.decoys), order: w.order.map((r) => Array.from(r)),
          ret: pg.returns.entity, masks: pg.masks(), columns: w.columns(pg.focus),
          cells: Array.from(document.querySelectorAll('.pg-alpha rect[data-token]')).map((c) =>
            [Number(c.dataset.head), Number(c.dataset.token), Number(c.dataset.value)]),
          part: Number(bar.dataset.part), width: Number(bar.getAttribute('width')),
          shareText: document.querySelector('.pg-share-text').textContent};
}"""


def _port_at(state: dict) -> BatchedDecoySpread:
    """The port in the page's state: agents, targets, decoys, slot orders and step."""
    m, d = state["m"], state["d"]
    env = BatchedDecoySpread(1, N=m, decoys=d)
    env.agent_pos[0] = np.reshape(state["pos"], (m, 2))
    env.agent_vel[0] = np.reshape(state["vel"], (m, 2))
    env.landmark_pos[0] = np.reshape(state["landmarks"], (m, 2))
    env.decoy_pos[0] = np.reshape(state["decoys"], (d * m, 2))
    env.landmark_order[0] = state["order"]
    env.steps[0] = state["t"]
    return env


def _python_view(state: dict) -> dict:
    """The Python reference for a page state: the focused agent's alpha by entity column (heads, n), the decoys'
    part of its alpha on landmarks, and the state and mean reward after the actor's step."""
    m, d, i = state["m"], state["d"], state["focus"]
    env = _port_at(state)
    obs = env.observe()
    actor = _actor(m, d)
    with torch.no_grad():
        mask = None if state["masks"] is None else torch.tensor([state["masks"]])
        logits, alpha = actor.nets[0](actor.tokens(torch.from_numpy(obs))[0], mask)
    alpha = alpha[0, i].numpy()  # (heads, n) over agent i's tokens: self, its slots, the other agents
    tokens = ["self", *_names(env.landmark_order[0, i], m), *[f"a{j + 1}" for j in range(m) if j != i]]
    by_column = alpha[:, [tokens.index(name) for name in state["columns"]]]
    slots = alpha[:, 1:1 + m + d * m].mean(0)  # averaged over heads, as attnmarl.selection.decoy_alpha
    decoy = obs[0, i, env.layout.landmark_columns[:, 2]] == 0
    _, rewards, *_ = env.step(logits[0].argmax(-1).numpy()[None])
    return {"alpha": by_column, "part": slots[decoy].sum() / slots.sum(), "pos": env.agent_pos[0].ravel(),
            "vel": env.agent_vel[0].ravel(), "reward": rewards[0].mean()}


def _page_alpha(state: dict) -> np.ndarray:
    cells = state["cells"]
    out = np.zeros((max(c[0] for c in cells) + 1, max(c[1] for c in cells) + 1))
    for h, t, v in cells:
        out[h, t] = v
    return out


def _check_view(page) -> tuple[dict, dict]:
    """The page's alpha row and decoy share against the Python reference; returns the state and the reference."""
    state = page.evaluate(_JS_STATE)
    reference = _python_view(state)
    assert np.abs(_page_alpha(state) - reference["alpha"]).max() <= TOL
    assert abs(state["part"] - reference["part"]) <= TOL and state["width"] == pytest.approx(BAR * state["part"])
    assert f"{reference['part']:.2f}" in state["shareText"]
    return state, reference


def _check_step(page) -> dict:
    """Step the page once: the state after it and the return grown by the step's mean reward, as the port's."""
    before, reference = _check_view(page)
    page.locator('.attnmarl-playground [data-act="step"]').click()
    after = page.evaluate(_JS_STATE)
    assert after["t"] == before["t"] + 1
    assert np.abs(np.array(after["pos"]) - reference["pos"]).max() <= TOL
    assert np.abs(np.array(after["vel"]) - reference["vel"]).max() <= TOL
    assert abs(after["ret"] - before["ret"] - reference["reward"]) <= TOL
    return after


def _pixel(page, xy):
    box = page.locator(".pg-arena").bounding_box()
    lim = page.evaluate("() => document.querySelector('.attnmarl-playground').playground.lim")
    return box["x"] + (xy[0] + lim) / (2 * lim) * box["width"], box["y"] + (lim - xy[1]) / (2 * lim) * box["height"]


def _start(page, m=6, d=3, seed=3):
    """The decoys task at (m, d) from the seed's start, nothing hidden, agent a1 selected (and no entity keeping the
    keyboard's focus, which would select its agent again when the arena is redrawn)."""
    page.evaluate("""args => { const pg = document.querySelector('.attnmarl-playground').playground;
      if (document.activeElement) document.activeElement.blur();
      pg.setTask('decoys', args.seed); pg.hidden.clear(); pg.setD(args.d); pg.setM(args.m, args.seed); pg.focus = 0;
      pg.draw(); }""", {"m": m, "d": d, "seed": seed})


def test_widget_shows_alpha_by_entity_and_the_decoys_part_and_steps_as_the_port(page):
    _start(page)
    root = page.locator(".attnmarl-playground")
    assert root.get_attribute("data-task") == "decoys" and root.get_attribute("data-d") == "3"
    assert page.locator(".pg-title").text_content().endswith("simple_spread with decoys, running in this page")
    assert page.locator('[data-act="d"]').is_visible()
    assert page.locator('[data-act="d"] option').all_inner_texts() == [str(d) for d in DECOY_CHOICES]
    state, _ = _check_view(page)
    m, k = 6, 18
    assert state["columns"] == ["self", *[f"L{l + 1}" for l in range(m)], *[f"D{c + 1}" for c in range(k)],
                                *[f"a{j + 1}" for j in range(1, m)]]
    assert page.locator(".pg-alpha rect[data-head='0']").count() == 2 * m + k
    assert "k/(m + k) = 0.75" in page.locator(".pg-heatmap").text_content()
    fills = page.evaluate("""() => Object.fromEntries(Array.from(
        document.querySelectorAll('.pg-arena circle[data-name]'), (c) => [c.dataset.name, c.getAttribute('fill')]))""")
    assert fills["D1"] == "#" + "".join(f"{round(200 * c):02x}" for c in DECOY_COLOR) != fills["L1"]
    labels = page.evaluate("""() => Object.fromEntries(Array.from(document.querySelectorAll('.pg-column'))
        .map((t) => [t.textContent, t.getAttribute('fill')]))""")
    assert labels["D1"] == fills["D1"] and labels["L1"] != labels["D1"]
    assert "zero-shot" not in page.locator(".pg-note").text_content()
    parts = []
    for _ in range(3):
        state = _check_step(page)
        parts.append(state["part"])
    assert max(parts) < 0.75 / 2  # the trained actor looks at targets, far below the uniform share
    page.locator('.pg-arena circle[data-name="a4"]').focus()  # another agent (a click may land on a decoy over it)
    assert _check_view(page)[0]["focus"] == 3


def test_widget_drags_and_hides_a_decoy_as_the_python_reference_computes(page):
    _start(page, seed=4)
    page.locator('.pg-arena circle[data-name="a2"]').focus()
    state, _ = _check_view(page)
    assert state["focus"] == 1
    start, target = state["decoys"][:2], (state["pos"][2] + 0.1, state["pos"][3])  # D1 next to a2
    page.mouse.move(*_pixel(page, start))
    page.mouse.down()
    page.mouse.move(*_pixel(page, (0.0, 0.0)), steps=4)
    page.mouse.move(*_pixel(page, target), steps=4)
    page.mouse.up()
    moved, _ = _check_view(page)
    lim = page.evaluate("() => document.querySelector('.attnmarl-playground').playground.lim")
    assert np.abs(np.array(moved["decoys"][:2]) - target).max() < 2 * lim / SIZE  # a pixel
    assert moved["decoys"][2:] == state["decoys"][2:] and moved["landmarks"] == state["landmarks"]
    assert np.abs(_page_alpha(moved) - _page_alpha(state)).max() > 1e-3
    page.locator('.pg-alpha rect[data-name="D1"][data-head="0"]').click()  # hide D1 from a2
    hidden, _ = _check_view(page)
    token = 1 + hidden["order"][1].index(6)  # D1 is landmark m = 6 in a2's slots
    assert hidden["masks"][1][token] is False and sum(not v for row in hidden["masks"] for v in row) == 1
    assert np.all(_page_alpha(hidden)[:, hidden["columns"].index("D1")] == 0)
    _check_step(page)
    page.locator('.attnmarl-playground [data-act="unhide"]').click()
    assert page.evaluate(_JS_STATE)["masks"] is None


def test_widget_d_menu_and_m_make_new_worlds_as_the_port_does(page):
    _start(page, seed=9)
    page.locator('[data-act="d"]').select_option("1")
    state = page.evaluate(_JS_STATE)
    assert state["d"] == 1 and len(state["decoys"]) == 2 * 6 and state["t"] == 0
    assert {k: state[k] for k in ("pos", "vel", "landmarks", "decoys", "order")} == _port_state(
        BatchedDecoySpread(1, seed=9, N=6, decoys=1))
    assert "k/(m + k) = 0.50" in page.locator(".pg-heatmap").text_content()
    assert "zero-shot" in page.locator(".pg-note").text_content()
    _check_step(page)
    page.locator('.attnmarl-playground [data-act="m"]').fill("16")
    state = page.evaluate(_JS_STATE)
    assert (state["m"], state["d"]) == (16, 1) and page.locator(".pg-alpha rect[data-head='0']").count() == 48
    _check_step(page)
    page.locator('[data-act="task"]').select_option("simple_spread")  # no d there; d kept for the return
    assert page.locator('[data-act="d"]').is_hidden()
    page.locator('[data-act="task"]').select_option("decoys")
    assert page.evaluate(_JS_STATE)["d"] == 1 and page.locator('[data-act="d"]').input_value() == "1"


def test_at_m_16_d_3_no_label_overprints_another_and_text_is_9_px_or_more(page):
    """80 tokens: the row's columns are too narrow to name (hover names them), so their groups are named below;
    the arena's labels never touch over several steps (the decoys' give way first)."""
    _start(page, m=16, d=3)
    assert page.locator(".pg-alpha rect[data-head='0']").count() == 80 and page.locator(".pg-column").count() == 0
    groups = page.evaluate("() => Array.from(document.querySelectorAll('.pg-heatmap text')).map((t) => t.textContent)")
    assert {"targets", "decoys", "other agents"} <= set(groups)
    _check_view(page)
    for step in range(4):
        names, overprints = arena_labels(page)
        assert not overprints, f"step {step}: {overprints}"
        assert "a1" in names and sum(name.startswith("a") for name in names) >= 8
        page.evaluate("() => document.querySelector('.attnmarl-playground').playground.tick()")
    assert smallest_svg_text(page) >= 9
    page.locator('.pg-alpha rect[data-name="D30"][data-head="1"]').hover()
    assert page.locator(".pg-scale").text_content().startswith("D30 (in slot ")


def test_the_keyboard_reaches_moves_and_hides_a_decoy(page):
    """Tab goes from the agents to the decoys and targets (each named for assistive technology), the arrow keys move
    a focused decoy by 0.05 (alpha follows, as the Python reference computes it), Enter hides it from the selected
    agent and shows it again, s steps."""
    _start(page, seed=11)
    pg = page.locator(".attnmarl-playground")
    pg.locator('[data-act="unhide"]').focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")  # a1, then a2: selected
    assert page.evaluate("document.activeElement.dataset.name") == "a2" and pg.get_attribute("data-focus") == "1"
    for _ in range(5):
        page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.dataset.name") == "D1"  # after a6, the decoys, under the targets
    assert page.evaluate("document.activeElement.getAttribute('aria-label')").startswith("decoy D1")
    pg.locator('.pg-arena circle[data-name="a2"]').focus()  # a2 selected again (Tab selected each agent it passed)
    before = page.evaluate(_JS_STATE)
    assert before["focus"] == 1
    pg.locator('.pg-arena circle[data-name="D3"]').focus()
    for key in ("ArrowLeft", "ArrowUp", "ArrowUp"):
        page.keyboard.press(key)
    moved, _ = _check_view(page)
    np.testing.assert_allclose(moved["decoys"][4:6], np.add(before["decoys"][4:6], [-0.05, 0.1]), atol=1e-12)
    assert moved["focus"] == 1 and moved["decoys"][:4] == before["decoys"][:4]
    page.keyboard.press("Enter")  # hide D3 from a2
    hidden, _ = _check_view(page)
    assert hidden["masks"] is not None and not hidden["masks"][1][1 + hidden["order"][1].index(6 + 2)]
    page.keyboard.press("s")
    assert page.evaluate(_JS_STATE)["t"] == hidden["t"] + 1
    page.keyboard.press("Enter")  # D3 shown again
    assert page.evaluate(_JS_STATE)["masks"] is None


def test_a_finger_drags_a_decoy(page):
    """On a touch screen, a finger that starts on a decoy drags it (playground.css makes it touch-action: none,
    as every landmark)."""
    _start(page, m=4, seed=2)
    state = page.evaluate(_JS_STATE)
    target = (0.3, -0.2)
    touch_drag(page, _pixel(page, state["decoys"][2:4]), _pixel(page, target))
    moved = page.evaluate(_JS_STATE)
    lim = page.evaluate("() => document.querySelector('.attnmarl-playground').playground.lim")
    assert np.abs(np.array(moved["decoys"][2:4]) - target).max() < 2 * 2 * lim / SIZE  # two drawn pixels
    assert moved["decoys"][:2] == state["decoys"][:2] and moved["pos"] == state["pos"]
    assert page.evaluate("getComputedStyle(document.querySelector('.pg-landmark[data-name=\"D2\"]')).touchAction") \
        == "none"
    _check_view(page)


# ---- the Python side --------------------------------------------------------------------------------

def _unpack(pack: dict) -> dict[str, np.ndarray]:
    """A compressed pack's tensors, undone as playground.js's inflateWeights does it."""
    planes = np.frombuffer(gzip.decompress(base64.b64decode(pack["data"])), dtype=np.uint8)
    flat = planes.reshape(4, -1).T.copy().view("<f4").ravel()
    out, at = {}, 0
    for name, count in pack["tensors"]:
        out[name], at = flat[at:at + count], at + count
    assert at == len(flat)
    return out


def test_export_holds_every_weight_of_the_shipped_actor():
    path = shipped_checkpoint(*DECOY_ACTOR[:2], seed=DECOY_ACTOR[2])
    pack = export_decoy_actor(path, compressed=True)
    assert pack["sizes"]["kind_widths"] == [4, 3, 4] and pack["sizes"]["d_tokens"] == 4 + 3 + 4 + 3
    assert (pack["sizes"]["trained_m"], pack["sizes"]["trained_d"]) == (6, 3)
    agent, _ = load_agent(path)
    params = dict(agent.actor.nets[0].named_parameters())
    weights = _unpack(pack)
    assert sum(w.size for w in weights.values()) == sum(p.numel() for p in agent.actor.parameters())
    by_js = {"embed": "embed.weight", "W_kv": "W_kv.weight", "ff2_b": "ff.2.bias", "W_y": "W_y.weight"}
    for js, name in by_js.items():
        assert np.array_equal(weights[js], params[name].detach().numpy().ravel())
    assert export_decoy_actor(path)["sizes"] == pack["sizes"]  # uncompressed: the same sizes


@pytest.fixture(scope="module")
def untrained(tmp_path_factory):
    """Checkpoints the page must refuse: the entity actor under the oracle control, one trained without decoys, a
    flat decoy actor."""
    folder = tmp_path_factory.mktemp("untrained")
    small = dict(num_envs=2, rollout_steps=25, total_steps=50, num_minibatches=1, entity_d=8, entity_ff=8)
    paths = {}
    for key, kwargs, extra in (("oracle", {"N": 3, "decoys": 1}, {"actor": "entity", "decoy_view": "oracle"}),
                               ("no decoys", {"N": 3, "decoys": 0}, {"actor": "entity"}),
                               ("flat", {"N": 3, "decoys": 1}, {"actor": "flat"})):
        config = MAPPOConfig(DECOYS, kwargs, **extra, **small)
        paths[key] = folder / f"{key.replace(' ', '-')}.pt"
        save_checkpoint(paths[key], make_agent(config), config)
    return paths


def test_export_refuses_actors_the_page_would_not_run_as_python_does(untrained):
    with pytest.raises(ValueError, match="'oracle' control"):
        export_decoy_actor(untrained["oracle"])
    with pytest.raises(ValueError, match="trained without decoys"):
        export_decoy_actor(untrained["no decoys"])
    with pytest.raises(ValueError, match="holds a 'flat' actor"):
        export_decoy_actor(untrained["flat"])
    with pytest.raises(ValueError, match="not a discrete-action simple_spread_decoys policy"):
        export_decoy_actor(shipped_checkpoint("policy", "pi-spread6-entity"))


def test_the_task_spec_and_what_it_adds_to_the_page():
    world = world_constants("decoys")
    assert {k: v for k, v in world.items() if k not in ("decoys", "d_choices", "decoy_color")} == \
        world_constants("simple_spread")
    assert world["decoys"] == 3 and world["d_choices"] == [1, 3] and world["decoy_color"] == "#be781e"
    spec = playground_spec(m=9, seed=4, tasks=("decoys",))
    assert spec["policy"] == "entity" and spec["decoys"]["names"] == {"entity": "decoys3-spread6-entity seed 0"}
    for bad in ({"policy": "flat"}, {"m": 17}, {"m": 2}):
        with pytest.raises(ValueError):
            playground_html(tasks=("decoys",), **bad)
    others = tuple(task for task in TASKS if task != "decoys")
    added = len(playground_html(tasks=TASKS).encode()) - len(playground_html(tasks=others).encode())
    print(f"the decoys task adds {added:,} bytes to the playground's page")
    assert added <= 60_000
