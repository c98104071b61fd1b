"""Reliability, fourth pass (a hostile-input review): one test per reported defect.

Each test gives the input that used to fail deep inside torch, numpy or mpe2 (or, worse, silently) and checks
the clear ``ValueError`` that now names the problem, or the right answer where the input is accepted.
"""
import numpy as np
import pytest
import torch

from attnmarl.algos import mappo, qmix
from attnmarl.algos.maddpg import force_to_action
from attnmarl.algos.mappo import gae
from attnmarl.attention import MultiHeadSelfAttention, SelfAttention, dot_score, general_score, scaled_dot_score
from attnmarl.envs import mixed_teams
from attnmarl.envs.sight import apply_sight, visibility, visible_fraction
from attnmarl.nets.messages import TargetedMessages
from attnmarl.notebook.explorers.mix import calibration, credit_episode, credit_explorer
from attnmarl.notebook.explorers.synthesis import range_shares
from attnmarl.stats import (
    Interval,
    bootstrap_difference,
    coverage,
    iqm,
    normal_scores,
    prediction_interval,
    resolved,
    skewed_scores,
    verdict,
    welch_difference,
)
from attnmarl.train import CONFIGS

pytestmark = pytest.mark.usefixtures("one_thread")


# 1. masks as numpy arrays or lists -------------------------------------------------------------------------------

def test_a_self_attention_mask_given_as_numpy_or_a_list_acts_as_the_same_bool_tensor():
    torch.manual_seed(0)
    layers = (SelfAttention(4, 3, 2), MultiHeadSelfAttention(4, 3, 2, heads=2))
    x = torch.randn(2, 5, 4)
    mask = torch.tensor([[True, False, True, True, False], [False, False, True, False, True]])
    full = torch.rand(2, 5, 5) < 0.5
    full[..., 0] = True
    for layer in layers:
        for tensor_mask, xs in ((mask, x), (full, x), (mask[0], x[0]), (full[0], x[0])):
            c, alpha = layer(xs, tensor_mask)
            for given in (tensor_mask.numpy(), tensor_mask.tolist()):
                c_given, alpha_given = layer(xs, given)
                torch.testing.assert_close(c_given, c, rtol=0, atol=0)
                torch.testing.assert_close(alpha_given, alpha, rtol=0, atol=0)
        alpha = layer(x, mask.numpy())[1]  # (batch, m, m) or (batch, heads, m, m)
        left_out = ~mask[:, None, :] if alpha.dim() == 3 else ~mask[:, None, None, :]
        assert (alpha * left_out).abs().sum() == 0 and (alpha * ~left_out).sum(-1).allclose(torch.tensor(1.0))
        for bad in (mask.int(), mask.int().numpy(), mask.int().tolist()):  # 0/1 integers: refused in every form
            with pytest.raises(ValueError, match="mask must be a bool tensor"):
                layer(x, bad)
        with pytest.raises(ValueError, match="got a ragged list"):
            layer(x, [[True, False], [True]])
        with pytest.raises(ValueError, match=r"mask must have shape \(batch, m\) = \(2, 5\)"):
            layer(x, np.ones((2, 4), dtype=bool))  # the shape is checked as for a tensor mask
        with pytest.raises(ValueError, match="every key is masked for batch element 1"):
            layer(x, [[True] * 5, [False] * 5])


def test_general_score_names_a_weight_matrix_that_is_not_a_tensor():
    q, k = torch.randn(2, 3, 4), torch.randn(2, 6, 5)
    for W in ([[1.0] * 5] * 4, np.ones((4, 5), dtype=np.float32)):
        with pytest.raises(ValueError, match=r"W must be a torch.Tensor of shape \(d_q, d_k\) = \(4, 5\); got "
                                             f"{type(W).__name__}"):
            general_score(q, k, W)
    W = torch.randn(4, 5)
    torch.testing.assert_close(general_score(q, k, W), torch.einsum("bid,de,bje->bij", q, W, k))


# 2. scores of mismatched batches ----------------------------------------------------------------------------------

def test_scores_of_queries_and_keys_whose_batches_differ_name_both_shapes():
    q, k = torch.randn(2, 3, 4), torch.randn(3, 3, 4)
    for score in (dot_score, scaled_dot_score):
        with pytest.raises(ValueError, match=r"same batch dimensions.*queries of shape \(2, 3, 4\) and keys of shape "
                                             r"\(3, 3, 4\)"):
            score(q, k)
    with pytest.raises(ValueError, match=r"\(2, 4, 7, 4\).*\(3, 5, 4\)"):
        general_score(torch.randn(2, 4, 7, 4), torch.randn(3, 5, 4), torch.randn(4, 4))
    shared = torch.randn(1, 6, 4)  # batch dimensions that broadcast still do: one set of keys for every batch
    torch.testing.assert_close(dot_score(q, shared), torch.stack([q[b] @ shared[0].T for b in range(2)]))


# 3. gae's shapes --------------------------------------------------------------------------------------------------

def test_gae_refuses_values_that_would_broadcast_against_the_rewards():
    T, E, m = 5, 3, 2
    rewards, values, next_values = torch.randn(T, E, m), torch.randn(T, E, m), torch.randn(T, E, m)
    ended = torch.zeros(T, E, dtype=torch.bool)
    with pytest.raises(ValueError, match=r"shape \(T, E, m\); got \(5, 3, 2\), \(5, 3, 1\) and \(5, 3, 2\)"):
        gae(rewards, values[..., :1], next_values, ended, 0.9, 0.8)
    with pytest.raises(ValueError, match=r"got \(5, 3, 2\), \(5, 3, 2\) and \(5, 3, 1\)"):
        gae(rewards, values, next_values[..., :1], ended, 0.9, 0.8)
    with pytest.raises(ValueError, match=r"ended must be a bool tensor of shape \(T, E\) = \(5, 3\).*\(5,\)"):
        gae(rewards, values, next_values, ended[:, 0], 0.9, 0.8)
    with pytest.raises(ValueError, match="ended must be a bool tensor.*dtype torch.float32"):
        gae(rewards, values, next_values, ended.float(), 0.9, 0.8)
    with pytest.raises(ValueError, match="values must be a torch.Tensor; got ndarray"):
        gae(rewards, values.numpy(), next_values, ended, 0.9, 0.8)
    # with no episode end and lam = 0 each advantage is the one-step TD error
    torch.testing.assert_close(gae(rewards, values, next_values, ended, 0.9, 0.0), rewards + 0.9 * next_values - values)


# 4. force_to_action's components ----------------------------------------------------------------------------------

def test_force_to_action_refuses_a_force_of_three_components():
    with pytest.raises(ValueError, match=r"force F must be a floating-point tensor \(\.\.\., 2\).*got dtype "
                                         r"torch.float32 and shape \(4, 3\)"):
        force_to_action(torch.zeros(4, 3))
    for bad in (torch.zeros(()), torch.zeros(2, dtype=torch.long), [0.5, -0.5]):
        with pytest.raises(ValueError, match="force F must be a floating-point tensor"):
            force_to_action(bad)
    torch.testing.assert_close(force_to_action(torch.tensor([0.5, -0.25])), torch.tensor([0.0, 0.0, 0.5, 0.25, 0.0]))


# 5. mixed_teams: a team without an action for one of its agents ---------------------------------------------------

def test_mixed_teams_names_the_team_and_the_agent_it_has_no_action_for():
    obs = {name: np.zeros(4, dtype=np.float32) for name in ("adversary_0", "adversary_1", "agent_0")}

    def chasers(o):
        return {"adversary_0": 1}  # forgets adversary_1

    def prey(o):
        return dict.fromkeys(o, 2)

    with pytest.raises(ValueError, match=r"the adversaries team's policy returned no action for adversary_1.*"
                                         r"\['adversary_0'\]"):
        mixed_teams(chasers, prey)(obs)
    with pytest.raises(ValueError, match="the others team's policy returned no action for agent_0.*no agent"):
        mixed_teams(prey, lambda o: {})(obs)
    with pytest.raises(ValueError, match="the others team's policy must return a dict of actions; got list"):
        mixed_teams(prey, lambda o: [0, 0, 0])(obs)
    with pytest.raises(ValueError, match="adversaries must be a policy"):
        mixed_teams("chase", prey)
    assert mixed_teams(lambda o: dict.fromkeys(o, 1), prey)(obs) == {"adversary_0": 1, "adversary_1": 1,
                                                                         "agent_0": 2}


# 6. seeds and dtypes of the sight and message helpers ------------------------------------------------------------

@pytest.mark.parametrize("seed", [True, -1, 1.5, "0", None, 2**64])
def test_sight_and_message_helpers_refuse_bad_seeds_and_dtypes(seed):
    with pytest.raises(ValueError, match="seed must be"):
        visible_fraction(resets=1, N=2, seed=seed)
    obs = np.zeros((3, 18), dtype=np.float32)
    obs[:, 4:6] = 5.0  # the first landmark far away
    for bad in (obs.astype(np.int64), torch.from_numpy(obs).long(), obs.astype(bool)):
        for helper in (apply_sight, visibility):
            with pytest.raises(ValueError, match="obs must hold floating-point numbers.*got dtype"):
                helper(bad, 1.0)
    sighted64, visible64 = apply_sight(obs.astype(np.float64), 1.0)  # any float dtype is documented and kept
    assert sighted64.dtype == np.float64 and not visible64[:, 0].any() and not sighted64[:, 4:6].any()
    talk = TargetedMessages(4)
    for h in (torch.zeros(2, 3, 4, dtype=torch.float64), torch.zeros(2, 3, 4, dtype=torch.long)):
        with pytest.raises(ValueError, match=f"h has dtype {h.dtype}, the layer's weights torch.float32"):
            talk(h)


# 7. credit_explorer given an agent without a mixer ---------------------------------------------------------------

def test_credit_explorer_refuses_an_agent_that_is_not_value_decomposition():
    torch.manual_seed(0)
    config = CONFIGS["spread3-attention"]
    agent = mappo.make_agent(config)
    for explore in (credit_explorer, credit_episode, calibration):
        with pytest.raises(ValueError, match=f"{explore.__name__} needs a value-decomposition agent.*got a "
                                             "MAPPOAgent and a MAPPOConfig"):
            explore(agent, config)
    vdn_config = CONFIGS["qmix-spread3-vdn"]
    with pytest.raises(ValueError, match="got a QMIXAgent and a MAPPOConfig"):
        credit_explorer(qmix.make_agent(vdn_config), config)


# 8. value decomposition on a scenario that is not cooperative ----------------------------------------------------

@pytest.mark.parametrize("mixer", ["vdn", "qmix", "qatten"])
def test_value_decomposition_refuses_a_scenario_that_is_not_fully_cooperative(mixer):
    for scenario in ("simple_tag", "simple_tag_v3"):
        with pytest.raises(ValueError, match=r"needs a fully cooperative scenario, one of \['simple_spread', "
                                             rf"'collect_treasure'\]; got scenario '{scenario}'"):
            qmix.QMIXConfig(scenario, {}, mixer=mixer)
    from dataclasses import replace
    with pytest.raises(ValueError, match="fully cooperative"):
        replace(CONFIGS[f"qmix-spread3-{mixer}"], scenario="simple_tag", scenario_kwargs={})
    for scenario in qmix.COOPERATIVE_SCENARIOS:
        assert qmix.QMIXConfig(scenario, {}, mixer=mixer).scenario == scenario


# 9. non-finite inputs to sight and messages ----------------------------------------------------------------------

def test_non_finite_observations_and_messages_are_refused_not_zeroed_or_spread():
    obs = np.zeros((3, 18), dtype=np.float32)
    obs[1, 4] = np.nan  # the first landmark's offset: never within the radius, so it used to be zeroed silently
    for given in (obs, torch.from_numpy(obs)):
        for helper in (apply_sight, visibility):
            with pytest.raises(ValueError, match=r"obs holds 1 NaN and 0 infinite value\(s\) \(the first at index "
                                                 r"\(1, 4\)\)"):
                helper(given, 1.0)
    obs[1, 4] = np.inf
    with pytest.raises(ValueError, match=r"obs holds 0 NaN and 1 infinite"):
        apply_sight(obs, 1.0)
    torch.manual_seed(0)
    talk = TargetedMessages(4)
    h = torch.randn(2, 3, 4)
    h[0, 1, 2] = float("nan")  # sender 1 of the first batch element
    with pytest.raises(ValueError, match=r"h, the senders' encodings \(batch, sender j, feature\), holds 1 NaN .*"
                                         r"index \(0, 1, 2\)"):
        talk(h)
    h[0, 1, 2] = 0.0
    c, alpha = talk(h)
    assert torch.isfinite(c).all() and torch.allclose(alpha.sum(-1), torch.ones(2, 3))


# 10. statistics take real numbers only ----------------------------------------------------------------------------

@pytest.mark.parametrize("call, message", [
    (lambda: iqm(["1", "2", "3", "4"]), "scores must hold real numbers only"),  # was 2.5
    (lambda: iqm([True, False, True, True]), "no strings, bools"),  # was 1.0
    (lambda: iqm(np.array([1 + 1j, 2, 3])), "complex numbers"),  # was 2.0, the imaginary part dropped
    (lambda: iqm([1.0, float("nan"), 2.0, 3.0]), "NaN or infinite"),  # was 2.5, the NaN sorted last and trimmed
    (lambda: iqm([]), "at least one finite number"),  # was NaN
    (lambda: iqm([1.0, 2.0], axis=1), "axis must be an axis of the scores' 1 dimension"),
    (lambda: bootstrap_difference(["1", "2"], [1.0, 2.0], statistic="iqm"), "a must be a flat sequence of numbers"),
    (lambda: bootstrap_difference([1.0, 2.0], [True, False]), "b must be a flat sequence of numbers"),
    (lambda: bootstrap_difference([1.0, 2.0], [1.0, 2.0], level="0.9"), "level must be a number strictly between"),
    (lambda: coverage("welch", normal_scores(), normal_scores(), 3, "0", sims=100), "difference must be a real"),
    (lambda: coverage("welch", normal_scores(), normal_scores(), 3, True, sims=100), "difference must be a real"),
    (lambda: normal_scores("1"), "mean must be a real number"),
    (lambda: normal_scores(0.0, -1.0), r"sd must be a finite number in \[0, inf\]"),
    (lambda: skewed_scores(0.0, 1.0, 0.0), "skewness must not be 0"),  # was ZeroDivisionError
    (lambda: skewed_scores(0.0, True), "sd must be a real number"),
    (lambda: prediction_interval(["1", "2", "3"]), "scores must be a flat sequence of numbers"),
    (lambda: resolved((1.0, 2.0)), "interval must be an Interval .*got tuple"),  # was AttributeError
    (lambda: verdict("ahead"), "interval must be an Interval .*got str"),
    (lambda: Interval("1", "0", "2", 0.95, "mean", 3, 3), "estimate must be a real number"),
    (lambda: Interval(0.0, 2.0, 1.0, 0.95, "mean", 3, 3), r"low bound must not exceed its high bound; got \[2.0, 1"),
    (lambda: Interval(0.0, -1.0, 1.0, 0.95, "mean", True, 3), "n_a must be a positive integer"),
    (lambda: range_shares([{"final_return": -20.0}], 3, continuous="no"), "continuous must be True or False"),
    (lambda: range_shares([{"final_return": -20.0}], True), "m must be a positive integer"),
])
def test_the_statistics_take_real_numbers_only(call, message):
    with pytest.raises(ValueError, match=message):
        call()


def test_the_statistics_still_take_numbers_of_every_kind():
    assert iqm(np.array([3, 1, 2])) == 2.0 and iqm(torch.tensor([1.0, 2.0, 9.0])) == 4.0
    np.testing.assert_allclose(iqm(np.array([[1.0, 2, 3, 50], [0, 0, 1, 1]]), axis=1), [2.5, 0.5])
    assert bootstrap_difference(np.array([1.0, 3.0]), [0, 1], level=np.float32(0.9)).level == pytest.approx(0.9)
    assert welch_difference([np.float32(1.0), 3], np.arange(2)).estimate == pytest.approx(1.5)
    interval = Interval(np.float64(5.0), 2, 8, 0.95, "mean", np.int64(10), 10)
    assert resolved(interval) and verdict(interval) == "ahead" and interval.n_a == 10 and type(interval.n_a) is int
    assert 0.0 < coverage("welch", normal_scores(1, 2), skewed_scores(0, 1), 3, 1, sims=200) <= 1.0


# 11. a checkpoint is checked whole before anything is built or decompressed from it ----------------------------

def _rezip(source, target, compression, replace=None):
    """Copy the zip archive ``source`` to ``target`` with ``compression``, entry by entry; ``replace`` maps an
    entry's name ending to the bytes (or, for a bomb, a count of zero bytes) it holds instead."""
    import zipfile

    with zipfile.ZipFile(source) as src, zipfile.ZipFile(target, "w", compression) as out:
        for entry in src.infolist():
            new = next((value for end, value in (replace or {}).items() if entry.filename.endswith(end)), None)
            if isinstance(new, int):
                with out.open(entry.filename, "w", force_zip64=True) as handle:
                    block = bytes(2**22)
                    for _ in range(new // len(block)):
                        handle.write(block)
            else:
                out.writestr(entry.filename, src.read(entry) if new is None else new)


@pytest.fixture
def no_build(monkeypatch):
    """Fail the test if a loader builds a network or hands the file to torch.load after it should have refused."""
    import attnmarl.checkpoints as checkpoints

    def refuse(*args, **kwargs):
        raise AssertionError("a network was built from a file that should have been refused first")

    monkeypatch.setattr(checkpoints, "make_agent", refuse)


def test_an_edited_config_is_refused_as_damaged_before_a_network_is_built(tmp_path, no_build):
    from attnmarl.checkpoints import load_agent, shipped_checkpoint

    data = torch.load(shipped_checkpoint("policy", "pi-spread3-attention"), weights_only=True)
    data["config"]["actor_hidden"] = 20_000  # would take minutes to build (a 20,000-square orthogonal init)
    torch.save(data, tmp_path / "edited.pt")
    with pytest.raises(ValueError, match="damaged attnmarl checkpoint: its contents no longer match the checksum"):
        load_agent(tmp_path / "edited.pt")


@pytest.mark.parametrize("bomb", [False, True])
def test_a_compressed_archive_is_refused_before_anything_in_it_is_decompressed(tmp_path, monkeypatch, bomb):
    """torch.save stores every entry uncompressed; a deflated entry (here, for the bomb, 256 MB of zeros in under
    a megabyte, in place of the weights) is refused from the zip's directory, before torch.load reads a byte."""
    import zipfile

    from attnmarl.checkpoints import load_agent, shipped_checkpoint

    path = tmp_path / ("bomb.pt" if bomb else "deflated.pt")
    _rezip(shipped_checkpoint("policy", "pi-spread3-attention"), path, zipfile.ZIP_DEFLATED,
           {"/data/0": 2**28} if bomb else None)
    assert path.stat().st_size < 2**20
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load read a compressed archive"))
    with pytest.raises(ValueError, match=r"is compressed \(zip method 8\), which torch.save never does"):
        load_agent(path)


def test_an_archive_entry_that_declares_more_than_the_file_holds_is_refused(tmp_path, monkeypatch):
    import struct

    from attnmarl.checkpoints import load_agent, shipped_checkpoint

    raw = bytearray(shipped_checkpoint("policy", "pi-spread3-attention").read_bytes())
    header = raw.rindex(b"PK\x01\x02")  # the last entry's record in the central directory
    raw[header + 24: header + 28] = struct.pack("<I", 2**31)  # its uncompressed size: 2 GB
    (tmp_path / "inflated.pt").write_bytes(bytes(raw))
    monkeypatch.setattr(torch, "load", lambda *a, **k: pytest.fail("torch.load read an inflated archive"))
    with pytest.raises(ValueError, match=r"declares 2,147,483,648 bytes in a file of"):
        load_agent(tmp_path / "inflated.pt")


def test_every_shipped_checkpoint_is_an_archive_torch_save_wrote():
    from pathlib import Path

    from attnmarl.files.sealed import check_archive

    shipped = sorted((Path(__file__).resolve().parents[1] / "src" / "attnmarl" / "assets").rglob("*.pt"))
    assert len(shipped) > 100
    for path in shipped:
        check_archive(path, "checkpoint")


# 12. a flat layer's initialisation is estimated like an unshared layer's -----------------------------------------

def test_a_wide_flat_layer_is_refused_before_its_cubic_initialisation(monkeypatch):
    """One 8,000 x 8,000 orthogonal initialisation takes about 100 s (a QR factorisation); the estimate refuses it
    before nn.init runs, naming the override, and a layer of the book's widths passes."""
    from attnmarl.algos.mappo import MAPPOConfig, make_agent
    from attnmarl.nets import common

    monkeypatch.setattr(torch.nn.init, "orthogonal_", lambda *a, **k: pytest.fail("initialised before the estimate"))
    with pytest.raises(ValueError, match=r"a linear layer of 8,000 x 8,000 weights .*ATTNMARL_ALLOW_COSTLY=1"):
        common.linear(8_000, 8_000)
    monkeypatch.undo()
    with pytest.raises(ValueError, match=r"a linear layer of 20,000 x"):
        make_agent(MAPPOConfig(actor="flat", actor_hidden=20_000))
    assert common.linear(64, 64).weight.shape == (64, 64)
