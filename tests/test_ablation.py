"""Is it attention? The mean-pooling control of the entity actor, test-time interventions on alpha, and
bootstrap intervals over seeds (chapters 8 and 10)."""
import json
from dataclasses import asdict, replace

import numpy as np
import pytest
import torch
from scipy import stats as scipy_stats

from attnmarl import load_policy
from attnmarl.algos.mappo import MAPPOConfig, make_agent
from attnmarl.checkpoints import save_checkpoint, shipped_checkpoint
from attnmarl.envs import evaluate, make_reference, token_layout
from attnmarl.intervene import intervened_policy, intervention_scores
from attnmarl.intervene import main as intervene_main
from attnmarl.nets import Actor, EntityActor
from attnmarl.stats import bootstrap_difference, iqm
from attnmarl.train import CONFIGS

pytestmark = pytest.mark.usefixtures("one_thread")  # tiny networks: conftest.py


def spread_obs(batch: int, m: int, seed: int = 0, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    return torch.randn(batch, m, 6 * m, generator=torch.Generator().manual_seed(seed), dtype=dtype)


def twin_actors(m: int, **kwargs) -> tuple[EntityActor, EntityActor]:
    """An attention and a mean-pooling entity actor with the same weights (float64)."""
    torch.manual_seed(0)
    attention = EntityActor("simple_spread", {"N": m}, m, 6 * m, 5, **kwargs).double()
    mean = EntityActor("simple_spread", {"N": m}, m, 6 * m, 5, mixing="mean", **kwargs).double()
    mean.load_state_dict(attention.state_dict())
    return attention, mean


def permute_tokens(o: torch.Tensor, kind: str, order: list[int]) -> torch.Tensor:
    """Agent 0's observation with its tokens of one kind (landmarks or other agents) reordered."""
    layout = token_layout("simple_spread", 0, N=o.shape[1])
    columns = [c for k, c in zip(layout.kinds, layout.columns) if k == kind]
    permuted = o.clone()
    for source, target in zip(columns, [columns[i] for i in order]):
        permuted[:, 0, list(target)] = o[:, 0, list(source)]
    return permuted


@pytest.mark.parametrize("kind", ["landmark", "agent"])
def test_both_mixings_are_invariant_to_the_order_of_a_kinds_entities_and_the_flat_actor_is_not(kind):
    attention, mean = twin_actors(5)
    o = spread_obs(6, 5, dtype=torch.float64)
    kinds = token_layout("simple_spread", 0, N=5).kinds
    order = list(reversed(range(sum(k == kind for k in kinds))))
    permuted = permute_tokens(o, kind, order)
    assert not torch.equal(permuted, o)
    for actor in (attention, mean):
        assert torch.allclose(actor(permuted)[:, 0], actor(o)[:, 0], atol=1e-12)
    torch.manual_seed(0)
    flat = Actor(5, 30, 5).double()
    assert (flat(permuted)[:, 0] - flat(o)[:, 0]).abs().max() > 1e-4


def test_mean_pooling_is_the_attention_actor_with_alpha_forced_uniform_exactly():
    attention, mean = twin_actors(6)
    o = spread_obs(7, 6, dtype=torch.float64)
    assert not torch.allclose(attention(o), mean(o))  # attention's own alpha is not uniform
    attention.intervention = "uniform"
    assert torch.equal(attention(o), mean(o))  # folded form
    y_attention, alpha_attention = attention.outputs_and_alpha(o)
    y_mean, alpha_mean = mean.outputs_and_alpha(o)  # reference form
    assert torch.equal(y_attention, y_mean) and torch.equal(alpha_attention, alpha_mean)
    assert torch.allclose(alpha_mean, torch.full_like(alpha_mean, 1 / 12), atol=0)
    assert torch.allclose(y_mean, mean(o), atol=1e-12)


def test_mean_pooling_is_c_equal_to_w_o_w_v_times_the_mean_of_the_normalised_tokens():
    """Deep Sets by hand: c = W_o [W_v,h mean_n LN(e_n) for each head], then the actor's head."""
    _, mean = twin_actors(4)
    net = mean.nets[0]
    o = spread_obs(3, 4, dtype=torch.float64)
    tokens = mean.tokens(o)[0]
    e = net.embed(tokens)
    z_bar = net.ln_attn(e).mean(dim=-2)  # (batch, m, d)
    W_v = net.W_kv.weight[net.d:]  # the value half of W_kv: every head's W_v stacked, (d, d)
    c = net.W_o(z_bar @ W_v.T)
    assert torch.allclose(net._head(e[..., 0, :], c), mean(o), atol=1e-12)


def test_mean_pooling_ignores_padded_tokens_and_gives_the_present_ones_equal_weight():
    _, mean = twin_actors(4)
    net = mean.nets[0]
    tokens = mean.tokens(spread_obs(2, 4, dtype=torch.float64))[0]
    mask = torch.ones(tokens.shape[:-1], dtype=torch.bool)
    mask[..., 5:] = False  # hide the last two tokens (other agents)
    y, alpha = net(tokens, mask)
    assert torch.equal(alpha[..., 5:], torch.zeros_like(alpha[..., 5:]))
    assert torch.allclose(alpha[..., :5], torch.full_like(alpha[..., :5], 1 / 5), atol=0)
    y_cut, _ = net(tokens[..., :5, :])
    assert torch.allclose(y, y_cut, atol=1e-12)


def test_other_agent_alpha_is_the_next_agents_own_alpha():
    attention, _ = twin_actors(4)
    o = spread_obs(3, 4, dtype=torch.float64)
    _, alpha = attention.outputs_and_alpha(o)
    attention.intervention = "other-agent"
    y_other, alpha_other = attention.outputs_and_alpha(o)
    assert torch.equal(alpha_other, alpha.roll(-1, dims=1))
    assert torch.allclose(attention(o), y_other, atol=1e-12)  # the folded form agrees
    with pytest.raises(ValueError, match="intervention must be one of"):
        attention.intervention = "shuffle"


def test_mean_configs_differ_from_the_entity_runs_in_the_mixing_only():
    pairs = {3: "scale-spread3-entity", 6: "pi-spread6-entity", 9: "scale-spread9-entity",
             12: "scale-spread12-entity"}
    pairs = {f"scale-spread{m}-entity-mean": name for m, name in pairs.items()}
    pairs |= {f"scale-treasure{m}-entity-mean": f"scale-treasure{m}-entity" for m in (4, 8, 12)}
    for mean_name, entity_name in pairs.items():
        mean, entity = asdict(CONFIGS[mean_name]), asdict(CONFIGS[entity_name])
        assert {k for k in mean if mean[k] != entity[k]} == {"entity_mixing"}, mean_name
        assert mean["entity_mixing"] == "mean"
    with pytest.raises(ValueError, match="changes the entity actor only"):
        MAPPOConfig(actor="flat", entity_mixing="mean")
    with pytest.raises(ValueError, match="entity_mixing must be one of"):
        MAPPOConfig(actor="entity", entity_mixing="max")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Untrained attention and mean-pooling entity actors at m = 3 (the same weights), and a flat one."""
    folder = tmp_path_factory.mktemp("ablation")
    paths = {}
    torch.manual_seed(0)
    attention_config = MAPPOConfig("simple_spread", {"N": 3}, actor="entity", num_envs=4, rollout_steps=8,
                                   total_steps=32)
    agent = make_agent(attention_config)
    for name, config in (("attention", attention_config),
                         ("mean", replace(attention_config, entity_mixing="mean")),
                         ("flat", replace(attention_config, actor="flat"))):
        paths[name] = folder / f"{name}.pt"
        save_checkpoint(paths[name], agent if name != "flat" else make_agent(config), config)
    return paths


def test_the_mean_pooling_actor_runs_at_any_m(checkpoints):
    for m in (2, 5, 9):
        policy = load_policy(checkpoints["mean"], N=m)
        env = make_reference("simple_spread", N=m)
        obs, _ = env.reset(seed=0)
        assert len(policy(obs)) == m


def test_the_uniform_intervention_plays_exactly_as_the_mean_pooling_actor(checkpoints):
    env = make_reference("simple_spread", N=3)
    uniform = intervened_policy(checkpoints["attention"], "uniform")
    mean = load_policy(checkpoints["mean"])
    trained = shipped_checkpoint("policy", "pi-spread3-entity")
    trained_uniform, trained_own = intervened_policy(trained, "uniform"), load_policy(trained)
    differ = 0
    for seed in range(10):
        obs, _ = env.reset(seed=seed)
        assert uniform(obs) == mean(obs)
        differ += trained_uniform(obs) != trained_own(obs)
    assert differ  # a trained actor's alpha is not uniform, and some of its actions change with it
    scores = intervention_scores(checkpoints["attention"], episodes=3)
    assert set(scores) == {"none", "uniform", "other-agent"}
    assert scores["uniform"] == evaluate(mean, "simple_spread", 3, N=3)


def test_an_intervention_needs_an_actor_that_attends(checkpoints):
    with pytest.raises(ValueError, match="flat actor; an intervention replaces the alpha"):
        intervened_policy(checkpoints["flat"], "uniform")
    with pytest.raises(ValueError, match="mean pooling actor"):
        intervened_policy(checkpoints["mean"], "uniform")
    with pytest.raises(ValueError, match="intervention must be one of"):
        intervened_policy(checkpoints["attention"], "zeros")


def test_the_intervene_command_writes_every_score_and_refuses_a_flat_run(tmp_path, capsys):
    out = tmp_path / "interventions.json"
    intervene_main(["--run", "policy/pi-spread3-entity", "--seeds", "0", "--episodes", "2", "--out", str(out)])
    result = json.loads(out.read_text())
    run = result["runs"][0]
    assert run["run"] == "policy/pi-spread3-entity" and run["scenario_kwargs"] == {"N": 3}
    own = evaluate(load_policy(shipped_checkpoint("policy", "pi-spread3-entity")), "simple_spread", 2, N=3)
    assert run["scores"]["none"] == [round(v, 4) for v in own]
    assert set(run["scores"]) == {"none", "uniform", "other-agent"}
    with pytest.raises(SystemExit):
        intervene_main(["--run", "policy/pi-spread3-flat", "--out", str(tmp_path / "x.json")])
    assert "an intervention replaces the alpha" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_iqm_drops_a_quarter_at_each_end():
    assert iqm(np.array([100.0, 1, 2, 3, 4, 5, 6, -100])) == pytest.approx(3.5)  # middle four of eight
    assert iqm(np.array([1.0, 2, 9])) == pytest.approx(4.0)  # n < 4: the mean
    assert np.allclose(iqm(np.array([[1.0, 2, 3, 50], [0, 0, 1, 1]]), axis=1), [2.5, 0.5])


def test_the_bootstrap_interval_agrees_with_scipys_percentile_bootstrap():
    rng = np.random.default_rng(1)
    a, b = rng.normal(2.0, 1.0, 10), rng.normal(0.0, 1.0, 10)
    ours = bootstrap_difference(a, b, resamples=50_000, seed=3)
    theirs = scipy_stats.bootstrap((a, b), lambda x, y, axis: x.mean(axis) - y.mean(axis), method="percentile",
                                   n_resamples=50_000, random_state=4).confidence_interval
    assert ours.estimate == pytest.approx(a.mean() - b.mean())
    assert ours.low == pytest.approx(theirs.low, abs=0.05) and ours.high == pytest.approx(theirs.high, abs=0.05)
    assert ours.low < ours.estimate < ours.high and ours.excludes_zero


def test_the_interval_covers_zero_for_one_design_against_itself_and_is_reproducible():
    scores = [-14.2, -15.0, -13.1, -14.8, -16.0]
    same = bootstrap_difference(scores, scores, statistic="iqm")
    assert same.estimate == 0 and same.low < 0 < same.high and not same.excludes_zero
    assert bootstrap_difference(scores, scores[::-1], seed=5) == bootstrap_difference(scores, scores[::-1], seed=5)
    wider = bootstrap_difference(scores, [s + 1 for s in scores], level=0.99)
    narrower = bootstrap_difference(scores, [s + 1 for s in scores], level=0.5)
    assert wider.low < narrower.low < narrower.high < wider.high
    assert str(narrower).startswith("-1.0 [")


@pytest.mark.parametrize("a, b, kwargs, message", [
    ([1.0], [1.0, 2.0], {}, "at least 2 scores"),
    ([1.0, float("nan")], [1.0, 2.0], {}, "NaN"),
    ([[1.0, 2.0]], [1.0, 2.0], {}, "flat sequence"),
    ("12", [1.0, 2.0], {}, "flat sequence"),
    ([1.0, 2.0], [1.0, 2.0], {"statistic": "median"}, "statistic must be one of"),
    ([1.0, 2.0], [1.0, 2.0], {"level": 95}, "strictly between 0 and 1"),
    ([1.0, 2.0], [1.0, 2.0], {"level": True}, "strictly between 0 and 1"),
    ([1.0, 2.0], [1.0, 2.0], {"resamples": 10}, "resamples"),
])
def test_bad_input_to_the_bootstrap_is_refused(a, b, kwargs, message):
    with pytest.raises(ValueError, match=message):
        bootstrap_difference(a, b, **kwargs)


def test_far_zero_shot_gives_each_seeds_share_of_its_own_ms_range_as_the_transfer_json_records_it():
    """Chapter 10's zero-shot curve of both m = 6 actors: every share is recomputed from the shipped JSON's raw
    scores and baselines, each m against its own random and greedy scores, with the steered baseline beside."""
    from attnmarl.checkpoints import shipped_table
    from attnmarl.notebook.explorers.scale import FAR_TABLES, far_zero_shot
    from attnmarl.transfer import closed_share

    far = far_zero_shot()
    assert far["ms"] == sorted(far["ms"]) and {2, 6, 16} <= set(far["ms"])
    assert set(far["shares"]) == {"policy/pi-spread6-entity", "ablation/scale-spread6-entity-mean"}
    raw = [shipped_table("ablation", name) for name in FAR_TABLES]
    for table in raw:
        for run in table["runs"]:
            seeds = sorted(r["seed"] for r in table["runs"] if r["run"] == run["run"])
            for m, (mean, _) in run["scores"].items():
                base = table["baselines"][m]
                expected = 100 * closed_share(mean, base["random"][0], base["greedy"][0])
                row = far["shares"][run["run"]][seeds.index(run["seed"])]
                assert row[far["ms"].index(int(m))] == pytest.approx(expected)
                assert far["episodes"][int(m)] == table["episodes"]
    for m in far["ms"]:
        assert far["baselines"][m]["random"][0] < far["baselines"][m]["greedy"][0]
        assert "steered" in far["baselines"][m]
    # the shares are in percent, and the trained attention actor closes most of the range at its own m
    assert 80 < far["shares"]["policy/pi-spread6-entity"][:, far["ms"].index(6)].mean() < 110
