"""Chapter 12's read-out: how much of an entity actor's alpha lands on the decoys (attnmarl.selection)."""
import pytest
import torch

from attnmarl.algos.mappo import make_agent
from attnmarl.selection import decoy_alpha, uniform_decoy_share
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
