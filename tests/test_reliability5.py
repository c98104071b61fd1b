"""Reliability, fifth pass (issue #44's hostile probe, /work/probe): one test per reported defect.

Each test gives the input that used to crash deep inside torch or numpy, pass silently, or be refused with a
message about something else, and checks the clear ``ValueError`` that now names the mistake.
"""
import numpy as np
import pytest

from attnmarl.algos import mappo
from attnmarl.algos.mappo import MAPPOConfig
from attnmarl.envs import decoys_port, make_batched
from attnmarl.envs.decoys import observation_layout
from attnmarl.envs.lbf import BatchedForaging, lbf_tokens, make_lbf_reference
from attnmarl.notebook.explorers import decoys as decoy_explorer
from attnmarl.selection import decoy_alpha

DECOYS = "simple_spread_decoys"


@pytest.fixture(scope="module")
def entity_actor():
    config = MAPPOConfig(scenario=DECOYS, scenario_kwargs={"N": 3, "decoys": 1}, actor="entity")
    return mappo.make_agent(config).actor


@pytest.mark.parametrize("scenario_kwargs", [[("N", 3)], None])
def test_decoy_alpha_refuses_scenario_kwargs_that_are_no_mapping(entity_actor, scenario_kwargs):
    with pytest.raises(ValueError, match="scenario_kwargs must be a mapping"):
        decoy_alpha(entity_actor, scenario_kwargs)


@pytest.mark.parametrize("worlds", [-5, 0, 2.5])
def test_decoy_alpha_names_worlds_not_num_envs(entity_actor, worlds):
    with pytest.raises(ValueError, match="^worlds must be"):
        decoy_alpha(entity_actor, {"N": 3, "decoys": 1}, worlds=worlds)


@pytest.mark.parametrize("m, d", [("3", 1), (3, -1), (3, 2), (4, 1), (True, 1)])
def test_decoy_shares_and_name_refuse_a_point_without_a_config(m, d):
    with pytest.raises(ValueError, match="must be|no config"):
        decoy_explorer.decoy_name(m, d, "entity")
    with pytest.raises(ValueError, match="must be|no config"):
        decoy_explorer.decoy_shares(m, d, "entity")


LAYOUT = observation_layout(3, 1)


@pytest.fixture(scope="module")
def world_obs():
    """One world's decoy observations (m, obs_dim), as the reference's target_greedy_policy passes them."""
    return np.asarray(make_batched(DECOYS, 2, N=3, decoys=1).reset())[0].astype(np.float64)


@pytest.mark.parametrize("obs, message", [
    (np.full((2, LAYOUT.obs_dim), np.nan), "NaN"),
    (np.array([["a"] * LAYOUT.obs_dim]), "real numbers"),
    ([[1, 2], [3]], "rectangular"),
])
def test_decoy_tokens_refuses_observations_that_are_not_finite_numbers(obs, message):
    with pytest.raises(ValueError, match=message):
        decoys_port.decoy_tokens(obs, 0, N=3, decoys=1)


def test_decoy_tokens_refuses_is_target_entries_that_are_not_bits(world_obs):
    obs = world_obs.copy()
    obs[:, LAYOUT.landmark_columns[:, 2]] = 0.5
    with pytest.raises(ValueError, match="is_target entries .* must be 0 or 1"):
        decoys_port.decoy_tokens(obs, 0, oracle=True, N=3, decoys=1)


def test_target_view_refuses_bad_observations_and_layouts(world_obs):
    batched = np.asarray(make_batched(DECOYS, 2, N=3, decoys=1).reset())
    with pytest.raises(ValueError, match="one row per agent"):
        decoys_port.target_view(batched, LAYOUT)
    with pytest.raises(ValueError, match="layout must be an ObservationLayout"):
        decoys_port.target_view(world_obs, None)
    with pytest.raises(ValueError, match="NaN"):
        decoys_port.target_view(np.full_like(world_obs, np.nan), LAYOUT)
    with pytest.raises(ValueError, match="one row per agent"):
        decoys_port.target_view(world_obs, observation_layout(4, 1))
    zeroed, blurred = world_obs.copy(), world_obs.copy()
    zeroed[:, LAYOUT.landmark_columns[:, 2]] = 0
    blurred[:, LAYOUT.landmark_columns[:, 2]] *= 0.999
    with pytest.raises(ValueError, match="mark m = 3 landmarks as targets"):
        decoys_port.target_view(zeroed, LAYOUT)
    with pytest.raises(ValueError, match="must be 0 or 1"):
        decoys_port.target_view(blurred, LAYOUT)
    as_list = decoys_port.target_view(world_obs.tolist(), LAYOUT)  # a list of rows is read as the array
    assert np.array_equal(as_list, decoys_port.target_view(world_obs, LAYOUT))


@pytest.mark.parametrize("obs, message", [(np.full((2, 3, 15), "a"), "real numbers"),
                                          (np.full((2, 3, 15), np.nan, np.float32), "NaN")])
def test_lbf_tokens_refuses_observations_that_are_not_finite_numbers(obs, message):
    with pytest.raises(ValueError, match=message):
        lbf_tokens(obs, 2)


def test_load_state_refuses_a_player_off_the_grid():
    reference = make_lbf_reference(3, 8, 2, 2, 50, seed=1)
    reference.reset()
    reference.unwrapped.players[1].position = (9, 9)
    with pytest.raises(ValueError, match="off the 8 x 8 grid"):
        BatchedForaging(2, 3, 8, 2, 2).load_state(0, reference)
