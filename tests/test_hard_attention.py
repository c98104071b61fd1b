"""Soft vs hard attention: the data, the unbiasedness of the REINFORCE estimate, training."""
import math

import pytest
import torch

from attnmarl import hard_attention as ha

pytestmark = pytest.mark.usefixtures("one_thread")


def _model(seed: int = 0, scale: float = 1.0) -> ha.KeyValueReader:
    """A model with non-uniform attention (embeddings scaled up) so the gradients are not tiny."""
    torch.manual_seed(seed)
    model = ha.KeyValueReader().double()
    with torch.no_grad():
        model.E_q.weight.mul_(scale)
        model.E_k.weight.mul_(scale)
    return model


def test_batches_hold_the_right_answer_and_are_reproducible():
    keys, values, query, target = ha.sample_batch(256, torch.Generator().manual_seed(1))
    assert keys.shape == values.shape == (256, ha.N_PAIRS)
    assert all(len(set(row.tolist())) == ha.N_PAIRS for row in keys)  # distinct keys
    slot = (keys == query[:, None]).float().argmax(dim=1)
    assert (keys == query[:, None]).sum(dim=1).eq(1).all()  # the query is exactly one of the keys
    assert torch.equal(values[torch.arange(256), slot], target)  # the answer is the value stored there
    again = ha.sample_batch(256, torch.Generator().manual_seed(1))
    assert all(torch.equal(a, b) for a, b in zip((keys, values, query, target), again))
    with pytest.raises(ValueError, match="n_pairs"):
        ha.sample_batch(4, torch.Generator(), n_pairs=ha.N_KEYS + 1)


def test_hard_read_has_no_gradient_path_to_the_scores():
    model = _model()
    keys, values, query, target = ha.sample_batch(8, torch.Generator().manual_seed(0))
    alpha = torch.softmax(model.scores(keys, query), dim=-1)
    j = torch.multinomial(alpha, 1).squeeze(1)
    loss = torch.nn.functional.cross_entropy(model.readout(model.E_v(values[torch.arange(8), j])), target)
    grads = torch.autograd.grad(loss, model.scoring_parameters(), allow_unused=True)
    assert all(g is None for g in grads)


@pytest.mark.parametrize("baseline", [0.0, 1.7])
def test_reinforce_estimate_is_unbiased_exactly_by_enumeration(baseline):
    """E_{j~alpha}[grad surrogate_j] = sum_j alpha_j grad surrogate_j equals grad of sum_j alpha_j l_j."""
    model = _model(scale=3.0)
    batch = ha.sample_batch(16, torch.Generator().manual_seed(2), n_pairs=6)
    keys, values, query, target = batch
    log_alpha = torch.log_softmax(model.scores(keys, query), dim=-1)
    logits = model.readout(model.E_v(values))  # (batch, n, N_VALUES): every possible read
    loss_all = torch.nn.functional.cross_entropy(logits.transpose(1, 2), target[:, None].expand_as(keys),
                                                 reduction="none")
    surrogate = ha.reinforce_surrogate(loss_all, log_alpha, baseline)
    expected_estimate = (log_alpha.detach().exp() * surrogate).sum(dim=1).mean()
    params = list(model.parameters())
    g_estimate = torch.autograd.grad(expected_estimate, params)
    g_exact = torch.autograd.grad(ha.expected_hard_loss(model, batch), params)
    for a, b in zip(g_estimate, g_exact):
        torch.testing.assert_close(a, b, rtol=1e-10, atol=1e-12)


def test_sampled_reinforce_gradient_matches_the_exact_gradient():
    """Monte Carlo: the mean of hard_loss's gradient over many samples j ~ alpha is within a few
    standard errors of the gradient of the expected loss computed by enumeration."""
    model = _model(scale=3.0)
    batch = ha.sample_batch(4, torch.Generator().manual_seed(3), n_pairs=6)
    exact = torch.cat([g.flatten() for g in torch.autograd.grad(ha.expected_hard_loss(model, batch),
                                                                list(model.parameters()))])
    repeats, runs = 2000, 10
    big = tuple(t.repeat(repeats) if t.dim() == 1 else t.repeat(repeats, 1) for t in batch)
    generator = torch.Generator().manual_seed(4)
    estimates = []
    for _ in range(runs):
        surrogate, _, _ = ha.hard_loss(model, big, baseline=2.0, generator=generator)
        estimates.append(torch.cat([g.flatten() for g in torch.autograd.grad(surrogate, list(model.parameters()))]))
    estimates = torch.stack(estimates)
    mean, stderr = estimates.mean(dim=0), estimates.std(dim=0) / math.sqrt(runs)
    assert exact.abs().max() > 1e-2  # a real gradient to compare with
    # E|mean - exact|^2 = sum of the squared standard errors if the estimate is unbiased
    assert (mean - exact).pow(2).sum() < 3 * stderr.pow(2).sum()
    assert (mean - exact).norm() < 0.01 * exact.norm()


def test_sampling_adds_variance_on_top_of_minibatch_noise():
    model = _model(scale=3.0)
    result = ha.gradient_variance(model, torch.Generator().manual_seed(5), ("soft", "hard", "exact"),
                                  baseline=1.0, n_batches=16)
    assert set(result) == {"soft", "hard", "exact"}
    assert result["hard"]["variance"] > 2 * result["exact"]["variance"]
    with pytest.raises(ValueError, match="estimators"):
        ha.gradient_variance(model, torch.Generator(), ("gumbel",))


def test_soft_attention_learns_and_training_is_reproducible():
    first = ha.train("soft", steps=200, n_pairs=8, progress=False)
    again = ha.train("soft", steps=200, n_pairs=8, progress=False)
    assert first["loss"] == again["loss"]
    assert sum(first["loss"][-20:]) / 20 < 0.5 * sum(first["loss"][:20]) / 20
    assert sum(first["accuracy"][-20:]) / 20 > 0.5
    assert sorted(first["grad_var"]) == [0, 50, 100, 150, 200]


def test_hard_attention_learns_with_reinforce():
    curves = ha.train("hard", steps=400, n_pairs=4, progress=False)
    assert set(curves["grad_var"][0]) == {"hard", "exact"}
    chance = 1 / ha.N_VALUES
    assert sum(curves["accuracy"][-50:]) / 50 > 3 * chance
    assert sum(curves["loss"][-50:]) / 50 < sum(curves["loss"][:50]) / 50 - 0.3


def test_bad_mode_is_refused():
    with pytest.raises(ValueError, match="mode"):
        ha.train("gumbel", steps=1)
    with pytest.raises(ValueError, match="steps"):
        ha.train("soft", steps=0)
