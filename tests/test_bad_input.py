"""The package under bad input and interruption (issue 15): no silent wrong answer, no lost checkpoint.

Bad input to the public API gets a ``ValueError`` that names the argument and the bad value (on a
command line, argparse's usage error, before any training) — never a NaN, a silent wrap-around, a
default taken for a zero, or an error from deep inside torch or numpy. A training run killed at any
moment leaves no file that loads as something it is not. The checks live in :mod:`attnmarl.checks`,
:mod:`attnmarl.costs`, :mod:`attnmarl.devices` and :mod:`attnmarl.files`.
Hot-path cost: one sum per forward pass of a network (its observations), per attention layer (x),
per masked softmax (its weights) and per rollout step (the policy's outputs, the sampled logits).

Every bad-input check of the test suite, in one place (test names without their ``test_``; a line in
parentheses is a case that must keep working):

======================================================  ============================================================
this module (test_...)                                  what is refused
======================================================  ============================================================
self_attention_refuses_non_finite_input                 NaN or ±inf in x, with and without alpha
score_functions_refuse_non_finite_queries_and_keys      NaN or inf in q or k of the score functions
masked_softmax_never_returns_nan                        scores NaN or +inf, or a row all -inf (-inf on some keys
                                                        still works)
dtype_and_device_mismatches_are_named_before_torch_sees_them
                                                        float64 x, W_v, keys or W against float32 weights
causal_mask_refuses_sizes_that_are_not_positive_integers
                                                        m = -1, 0, 2.0, True
fused_path_never_builds_the_m_by_m_scores_even_when_d_q_differs_from_d_out
                                                        need_weights=False with d_q != d_out runs on the fused
                                                        kernel alone (no m x m scores) and gives the c of the
                                                        unfused path
negative_or_zero_sizes_are_named                        negative or zero sizes of AgentLinear, AgentHeads,
                                                        ConcatCritic, AttentionCritic (depth = 0), Actor (d_y = 0
                                                        actions), EntityActor
networks_refuse_non_finite_observations_and_foreign_dtypes
                                                        NaN, inf or float64 observations, in every critic and actor
agent_linear_and_entity_attention_name_a_dtype_mismatch
                                                        float64 h or tokens
nonsense_configs_are_refused                            MAPPOConfig: gamma outside (0, 1], lambda outside [0, 1],
                                                        negative learning rates, clip or entropy coefficients,
                                                        max_grad_norm <= 0, non-numbers, depth = 0, bad sizes,
                                                        total_steps 0 or less than one update, a negative or
                                                        fractional seed
legitimate_edge_configs_still_work                      (lr = 0, gamma = 1 and a single update stay allowed)
every_named_config_and_shipped_checkpoint_passes_the_checks
                                                        (every CONFIGS entry and every shipped .pt still loads)
an_env_spec_without_actions_is_refused                  EnvSpec with n_actions = 0, or a type for too few agents
nan_logits_are_refused_instead_of_sampling_an_action    NaN logits in sample_actions; a NaN policy in act(),
                                                        discrete and continuous, greedy and sampled
a_seed_must_be_a_non_negative_integer                   seeds -1, 2.5, "0" in the ports and their reset, evaluate,
                                                        random_policy, record_episode, MAPPOConfig
an_untrusted_file_is_refused_plainly_without_torchs_advice
                                                        a pickle that would run code, bytes that are no torch file:
                                                        "not a checkpoint this book trusts", without torch's
                                                        weights_only advice (MAPPO and seq2seq)
empty_and_truncated_files_are_value_errors              empty or half-written checkpoint files
a_checkpoint_without_one_of_its_parts_is_a_value_error  no 'config', 'state_dict' or 'metadata' (was KeyError)
a_checkpoint_whose_config_is_nonsense_is_a_value_error  a stored config the checks refuse
nan_weights_are_neither_saved_nor_loaded                saving or loading NaN or inf weights (load_checkpoint,
                                                        load_agent, load_policy, load_actor_from, seq2seq)
a_save_that_fails_half_way_leaves_the_old_checkpoint_whole
                                                        an interrupted save: the old file stays whole, no temporary
                                                        file is left (MAPPO and seq2seq)
named_config_refuses_a_budget_it_would_not_train        steps 0 (was: the full default budget), negative, less than
                                                        one update
the_command_line_refuses_bad_arguments_before_training  --steps 0 or too few, --threads 0, --seed -1 or 1.5,
                                                        --final-episodes 0, --eval-episodes 0, --evals -1, an --out
                                                        that cannot be a folder
run_refuses_bad_arguments_before_training               the same through run(): final_episodes 0, eval_episodes -1,
                                                        steps 0, seed -2
run_refuses_a_folder_it_cannot_write_before_training    an out below a file, or read-only (unless root)
the_transfer_command_line_refuses_bad_arguments_before_evaluating
                                                        --episodes 0, --seeds -1, an --out in no writable folder
the_seq2seq_command_line_refuses_bad_numbers_with_a_usage_error
                                                        --threads 0, --steps -5, --seed -1, --n-test many
a_summary_beside_files_of_another_run_is_left_out_of_the_index
                                                        a run summary beside another run's .pt or .csv
a_run_killed_at_any_moment_never_leaves_files_that_load_as_something_they_are_not
                                                        SIGKILL in training, inside torch.save, after each of the
                                                        three renames: only whole files, and the index lists the old
                                                        run, the new run or neither
episode_explorers_refuse_heads_steps_and_agents_that_do_not_exist
                                                        head "0" (was: head 2 labelled head 0), "3", "-1", 0; t =
                                                        26, -1, 2.0; agent 3, -1 (critic and policy explorers)
head_1_is_the_first_head_and_mean_is_the_mean           (what the head labels select)
the_alignment_explorer_refuses_an_example_that_is_not_there
                                                        example -1 (was: the last one), 2, 99
a_control_without_values_is_a_value_error               Slider or Dropdown with no values (was IndexError)
the_arena_probe_refuses_a_fractional_agent              moved = 1.5
======================================================  ============================================================

=========================  =========================================================================================
elsewhere in the suite     tests (test_...) and what they refuse
=========================  =========================================================================================
test_attention.py          bad_input_raises_value_error (shapes, m = 0, masks of the wrong shape or dtype, every key
                           masked), bad_sizes_raise_value_error, score_function_shape_errors (score shapes, a mask
                           that does not broadcast, x not a tensor), matches_torch_multihead_attention (an
                           nn.MultiheadAttention with biases)
test_nets.py               wrong_observations_are_refused (shape, dtype, not a tensor),
                           bad_construction_and_masks_are_refused (agent types, m = 0, masks)
test_policies.py           bad_input_is_refused_with_a_clear_message, a_checkpoint_of_one_actor_refuses_another,
                           absolute_tokens_are_the_world_state_of_the_port (simple_spread only),
                           one_entity_actor_runs_any_number_of_agents (a flat actor's weights at another m)
test_mappo.py              bad_configs_are_refused (critic, actor, minibatches, config name),
                           not_a_checkpoint_is_refused, a_checkpoint_refuses_another_architecture,
                           a_diverging_run_stops_loudly (RuntimeError on non-finite targets or loss)
test_transfer.py           an_actor_whose_shapes_depend_on_m_cannot_move_to_another_m,
                           fine_tuning_starts_from_the_checkpoint_actor_and_refuses_another_design,
                           closed_share_and_the_m_argument,
                           attention_concentration_is_between_one_entity_and_all_of_them,
                           padded_and_masked_tokens_let_one_batch_mix_team_sizes
test_envs.py               bad_input_is_a_value_error_naming_the_problem (scenarios, arguments, num_envs, episodes,
                           tokens), bad_actions_are_value_errors (shape, range, dtype, NaN)
test_envs_parity.py        load_state_refuses_a_mismatched_env
test_lbf.py                bad_actions (shape, range, dtype), bad_games (too many players for the grid, sizes, flags,
                           penalty), bad_states_and_observations (a mismatched or unreset reference, a state its
                           spawn never makes, an observation of the wrong width)
test_seq2seq.py            split_is_disjoint_complete_and_seeded (test_fraction), vocab_round_trip_and_bad_input,
                           translate_returns_aligned_tokens_and_refuses_bad_text, checkpoint_round_trip_and_refusals
                           (architecture, config, keys)
test_hard_attention.py     batches_hold_the_right_answer_and_are_reproducible (n_pairs),
                           sampling_adds_variance_on_top_of_minibatch_noise (estimators), bad_mode_is_refused
test_scoring_explorers.py  bad_input_raises_value_error (score name, temperature, non-finite query, shapes, all keys
                           masked, unknown control)
test_mpe_explorers.py      bad_input_is_a_value_error (scenario, t, agent index, policy, a batch for one
                           observation)
test_seq2seq_explorers.py  bad_input_is_a_value_error (untranslatable text), explorers_check_their_models
test_value_explorers.py    value_sensitivity_rejects_bad_shapes, binned_mean,
                           critic_alpha_needs_an_attention_critic,
                           the_probe_starts_from_the_mpe2_state_and_moving_an_agent_changes_alpha_and_values (agent
                           index, t), the_shipped_curves_and_index_agree (no such curve),
                           alpha_statistics_of_extreme_weightings (shape)
test_policy_explorers.py   policies_without_attention_or_with_continuous_actions_are_refused,
                           the_probe_starts_from_the_mpe2_state_and_moving_a_landmark_moves_the_weights (entity
                           index, t)
test_widgets.py            bad_controls_raise_value_error (defaults, static values, names, controls, frames, size),
                           arena_panel_draws_and_checks_its_input, picture_panel_embeds_its_pixels_and_checks_its_input
                           (shape, values outside [0, 1], boxes)
test_map.py                vision_bad_input_is_a_value_error (image shape, NaN, n, seed, n_digits, steps, a glimpse
                           without alpha, channels), relational_bad_input_is_a_value_error (token shape, NaN, actions
                           out of range or not long, batch, updates, goal colour, layout, step t),
                           the_vision_explorer_shows_the_image_alpha_and_both_models (image index, overlay shapes)
test_reliability.py        issue 24, one section per class: budgets that train nothing or another number of steps,
                           file sets written as one unit, strings for flags and numbers, checkpoints in the other
                           action space, attention overflow and empty batches, results kept when the disk fails,
                           runs that would replace another and Ctrl-C, flipped bytes in checkpoints, policies in
                           another game, minibatches too small to normalise; then panels with NaN, worlds and
                           networks too large to build, integers beyond 32 bits, damaged summaries, missing
                           fine-tuning checkpoints, actions mpe2 cannot take
=========================  =========================================================================================
"""
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import warnings
from dataclasses import asdict, replace
from functools import partial
from pathlib import Path

import numpy as np
import pytest
import torch

from attnmarl import load_policy
from attnmarl import seq2seq as s2s
from attnmarl import train as train_module
from attnmarl.algos.mappo import EnvSpec, MAPPOConfig, make_agent, sample_actions
from attnmarl.attention import (
    MultiHeadSelfAttention,
    SelfAttention,
    additive_score,
    causal_mask,
    dot_score,
    general_score,
    masked_softmax,
    self_attention,
)
from attnmarl.checkpoints import load_actor_from, load_agent, load_checkpoint, save_checkpoint
from attnmarl.envs import evaluate, make_batched, random_policy
from attnmarl.files.sealed import seal
from attnmarl.nets import (
    Actor,
    AgentHeads,
    AgentLinear,
    AttentionCritic,
    AttentionPolicy,
    ConcatCritic,
    EntityActor,
    EntityAttention,
)
from attnmarl.notebook.explorers.mpe import record_episode
from attnmarl.notebook.explorers.policy import PolicyAlpha, policy_episode_frame
from attnmarl.notebook.explorers.seq2seq import alignment_explorer
from attnmarl.notebook.explorers.value import (
    alpha_episode_frame,
    make_probe,
    probe_values,
    select_head,
    value_checkpoint,
)
from attnmarl.notebook.widgets import Dropdown, Slider
from attnmarl.train import main as train_main
from attnmarl.train import named_config, run, write_index
from attnmarl.transfer import main as transfer_main

NAN, INF = float("nan"), float("inf")
TINY = MAPPOConfig("simple_spread", {"N": 3}, num_envs=8, rollout_steps=25, total_steps=200, d_x=8, heads=2, d_q=4,
                   d_out=4, critic_hidden=8, actor_hidden=8, entity_d=8, entity_ff=8)


@pytest.fixture(autouse=True)
def _one_thread(one_thread):
    """Everything here is small: one torch thread (conftest's fixture) for every test."""


def with_value(shape: tuple[int, ...], value: float, where: tuple[int, ...] | None = None) -> torch.Tensor:
    """Random numbers of ``shape`` with ``value`` (NaN, inf) at index ``where`` (default: the first entry)."""
    x = torch.randn(*shape)
    x[where or (0,) * len(shape)] = value
    return x


# ---- attention: NaN, dtype and device, sizes ---------------------------------------------------

@pytest.mark.parametrize("value", [NAN, INF, -INF])
def test_self_attention_refuses_non_finite_input(value):
    layer = MultiHeadSelfAttention(4, 3, 2, heads=2)
    for need_weights in (True, False):
        with pytest.raises(ValueError, match=r"x holds .* \(the first at index \(1, 2, 3\)\)"):
            layer(with_value((2, 3, 4), value, (1, 2, 3)), need_weights=need_weights)


@pytest.mark.parametrize("score", [
    dot_score,
    lambda q, k: general_score(q, k, torch.eye(4)),
    lambda q, k: additive_score(q, k, torch.ones(3, 4), torch.ones(3, 4), torch.ones(3)),
])
def test_score_functions_refuse_non_finite_queries_and_keys(score):
    with pytest.raises(ValueError, match="queries q holds 1 NaN"):
        score(with_value((2, 4), NAN), torch.randn(3, 4))
    with pytest.raises(ValueError, match="keys k holds 0 NaN and 1 infinite"):
        score(torch.randn(2, 4), with_value((3, 4), INF))


@pytest.mark.parametrize("scores,problem", [
    (torch.tensor([[1.0, NAN, 0.0]]), "1 NaN and 0 \\+inf"),
    (torch.tensor([[1.0, INF, 0.0]]), "0 NaN and 1 \\+inf"),
    (torch.tensor([[1.0, 2.0], [-INF, -INF]]), "1 row\\(s\\) score every key -inf"),
])
def test_masked_softmax_never_returns_nan(scores, problem):
    with pytest.raises(ValueError, match=problem):
        masked_softmax(scores)
    partly = torch.tensor([[0.0, -INF, 0.0]])  # -inf on some keys still gives weights, as before
    torch.testing.assert_close(masked_softmax(partly), torch.tensor([[0.5, 0.0, 0.5]]))


def test_dtype_and_device_mismatches_are_named_before_torch_sees_them():
    layer = SelfAttention(4, 3, 2)
    with pytest.raises(ValueError, match=r"x has dtype torch.float64, the layer's weights torch.float32"):
        layer(torch.randn(5, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="W_v has dtype torch.float64, W_q torch.float32"):
        self_attention(torch.randn(5, 4), torch.randn(3, 4), torch.randn(3, 4), torch.randn(2, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="keys k has dtype torch.float64, the queries q torch.float32"):
        dot_score(torch.randn(2, 4), torch.randn(3, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="W has dtype torch.float64"):
        general_score(torch.randn(2, 4), torch.randn(3, 4), torch.eye(4, dtype=torch.float64))
    layer.double()  # converting the layer is the way out the message suggests
    assert layer(torch.randn(5, 4, dtype=torch.float64))[0].dtype == torch.float64


@pytest.mark.parametrize("m", [-1, 0, 2.0, True])
def test_causal_mask_refuses_sizes_that_are_not_positive_integers(m):
    with pytest.raises(ValueError, match=f"m must be a positive integer; got {m!r}"):
        causal_mask(m)


def test_fused_path_never_builds_the_m_by_m_scores_even_when_d_q_differs_from_d_out():
    """Only the fused (flash) kernel is allowed here: it needs one width for q, k and v, and it never
    stores the m x m scores. Before, d_q != d_out made PyTorch fall back to its plain kernel."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    torch.manual_seed(0)
    x = torch.randn(3, 11, 6)
    mask = torch.arange(11) < torch.tensor([[11], [4], [1]])
    for d_q, d_out in [(3, 8), (8, 3), (5, 5)]:
        for scale in (False, True):
            layer = MultiHeadSelfAttention(6, d_q, d_out, heads=2, scale=scale)
            with sdpa_kernel([SDPBackend.FLASH_ATTENTION]):
                fused, none = layer(x, mask, need_weights=False)
            plain, alpha = layer(x, mask)
            assert none is None and alpha.shape == (3, 2, 11, 11) and fused.shape == (3, 11, 2 * d_out)
            torch.testing.assert_close(fused, plain, atol=1e-5, rtol=1e-5)


# ---- networks: sizes, observations --------------------------------------------------------------

@pytest.mark.parametrize("build,named", [
    (lambda: AgentLinear(3, -1, 4), "d_in must be a positive integer; got -1"),
    (lambda: AgentLinear(0, 2, 4), "m must be a positive integer; got 0"),
    (lambda: AgentHeads(3, 4, -2), "d_hidden must be a positive integer; got -2"),
    (lambda: ConcatCritic(3, 18, d_x=-1), "d_x must be a positive integer; got -1"),
    (lambda: ConcatCritic(3, 18, d_hidden=0), "d_hidden must be a positive integer; got 0"),
    (lambda: AttentionCritic(3, 18, depth=0), "depth must be a positive integer; got 0"),
    (lambda: AttentionCritic(3, -18), "obs_dim must be a positive integer; got -18"),
    (lambda: Actor(3, 18, -1), "d_y must be a positive integer; got -1"),
    (lambda: Actor(3, 18, 0), "d_y must be a positive integer; got 0"),
    (lambda: Actor(3, 18, 5, d_hidden=-64), "d_hidden must be a positive integer; got -64"),
    (lambda: EntityActor("simple_spread", {"N": 3}, 3, 18, 5, d_ff=-1), "d_ff must be a positive integer; got -1"),
])
def test_negative_or_zero_sizes_are_named(build, named):
    with pytest.raises(ValueError, match=named):
        build()


NETS = {
    "attention critic": lambda: AttentionCritic(3, 18),
    "concat critic": lambda: ConcatCritic(3, 18),
    "flat actor": lambda: Actor(3, 18, 5),
    "attention policy": lambda: AttentionPolicy(3, 18, 5),
    "entity actor": lambda: EntityActor("simple_spread", {"N": 3}, 3, 18, 5),
}


@pytest.mark.parametrize("net", NETS.values(), ids=NETS.keys())
def test_networks_refuse_non_finite_observations_and_foreign_dtypes(net):
    net = net()
    for value in (NAN, INF):
        with pytest.raises(ValueError, match=r"observations holds .* \(the first at index \(1, 2, 3\)\)"):
            net(with_value((2, 3, 18), value, (1, 2, 3)))
    with pytest.raises(ValueError, match="observations has dtype torch.float64, the network's weights torch.float32"):
        net(torch.randn(2, 3, 18, dtype=torch.float64))
    assert torch.isfinite(net(torch.randn(2, 3, 18))).all()


def test_agent_linear_and_entity_attention_name_a_dtype_mismatch():
    with pytest.raises(ValueError, match="h has dtype torch.float64, the layer's weights torch.float32"):
        AgentLinear(3, 4, 2)(torch.randn(5, 3, 4, dtype=torch.float64))
    with pytest.raises(ValueError, match="tokens has dtype torch.float64"):
        EntityAttention(7, 5)(torch.randn(2, 3, 4, 7, dtype=torch.float64))


# ---- MAPPO: configs, actions ---------------------------------------------------------------------

@pytest.mark.parametrize("change,named", [
    ({"gamma": 0.0}, r"gamma must be a finite number in \(0, 1\]; got 0.0"),
    ({"gamma": 1.5}, r"gamma must be a finite number in \(0, 1\]; got 1.5"),
    ({"gamma": NAN}, "gamma must be a finite number"),
    ({"gae_lambda": -0.1}, r"gae_lambda must be a finite number in \[0, 1\]"),
    ({"lr_actor": -1e-3}, r"lr_actor must be a finite number in \[0, 1\]; got -0.001"),
    ({"lr_critic": INF}, "lr_critic must be a finite number"),
    ({"clip_coef": -0.2}, "clip_coef must be a finite number in"),
    ({"ent_coef": -0.01}, "ent_coef must be a finite number in"),
    ({"max_grad_norm": 0.0}, r"max_grad_norm must be a finite number in \(0, inf\]"),
    ({"gamma": "0.95"}, "gamma must be a real number; got '0.95'"),
    ({"depth": 0}, "depth must be a positive integer; got 0"),
    ({"heads": -2}, "heads must be a positive integer; got -2"),
    ({"d_q": 2.5}, "d_q must be a positive integer; got 2.5"),
    ({"total_steps": 0}, "total_steps must be a positive integer; got 0"),
    ({"total_steps": 199}, "total_steps = 199 is less than one update, num_envs \\* rollout_steps = 200"),
    ({"seed": -1}, "seed must be a non-negative integer; got -1"),
    ({"seed": 1.5}, "seed must be a non-negative integer; got 1.5"),
])
def test_nonsense_configs_are_refused(change, named):
    with pytest.raises(ValueError, match=named):
        replace(TINY, **change)


def test_legitimate_edge_configs_still_work():
    """A learning rate of 0 freezes a network (a test of chapter 10 does so), gamma = 1 is undiscounted,
    and a budget of exactly one update runs that update."""
    config = replace(TINY, lr_actor=0.0, gamma=1, gae_lambda=0.0, ent_coef=0.0, clip_coef=1e-3)
    assert config.num_updates == 1


def test_every_named_config_and_shipped_checkpoint_passes_the_checks():
    from attnmarl.algos.maac import MAACConfig
    from attnmarl.algos.maddpg import MADDPGConfig
    from attnmarl.algos.mat import MATConfig
    from attnmarl.algos.qmix import QMIXConfig
    from attnmarl.checkpoints import ASSETS, load_checkpoint
    from attnmarl.train import CONFIGS

    kinds = (MAPPOConfig, MADDPGConfig, MAACConfig, QMIXConfig, MATConfig)
    assert all(isinstance(config, kinds) for config in CONFIGS.values())
    checkpoints = [p for p in ASSETS.glob("*/*.pt") if p.parent.name != "seq2seq"]
    assert len(checkpoints) >= 30
    for path in checkpoints:
        load_checkpoint(path)


def test_an_env_spec_without_actions_is_refused():
    with pytest.raises(ValueError, match="n_actions must be a positive integer; got 0"):
        make_agent(TINY, EnvSpec(3, 18, 0, False, (0, 0, 0)))
    with pytest.raises(ValueError, match="one type per agent"):
        EnvSpec(3, 18, 5, False, (0, 0))


def test_nan_logits_are_refused_instead_of_sampling_an_action():
    with pytest.raises(ValueError, match="logits holds 1 NaN"):
        sample_actions(with_value((4, 3, 5), NAN), torch.Generator().manual_seed(0))
    o = torch.randn(4, 3, 18)
    for scenario_kwargs in ({"N": 3}, {"N": 3, "continuous_actions": True}):
        agent = make_agent(replace(TINY, scenario_kwargs=scenario_kwargs))
        with torch.no_grad():
            agent.actor.pis[0][-1].bias[0] = NAN  # a diverged actor
        for deterministic in (True, False):
            with pytest.raises(ValueError, match="the policy's outputs y holds 12 NaN"):
                agent.act(o, deterministic=deterministic)


# ---- seeds ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("call", [
    lambda seed: make_batched("simple_spread", 2, seed=seed),
    lambda seed: make_batched("simple_spread", 2).reset(seed=seed),
    lambda seed: random_policy("simple_spread", seed=seed),
    lambda seed: evaluate(random_policy("simple_spread"), "simple_spread", episodes=1, seed=seed),
    lambda seed: record_episode("simple_spread", seed=seed),
    lambda seed: replace(TINY, seed=seed),
], ids=["make_batched", "reset", "random_policy", "evaluate", "record_episode", "MAPPOConfig"])
@pytest.mark.parametrize("seed", [-1, 2.5, "0"])
def test_a_seed_must_be_a_non_negative_integer(call, seed):
    with pytest.raises(ValueError, match=f"seed must be a non-negative integer; got {seed!r}"):
        call(seed)


# ---- checkpoints: trust, completeness, NaN, atomic writes -----------------------------------------

class Payload:
    """An object whose unpickling would run code: it would create the file ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def untrusted_files(folder):
    """Files that torch.load(weights_only=True) refuses: code to run on load, and bytes that are no torch file."""
    torch.save({"format": "attnmarl.mappo/1", "config": Payload(folder / "pwned")}, folder / "payload.pt")
    (folder / "junk.pt").write_bytes(b"not a checkpoint")
    return [folder / "payload.pt", folder / "junk.pt"]


@pytest.mark.parametrize("load", [load_checkpoint, s2s.load_checkpoint], ids=["mappo", "seq2seq"])
def test_an_untrusted_file_is_refused_plainly_without_torchs_advice(tmp_path, load):
    for path in untrusted_files(tmp_path):
        with pytest.raises(ValueError, match="is not a checkpoint this book trusts") as error:
            load(path)
        assert "weights_only" not in str(error.value)  # torch's advice, weights_only=False, is the wrong one
    assert not (tmp_path / "pwned").exists()


@pytest.mark.parametrize("load", [load_checkpoint, s2s.load_checkpoint], ids=["mappo", "seq2seq"])
def test_empty_and_truncated_files_are_value_errors(tmp_path, load):
    save_checkpoint(tmp_path / "whole.pt", make_agent(TINY), TINY)
    whole = (tmp_path / "whole.pt").read_bytes()
    (tmp_path / "half.pt").write_bytes(whole[: len(whole) // 2])
    (tmp_path / "empty.pt").write_bytes(b"")
    for name in ("half.pt", "empty.pt"):
        with pytest.raises(ValueError, match="is not a loadable .* the file is empty, truncated or damaged"):
            load(tmp_path / name)


@pytest.mark.parametrize("missing", ["config", "state_dict", "metadata"])
def test_a_checkpoint_without_one_of_its_parts_is_a_value_error(tmp_path, missing):
    save_checkpoint(tmp_path / "tiny.pt", make_agent(TINY), TINY)
    data = torch.load(tmp_path / "tiny.pt", weights_only=True)
    del data[missing]
    torch.save(data, tmp_path / "tiny.pt")
    with pytest.raises(ValueError, match=f"incomplete attnmarl checkpoint: it has no dict under \\['{missing}'"):
        load_agent(tmp_path / "tiny.pt")


def test_a_checkpoint_whose_config_is_nonsense_is_a_value_error(tmp_path):
    save_checkpoint(tmp_path / "tiny.pt", make_agent(TINY), TINY)
    data = torch.load(tmp_path / "tiny.pt", weights_only=True)
    data["config"]["gamma"] = 2.0
    torch.save(seal(data), tmp_path / "tiny.pt")  # made by hand, with a checksum that fits
    with pytest.raises(ValueError, match="holds a config this version refuses: gamma must be"):
        load_checkpoint(tmp_path / "tiny.pt")


def test_nan_weights_are_neither_saved_nor_loaded(tmp_path):
    agent = make_agent(TINY)
    save_checkpoint(tmp_path / "tiny.pt", agent, TINY)
    with torch.no_grad():
        agent.critic.heads.out.b[1, 0] = NAN
    with pytest.raises(ValueError, match=r"critic.heads.out.b holds 1 NaN .* index \(1, 0\)"):
        save_checkpoint(tmp_path / "tiny.pt", agent, TINY)
    data = torch.load(tmp_path / "tiny.pt", weights_only=True)  # a NaN checkpoint made by hand
    data["state_dict"]["actor.pis.0.0.0.weight"][0, 0] = INF
    torch.save(seal(data), tmp_path / "nan.pt")  # made by hand, with a checksum that fits
    for load in (load_policy, load_agent, lambda path: load_actor_from(make_agent(TINY), TINY, path)):
        with pytest.raises(ValueError, match="nan.pt holds non-finite weights: actor.pis.0.0.0.weight holds 0 NaN"):
            load(tmp_path / "nan.pt")
    model = s2s.new_model(attention=True)
    s2s.save_checkpoint(model, tmp_path / "s2s.pt")
    with torch.no_grad():
        next(model.parameters())[0] = NAN
    with pytest.raises(ValueError, match="holds .* NaN"):
        s2s.save_checkpoint(model, tmp_path / "s2s.pt")
    torch.save(seal({"config": asdict(model.cfg), "state_dict": model.state_dict()}), tmp_path / "s2s-nan.pt")
    with pytest.raises(ValueError, match="s2s-nan.pt holds non-finite weights"):
        s2s.load_checkpoint(tmp_path / "s2s-nan.pt")
    s2s.load_checkpoint(tmp_path / "s2s.pt")  # the good file was not touched


@pytest.mark.parametrize("save", [
    lambda path: save_checkpoint(path, make_agent(TINY), TINY),
    lambda path: s2s.save_checkpoint(s2s.new_model(attention=False), path),
], ids=["mappo", "seq2seq"])
def test_a_save_that_fails_half_way_leaves_the_old_checkpoint_whole(tmp_path, monkeypatch, save):
    path = tmp_path / "model.pt"
    save(path)
    before = path.read_bytes()

    def half_then_fail(data, handle):
        handle.write(b"PK half a zip archive")
        raise KeyboardInterrupt

    monkeypatch.setattr(torch, "save", half_then_fail)
    with pytest.raises(KeyboardInterrupt):
        save(path)
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.pt"]  # no temporary file left behind


# ---- command lines: refuse before training; a killed run never loses or mislabels a checkpoint -----

def no_training(monkeypatch):
    """Make any training fail the test: the checks under test must come first."""
    for kind in train_module.TRAINERS:  # every algorithm's training loop (MAPPO, MADDPG)
        monkeypatch.setitem(train_module.TRAINERS, kind, lambda *args, **kwargs: pytest.fail("training started"))


@pytest.mark.parametrize("steps,message", [
    (0, "total_steps must be a positive integer; got 0"),
    (-3200, "total_steps must be a positive integer; got -3200"),
    (100, "total_steps = 100 is less than one update"),
])
def test_named_config_refuses_a_budget_it_would_not_train(steps, message):
    with pytest.raises(ValueError, match=message):
        named_config("spread3-concat", steps=steps)
    assert named_config("spread3-concat", steps=None).total_steps == 5_000_000


@pytest.mark.parametrize("arguments,message", [
    (["--steps", "0"], "argument --steps: must be a positive integer; got 0"),
    (["--steps", "100"], "total_steps = 100 is less than one update"),
    (["--threads", "0"], "argument --threads: must be a positive integer; got 0"),
    (["--seed", "-1"], "argument --seed: must be a non-negative integer; got -1"),
    (["--seed", "1.5"], "argument --seed: must be an integer; got '1.5'"),
    (["--final-episodes", "0"], "argument --final-episodes: must be a positive integer; got 0"),
    (["--eval-episodes", "0"], "argument --eval-episodes: must be a positive integer; got 0"),
    (["--evals", "-1"], "argument --evals: must be a non-negative integer; got -1"),
    (["--out", "{file}/runs"], "--out = '.*' is not a folder this process can write to"),
])
def test_the_command_line_refuses_bad_arguments_before_training(tmp_path, monkeypatch, capsys, arguments, message):
    no_training(monkeypatch)
    (tmp_path / "file").write_text("a file, not a folder")
    arguments = [a.format(file=tmp_path / "file") for a in arguments]
    with pytest.raises(SystemExit) as exit_:
        train_main(["--config", "spread3-concat", "--out", str(tmp_path / "runs"), *arguments])
    assert exit_.value.code == 2
    assert re.search(message, capsys.readouterr().err)


@pytest.mark.parametrize("kwargs,message", [
    ({"final_episodes": 0}, "final_episodes must be a positive integer; got 0"),
    ({"eval_episodes": -1}, "eval_episodes must be a positive integer; got -1"),
    ({"steps": 0}, "total_steps must be a positive integer; got 0"),
    ({"seed": -2}, "seed must be a non-negative integer; got -2"),
])
def test_run_refuses_bad_arguments_before_training(tmp_path, monkeypatch, kwargs, message):
    no_training(monkeypatch)
    with pytest.raises(ValueError, match=message):
        run("spread3-concat", out=tmp_path, progress=False, **kwargs)


def test_run_refuses_a_folder_it_cannot_write_before_training(tmp_path, monkeypatch):
    no_training(monkeypatch)
    (tmp_path / "file").write_text("a file, not a folder")
    with pytest.raises(ValueError, match="out = '.*file/runs' is not a folder this process can write to"):
        run("spread3-concat", out=tmp_path / "file" / "runs", progress=False)
    if os.geteuid() != 0:  # root may write anywhere
        locked = tmp_path / "locked"
        locked.mkdir(mode=0o500)
        with pytest.raises(ValueError, match="locked' is not a folder this process can write to"):
            run("spread3-concat", out=locked, progress=False)


@pytest.mark.parametrize("arguments,message", [
    (["--episodes", "0"], "argument --episodes: must be a positive integer; got 0"),
    (["--seeds", "-1"], "argument --seeds: must be a non-negative integer; got -1"),
    (["--out", "{file}/zero-shot.json"], "the folder of --out = '.*' is a file, not a folder"),
])
def test_the_transfer_command_line_refuses_bad_arguments_before_evaluating(tmp_path, capsys, arguments, message):
    (tmp_path / "file").write_text("a file, not a folder")
    arguments = [a.format(file=tmp_path / "file") for a in arguments]
    with pytest.raises(SystemExit) as exit_:
        transfer_main(["--run", "policy/pi-spread6-entity", "--out", str(tmp_path / "out.json"), *arguments])
    assert exit_.value.code == 2 and re.search(message, capsys.readouterr().err)


@pytest.mark.parametrize("option,value,message", [
    ("--threads", "0", "argument --threads: must be a positive integer; got 0"),
    ("--steps", "-5", "argument --steps: must be a positive integer; got -5"),
    ("--seed", "-1", "argument --seed: must be a non-negative integer; got -1"),
    ("--n-test", "many", "argument --n-test: must be an integer; got 'many'"),
])
def test_the_seq2seq_command_line_refuses_bad_numbers_with_a_usage_error(capsys, option, value, message):
    with pytest.raises(SystemExit) as exit_:
        s2s.main(["--train", option, value])
    assert exit_.value.code == 2 and message in capsys.readouterr().err


RUN = "spread3-concat-seed0"
KILL_DRIVER = """
import os, signal, sys

import torch

import attnmarl.algos.mappo as mappo
from attnmarl.files import atomic
from attnmarl.train import main


def die(*args, **kwargs):
    os.kill(os.getpid(), signal.SIGKILL)


moment = sys.argv[1]
if moment == "training":  # in the middle of the first update
    mappo.gae = die
elif moment == "torch.save":  # half-way through writing the checkpoint
    def half_then_die(data, handle):
        handle.write(b"PK half a zip archive")
        handle.flush()
        die()
    torch.save = half_then_die
elif moment.startswith("rename"):  # right after the k-th of the three renames (.pt, .csv, .json)
    k, renames, real_replace = int(moment[-1]), [], os.replace
    def replace_then_die(source, target):
        real_replace(source, target)
        renames.append(target)
        if len(renames) == k:
            die()
    atomic.os.replace = replace_then_die
main(["--config", "spread3-concat", "--steps", "3200", "--evals", "0", "--final-episodes", sys.argv[3],
      "--out", sys.argv[2], "--replace"])
"""


def make_run(folder, moment: str, final_episodes: int = 1) -> int:
    """Run the training command line in a fresh process, killed with SIGKILL at ``moment`` ("0": never)."""
    import attnmarl

    env = dict(os.environ, PYTHONPATH=str(Path(attnmarl.__file__).parents[1]), OMP_NUM_THREADS="1")
    process = subprocess.run([sys.executable, "-c", KILL_DRIVER, moment, str(folder), str(final_episodes)],
                             env=env, capture_output=True, text=True, timeout=300)
    assert process.returncode in (0, -signal.SIGKILL), process.stderr
    return process.returncode


def run_id(folder) -> str:
    return json.loads((folder / f"{RUN}.json").read_text())["run_id"]


def listed_runs(folder) -> list[str]:
    """The run ids ``write_index`` lists, after checking that each listed run's files are what the index says."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a run the index leaves out is warned about; here the result is checked
        runs = write_index(folder)
    for entry in runs:
        _, _, metadata = load_checkpoint(folder / entry["checkpoint"])
        assert metadata["run_id"] == entry["run_id"] and metadata["final_return"] == entry["final_return"]
        assert hashlib.sha256((folder / entry["curve"]).read_bytes()).hexdigest() == entry["curve_sha256"]
    return [entry["run_id"] for entry in runs]


@pytest.fixture(scope="module")
def complete_runs(tmp_path_factory) -> tuple[Path, Path]:
    """Two folders, each with one complete run of the same name and seed (different run ids). The second
    is scored on two final episodes, not one, so that its curve differs from the first's for sure (the
    curves' timing columns alone may coincide, and then a mixture could not be told apart)."""
    folders = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    for folder, final_episodes in zip(folders, (1, 2)):
        assert make_run(folder, "0", final_episodes) == 0
    assert (folders[0] / f"{RUN}.csv").read_bytes() != (folders[1] / f"{RUN}.csv").read_bytes()
    return folders


def test_a_summary_beside_files_of_another_run_is_left_out_of_the_index(tmp_path, complete_runs):
    """Two runs' files mixed by hand: the index lists neither mixture, and says why."""
    a, b = complete_runs
    for suffix in (".pt", ".csv"):
        mixed = tmp_path / f"mixed{suffix}"
        mixed.mkdir()
        for part in (".pt", ".csv", ".json"):
            source = (b if part == suffix else a) / f"{RUN}{part}"
            (mixed / source.name).write_bytes(source.read_bytes())
        with pytest.warns(UserWarning, match=f"{RUN}.json left out of the index: {RUN}{suffix}"):
            assert write_index(mixed) == []
    assert listed_runs(shutil.copytree(a, tmp_path / "a")) == [run_id(a)]  # unmixed, it is listed


@pytest.mark.parametrize("moment,outcome", [
    ("training", "old"), ("torch.save", "old"), ("rename1", "none"), ("rename2", "none"), ("rename3", "new"),
])
def test_a_run_killed_at_any_moment_never_leaves_files_that_load_as_something_they_are_not(
        tmp_path, complete_runs, moment, outcome):
    """A complete run sits in the folder; a rerun of the same name and seed is killed (SIGKILL) at
    ``moment``. Every file left loads whole, and the index lists the old run untouched, the new run
    complete, or (killed between renames) neither — never a summary beside another run's files."""
    old = complete_runs[0]
    folder = tmp_path / "rerun"
    shutil.copytree(old, folder)
    assert make_run(folder, moment) == -signal.SIGKILL
    for path in folder.glob("*.pt"):
        load_checkpoint(path)  # whole, never half a file
    assert sorted(p.suffix for p in folder.glob(f"{RUN}.*")) == [".csv", ".json", ".pt"]
    listed = listed_runs(folder)
    if outcome == "old":
        assert listed == [run_id(old)]
        assert all((folder / p.name).read_bytes() == p.read_bytes() for p in old.glob(f"{RUN}.*"))
    elif outcome == "none":
        assert listed == []
    else:
        assert listed == [run_id(folder)] != [run_id(old)]


# ---- explorers: no wrap-around, no IndexError from deep inside -------------------------------------

@pytest.fixture(scope="module")
def episode():
    """A recorded simple_spread episode (25 steps, 3 agents) with made-up values and two heads of alpha."""
    recorded = record_episode("simple_spread", seed=0, N=3)
    alpha = torch.softmax(torch.randn(26, 2, 3, 6, generator=torch.Generator().manual_seed(0)), -1).numpy()
    return recorded, alpha


def episode_frames(episode):
    """alpha_episode_frame (critic: alpha over agents) and policy_episode_frame (policy: over entities)."""
    recorded, alpha = episode
    critic = partial(alpha_episode_frame, recorded, np.zeros((26, 3)), alpha[..., :3])
    weights = PolicyAlpha(alpha, tuple(range(6)), recorded.entities)
    policy = partial(policy_episode_frame, recorded, weights, np.full((26, 3, 5), 0.2))
    return {"critic": critic, "policy": policy}


@pytest.mark.parametrize("which", ["critic", "policy"])
def test_episode_explorers_refuse_heads_steps_and_agents_that_do_not_exist(episode, which):
    frame = episode_frames(episode)[which]
    for head in ("0", "3", "-1", 0, "first"):
        with pytest.raises(ValueError, match=re.escape(f"head must be one of ['mean', '1', '2']; got {head!r}")):
            frame(t=3, agent=0, head=head)
    for t in (26, -1, 2.0):
        with pytest.raises(ValueError, match=r"t must be an int in \[0, 25\]"):
            frame(t=t, agent=0, head="1")
    for agent in (3, -1):
        with pytest.raises(ValueError, match=rf"agent must be an agent index in \[0, 3\); got {agent}"):
            frame(t=3, agent=agent, head="1")
    assert frame(t=3, agent=2, head=2).caption == frame(t=3, agent=2, head="2").caption  # an int head still works
    assert "head 2" not in frame(t=3, agent=2, head="1").caption


def test_head_1_is_the_first_head_and_mean_is_the_mean():
    alpha = np.arange(2 * 3 * 3, dtype=float).reshape(2, 3, 3)
    np.testing.assert_array_equal(select_head(alpha, "1"), alpha[0])
    np.testing.assert_array_equal(select_head(alpha, "2"), alpha[1])
    np.testing.assert_array_equal(select_head(alpha, "mean"), alpha.mean(0))


def test_the_alignment_explorer_refuses_an_example_that_is_not_there():
    examples = [("1/2/2000", "2000-02-01"), ("3 May 1987", "1987-05-03")]
    explorer = alignment_explorer(examples=examples)
    for example in (-1, 2, 99):
        with pytest.raises(ValueError, match=rf"example must be an example index in \[0, 2\); got {example}"):
            explorer.update(example=example)
    assert "1987-05-03" in explorer.update(example=1)["caption"] + str(explorer.frame)


@pytest.mark.parametrize("control", [Slider, Dropdown])
def test_a_control_without_values_is_a_value_error(control):
    with pytest.raises(ValueError, match="control 'x' has no values"):
        control("x", [])


def test_the_arena_probe_refuses_a_fractional_agent():
    agent, config = load_agent(value_checkpoint("spread3-attention"))
    probe = make_probe(agent, config, seed=0, t=3)
    with pytest.raises(ValueError, match=r"moved must be an agent index in \[0, 3\); got 1.5"):
        probe_values(probe, 1.5, (0.0, 0.0))
