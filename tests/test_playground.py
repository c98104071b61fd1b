"""The playground's JavaScript twins against the package, in headless Chromium with the network off.

- the world step (physics, rewards, observations) against the batched port, over whole episodes;
- the entity actor's logits and alpha and the flat actor's logits against torch, for the same o;
- whole episodes' actions: the page's closed loop (world, tokens, actor, argmax action) against a
  Python rollout from the same start, step for step. Actions are the argmax of the logits (the
  book's evaluation mode, ``eval_deterministic``), so both sides are deterministic;
- the widget as a reader uses it: dragging a landmark, switching networks, hiding a token and changing
  m, each checked against the Python reference (alpha, positions, velocities, returns).

One Chromium serves the whole module.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from browser import arena_labels, page_episode_returns, playground_page, spread_observations

from attnmarl.checkpoints import load_agent_at, shipped_checkpoint, shipped_runs
from attnmarl.envs import greedy_assignment_policy
from attnmarl.envs.spread import BatchedSpread
from attnmarl.notebook.playground import (
    ENTITY_ACTOR,
    FLAT_ACTOR,
    export_entity_actor,
    export_flat_actor,
    playground,
    playground_html,
)

TOL = 1e-5
"""The parity the page must hold: environment state, logits and alpha to 1e-5 (DESIGN §4)."""


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """One offline Chromium page for the module: the playground of chapters 8 and 10 (simple_spread shown first,
    collect_treasure; browser.playground_page), with simple_spread's twins' inputs as globals SPEC and W. The
    messages task has its own page, tests/test_playground_messages.py."""
    markup = playground_html(m=6, seed=3, tasks=("simple_spread", "collect_treasure"))
    assert len(markup.encode()) <= 300_000  # page weight, both tasks' weights included
    with playground_page(tmp_path_factory.mktemp("playground"), markup) as page:
        yield page


def _actor(name_seed, m):
    folder, name, seed = name_seed
    torch.set_num_threads(1)
    return load_agent_at(shipped_checkpoint(folder, name, seed), N=m)[0].actor


def _state(env):
    return {"pos": env.agent_pos[0].ravel().tolist(), "vel": env.agent_vel[0].ravel().tolist(),
            "landmarks": env.landmark_pos[0].ravel().tolist()}


_JS_WORLD = """
const {World} = attnmarlPlayground;
const w = new World(SPEC.world, args.m);
w.pos.set(args.state.pos); w.vel.set(args.state.vel); w.landmarks.set(args.state.landmarks);
"""

_JS_EPISODE = "args => {" + _JS_WORLD + """
  const out = {obs: [], rewards: [], pos: [], vel: []};
  for (const a of args.actions) {
    const r = w.step(a);
    out.rewards.push(Array.from(r));
    out.obs.push(Array.from({length: args.m}, (_, i) => Array.from(w.observe(i))));
    out.pos.push(Array.from(w.pos)); out.vel.push(Array.from(w.vel));
  }
  return out;
}"""


@pytest.mark.parametrize("m", [3, 6, 16])
def test_world_steps_as_the_port_over_whole_episodes(page, m):
    rng = np.random.default_rng(m)
    worst = 0.0
    for episode in range(3):
        env = BatchedSpread(1, seed=episode, N=m)
        if episode == 2:  # a crowded start: agents overlap, so contact forces act from the first step
            env.agent_pos[0] = rng.uniform(-0.3, 0.3, (m, 2))
        start = _state(env)
        actions = rng.integers(0, 5, (env.max_cycles, 1, m))
        obs, rewards, pos, vel = [], [], [], []
        for a in actions:
            _, r, _, truncated, info = env.step(a)
            obs.append(info["final_obs"][0])
            rewards.append(r[0])
            if not truncated[0]:  # the port resets at the end; positions before that
                pos.append(env.agent_pos[0].ravel().copy())
                vel.append(env.agent_vel[0].ravel().copy())
        assert truncated[0] and len(obs) == env.max_cycles
        js = page.evaluate(_JS_EPISODE, {"m": m, "state": start, "actions": actions[:, 0].tolist()})
        assert np.asarray(js["obs"]).shape == np.asarray(obs).shape
        diffs = [np.abs(np.asarray(js["obs"]) - obs).max(), np.abs(np.asarray(js["rewards"]) - rewards).max(),
                 np.abs(np.asarray(js["pos"][:-1]) - pos).max(), np.abs(np.asarray(js["vel"][:-1]) - vel).max()]
        worst = max(worst, *diffs)
        assert max(diffs) <= TOL, (episode, diffs)
        if episode == 2:
            first = pos[0].reshape(m, 2)  # some agents still overlap after the first step: contacts were tested
            assert (np.linalg.norm(first[:, None] - first[None], axis=2) + 9 * np.eye(m)).min() < 0.3
    print(f"m = {m}: world state, observations and rewards within {worst:.1e} of the port")


_JS_ENTITY = """args => args.obs.map(team => team.map((o, i) => {
  const {entityForward, spreadTokens} = attnmarlPlayground;
  const r = entityForward(W.entity, spreadTokens(Float64Array.from(o), args.m), args.masks ? args.masks[i] : null);
  return {logits: Array.from(r.logits), alpha: Array.from(r.alpha)};
}))"""


def _like(x, net):
    return x.to(next(net.parameters()).dtype)


def _torch_both(actor, fn):
    """``fn(actor)`` in float32 (how the book runs it) and in float64 on the same float32 weights (how the
    page computes): the page is held to the float64 run; the float32 run differs from both by its own
    rounding (about 1e-5 on logits of size 7)."""
    with torch.no_grad():
        single = fn(actor)
        double = fn(copy.deepcopy(actor).double())
    return single, double


@pytest.mark.parametrize("m", [3, 6, 16])
def test_entity_actor_logits_and_alpha_match_torch(page, m):
    actor = _actor(ENTITY_ACTOR, m)
    o = torch.from_numpy(spread_observations(m, seed=100 + m)[::5])
    (y32, a32), (y, alpha) = _torch_both(actor, lambda net: net.outputs_and_alpha(_like(o, net)))
    js = page.evaluate(_JS_ENTITY, {"m": m, "obs": o.tolist(), "masks": None})
    js_y = np.array([[agent["logits"] for agent in team] for team in js])
    js_alpha = np.array([[agent["alpha"] for agent in team] for team in js]).reshape(alpha.shape)
    dy, da = np.abs(js_y - y.numpy()).max(), np.abs(js_alpha - alpha.numpy()).max()
    dy32, rounding = np.abs(js_y - y32.numpy()).max(), (y32.double() - y).abs().max().item()
    print(f"m = {m}: logits within {dy:.1e}, alpha within {da:.1e} of torch in float64; logits within "
          f"{dy32:.1e} of torch in float32, whose own rounding is {rounding:.1e} ({len(o)} observations)")
    assert dy <= TOL and da <= TOL
    assert dy32 <= rounding + TOL and np.abs(js_alpha - a32.numpy()).max() <= TOL
    assert np.abs(y.numpy()).max() > 0.1  # trained logits, not the near-zero initial ones


def test_entity_actor_with_hidden_tokens_matches_torch(page):
    m = 6
    actor = _actor(ENTITY_ACTOR, m)
    o = torch.from_numpy(spread_observations(m, episodes=1, seed=100 + m)[::6])
    tokens = actor.tokens(o)[0]  # (batch, m, n, d_tokens)
    mask = torch.from_numpy(np.random.default_rng(0).random(tokens.shape[:-1]) > 0.4)
    mask[..., 0] = True  # an agent always sees itself
    _, (y, alpha) = _torch_both(actor.nets[0], lambda net: net(_like(tokens, net), mask))
    rows = []
    for b in range(len(o)):
        rows.append(page.evaluate(_JS_ENTITY, {"m": m, "obs": [o[b].tolist()], "masks": mask[b].tolist()})[0])
    js_y = np.array([[agent["logits"] for agent in team] for team in rows])
    js_alpha = np.array([[agent["alpha"] for agent in team] for team in rows]).reshape(alpha.shape)
    assert np.abs(js_y - y.numpy()).max() <= TOL and np.abs(js_alpha - alpha.numpy()).max() <= TOL
    assert np.all(js_alpha[~mask[:, :, None, :].expand_as(alpha).numpy()] == 0)
    with torch.no_grad():
        y_all, _ = actor.nets[0](tokens)
    assert np.abs(y_all.numpy() - y.numpy()).max() > 1e-3  # hiding tokens changes what the agents do


def test_flat_actor_logits_match_torch(page):
    m = 6
    actor = _actor(FLAT_ACTOR, m)
    o = torch.from_numpy(spread_observations(m, seed=100 + m)[::5])
    y32, y = _torch_both(actor, lambda net: net(_like(o, net)))
    js = page.evaluate("""args => args.obs.map(team => team.map(o =>
        Array.from(attnmarlPlayground.flatForward(W.flat, Float64Array.from(o)))))""", {"obs": o.tolist()})
    diff, diff32 = np.abs(np.array(js) - y.numpy()).max(), np.abs(np.array(js) - y32.numpy()).max()
    print(f"flat actor: logits within {diff:.1e} of torch in float64, {diff32:.1e} in float32")
    assert diff <= TOL and diff32 <= TOL


_JS_ROLLOUT = "args => {" + _JS_WORLD + """
  const actions = [];
  for (let t = 0; t < SPEC.world.max_cycles; t++) {
    const a = attnmarlPlayground.teamActions(args.policy, w, W, null).actions;
    actions.push(Array.from(a)); w.step(a);
  }
  return actions;
}"""

_JS_SEEDED_START = """args => {
  const w = new attnmarlPlayground.World(SPEC.world, args.m);
  w.reset(attnmarlPlayground.numpyRandom(args.seed));
  return {pos: Array.from(w.pos), vel: Array.from(w.vel), landmarks: Array.from(w.landmarks)};
}"""


def _python_rollout(policy, m, seed):
    """Actions (T, m) of the port's first episode for ``seed``, torch or the baseline acting."""
    env = BatchedSpread(1, seed=seed, N=m)
    obs = env.observe()
    if policy == "greedy":
        baseline = greedy_assignment_policy()
        act = lambda o: np.array(list(baseline({f"agent_{i}": o[0, i] for i in range(m)}).values()))[None]  # noqa: E731
    else:
        actor = _actor(ENTITY_ACTOR if policy == "entity" else FLAT_ACTOR, m)
        act = lambda o: actor(torch.from_numpy(o)).argmax(-1).numpy()  # noqa: E731
    actions = []
    with torch.no_grad():
        for _ in range(env.max_cycles):
            a = act(obs)
            actions.append(a[0])
            obs, *_ = env.step(a)
    return np.array(actions)


@pytest.mark.parametrize("seed", [0, 7, 2**31 - 1])
def test_page_seeds_start_where_the_ports_seeds_start(page, seed):
    """The page draws numpy's default_rng(seed) stream bit for bit, so its episode for a seed starts
    exactly where the port's first episode for that seed starts."""
    env = BatchedSpread(1, seed=seed, N=5)
    start = page.evaluate(_JS_SEEDED_START, {"m": 5, "seed": seed})
    assert start == _state(env)


@pytest.mark.parametrize(("policy", "m"), [("entity", 3), ("entity", 6), ("entity", 16), ("flat", 6),
                                           ("greedy", 6), ("greedy", 16)])
def test_page_episodes_take_the_python_rollouts_actions(page, policy, m):
    """For a fixed seed, the page's episode (its world, tokens, actor and argmax) takes the actions of
    the Python episode (the port, torch, argmax) at every step."""
    for seed in (1, 2):
        start = page.evaluate(_JS_SEEDED_START, {"m": m, "seed": seed})
        js = np.array(page.evaluate(_JS_ROLLOUT, {"m": m, "state": start, "policy": policy}))
        python = _python_rollout(policy, m, seed)
        assert js.shape == python.shape == (25, m)
        assert np.array_equal(js, python), f"seed {seed}: first differing step {np.argmax((js != python).any(1))}"
        assert len(np.unique(python)) > 1  # the agents move


# ---- the widget, as a reader uses it ---------------------------------------------------------------

SIZE = 400
"""The arena's width and height in pixels in playground.js."""


_JS_STATE = """policy => {
  const pg = document.querySelector('.attnmarl-playground').playground, w = pg.worlds[policy];
  return {m: pg.m, focus: pg.focus, t: w.steps, pos: Array.from(w.pos), vel: Array.from(w.vel),
          landmarks: Array.from(w.landmarks), ret: pg.returns[policy], policy: pg.policy,
          alpha: Array.from(pg.next.entity.alpha[pg.focus]), masks: pg.masks()};
}"""


def _page_alpha(page):
    """The alpha the page shows for its focused agent: (heads, n) from the heatmap's cells."""
    cells = page.locator(".pg-alpha rect[data-token]")
    values = [(int(c.get_attribute("data-head")), int(c.get_attribute("data-token")),
               float(c.get_attribute("data-value"))) for c in cells.all()]
    out = np.zeros((max(v[0] for v in values) + 1, max(v[1] for v in values) + 1))
    for h, t, v in values:
        out[h, t] = v
    return out


def _python_step(state, policy):
    """The Python reference from a page state: the policy's actions, one port step, its rewards,
    and the entity actor's alpha for the focused agent before the step (with the page's masks)."""
    m = state["m"]
    env = BatchedSpread(1, N=m)
    env.agent_pos[0] = np.reshape(state["pos"], (m, 2))
    env.agent_vel[0] = np.reshape(state["vel"], (m, 2))
    env.landmark_pos[0] = np.reshape(state["landmarks"], (m, 2))
    env.steps[0] = state["t"]
    obs = env.observe()
    actor = _actor(ENTITY_ACTOR, m)
    with torch.no_grad():
        tokens = actor.tokens(torch.from_numpy(obs))[0]
        mask = None if state["masks"] is None else torch.tensor([state["masks"]])
        logits, alpha = actor.nets[0](tokens, mask)
    if policy == "greedy":
        actions = np.array(list(greedy_assignment_policy()({f"agent_{i}": obs[0, i] for i in range(m)}).values()))
    elif policy == "flat":
        with torch.no_grad():
            actions = _actor(FLAT_ACTOR, m)(torch.from_numpy(obs))[0].argmax(-1).numpy()
    else:
        actions = logits[0].argmax(-1).numpy()
    _, rewards, *_ = env.step(actions[None])
    return {"alpha": alpha[0, state["focus"]].numpy(), "pos": env.agent_pos[0].ravel(),
            "vel": env.agent_vel[0].ravel(), "reward": rewards[0].mean()}


def _lim(page):
    """The half-width of the page's current view, [-lim, lim]^2."""
    return page.evaluate("() => document.querySelector('.attnmarl-playground').playground.lim")


def _pixel(page, xy):
    """Where the world point xy is drawn on the screen (the arena is SIZE pixels wide, or narrower on a phone)."""
    box, lim = page.locator(".pg-arena").bounding_box(), _lim(page)
    return box["x"] + (xy[0] + lim) / (2 * lim) * box["width"], box["y"] + (lim - xy[1]) / (2 * lim) * box["height"]


def _check_step(page, policy):
    """Step the page once and check the team against the Python reference: the alpha drawn before the
    step (the entity team's), positions and velocities after it, and the return grown by the step's mean
    reward."""
    before = page.evaluate(_JS_STATE, policy)
    reference = _python_step(before, policy)
    alpha = _python_step(page.evaluate(_JS_STATE, "entity"), "entity")["alpha"]  # drawn from the entity team
    assert np.abs(_page_alpha(page) - alpha).max() <= TOL
    page.locator('.attnmarl-playground [data-act="step"]').click()
    after = page.evaluate(_JS_STATE, policy)
    assert after["t"] == before["t"] + 1
    assert np.abs(np.array(after["pos"]) - reference["pos"]).max() <= TOL
    assert np.abs(np.array(after["vel"]) - reference["vel"]).max() <= TOL
    assert abs(after["ret"] - before["ret"] - reference["reward"]) <= TOL
    shown = page.locator(f'.pg-returns tr[data-policy="{policy}"] td[data-return]')
    assert float(shown.get_attribute("data-return")) == pytest.approx(after["ret"], abs=1e-12)
    return after


def test_widget_drag_switch_and_m_follow_the_python_reference(page):
    page.locator('.attnmarl-playground [data-act="reset"]').click()  # t = 0 of a fresh episode
    state = _check_step(page, "entity")
    assert np.abs(_page_alpha(page) - np.reshape(state["alpha"], (2, -1))).max() == 0

    # drag landmark L1 across the arena: it moves in every team's world, and alpha follows
    start, target = state["landmarks"][:2], (0.35, -0.45)
    alpha_before = _page_alpha(page)
    page.mouse.move(*_pixel(page, start))
    page.mouse.down()
    page.mouse.move(*_pixel(page, (0.0, 0.0)), steps=4)
    page.mouse.move(*_pixel(page, target), steps=4)
    page.mouse.up()
    for policy in ("entity", "flat", "greedy"):
        moved = page.evaluate(_JS_STATE, policy)
        assert np.abs(np.array(moved["landmarks"][:2]) - target).max() < 2 * _lim(page) / SIZE  # a pixel
        assert moved["landmarks"][2:] == state["landmarks"][2:]
    assert np.abs(_page_alpha(page) - alpha_before).max() > 1e-3
    _check_step(page, "entity")

    # switch networks: the shown team changes, each team steps as its Python reference
    page.locator('.attnmarl-playground [data-act="policy"]').select_option("flat")
    assert page.locator(".attnmarl-playground").get_attribute("data-policy") == "flat"
    _check_step(page, "flat")
    page.locator('.attnmarl-playground [data-act="policy"]').select_option("greedy")
    _check_step(page, "greedy")
    returns = {p: page.evaluate(_JS_STATE, p)["ret"] for p in ("entity", "flat", "greedy")}
    assert len(set(returns.values())) == 3  # three teams, three returns on the same episode

    # hide a landmark from the focused agent: its alpha is 0 and the rest matches torch with that mask
    page.locator('.attnmarl-playground [data-act="policy"]').select_option("entity")
    page.locator('.pg-alpha rect[data-name="L2"][data-head="0"]').click()
    hidden = page.evaluate(_JS_STATE, "entity")
    assert hidden["masks"][hidden["focus"]][2] is False and np.all(_page_alpha(page)[:, 2] == 0)
    _check_step(page, "entity")
    page.locator('.attnmarl-playground [data-act="unhide"]').click()
    assert page.evaluate(_JS_STATE, "entity")["masks"] is None

    # change m: the flat actor is offered only at m = 6, the entity actor plays on at m = 16
    page.locator('.attnmarl-playground [data-act="policy"]').select_option("flat")
    slider = page.locator('.attnmarl-playground [data-act="m"]')
    slider.fill("16")
    state16 = page.evaluate(_JS_STATE, "entity")
    assert state16["m"] == 16 and len(state16["pos"]) == 32 and state16["policy"] == "entity"
    assert page.locator('[data-act="policy"] option[value="flat"]').is_disabled()
    assert "m = 6" in page.locator(".pg-note").inner_text()
    assert page.locator(".pg-alpha rect[data-head='0']").count() == 32  # self, 16 landmarks, 15 agents
    # click agent a9: it becomes the focus, its alpha row is drawn, and it stays where it was
    page.mouse.click(*_pixel(page, state16["pos"][16:18]))
    clicked = page.evaluate(_JS_STATE, "entity")
    assert clicked["focus"] == 8 and clicked["pos"] == state16["pos"]  # a click selects, it does not move
    for _ in range(2):
        _check_step(page, "entity")
        _check_step(page, "greedy")
    # an episode ends after mpe2's 25 steps: each team's return is kept, and a new episode starts
    page.evaluate("() => { const pg = document.querySelector('.attnmarl-playground').playground;"
                  " while (pg.worlds.entity.steps > 0) pg.tick(); }")
    done = page.evaluate("() => document.querySelector('.attnmarl-playground').playground.finished")
    assert len(done["entity"]) == len(done["greedy"]) == 1 and done["flat"] == []
    assert page.evaluate(_JS_STATE, "entity")["ret"] == 0


def test_playground_is_one_face_everywhere_and_refuses_bad_settings():
    face = playground(m=9, seed=5)._repr_html_()  # what Jupyter and Colab display
    assert face.count("attnmarlPlayground.mount(") == 1 and "<script" in face and "http" not in face
    for bad in ({"m": 2}, {"m": 17}, {"m": 6.0}, {"seed": -1}, {"policy": "concat"}, {"policy": "flat", "m": 9}):
        with pytest.raises(ValueError):
            playground_html(**bad)
    with pytest.raises(ValueError, match="holds a 'flat' actor"):
        export_entity_actor(shipped_checkpoint("policy", "pi-spread6-flat"))
    with pytest.raises(ValueError, match="not a discrete-action simple_spread policy"):
        export_flat_actor(shipped_checkpoint("policy", "pi-tag-flat"))
    with pytest.raises(ValueError, match="one egocentric entity actor"):
        export_entity_actor(shipped_checkpoint("policy", "pi-spread6-absolute"))


def test_page_teams_score_what_the_shipped_checkpoints_score_on_mpe2(page):
    """48 of the page's episodes at m = 6 (the port's starts for seeds 1000-1047, not mpe2's episodes):
    each actor's mean return agrees with its shipped 200-episode mpe2 score within three standard errors
    of both."""
    finished = page_episode_returns(page, "entity")
    runs = {(r["name"], r["seed"]): r for r in shipped_runs("policy")}
    for key, (_, name, seed) in (("entity", ENTITY_ACTOR), ("flat", FLAT_ACTOR)):
        returns, run = np.array(finished[key]), runs[(name, seed)]
        sem = returns.std(ddof=1) / np.sqrt(len(returns))
        assert abs(returns.mean() - run["final_return"]) <= 3 * np.hypot(sem, run["final_sem"]), (key, returns.mean())
    assert np.mean(finished["entity"]) > np.mean(finished["flat"]) + 5


def test_at_m_16_no_label_overprints_another_and_the_focus_keeps_its_own(page):
    """Every shown label's drawn box (getBBox, in the arena's units) is clear of every other's, at m = 16 over
    several steps of play, and the focused agent's label is always among them."""
    page.locator('.attnmarl-playground [data-act="m"]').fill("16")
    for step in range(6):
        names, overprints = arena_labels(page)
        focus = page.evaluate("() => document.querySelector('.attnmarl-playground').playground.focus")
        assert f"a{focus + 1}" in names, step
        assert not overprints, f"step {step}: {overprints}"
        assert len(names) >= 8  # labels are hidden only where they would touch
        page.evaluate("() => document.querySelector('.attnmarl-playground').playground.tick()")


def test_the_two_heads_differ_in_hue_and_in_line(page):
    page.locator('.attnmarl-playground [data-act="m"]').fill("6")
    heads = page.evaluate("""() => [0, 1].map((h) => { const l = document.querySelector(`.pg-arrow[data-head="${h}"]`);
        return [l.getAttribute('stroke'), l.getAttribute('stroke-dasharray')]; })""")
    (hue0, dash0), (hue1, dash1) = heads
    assert hue0 != hue1 and dash0 != dash1
    (red0, blue0), (red1, blue1) = [(int(hue[1:3], 16), int(hue[5:7], 16)) for hue in (hue0, hue1)]
    assert red0 > 150 > blue0 and blue1 > 150 > red1  # one red, one blue: not two shades of red


def test_at_390_px_the_playground_fits_the_screen_and_a_swipe_scrolls_the_page(page):
    """A phone's width: nothing of the playground sticks out of the page, the arena scales down, the α
    heatmap keeps its size (its labels stay readable) and scrolls sideways in the panels' own box, a drag
    still lands where the pointer is, and only the entities capture a touch (elsewhere it scrolls)."""
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        wide = page.evaluate("""() => { const root = document.querySelector('.attnmarl-playground');
            const heatmap = document.querySelector('.pg-heatmap');
            return [document.documentElement.scrollWidth, root.getBoundingClientRect().right,
                    document.querySelector('.pg-arena').getBoundingClientRect().width,
                    document.querySelector('.pg-panels').getBoundingClientRect().right,
                    heatmap.getBoundingClientRect().width - heatmap.width.baseVal.value]; }""")
        assert wide[0] <= 390 and wide[1] <= 390 and wide[3] <= 390 and abs(wide[4]) < 1, wide
        assert wide[2] < SIZE
        styles = page.evaluate("""() => [getComputedStyle(document.querySelector('.pg-arena')).touchAction,
            getComputedStyle(document.querySelector('.pg-agent')).touchAction]""")
        assert styles == ["pan-x pan-y", "none"]
        state = page.evaluate(_JS_STATE, "entity")
        target = (-0.4, 0.3)
        page.mouse.move(*_pixel(page, state["landmarks"][:2]))
        page.mouse.down()
        page.mouse.move(*_pixel(page, target), steps=4)
        page.mouse.up()
        moved = page.evaluate(_JS_STATE, "entity")["landmarks"][:2]
        assert np.abs(np.array(moved) - target).max() < 2 * 2 * _lim(page) / wide[2]  # two drawn pixels
    finally:
        page.set_viewport_size({"width": 1200, "height": 900})


def test_the_keyboard_selects_moves_hides_and_steps_as_the_pointer_does(page):
    """Issue 43: Tab reaches every agent and landmark (each named for assistive technology), focusing an agent
    selects it, the arrow keys move the focused entity by 0.05 in every team's world (the entity actor's α follows,
    as the Python reference computes it), Enter hides a landmark's token from the selected agent, p plays and
    pauses, s steps."""
    pg = page.locator(".attnmarl-playground")
    pg.locator('[data-act="task"]').select_option("simple_spread")
    pg.locator('[data-act="policy"]').select_option("entity")
    pg.locator('[data-act="reset"]').click()
    pg.locator('[data-act="unhide"]').focus()
    page.keyboard.press("Tab")
    page.keyboard.press("Tab")  # a1, then a2: selected, and still focused after the arena is redrawn for it
    assert page.evaluate("document.activeElement.dataset.name") == "a2" and pg.get_attribute("data-focus") == "1"
    assert page.evaluate("document.activeElement.getAttribute('aria-label')").startswith("agent a2")
    before = page.evaluate(_JS_STATE, "entity")
    pg.locator('.pg-arena circle[data-name="L2"]').focus()
    for key in ("ArrowRight", "ArrowRight", "ArrowDown"):
        page.keyboard.press(key)
    for policy in ("entity", "flat", "greedy"):
        moved = page.evaluate(_JS_STATE, policy)["landmarks"]
        np.testing.assert_allclose(moved[2:4], np.add(before["landmarks"][2:4], [0.1, -0.05]), atol=1e-12)
        assert moved[:2] == before["landmarks"][:2]
    state = page.evaluate(_JS_STATE, "entity")
    assert np.abs(_page_alpha(page) - _python_step(state, "entity")["alpha"]).max() <= TOL
    page.keyboard.press("Enter")  # hide L2 from a2
    state = page.evaluate(_JS_STATE, "entity")
    assert state["masks"] is not None and page.evaluate("document.activeElement.dataset.name") == "L2"
    assert np.abs(_page_alpha(page) - _python_step(state, "entity")["alpha"]).max() <= TOL
    page.keyboard.press("s")
    assert page.evaluate(_JS_STATE, "entity")["t"] == state["t"] + 1
    page.keyboard.press("p")
    assert pg.locator('[data-act="play"]').inner_text() == "pause"
    page.keyboard.press("p")
    assert pg.locator('[data-act="play"]').inner_text() == "play"
    page.keyboard.press("Enter")  # L2 shown again
    assert page.evaluate(_JS_STATE, "entity")["masks"] is None
