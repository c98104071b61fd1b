"""Soft vs hard attention on a key-value retrieval task.

Each example is a small dictionary of n (key, value) pairs and a query that equals one of the keys;
the answer is the value stored under that key. Keys, values and queries are symbols (integers),
generated in code. A model scores every key against the query,

    e_j = <E_q[query], E_k[k_j]> / sqrt(d),      alpha = softmax(e)          (the scoring part)

and then reads the values (the readout part, value embeddings E_v and an output layer W_o):

- **soft attention** reads the weighted mean c = sum_j alpha_j E_v[v_j]. It is a smooth function
  of alpha, so back-propagation trains the scoring part directly.
- **hard attention** samples one position j ~ alpha and reads c = E_v[v_j]. The sample is not a
  differentiable function of alpha: no gradient flows from the loss back to the scores. The
  scoring part is trained with the score-function (REINFORCE) estimator of the gradient of the
  expected loss L = E_{j~alpha}[l_j] = sum_j alpha_j l_j,

      grad L = E_{j~alpha}[(l_j - b) grad log alpha_j]    (+ the pathwise part for the readout),

  which is unbiased for any baseline b that does not depend on j; we use a running mean of the
  loss. It is unbiased but noisy, which :func:`gradient_variance` measures.

Usage::

    soft = train("soft")      # {"loss": [...], "accuracy": [...], "grad_var": {...}, "model": ...}
    hard = train("hard")
"""
from __future__ import annotations

import math

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from attnmarl import QUICK
from attnmarl.checks import check_bool, check_int, check_real, check_seed, derived_seed, is_int
from attnmarl.costs import check_numbers

__all__ = [
    "KeyValueBatch", "sample_batch", "KeyValueReader", "soft_loss", "reinforce_surrogate", "hard_loss",
    "expected_hard_loss", "scoring_gradient", "gradient_variance", "train", "MODES", "ESTIMATORS",
]

# ---------------------------------------------------------------------------------------------
# Hyperparameters (the same for soft and hard)
# ---------------------------------------------------------------------------------------------
SEED = 0
N_PAIRS = 16                # n key/value pairs per example
N_KEYS = 32                 # key symbols; the keys of one example are distinct
N_VALUES = 10               # value symbols
D = 16                      # embedding size d
BATCH_SIZE = 64
LEARNING_RATE = 3e-3
BASELINE_DECAY = 0.95       # b <- decay * b + (1 - decay) * mean loss of the batch
TRAIN_STEPS = 300 if QUICK else 2000
VARIANCE_BATCHES = 8 if QUICK else 32     # mini-batches per gradient-variance measurement
VARIANCE_CHECKPOINTS = 5                  # measurements spread over training (first at step 0)
MODES = ("soft", "hard")
ESTIMATORS = ("soft", "hard", "exact")

KeyValueBatch = tuple[Tensor, Tensor, Tensor, Tensor]
"""(keys (batch, n), values (batch, n), query (batch,), target (batch,)), all integer symbols."""


def sample_batch(batch_size: int, generator: torch.Generator, n_pairs: int = N_PAIRS) -> KeyValueBatch:
    """Random dictionaries: n distinct keys, n values, a query equal to one key, its value as target (an empty
    batch for ``batch_size`` 0; the keys are drawn as a (batch_size, N_KEYS) array, refused up front if huge)."""
    if not is_int(n_pairs) or not 1 <= n_pairs <= N_KEYS:
        raise ValueError(f"n_pairs must be between 1 and N_KEYS = {N_KEYS}; got {n_pairs!r}")
    check_numbers("the batch's key draws", ("batch_size", batch_size), ("N_KEYS", N_KEYS), minimum=0)
    keys = torch.rand(batch_size, N_KEYS, generator=generator).argsort(dim=1)[:, :n_pairs]
    values = torch.randint(N_VALUES, (batch_size, n_pairs), generator=generator)
    slot = torch.randint(n_pairs, (batch_size,), generator=generator)
    rows = torch.arange(batch_size)
    return keys, values, keys[rows, slot], values[rows, slot]


class KeyValueReader(nn.Module):
    """Scores the keys against the query (:meth:`scores`, then alpha = softmax(e)) and turns the
    vector read from the values into logits over the value symbols (:meth:`readout`).

    Scoring parameters: ``E_q`` and ``E_k`` (query and key embeddings). Readout parameters:
    ``E_v`` (value embeddings) and ``W_o``.
    """

    def __init__(self, d: int = D) -> None:
        super().__init__()
        check_int("d", d, maximum=2**16)  # d = 0 built a model of empty embeddings
        self.E_q, self.E_k = nn.Embedding(N_KEYS, d), nn.Embedding(N_KEYS, d)
        self.E_v = nn.Embedding(N_VALUES, d)
        self.W_o = nn.Linear(d, N_VALUES)

    def scoring_parameters(self) -> list[nn.Parameter]:
        """The parameters that only affect alpha: the part hard attention cannot back-propagate into."""
        return [self.E_q.weight, self.E_k.weight]

    def scores(self, keys: Tensor, query: Tensor) -> Tensor:
        """e_j = <E_q[query], E_k[k_j]> / sqrt(d): keys (batch, n), query (batch,) -> e (batch, n)."""
        q, k = self.E_q(query), self.E_k(keys)
        return torch.einsum("bd,bnd->bn", q, k) / math.sqrt(q.shape[-1])

    def readout(self, c: Tensor) -> Tensor:
        """Logits over the value symbols from a read vector c (..., d)."""
        return self.W_o(c)


def soft_loss(model: KeyValueReader, batch: KeyValueBatch) -> tuple[Tensor, Tensor]:
    """Soft attention: c = sum_j alpha_j E_v[v_j]; returns (mean cross-entropy, correct (batch,))."""
    keys, values, query, target = batch
    alpha = torch.softmax(model.scores(keys, query), dim=-1)
    c = torch.einsum("bn,bnd->bd", alpha, model.E_v(values))
    logits = model.readout(c)
    return nn.functional.cross_entropy(logits, target), logits.argmax(dim=-1) == target


def reinforce_surrogate(loss_j: Tensor, log_alpha_j: Tensor, baseline: float) -> Tensor:
    """Per-example surrogate whose gradient is the hard-attention gradient estimate.

    d/dtheta [l_j + (l_j - b) log alpha_j] with l_j held constant in the second term
    = grad l_j (pathwise, readout) + (l_j - b) grad log alpha_j (score function, scoring part).
    """
    check_real("baseline", baseline)  # a NaN baseline makes every gradient NaN: a divergence that is no divergence
    return loss_j + (loss_j.detach() - baseline) * log_alpha_j


def hard_loss(model: KeyValueReader, batch: KeyValueBatch, baseline: float, generator: torch.Generator
              ) -> tuple[Tensor, Tensor, Tensor]:
    """Hard attention: sample j ~ alpha, read c = E_v[v_j].

    Returns (mean surrogate to call ``backward`` on, the sampled losses l_j (batch,), correct (batch,)).
    """
    keys, values, query, target = batch
    log_alpha = torch.log_softmax(model.scores(keys, query), dim=-1)
    j = torch.multinomial(log_alpha.detach().exp(), 1, generator=generator).squeeze(1)
    rows = torch.arange(len(j))
    logits = model.readout(model.E_v(values[rows, j]))
    loss_j = nn.functional.cross_entropy(logits, target, reduction="none")
    surrogate = reinforce_surrogate(loss_j, log_alpha[rows, j], baseline)
    return surrogate.mean(), loss_j.detach(), logits.argmax(dim=-1) == target


def expected_hard_loss(model: KeyValueReader, batch: KeyValueBatch) -> Tensor:
    """The exact objective of hard attention by enumeration: mean over the batch of sum_j alpha_j l_j."""
    keys, values, query, target = batch
    alpha = torch.softmax(model.scores(keys, query), dim=-1)
    logits = model.readout(model.E_v(values))  # (batch, n, N_VALUES): the logits if position j were read
    loss_all = nn.functional.cross_entropy(logits.transpose(1, 2), target.unsqueeze(1).expand_as(keys),
                                           reduction="none")  # l_j for every j: (batch, n)
    return (alpha * loss_all).sum(dim=1).mean()


def scoring_gradient(model: KeyValueReader, loss: Tensor) -> Tensor:
    """The gradient of ``loss`` with respect to the scoring parameters, flattened into one vector."""
    grads = torch.autograd.grad(loss, model.scoring_parameters())
    return torch.cat([g.flatten() for g in grads])


def _estimate(model: KeyValueReader, estimator: str, batch: KeyValueBatch, baseline: float,
              generator: torch.Generator) -> Tensor:
    """One mini-batch's scoring gradient: ``soft`` (backprop of the soft loss), ``hard`` (the
    REINFORCE estimate) or ``exact`` (backprop of the enumerated expected hard loss)."""
    if estimator == "soft":
        return scoring_gradient(model, soft_loss(model, batch)[0])
    if estimator == "hard":
        return scoring_gradient(model, hard_loss(model, batch, baseline, generator)[0])
    return scoring_gradient(model, expected_hard_loss(model, batch))


def gradient_variance(model: KeyValueReader, generator: torch.Generator, estimators: tuple[str, ...] = ("soft",),
                      baseline: float = 0.0, n_batches: int = VARIANCE_BATCHES, batch_size: int = BATCH_SIZE,
                      n_pairs: int = N_PAIRS) -> dict[str, dict[str, float]]:
    """How noisy each scoring-gradient estimate is at the model's current parameters.

    Draws ``n_batches`` fresh mini-batches and computes, on the same batches, the estimate g_k of
    every estimator in ``estimators`` (see :data:`ESTIMATORS`). For each returns ``variance`` =
    sum over parameters of Var_k(g_k) (the trace of the covariance) and ``mean_sq_norm`` =
    |mean_k g_k|^2. ``hard`` and ``exact`` estimate the same gradient, so the gap between their
    variances is the noise that sampling j ~ alpha adds on top of the mini-batch noise.
    """
    check_int("n_batches", n_batches, minimum=2)  # the variance of one estimate is undefined (NaN)
    unknown = set(estimators) - set(ESTIMATORS)
    if unknown or not estimators:
        raise ValueError(f"estimators must be a non-empty subset of {ESTIMATORS}; got {estimators!r}")
    grads: dict[str, list[Tensor]] = {name: [] for name in estimators}
    for _ in range(n_batches):
        batch = sample_batch(batch_size, generator, n_pairs)
        for name in estimators:
            grads[name].append(_estimate(model, name, batch, baseline, generator))
    result = {}
    for name, gs in grads.items():
        g = torch.stack(gs)
        result[name] = {"variance": g.var(dim=0).sum().item(), "mean_sq_norm": g.mean(dim=0).pow(2).sum().item()}
    return result


def train(mode: str, steps: int = TRAIN_STEPS, n_pairs: int = N_PAIRS, batch_size: int = BATCH_SIZE,
          lr: float = LEARNING_RATE, seed: int = SEED, progress: bool = True) -> dict:
    """Train a :class:`KeyValueReader` with soft or hard attention (Adam, fresh batches every step).

    Returns a dict with the per-step ``loss`` (soft: cross-entropy; hard: the sampled l_j, an
    unbiased estimate of the expected loss) and ``accuracy`` (share of the batch answered right),
    ``grad_var`` {step: :func:`gradient_variance` result} at VARIANCE_CHECKPOINTS steps (estimator
    ``soft`` for soft attention; ``hard`` and ``exact`` on the same batches for hard), and the
    trained ``model``. The same seed gives both modes the same initial weights and batches.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}; got {mode!r}")
    check_int("steps", steps)
    check_numbers("the batch's key draws", ("batch_size", batch_size), ("N_KEYS", N_KEYS))  # before any step
    check_real("lr", lr, 0.0, 1.0, low_open=True)
    check_seed(seed)
    check_bool("progress", progress)
    sample_batch(1, torch.Generator(), n_pairs)  # n_pairs, checked before any step
    torch.manual_seed(seed)
    model = KeyValueReader()
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    data, sampling, probe = (torch.Generator().manual_seed(derived_seed(seed, i)) for i in range(3))
    checkpoints = {round(i * steps / (VARIANCE_CHECKPOINTS - 1)) for i in range(VARIANCE_CHECKPOINTS)}
    baseline = math.log(N_VALUES)  # the cross-entropy of a uniform guess, where training starts
    estimators = ("soft",) if mode == "soft" else ("hard", "exact")
    curves = {"loss": [], "accuracy": [], "grad_var": {}}

    def measure_variance() -> dict[str, dict[str, float]]:
        return gradient_variance(model, probe, estimators, baseline, n_pairs=n_pairs)

    for step in tqdm(range(steps), desc=f"training ({mode} attention)", disable=not progress):
        if step in checkpoints:
            curves["grad_var"][step] = measure_variance()
        batch = sample_batch(batch_size, data, n_pairs)
        if mode == "soft":
            loss, correct = soft_loss(model, batch)
            observed = loss.detach()
        else:
            loss, loss_j, correct = hard_loss(model, batch, baseline, sampling)
            observed = loss_j.mean()
            baseline = BASELINE_DECAY * baseline + (1 - BASELINE_DECAY) * observed.item()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        curves["loss"].append(observed.item())
        curves["accuracy"].append(correct.float().mean().item())
    curves["grad_var"][steps] = measure_variance()
    curves["model"] = model
    return curves
