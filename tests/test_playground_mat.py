"""The playground's sequence task (chapter 13's Multi-Agent Transformer on simple_spread) against the package, in
headless Chromium with the network off:

- erf, which the page writes itself for torch's exact GELU, against Python's ``math.erf``;
- MAT's logits, actions and its token layer's alpha against torch (``MultiAgentTransformer.decode`` with argmax) at
  the trained m and zero-shot, with and without tokens hidden from the agents;
- whole episodes' actions against Python rollouts (``MATAgent.act``, deterministic), step for step;
- the widget as a reader uses it: the three teams, the note on centralized execution, the panel's alpha, m up to 16;
- on the Python side: the export (every weight, refusals) and the page's weight.
The world itself is held to the port by tests/test_playground.py: the sequence task steps the same ``World``.
"""
from __future__ import annotations

import copy
import math
from functools import cache

import numpy as np
import pytest
import torch
from browser import playground_page, spread_observations

from attnmarl.checkpoints import load_agent_at, shipped_checkpoint
from attnmarl.envs.spread import BatchedSpread
from attnmarl.notebook.playground import (
    MAT_ACTOR,
    POLICIES,
    SEQUENCE_ENTITY,
    export_entity_actor,
    export_mat_actor,
    mat_actor_weights,
    playground_html,
)

TOL = 1e-5
"""The parity the page must hold: logits and alpha to 1e-5 (DESIGN §4)."""

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny networks: conftest.py


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    """The playground on the sequence task alone (m = 3, seed 3), MAT shown; its twins' inputs are the globals QSPEC
    and QW (browser.playground_page)."""
    markup = playground_html(m=3, seed=3, tasks=("sequence",))
    assert len(markup.encode()) <= 400_000  # page weight: MAT's and the entity actor's weights, the script
    with playground_page(tmp_path_factory.mktemp("sequence"), markup) as page:
        yield page


@cache
def _agent(m: int):
    folder, name, seed = MAT_ACTOR
    return load_agent_at(shipped_checkpoint(folder, name, seed), N=m)[0]


def test_page_erf_and_gelu_are_pythons_and_torchs(page):
    """erf: the series and the continued fraction meet at |x| = 3; both hold to 1e-13 (the series loses a few digits
    to cancellation near 3). GELU, x (1 + erf(x / sqrt 2)) / 2, as torch's exact one in float64, tails included."""
    xs = np.concatenate([np.linspace(-7, 7, 561), [0.0, 1e-9, -2.999999, 3.0, 3.000001, 30.0, -30.0]])
    js = page.evaluate("xs => xs.map(attnmarlPlayground.erf)", xs.tolist())
    assert max(abs(a - math.erf(x)) for a, x in zip(js, xs)) <= 1e-13
    x = np.concatenate([xs, np.linspace(-12, 12, 97)])
    js = np.array(page.evaluate("xs => xs.map(attnmarlPlayground.gelu)", x.tolist()))
    assert np.abs(js - torch.nn.functional.gelu(torch.from_numpy(x)).numpy()).max() <= 1e-13


_JS_MAT = """args => args.obs.map((team, b) => {
  const r = attnmarlPlayground.matForward(QW.mat, team.map((o) => Float64Array.from(o)), args.masks && args.masks[b]);
  return {actions: r.actions, logits: r.logits.map((y) => Array.from(y)), alpha: r.alpha.map((a) => Array.from(a))};
})"""


class _Given(torch.nn.Module):
    """Agent tokens computed beforehand (with tokens hidden from the agents), in place of the token layer."""

    def __init__(self, x: torch.Tensor) -> None:
        super().__init__()
        self.x = x

    def forward(self, o: torch.Tensor) -> torch.Tensor:
        return self.x


def _torch_mat(net, o: torch.Tensor, mask: torch.Tensor | None):
    """MAT on the page's terms, in float64 on the float32 weights: the token layer (with ``mask``, True = shown) and
    its alpha, then ``decode`` with argmax. Returns actions (batch, m), logits (batch, m, 5), alpha."""
    net = copy.deepcopy(net).double()
    with torch.no_grad():
        tokens = net.tokens.tokens(o.double())[0]
        x, alpha = net.tokens.nets[0](tokens, mask)
        if mask is None:
            assert torch.allclose(x, net.tokens(o.double()))  # the token layer is the encoder of the tokens
        net.tokens = _Given(x)
        actions, logits = net.decode(o.double(), lambda y: y.argmax(-1))
    return actions, logits, alpha


def _page_mat(page, o: torch.Tensor, mask: torch.Tensor | None):
    js = page.evaluate(_JS_MAT, {"obs": o.tolist(), "masks": None if mask is None else mask.tolist()})
    alpha = np.array([team["alpha"] for team in js])
    return (np.array([team["actions"] for team in js]), np.array([team["logits"] for team in js]),
            alpha.reshape(alpha.shape[0], alpha.shape[1], -1))


@pytest.mark.parametrize("m", [3, 6, 16])
def test_mat_logits_actions_and_alpha_match_torch(page, m):
    """Every agent's logits (each decoded after the actions the earlier agents chose), the argmax actions and the
    token layer's alpha, on observations of random-action episodes, at the trained m and zero-shot."""
    net = _agent(m).net
    o = torch.from_numpy(spread_observations(m, seed=200 + m)[::5])
    actions, logits, alpha = _torch_mat(net, o, None)
    js_actions, js_logits, js_alpha = _page_mat(page, o, None)
    dy, da = np.abs(js_logits - logits.numpy()).max(), np.abs(js_alpha - alpha.flatten(2).numpy()).max()
    print(f"m = {m}: MAT's logits within {dy:.1e}, its token layer's alpha within {da:.1e} of torch ({len(o)} teams)")
    assert dy <= TOL and da <= TOL
    assert np.array_equal(js_actions, actions.numpy())
    assert np.abs(logits.numpy()).max() > 0.1  # trained logits, not the near-zero initial ones


def test_mat_with_hidden_tokens_matches_torch(page):
    """Tokens hidden from each agent (as the widget hides a clicked cell's) reach MAT's token layer as a key mask:
    alpha 0 on them, and the logits of the whole decode those torch gives with the same mask."""
    m = 5
    net = _agent(m).net
    o = torch.from_numpy(spread_observations(m, episodes=1, seed=7)[::4])
    n = net.tokens.tokens(o)[0].shape[2]
    mask = torch.from_numpy(np.random.default_rng(1).random((len(o), m, n)) > 0.4)
    mask[..., 0] = True  # an agent always sees itself
    actions, logits, alpha = _torch_mat(net, o, mask)
    js_actions, js_logits, js_alpha = _page_mat(page, o, mask)
    assert np.abs(js_logits - logits.numpy()).max() <= TOL
    assert np.abs(js_alpha - alpha.flatten(2).numpy()).max() <= TOL and np.array_equal(js_actions, actions.numpy())
    hidden = ~mask[:, :, None, :].expand(-1, -1, alpha.shape[2], -1).numpy()
    assert np.all(js_alpha.reshape(hidden.shape)[hidden] == 0)
    _, shown, _ = _torch_mat(net, o, None)
    assert np.abs(shown.numpy() - logits.numpy()).max() > 1e-3  # hiding tokens changes what the agents do


_JS_ROLLOUT = """args => {
  const w = new attnmarlPlayground.World(QSPEC.world, args.m);
  w.reset(attnmarlPlayground.numpyRandom(args.seed));
  const actions = [];
  for (let t = 0; t < QSPEC.world.max_cycles; t++) {
    const a = attnmarlPlayground.teamActions(args.policy, w, QW, null).actions;
    actions.push(Array.from(a)); w.step(a);
  }
  return actions;
}"""


@pytest.mark.parametrize("m", [3, 8])
def test_page_episodes_take_the_python_rollouts_actions(page, m):
    """For a fixed seed, the page's closed loop (its world, MAT decoding agent by agent, argmax) takes the actions
    of the Python episode (the port, MATAgent.act with deterministic=True) at every step."""
    agent = _agent(m)
    for seed in (1, 2):
        env = BatchedSpread(1, seed=seed, N=m)
        obs, python = env.observe(), []
        with torch.no_grad():
            for _ in range(env.max_cycles):
                a = agent.act(torch.from_numpy(obs), deterministic=True)[0].numpy()
                python.append(a[0])
                obs, *_ = env.step(a)
        python = np.array(python)
        js = np.array(page.evaluate(_JS_ROLLOUT, {"m": m, "seed": seed, "policy": "mat"}))
        assert js.shape == python.shape == (25, m)
        assert np.array_equal(js, python), f"seed {seed}: first differing step {np.argmax((js != python).any(1))}"
        assert len(np.unique(python)) > 1  # the agents move


_JS_WIDGET = """() => {
  const pg = document.querySelector('.attnmarl-playground').playground, root = pg.root;
  return {options: Array.from(root.querySelectorAll('[data-act="policy"] option')).map((o) => [o.value, o.disabled]),
          policy: pg.policy, note: root.querySelector('.pg-note').textContent, m: pg.m,
          title: root.querySelector('.pg-heatmap text').textContent,
          rows: Array.from(root.querySelectorAll('.pg-returns tr[data-policy]')).map((r) => r.dataset.policy),
          arrows: root.querySelectorAll('.pg-arrow').length, t: pg.worlds[pg.lead].steps,
          alpha: Array.from(pg.next.mat.alpha[pg.focus]), heads: pg.alphaHeads()};
}"""


def test_widget_plays_mat_beside_the_entity_actor_and_shows_mats_attention(page):
    """The sequence task as a reader meets it: MAT shown, the entity actor and the greedy assignment in the menu and
    the returns table, the note saying MAT acts on every agent's observation, the panel and the arrows showing the
    alpha of MAT's token layer (the numbers torch gives); stepping and m up to 16 work, the note turning zero-shot."""
    state = page.evaluate(_JS_WIDGET)
    assert [p for p, _ in state["options"]] == list(POLICIES["sequence"]) and not any(d for _, d in state["options"])
    assert state["policy"] == "mat" and state["rows"] == list(POLICIES["sequence"]) and state["m"] == 3
    assert "every agent's observation" in state["note"] and "trained at m = 3" in state["note"]
    assert "zero-shot" not in state["note"] and state["title"].startswith("α of MAT's token layer for agent a1")
    n = 2 * 3  # a1's tokens: itself, 3 landmarks, 2 other agents
    assert state["arrows"] == state["heads"] * (n - 1)
    start = page.evaluate("""() => { const w = document.querySelector('.attnmarl-playground').playground.worlds.mat;
      return Array.from({length: w.m}, (_, i) => Array.from(w.observe(i))); }""")
    _, _, alpha = _torch_mat(_agent(3).net, torch.tensor([start]), None)
    assert np.abs(np.array(state["alpha"]) - alpha[0, 0].flatten().numpy()).max() <= TOL
    page.click('[data-act="step"]')
    assert page.evaluate(_JS_WIDGET)["t"] == state["t"] + 1
    page.evaluate("() => document.querySelector('.attnmarl-playground').playground.setM(16, 5)")
    state = page.evaluate(_JS_WIDGET)
    assert state["m"] == 16 and "at m = 16 the same weights play zero-shot" in state["note"]
    assert len(state["alpha"]) == state["heads"] * 2 * 16 and state["t"] == 0  # a new episode
    page.click('[data-act="step"]')
    assert page.evaluate(_JS_WIDGET)["t"] == 1
    page.evaluate("() => document.querySelector('.attnmarl-playground').playground.setM(3, 3)")


def test_export_holds_every_acting_weight_and_refuses_what_the_page_cannot_run(tmp_path):
    """The pack holds each tensor MAT acts with, once (and not the value head); MAT-Dec, a MAPPO checkpoint and a
    network whose layer norms differ are refused by name."""
    path = shipped_checkpoint(*MAT_ACTOR[:2], seed=MAT_ACTOR[2])
    spec = export_mat_actor(path)
    net = _agent(3).net
    acting = sum(p.numel() for name, p in net.named_parameters() if not name.startswith("value_head"))
    assert sum(count for _, count in spec["tensors"]) == acting
    assert spec["sizes"]["trained_m"] == 3 and spec["sizes"]["blocks"] == len(net.encoder)
    with pytest.raises(ValueError, match="not a discrete-action simple_spread MAT"):
        export_mat_actor(shipped_checkpoint(*SEQUENCE_ENTITY[:2], seed=SEQUENCE_ENTITY[2]))
    with pytest.raises(ValueError, match="MAT-Dec"):
        export_mat_actor(shipped_checkpoint("mat", "matdec-spread3", seed=0))
    odd = copy.deepcopy(net)
    odd.decoder[0].ln_ff.eps = 1e-3
    with pytest.raises(ValueError, match="different eps"):
        mat_actor_weights(odd, 3)
    assert export_entity_actor(shipped_checkpoint(*SEQUENCE_ENTITY[:2], seed=SEQUENCE_ENTITY[2]))["sizes"][
        "trained_m"] == 3  # the entity actor beside it was trained at MAT's m
