"""The explorers of "Attention in seq2seq": what they draw is the trained model's own alignment.

The heatmap of a frame is checked against alpha recomputed on an independent path (the decoder's
teacher-forced forward pass over the greedy output, not the greedy loop that ``translate`` runs),
its labels against the characters, and the static face's embedded numbers against the live ones.
"""
from __future__ import annotations

import base64
import gzip
import json
import re

import numpy as np
import pytest
import torch
from ipywidgets7 import run_with_ipywidgets7

from attnmarl import seq2seq as s2s
from attnmarl.notebook.explorers.seq2seq import (
    MODEL_NAMES,
    SPACE,
    alignment_explorer,
    alignment_frame,
    char_labels,
    date_box,
    pretrained_models,
    showcase_examples,
)
from attnmarl.notebook.viz import Heatmap, Text
from attnmarl.notebook.widgets import Slider

pytestmark = pytest.mark.usefixtures("one_thread")


@pytest.fixture(scope="module")
def models() -> dict[str, s2s.Seq2Seq]:
    return pretrained_models()


def teacher_forced_alpha(model: s2s.Seq2Seq, text: str, output: str) -> np.ndarray:
    """alpha (len(output) + 1, len(text)) of the decoder fed <sos> + output, scoring output + <eos>."""
    src, src_mask = s2s.encode_batch([text], s2s.SRC_VOCAB)
    y_in = torch.tensor([[s2s.SOS] + s2s.TGT_VOCAB.encode(output)])
    with torch.no_grad():
        _, alpha = model(src, src_mask, y_in)
    return alpha[0].numpy()


def heatmap_of(frame) -> Heatmap:
    heatmaps = [p for p in frame.panels if isinstance(p, Heatmap)]
    assert len(heatmaps) == 1
    return heatmaps[0]


def test_showcase_is_held_out_and_grows_in_length():
    examples = showcase_examples()
    assert len(examples) == 12
    lengths = [len(text) for text, _ in examples]
    assert lengths == sorted(lengths) and len(set(lengths)) == 12
    _, test_dates = s2s.split_dates()
    pool = s2s.make_examples(test_dates, 2000)
    assert lengths[0] == min(len(t) for t, _ in pool) and lengths[-1] == max(len(t) for t, _ in pool)
    held_out = {d.isoformat() for d in test_dates}
    for text, iso in examples:
        assert (text, iso) in pool
        assert all(part in held_out for part in iso.split("/"))
    assert any("/" in iso for _, iso in examples) and any("/" not in iso for _, iso in examples)


@pytest.mark.parametrize("index", [0, 5, 11])
def test_heatmap_is_the_models_alpha_with_character_labels(models, index):
    text, target = showcase_examples()[index]
    model = models["attention"]
    frame = alignment_frame(text, model, target)
    heatmap = heatmap_of(frame)
    output = s2s.translate(model, text)[0]
    # the alpha drawn is the one the decoder computes when it is fed this output
    np.testing.assert_allclose(heatmap.values, teacher_forced_alpha(model, text, output), atol=1e-6)
    np.testing.assert_allclose(heatmap.values.sum(axis=1), 1.0, atol=1e-5)
    # rows: the output characters, then <eos>; columns: the input characters (a space shown as ␣)
    assert heatmap.rows == list(output) + ["<eos>"]
    assert heatmap.cols == [SPACE if ch == " " else ch for ch in text]
    assert "".join(heatmap.cols).replace(SPACE, " ") == text
    assert not heatmap.annotate
    (panel,) = [p for p in frame.panels if isinstance(p, Text)]
    assert f"output: {output}" in panel.text and f"target: {target}" in panel.text


def test_frame_says_whether_the_translation_is_right_and_marks_wrong_characters(models):
    verdicts = set()
    for text, target in showcase_examples():
        for model in models.values():
            output = s2s.translate(model, text)[0]
            (panel,) = [p for p in alignment_frame(text, model, target).panels if p.title == "translation"]
            lines = panel.text.split("\n")
            target_line = next(i for i, line in enumerate(lines) if line.startswith("target: "))
            verdict = lines[target_line].split()[-1]
            assert verdict == ("right" if output == target else "WRONG")
            verdicts.add(verdict)
            if output != target:  # a ^ under each wrong character, aligned with "output: ..."
                marks = lines[target_line + 1][len("output: "):].split("  (")[0]
                wrong = [i for i in range(max(len(output), len(target)))
                         if i >= min(len(output), len(target)) or output[i] != target[i]]
                assert [i for i, ch in enumerate(marks) if ch == "^"] == wrong
            else:
                assert target_line == len(lines) - 1
    assert verdicts == {"right", "WRONG"}


def test_no_attention_frame_has_no_alpha_but_its_translation(models):
    text, target = showcase_examples()[7]
    model = models["no attention"]
    frame = alignment_frame(text, model, target)
    assert not [p for p in frame.panels if isinstance(p, Heatmap)]
    texts = " ".join(p.text for p in frame.panels if isinstance(p, Text))
    assert f"output: {s2s.translate(model, text)[0]}" in texts
    assert "no α" in texts and str(2 * model.cfg.n_hidden) in texts


@pytest.mark.parametrize("text", ["", "21/11/2026!", "21 Novémbre 2026"])
def test_bad_input_is_a_value_error(models, text):
    with pytest.raises(ValueError):
        alignment_frame(text, models["attention"])


def test_explorers_check_their_models(models):
    with pytest.raises(ValueError, match="must be named"):
        alignment_explorer({"attention": models["attention"]})
    swapped = {"attention": models["no attention"], "no attention": models["attention"]}
    with pytest.raises(ValueError, match="without attention"):
        alignment_explorer(swapped)
    with pytest.raises(ValueError, match="must be named"):
        date_box({"attention": models["attention"]})


def test_explorer_controls_and_live_frames(models):
    examples = showcase_examples()
    explorer = alignment_explorer(models, examples)
    first = explorer.controls[0]
    assert isinstance(first, Slider) and first.values == list(range(12))  # an integer range slider
    assert [c.name for c in explorer.controls] == ["example", "model"]
    assert explorer.controls[1].values == list(MODEL_NAMES)
    for index in (0, 11):
        text, _ = examples[index]
        spec = explorer.update(example=index, model="attention")
        (heatmap,) = [p for p in spec["panels"] if p["type"] == "heatmap"]
        alpha = s2s.translate(models["attention"], text)[1].numpy()
        np.testing.assert_allclose(heatmap["values"], alpha, atol=5e-5)  # rounded to 4 digits
        assert "".join(heatmap["cols"]).replace(SPACE, " ") == text
    spec = explorer.update(model="no attention")
    assert all(p["type"] == "text" for p in spec["panels"])


def test_static_face_embeds_every_example_for_both_models(models):
    from attnmarl.notebook.viz import SHOWN_DIGITS

    examples = showcase_examples()
    explorer = alignment_explorer(models, examples)
    markup = explorer.static_html()
    payload = re.search(r'<script type="application/octet-stream" id="[^"]+">([^<]+)</script>', markup)
    spec = json.loads(gzip.decompress(base64.b64decode(payload.group(1))))
    assert [c["name"] for c in spec["controls"]] == ["example", "model"]
    frames = spec["frames"]
    assert len(frames) == 12 * 2  # itertools.product order: example-major, then model
    for index, (text, _) in enumerate(examples):
        with_alpha, without = frames[2 * index], frames[2 * index + 1]
        (heatmap,) = [p for p in with_alpha["panels"] if p["type"] == "heatmap"]
        alpha = s2s.translate(models["attention"], text)[1].numpy()
        # colours to what the page shows (frame_spec(..., shown=True): alpha to 2 decimals)
        np.testing.assert_allclose(heatmap["values"], alpha, atol=0.5 * 10 ** -SHOWN_DIGITS + 1e-6)
        assert heatmap["cols"] == char_labels(list(text))
        assert all(p["type"] == "text" for p in without["panels"])
    assert len(markup) < 200_000


def test_date_box_translates_typed_text_and_reports_bad_input(models):
    box = date_box(models, text="21/11/2026")
    (heatmap,) = [p for p in box.explorer.frame["panels"] if p["type"] == "heatmap"]
    assert heatmap["rows"] == list("2026-11-21") + ["<eos>"]
    box.text.value = "from 4 May 1987 to 9 June 1990"
    (heatmap,) = [p for p in box.explorer.frame["panels"] if p["type"] == "heatmap"]
    assert "".join(heatmap["cols"]).replace(SPACE, " ") == "from 4 May 1987 to 9 June 1990"
    assert "2026-11-21" not in box.explorer.markup
    box.text.value = "21/11/2026!"
    (panel,) = box.explorer.frame["panels"]
    assert panel["type"] == "text" and panel["text"].startswith("ValueError:") and "'!'" in panel["text"]
    box.explorer.widgets["model"].value = "no attention"
    assert box.explorer.frame["panels"][0]["text"].startswith("ValueError:")
    box.text.value = "Sat 21 Nov 2026"
    assert all(p["type"] == "text" for p in box.explorer.frame["panels"])
    assert f"output: {s2s.translate(models['no attention'], 'Sat 21 Nov 2026')[0]}" in box.explorer.markup


LIVE_CHECK_7 = """
from attnmarl.notebook.explorers.seq2seq import alignment_explorer, date_box
explorer = alignment_explorer()
explorer.live()
before = explorer.markup
explorer.widgets["example"].value = 11
assert len(explorer.frame["panels"][0]["cols"]) > 80 and explorer.markup != before
assert type(explorer.widgets["example"]).__name__ == "IntSlider"
box = date_box(text="21/11/2026")
box.text.value = "21/11/2026!"
assert box.explorer.frame["panels"][0]["text"].startswith("ValueError:")
"""


def test_live_faces_work_with_colabs_ipywidgets_7():
    """Colab has ipywidgets 7.7; `make test` installs a copy beside the venv's 8.x to drive it."""
    run_with_ipywidgets7(LIVE_CHECK_7)


def test_the_longest_example_fits_the_column_with_its_title_and_row_labels(models, tmp_path):
    """The longest showcase input (92 characters) would make a ~2,800-pixel heatmap at 30 px a cell: its
    cells narrow instead, so that in a 720-pixel column (the book's) the whole alignment is in view at full
    size, with no sideways scroll, its title and its row labels inside the visible panel."""
    from browser import offline_page

    explorer = alignment_explorer(models)
    page_file = tmp_path / "explorer.html"
    page_file.write_text(f'<!doctype html><meta charset="utf-8"><body><div style="width:720px">'
                         f"{explorer.static_html()}</div></body>")
    with offline_page() as page:
        page.goto(page_file.as_uri())
        page.wait_for_selector(".attnmarl-explorer .ax-panels svg")
        page.locator(".attnmarl-explorer input[type=range]").first.focus()
        for _ in range(11):
            page.keyboard.press("ArrowRight")
        measured = page.evaluate(
            """() => { const panels = document.querySelector('.attnmarl-explorer .ax-panels');
                       const svg = panels.querySelector('svg'), box = panels.getBoundingClientRect();
                       const inside = (e) => { const r = e.getBoundingClientRect();
                                               return r.left >= box.left && r.right <= box.right; };
                       const rows = [...svg.querySelectorAll('text[text-anchor="end"]')];
                       return {drawn: svg.getBoundingClientRect().width, declared: Number(svg.getAttribute('width')),
                               visible: panels.clientWidth, scrollable: panels.scrollWidth,
                               cells: svg.querySelectorAll('rect[data-value]').length,
                               title: inside(svg.querySelector('text')), rows: rows.length,
                               rowsInside: rows.every(inside)}; }""")
        assert not page.errors
    assert measured["cells"] == 22 * 92 and measured["drawn"] == measured["declared"]  # every cell, not shrunk
    assert measured["scrollable"] <= measured["visible"] <= 720
    assert measured["title"] and measured["rows"] == 22 and measured["rowsInside"]
