"""One network at many m: moving a trained actor to another number of agents (attnmarl.checkpoints,
MAPPOConfig.init_actor) and the zero-shot tables of attnmarl.transfer."""
import base64
import gzip
import json
import re
from dataclasses import replace

import numpy as np
import pytest
import torch

from attnmarl import load_policy
from attnmarl.algos.mappo import MAPPOConfig, make_agent, train
from attnmarl.checkpoints import load_actor_from, load_checkpoint, shipped_checkpoint
from attnmarl.envs import evaluate, random_policy
from attnmarl.transfer import closed_share, main, parse_ms, team_kwargs, zero_shot_scores

ENTITY6 = shipped_checkpoint("policy", "pi-spread6-entity", 0)
FLAT6 = shipped_checkpoint("policy", "pi-spread6-flat", 0)


def actor_state(path):
    _, state, _ = load_checkpoint(path)
    return {k.removeprefix("actor."): v for k, v in state.items() if k.startswith("actor.")}


@pytest.mark.parametrize("m", [2, 9, 16])
def test_the_entity_actor_of_m_6_runs_with_the_same_parameters_at_another_m(m, one_thread):
    config = replace(load_checkpoint(ENTITY6)[0], scenario_kwargs={"N": m})
    agent = make_agent(config)
    load_actor_from(agent, config, ENTITY6)
    trained = actor_state(ENTITY6)
    assert agent.actor.state_dict().keys() == trained.keys()
    assert all(torch.equal(agent.actor.state_dict()[k], v) for k, v in trained.items())
    y = agent.actor(torch.randn(4, m, 6 * m))
    assert y.shape == (4, m, 5) and torch.isfinite(y).all()


def test_the_m_6_entity_actor_beats_random_zero_shot_at_m_9_on_mpe2(one_thread):
    ours, _ = evaluate(load_policy(ENTITY6, N=9), "simple_spread", episodes=20, seed=1000, N=9)
    baseline, _ = evaluate(random_policy("simple_spread", seed=7, N=9), "simple_spread", episodes=20, seed=1000, N=9)
    assert ours > baseline + 10.0


def test_load_policy_at_the_trained_m_is_the_plain_checkpoint(one_thread):
    obs = {f"agent_{i}": torch.randn(36).numpy() for i in range(6)}
    assert load_policy(ENTITY6, N=6)(obs) == load_policy(ENTITY6)(obs)


def test_an_actor_whose_shapes_depend_on_m_cannot_move_to_another_m():
    with pytest.raises(ValueError, match="cannot run with {'N': 9}"):
        load_policy(FLAT6, N=9)


def test_fine_tuning_starts_from_the_checkpoint_actor_and_refuses_another_design(tmp_path, one_thread):
    frozen = MAPPOConfig("simple_spread", {"N": 4}, actor="entity", num_envs=8, rollout_steps=25, total_steps=200,
                         lr_actor=0.0, init_actor=str(ENTITY6))
    agent = train(frozen)
    assert all(torch.equal(agent.actor.state_dict()[k], v) for k, v in actor_state(ENTITY6).items())
    seeded = replace(frozen, init_actor="policy/pi-spread6-entity-seed{seed}.pt", seed=1)
    assert all(torch.equal(train(seeded).actor.state_dict()[k], v)
               for k, v in actor_state(shipped_checkpoint("policy", "pi-spread6-entity", 1)).items())
    with pytest.raises(ValueError, match="actor: checkpoint 'entity', here 'flat'"):
        train(replace(frozen, actor="flat"))


def test_closed_share_and_the_m_argument():
    assert closed_share(-20.0, random=-40.0, greedy=-10.0) == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="above the random"):
        closed_share(-20.0, random=-10.0, greedy=-40.0)
    assert parse_ms("2-5") == [2, 3, 4, 5] and parse_ms("3,6,12") == [3, 6, 12]
    for bad in ("1-4", "x", "", "3-"):
        with pytest.raises(ValueError):
            parse_ms(bad)


def test_the_cli_writes_zero_shot_scores_beside_the_baselines(tmp_path, one_thread):
    out = tmp_path / "zero.json"
    main(["--run", "policy/pi-spread6-entity", "--m", "3", "--episodes", "3", "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["runs"][0]["trained_m"] == 6
    assert result["runs"][0]["scores"]["3"] == pytest.approx(list(zero_shot_scores(ENTITY6, [3], 3)[3]), abs=1e-4)
    assert set(result["baselines"]["3"]) == {"random", "greedy", "steered"}
    assert result["command"].startswith("python -m attnmarl.transfer --run policy/pi-spread6-entity")


def test_team_sizes_and_the_treasure_baselines_cli(tmp_path):
    assert team_kwargs("simple_spread_v3", 5) == {"N": 5}
    assert team_kwargs("collect_treasure", 8) == {"num_collectors": 6, "num_deposits": 2, "num_treasures": 6}
    for scenario, m, message in (("simple_tag", 4, "team sizes are defined"), ("collect_treasure", 2, "m must be"),
                                 ("simple_spread", 2.0, "m must be")):
        with pytest.raises(ValueError, match=message):
            team_kwargs(scenario, m)
    out = tmp_path / "treasure.json"
    main(["--scenario", "collect_treasure", "--m", "3", "--episodes", "2", "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["scenario"] == "collect_treasure" and result["runs"] == []
    kwargs = team_kwargs("collect_treasure", 3)
    assert result["baselines"]["3"]["random"][0] == pytest.approx(
        evaluate(random_policy("collect_treasure", **kwargs), "collect_treasure", 2, **kwargs)[0], abs=1e-4)
    with pytest.raises(SystemExit):  # a spread checkpoint scored on collect_treasure
        main(["--scenario", "collect_treasure", "--run", "policy/pi-spread6-entity", "--m", "4", "--out", str(out)])


def test_the_continuous_baselines_cli_scores_teams_that_act_with_forces(tmp_path, capsys):
    """The range of the continuous-action designs: random forces and the greedy assignment steering with forces,
    on the same fixed episodes (and only simple_spread's baselines: no --run, no other scenario)."""
    from attnmarl.envs import greedy_assignment_policy

    out = tmp_path / "continuous.json"
    main(["--continuous", "--m", "3", "--episodes", "2", "--out", str(out)])
    result = json.loads(out.read_text())
    assert result["continuous_actions"] is True and set(result["baselines"]["3"]) == {"random", "greedy"}
    kwargs = {"N": 3, "continuous_actions": True}
    assert result["baselines"]["3"]["greedy"][0] == pytest.approx(
        evaluate(greedy_assignment_policy(continuous_actions=True), "simple_spread", 2, **kwargs)[0], abs=1e-4)
    for extra in (["--run", "policy/pi-spread6-entity"], ["--scenario", "collect_treasure"]):
        with pytest.raises(SystemExit):
            main(["--continuous", "--m", "3", "--out", str(tmp_path / "no.json"), *extra])
        assert "--continuous scores simple_spread's random and greedy baselines only" in capsys.readouterr().err


def test_the_shipped_continuous_range_is_wide_and_not_the_discrete_one():
    """Forces are harder to steer than five moves: continuous random and greedy teams both score differently from
    the discrete ones, and greedy beats random by far (the range chapter 10 and the synthesis read μ and Q on)."""
    from attnmarl.notebook.explorers.scale import continuous_baselines, zero_shot_results

    table, discrete = continuous_baselines(), zero_shot_results()
    assert sorted(table["baselines"]) == [3, 6] and table["episodes"] == 200 and table["continuous_actions"]
    for m, scores in table["baselines"].items():
        (random_mean, random_sem), (greedy_mean, greedy_sem) = scores["random"], scores["greedy"]
        assert greedy_mean - random_mean > 10 * (random_sem + greedy_sem), m
        assert greedy_mean != discrete["baselines"][m]["greedy"][0]


# ---- the chapter's measurements (attnmarl.notebook.explorers.scale) ---------------------------------------------

def test_only_the_entity_actor_keeps_its_size_at_every_m():
    from attnmarl.notebook.explorers.scale import parameter_counts

    counts = parameter_counts([2, 3, 6, 12])
    assert counts["entity actor"] == [9093] * 4
    for name in ("flat actor", "concat actor", "attention actor", "concat critic", "attention critic"):
        assert all(a < b for a, b in zip(counts[name], counts[name][1:])), name
    # the concatenation shapes read m observations of 6m numbers: quadratic growth
    assert counts["concat actor"][3] / counts["concat actor"][2] > 3


def test_attention_concentration_is_between_one_entity_and_all_of_them(one_thread):
    from attnmarl.checkpoints import load_agent_at
    from attnmarl.notebook.explorers.scale import attention_concentration

    agent, config = load_agent_at(ENTITY6, N=4)
    c = attention_concentration(agent, config, episodes=1)
    assert c["n_entities"] == 8 and c["effective"].shape == (2,)
    assert ((c["effective"] >= 1.0) & (c["effective"] <= 8.0)).all()
    assert ((c["top_share"] >= 3 / 8) & (c["top_share"] <= 1.0)).all() and (c["max"] <= c["top_share"]).all()
    with pytest.raises(ValueError, match="top must be"):
        attention_concentration(agent, config, episodes=1, top=0)
    flat, flat_config = load_agent_at(FLAT6)
    with pytest.raises(ValueError, match="entity actor"):
        attention_concentration(flat, flat_config, episodes=1)


def test_padded_and_masked_tokens_let_one_batch_mix_team_sizes(one_thread):
    """Agents of m = 3 and m = 6 in one batch: m = 3's 6 tokens sit in 6 of the 12 slots of m = 6, the
    other slots hold large garbage and are masked. Each row's y and alpha must be those of its own m,
    computed alone, and the empty slots must get exactly zero weight."""
    from attnmarl.checkpoints import load_agent_at
    from attnmarl.envs import make_batched
    from attnmarl.notebook.explorers.scale import pad_spread_tokens

    net = load_agent_at(ENTITY6)[0].actor
    tokens6 = net.tokens(torch.from_numpy(make_batched("simple_spread", 4, seed=0, N=6).reset()))[0]
    small = load_agent_at(ENTITY6, N=3)[0].actor
    tokens3 = small.tokens(torch.from_numpy(make_batched("simple_spread", 4, seed=1, N=3).reset()))[0]
    padded, mask3 = pad_spread_tokens(tokens3, m_max=6, fill=100.0)
    slots = [0, 1, 2, 3, 7, 8]  # self, landmarks 0-2, the two other agents
    assert mask3[0, 0].nonzero().flatten().tolist() == slots and torch.equal(padded[:, :, slots], tokens3)
    batch = torch.cat([tokens6[:, :3], padded])
    mask = torch.cat([torch.ones(4, 3, 12, dtype=torch.bool), mask3])
    y, alpha = net.nets[0](batch, mask)
    y6, alpha6 = net.nets[0](tokens6[:, :3])
    y3, alpha3 = small.nets[0](tokens3)
    assert torch.allclose(y[:4], y6, atol=1e-5) and torch.allclose(alpha[:4], alpha6, atol=1e-6)
    assert torch.allclose(y[4:], y3, atol=1e-5) and torch.allclose(alpha[4:][..., slots], alpha3, atol=1e-6)
    assert (alpha[4:][..., [4, 5, 6, 9, 10, 11]] == 0).all()
    with pytest.raises(ValueError, match="self token"):
        net.nets[0](batch, mask & (torch.arange(12) > 0))
    with pytest.raises(ValueError, match="bool tensor of shape"):
        net.nets[0](batch, mask[..., :5])
    with pytest.raises(ValueError, match="cannot pad"):
        pad_spread_tokens(tokens6, m_max=3)


def test_every_scaling_point_has_its_seeds_and_the_same_budget_in_agent_decisions():
    """Three seeds per point, ten (seeds_at) where chapters 8 and 10 compare the designs most closely."""
    from attnmarl.checkpoints import shipped_runs
    from attnmarl.notebook.explorers.scale import SCALE_CONFIGS, scale_curve, scale_runs, seeds_at

    assert seeds_at("simple_spread", 6, "entity") == seeds_at("simple_spread", 6, "mean") == 10
    assert seeds_at("simple_spread", 12, "entity") == seeds_at("simple_spread", 12, "flat") == 10
    assert seeds_at("simple_spread", 9, "entity") == seeds_at("collect_treasure", 12, "mean") == 3
    for (scenario, m, actor), name in SCALE_CONFIGS.items():
        runs = scale_runs(m, actor, scenario)
        assert sorted(r["seed"] for r in runs) == list(range(seeds_at(scenario, m, actor))), name
        for r in runs:
            team = team_kwargs(scenario, m)
            assert r["scenario"] == scenario and {k: r["scenario_kwargs"][k] for k in team} == team
            assert not r["scenario_kwargs"].get("continuous_actions", False)
            mixing = "mean" if actor == "mean" else "attention"  # the control: the entity actor, alpha uniform
            assert r["actor"] == ("entity" if actor == "mean" else actor) and r["critic"] == "attention"
            assert r["config"].get("entity_mixing", "attention") == mixing, name
            assert abs(m * r["env_steps"] - 12_000_000) <= m * 3200, name  # within one update of 12M
            curve = scale_curve(name, r["seed"])
            assert curve["env_steps"][-1] == r["env_steps"] and curve["eval_episodes"][-1] == 200
            assert curve["eval_return"][-1] == pytest.approx(r["final_return"], abs=1e-3)
    finetuned = [r for r in shipped_runs("scale") if r["name"] == "finetune-spread12-entity"]
    assert sorted(r["seed"] for r in finetuned) == [0, 1, 2]
    assert all(r["config"]["init_actor"] == "policy/pi-spread6-entity-seed{seed}.pt" for r in finetuned)


def test_maacs_critic_comparison_differs_only_in_the_critic():
    from attnmarl.notebook.explorers.scale import CRITIC_CONFIGS, CRITIC_MS, critic_runs

    assert CRITIC_MS == (4, 12)
    for m in CRITIC_MS:
        pair = {critic: critic_runs(m, critic) for critic in ("concat", "attention")}
        for critic, runs in pair.items():
            assert sorted(r["seed"] for r in runs) == [0, 1, 2], (m, critic)
            assert all(r["critic"] == critic and r["actor"] == "flat" for r in runs)
        concat, attention = (dict(pair[c][0]["config"]) for c in ("concat", "attention"))
        assert concat.pop("critic") == "concat" and attention.pop("critic") == "attention"
        assert {k: v for k, v in concat.items() if k != "seed"} == {k: v for k, v in attention.items() if k != "seed"}
    with pytest.raises(ValueError, match="no critic comparison"):
        critic_runs(8, "concat")
    assert CRITIC_CONFIGS[12, "attention"] == "scale-treasure12-flat"


def test_the_curriculum_chains_its_stages_and_spends_the_budget_of_one_point():
    from attnmarl.checkpoints import shipped_runs
    from attnmarl.notebook.explorers.scale import CURRICULUM, curriculum_curve

    runs = [r for r in shipped_runs("scale") if r["name"] in CURRICULUM.values()]
    previous = None
    for m, name in CURRICULUM.items():
        stage = [r for r in runs if r["name"] == name]
        assert sorted(r["seed"] for r in stage) == [0, 1, 2] and all(r["scenario_kwargs"]["N"] == m for r in stage)
        expected = "" if previous is None else f"scale/{previous}-seed{{seed}}.pt"
        assert all(r["config"]["init_actor"] == expected for r in stage), name
        previous = name
    for seed in range(3):
        curve = curriculum_curve(seed)
        assert np.all(np.diff(curve["agent_decisions"]) > 0) and np.all(np.diff(curve["cpu_seconds"]) > 0)
        assert abs(curve["agent_decisions"][-1] - 12_000_000) <= 12 * 3200 * 3  # within one update per stage
        assert list(dict.fromkeys(curve["m"].tolist())) == [3, 6, 12]


def test_the_zero_shot_tables_cover_m_from_2_to_16_with_baselines_and_three_seeds():
    from attnmarl.notebook.explorers.scale import zero_shot_results

    for filename, trained_m, ms in (("zero-shot.json", 6, list(range(2, 17))),
                                    ("zero-shot-curriculum.json", 12, [2, 3, 6, 9, 12, 16])):
        table = zero_shot_results(filename)
        assert sorted(table["baselines"]) == ms and table["episodes"] == 200
        assert sorted(r["seed"] for r in table["runs"]) == [0, 1, 2]
        for run in table["runs"]:
            assert run["trained_m"] == trained_m and sorted(run["scores"]) == ms
            for m, (mean, _) in run["scores"].items():  # every zero-shot score is well above random
                assert mean > table["baselines"][m]["random"][0] + 5.0, (filename, m)


def test_the_treasure_baselines_cover_maacs_team_sizes_and_the_script_beats_random():
    from attnmarl.notebook.explorers.scale import TREASURE_MS, treasure_baselines

    table = treasure_baselines()
    assert sorted(table["baselines"]) == list(TREASURE_MS) and table["episodes"] == 200
    for m, scores in table["baselines"].items():
        (random_mean, random_sem), (greedy_mean, greedy_sem) = scores["random"], scores["greedy"]
        assert greedy_mean - random_mean > 5 * (random_sem + greedy_sem), m


def test_the_treasure_explorer_puts_alpha_on_the_entities_behind_ranked_tokens(one_thread):
    import numpy as np

    from attnmarl.checkpoints import load_agent
    from attnmarl.notebook.explorers.policy import policy_alpha, policy_episode_explorer, ranked_entities
    from attnmarl.notebook.explorers.scale import scale_checkpoint
    from attnmarl.notebook.explorers.value import trained_episode

    agent, config = load_agent(scale_checkpoint("scale-treasure12-entity"))
    episode = trained_episode(agent, config, seed=0)
    weights = policy_alpha(agent, config, episode.obs, episode)
    assert weights.alpha.shape == (26, 2, 12, 22)  # steps, heads, agents, 12 agents + 10 treasures
    np.testing.assert_allclose(weights.alpha.sum(-1), 1.0, atol=1e-5)
    with torch.no_grad():
        _, raw = agent.actor.outputs_and_alpha(torch.from_numpy(episode.obs))
    t, i = 10, 3  # the token ranked nearest treasure is the entity ranked_entities names
    nearest_treasure = ranked_entities(episode, t, i)[12]
    assert weights.alpha[t, :, i, nearest_treasure] == pytest.approx(raw[t, i, :, 12].numpy(), abs=1e-7)
    with pytest.raises(ValueError, match="ranked by distance"):
        policy_alpha(agent, config, episode.obs)
    player = policy_episode_explorer(agent, config, seed=0)
    assert len(player.update(t=0)["panels"][1]["cols"]) == 22
    assert player.update(t=0)["panels"][1] != player.update(t=12)["panels"][1]
    assert player.update(agent_index="d2 (deposit_1)")["panels"][0]["focus"] == 11


def test_the_large_m_explorer_shows_24_entities_and_redraws(one_thread):
    from attnmarl.checkpoints import load_agent
    from attnmarl.notebook.explorers.policy import policy_episode_explorer
    from attnmarl.notebook.explorers.scale import scale_checkpoint

    agent, config = load_agent(scale_checkpoint("scale-spread12-entity"))
    player = policy_episode_explorer(agent, config, seed=0)
    first = player.update(t=0)
    assert len(first["panels"][1]["cols"]) == 24  # alpha per head over itself, 12 landmarks, 11 agents
    assert first["panels"][1] != player.update(t=12)["panels"][1]
    assert player.update(agent_index="a12 (agent_11)")["panels"][0]["focus"] == 11
    player.live()
    before = player.markup
    player.widgets["head"].value = "2"
    assert player.markup != before


def test_without_ring_heads_the_large_m_explorer_rings_the_mean_and_its_static_face_stays_small(one_thread):
    """Chapter 10's m = 12 explorers (ring_heads=False): no head menu, the rings draw the mean over heads as the
    full explorer's "mean" does, the heatmap still shows each head; the static face carries the 26 x 12 frames
    in under 120 kB (a third of the frames, colours to what the page shows)."""
    from attnmarl.checkpoints import load_agent
    from attnmarl.notebook.explorers.policy import policy_episode_explorer
    from attnmarl.notebook.explorers.scale import scale_checkpoint

    agent, config = load_agent(scale_checkpoint("scale-spread12-entity"))
    full = policy_episode_explorer(agent, config, seed=0)
    light = policy_episode_explorer(agent, config, seed=0, ring_heads=False)
    assert [c.name for c in light.controls] == ["t", "agent_index"]
    for t, i in ((0, "a1 (agent_0)"), (17, "a9 (agent_8)")):
        assert light.update(t=t, agent_index=i) == full.update(t=t, agent_index=i, head="mean")
    markup = light.static_html()
    spec = json.loads(gzip.decompress(base64.b64decode(
        re.search(r'type="application/octet-stream" id="[^"]+">([^<]+)<', markup).group(1))))
    assert len(spec["frames"]) == 26 * 12 and len(markup) < 120_000


# ---- chapter 12: entity actors at other (m, d) of simple_spread with decoys ----------------------------------------

DECOYS = "simple_spread_decoys"


def save_decoy_run(assets, name):
    """An (untrained) agent of the config ``name``, saved as attnmarl.train saves a run's checkpoint (its name and seed
    in the metadata), at ``assets/decoys/NAME-seed0.pt``: ``--run decoys/NAME`` once ``ASSETS`` is ``assets``."""
    from attnmarl.checkpoints import save_checkpoint
    from attnmarl.train import named_config

    config = named_config(name, seed=0)
    path = assets / "decoys" / f"{name}-seed0.pt"
    path.parent.mkdir(parents=True, exist_ok=True)
    save_checkpoint(path, make_agent(config), config, name=name, seed=0)
    return path


@pytest.fixture(scope="module")
def decoy_zero_shot_table(tmp_path_factory):
    """The CLI's table for an entity actor trained at (m, d) = (3, 1), scored at (4, 2) on 2 episodes."""
    assets = tmp_path_factory.mktemp("assets")
    path = save_decoy_run(assets, "decoys1-spread3-entity")
    out = assets / "zero-shot.json"
    threads = torch.get_num_threads()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("attnmarl.transfer.ASSETS", assets)
        try:
            main(["--scenario", DECOYS, "--run", "decoys/decoys1-spread3-entity", "--m", "4", "--decoys", "2",
                  "--episodes", "2", "--out", str(out)])
        finally:  # the command runs on one torch thread and leaves it so
            torch.set_num_threads(threads)
    return path, out


def test_a_decoy_entity_actor_is_scored_at_another_m_and_d_as_load_policy_plays_there(decoy_zero_shot_table,
                                                                                         one_thread):
    from attnmarl.envs.decoys_port import baseline_scores

    path, out = decoy_zero_shot_table
    result = json.loads(out.read_text())
    assert result["scenario"] == DECOYS and result["decoys"] == [2] and set(result["baselines"]) == {"4,2"}
    run = result["runs"][0]
    assert (run["run"], run["seed"], run["trained_m"], run["trained_decoys"]) == ("decoys/decoys1-spread3-entity", 0,
                                                                                3, 1)
    direct = evaluate(load_policy(path, N=4, decoys=2), DECOYS, 2, N=4, decoys=2)
    assert run["scores"]["4,2"] == pytest.approx(list(direct), abs=1e-4)
    shipped_way = baseline_scores((4,), (2,), 2)[0]  # how assets/decoys/baselines.json is made
    assert result["baselines"]["4,2"] == {"random": shipped_way["random"], "greedy": shipped_way["greedy"]}


def test_the_decoy_zero_shot_table_reads_back_as_shares_of_the_range(decoy_zero_shot_table):
    from attnmarl.notebook.explorers.decoys import decoy_zero_shot

    _, out = decoy_zero_shot_table
    result = json.loads(out.read_text())
    (random, _), (greedy, _) = result["baselines"]["4,2"].values()
    expected = 100 * closed_share(result["runs"][0]["scores"]["4,2"][0], random, greedy)
    assert decoy_zero_shot(out) == {"decoys/decoys1-spread3-entity": {(4, 2): {0: pytest.approx(expected)}}}
    with pytest.raises(ValueError, match="no zero-shot table at .*; write it with python -m attnmarl.transfer"):
        decoy_zero_shot(out.with_name("missing.json"))


@pytest.mark.parametrize("team", [(4, 1), (3, 2)])
def test_the_flat_decoy_actor_is_refused_at_another_m_or_d(tmp_path, team):
    from attnmarl.transfer import check_transferable

    path = save_decoy_run(tmp_path, "decoys1-spread3-flat")
    assert check_transferable(path, DECOYS, [(3, 1)])[0] == path
    with pytest.raises(ValueError, match=re.escape(f"a flat actor at (m, d) = (3, 1); its weights' shapes depend on m "
                                                   f"and d, so it cannot run at (m, d) = [{team}]")):
        check_transferable(path, DECOYS, [(3, 1), team])


@pytest.mark.parametrize("name,fits,team", [("decoys1-spread3-entity", (4, 3), (6, 0)),
                                            ("decoys0-spread3-entity", (6, 0), (4, 1))])
def test_a_decoy_entity_actor_runs_on_its_side_of_d_0_only(tmp_path, name, fits, team):
    """With decoys a landmark token is [dx, dy, is_target]; at d = 0 (simple_spread itself) it is [dx, dy]: the
    actor's landmark embedding fits one width, so transfer refuses the other side before any evaluation, as
    loading the actor there would fail."""
    from attnmarl.transfer import check_transferable

    path = save_decoy_run(tmp_path, name)
    assert check_transferable(path, DECOYS, [fits])[0] == path
    with pytest.raises(ValueError, match=re.escape(f"so it cannot run at (m, d) = [{team}]")) as refused:
        check_transferable(path, DECOYS, [fits, team])
    assert "is_target bit" in str(refused.value)
    with pytest.raises(ValueError, match="weights do not fit"):
        load_policy(path, N=team[0], decoys=team[1])


@pytest.mark.parametrize("name", ["decoys1-spread3-oracle", "decoys1-spread3-nobit"])
def test_the_decoy_controls_transfer_with_their_view_rebuilt_for_the_new_m_and_d(tmp_path, name, one_thread):
    """The oracle and no-bit controls act at (m, d) = (4, 2) as at their own: the oracle gives the decoy slots of
    (4, 2) exactly zero attention, the no-bit actor's actions do not depend on the is_target bits."""
    from attnmarl.checkpoints import load_agent_at
    from attnmarl.envs import make_reference
    from attnmarl.envs.decoys import observation_layout
    from attnmarl.transfer import check_transferable

    path = save_decoy_run(tmp_path, name)
    check_transferable(path, DECOYS, [(4, 2)])
    actor = load_agent_at(path, N=4, decoys=2)[0].actor
    layout = observation_layout(4, 2)
    assert actor.decoys.bit_columns.tolist() == layout.landmark_columns[:, 2].tolist()
    env = make_reference(DECOYS, N=4, decoys=2)
    obs, _ = env.reset(seed=0)
    o = torch.from_numpy(np.stack([obs[agent] for agent in env.possible_agents])).float()[None]
    y, alpha = actor.outputs_and_alpha(o)
    bits = o[0][:, layout.landmark_columns[:, 2]] == 1  # (m, m + k): which slots hold targets
    slots = alpha[0, :, :, 1:1 + layout.n_landmarks]  # (m, heads, m + k), after the self token
    if name.endswith("oracle"):
        assert (slots.permute(1, 0, 2)[:, ~bits] == 0).all() and (slots.permute(1, 0, 2)[:, bits] > 0).all()
    else:
        no_bits = o.clone()
        no_bits[..., layout.landmark_columns[:, 2]] = 0.0
        assert torch.equal(actor(no_bits), actor(o)) and torch.allclose(actor(o), y, atol=1e-5)


def test_decoys_belong_to_simple_spread_with_decoys_only(tmp_path, capsys):
    from attnmarl.transfer import parse_decoys, teams_of

    assert team_kwargs(DECOYS, (6, 3)) == {"N": 6, "decoys": 3}
    assert teams_of(DECOYS, [3, 6], parse_decoys("0-1")) == [(3, 0), (3, 1), (6, 0), (6, 1)]
    for bad, message in (("-1", "takes a range"), ("1,1", "more than once"), ("3-1", "empty range")):
        with pytest.raises(ValueError, match=f"--decoys.*{message}"):
            parse_decoys(bad)
    with pytest.raises(ValueError, match=r"a team of simple_spread_decoys is \(m, d\)"):
        team_kwargs(DECOYS, 6)
    for scenario in ("simple_spread", "collect_treasure"):
        with pytest.raises(SystemExit) as exit_:
            main(["--scenario", scenario, "--decoys", "1", "--m", "4", "--out", str(tmp_path / "no.json")])
        assert exit_.value.code == 2
        assert f"--decoys sets the decoys per agent of --scenario {DECOYS}; {scenario} has no decoys" in (
            capsys.readouterr().err)
