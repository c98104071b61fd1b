"""The playground's collect_treasure twins against the package, in headless Chromium with the network off.

- numpy's generator: the page draws Generator.random, uniform and integers bit for bit, in any order;
- the world step (physics, pickups, respawns, deliveries, rewards, observations sorted by distance) against
  :class:`attnmarl.envs.treasure.BatchedCollectTreasure`, over whole episodes, from the port's seeded starts;
- the shipped entity actor's logits and alpha (collectors' network and each deposit's) against torch;
- whole episodes' actions: the page's closed loop against a Python rollout from the same seed;
- the widget as a reader uses it (the task menu, dragging a treasure onto a collector and the collector onto its
  deposit, focusing a deposit, hiding an entity, changing m), each step checked against the port and torch;
- that it fits a phone's width, labels never overprint at the largest m, and its text is 9 px or more.

One Chromium serves the whole module.
"""
from __future__ import annotations

import copy
from functools import cache

import numpy as np
import pytest
import torch
from browser import arena_labels, playground_page, smallest_svg_text

from attnmarl.checkpoints import load_agent_at, shipped_checkpoint, shipped_runs
from attnmarl.envs.treasure import BatchedCollectTreasure
from attnmarl.notebook.playground import (
    M_RANGE,
    TREASURE_ACTOR,
    export_treasure_actor,
    playground_html,
    playground_spec,
    world_constants,
)
from attnmarl.transfer import team_kwargs

TOL = 1e-5
"""The parity the page must hold: environment state, logits and alpha to 1e-5 (DESIGN §4)."""
K = 2
"""Deposits (and treasure types) in every team of the page."""


class RecordedTreasure(BatchedCollectTreasure):
    """The port, recording each step's pickups and deliveries (the page's table counts them)."""

    def _post_step(self) -> np.ndarray:
        alive = self.treasure_alive.copy()
        reward = super()._post_step()
        picked = (alive & ~self.treasure_alive).sum(axis=1)  # alive before, parked now (respawns were gone before)
        self.events = np.stack([picked, reward // 5 - picked], axis=1).astype(int)
        return reward


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The book's playground starting on collect_treasure (m = 8, seed 3), with the treasure twins' inputs as
    globals TSPEC and TW (browser.playground_page)."""
    markup = playground_html(m=8, seed=3, tasks=("collect_treasure", "simple_spread"))
    with playground_page(tmp_path_factory.mktemp("treasure"), markup) as page:
        yield page


@cache
def _actor(m: int):
    """The shipped collect_treasure entity actor, rebuilt for a team of m (its trained weights)."""
    torch.set_num_threads(1)
    folder, name, seed = TREASURE_ACTOR
    return load_agent_at(shipped_checkpoint(folder, name, seed), **team_kwargs("collect_treasure", m))[0].actor


def _port(m: int, seed: int = 0, num_envs: int = 1) -> RecordedTreasure:
    return RecordedTreasure(num_envs, seed=seed, **team_kwargs("collect_treasure", m))


def _state(env: BatchedCollectTreasure, slot: int = 0) -> dict:
    """A world's state as the page's TreasureWorld holds it."""
    return {"pos": env.agent_pos[slot].ravel().tolist(), "vel": env.agent_vel[slot].ravel().tolist(),
            "treasures": env.landmark_pos[slot].ravel().tolist(),
            "alive": env.treasure_alive[slot].astype(int).tolist(), "type": env.treasure_type[slot].tolist(),
            "holding": env.holding[slot].tolist()}


def _rollout(m: int, seed: int) -> tuple[np.ndarray, list[dict], np.ndarray, np.ndarray]:
    """The port's first episode for ``seed`` with the actor's argmax actions: actions (T, m), the state after each
    step but the last (the port then resets), rewards (T, m) and events (T, 2: pickups, deliveries)."""
    env, actor = _port(m, seed), _actor(m)
    obs = env.observe()
    actions, states, rewards, events = [], [], [], []
    with torch.no_grad():
        for _ in range(env.max_cycles):
            a = actor(torch.from_numpy(obs)).argmax(-1).numpy()
            obs, r, _, truncated, _ = env.step(a)
            actions.append(a[0])
            rewards.append(r[0])
            events.append(env.events[0])
            if not truncated[0]:
                states.append(_state(env))
    return np.array(actions), states, np.array(rewards), np.array(events)


_JS_DRAWS = """args => {
  const random = attnmarlPlayground.numpyRandom(args.seed), out = [];
  for (const [kind, a, b] of args.ops) {
    out.push(kind === 'random' ? random() : kind === 'uniform' ? random.uniform(a, b) : random.integers(a));
  }
  return out;
}"""


@pytest.mark.parametrize("seed", [0, 7, 2**31 - 1])
def test_page_draws_numpys_stream_bit_for_bit(page, seed):
    """random(), uniform() and integers() in a random order, integers of 1 to 7 values (so numpy's spare upper
    half of a 64-bit draw is used, and kept across the other draws, as numpy does): the same numbers, exactly."""
    plan = np.random.default_rng(seed + 1)
    ops = []
    for _ in range(300):
        kind = ["random", "uniform", "integers"][plan.integers(3)]
        ops.append([kind, -0.95, 0.95] if kind == "uniform" else [kind, int(plan.integers(1, 8)), 0])
    rng = np.random.default_rng(seed)
    python = [rng.random() if kind == "random" else rng.uniform(a, b) if kind == "uniform" else int(rng.integers(0, a))
              for kind, a, b in ops]
    assert page.evaluate(_JS_DRAWS, {"seed": seed, "ops": ops}) == python


_JS_SEEDED = """args => {
  const w = new attnmarlPlayground.TreasureWorld(TSPEC.world, args.m);
  w.reset(attnmarlPlayground.numpyRandom(args.seed));
  return {pos: Array.from(w.pos), vel: Array.from(w.vel), treasures: Array.from(w.treasures),
          alive: Array.from(w.alive), type: Array.from(w.type), holding: Array.from(w.holding)};
}"""


@pytest.mark.parametrize("m", [3, 8, 16])
def test_page_seeds_start_where_the_ports_seeds_start(page, m):
    for seed in (0, 5, 2**40 + 3):
        assert page.evaluate(_JS_SEEDED, {"m": m, "seed": seed}) == _state(_port(m, seed)), seed


_JS_EPISODE = """args => {
  const {TreasureWorld, numpyRandom} = attnmarlPlayground;
  const w = new TreasureWorld(TSPEC.world, args.m);
  w.reset(numpyRandom(args.seed));  // the generator the respawns draw from, as the port's after its reset
  for (const key of ['pos', 'vel', 'treasures', 'alive', 'type', 'holding']) w[key].set(args.state[key]);
  const out = {obs: [], rewards: [], states: [], events: []};
  for (const a of args.actions) {
    out.rewards.push(Array.from(w.step(a)));
    out.obs.push(Array.from({length: args.m}, (_, i) => Array.from(w.observe(i))));
    out.states.push({pos: Array.from(w.pos), vel: Array.from(w.vel), treasures: Array.from(w.treasures),
                     alive: Array.from(w.alive), type: Array.from(w.type), holding: Array.from(w.holding)});
    out.events.push([w.last.pickups, w.last.deliveries]);
  }
  return out;
}"""


def _padded(rows: list[list[float]], width: int) -> np.ndarray:
    """The page's observations (a deposit's is K numbers shorter) zero-padded as the port pads them."""
    return np.array([row + [0.0] * (width - len(row)) for row in rows])


@pytest.mark.parametrize("m", [3, 4, 8, 16])
def test_world_steps_as_the_port_over_whole_episodes(page, m):
    """Three episodes from the port's seeded starts: the trained team's actions, random actions, and random
    actions from a crowded start (every agent and treasure within 0.025 of the centre in x and y: every collector
    touches every treasure and deposit, so pickups, deliveries and respawns come in the first steps).
    Positions, velocities, treasures, what each collector holds, rewards, events and every observation (sorted by
    distance) match the port at every step."""
    rng = np.random.default_rng(m)
    worst, totals = 0.0, np.zeros(3, dtype=int)  # pickups, deliveries, respawns
    for episode in range(3):
        seed = 10 * m + episode
        env = _port(m, seed)
        if episode == 2:
            env.agent_pos[0] = rng.uniform(-0.025, 0.025, env.agent_pos[0].shape)
            env.landmark_pos[0] = rng.uniform(-0.025, 0.025, env.landmark_pos[0].shape)
        start = _state(env)
        actions = _rollout(m, seed)[0] if episode == 0 else rng.integers(0, 5, (env.max_cycles, m))
        obs, rewards, states, events = [], [], [], []
        for a in actions:
            _, r, _, truncated, info = env.step(a[None])
            obs.append(info["final_obs"][0])
            rewards.append(r[0])
            events.append(env.events[0])
            if not truncated[0]:
                states.append(_state(env))
        js = page.evaluate(_JS_EPISODE, {"m": m, "seed": seed, "state": start, "actions": actions.tolist()})
        js_obs = np.array([_padded(step, env.obs_dim) for step in js["obs"]])
        assert js_obs.shape == np.shape(obs)
        diffs = [np.abs(js_obs - obs).max(), np.abs(np.array(js["rewards"]) - rewards).max()]
        for key in ("pos", "vel", "treasures"):
            diffs.append(max(np.abs(np.subtract(j[key], p[key])).max() for j, p in zip(js["states"], states)))
        for key in ("alive", "type", "holding"):
            assert [j[key] for j in js["states"][:-1]] == [p[key] for p in states], (episode, key)
        assert js["events"] == np.array(events).tolist(), episode
        worst = max(worst, *diffs)
        assert max(diffs) <= TOL, (episode, diffs)
        totals += [sum(e[0] for e in events), sum(e[1] for e in events),
                   sum(int(np.sum(~np.array(p["alive"], bool))) for p in states)]
        if episode == 2:
            assert events[0][0] >= 1  # the crowded start: a pickup at the first step
    assert (totals > 0).all(), totals  # pickups, deliveries and respawns were all tested
    print(f"m = {m}: state, observations and rewards within {worst:.1e} of the port; "
          f"{totals[0]} pickups, {totals[1]} deliveries, {totals[2]} treasures gone and respawned")


_JS_ENTITY = """args => args.obs.map(team => team.map((o, i) => {
  const {entityForward, treasureTokens} = attnmarlPlayground, C = args.m - 2;
  const net = TW.entity[i < C ? 0 : 1 + i - C];
  const r = entityForward(net, treasureTokens(Float64Array.from(o), i < C, args.m, C, 2),
                          args.masks ? args.masks[i] : null);
  return {logits: Array.from(r.logits), alpha: Array.from(r.alpha)};
}))"""


def _observations(m: int) -> np.ndarray:
    """Observations (batch, m, obs_dim) of four of the trained team's episodes on the port (so collectors carry
    treasures and treasures are gone at some steps)."""
    env, actor, rows = _port(m, seed=100 + m, num_envs=4), _actor(m), []
    obs = env.observe()
    with torch.no_grad():
        for _ in range(env.max_cycles):
            rows.append(obs)
            obs, *_ = env.step(actor(torch.from_numpy(obs)).argmax(-1).numpy())
    return np.concatenate(rows)


def _torch_both(net, fn):
    """``fn(net)`` in float32 and in float64 on the same float32 weights (the page computes in float64)."""
    with torch.no_grad():
        return fn(net), fn(copy.deepcopy(net).double())


@pytest.mark.parametrize("m", [3, 4, 8, 16])
def test_treasure_actor_logits_and_alpha_match_torch(page, m):
    actor = _actor(m)
    o = torch.from_numpy(_observations(m))
    c = m - K
    carrying = (o[:, :c, 4:4 + K] > 0).any()
    gone = (o[:, :c, -(2 + K):] == 0).all(-1).any()  # a collector's last treasure token is zeros: one is gone
    assert carrying and gone  # the batch holds carrying collectors and picked-up treasures
    _, (y, alpha) = _torch_both(actor, lambda net: net.outputs_and_alpha(o.to(next(net.parameters()).dtype)))
    js = page.evaluate(_JS_ENTITY, {"m": m, "obs": o.tolist(), "masks": None})
    js_y = np.array([[agent["logits"] for agent in team] for team in js])
    js_alpha = np.array([[agent["alpha"] for agent in team] for team in js]).reshape(alpha.shape)
    dy, da = np.abs(js_y - y.numpy()).max(), np.abs(js_alpha - alpha.numpy()).max()
    print(f"m = {m}: logits within {dy:.1e}, alpha within {da:.1e} of torch in float64 ({len(o)} observations, "
          f"{m} agents, three networks)")
    assert dy <= TOL and da <= TOL
    assert np.abs(y.numpy()).max() > 0.1  # trained logits
    assert alpha.shape[-1] == 1 + (m - 1) + c  # self, the other agents, the treasures


def test_treasure_actor_with_hidden_tokens_matches_torch(page):
    m = 8
    actor = _actor(m)
    o = torch.from_numpy(_observations(m)[:6])
    masks = np.random.default_rng(0).random((len(o), m, 1 + (m - 1) + (m - K))) > 0.4
    masks[..., 0] = True  # an agent always sees itself
    tokens = actor.tokens(o)  # per type: collectors (batch, C, n, 21), each deposit (batch, 1, n, 19)
    groups = [list(range(m - K))] + [[m - K + d] for d in range(K)]
    ys, alphas = [], []
    for net, t, agents in zip(actor.nets, tokens, groups):
        mask = torch.from_numpy(masks[:, agents])
        _, (y, alpha) = _torch_both(net, lambda n, t=t, mask=mask: n(t.to(next(n.parameters()).dtype), mask))
        ys.append(y)
        alphas.append(alpha)
    y, alpha = torch.cat(ys, 1).numpy(), torch.cat(alphas, 1).numpy()
    rows = [page.evaluate(_JS_ENTITY, {"m": m, "obs": [o[b].tolist()], "masks": masks[b].tolist()})[0]
            for b in range(len(o))]
    js_y = np.array([[agent["logits"] for agent in team] for team in rows])
    js_alpha = np.array([[agent["alpha"] for agent in team] for team in rows]).reshape(alpha.shape)
    assert np.abs(js_y - y).max() <= TOL and np.abs(js_alpha - alpha).max() <= TOL
    assert np.all(js_alpha[~np.broadcast_to(masks[:, :, None, :], alpha.shape)] == 0)
    with torch.no_grad():
        y_all = actor.outputs_and_alpha(o)[0].numpy()
    assert np.abs(y_all - y).max() > 1e-3  # hiding tokens changes what the agents do


_JS_ROLLOUT = """args => {
  const {TreasureWorld, numpyRandom, teamActions} = attnmarlPlayground;
  const w = new TreasureWorld(TSPEC.world, args.m);
  w.reset(numpyRandom(args.seed));
  const actions = [];
  let total = 0;
  for (let t = 0; t < TSPEC.world.max_cycles; t++) {
    const a = teamActions('entity', w, TW, null).actions;
    actions.push(Array.from(a));
    total += w.step(a).reduce((x, y) => x + y, 0) / args.m;
  }
  return {actions, total, events: [w.pickups, w.deliveries]};
}"""


@pytest.mark.parametrize("m", [3, 4, 8, 16])
def test_page_episodes_take_the_python_rollouts_actions(page, m):
    """For a fixed seed, the page's episode (its world, generator, tokens, three networks and argmax) takes the
    actions of the port's episode under torch at every step, and scores its return."""
    events = np.zeros(2, dtype=int)
    for seed in (1, 2):
        js = page.evaluate(_JS_ROLLOUT, {"m": m, "seed": seed})
        actions, _, rewards, python_events = _rollout(m, seed)
        assert np.array(js["actions"]).shape == actions.shape == (25, m)
        first = np.argmax((np.array(js["actions"]) != actions).any(1))
        assert np.array_equal(js["actions"], actions), f"seed {seed}: first differing step {first}"
        assert abs(js["total"] - rewards.mean(axis=1).sum()) <= TOL
        assert js["events"] == python_events.sum(axis=0).tolist()
        events += python_events.sum(axis=0)
        assert len(np.unique(actions)) > 1
    assert events[0] > 0  # the team picks treasures up


# ---- the widget, as a reader uses it ---------------------------------------------------------------

SIZE = 400
"""The arena's width and height in pixels in playground.js."""

_JS_STATE = """() => {
  const pg = document.querySelector('.attnmarl-playground').playground, w = pg.worlds.entity;
  return {task: pg.taskName, m: pg.m, focus: pg.focus, t: w.steps, pos: Array.from(w.pos), vel: Array.from(w.vel),
          treasures: Array.from(w.treasures), alive: Array.from(w.alive), type: Array.from(w.type),
          holding: Array.from(w.holding), rng: w.random.state(), ret: pg.returns.entity, pickups: w.pickups,
          deliveries: w.deliveries, masks: pg.masks(), lim: pg.lim};
}"""


def _names(m: int, i: int) -> list[str]:
    """The alpha row's columns for agent i: itself, the other agents (c1.., d1, d2), the treasures."""
    c = m - K
    agents = [f"c{j + 1}" if j < c else f"d{j - c + 1}" for j in range(m)]
    return ["self"] + [a for j, a in enumerate(agents) if j != i] + [f"t{t + 1}" for t in range(c)]


def _reference(state: dict) -> RecordedTreasure:
    """The port in the page's state, its generator where the page's stands."""
    m = state["m"]
    env = _port(m)
    env.agent_pos[0] = np.reshape(state["pos"], (m, 2))
    env.agent_vel[0] = np.reshape(state["vel"], (m, 2))
    env.landmark_pos[0] = np.reshape(state["treasures"], (m - K, 2))
    env.treasure_alive[0] = np.array(state["alive"], bool)
    env.treasure_type[0] = state["type"]
    env.holding[0] = state["holding"]
    env.steps[0] = state["t"]
    spare = state["rng"]["spare"]
    env.rng.bit_generator.state = {"bit_generator": "PCG64", "has_uint32": int(spare is not None),
                                   "uinteger": spare or 0,
                                   "state": {"state": int(state["rng"]["state"]), "inc": int(state["rng"]["inc"])}}
    return env


def _python_step(state: dict) -> dict:
    """The Python reference from a page state: the focused agent's alpha over its row's columns (with the page's
    masks), the team's argmax actions, one port step: the state after it, the mean reward and the events."""
    m, i = state["m"], state["focus"]
    env, actor = _reference(state), _actor(state["m"])
    obs = torch.from_numpy(env.observe())
    c = m - K
    net, row = (0, i) if i < c else (1 + i - c, 0)
    with torch.no_grad():
        tokens = actor.tokens(obs)
        masks = None if state["masks"] is None else np.array(state["masks"])
        types = [list(range(c))] + [[c + d] for d in range(K)]
        outputs = [actor.nets[k](t, None if masks is None else torch.from_numpy(masks[None, agents]))
                   for k, (t, agents) in enumerate(zip(tokens, types))]
        actions = torch.cat([y for y, _ in outputs], 1)[0].argmax(-1).numpy()
        alpha = outputs[net][1][0, row].numpy()  # (heads, n), in token order: nearest first
    names = _token_names(env, i)
    columns = [names.index(name) for name in _names(m, i)]
    _, rewards, *_ = env.step(actions[None])
    return {"alpha": alpha[:, columns], "state": _state(env), "reward": rewards[0].mean(), "events": env.events[0]}


def _token_names(env: BatchedCollectTreasure, i: int) -> list[str]:
    """The entity behind each of agent i's tokens, sorted as the port's observe sorts them."""
    c, pos = env.num_collectors, env.agent_pos[0]
    distance = np.linalg.norm(pos - pos[i], axis=1)
    distance[i] = -1.0
    others = np.argsort(distance, kind="stable")[1:]
    key = np.where(env.treasure_alive[0], np.linalg.norm(env.landmark_pos[0] - pos[i], axis=1), 1e6)
    treasures = np.argsort(key, kind="stable")
    return (["self"] + [f"c{j + 1}" if j < c else f"d{j - c + 1}" for j in others]
            + [f"t{t + 1}" for t in treasures])


def _page_alpha(page) -> np.ndarray:
    """The alpha the page shows for its focused agent: (heads, columns) from the heatmap's cells."""
    values = [(int(c.get_attribute("data-head")), int(c.get_attribute("data-token")),
               float(c.get_attribute("data-value"))) for c in page.locator(".pg-alpha rect[data-token]").all()]
    out = np.zeros((max(v[0] for v in values) + 1, max(v[1] for v in values) + 1))
    for h, t, v in values:
        out[h, t] = v
    return out


def _check_step(page) -> dict:
    """Step the page once and check it against the port: the alpha row drawn before the step (columns by entity),
    then the state, the return grown by the step's mean reward, and the table's pickups / deliveries."""
    before = page.evaluate(_JS_STATE)
    reference = _python_step(before)
    assert [c.get_attribute("data-name") for c in page.locator(".pg-alpha rect[data-head='0']").all()] == \
        _names(before["m"], before["focus"])
    assert np.abs(_page_alpha(page) - reference["alpha"]).max() <= TOL
    page.locator('.attnmarl-playground [data-act="step"]').click()
    after = page.evaluate(_JS_STATE)
    assert after["t"] == before["t"] + 1
    for key in ("pos", "vel", "treasures"):
        assert np.abs(np.subtract(after[key], reference["state"][key])).max() <= TOL, key
    for key in ("alive", "type", "holding"):
        assert after[key] == reference["state"][key], key
    assert abs(after["ret"] - before["ret"] - reference["reward"]) <= TOL
    events = [after["pickups"] - before["pickups"], after["deliveries"] - before["deliveries"]]
    assert events == reference["events"].tolist()
    shown = page.locator('.pg-returns tr[data-policy="entity"]')
    shown_return = float(shown.locator("td[data-return]").get_attribute("data-return"))
    assert shown_return == pytest.approx(after["ret"], abs=1e-12)
    assert shown.locator(".pg-counts").inner_text() == f"{after['pickups']} / {after['deliveries']}"
    return after


def _pixel(page, xy) -> tuple[float, float]:
    """Where the world point xy is drawn on the screen."""
    box, lim = page.locator(".pg-arena").bounding_box(), page.evaluate(_JS_STATE)["lim"]
    return box["x"] + (xy[0] + lim) / (2 * lim) * box["width"], box["y"] + (lim - xy[1]) / (2 * lim) * box["height"]


def _drag(page, start, target) -> None:
    page.mouse.move(*_pixel(page, start))
    page.mouse.down()
    page.mouse.move(*_pixel(page, target), steps=4)
    page.mouse.up()


def test_widget_starts_on_treasure_and_plays_as_the_port(page):
    root = page.locator(".attnmarl-playground")
    assert root.get_attribute("data-task") == "collect_treasure"
    assert not page.locator(".pg-policy").is_visible()  # one team: no policy menu
    assert "trained at m = 4" in page.locator(".pg-note").inner_text()
    page.locator('.attnmarl-playground [data-act="reset"]').click()
    for _ in range(4):
        _check_step(page)


def test_widget_drags_a_treasure_to_a_collector_and_the_collector_to_its_deposit(page):
    page.locator('.attnmarl-playground [data-act="reset"]').click()  # a fresh episode: every treasure alive
    state = page.evaluate(_JS_STATE)
    m, c = state["m"], state["m"] - K
    empty = next(j for j in range(c) if state["holding"][j] < 0)
    collector = np.reshape(state["pos"], (m, 2))[empty]
    target = [collector[0] * 0.5, collector[1] * 0.5]  # inside the view, clear of its edge
    _drag(page, np.reshape(state["pos"], (m, 2))[empty], target)  # the collector, brought to rest at target
    state = page.evaluate(_JS_STATE)
    treasure = int(np.argmax(np.array(state["alive"])))
    _drag(page, np.reshape(state["treasures"], (c, 2))[treasure], target)  # a treasure onto it
    state = page.evaluate(_JS_STATE)
    assert state["focus"] == empty  # the click that grabbed the collector focused it
    kind = state["type"][treasure]
    after = _check_step(page)
    assert after["holding"][empty] == kind and after["pickups"] >= 1
    # the collector, carrying, dragged onto the deposit of its treasure's colour: a delivery at the next step
    deposit = np.reshape(after["pos"], (m, 2))[c + kind]
    _drag(page, np.reshape(after["pos"], (m, 2))[empty], deposit)
    after = _check_step(page)
    assert after["deliveries"] >= 1 and after["holding"][empty] == -1
    assert page.locator(".pg-counts").inner_text() == f"{after['pickups']} / {after['deliveries']}"


def test_widget_focuses_a_deposit_hides_an_entity_and_changes_m(page):
    for _ in range(10):  # a new episode until a deposit stands clear: nothing else within the pointer's reach
        page.locator('.attnmarl-playground [data-act="reset"]').click()
        state = page.evaluate(_JS_STATE)
        m, c = state["m"], state["m"] - K
        pos = np.reshape(state["pos"], (m, 2))
        others = np.concatenate([pos[:c], np.reshape(state["treasures"], (c, 2))])
        index = max((c, c + 1), key=lambda j: np.linalg.norm(others - pos[j], axis=1).min())
        if np.linalg.norm(others - pos[index], axis=1).min() > 0.1:
            break
    page.mouse.click(*_pixel(page, pos[index]))
    state = page.evaluate(_JS_STATE)
    assert state["focus"] == index
    assert f"deposit d{index - c + 1}" in page.locator(".pg-alpha svg").get_attribute("aria-label")
    _check_step(page)
    # hide treasure t2 from the deposit: its column is 0, and the rest matches torch with that mask
    page.locator('.pg-alpha rect[data-name="t2"][data-head="0"]').click()
    column = _names(m, index).index("t2")
    assert np.all(_page_alpha(page)[:, column] == 0)
    assert page.evaluate(_JS_STATE)["masks"] is not None
    _check_step(page)
    page.locator('.attnmarl-playground [data-act="unhide"]').click()
    assert page.evaluate(_JS_STATE)["masks"] is None
    for size in (M_RANGE[1], M_RANGE[0]):
        page.locator('.attnmarl-playground [data-act="m"]').fill(str(size))
        state = page.evaluate(_JS_STATE)
        assert state["m"] == size and len(state["pos"]) == 2 * size and len(state["treasures"]) == 2 * (size - K)
        assert page.locator(".pg-alpha rect[data-head='0']").count() == 1 + (size - 1) + (size - K)
        for _ in range(2):
            _check_step(page)
    page.locator('.attnmarl-playground [data-act="m"]').fill("8")


def test_task_menu_switches_between_the_two_tasks(page):
    menu = page.locator('.attnmarl-playground [data-act="task"]')
    menu.select_option("simple_spread")
    root = page.locator(".attnmarl-playground")
    assert root.get_attribute("data-task") == "simple_spread" and root.get_attribute("data-m") == "8"
    assert page.locator(".pg-policy").is_visible()
    assert page.locator(".pg-arena circle[data-name='L8']").count() == 1
    assert "simple_spread" in page.locator(".pg-title").inner_text()
    menu.select_option("collect_treasure")
    assert root.get_attribute("data-task") == "collect_treasure"
    assert page.locator(".pg-arena circle[data-name='d2']").count() == 1
    _check_step(page)


def test_page_team_scores_what_the_shipped_checkpoint_scores_on_mpe2(page):
    """48 of the page's episodes at m = 4, the team size the actor was trained at (the port's starts for seeds
    1000-1047, not mpe2's episodes): the mean return agrees with the shipped 200-episode mpe2 score within three
    standard errors of both."""
    finished = page.evaluate("""() => {
      const pg = document.querySelector('.attnmarl-playground').playground;
      pg.setM(4, 1000);
      while (pg.finished.entity.length < 48) pg.tick();
      const out = pg.finished.entity;
      pg.setM(8, 3);
      return out;
    }""")
    run = next(r for r in shipped_runs(TREASURE_ACTOR[0]) if (r["name"], r["seed"]) == TREASURE_ACTOR[1:])
    returns = np.array(finished)
    sem = returns.std(ddof=1) / np.sqrt(len(returns))
    assert abs(returns.mean() - run["final_return"]) <= 3 * np.hypot(sem, run["final_sem"]), returns.mean()


def test_at_m_16_no_label_overprints_another_and_text_is_9_px_or_more(page):
    """At the largest m, over several steps of play: every shown label's box is clear of every other's, the
    focused agent's label is among them; at 1280 px every text of the widget is 9 px or more, on either task."""
    page.set_viewport_size({"width": 1280, "height": 900})
    try:
        page.locator('.attnmarl-playground [data-act="m"]').fill(str(M_RANGE[1]))
        for step in range(6):
            names, overprints = arena_labels(page)
            focus = page.evaluate(_JS_STATE)["focus"]
            assert f"c{focus + 1}" in names and not overprints, (step, overprints)
            assert len(names) >= 8  # labels are hidden only where they would touch
            assert smallest_svg_text(page) >= 9
            page.evaluate("() => document.querySelector('.attnmarl-playground').playground.tick()")
        page.locator('.attnmarl-playground [data-act="task"]').select_option("simple_spread")
        assert smallest_svg_text(page) >= 9
    finally:
        page.locator('.attnmarl-playground [data-act="task"]').select_option("collect_treasure")
        page.locator('.attnmarl-playground [data-act="m"]').fill("8")
        page.set_viewport_size({"width": 1200, "height": 900})


def test_at_390_px_the_treasure_playground_fits_and_a_drag_lands(page):
    """A phone's width: nothing sticks out of the page, the arena scales down, the α heatmap keeps its size (its
    labels stay readable, issue 43) and scrolls sideways in the panels' own box, a drag lands where the pointer
    is, and only the entities capture a touch (elsewhere it scrolls the page)."""
    page.set_viewport_size({"width": 390, "height": 844})
    try:
        page.locator('.attnmarl-playground [data-act="m"]').fill(str(M_RANGE[1]))
        wide = page.evaluate("""() => { const heatmap = document.querySelector('.pg-heatmap');
            return [document.documentElement.scrollWidth,
                    document.querySelector('.attnmarl-playground').getBoundingClientRect().right,
                    document.querySelector('.pg-arena').getBoundingClientRect().width,
                    document.querySelector('.pg-panels').getBoundingClientRect().right,
                    document.querySelector('.pg-returns table').getBoundingClientRect().right,
                    heatmap.getBoundingClientRect().width - heatmap.width.baseVal.value]; }""")
        assert wide[0] <= 390 and wide[1] <= 390 and wide[3] <= 390 and wide[4] <= 390, wide
        assert abs(wide[5]) < 1, wide  # drawn at its own size
        assert wide[2] < SIZE
        styles = page.evaluate("""() => ['.pg-arena', '.pg-agent', '.pg-landmark'].map((s) =>
            getComputedStyle(document.querySelector(s)).touchAction)""")
        assert styles == ["pan-x pan-y", "none", "none"]
        page.locator('.attnmarl-playground [data-act="reset"]').click()
        state = page.evaluate(_JS_STATE)
        target = (-0.4, 0.3)
        _drag(page, state["treasures"][:2], target)
        moved = page.evaluate(_JS_STATE)["treasures"][:2]
        assert np.abs(np.array(moved) - target).max() < 2 * 2 * state["lim"] / wide[2]  # two drawn pixels
    finally:
        page.locator('.attnmarl-playground [data-act="m"]').fill("8")
        page.set_viewport_size({"width": 1200, "height": 900})


def test_treasure_playground_refuses_bad_settings():
    for bad in ({"tasks": ()}, {"tasks": "collect_treasure"}, {"tasks": ("collect_treasure", "collect_treasure")},
                {"tasks": ("simple_tag",)}, {"tasks": ("collect_treasure",), "policy": "flat"},
                {"tasks": ("collect_treasure",), "m": 2}, {"tasks": ("collect_treasure",), "m": 17}):
        with pytest.raises(ValueError):
            playground_spec(**bad)
    with pytest.raises(ValueError, match="not a discrete-action collect_treasure policy"):
        export_treasure_actor(shipped_checkpoint("policy", "pi-spread6-entity"))
    with pytest.raises(ValueError, match="holds a 'flat' actor"):
        export_treasure_actor(shipped_checkpoint("scale", "scale-treasure4-flat"))
    with pytest.raises(ValueError, match="mixes its tokens by 'mean'"):
        export_treasure_actor(shipped_checkpoint("ablation", "scale-treasure8-entity-mean"))
    with pytest.raises(ValueError, match="plays .* not 'simple_tag'"):
        world_constants("simple_tag")
    spec = playground_spec(m=5, tasks=("collect_treasure",))
    nets = spec["collect_treasure"]["entity"]
    assert [net["sizes"]["role"] for net in nets] == ["collectors", "deposit 1", "deposit 2"]
    assert [net["sizes"]["kind_widths"] for net in nets] == [[6, 8, 4], [4, 8, 4], [4, 8, 4]]
    assert "simple_spread" not in spec
