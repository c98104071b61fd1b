"""The score explorer of "Scoring and normalising attention": what it draws is the real alpha.

Every check recomputes alpha independently -- from the score functions of attnmarl.attention and
masked_softmax, and from the formulas written out in numpy -- and compares it with what the frames
draw, in the live face and in the data embedded in the static face.
"""
from __future__ import annotations

import base64
import gzip
import itertools
import json
import math
import re

import numpy as np
import pytest
import torch
from ipywidgets7 import run_with_ipywidgets7

from attnmarl.attention import additive_score, cosine_score, dot_score, general_score, masked_softmax, scaled_dot_score
from attnmarl.notebook.explorers.scoring import (
    D_A,
    KEYS,
    SCORES,
    WEIGHT_SEED,
    entropy,
    score,
    score_alpha,
    score_weights,
    scoring_explorer,
    scoring_frame,
)
from attnmarl.notebook.viz import Heatmap, Points

QUERIES = [(1.0, 0.5), (-2.5, 2.0), (0.25, -1.75), (0.0, 0.0)]


def alpha_directly(name: str, qx: float, qy: float, tau: float) -> np.ndarray:
    """masked_softmax(score(q, keys) / tau), calling the score functions of attnmarl.attention."""
    w = score_weights(WEIGHT_SEED)
    q = torch.tensor([[float(qx), float(qy)]])
    s = {
        "dot": lambda: dot_score(q, KEYS),
        "scaled dot": lambda: scaled_dot_score(q, KEYS),
        "general": lambda: general_score(q, KEYS, w.W),
        "additive": lambda: additive_score(q, KEYS, w.W_q, w.W_k, w.v_a),
        "cosine": lambda: cosine_score(q, KEYS),
    }[name]()
    return masked_softmax(s / tau).numpy()


def alpha_by_formula(name: str, qx: float, qy: float, tau: float) -> np.ndarray:
    """The same alpha from the formulas, in numpy, one key at a time (float64)."""
    w = score_weights(WEIGHT_SEED)
    W, W_q, W_k, v_a = (t.double().numpy() for t in (w.W, w.W_q, w.W_k, w.v_a))
    q = np.array([qx, qy])
    formulas = {
        "dot": lambda k: q @ k,
        "scaled dot": lambda k: q @ k / math.sqrt(2),
        "general": lambda k: q @ W @ k,
        "additive": lambda k: v_a @ np.tanh(W_q @ q + W_k @ k),
        "cosine": lambda k: q @ k / max(np.linalg.norm(q), 1e-8) / np.linalg.norm(k),
    }
    s = np.array([formulas[name](k) for k in KEYS.double().numpy()]) / tau
    e = np.exp(s - s.max())
    return (e / e.sum())[None, :]


@pytest.mark.parametrize("name", SCORES)
def test_the_frame_draws_masked_softmax_of_the_real_score(name):
    for (qx, qy), tau in itertools.product(QUERIES, [0.25, 1.0, 4.0]):
        frame = scoring_frame(name, qx, qy, tau)
        points, heatmap = frame.panels
        assert isinstance(points, Points) and isinstance(heatmap, Heatmap)
        assert heatmap.values.shape == (1, len(KEYS))
        np.testing.assert_allclose(heatmap.values, alpha_directly(name, qx, qy, tau), rtol=0, atol=1e-7)
        np.testing.assert_allclose(heatmap.values, alpha_by_formula(name, qx, qy, tau), rtol=0, atol=1e-5)
        np.testing.assert_allclose(points.xy, np.vstack([KEYS.numpy(), [qx, qy]]))
        assert list(points.highlight) == [len(KEYS)] and points.labels[-1] == "q"
        assert np.all(np.abs(points.xy) <= points.lim)  # every point is inside the drawn square
        assert f"H(α) = {entropy(heatmap.values)[0]:.2f}" in frame.caption


def test_the_scores_behave_as_the_chapter_says():
    q = torch.tensor([[1.0, 0.5]])
    # scaled dot is dot at temperature sqrt(d)
    torch.testing.assert_close(score_alpha("scaled dot", q)[1], score_alpha("dot", q, tau=math.sqrt(2))[1])
    # k^2 = 12 k^1: cosine cannot tell them apart, dot prefers the longer one
    torch.testing.assert_close(KEYS[1], 12 * KEYS[0])
    cos_alpha, dot_alpha = score_alpha("cosine", q)[1][0], score_alpha("dot", q)[1][0]
    assert torch.isclose(cos_alpha[0], cos_alpha[1]) and dot_alpha[1] > 5 * dot_alpha[0]
    # cosine ignores the length of q, dot sharpens with it
    torch.testing.assert_close(score_alpha("cosine", 2.5 * q)[1], cos_alpha[None])
    assert entropy(score_alpha("dot", 2.5 * q)[1])[0] < entropy(dot_alpha)
    # the weights are fixed by the seed
    again = score_weights(WEIGHT_SEED)
    assert all(torch.equal(a, b) for a, b in zip(vars(score_weights()).values(), vars(again).values()))
    assert score_weights().W_q.shape == (D_A, 2) and score_weights().v_a.shape == (D_A,)


def test_entropy_and_masks():
    assert entropy(np.full(6, 1 / 6)) == pytest.approx(math.log(6))
    h = float(entropy(np.eye(6)[2]))
    assert h == 0.0 and math.copysign(1.0, h) == 1.0  # +0.0, not -0.0 (printed "0.000")
    mask = torch.tensor([[True, True, False, True, False, True]])
    _, alpha = score_alpha("dot", torch.tensor([[1.0, 0.5]]), mask=mask)
    assert torch.all(alpha[~mask] == 0) and torch.isclose(alpha.sum(), torch.tensor(1.0))


def test_bad_input_raises_value_error():
    with pytest.raises(ValueError, match="unknown score 'manhattan'"):
        scoring_frame("manhattan")
    with pytest.raises(ValueError, match="unknown score"):
        score("Dot", torch.zeros(1, 2), KEYS)
    for tau in (0.0, -1.0, math.nan, math.inf):
        with pytest.raises(ValueError, match="temperature"):
            scoring_frame("dot", tau=tau)
    with pytest.raises(ValueError, match="finite"):
        scoring_frame("dot", qx=math.nan)
    with pytest.raises(ValueError, match="same last dimension"):
        score("dot", torch.zeros(1, 3), KEYS)
    with pytest.raises(ValueError, match="every key masked"):
        score_alpha("cosine", torch.ones(1, 2), mask=torch.zeros(1, len(KEYS), dtype=torch.bool))
    with pytest.raises(ValueError, match="unknown control"):
        scoring_explorer().update(temperature=2.0)


def test_live_face_redraws_with_the_real_alpha():
    explorer = scoring_explorer()
    explorer.live()
    assert set(explorer.widgets) == {"score", "qx", "qy", "tau"}
    assert type(explorer.widgets["score"]).__name__ == "Dropdown"

    def drawn() -> np.ndarray:
        return np.array(explorer.frame["panels"][1]["values"])

    before, markup = drawn(), explorer.markup
    np.testing.assert_allclose(before, alpha_directly("dot", 1.0, 0.5, 1.0), atol=1e-4)
    explorer.widgets["qx"].value = -2.0
    assert not np.allclose(drawn(), before) and explorer.markup != markup
    np.testing.assert_allclose(drawn(), alpha_directly("dot", -2.0, 0.5, 1.0), atol=1e-4)
    explorer.widgets["score"].value = "cosine"
    np.testing.assert_allclose(drawn(), alpha_directly("cosine", -2.0, 0.5, 1.0), atol=1e-4)
    explorer.widgets["tau"].value = 0.25
    np.testing.assert_allclose(drawn(), alpha_directly("cosine", -2.0, 0.5, 0.25), atol=1e-4)
    assert "cosine, τ = 0.25" in explorer.frame["panels"][1]["title"]


def test_static_face_embeds_every_frame_and_stays_small():
    from attnmarl.notebook.viz import SHOWN_DIGITS

    explorer = scoring_explorer()
    controls = explorer.controls
    assert sum(1 for c in controls if type(c).__name__ == "Slider") >= 1  # the book test steps a range slider
    markup = explorer.static_html()
    assert len(markup) < 1_000_000
    payload = re.search(r'type="application/octet-stream" id="[^"]+">([^<]+)<', markup).group(1)
    spec = json.loads(gzip.decompress(base64.b64decode(payload)))
    grids = [c.static for c in controls]
    assert len(spec["frames"]) == math.prod(len(g) for g in grids) <= 2000
    for index in (0, 1, 500, len(spec["frames"]) - 1):
        combo = dict(zip([c.name for c in controls], list(itertools.product(*grids))[index]))
        expected = alpha_directly(combo["score"], combo["qx"], combo["qy"], combo["tau"])
        # the static face keeps colours to what the page shows (frame_spec(..., shown=True): alpha to 2 decimals)
        np.testing.assert_allclose(spec["frames"][index]["panels"][1]["values"], expected,
                                   atol=0.5 * 10 ** -SHOWN_DIGITS + 1e-6)


LIVE_CHECK = """
from attnmarl.notebook.explorers.scoring import scoring_explorer
explorer = scoring_explorer()
explorer.live()
before = explorer.markup
explorer.widgets["score"].value = "additive"
explorer.widgets["qy"].value = -1.25
assert explorer.frame["panels"][1]["title"].startswith("α: additive") and explorer.markup != before
assert type(explorer.widgets["qx"]).__name__ == "SelectionSlider"
"""


def test_live_face_works_with_colabs_ipywidgets_7():
    """Colab has ipywidgets 7.7; `make test` installs a copy beside the venv's 8.x to drive it."""
    run_with_ipywidgets7(LIVE_CHECK)
