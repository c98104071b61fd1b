"""The seq2seq chapter's package code: data, the explicit GRU cell, attention, training, checkpoints."""
import datetime
import re

import pytest
import torch
from torch import nn

from attnmarl import seq2seq as s2s
from attnmarl.files.sealed import seal

pytestmark = pytest.mark.usefixtures("one_thread")


# ---------------------------------------------------------------------------------------------
# An independent reader of the generated text, to check that each target is the right date
# ---------------------------------------------------------------------------------------------
_UNITS = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7,
          "eighth": 8, "ninth": 9}
_DAY_WORDS = {**_UNITS, "tenth": 10, "eleventh": 11, "twelfth": 12, "thirteenth": 13, "fourteenth": 14,
              "fifteenth": 15, "sixteenth": 16, "seventeenth": 17, "eighteenth": 18, "nineteenth": 19,
              "twentieth": 20, "thirtieth": 30, "thirty-first": 31,
              **{f"twenty-{word}": 20 + n for word, n in _UNITS.items()}}
_WEEKDAY = re.compile(r"^(Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*,? ")


def _read_date(text: str) -> datetime.date:
    weekday = _WEEKDAY.match(text)
    text = _WEEKDAY.sub("", text)
    text = re.sub(r"\bthe |\bof ", "", text)
    text = re.sub(r"(\d+)(st|nd|rd|th)\b", r"\1", text)
    text = re.sub(r"[a-z-]+(?= )", lambda m: str(_DAY_WORDS.get(m.group(0), m.group(0))), text)
    text = text.replace(",", "")
    for fmt in ("%d/%m/%Y", "%d.%m.%Y", "%d %B %Y", "%B %d %Y", "%d %b %Y", "%b %d %Y"):
        try:
            date = datetime.datetime.strptime(text, fmt).date()
        except ValueError:
            continue
        if weekday:
            assert date.strftime("%a") == weekday.group(1), f"wrong weekday in {text!r}"
        return date
    raise AssertionError(f"cannot read {text!r}")


def _read(text: str) -> str:
    for pattern in (r"from (.+) to (.+)", r"(.+) until (.+)", r"between (.+) and (.+)"):
        match = re.fullmatch(pattern, text)
        if match:
            start, end = (_read_date(part) for part in match.groups())
            assert start <= end
            return f"{start.isoformat()}/{end.isoformat()}"
    return _read_date(text).isoformat()


def test_every_target_is_the_date_the_input_says():
    train_dates, test_dates = s2s.split_dates()
    examples = s2s.make_examples(train_dates, 2000, seed=1) + s2s.make_examples(test_dates, 1000, seed=2)
    for text, target in examples:
        assert _read(text) == target, text
    assert sum("/" in target for _, target in examples) > 1000  # both singles and ranges occur
    # every format occurs (here as a single date)
    day = datetime.date(2026, 11, 21)
    assert [_read(s2s.render_date(day, fmt)) for fmt in s2s.FORMATS] == ["2026-11-21"] * len(s2s.FORMATS)


def test_split_is_disjoint_complete_and_seeded():
    train_dates, test_dates = s2s.split_dates(seed=0)
    n_days = (s2s.LAST_DATE - s2s.FIRST_DATE).days + 1
    assert not set(train_dates) & set(test_dates)
    assert len(set(train_dates) | set(test_dates)) == n_days
    assert len(test_dates) == round(s2s.TEST_FRACTION * n_days)
    assert s2s.split_dates(seed=0) == (train_dates, test_dates)
    assert set(s2s.split_dates(seed=1)[1]) != set(test_dates)
    assert s2s.make_examples(test_dates, 50, seed=3) == s2s.make_examples(test_dates, 50, seed=3)
    test_targets = {d.isoformat() for d in test_dates}
    for _, target in s2s.make_examples(test_dates, 300):
        assert set(target.split("/")) <= test_targets  # test examples use test dates only
    with pytest.raises(ValueError, match="test_fraction"):
        s2s.split_dates(test_fraction=1.0)


def test_vocab_round_trip_and_bad_input():
    text = "Saturday, the twenty-first of November, 2026"
    assert s2s.SRC_VOCAB.decode(s2s.SRC_VOCAB.encode(text)) == text
    ids = s2s.TGT_VOCAB.encode("2026-11-21", add_eos=True)
    assert ids[-1] == s2s.EOS and s2s.TGT_VOCAB.decode(ids + [5, 6]) == "2026-11-21"
    with pytest.raises(ValueError, match="empty"):
        s2s.SRC_VOCAB.encode("")
    with pytest.raises(ValueError, match=r"\['#', 'Z'\]"):
        s2s.SRC_VOCAB.encode("Z1#")
    ids, mask = s2s.encode_batch(["21/11/2026", "nov 21, 2026"], s2s.SRC_VOCAB)
    assert ids.shape == mask.shape == (2, 12)
    assert mask.sum(dim=1).tolist() == [10, 12] and (ids[~mask] == s2s.PAD).all()


# ---------------------------------------------------------------------------------------------
# The model's parts
# ---------------------------------------------------------------------------------------------
def _copy_gru_cell(ref: nn.GRUCell, d_c: int) -> s2s.ContextGRUCell:
    """Our cell with nn.GRUCell's weights; W_c* = 0. torch's z is our 1 - z, so z's weights flip sign."""
    d_y, d_s = ref.input_size, ref.hidden_size
    W_ir, W_iz, W_in = ref.weight_ih.chunk(3)
    W_hr, W_hz, W_hn = ref.weight_hh.chunk(3)
    b_ir, b_iz, b_in = ref.bias_ih.chunk(3)
    b_hr, b_hz, b_hn = ref.bias_hh.chunk(3)
    assert (b_hn == 0).all()  # torch puts b_hn inside r * (...): we require it 0
    cell = s2s.ContextGRUCell(d_y, d_s, d_c).double()
    with torch.no_grad():
        cell.W_r.weight.copy_(W_ir), cell.W_r.bias.copy_(b_ir + b_hr), cell.U_r.weight.copy_(W_hr)
        cell.W_z.weight.copy_(-W_iz), cell.W_z.bias.copy_(-(b_iz + b_hz)), cell.U_z.weight.copy_(-W_hz)
        cell.W_s.weight.copy_(W_in), cell.W_s.bias.copy_(b_in), cell.U_s.weight.copy_(W_hn)
        for W_c in (cell.W_cr, cell.W_cz, cell.W_cs):
            W_c.weight.zero_()
    return cell


def test_context_gru_cell_is_a_gru():
    """With c = 0 and W_c* = 0 the cell is torch's GRU, up to where the reset gate sits: ours is
    U_s (r * s) (Bahdanau et al.), torch's is r * (U_s s). They agree when U_s is diagonal, and for
    any U_s when r = 1; otherwise they differ."""
    torch.manual_seed(0)
    d_y, d_s, d_c = 5, 7, 3
    y, s = torch.randn(11, d_y, dtype=torch.float64), torch.randn(11, d_s, dtype=torch.float64)
    zero_c = torch.zeros(11, d_c, dtype=torch.float64)

    ref = nn.GRUCell(d_y, d_s).double()
    with torch.no_grad():
        ref.bias_hh[2 * d_s:].zero_()
    general_cell = _copy_gru_cell(ref, d_c)
    assert not torch.allclose(general_cell(y, s, zero_c), ref(y, s))  # the reset gate sits elsewhere

    with torch.no_grad():  # (a) diagonal U_s: r * (U_s s) = U_s (r * s)
        ref.weight_hh[2 * d_s:] = torch.diag(torch.randn(d_s, dtype=torch.float64))
    cell = _copy_gru_cell(ref, d_c)
    torch.testing.assert_close(cell(y, s, zero_c), ref(y, s), rtol=0, atol=1e-12)
    torch.testing.assert_close(cell(y, s, torch.randn_like(zero_c)), ref(y, s), rtol=0, atol=1e-12)

    ref = nn.GRUCell(d_y, d_s).double()  # (b) any U_s, reset gate saturated at r = 1
    with torch.no_grad():
        ref.bias_hh[2 * d_s:].zero_()
        ref.bias_ih[:d_s] = 100.0
    cell = _copy_gru_cell(ref, d_c)
    torch.testing.assert_close(cell(y, s, zero_c), ref(y, s), rtol=0, atol=1e-12)


def test_additive_attention_weights_and_context():
    torch.manual_seed(0)
    attention = s2s.AdditiveAttention(d_s=6, d_h=4, d_att=5)
    H = torch.randn(3, 7, 4)
    mask = torch.arange(7) < torch.tensor([7, 4, 1])[:, None]
    s_prev = torch.randn(3, 6)
    c, alpha = attention(s_prev, H, attention.project(H), mask)
    assert c.shape == (3, 4) and alpha.shape == (3, 7)
    torch.testing.assert_close(alpha.sum(dim=1), torch.ones(3))
    assert (alpha[~mask] == 0).all()  # padding gets exactly zero weight
    assert alpha[2, 0] == 1
    for b in range(3):  # e_t = v^T tanh(W_a s + U_a h_t), softmax over the real positions only
        n = int(mask[b].sum())
        e = torch.stack([attention.v(torch.tanh(attention.W_a(s_prev[b]) + attention.U_a(H[b, t])))[0]
                         for t in range(n)])
        torch.testing.assert_close(alpha[b, :n], torch.softmax(e, dim=0))
        torch.testing.assert_close(c[b], alpha[b, :n] @ H[b, :n])


def test_encoder_ignores_padding():
    torch.manual_seed(0)
    encoder = s2s.Encoder(s2s.Seq2SeqConfig(attention=True))
    texts = ["21/11/2026", "Saturday, the twenty-first of November, 2026"]
    H, C = encoder(*s2s.encode_batch(texts, s2s.SRC_VOCAB))
    for b, text in enumerate(texts):
        H_alone, C_alone = encoder(*s2s.encode_batch([text], s2s.SRC_VOCAB))
        torch.testing.assert_close(H[b, :len(text)], H_alone[0])
        torch.testing.assert_close(C[b], C_alone[0])
        assert (H[b, len(text):] == 0).all()


def _batch(n: int = 6, seed: int = 0):
    train_dates, _ = s2s.split_dates()
    return s2s.make_batch(s2s.make_examples(train_dates, n, seed))


def _contexts(model: s2s.Seq2Seq, src, src_mask, y_in) -> list[torch.Tensor]:
    """The context c_t' the decoder cell receives at every step (recorded with a hook)."""
    seen = []
    handle = model.decoder.cell.register_forward_pre_hook(lambda module, args: seen.append(args[2].detach()))
    model(src, src_mask, y_in)
    handle.remove()
    return seen


def test_only_attention_differs_and_fixed_context_is_constant():
    plain, attentive = s2s.new_model(attention=False), s2s.new_model(attention=True)
    shared = plain.state_dict()
    extra = {k for k in attentive.state_dict() if k not in shared}
    assert extra == {"decoder.attention.W_a.weight", "decoder.attention.U_a.weight", "decoder.attention.v.weight"}
    assert all(torch.equal(v, attentive.state_dict()[k]) for k, v in shared.items())

    src, src_mask, y_in, tgt = _batch()
    _, C = plain.encoder(src, src_mask)
    contexts = _contexts(plain, src, src_mask, y_in)
    assert len(contexts) == y_in.shape[1]
    assert all(torch.equal(c, C) for c in contexts)  # c_t' = C at every step

    contexts = _contexts(attentive, src, src_mask, y_in)
    assert not torch.allclose(contexts[0], contexts[1])  # attention: a new context every step
    logits, alpha = attentive(src, src_mask, y_in)
    assert logits.shape == (6, y_in.shape[1], len(s2s.TGT_VOCAB))
    assert alpha.shape == (6, y_in.shape[1], src.shape[1])
    torch.testing.assert_close(alpha.sum(dim=-1), torch.ones(alpha.shape[:2]))
    assert (alpha.masked_select(~src_mask[:, None, :]) == 0).all()
    assert plain(src, src_mask, y_in)[1] is None


def test_greedy_decoding_agrees_with_teacher_forcing_on_its_own_output():
    model = s2s.new_model(attention=True)
    src, src_mask, _, _ = _batch()
    ids, alpha = s2s.greedy_translate(model, src, src_mask)
    y_in = torch.cat([torch.full((6, 1), s2s.SOS), ids[:, :-1]], dim=1)
    logits, alpha_forced = model(src, src_mask, y_in)
    assert torch.equal(logits.argmax(dim=-1), ids)
    torch.testing.assert_close(alpha_forced, alpha)


def test_short_training_lowers_the_loss_reproducibly():
    train_dates, _ = s2s.split_dates()
    losses = s2s.train(s2s.new_model(attention=True), train_dates, steps=30, progress=False)
    assert sum(losses[-5:]) / 5 < 0.8 * sum(losses[:5]) / 5
    again = s2s.train(s2s.new_model(attention=True), train_dates, steps=3, progress=False)
    assert again == losses[:3]


def test_evaluate_reports_every_bucket():
    model = s2s.new_model(attention=False)
    examples = s2s.make_examples(s2s.split_dates()[1], 200)
    rows = s2s.evaluate(model, examples, batch_size=64)
    assert rows[-1]["length"] == "all" and rows[-1]["n"] == 200
    assert sum(r["n"] for r in rows[:-1]) == 200
    assert [r["length"] for r in rows[:-1]] == ["1-20", "21-35", "36-50", "51-65", "66+"]
    assert all(0 <= r["exact"] <= r["token"] <= 1 for r in rows)


def test_translate_returns_aligned_tokens_and_refuses_bad_text():
    model = s2s.new_model(attention=True)
    text = "from 3 May 1987 to Monday, 21 November 2026"
    output, alpha, src_tokens, out_tokens = s2s.translate(model, text)
    assert src_tokens == list(text)
    assert alpha.shape == (len(out_tokens), len(text))
    torch.testing.assert_close(alpha.sum(dim=1), torch.ones(len(out_tokens)))
    assert output == "".join(t for t in out_tokens if t not in s2s.SPECIALS)
    assert s2s.translate(s2s.new_model(attention=False), text)[1] is None
    for bad, message in (("", "empty"), ("21 Nov 2026!", "not in the vocabulary"), (None, "string")):
        with pytest.raises(ValueError, match=message):
            s2s.translate(model, bad)


def test_checkpoint_round_trip_and_refusals(tmp_path):
    model = s2s.new_model(attention=True)
    path = tmp_path / "attention.pt"
    s2s.save_checkpoint(model, path)
    loaded = s2s.load_checkpoint(path, attention=True)
    assert loaded.cfg == model.cfg
    src, src_mask, y_in, _ = _batch()
    for a, b in zip(model(src, src_mask, y_in), loaded(src, src_mask, y_in)):
        assert torch.equal(a, b)
    with pytest.raises(ValueError, match="with attention, but a model without attention"):
        s2s.load_checkpoint(path, attention=False)

    wrong = tmp_path / "wrong.pt"
    torch.save(seal({"config": {"attention": False}, "state_dict": model.state_dict()}), wrong)  # by hand, sealed
    with pytest.raises(ValueError, match="do not fit"):
        s2s.load_checkpoint(wrong)
    torch.save(seal({"config": {"attention": True, "heads": 4}, "state_dict": {}}), wrong)
    with pytest.raises(ValueError, match="unknown seq2seq config"):
        s2s.load_checkpoint(wrong)
    torch.save({"weights": 1}, wrong)
    with pytest.raises(ValueError, match="not a seq2seq checkpoint"):
        s2s.load_checkpoint(wrong)


def test_shipped_checkpoints_show_the_bottleneck():
    """The checkpoints in attnmarl/assets/seq2seq: attention translates held-out dates of every
    length; without attention, exact matches collapse on long inputs."""
    log = s2s.load_training_log()
    for name in s2s.ARCHITECTURES:
        assert len(log[name]["losses"]) == log["steps"]
        assert log[name]["accuracy"][-1]["length"] == "all"
    examples = s2s.make_examples(s2s.split_dates()[1], 300, seed=7)
    attention = s2s.evaluate(s2s.load_pretrained(attention=True), examples, buckets=(35,))
    plain = s2s.evaluate(s2s.load_pretrained(attention=False), examples, buckets=(35,))
    assert [r["length"] for r in attention] == ["1-35", "36+", "all"]
    assert attention[0]["exact"] > 0.95 and attention[1]["exact"] > 0.95
    assert plain[1]["exact"] < 0.2 and plain[0]["exact"] > plain[1]["exact"] + 0.3
