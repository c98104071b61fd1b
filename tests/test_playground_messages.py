"""The playground's messages task (chapter 11's communicating actors under limited sight) against the package, in
headless Chromium with the network off:

- sight: which entities an agent sees and the zeroed observation, against attnmarl.envs.sight, near the radius too;
- the communicating actor (targeted, averaged and no messages; one round and two): logits, alpha over the senders
  and alpha over each agent's tokens, against torch;
- whole episodes' actions against Python rollouts, and the page's scores against the shipped mpe2 scores;
- the widget as a reader uses it: the focused agent's sight disc, what it does not see faded, the lines and cells
  of whom it hears, each checked against the Python reference.
"""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
from browser import argmax_rollout, page_episode_returns, playground_page, spread_observations

from attnmarl.checkpoints import load_agent_at, shipped_checkpoint, shipped_runs
from attnmarl.envs.sight import NARROW_SIGHT_RHO, apply_sight, visibility
from attnmarl.envs.spread import BatchedSpread
from attnmarl.nets.messages import CommActor
from attnmarl.notebook.playground import COMM_ACTORS, comm_actor_weights, export_comm_actor, playground_html

TOL = 1e-5
"""The parity the page must hold, as in tests/test_playground.py (DESIGN §4)."""

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny networks: conftest.py


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """One offline Chromium page: the playground with the messages task alone, as chapter 11 embeds it."""
    markup = playground_html(m=6, seed=3, tasks=("messages",))
    assert len(markup.encode()) <= 300_000  # page weight: three actors' weights included
    with playground_page(tmp_path_factory.mktemp("messages"), markup) as page:
        yield page


def _actor(policy: str, m: int) -> CommActor:
    folder, name, seed = COMM_ACTORS[policy]
    return load_agent_at(shipped_checkpoint(folder, name, seed), N=m)[0].actor


_JS_SIGHT = """args => args.obs.map(o => {
  const r = attnmarlPlayground.sightTokens(Float64Array.from(o), args.m, args.rho);
  return {mask: r.mask, features: r.tokens.features.map(f => Array.from(f))};
})"""


@pytest.mark.parametrize("m", [3, 6, 16])
def test_sight_sees_and_zeroes_what_the_package_does_near_the_radius_too(page, m):
    o = spread_observations(m, seed=200 + m)[::4].reshape(-1, 6 * m)
    offsets = o[:, 4:4 + 2 * (2 * m - 1)].reshape(len(o), -1, 2)  # half of them moved to within 1e-6 of rho
    rng = np.random.default_rng(m)
    near = rng.random(offsets.shape[:2]) < 0.5
    scale = (NARROW_SIGHT_RHO + rng.uniform(-1e-6, 1e-6, offsets.shape[:2])) / np.linalg.norm(offsets, axis=-1)
    offsets[near] *= scale[near][:, None]
    o[:, 4:4 + 2 * (2 * m - 1)] = offsets.reshape(len(o), -1)
    o = o.astype(np.float32)
    js = page.evaluate(_JS_SIGHT, {"m": m, "obs": o.astype(np.float64).tolist(), "rho": NARROW_SIGHT_RHO})
    seen = visibility(o, NARROW_SIGHT_RHO)
    sighted, _ = apply_sight(o, NARROW_SIGHT_RHO)
    others, channels = 4 + 2 * m, 4 + 2 * m + 2 * (m - 1)
    for b, row in enumerate(js):
        assert row["mask"] == [True] + seen[b].tolist()
        s = sighted[b]
        expected = [s[:4]] + [s[4 + 2 * k:6 + 2 * k] for k in range(m)] + [
            np.r_[s[others + 2 * j:others + 2 * j + 2], s[channels + 2 * j:channels + 2 * j + 2]] for j in range(m - 1)]
        assert all(np.array_equal(np.float32(f), e) for f, e in zip(row["features"], expected))
    assert 0.1 < seen[near.astype(bool)].mean() < 0.9  # the boundary cases fell on both sides


_JS_COMM = """args => args.obs.map(team => {
  const r = attnmarlPlayground.commForward(args.W || MW.comm[args.policy], team.map(o => Float64Array.from(o)));
  const plain = (rows) => rows.map((x) => Array.from(x));
  return {logits: plain(r.logits), alpha: plain(r.alpha), messages: r.messages.map(plain)};
})"""


def _torch_double(actor: CommActor, o: torch.Tensor):
    """Logits, alpha over the senders (batch, rounds, m, m) and over each agent's tokens (batch, m, l, n), in
    float64 on the float32 weights (how the page computes)."""
    double = copy.deepcopy(actor).double()
    o = o.double()
    with torch.no_grad():
        y, messages = double.outputs_and_alpha(o)
        _, alpha = double.nets[0](double.tokens(o)[0], double.masks(o)[0])
    return y.numpy(), messages.numpy(), alpha.numpy()


def _compare(js, y, messages, alpha):
    js_y = np.array([team["logits"] for team in js])
    js_messages = np.array([team["messages"] for team in js])
    js_alpha = np.array([team["alpha"] for team in js]).reshape(alpha.shape)
    return (np.abs(js_y - y).max(), np.abs(js_messages - messages).max(), np.abs(js_alpha - alpha).max(),
            js_messages)


@pytest.mark.parametrize("m", [3, 6, 16])
@pytest.mark.parametrize("policy", list(COMM_ACTORS))
def test_communicating_actor_logits_and_both_alphas_match_torch(page, policy, m):
    actor = _actor(policy, m)
    o = torch.from_numpy(spread_observations(m, seed=200 + m)[::6])
    y, messages, alpha = _torch_double(actor, o)
    js = page.evaluate(_JS_COMM, {"obs": o.tolist(), "policy": policy})
    dy, dm, da, js_messages = _compare(js, y, messages, alpha)
    print(f"{policy}, m = {m}: logits within {dy:.1e}, alpha over senders {dm:.1e}, over tokens {da:.1e}")
    assert dy <= TOL and dm <= TOL and da <= TOL
    assert np.abs(y).max() > 0.1  # trained logits
    uniform = {"attention": None, "mean": 1 / m, "none": 0.0}[policy]
    if uniform is None:
        assert np.abs(js_messages - 1 / m).max() > 0.05  # the targeted actor chooses whom to hear
    else:
        assert np.all(js_messages == uniform)


def test_two_rounds_match_torch(page):
    """TarMAC's second round (h^i <- tanh(W_u [h^i; c^i] + b_u), then the messages again), on an untrained
    two-round actor packed as the page reads it, uncompressed."""
    m = 6
    torch.manual_seed(0)
    actor = CommActor("simple_spread", {"N": m}, m, 6 * m, 5, NARROW_SIGHT_RHO, rounds=2).eval()
    W = comm_actor_weights(actor, m)
    assert W["sizes"]["rounds"] == 2 and any(name == "W_u" for name, _ in W["tensors"])
    weights = page.evaluate("spec => attnmarlPlayground.decodeWeights(spec)", W)
    o = torch.from_numpy(spread_observations(m, episodes=1, seed=200 + m)[::5])
    y, messages, alpha = _torch_double(actor, o)
    js = page.evaluate(_JS_COMM, {"obs": o.tolist(), "W": weights})
    dy, dm, da, _ = _compare(js, y, messages, alpha)
    assert dy <= TOL and dm <= TOL and da <= TOL
    assert messages.shape[1] == 2 and np.abs(messages[:, 0] - messages[:, 1]).max() > 1e-4


def test_only_a_communicating_actor_under_sight_is_exported():
    with pytest.raises(ValueError, match="holds a 'entity' actor"):
        export_comm_actor(shipped_checkpoint("comm", "sight-narrow-spread6-entity"))
    full_sight = CommActor("simple_spread", {"N": 3}, 3, 18, 5, None)
    with pytest.raises(ValueError, match="under a sight radius"):
        comm_actor_weights(full_sight, 3)
    with pytest.raises(ValueError, match="not a communicating actor"):
        comm_actor_weights(torch.nn.Linear(2, 2), 3)


_JS_SEEDED_ROLLOUT = """args => {
  const {World, numpyRandom, teamActions} = attnmarlPlayground;
  const w = new World(MSPEC.world, args.m);
  w.reset(numpyRandom(args.seed));
  const actions = [];
  for (let t = 0; t < MSPEC.world.max_cycles; t++) {
    const a = teamActions(args.policy, w, MW, null).actions;
    actions.push(Array.from(a)); w.step(a);
  }
  return actions;
}"""


@pytest.mark.parametrize(("policy", "m"), [("attention", 3), ("attention", 6), ("attention", 16), ("mean", 6),
                                           ("none", 6)])
def test_page_episodes_take_the_python_rollouts_actions(page, policy, m):
    actor = _actor(policy, m)
    for seed in (1, 2):
        python = argmax_rollout(actor, BatchedSpread(1, seed=seed, N=m))
        js = np.array(page.evaluate(_JS_SEEDED_ROLLOUT, {"m": m, "seed": seed, "policy": policy}))
        assert js.shape == python.shape == (25, m)
        assert np.array_equal(js, python), f"seed {seed}: first differing step {np.argmax((js != python).any(1))}"
        assert len(np.unique(python)) > 1


def test_page_teams_score_what_the_shipped_checkpoints_score_on_mpe2(page):
    """48 of the page's episodes at m = 6 (the port's starts for seeds 1000-1047): each team's mean return agrees
    with its checkpoint's shipped 200-episode mpe2 score within three standard errors of both."""
    finished = page_episode_returns(page, "attention")
    runs = {(r["name"], r["seed"]): r for r in shipped_runs("comm")}
    for policy, (_, name, seed) in COMM_ACTORS.items():
        returns, run = np.array(finished[policy]), runs[(name, seed)]
        sem = returns.std(ddof=1) / np.sqrt(len(returns))
        gap = abs(returns.mean() - run["final_return"])
        assert gap <= 3 * np.hypot(sem, run["final_sem"]), (policy, returns.mean(), run["final_return"])


# ---- the widget, as a reader uses it ---------------------------------------------------------------

_JS_STATE = """() => {
  const pg = document.querySelector('.attnmarl-playground').playground, w = pg.worlds[pg.policy];
  const sight = document.querySelector('.pg-sight');
  return {m: pg.m, focus: pg.focus, policy: pg.policy, lim: pg.lim, t: w.steps,
          pos: Array.from(w.pos), vel: Array.from(w.vel), landmarks: Array.from(w.landmarks),
          lead: {pos: Array.from(pg.worlds.attention.pos), vel: Array.from(pg.worlds.attention.vel),
                 landmarks: Array.from(pg.worlds.attention.landmarks)},
          sight: [sight.getAttribute('cx'), sight.getAttribute('cy'), sight.getAttribute('r')].map(Number),
          opacity: Object.fromEntries(Array.from(document.querySelectorAll('.pg-arena circle[data-name]'))
            .map(c => [c.dataset.name, Number(c.getAttribute('fill-opacity'))])),
          lines: Array.from(document.querySelectorAll('.pg-message')).map(l => ({
            j: Number(l.dataset.sender), shown: l.getAttribute('visibility') === 'visible',
            width: Number(l.getAttribute('stroke-width'))})),
          cells: Array.from(document.querySelectorAll('.pg-alpha rect[data-token]')).map(c => Number(c.dataset.value)),
          title: document.querySelector('.pg-alpha text').textContent};
}"""


def _python_view(state: dict) -> tuple[np.ndarray, np.ndarray]:
    """From the lead (targeted) team's world: the focused agent's alpha over the senders and what it sees."""
    m, i = state["m"], state["focus"]
    env = BatchedSpread(1, N=m)
    env.agent_pos[0] = np.reshape(state["lead"]["pos"], (m, 2))
    env.agent_vel[0] = np.reshape(state["lead"]["vel"], (m, 2))
    env.landmark_pos[0] = np.reshape(state["lead"]["landmarks"], (m, 2))
    obs = env.observe()
    with torch.no_grad():
        _, messages = _actor("attention", m).outputs_and_alpha(torch.from_numpy(obs))
    return messages[0, -1, i].numpy(), visibility(obs[0, i], NARROW_SIGHT_RHO)


def _check_view(page) -> dict:
    state = page.evaluate(_JS_STATE)
    m, i, lim = state["m"], state["focus"], state["lim"]
    alpha, seen = _python_view(state)
    assert np.abs(np.array(state["cells"]) - alpha).max() <= TOL  # the row of cells: alpha^{i.} (one round)
    px, py = state["lead"]["pos"][2 * i:2 * i + 2] if state["policy"] == "attention" else state["pos"][2 * i:2 * i + 2]
    size = 400
    assert state["sight"] == pytest.approx([(px + lim) / (2 * lim) * size, (lim - py) / (2 * lim) * size,
                                            NARROW_SIGHT_RHO / (2 * lim) * size], abs=1e-6)
    names = [f"L{k + 1}" for k in range(m)] + [f"a{j + 1}" for j in range(m) if j != i]
    if state["policy"] == "attention":  # the world drawn is the one alpha and sight were computed in
        faded = {name for name, s in zip(names, seen) if not s}
        assert {n for n, o in state["opacity"].items() if o < 0.5} == faded
        lines = {line["j"]: line for line in state["lines"]}
        assert sorted(lines) == [j for j in range(m) if j != i]
        for j, line in lines.items():
            assert line["shown"] == (alpha[j] >= 0.02)
            if line["shown"]:
                assert line["width"] == pytest.approx(1 + 8 * alpha[j], abs=8 * TOL)
    else:
        assert not state["lines"] and "(in the targeted team's world)" in state["title"]
    return state


def test_widget_shows_whom_the_focused_agent_sees_and_hears(page):
    page.evaluate("() => { const pg = document.querySelector('.attnmarl-playground').playground; pg.reset(5); }")
    assert page.locator(".pg-title").text_content().endswith("simple_spread, limited sight, messages, running in "
                                                            "this page")
    assert page.locator('[data-act="unhide"]').is_hidden()
    rows = page.locator(".pg-returns tr[data-policy]")
    assert [rows.nth(k).get_attribute("data-policy") for k in range(rows.count())] == list(COMM_ACTORS)
    first = _check_view(page)
    assert first["focus"] == 0
    page.locator('.pg-arena circle[data-name="a3"]').click()  # focus another agent
    assert _check_view(page)["focus"] == 2
    for _ in range(3):
        page.locator('.attnmarl-playground [data-act="step"]').click()
        after = _check_view(page)
    assert after["t"] == 3
    page.locator('.attnmarl-playground [data-act="policy"]').select_option("mean")
    _check_view(page)
    page.locator('.attnmarl-playground [data-act="policy"]').select_option("attention")
    page.evaluate("() => document.querySelector('.attnmarl-playground').playground.setM(9, 4)")
    state = _check_view(page)
    assert state["m"] == 9 and "zero-shot" in page.locator(".pg-note").text_content()
