"""Reliability, fifth pass (issue #44's hostile probe, /work/probe): one test per reported defect.

Each test gives the input that used to crash deep inside torch or numpy, pass silently, or be refused with a
message about something else, and checks the clear ``ValueError`` that now names the mistake.
"""
import numpy as np
import pytest
import torch

from attnmarl.algos import mappo, mat
from attnmarl.algos.mappo import MAPPOConfig
from attnmarl.algos.mat import MATConfig, order_scores, random_orders
from attnmarl.envs import decoys_port, make_batched
from attnmarl.envs.decoys import observation_layout
from attnmarl.envs.lbf import BatchedForaging, lbf_tokens, make_lbf_reference
from attnmarl.nets.mat import MultiAgentTransformer
from attnmarl.notebook.explorers import decoys as decoy_explorer
from attnmarl.notebook.explorers.synthesis import range_shares
from attnmarl.selection import decoy_alpha
from attnmarl.stats import Interval, bootstrap_difference, iqm, prediction_interval, welch_difference

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


# --------------------------------------------------------------------------------------------
# MAT
# --------------------------------------------------------------------------------------------


def mat_net(decoder: bool = True) -> MultiAgentTransformer:
    return MultiAgentTransformer("simple_spread", {"N": 3}, 3, 18, 5, decoder=decoder)


@pytest.fixture(scope="module")
def spread_obs():
    return torch.as_tensor(make_batched("simple_spread", 4, N=3).reset(), dtype=torch.float32)


@pytest.mark.parametrize("decoder", [True, False])
@pytest.mark.parametrize("choose, message", [
    (lambda y: y.argmax(-1, keepdim=True), "must have shape"),
    (lambda y: torch.full((y.shape[0],), -1), r"in \[0, 5\)"),
    (lambda y: torch.full((y.shape[0],), 5), r"in \[0, 5\)"),  # the start token
    (lambda y: torch.full((y.shape[0],), 9), r"in \[0, 5\)"),
    (lambda y: None, "tensor of integer actions"),
    (lambda y: y.argmax(-1).numpy(), "tensor of integer actions"),
    (lambda y: y.softmax(-1), "tensor of integer actions"),
    (lambda y: y.argmax(-1).float(), "tensor of integer actions"),
    (lambda y: y.argmax(-1)[:2], "must have shape"),
    (lambda y: torch.tensor(1), "must have shape"),
])
def test_decode_checks_what_choose_returns(spread_obs, decoder, choose, message):
    with torch.no_grad(), pytest.raises(ValueError, match=f"choose's actions .*{message}|{message}"):
        mat_net(decoder).decode(spread_obs, choose)


def test_decode_refuses_a_choose_that_is_not_callable_and_a_cache_that_is_not_a_bool(spread_obs):
    net = mat_net()
    with pytest.raises(ValueError, match="choose must be a function"):
        net.decode(spread_obs, "argmax")
    net.cache = "no"
    with pytest.raises(ValueError, match="cache must be True or False"):
        net.decode(spread_obs, lambda y: y.argmax(-1))


def test_mat_refuses_a_decoder_that_is_not_a_bool_and_names_d():
    with pytest.raises(ValueError, match="decoder must be True or False"):
        MultiAgentTransformer("simple_spread", {"N": 3}, 3, 18, 5, decoder="yes")
    with pytest.raises(ValueError, match="^d must be a positive integer"):
        MultiAgentTransformer("simple_spread", {"N": 3}, 3, 18, 5, d=0)


def test_mat_agent_checks_act_and_env_actions_arguments(spread_obs):
    agent = mat.make_agent(MATConfig())
    with pytest.raises(ValueError, match="generator must be a torch.Generator"):
        agent.act(spread_obs, generator="seed")
    with pytest.raises(ValueError, match="deterministic must be True or False"):
        agent.act(spread_obs, deterministic="yes")
    with pytest.raises(ValueError, match="integer actions"):
        agent.env_actions(torch.zeros(4, 3))
    with pytest.raises(ValueError, match=r"in \[0, 5\)"):
        agent.env_actions(torch.full((4, 3), 7))
    assert agent.env_actions(torch.ones(4, 3, dtype=torch.long)).tolist() == [[1] * 3] * 4


def test_mat_config_says_which_scenarios_it_supports():
    """Level-Based Foraging is refused by name, with the scenarios MAT trains on (chapter 12's decoy task among them:
    tests/test_mat.py trains it there)."""
    with pytest.raises(ValueError, match=r"MAT supports the scenarios \['simple_spread', 'collect_treasure', "
                                         r"'simple_spread_decoys'\] only") as refused:
        MATConfig(scenario="lbforaging", scenario_kwargs={"players": 3})
    assert "needs a cooperative scenario" not in str(refused.value)
    decoys = MATConfig(scenario="simple_spread_decoys", scenario_kwargs={"N": 3, "decoys": 1})
    assert decoys.scenario_kwargs["decoys"] == 1


@pytest.mark.parametrize("count, m, generator, message", [
    (-1, 3, torch.Generator(), "count must be a non-negative integer"),
    (10**12, 3, torch.Generator(), "count must be at most"),
    (10**9, 1000, torch.Generator(), "allocates at most"),
    (2, 3, 0, "generator must be a torch.Generator"),
    (2, 2.5, torch.Generator(), "m must be a positive integer"),
    (2, 0, torch.Generator(), "m must be a positive integer"),
])
def test_random_orders_checks_its_arguments_before_allocating(count, m, generator, message):
    with pytest.raises(ValueError, match=message):
        random_orders(count, m, generator)


def test_random_orders_of_no_count_is_empty_and_none_draws_from_torchs_generator():
    assert random_orders(0, 3, torch.Generator()).shape == (0, 3)
    assert sorted(random_orders(2, 3, None)[1].tolist()) == [0, 1, 2]


def test_order_scores_refuses_more_orders_than_an_evaluation_plays(tmp_path):
    with pytest.raises(ValueError, match="orders must be at most"):
        order_scores(tmp_path / "never-read.pt", orders=10**9, episodes=1)


def test_index_checks_spell_their_plurals():
    from attnmarl.checks import check_indices

    with pytest.raises(ValueError, match="integer actions ") as refused:
        check_indices("a", torch.zeros(2), 5, what="action")
    assert "actiones" not in str(refused.value)
    with pytest.raises(ValueError, match="agent indices in"):
        check_indices("order", torch.tensor([7]), 3, what="agent index")


# --------------------------------------------------------------------------------------------
# statistics
# --------------------------------------------------------------------------------------------


def test_interval_refuses_an_unknown_statistic_and_a_welch_estimate_outside_its_bounds():
    with pytest.raises(ValueError, match="statistic must be one of"):
        Interval(0.0, -1.0, 1.0, 0.95, "bogus", 10, 10)
    with pytest.raises(ValueError, match="holds its estimate"):
        Interval(5.0, -1.0, 1.0, 0.95, "mean", 10, 10)
    assert Interval(5.0, -1.0, 1.0, 0.95, "iqm", 10, 10, "percentile bootstrap").estimate == 5.0  # can happen


def test_statistics_refuse_masked_arrays_tensors_with_grad_generators_and_single_numbers():
    with pytest.raises(ValueError, match="masked array"):
        welch_difference(np.ma.array([1.0, 2.0, 999.0], mask=[0, 0, 1]), [0.0, 1.0, 1.5, 2.5])
    with pytest.raises(ValueError, match="requires grad"):
        welch_difference(torch.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True), [0.0, 1.0, 1.5, 2.5])
    with pytest.raises(ValueError, match="got a generator"):
        iqm(x for x in [1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="a single number"):
        iqm(3.0)


@pytest.mark.parametrize("call", [
    lambda: welch_difference([1e200, 2e200, 3e200], [0.0, 1e200, 2e200]),
    lambda: welch_difference([1e308, -1e308, 1e308], [0.0, 1.0, 2.0]),
    lambda: prediction_interval([1e308, -1e308, 1e308]),
])
def test_statistics_say_when_float64_overflows(call):
    with pytest.raises(ValueError, match="overflows"):
        call()


def test_bootstrap_refuses_draws_larger_than_the_machine_allows():
    with pytest.raises(ValueError, match="the bootstrap's draws would hold"):
        bootstrap_difference(np.zeros(10**6) + np.arange(10**6), np.arange(10**6) * 2.0)


@pytest.mark.parametrize("runs, message", [
    ([{"return": 1.0}], r"runs\[0\] must be a run summary with a final_return"),
    ([{"final_return": float("nan")}], r"runs\[0\]\['final_return'\] must be a finite number"),
    ([{"final_return": float("inf")}], "must be a finite number"),
    ([{"final_return": "-20"}], "must be a real number"),
    ({"final_return": -20.0}, r"wrap one run in a list"),
    (None, "runs must be a list of run summaries"),
])
def test_range_shares_refuses_runs_without_a_finite_final_return(runs, message):
    with pytest.raises(ValueError, match=message):
        range_shares(runs, 3)


@pytest.mark.parametrize("sight", [-2, 0])
def test_lbforaging_states_the_bound_on_sight_that_holds(sight):
    """sight = -2 was told 'must be >= 0', and then sight = 0 was refused too: the first refusal names the bound."""
    from attnmarl.envs import make_reference

    with pytest.raises(ValueError, match="sight must be a positive integer"):
        make_reference("lbforaging", sight=sight)


def test_iqm_still_names_ragged_scores():
    with pytest.raises(ValueError, match="scores must hold numbers only"):
        iqm([[1.0], [1.0, 2.0]])
