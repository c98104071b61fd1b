"""Attention in seq2seq: a GRU encoder-decoder with and without Bahdanau (additive) attention.

The task is a toy translation generated in code, never downloaded: a date, or a range of two
dates, written the way people write them, to ISO 8601 (a range becomes an ISO interval "start/end"),

    "21/11/2026"                                    ->  "2026-11-21"
    "Saturday, the twenty-first of November, 2026"  ->  "2026-11-21"
    "from nov 21, 2026 to 3 Jan 2027"               ->  "2026-11-21/2027-01-03"

Both sides are sequences of characters. The fields come out in a different order than they go in
(year first), a month name becomes two digits, and a spelled-out day becomes two digits, so the
alignment between output and input characters is visible and is not the identity. Inputs run from
10 to about 100 characters. Long inputs are long for two reasons: wordy formats (a weekday, "the
... of ...") and ranges, which hold two dates. The second reason is what strains the model without
attention: everything the output needs must fit through one fixed vector C, and a range asks it to
carry twice as much.

Two models share every part but one (:class:`Seq2Seq`, ``attention=False`` or ``True``):

- **no attention** (Cho et al. 2014): the decoder gets the encoder's final state C, the same
  vector at every step, y_1 = G(C), y_2 = G(C, y_1), ... Everything about the input has to pass
  through C: the *fixed-context bottleneck*.
- **additive attention** (Bahdanau et al. 2015): at every output step t' the decoder scores every
  encoder annotation h_t, normalises the scores with a softmax, and reads its own context
  c_t' = sum_t alpha_t't h_t.

Usage::

    train_dates, test_dates = split_dates()
    model = new_model(attention=True)
    losses = train(model, train_dates)
    rows = evaluate(model, make_examples(test_dates, 2000))      # accuracy by input length
    text, alpha, src_tokens, out_tokens = translate(model, "Monday, 4 May 1987")
    model = load_pretrained(attention=True)                     # the shipped checkpoint

The shipped checkpoints and their training log were made with
``python -m attnmarl.seq2seq --train --out src/attnmarl/assets/seq2seq``.
"""
from __future__ import annotations

import argparse
import datetime
import hashlib
import io
import json
import random
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from attnmarl import QUICK
from attnmarl.attention import masked_softmax
from attnmarl.checks import (
    check_bool,
    check_int,
    check_real,
    check_seed,
    check_sizes,
    cli_episodes,
    cli_int,
    cli_seed,
    cli_threads,
    is_int,
)
from attnmarl.files.atomic import check_new_files, check_writable_folder, save_files, write_atomically
from attnmarl.files.sealed import check_finite_weights, check_seal, check_shapes, check_stored, load_trusted, seal
from attnmarl.interrupt import run_command

__all__ = [
    "FORMATS", "RANGE_FORMATS", "render_date", "split_dates", "sample_example", "sample_examples", "make_examples",
    "Vocab", "SRC_VOCAB", "TGT_VOCAB", "PAD", "SOS", "EOS", "SPECIALS", "MAX_INPUT", "check_examples", "encode_batch",
    "make_batch",
    "Seq2SeqConfig", "Encoder", "AdditiveAttention", "ContextGRUCell", "Decoder", "Seq2Seq", "new_model",
    "sequence_loss", "train", "greedy_translate", "evaluate", "accuracy_table", "translate",
    "checkpoint_data", "save_checkpoint", "load_checkpoint", "check_outputs", "load_pretrained", "load_training_log",
    "ARCHITECTURES",
    "PRETRAINED_DIR", "LENGTH_BUCKETS",
]

# ---------------------------------------------------------------------------------------------
# Hyperparameters (the same for both models: the only difference between them is attention)
# ---------------------------------------------------------------------------------------------
SEED = 0
FIRST_DATE, LAST_DATE = datetime.date(1950, 1, 1), datetime.date(2049, 12, 31)
TEST_FRACTION = 0.1            # share of all dates held out; test dates never appear in training
RANGE_SHARE = 0.5              # share of examples that are a range of two dates
D_EMB = 32                     # character embedding size (source and target)
N_HIDDEN = 32                  # encoder GRU size per direction; annotations h_t have 2 * N_HIDDEN
D_S = 64                       # decoder state s_t'
D_ATT = 32                     # hidden width of the additive score
BATCH_SIZE = 64
LEARNING_RATE = 3e-3
GRAD_CLIP = 1.0                # largest gradient norm per step
TRAIN_STEPS = 50 if QUICK else 500
LENGTH_BUCKETS = (20, 35, 50, 65)       # input-length buckets 1-20, 21-35, 36-50, 51-65, 66+

# ---------------------------------------------------------------------------------------------
# The data: dates, written many ways
# ---------------------------------------------------------------------------------------------
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August",
          "September", "October", "November", "December")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_UNITS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth")
ORDINAL_WORDS = (
    _UNITS + ("tenth", "eleventh", "twelfth", "thirteenth", "fourteenth", "fifteenth", "sixteenth",
              "seventeenth", "eighteenth", "nineteenth", "twentieth")
    + tuple(f"twenty-{u}" for u in _UNITS) + ("thirtieth", "thirty-first")
)
"""ORDINAL_WORDS[d - 1] spells day d: "first", ..., "twenty-first", ..., "thirty-first"."""

FORMATS = (
    "{dd}/{mm}/{yyyy}",
    "{dd}.{mm}.{yyyy}",
    "{d} {Mon} {yyyy}",
    "{mon} {d}, {yyyy}",
    "{d} {Month} {yyyy}",
    "{Month} {d}, {yyyy}",
    "{Wkd} {d} {Mon} {yyyy}",
    "{Weekday}, {d} {Month} {yyyy}",
    "{Weekday}, {Month} {ord}, {yyyy}",
    "the {ord} of {Month} {yyyy}",
    "{Weekday} the {ord} of {Month}, {yyyy}",
    "the {word} of {Month}, {yyyy}",
    "{Weekday}, the {word} of {Month}, {yyyy}",
)
"""The ways a date is written: ``str.format`` templates over the fields of :func:`render_date`."""
RANGE_FORMATS = ("from {start} to {end}", "{start} until {end}", "between {start} and {end}")
"""The ways a range is written, ``start`` and ``end`` each in one of :data:`FORMATS`."""


def _ordinal_suffix(day: int) -> str:
    """English ordinal suffix: 1st, 2nd, 3rd, 4th, ..., 11th, 12th, 13th, ..., 21st, 22nd, 31st."""
    if day in (11, 12, 13):
        return "th"
    return {1: "st", 2: "nd", 3: "rd"}.get(day % 10, "th")


def render_date(date: datetime.date, template: str) -> str:
    """Write ``date`` with one of :data:`FORMATS`; the weekday is always the date's true weekday."""
    month, weekday = MONTHS[date.month - 1], WEEKDAYS[date.weekday()]
    return template.format(
        d=date.day, dd=f"{date.day:02d}", mm=f"{date.month:02d}", yyyy=f"{date.year:04d}",
        ord=f"{date.day}{_ordinal_suffix(date.day)}", word=ORDINAL_WORDS[date.day - 1],
        Month=month, Mon=month[:3], mon=month[:3].lower(), Weekday=weekday, Wkd=weekday[:3],
    )


def split_dates(seed: int = SEED, test_fraction: float = TEST_FRACTION
                ) -> tuple[list[datetime.date], list[datetime.date]]:
    """All dates FIRST_DATE..LAST_DATE shuffled by ``seed`` and cut into disjoint train and test sets."""
    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must lie strictly between 0 and 1; got {test_fraction}")
    n_days = (LAST_DATE - FIRST_DATE).days + 1
    dates = [FIRST_DATE + datetime.timedelta(days=i) for i in range(n_days)]
    random.Random(seed).shuffle(dates)
    n_test = round(test_fraction * n_days)
    return dates[n_test:], dates[:n_test]


def sample_example(dates: list[datetime.date], rng: random.Random) -> tuple[str, str]:
    """One pair (human-readable text, ISO 8601): a single date, or with probability RANGE_SHARE a
    range "start/end" of two dates (start <= end); dates and formats are drawn uniformly."""
    if rng.random() >= RANGE_SHARE:
        date = rng.choice(dates)
        return render_date(date, rng.choice(FORMATS)), date.isoformat()
    start, end = sorted((rng.choice(dates), rng.choice(dates)))
    text = rng.choice(RANGE_FORMATS).format(start=render_date(start, rng.choice(FORMATS)),
                                            end=render_date(end, rng.choice(FORMATS)))
    return text, f"{start.isoformat()}/{end.isoformat()}"


def sample_examples(dates: list[datetime.date], n: int, rng: random.Random) -> list[tuple[str, str]]:
    """``n`` pairs from :func:`sample_example` (``n`` >= 0: a negative count is refused, not read as none)."""
    check_int("n", n, minimum=0)
    if not dates:
        raise ValueError("cannot sample examples from an empty list of dates")
    return [sample_example(dates, rng) for _ in range(n)]


def make_examples(dates: list[datetime.date], n: int, seed: int = SEED) -> list[tuple[str, str]]:
    """A fixed, reproducible list of ``n`` examples (e.g. the held-out test set)."""
    return sample_examples(dates, n, random.Random(seed))


# ---------------------------------------------------------------------------------------------
# Characters <-> token ids
# ---------------------------------------------------------------------------------------------
PAD, SOS, EOS = 0, 1, 2
SPECIALS = ("<pad>", "<sos>", "<eos>")


class Vocab:
    """Characters <-> ids; ids 0, 1, 2 are <pad>, <sos>, <eos>, then the characters in order."""

    def __init__(self, characters: str) -> None:
        self.itos = list(SPECIALS) + sorted(set(characters))
        self.stoi = {token: i for i, token in enumerate(self.itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def encode(self, text: str, add_eos: bool = False) -> list[int]:
        """Ids of the characters of ``text`` (plus <eos>); ValueError names any unknown character."""
        if not text:
            raise ValueError("cannot encode an empty string")
        unknown = sorted({ch for ch in text if ch not in self.stoi})
        if unknown:
            raise ValueError(f"characters {unknown} of {text!r} are not in the vocabulary "
                             f"(known: {''.join(self.itos[len(SPECIALS):])!r})")
        return [self.stoi[ch] for ch in text] + ([EOS] if add_eos else [])

    def decode(self, ids: list[int]) -> str:
        """The characters of ``ids`` up to the first <eos>, skipping <pad> and <sos>."""
        out = []
        for i in ids:
            if i == EOS:
                break
            if i >= len(SPECIALS):
                out.append(self.itos[i])
        return "".join(out)


SRC_VOCAB = Vocab("".join(MONTHS) + "".join(WEEKDAYS) + "".join(ORDINAL_WORDS) + "abcdefghijklmnopqrstuvwxyz"
                  + "0123456789 ,./")
TGT_VOCAB = Vocab("0123456789-/")
T_OUT = len("yyyy-mm-dd/yyyy-mm-dd") + 1  # the longest output and its <eos>
MAX_INPUT = 120
"""The longest text :func:`translate` reads, in characters: the longest input of the data set (a range of two
long dates) has 103; a longer one is no date the models know, and its alignment would be too wide to show."""


def check_examples(examples: Any, name: str = "examples") -> list[tuple[str, str]]:
    """``examples`` as a list if it is a non-empty sequence of (text, target) pairs that the models can be judged
    on: strings, each text of at most :data:`MAX_INPUT` characters of the source vocabulary, each target of the
    target vocabulary's; else ``ValueError`` naming the first example that is not (``examples[3]: ...``), not a
    ``TypeError`` from inside the encoder, nor an error that says which string but not which example."""
    if not isinstance(examples, Sequence) or isinstance(examples, str) or not examples:
        raise ValueError(f"{name} must be a non-empty list of (text, target) pairs; got {examples!r:.80}")
    for i, pair in enumerate(examples):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and all(isinstance(t, str) for t in pair)):
            raise ValueError(f"{name} must be a non-empty list of (text, target) pairs of strings; {name}[{i}] is "
                             f"{pair!r:.80}")
        text, target = pair
        try:
            if len(text) > MAX_INPUT:
                raise ValueError(f"the text has {len(text):,} characters; the models read at most {MAX_INPUT}")
            SRC_VOCAB.encode(text)
            TGT_VOCAB.encode(target)
        except ValueError as error:
            raise ValueError(f"{name}[{i}] = {(text[:40], target[:40])!r}: {error}") from None
    return list(examples)


def encode_batch(texts: list[str], vocab: Vocab, add_eos: bool = False) -> tuple[Tensor, Tensor]:
    """Ids (batch, T) padded with <pad> on the right, and the mask (batch, T), True = a real token."""
    if not texts:
        raise ValueError("cannot encode an empty batch")
    rows = [vocab.encode(text, add_eos) for text in texts]
    ids = torch.full((len(rows), max(map(len, rows))), PAD, dtype=torch.long)
    for b, row in enumerate(rows):
        ids[b, :len(row)] = torch.tensor(row)
    return ids, ids != PAD


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Seq2SeqConfig:
    """Everything that fixes the architecture; stored in every checkpoint."""

    attention: bool
    d_emb: int = D_EMB
    n_hidden: int = N_HIDDEN
    d_s: int = D_S
    d_att: int = D_ATT
    n_src: int = len(SRC_VOCAB)
    n_tgt: int = len(TGT_VOCAB)

    def __post_init__(self) -> None:
        check_bool("attention", self.attention)  # a string such as 'no' would build the attention model
        check_sizes(d_emb=self.d_emb, n_hidden=self.n_hidden, d_s=self.d_s, d_att=self.d_att, n_src=self.n_src,
                    n_tgt=self.n_tgt)


class Encoder(nn.Module):
    """Bidirectional GRU over the source characters (Bahdanau et al. 2015, sec. 3.2).

    Each annotation h_t = [->h_t ; <-h_t] (size 2n) summarises the whole input with a focus on
    character t: the forward GRU has read x_1..x_t, the backward GRU x_t..x_T. We use the
    bidirectional encoder for *both* models, so the no-attention model is not handicapped: its
    context C = [->h_T ; <-h_1] holds the two final states, each having just read one end of the
    input (Cho et al. 2014 used a one-directional encoder and C = h_T, which would only make the
    bottleneck worse). Inputs are padded on the right, and each direction reads the real characters
    only, so ->h_T is the state after the last *real* character.
    """

    def __init__(self, cfg: Seq2SeqConfig) -> None:
        super().__init__()
        self.embed = nn.Embedding(cfg.n_src, cfg.d_emb, padding_idx=PAD)
        self.gru = nn.GRU(cfg.d_emb, cfg.n_hidden, batch_first=True, bidirectional=True)

    def forward(self, x: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """x, mask (batch, T_in) -> annotations H (batch, T_in, 2n) (zero at padding), C (batch, 2n).

        Every row is padded on the right and holds at least one real character. The forward GRU reads a
        row from its start, so its states at the real characters never see the padding behind them. The
        backward GRU must start at the row's last real character, not at its padding: it reads a copy of
        the row rotated right by its padding (padding first, then the characters), and its states are
        rotated back. Both directions so read the real characters only — what packing the batch would
        do, with no lengths on the CPU, so the encoder runs wherever x lives.
        """
        batch, T = x.shape
        n = self.gru.hidden_size
        lengths = mask.sum(dim=1, keepdim=True)  # (batch, 1)
        t = torch.arange(T, device=x.device)
        rotated = x.gather(1, (t - (T - lengths)) % T)  # row b shifted right by its padding, T - length_b
        out, _ = self.gru(self.embed(torch.cat([x, rotated])))  # (2 batch, T, 2n), of which two quarters are kept:
        forward_H = out[:batch, :, :n]  # the forward states of x and the backward states of the rotated copy
        backward_H = out[batch:, :, n:].gather(1, ((t + T - lengths) % T).unsqueeze(-1).expand(-1, -1, n))
        H = torch.cat([forward_H, backward_H], dim=-1).masked_fill(~mask.unsqueeze(-1), 0.0)
        last = forward_H.gather(1, (lengths - 1).unsqueeze(-1).expand(-1, 1, n)).squeeze(1)
        C = torch.cat([last, backward_H[:, 0]], dim=-1)  # [->h_T ; <-h_1]
        return H, C


class AdditiveAttention(nn.Module):
    """Bahdanau's alignment model: e_t't = v^T tanh(W_a s_t'-1 + U_a h_t), alpha = softmax_t(e).

    W_a is (d_att, d_s), U_a is (d_att, 2n), v is (d_att,), no biases (the paper's names, its
    appendix A.1.2): a one-hidden-layer network scoring how well input position t matches what the
    decoder, in state s_t'-1, needs next. U_a h_t does not depend on t', so :meth:`project` computes
    it once per source sentence.
    """

    def __init__(self, d_s: int, d_h: int, d_att: int) -> None:
        super().__init__()
        self.W_a = nn.Linear(d_s, d_att, bias=False)
        self.U_a = nn.Linear(d_h, d_att, bias=False)
        self.v = nn.Linear(d_att, 1, bias=False)

    def project(self, H: Tensor) -> Tensor:
        """U_a h_t for every t: (batch, T_in, 2n) -> (batch, T_in, d_att)."""
        return self.U_a(H)

    def forward(self, s_prev: Tensor, H: Tensor, U_aH: Tensor, mask: Tensor) -> tuple[Tensor, Tensor]:
        """One decoder step: s_t'-1 (batch, d_s) -> context c_t' (batch, 2n), alpha_t' (batch, T_in).

        e_t't = v^T tanh(W_a s_t'-1 + U_a h_t); alpha_t't = exp(e_t't) / sum_k exp(e_t'k) over the
        real positions (padding gets exactly 0); c_t' = sum_t alpha_t't h_t.
        """
        e = self.v(torch.tanh(self.W_a(s_prev).unsqueeze(1) + U_aH)).squeeze(-1)  # (batch, T_in)
        alpha = masked_softmax(e, mask, dim=-1)
        c = torch.einsum("bt,bth->bh", alpha, H)
        return c, alpha


class ContextGRUCell(nn.Module):
    """A GRU cell that also reads a context vector c (Bahdanau et al. 2015, appendix A.2.2).

        r_t' = sigma(W_r y_t'-1 + U_r s_t'-1 + W_cr c_t')            reset gate
        z_t' = sigma(W_z y_t'-1 + U_z s_t'-1 + W_cz c_t')            update gate
        s~_t' = tanh(W_s y_t'-1 + U_s (r_t' * s_t'-1) + W_cs c_t')   candidate state
        s_t'  = (1 - z_t') * s_t'-1 + z_t' * s~_t'

    This is the paper's convention: z is the share of the *new* candidate. ``torch.nn.GRUCell``
    uses z for the share of the *old* state and applies the reset gate after the matrix,
    r * (U_s s + b); with c = 0 the two cells agree when z's weights are negated and U_s is diagonal
    (or r = 1). Biases live in the W_* maps of y; the U_* and W_c* maps have none.
    """

    def __init__(self, d_y: int, d_s: int, d_c: int) -> None:
        super().__init__()
        self.W_r = nn.Linear(d_y, d_s)                # reset gate r
        self.U_r = nn.Linear(d_s, d_s, bias=False)
        self.W_cr = nn.Linear(d_c, d_s, bias=False)
        self.W_z = nn.Linear(d_y, d_s)                # update gate z
        self.U_z = nn.Linear(d_s, d_s, bias=False)
        self.W_cz = nn.Linear(d_c, d_s, bias=False)
        self.W_s = nn.Linear(d_y, d_s)                # candidate state s~
        self.U_s = nn.Linear(d_s, d_s, bias=False)
        self.W_cs = nn.Linear(d_c, d_s, bias=False)

    def forward(self, y_prev: Tensor, s_prev: Tensor, c: Tensor) -> Tensor:
        """(y_t'-1 (batch, d_y), s_t'-1 (batch, d_s), c_t' (batch, d_c)) -> s_t' (batch, d_s)."""
        r = torch.sigmoid(self.W_r(y_prev) + self.U_r(s_prev) + self.W_cr(c))
        z = torch.sigmoid(self.W_z(y_prev) + self.U_z(s_prev) + self.W_cz(c))
        s_tilde = torch.tanh(self.W_s(y_prev) + self.U_s(r * s_prev) + self.W_cs(c))
        return (1 - z) * s_prev + z * s_tilde


class Decoder(nn.Module):
    """The GRU decoder, with a fixed context (``attention=False``) or additive attention.

    s_0 = tanh(W_init C) in both models. At step t' the context is

        c_t' = C                                  (no attention: the same at every step)
        c_t' = sum_t alpha_t't h_t                (attention, :class:`AdditiveAttention`)

    then s_t' = ContextGRUCell(E y_t'-1, s_t'-1, c_t') and the logits of y_t' are
    W_o [s_t' ; c_t' ; E y_t'-1] (a linear "deep output").
    """

    def __init__(self, cfg: Seq2SeqConfig) -> None:
        super().__init__()
        d_h = 2 * cfg.n_hidden
        self.embed = nn.Embedding(cfg.n_tgt, cfg.d_emb, padding_idx=PAD)
        self.W_init = nn.Linear(d_h, cfg.d_s)
        self.cell = ContextGRUCell(cfg.d_emb, cfg.d_s, d_h)
        self.W_o = nn.Linear(cfg.d_s + d_h + cfg.d_emb, cfg.n_tgt)
        self.attention = AdditiveAttention(cfg.d_s, d_h, cfg.d_att) if cfg.attention else None

    def init_state(self, H: Tensor, C: Tensor) -> tuple[Tensor, Tensor | None]:
        """s_0 = tanh(W_init C), and U_a h_t precomputed for the attention model."""
        U_aH = self.attention.project(H) if self.attention is not None else None
        return torch.tanh(self.W_init(C)), U_aH

    def step(self, y_prev: Tensor, s_prev: Tensor, H: Tensor, C: Tensor, U_aH: Tensor | None,
             mask: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
        """One output step: y_t'-1 ids (batch,) -> logits (batch, n_tgt), s_t', alpha_t' or None."""
        if self.attention is None:
            c, alpha = C, None
        else:
            c, alpha = self.attention(s_prev, H, U_aH, mask)
        y_emb = self.embed(y_prev)
        s = self.cell(y_emb, s_prev, c)
        logits = self.W_o(torch.cat([s, c, y_emb], dim=-1))
        return logits, s, alpha

    def forward(self, y_in: Tensor, H: Tensor, C: Tensor, mask: Tensor) -> tuple[Tensor, Tensor | None]:
        """Teacher forcing: y_in = <sos> y_1 .. y_T'-1 (batch, T_out) -> logits (batch, T_out, n_tgt),
        alpha (batch, T_out, T_in) or None."""
        s, U_aH = self.init_state(H, C)
        logits, alphas = [], []
        for t in range(y_in.shape[1]):
            step_logits, s, alpha = self.step(y_in[:, t], s, H, C, U_aH, mask)
            logits.append(step_logits)
            alphas.append(alpha)
        return torch.stack(logits, dim=1), (torch.stack(alphas, dim=1) if self.attention is not None else None)


class Seq2Seq(nn.Module):
    """Encoder + decoder. ``forward(src, src_mask, y_in)`` -> (logits, alpha or None)."""

    def __init__(self, cfg: Seq2SeqConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.encoder = Encoder(cfg)
        self.decoder = Decoder(cfg)

    def forward(self, src: Tensor, src_mask: Tensor, y_in: Tensor) -> tuple[Tensor, Tensor | None]:
        H, C = self.encoder(src, src_mask)
        return self.decoder(y_in, H, C, src_mask)


def new_model(attention: bool, seed: int = SEED) -> Seq2Seq:
    """A freshly initialised model; the same seed gives both architectures the same shared weights
    (encoder, embeddings, cell), since the attention module is created after them."""
    torch.manual_seed(seed)
    return Seq2Seq(Seq2SeqConfig(attention=attention))


# ---------------------------------------------------------------------------------------------
# Training and evaluation
# ---------------------------------------------------------------------------------------------
def make_batch(pairs: list[tuple[str, str]]) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """(text, ISO) pairs -> source ids and mask (batch, T_in), the teacher-forced decoder input
    <sos> y_1 .. y_T'-1 and the target y_1 .. y_T'-1 <eos>, both (batch, T_out)."""
    src, src_mask = encode_batch([s for s, _ in pairs], SRC_VOCAB)
    tgt, _ = encode_batch([t for _, t in pairs], TGT_VOCAB, add_eos=True)
    y_in = torch.cat([torch.full((len(pairs), 1), SOS, dtype=torch.long), tgt[:, :-1]], dim=1)
    return src, src_mask, y_in, tgt


def sequence_loss(logits: Tensor, tgt: Tensor) -> Tensor:
    """Mean cross-entropy -log p(y_t' | y_<t', x) over the non-<pad> target tokens."""
    return nn.functional.cross_entropy(logits.flatten(0, 1), tgt.flatten(), ignore_index=PAD)


def train(model: Seq2Seq, train_dates: list[datetime.date], steps: int = TRAIN_STEPS,
          batch_size: int = BATCH_SIZE, lr: float = LEARNING_RATE, seed: int = SEED,
          progress: bool = True) -> list[float]:
    """Teacher-forced training with Adam on fresh random batches; returns the loss of every step.

    The same ``seed`` gives the same batches, so the two models see exactly the same data.
    """
    if not isinstance(model, Seq2Seq):
        raise ValueError(f"model must be a Seq2Seq (for example seq2seq.new_model(True)); got {type(model).__name__}")
    check_int("steps", steps)
    check_int("batch_size", batch_size)
    lr = check_real("lr", lr, 0.0, 1.0, low_open=True)  # torch's own message for NaN names no argument
    check_bool("progress", progress)
    check_seed(seed)
    rng = random.Random(seed)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    model.train()
    losses = []
    label = "attention" if model.cfg.attention else "no attention"
    for _ in tqdm(range(steps), desc=f"training ({label})", disable=not progress):
        src, src_mask, y_in, tgt = make_batch(sample_examples(train_dates, batch_size, rng))
        logits, _ = model(src, src_mask, y_in)
        loss = sequence_loss(logits, tgt)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        optimizer.step()
        losses.append(loss.item())
    return losses


@torch.no_grad()
def greedy_translate(model: Seq2Seq, src: Tensor, src_mask: Tensor, max_len: int = T_OUT
                     ) -> tuple[Tensor, Tensor | None]:
    """Greedy decoding, y_t' = argmax p(y | y_<t', x), fed back as the next input.

    Returns ids (batch, max_len) and alpha (batch, max_len, T_in) or None. Decoding runs the full
    ``max_len`` steps; everything after the first <eos> is ignored by :meth:`Vocab.decode`.
    """
    model.eval()
    H, C = model.encoder(src, src_mask)
    s, U_aH = model.decoder.init_state(H, C)
    y = torch.full((src.shape[0],), SOS, dtype=torch.long)
    ids, alphas = [], []
    for _ in range(max_len):
        logits, s, alpha = model.decoder.step(y, s, H, C, U_aH, src_mask)
        y = logits.argmax(dim=-1)
        ids.append(y)
        alphas.append(alpha)
    return torch.stack(ids, dim=1), (torch.stack(alphas, dim=1) if model.cfg.attention else None)


def _bucket_label(edges: tuple[int, ...], i: int) -> str:
    """"1-20", "21-35", ..., and "66+" for the open last bucket."""
    low = edges[i - 1] + 1 if i else 1
    return f"{low}-{edges[i]}" if i < len(edges) else f"{low}+"


def evaluate(model: Seq2Seq, examples: list[tuple[str, str]], buckets: tuple[int, ...] = LENGTH_BUCKETS,
             batch_size: int = 500) -> list[dict]:
    """Greedy-decoding accuracy by input length on ``examples`` (e.g. the held-out test set).

    One row per length bucket (``buckets`` are the inclusive upper edges; the last bucket is
    open), and a last row "all": ``length``, ``n``, ``exact`` (share of outputs equal to the
    target), ``token`` (share of the target's positions, its <eos> included, predicted right).
    """
    examples = check_examples(examples)
    if (not isinstance(buckets, Sequence) or not all(is_int(b) and b >= 1 for b in buckets)
            or list(buckets) != sorted(set(buckets))):
        raise ValueError(f"buckets must be increasing positive ints, the upper edges of the length buckets; "
                         f"got {buckets!r}")
    check_int("batch_size", batch_size)
    exact, token, lengths = [], [], []
    for start in range(0, len(examples), batch_size):
        src, src_mask, _, tgt = make_batch(examples[start:start + batch_size])
        ids, _ = greedy_translate(model, src, src_mask, max_len=tgt.shape[1])
        real = tgt != PAD
        hit = (ids == tgt) & real
        exact.append((hit | ~real).all(dim=1))
        token.append(hit.sum(dim=1) / real.sum(dim=1))
        lengths.append(src_mask.sum(dim=1))
    exact_t, token_t, length_t = torch.cat(exact).float(), torch.cat(token), torch.cat(lengths)
    bucket = torch.bucketize(length_t, torch.tensor(buckets))
    rows = []
    for i in range(len(buckets) + 1):
        sel = bucket == i
        if sel.any():
            rows.append({"length": _bucket_label(buckets, i), "n": int(sel.sum()),
                         "exact": exact_t[sel].mean().item(), "token": token_t[sel].mean().item()})
    rows.append({"length": "all", "n": len(examples), "exact": exact_t.mean().item(), "token": token_t.mean().item()})
    return rows


def translate(model: Seq2Seq, text: str) -> tuple[str, Tensor | None, list[str], list[str]]:
    """Translate one user-typed string.

    Returns (output string, alpha (T_out, T_in) or None, input tokens, output tokens); the output
    tokens are the decoded tokens up to and including the first <eos> (T_out of them), the input
    tokens are the characters of ``text`` (T_in). Raises ValueError on an empty string, a string of more
    than :data:`MAX_INPUT` characters or a character outside the source vocabulary.
    """
    if not isinstance(model, Seq2Seq):
        raise ValueError(f"model must be a Seq2Seq (for example seq2seq.load_pretrained(True)); got "
                         f"{type(model).__name__}")
    if not isinstance(text, str):
        raise ValueError(f"text must be a string; got {type(text).__name__}")
    if len(text) > MAX_INPUT:
        raise ValueError(f"the text has {len(text):,} characters; the models read at most {MAX_INPUT} (a date or a "
                         "range of two dates, as in the data set, whose longest input has 103)")
    src, src_mask = encode_batch([text], SRC_VOCAB)
    ids, alpha = greedy_translate(model, src, src_mask)
    ids_list = ids[0].tolist()
    T_out = ids_list.index(EOS) + 1 if EOS in ids_list else len(ids_list)
    out_tokens = [TGT_VOCAB.itos[i] for i in ids_list[:T_out]]
    return TGT_VOCAB.decode(ids_list), (alpha[0, :T_out] if alpha is not None else None), list(text), out_tokens


# ---------------------------------------------------------------------------------------------
# Checkpoints: state dict + config dict, loadable with torch.load(weights_only=True)
# ---------------------------------------------------------------------------------------------
PRETRAINED_DIR = Path(__file__).parent / "assets" / "seq2seq"
ARCHITECTURES = {"no_attention": False, "attention": True}
"""Checkpoint names: ``PRETRAINED_DIR / f"{name}.pt"``, made by ``python -m attnmarl.seq2seq --train --out DIR``."""


def checkpoint_data(model: Seq2Seq) -> dict:
    """The plain data of a checkpoint, ``{"config": asdict(cfg), "state_dict": ..., "checksum": ...}`` (the
    checksum covers the rest: :func:`attnmarl.files.sealed.seal`). NaN or infinite weights raise ``ValueError``."""
    state = {name: tensor.detach().clone() for name, tensor in model.state_dict().items()}
    check_finite_weights("the model", state)
    return seal({"config": asdict(model.cfg), "state_dict": state})


def save_checkpoint(model: Seq2Seq, path: str | Path) -> None:
    """Save :func:`checkpoint_data` to ``path``, atomically (an interrupted save leaves the old file whole).
    NaN or infinite weights raise ``ValueError`` instead of being saved."""
    data = checkpoint_data(model)
    write_atomically({path: lambda handle: torch.save(data, handle)})


def load_checkpoint(path: str | Path, attention: bool | None = None) -> Seq2Seq:
    """Rebuild the model saved at ``path``.

    If ``attention`` is given, the checkpoint must be of that architecture; otherwise (or if the
    file is not one this book trusts or can read, holds anything but a matching config and state
    dict, no longer matches its checksum, or holds NaN or infinite weights) a ValueError says what is wrong.
    """
    if attention is not None:
        check_bool("attention", attention)
    checkpoint = load_trusted(path, "seq2seq checkpoint")
    if (not isinstance(checkpoint, dict) or set(checkpoint) - {"checksum"} != {"config", "state_dict"}
            or not isinstance(checkpoint["config"], dict) or not isinstance(checkpoint["state_dict"], dict)):
        raise ValueError(f"{path} is not a seq2seq checkpoint (expected keys 'config', 'state_dict' and 'checksum')")
    check_stored(path, checkpoint, "seq2seq checkpoint")  # sizes first: a small file declaring huge tensors
    try:
        cfg = Seq2SeqConfig(**checkpoint["config"])
    except (TypeError, ValueError) as err:
        raise ValueError(f"{path} has an unknown seq2seq config {checkpoint['config']}: {err}") from None
    model = Seq2Seq(cfg)
    check_shapes(path, checkpoint["state_dict"], {name: tuple(t.shape) for name, t in model.state_dict().items()})
    check_seal(path, checkpoint, "seq2seq checkpoint")
    check_finite_weights(path, checkpoint["state_dict"])
    if attention is not None and cfg.attention != attention:
        have, want = ("with" if cfg.attention else "without"), ("with" if attention else "without")
        raise ValueError(f"{path} holds a seq2seq model {have} attention, but a model {want} attention was requested")
    try:
        model.load_state_dict(checkpoint["state_dict"])
    except RuntimeError as err:
        raise ValueError(f"{path}: the weights do not fit the architecture in its config: {err}") from None
    return model


def load_pretrained(attention: bool) -> Seq2Seq:
    """The model shipped with the package (trained by ``python -m attnmarl.seq2seq --train
    --out src/attnmarl/assets/seq2seq``), in evaluation mode."""
    name = "attention" if attention else "no_attention"
    return load_checkpoint(PRETRAINED_DIR / f"{name}.pt", attention=attention).eval()


def load_training_log() -> dict:
    """The log of the run that made the shipped checkpoints: steps, seed, and per model its
    ``seconds``, ``cpu_seconds``, per-step ``losses`` and held-out ``accuracy`` table."""
    log = json.loads((PRETRAINED_DIR / "training_log.json").read_text())
    check_outputs(PRETRAINED_DIR, log)
    return log


def check_outputs(folder: Path, log: dict) -> None:
    """Raise ``ValueError`` unless the checkpoints in ``folder`` are those its training log describes
    (the log records each file's SHA-256: a log beside models of another run must not describe them)."""
    for name, digest in log.get("checkpoint_sha256", {}).items():
        path = folder / f"{name}.pt"
        if not path.exists() or hashlib.sha256(path.read_bytes()).hexdigest() != digest:
            raise ValueError(f"{folder / 'training_log.json'} describes another {name}.pt than the one in {folder}")


# ---------------------------------------------------------------------------------------------
# Command line: train both models, report time and held-out accuracy, optionally save them
# ---------------------------------------------------------------------------------------------
def accuracy_table(tables: dict[str, list[dict]]) -> str:
    """Side-by-side text table of :func:`evaluate` results, one column pair per model name."""
    names = list(tables)
    lines = ["input length   n     " + "   ".join(f"{name:>24}" for name in names),
             " " * 21 + "   ".join(f"{'exact':>11} {'per-token':>12}" for _ in names)]
    for rows in zip(*tables.values()):
        cells = "   ".join(f"{r['exact']:>11.3f} {r['token']:>12.3f}" for r in rows)
        lines.append(f"{rows[0]['length']:>12} {rows[0]['n']:>5}  {cells}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """``python -m attnmarl.seq2seq --train [--steps N] [--out DIR]``: train both models on the same
    batches, print the time taken and the held-out accuracy by input length, and with ``--out``
    save ``no_attention.pt``, ``attention.pt`` and ``training_log.json`` (losses, times, tables, and each
    checkpoint's SHA-256) as one unit: all three are written only once both models are trained and
    evaluated, each to a temporary file renamed into place, the log last (:func:`check_outputs` tells
    a log from another run's)."""
    parser = argparse.ArgumentParser(prog="python -m attnmarl.seq2seq", description=__doc__.splitlines()[0])
    parser.add_argument("--train", action="store_true", help="train both models and print accuracy by length")
    parser.add_argument("--steps", type=cli_int(), default=TRAIN_STEPS, help="training steps per model")
    parser.add_argument("--seed", type=cli_seed(), default=SEED)
    parser.add_argument("--n-test", type=cli_episodes(), default=2000, help="held-out examples to evaluate on")
    parser.add_argument("--out",
                        help="directory for the checkpoints and log (the book's: src/attnmarl/assets/seq2seq)")
    parser.add_argument("--replace", action="store_true",
                        help="replace the models and log already in --out (refused otherwise)")
    parser.add_argument("--threads", type=cli_threads(), default=1,
                        help="torch threads; the models are small, one thread is as fast and copes with a busy CPU")
    args = parser.parse_args(argv)
    if not args.train:
        parser.error("nothing to do: pass --train")
    if args.out is not None:
        try:
            args.out = check_writable_folder(args.out, "--out")
            check_new_files([args.out / f"{name}.pt" for name in ARCHITECTURES] + [args.out / "training_log.json"],
                            args.replace)
        except ValueError as error:
            parser.error(str(error))
    torch.set_num_threads(args.threads)
    train_dates, test_dates = split_dates(args.seed)
    test = make_examples(test_dates, args.n_test, args.seed)
    log: dict = {"steps": args.steps, "seed": args.seed, "threads": args.threads, "n_test": args.n_test}
    files: dict[str, bytes] = {}
    for name, attention in ARCHITECTURES.items():
        model = new_model(attention, args.seed)
        start, start_cpu = time.perf_counter(), time.process_time()
        losses = train(model, train_dates, steps=args.steps, seed=args.seed)
        seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - start_cpu
        print(f"{name}: {args.steps} steps in {seconds:.1f} s (CPU time {cpu_seconds:.1f} s), "
              f"final loss {losses[-1]:.4f}")
        log[name] = {"seconds": round(seconds, 1), "cpu_seconds": round(cpu_seconds, 1),
                     "losses": [float(f"{x:.5g}") for x in losses], "accuracy": evaluate(model, test)}
        buffer = io.BytesIO()
        torch.save(checkpoint_data(model), buffer)
        files[f"{name}.pt"] = buffer.getvalue()
    print(accuracy_table({name: log[name]["accuracy"] for name in ARCHITECTURES}))
    if args.out is not None:  # one unit: both models, then the log that names them by their SHA-256
        log["checkpoint_sha256"] = {Path(f).stem: hashlib.sha256(data).hexdigest() for f, data in files.items()}
        files["training_log.json"] = (json.dumps(log, indent=1) + "\n").encode()
        save_files({args.out / f: data for f, data in files.items()}, "--out")


if __name__ == "__main__":
    run_command("python -m attnmarl.seq2seq", main, "nothing was written to --out (the models are saved only once "
                "both are trained and evaluated)", imports=("torch._dynamo",))
