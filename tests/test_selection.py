"""Chapter 12's read-outs (attnmarl.selection): how much of an entity actor's alpha lands on the decoys, and on
Level-Based Foraging, on each class of food (one it can lift alone, one it can lift only with the players in view,
one beyond them)."""
import numpy as np
import pytest
import torch

from attnmarl.algos.mappo import make_agent
from attnmarl.envs.lbf_baselines import SCENARIOS as LBF_SCENARIOS
from attnmarl.selection import (
    LBF_CLASSES,
    decoy_alpha,
    lbf_alpha,
    lbf_readout_observations,
    lbf_token_classes,
    uniform_decoy_share,
)
from attnmarl.train import _decoy_readout, named_config


def agent(name: str):
    torch.manual_seed(0)
    config = named_config(name, 0)
    return make_agent(config), config


def test_mean_pooling_spreads_alpha_evenly_so_the_decoys_get_their_uniform_share():
    """With alpha = 1 / n over the n = 2m + k tokens (self, m + k landmark slots, m - 1 agents), the decoys get
    k / n of it, the landmarks (m + k) / n, and the decoys' part of the landmarks' weight is k / (m + k)."""
    actor_agent, config = agent("decoys3-spread6-mean")
    m, k = 6, 18
    shares = decoy_alpha(actor_agent.actor, config.scenario_kwargs, worlds=16)
    assert shares["decoys"] == pytest.approx(k / (2 * m + k), abs=1e-6)
    assert shares["landmarks"] == pytest.approx((m + k) / (2 * m + k), abs=1e-6)
    assert shares["decoys"] / shares["landmarks"] == pytest.approx(uniform_decoy_share(m, 3), abs=1e-6)


def test_the_oracle_puts_no_weight_on_a_decoy_and_attention_some():
    oracle, config = agent("decoys3-spread6-oracle")
    assert decoy_alpha(oracle.actor, config.scenario_kwargs, worlds=16)["decoys"] == 0.0
    attention, config = agent("decoys3-spread6-entity")
    shares = decoy_alpha(attention.actor, config.scenario_kwargs, worlds=16)
    assert 0.0 < shares["decoys"] < shares["landmarks"] < 1.0


def test_the_read_out_reads_the_true_bits_under_the_no_bit_control():
    """Under "no-bit" the actor sees no bit, but the read-out still knows which slots are decoys."""
    actor_agent, config = agent("decoys1-spread3-nobit")
    shares = decoy_alpha(actor_agent.actor, config.scenario_kwargs, worlds=16)
    assert 0.0 < shares["decoys"] < shares["landmarks"]


def test_the_read_out_refuses_what_it_cannot_read():
    flat, config = agent("decoys3-spread6-flat")
    with pytest.raises(ValueError, match="no attention weights"):
        decoy_alpha(flat.actor, config.scenario_kwargs)
    entity, config = agent("decoys0-spread6-entity")
    with pytest.raises(ValueError, match="decoys >= 1"):
        decoy_alpha(entity.actor, config.scenario_kwargs)


def test_a_decoy_runs_curve_carries_the_read_out_and_no_other_run_does():
    entity, config = agent("decoys3-spread6-entity")
    assert set(_decoy_readout(entity, config)) == {"alpha_decoys", "alpha_landmarks"}
    flat, config = agent("decoys3-spread6-flat")
    assert _decoy_readout(flat, config) == {}
    plain, config = agent("decoys0-spread6-entity")
    assert _decoy_readout(plain, config) == {}


def test_chapter_12s_reader_names_every_point_and_reads_the_shipped_range():
    from attnmarl.notebook.explorers.decoys import decoy_baselines, decoy_name
    from attnmarl.train import CONFIGS, DECOY_DESIGNS, DECOY_DS, DECOY_MS

    names = {decoy_name(m, d, design) for m in DECOY_MS for d in DECOY_DS for design in DECOY_DESIGNS
             if d or design in ("entity", "mean", "flat")}
    assert names == {n for n in CONFIGS if n.startswith("decoys")}
    with pytest.raises(ValueError, match="no config"):
        decoy_name(6, 0, "oracle")  # without decoys there is nothing to hide
    ranges = decoy_baselines()
    assert set(ranges) == {(m, d) for m in DECOY_MS for d in DECOY_DS}
    # the range is simple_spread's at every d (the decoys replay d = 0's episodes)
    assert all(ranges[m, d] == ranges[m, 0] for m, d in ranges) and all(r < g for r, g in ranges.values())


# --------------------------------------------------------------------------------------------
# Level-Based Foraging
# --------------------------------------------------------------------------------------------

LBF3 = {"players": 3, "size": 10, "foods": 3}
FEW = {"worlds": 32, "steps": 4}  # 128 world states: enough to see every class, fast


def classes_by_hand(obs: np.ndarray, foods: int) -> dict[str, np.ndarray]:
    """Read from LBF's own triples (y, x, level), without the package's tokens: which food slots hold a food of each
    class, and which player slots hold a player, each (..., slots) bool."""
    triples = obs.reshape(*obs.shape[:-1], -1, 3)
    food, me, others = triples[..., :foods, :], triples[..., foods, :], triples[..., foods + 1:, :]
    seen, level, own = food[..., 0] != -1, food[..., 2], me[..., 2:3]
    team = own + np.where(others[..., 0] != -1, others[..., 2], 0).sum(-1, keepdims=True)
    return {"alone": seen & (level <= own), "together": seen & (level > own) & (level <= team),
            "beyond": seen & (level > team), "players": others[..., 0] != -1, "foods": seen}


def test_the_classes_are_read_from_what_the_player_sees():
    obs = lbf_readout_observations(LBF3, **FEW)
    assert obs.shape == (32 * 4, 3, 3 * (3 + 3))
    classes, hand = lbf_token_classes(obs, 3), classes_by_hand(obs, 3)
    assert classes.shape == (32 * 4, 3, 1 + 3 + 2)
    assert (classes[..., 0] == LBF_CLASSES.index("self")).all()
    for name in ("alone", "together", "beyond"):
        np.testing.assert_array_equal(classes[..., 1:4] == LBF_CLASSES.index(name), hand[name])
        assert hand[name].any()  # every class occurs in these worlds
    np.testing.assert_array_equal(classes[..., 4:] == LBF_CLASSES.index("players"), hand["players"])
    np.testing.assert_array_equal(classes[..., 1:] == -1, ~np.concatenate([hand["foods"], hand["players"]], -1))


def test_mean_pooling_gives_the_uniform_shares_exactly_and_they_are_counted_by_hand():
    actor_agent, config = agent("lbf3p-mean")
    shares = lbf_alpha(actor_agent.actor, config.scenario_kwargs, **FEW)
    assert set(shares["alpha"]) == set(shares["uniform"]) == set(LBF_CLASSES)
    for name in LBF_CLASSES:
        assert shares["alpha"][name] == pytest.approx(shares["uniform"][name], abs=1e-6)
    hand = classes_by_hand(lbf_readout_observations(LBF3, **FEW), 3)
    counted = hand["foods"].any(-1)
    present = 1 + hand["foods"].sum(-1) + hand["players"].sum(-1)
    assert shares["observations"] == counted.sum() > 0
    assert shares["uniform"]["self"] == pytest.approx((1 / present)[counted].mean())
    for name in ("alone", "together", "beyond", "players"):
        assert shares["uniform"][name] == pytest.approx((hand[name].sum(-1) / present)[counted].mean())


@pytest.mark.parametrize("m", sorted(LBF_SCENARIOS))
def test_the_shares_sum_to_one_and_attention_is_not_pooling(m):
    actor_agent, config = agent(f"lbf{m}p-entity")
    shares = lbf_alpha(actor_agent.actor, config.scenario_kwargs, **FEW)
    assert sum(shares["alpha"].values()) == pytest.approx(1.0)
    assert sum(shares["uniform"].values()) == pytest.approx(1.0)
    assert all(0.0 < share < 1.0 for share in shares["alpha"].values())
    assert shares["alpha"] != pytest.approx(shares["uniform"], abs=1e-4)  # an untrained softmax is not uniform


def food_forced(actor, keep: str | None = None):
    """``actor`` with its weights set so that every food token's score is 40 and every other token's 0: alpha on the
    foods a player sees is uniform, on everything else about e^-40. With ``keep``, the foods of every other class
    are also masked out of its keys (classes read by hand), so alpha lands on the foods of that class alone
    wherever the player sees one."""
    net = actor.nets[0]
    d, d_head = net.d, net.d // net.heads
    with torch.no_grad():
        for parameter in net.parameters():
            parameter.zero_()
        net.ln_attn.weight.fill_(1.0)
        self_flag, food_flag = net.embed.in_features - 3, net.embed.in_features - 2  # flags: self, food, player
        net.embed.weight[[0, 1], food_flag] = torch.tensor([1.0, -1.0])  # LN(e_food) = (4, -4, 0, ...)
        net.embed.weight[[2, 3], self_flag] = torch.tensor([1.0, -1.0])  # LN(e_self) = (0, 0, 4, -4, 0, ...)
        for h in range(net.heads):
            net.W_q.weight[h * d_head, 2] = 10.0  # q_h = (40, 0, ...)
            net.W_kv.weight[h * d_head, 0] = 1.0  # W_k,h^T q_h = (40, 0, ...): score 40 * 4 / 4 on a food
    assert net.W_kv.weight.shape == (2 * d, d)
    if keep is not None:
        masks, foods = actor.masks, actor.view.foods

        def kept(o):
            hand = classes_by_hand(o.numpy(), foods)
            mask = masks(o)[0].clone()
            mask[..., 1:1 + foods] &= torch.as_tensor(hand[keep])
            return [mask]

        actor.masks = kept
    return actor


def test_an_actor_that_looks_only_at_food_spreads_its_weight_over_the_foods_it_sees():
    actor_agent, config = agent("lbf3p-entity")
    shares = lbf_alpha(food_forced(actor_agent.actor), config.scenario_kwargs, **FEW)["alpha"]
    hand = classes_by_hand(lbf_readout_observations(LBF3, **FEW), 3)
    counted, foods = hand["foods"].any(-1), hand["foods"].sum(-1)
    assert shares["self"] + shares["players"] < 1e-12
    for name in ("alone", "together", "beyond"):
        assert shares[name] == pytest.approx((hand[name].sum(-1) / np.maximum(foods, 1))[counted].mean())


@pytest.mark.parametrize("keep", ["alone", "together", "beyond"])
def test_an_actor_forced_onto_one_class_is_reported_there(keep):
    actor_agent, config = agent("lbf3p-entity")
    shares = lbf_alpha(food_forced(actor_agent.actor, keep), config.scenario_kwargs, **FEW)["alpha"]
    hand = classes_by_hand(lbf_readout_observations(LBF3, **FEW), 3)
    counted = hand["foods"].any(-1)
    assert shares[keep] == pytest.approx(hand[keep].any(-1)[counted].mean())  # wherever the player sees one
    assert all(shares[name] == 0.0 for name in ("alone", "together", "beyond") if name != keep)


def test_the_lbf_read_out_refuses_what_it_cannot_read():
    flat, config = agent("lbf3p-flat")
    with pytest.raises(ValueError, match="no attention weights"):
        lbf_alpha(flat.actor, config.scenario_kwargs)
    spread, _ = agent("pi-spread6-entity")
    with pytest.raises(ValueError, match="not built for Level-Based Foraging"):
        lbf_alpha(spread.actor, LBF3)
    entity, _ = agent("lbf3p-entity")
    with pytest.raises(ValueError, match="built for 3 players and 3 foods"):
        lbf_alpha(entity.actor, {"players": 6, "size": 14, "foods": 6}, **FEW)
    with pytest.raises(ValueError, match="built for 3 players and 3 foods"):
        lbf_alpha(entity.actor, {**LBF3, "foods": 4}, **FEW)
    with pytest.raises(ValueError, match="scenario_kwargs must be a mapping"):
        lbf_alpha(entity.actor, [("players", 3)])
    with pytest.raises(ValueError, match="takes the arguments"):
        lbf_alpha(entity.actor, {**LBF3, "N": 3})
    for bad in ({"worlds": 0}, {"steps": 0}, {"steps": 2.5}, {"seed": -1}):
        with pytest.raises(ValueError, match="^(worlds|steps|seed) must be"):
            lbf_alpha(entity.actor, LBF3, **bad)
