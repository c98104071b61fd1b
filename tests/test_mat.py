"""The Multi-Agent Transformer (chapter 13): the decoder's causal structure, teacher forcing against decoding agent
by agent, MAT's reversed decoder-encoder attention, one set of weights at every m, the encoder's equivariance and
the decoder's order dependence, MAT-Dec's decentralized actors, a short run that learns, its checkpoint on mpe2,
and clear errors for bad input."""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from attnmarl import load_policy
from attnmarl.algos.mat import MATConfig, make_agent, order_scores, random_orders, train
from attnmarl.checkpoints import load_agent_at, save_checkpoint
from attnmarl.envs import evaluate, make_batched
from attnmarl.nets.mat import MATAttention

QUICK = MATConfig(num_envs=64, total_steps=64 * 25 * 30, lr=2e-3, clip_coef=0.2, update_epochs=4, ent_coef=0.003)
"""A quick budget for the tests: 30 updates of 1,600 env steps (about 20 CPU-seconds), with a larger step size and
clip and fewer epochs than MAT's recipe (lr 5e-4, eps 0.05, 10 epochs), which learns the same way over a longer
run. Seed 0 goes from about -26.5 (the first 3 updates) to -20.2 (the last 5)."""


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Every test here on one torch thread, as the command line trains."""


def agent_at(m: int, variant: str = "mat", seed: int = 0):
    torch.manual_seed(seed)
    return make_agent(replace(MATConfig(), scenario_kwargs={"N": m}, variant=variant))


def observations(m: int, batch: int = 8, seed: int = 0) -> torch.Tensor:
    """Real simple_spread observations of m agents from the batched port: (batch, m, 6m)."""
    return torch.from_numpy(make_batched("simple_spread", batch, seed=seed, N=m).reset())


def sample_with(generator: torch.Generator):
    return lambda logits: torch.distributions.Categorical(logits=logits).sample()


@pytest.mark.parametrize("cache", [True, False])
@pytest.mark.parametrize("m", [3, 6, 12])
def test_teacher_forced_logits_equal_those_decoded_agent_by_agent(m, cache):
    net = agent_at(m).net
    net.cache = cache
    o = observations(m)
    order = random_orders(o.shape[0], m, torch.Generator().manual_seed(1))
    for given in (None, order):
        with torch.no_grad():
            a, decoded = net.decode(o, sample_with(torch.Generator()), given)
            forced, _ = net.logits(o, a, given)
        torch.testing.assert_close(forced, decoded, rtol=0, atol=1e-5)
        log_pi = torch.log_softmax(forced, -1).gather(-1, a[..., None])
        torch.testing.assert_close(log_pi, torch.log_softmax(decoded, -1).gather(-1, a[..., None]), rtol=0, atol=1e-5)


@pytest.mark.parametrize("m", [2, 6, 12])
def test_agent_i_logits_do_not_depend_on_later_agents_actions(m):
    """The causal mask is built for the m at hand: at every m, agent i's logits read a^1 .. a^(i-1) and no later
    action, and every later agent reads a^i."""
    net = agent_at(m).net
    o, a = observations(m), torch.randint(0, 5, (8, m), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        y, _ = net.logits(o, a)
        for j in range(m):
            changed = a.clone()
            changed[:, j] = (a[:, j] + 1) % 5
            y_changed, _ = net.logits(o, changed)
            torch.testing.assert_close(y_changed[:, :j + 1], y[:, :j + 1], rtol=0, atol=0)  # agents 1..j: unchanged
            if j + 1 < m:
                assert (y_changed[:, j + 1:] - y[:, j + 1:]).abs().max() > 1e-4  # later agents read a^j


def test_the_decoder_encoder_attention_takes_its_query_from_the_encoder():
    net = agent_at(4).net
    o, a = observations(4), torch.zeros(8, 4, dtype=torch.long)
    seen = {}
    block = net.decoder[0]
    block.cross_attn.register_forward_hook(lambda module, inputs, output: seen.update(inputs=inputs, output=output))
    with torch.no_grad():
        _, o_hat, _ = net.encode(o)
        net.logits(o, a)
    query, keys_values = seen["inputs"]
    torch.testing.assert_close(query, o_hat)  # the query is o_hat, the encoder's representation (batch, m, d)
    assert keys_values.shape == query.shape == seen["output"].shape == (8, 4, 32)
    assert not torch.allclose(keys_values, o_hat)  # keys and values: the decoder's action stream
    attention = MATAttention(32, 2)  # as many outputs as queries, whatever the number of keys
    assert attention(torch.randn(2, 1, 32), torch.randn(2, 5, 32)).shape == (2, 1, 32)


def test_one_set_of_weights_acts_at_every_m():
    trained_at_3 = agent_at(3)
    for m in (3, 6, 12):
        agent = agent_at(m, seed=1)
        agent.load_state_dict(trained_at_3.state_dict())  # strict: no weight depends on m
        with torch.no_grad():
            a, log_pi = agent.act(observations(m, batch=4), torch.Generator().manual_seed(0))
            values = agent.v_hat(observations(m, batch=4))
        assert a.shape == log_pi.shape == values.shape == (4, m)
        assert torch.isfinite(log_pi).all() and torch.isfinite(values).all()


def test_permuting_agents_permutes_the_values_but_not_the_decoded_policy():
    m = 6
    net = agent_at(m).net
    o, a = observations(m), torch.randint(0, 5, (8, m), generator=torch.Generator().manual_seed(2))
    perm = torch.tensor([3, 0, 5, 1, 4, 2])
    with torch.no_grad():
        torch.testing.assert_close(net.values(o[:, perm]), net.values(o)[:, perm], rtol=0, atol=1e-5)
        y, _ = net.logits(o, a)
        y_perm, _ = net.logits(o[:, perm], a[:, perm])
        assert (y_perm - y[:, perm]).abs().max() > 1e-4  # the decoder's output depends on who decides first
        order = perm.expand(8, m)  # deciding in that order is permuting the team
        torch.testing.assert_close(net.logits(o, a, order)[0][:, perm], y_perm, rtol=0, atol=1e-5)


def test_mat_dec_acts_on_each_agents_own_observation():
    m = 4
    net = agent_at(m, "mat-dec").net
    o = observations(m)
    with torch.no_grad():
        a, decoded = net.decode(o, lambda logits: logits.argmax(-1))
        forced, _ = net.logits(o, a)
        changed = o.clone()
        changed[:, 1:] = observations(m, seed=5)[:, 1:]  # every other agent's observation
        other, _ = net.logits(changed, a)
    torch.testing.assert_close(forced, decoded, rtol=0, atol=1e-6)
    torch.testing.assert_close(other[:, 0], forced[:, 0], rtol=0, atol=1e-6)
    assert agent_at(m, "mat-dec").net.decoder is None


def test_a_shuffled_rollout_trains_in_the_order_it_acted(monkeypatch):
    """With lr = 0 the policy does not move, so every ratio pi / pi_old must be 1 when the update reads each
    env-step's actions in the decision order they were sampled in; a mixed-up order gives ratios != 1 once the
    policy depends on the earlier agents' actions (the policy head is scaled up for that: at initialisation pi is
    nearly uniform)."""
    from attnmarl.algos import mat

    def sharp(config, spec=None):
        agent = make_agent(config, spec)
        with torch.no_grad():
            agent.net.policy_head[-1].weight.mul_(500.0)
        return agent

    monkeypatch.setattr(mat, "make_agent", sharp)
    config = replace(MATConfig(), num_envs=8, total_steps=8 * 25, lr=0.0, shuffle_order=True, update_epochs=1)
    history = []
    train(config, lambda stats, _: history.append(stats))
    assert history[0]["entropy"] < 1.4  # far from uniform (log 5 = 1.61)
    assert abs(history[0]["approx_kl"]) < 1e-6 and history[0]["clip_frac"] == 0.0


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """The quick MAT run on simple_spread m = 3, its statistics and its checkpoint."""
    torch.set_num_threads(1)
    history = []
    agent = train(QUICK, lambda stats, _: history.append(stats))
    path = tmp_path_factory.mktemp("mat") / "mat-spread3.pt"
    save_checkpoint(path, agent, QUICK, note="test")
    return history, path


def test_a_short_run_learns(trained):
    history, _ = trained
    returns = [s["train_return"] for s in history]
    explained = [s["explained_variance"] for s in history]
    assert max(explained) > 0.3  # from about 0 at the start
    assert np.mean(returns[-5:]) > np.mean(returns[:3]) + 3.0


def test_its_checkpoint_plays_mpe2_at_its_m_and_others(trained):
    _, path = trained
    for m in (3, 5):
        score, _ = evaluate(load_policy(path, N=m), "simple_spread", episodes=2, N=m)
        assert np.isfinite(score)
    scores = order_scores(path, orders=2, episodes=2)
    assert len(scores["orders"]) == len(scores["scores"]) == 2 and np.isfinite(scores["agent_order"])
    agent, config = load_agent_at(path, N=6)  # every weight, the critic's too, at another m
    assert config.scenario_kwargs["N"] == 6 and agent.v_hat(observations(6, batch=2)).shape == (2, 6)


def test_bad_input_gets_a_clear_error(tmp_path):
    agent = agent_at(3)
    o = observations(3, batch=2)
    with pytest.raises(ValueError, match=r"shape \(batch, m, obs_dim\)"):
        agent.act(o[:, :2])
    with pytest.raises(ValueError, match="a must hold action"):
        agent.evaluate_actions(o, torch.full((2, 3), 5))
    with pytest.raises(ValueError, match="permutation"):
        agent.act(o, order=torch.tensor([[0, 0, 1], [0, 1, 2]]))
    with pytest.raises(ValueError, match="order must have shape"):
        agent.act(o, order=torch.tensor([0, 1, 2]))
    with pytest.raises(ValueError, match="variant"):
        MATConfig(variant="gpt")
    with pytest.raises(ValueError, match="continuous_actions"):
        MATConfig(scenario_kwargs={"N": 3, "continuous_actions": True})
    with pytest.raises(ValueError, match="cooperative"):
        MATConfig(scenario="simple_tag", scenario_kwargs={})
    with pytest.raises(ValueError, match="multiple of heads"):
        MATConfig(d=30, heads=4)
    save_checkpoint(tmp_path / "mat.pt", agent, replace(MATConfig(), scenario_kwargs={"N": 3}))
    with pytest.raises(ValueError, match="a team of one has no other agent"):
        load_policy(tmp_path / "mat.pt", N=1)


# --------------------------------------------------------------------------------------------
# reading a trained team: alpha, the influence of earlier actions, the explorer (chapter 13, section "what the
# attention does")
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("causal", [False, True])
def test_alpha_is_the_weights_attention_uses(causal):
    torch.manual_seed(0)
    attn, x_q, x_kv = MATAttention(32, 2), torch.randn(3, 5, 32), torch.randn(3, 5, 32)
    alpha = attn.alpha(x_q, x_kv, causal)
    _, v = attn.keys_values(x_kv)
    assert alpha.shape == (3, 2, 5, 5) and torch.allclose(alpha.sum(-1), torch.ones(3, 2, 5))
    assert torch.allclose(attn.W_o((alpha @ v).transpose(1, 2).flatten(2)), attn(x_q, x_kv, causal), atol=1e-6)
    assert (alpha.triu(1) == 0).all() == causal


def test_an_agents_policy_moves_only_with_earlier_actions_as_a_loop_measures_it():
    """action_influence: 0 for k >= i (the causal decoder), > 0 for every earlier agent; each entry the mean total
    variation over k's other actions, as an explicit loop computes it; MAT-Dec's agents read no action."""
    from attnmarl.analysis import action_influence

    m, o = 4, observations(4, batch=3)
    net = agent_at(m).net
    a = torch.randint(0, 5, (3, m), generator=torch.Generator().manual_seed(1))
    influence = action_influence(net, o, a)
    assert influence.shape == (3, m, m)
    later = torch.ones(m, m, dtype=torch.bool).triu()
    assert (influence[:, later].abs() < 1e-6).all() and (influence[:, ~later] > 1e-7).all()
    b, i, k = 2, 3, 1
    with torch.no_grad():
        p = net.logits(o, a)[0].softmax(-1)[b, i]
        tv = []
        for other in range(5):
            if other != a[b, k]:
                changed = a.clone()
                changed[b, k] = other
                tv.append(0.5 * (net.logits(o, changed)[0].softmax(-1)[b, i] - p).abs().sum())
    assert influence[b, i, k] == pytest.approx(float(torch.stack(tv).mean()), abs=1e-7)
    assert (action_influence(agent_at(m, "mat-dec").net, o, a).abs() < 1e-6).all()  # float noise only
    with pytest.raises(ValueError, match="reads a MultiAgentTransformer"):
        action_influence(agent_at(m).actor, o, a)
    with pytest.raises(ValueError, match=r"a must have shape \(3, 4\)"):
        action_influence(net, o, a[:, :3])


def test_the_nearest_landmark_is_the_worlds():
    from attnmarl.analysis import nearest_landmarks
    from attnmarl.envs import make_reference, obs_to_array

    env = make_reference("simple_spread", N=5)
    for seed in range(3):
        obs, _ = env.reset(seed=seed)
        world = env.unwrapped.world
        agents = np.stack([a.state.p_pos for a in world.agents])
        landmarks = np.stack([lm.state.p_pos for lm in world.landmarks])
        expected = np.linalg.norm(agents[:, None] - landmarks[None], axis=-1).argmin(1)
        got = nearest_landmarks(torch.from_numpy(obs_to_array(env, obs))[None], 5)[0]
        assert got.tolist() == expected.tolist()
    with pytest.raises(ValueError, match=r"shape \(batch, 5, 30\)"):
        nearest_landmarks(torch.zeros(1, 4, 24), 5)


def test_every_earlier_pair_is_filed_once_under_same_or_other_landmark():
    from attnmarl.analysis import landmark_influence

    m, episodes = 3, 4
    read = landmark_influence(agent_at(m).net, m, episodes=episodes)
    steps = episodes * 25
    assert read["pairs"]["same"] + read["pairs"]["other"] == steps * m * (m - 1) // 2
    by_pair = read["by_pair"]
    assert by_pair.shape == (m, m) and (np.triu(by_pair) < 1e-6).all()
    filed = read["same"] * read["pairs"]["same"] + read["other"] * read["pairs"]["other"]
    assert filed == pytest.approx(by_pair.sum() * steps, rel=1e-4)


def test_the_explorer_rings_the_earlier_agents_by_their_influence():
    """mat_frame: the influence heatmap is action_influence at the team's greedy actions, the arena rings agents
    1..i-1 in proportion to row i and no other agent, the encoder's alpha rows sum to 1; MAT-Dec is refused."""
    from attnmarl.analysis import action_influence
    from attnmarl.notebook.explorers.mat import NO_INFLUENCE, mat_episode, mat_explorer, mat_frame

    config = replace(MATConfig(), scenario_kwargs={"N": 4})
    agent = agent_at(4)
    episode = mat_episode(agent, config, seed=0)
    frame = mat_frame(agent.net, episode, t=6, i=2)
    arena, heat, enc = frame.panels
    o = torch.as_tensor(episode.obs[6][None], dtype=torch.float32)
    a = agent.net.decode(o, lambda logits: logits.argmax(-1))[0]
    influence = action_influence(agent.net, o, a)[0].numpy()
    assert np.allclose(heat.values, influence, atol=1e-6)
    later = np.triu(np.ones((4, 4), bool))  # k >= i: drawn masked, and causally nothing there
    assert np.array_equal(heat.masked, later) and influence[later].max() < 1e-6
    scale = influence.max()
    assert np.allclose(arena.emphasis[:2], influence[2, :2] / scale, atol=1e-5) and not any(arena.emphasis[2:])
    assert arena.focus == 2 and np.allclose(enc.values.sum(1), 1.0, atol=1e-5)
    assert "a3 decides after a1…a2" in frame.caption
    moved = influence[2, :2].max() >= NO_INFLUENCE  # the caption names the strongest earlier action if it counts
    assert ("moves most with" in frame.caption) == moved and ("no earlier action moves" in frame.caption) != moved
    explorer = mat_explorer(agent.net, episode)
    assert explorer.update(t=12, agent="a1")["caption"].startswith("a1 ")
    assert [c.values for c in explorer.controls if c.name == "agent"] == [["a1", "a2", "a3", "a4"]]
    with pytest.raises(ValueError, match="MAT-Dec has none"):
        mat_frame(agent_at(4, "mat-dec").net, episode)
    # one scale for every frame the explorer offers: the largest influence over its steps
    explorer = mat_explorer(agent.net, episode, steps=(0, 6))
    vmax = max(float(mat_frame(agent.net, episode, t, 0).panels[1].values.max()) for t in (0, 6))
    fixed = explorer.frame_fn(t=6, agent="a3")
    assert fixed.panels[1].vmax == pytest.approx(vmax) and vmax >= scale
    assert np.allclose(fixed.panels[0].emphasis[:2], np.clip(influence[2, :2] / vmax, 0, 1), atol=1e-5)
    for bad in (0.0, -1.0, float("nan"), float("inf"), "0.1", True):
        with pytest.raises(ValueError, match=r"vmax \(a total variation\) must be a (finite|real) number"):
            mat_frame(agent.net, episode, t=6, i=2, vmax=bad)


def test_every_point_of_chapter_13_names_a_config_and_reads_its_runs(tmp_path, monkeypatch):
    """mat_name: a config for every (m, design), chapter 10's entity actor for "entity"; mat_runs in seed order from
    assets/mat (the entity actor's from chapter 10's folders), naming the command where none has shipped;
    mat_shares on simple_spread's random → greedy range."""
    import json

    import attnmarl.checkpoints
    from attnmarl.notebook.explorers.mat import MAT_DESIGNS, MAT_MS, mat_name, mat_runs, mat_shares
    from attnmarl.notebook.explorers.scale import zero_shot_results
    from attnmarl.train import CONFIGS

    for m in MAT_MS:
        for design in (*MAT_DESIGNS, "entity"):
            assert mat_name(m, design) in CONFIGS
    assert mat_name(6, "entity") == "pi-spread6-entity" and mat_name(12, "shuffled") == "mat-spread12-shuffled"
    for m, design in ((4, "mat"), (3, "gpt"), ("3", "mat")):
        with pytest.raises(ValueError):
            mat_name(m, design)
    entity = mat_runs(3, "entity")  # shipped with chapter 10, before the folder is replaced below
    assert [r["seed"] for r in entity] == sorted(r["seed"] for r in entity) and len(entity) >= 3
    random, greedy = (zero_shot_results()["baselines"][3][k][0] for k in ("random", "greedy"))
    baselines = zero_shot_results()
    monkeypatch.setattr(attnmarl.checkpoints, "ASSETS", tmp_path)
    monkeypatch.setattr("attnmarl.notebook.explorers.mat.zero_shot_results", lambda: baselines)
    (tmp_path / "mat").mkdir()
    with pytest.raises(ValueError, match="python -m attnmarl.train --config matdec-spread6 --seeds 0-2"):
        mat_runs(6, "matdec")
    runs = [{"name": "mat-spread3", "seed": s, "final_return": r, "curve": "", "checkpoint": ""}
            for s, r in ((1, greedy), (0, random))]
    (tmp_path / "mat" / "index.json").write_text(json.dumps(runs))
    assert [r["seed"] for r in mat_runs(3, "mat")] == [0, 1]
    assert mat_shares(3, "mat") == pytest.approx([0.0, 100.0])


def test_the_order_command_scores_each_checkpoint_in_the_orders_it_names(trained, tmp_path, monkeypatch, capsys):
    """python -m attnmarl.orders writes, per run and seed, the orders it drew and the score in each, the scores
    order_scores gives on the same episodes; MAT-Dec's scores are the same in every order (it decides alone), and a
    checkpoint that is not MAT's is refused before any evaluation, by name."""
    import json

    from attnmarl import orders

    _, path = trained
    assets = tmp_path / "assets"
    (assets / "mat").mkdir(parents=True)
    (assets / "mat" / "mat-spread3-seed0.pt").write_bytes(path.read_bytes())
    torch.manual_seed(1)
    dec = make_agent(replace(MATConfig(), variant="mat-dec"))
    save_checkpoint(assets / "mat" / "matdec-spread3-seed0.pt", dec, replace(MATConfig(), variant="mat-dec"))
    monkeypatch.setattr(orders, "ASSETS", assets)
    out = tmp_path / "orders.json"
    orders.main(["--run", "mat/mat-spread3", "--run", "mat/matdec-spread3", "--orders", "3", "--episodes", "3",
                 "--out", str(out)])
    written = json.loads(out.read_text())
    mat_row, dec_row = written["runs"]
    expected = order_scores(path, orders=3, episodes=3)
    assert mat_row["orders"] == expected["orders"] and len({tuple(o) for o in mat_row["orders"]}) > 1
    assert mat_row["scores"] == pytest.approx(expected["scores"], abs=1e-4)
    assert mat_row["agent_order"] == pytest.approx(expected["agent_order"], abs=1e-4)
    assert max(dec_row["scores"]) - min(dec_row["scores"]) < 1e-6 and dec_row["agent_order"] == dec_row["scores"][0]
    assert written["command"].startswith("python -m attnmarl.orders --run mat/mat-spread3")
    assert mat_row["m"] == 3 and all(sorted(o) == [0, 1, 2] for o in mat_row["orders"])
    orders.main(["--run", "mat/mat-spread3", "--orders", "2", "--episodes", "2", "--m", "5",
                 "--out", str(tmp_path / "m5.json")])
    at_five = json.loads((tmp_path / "m5.json").read_text())["runs"][0]
    expected = order_scores(path, orders=2, episodes=2, N=5)  # the m = 3 weights, five agents
    assert at_five["m"] == 5 and at_five["orders"] == expected["orders"]
    assert at_five["scores"] == pytest.approx(expected["scores"], abs=1e-4)

    monkeypatch.undo()  # the shipped checkpoints again
    with pytest.raises(SystemExit):
        orders.main(["--run", "policy/pi-spread6-entity", "--out", str(tmp_path / "refused.json")])
    assert "only MAT and MAT-Dec decide in an order" in capsys.readouterr().err
    assert not (tmp_path / "refused.json").exists()


def test_transfer_scores_a_mat_checkpoint_at_other_team_sizes(trained):
    """MAT's weights do not depend on m, so chapter 10's zero-shot command takes its checkpoints as it takes the
    entity actor's (it refuses actors whose weights do; test_transfer.py holds that side)."""
    from attnmarl.transfer import check_transferable, zero_shot_scores

    _, path = trained
    assert check_transferable(path, "simple_spread", [3, 5])[0] == path
    scores = zero_shot_scores(path, [5], 2, "simple_spread")
    assert set(scores) == {5} and np.isfinite(scores[5][0]) and scores[5][0] < 0


def test_where_there_are_few_orders_each_is_scored_once_and_agent_order_agrees(trained):
    """At m = 3 there are 3! = 6 orders: asked for 6 or more, order_scores scores each once (no repeats, as random
    draws would give), and the score of the identity order is the agent-order score (the same decoding)."""
    import itertools

    _, path = trained
    scores = order_scores(path, orders=6, episodes=2)
    assert scores["orders"] == [list(p) for p in itertools.permutations(range(3))]
    assert scores["scores"][0] == pytest.approx(scores["agent_order"], abs=1e-9)


# --------------------------------------------------------------------------------------------
# chapter 12's task: simple_spread with decoys
# --------------------------------------------------------------------------------------------

def decoy_observations(m: int, d: int, batch: int = 6, seed: int = 1) -> torch.Tensor:
    """Real observations of simple_spread with d decoys per agent from the batched port: (batch, m, obs_dim)."""
    return torch.from_numpy(make_batched("simple_spread_decoys", batch, seed=seed, N=m, decoys=d).reset())


def test_on_the_decoy_task_each_agents_landmarks_reach_mat_as_a_set_with_their_bit():
    """Each landmark slot of o^i, (dx, dy, is_target) in the agent's own shuffled order, is one token of MAT's token
    layer: reordering one agent's slots leaves every agent's decoded logits as they were (MAT reads no slot by its
    place), and turning one target's bit off changes them (MAT reads the bit)."""
    m, d = 4, 2
    slots = m + d * m
    torch.manual_seed(0)
    net = make_agent(MATConfig("simple_spread_decoys", {"N": m, "decoys": d})).net
    o = decoy_observations(m, d)
    shuffled, flipped = o.clone(), o.clone()
    landmarks = o[:, 1, 4:4 + 3 * slots].unflatten(-1, (slots, 3))
    shuffled[:, 1, 4:4 + 3 * slots] = landmarks[:, torch.randperm(slots)].flatten(1)
    target = int(landmarks[0, :, 2].argmax())  # a slot of batch row 0 holding a target
    assert landmarks[0, target, 2] == 1.0
    flipped[0, 1, 4 + 3 * target + 2] = 0.0
    greedy = lambda y: y.argmax(-1)  # noqa: E731
    with torch.no_grad():
        _, y = net.decode(o, greedy)
        _, y_shuffled = net.decode(shuffled, greedy)
        _, y_flipped = net.decode(flipped, greedy)
    assert not torch.equal(o, shuffled) and torch.allclose(y, y_shuffled, atol=1e-5)
    assert (y_flipped[0] - y[0]).abs().max() > 1e-4 and torch.equal(y_flipped[1:], y[1:])


def test_a_mat_trained_among_decoys_plays_the_reference_environment_at_other_m_and_d(tmp_path):
    """A few updates of MAT and of MAT-Dec on the decoy task's port; each checkpoint plays chapter 12's PettingZoo
    environment (mpe2's machinery) at its own (m, d) and, with the same weights, at another m and d."""
    for variant in ("mat", "mat-dec"):
        config = replace(QUICK, scenario="simple_spread_decoys", scenario_kwargs={"N": 3, "decoys": 1},
                         total_steps=64 * 25 * 3, variant=variant)
        history: list[dict] = []
        agent = train(config, lambda stats, _, kept=history: kept.append(stats))
        assert len(history) == 3 and all(np.isfinite(s["train_return"]) for s in history)
        path = tmp_path / f"{variant}-decoys.pt"
        save_checkpoint(path, agent, config, note="test")
        for m, d in ((3, 1), (5, 3)):
            score, _ = evaluate(load_policy(path, N=m, decoys=d), "simple_spread_decoys", episodes=2, N=m, decoys=d)
            assert np.isfinite(score) and score < 0


def test_the_decoy_configs_differ_from_the_m6_runs_only_in_the_scenario():
    """``mat-decoys3-spread6`` and ``matdec-decoys3-spread6``: MAT's own m = 6 configs on chapter 12's decisive point,
    at the env-step budget of the entity actor they are read beside (``decoys3-spread6-entity``)."""
    from dataclasses import asdict

    from attnmarl.train import CONFIGS

    for prefix in ("mat", "matdec"):
        config, plain = asdict(CONFIGS[f"{prefix}-decoys3-spread6"]), asdict(CONFIGS[f"{prefix}-spread6"])
        assert {k for k in config if config[k] != plain[k]} == {"scenario", "scenario_kwargs"}
        assert config["scenario_kwargs"] == {"N": 6, "decoys": 3}
        assert config["total_steps"] == CONFIGS["decoys3-spread6-entity"].total_steps
