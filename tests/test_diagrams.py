"""The diagrams of the source's figures 17.1–17.9, and of MAAC's critic beside them: what they draw, read back
from their SVG."""

import xml.etree.ElementTree as ET

import numpy as np
import pytest

from attnmarl.notebook import diagrams
from attnmarl.notebook.diagrams import (
    ALPHA_WIDTH,
    attention_critic,
    attention_output,
    attention_q_critic,
    attention_view,
    attention_weights,
    concatenation_critic,
    maac_critic,
    multi_head,
    query_key_value,
    sequence_mapping,
)

NS = {"svg": "http://www.w3.org/2000/svg"}


def random_alpha(m: int, seed: int = 0) -> np.ndarray:
    scores = np.random.default_rng(seed).normal(size=(m, m)) * 2
    e = np.exp(scores)
    return e / e.sum(axis=1, keepdims=True)


def parse(diagram: diagrams.Diagram) -> ET.Element:
    return ET.fromstring(diagram.svg())


def groups(root: ET.Element, kind: str) -> list[ET.Element]:
    return root.findall(f".//svg:g[@class='{kind}']", NS)


def texts(root: ET.Element) -> list[str]:
    """Every label as a reader reads it (a subscript's tspan joins its base: 'W_q' reads 'Wq')."""
    return ["".join(t.itertext()) for t in root.iter(f"{{{NS['svg']}}}text")]


def arrow_weights(root: ET.Element) -> dict[tuple[int, ...], tuple[float, float]]:
    """Each weighted arrow's (weight it declares, weight its stroke width shows), by its 1-based indices."""
    found = {}
    for arrow in groups(root, "arrow"):
        if arrow.get("data-weight") is None:
            continue
        key = tuple(int(arrow.get(f"data-{k}")) for k in ("i", "j") if arrow.get(f"data-{k}"))
        width = float(arrow.find("svg:line", NS).get("stroke-width")) / ALPHA_WIDTH
        found[key] = (float(arrow.get("data-weight")), width)
    return found


def weight_labels(root: ET.Element) -> list[str]:
    """The numbers written on the arrows (bold, in the colour of the weights)."""
    return [t.text for t in root.iter(f"{{{NS['svg']}}}text")
            if t.get("font-weight") == "600" and t.get("fill") == diagrams.WEIGHT]


ALL_FIGURES = {
    "17.1": lambda: sequence_mapping(6),
    "17.2": lambda: query_key_value(6, 3, 4, 3),
    "17.3": lambda: attention_weights([0.1, -0.4, 1.2]),
    "17.4": lambda: attention_output(random_alpha(4)[0]),
    "17.5": lambda: attention_view(random_alpha(4)),
    "17.6": lambda: multi_head(5, 4, 3),
    "17.7": lambda: concatenation_critic(3, 18, 32),
    "17.8": lambda: attention_critic(3, 18, 32, 2, 16),
    "17.9": lambda: attention_q_critic(3, 18, 5, 32, 2, 16),
}


@pytest.mark.parametrize("figure", ALL_FIGURES)
def test_every_figure_names_its_source_figure_and_fits_its_canvas(figure):
    """Each diagram says which figure of the source it follows, and nothing is drawn past its edges."""
    diagram = ALL_FIGURES[figure]()
    root = parse(diagram)
    assert root.get("data-figure") == figure
    assert f"after the source's fig. {figure}" in " ".join(texts(root))
    assert f"fig. {figure}" in root.find("svg:title", NS).text
    width, height = float(root.get("width")), float(root.get("height"))
    for rect in root.iter(f"{{{NS['svg']}}}rect"):
        assert float(rect.get("x", 0)) + float(rect.get("width")) <= width
        assert float(rect.get("y", 0)) + float(rect.get("height")) <= height
    for line in root.iter(f"{{{NS['svg']}}}line"):
        assert 0 <= min(float(line.get("x1")), float(line.get("x2"))) <= max(float(line.get("x1")),
                                                                           float(line.get("x2"))) <= width
        assert max(float(line.get("y1")), float(line.get("y2"))) <= height
    assert diagram._repr_svg_() == diagram.svg()  # what a notebook displays


def test_attention_view_draws_every_arrow_with_the_weight_passed_in():
    """Fig. 17.5: one arrow xʲ → cⁱ per pair, declaring αⁱⱼ and as wide as ALPHA_WIDTH · αⁱⱼ."""
    alpha = random_alpha(5, seed=3)
    root = parse(attention_view(alpha, i=2))
    weights = arrow_weights(root)
    assert sorted(weights) == [(i, j) for i in range(1, 6) for j in range(1, 6)]
    declared = np.array([[weights[i, j][0] for j in range(1, 6)] for i in range(1, 6)])
    shown = np.array([[weights[i, j][1] for j in range(1, 6)] for i in range(1, 6)])
    np.testing.assert_allclose(declared, alpha, atol=1e-6)
    np.testing.assert_allclose(shown, alpha, rtol=1e-3, atol=1e-4)
    # the arrows into c² are labelled with row 2 of α, in the order of the inputs
    assert weight_labels(root) == [f"{a:.2f}" for a in alpha[1]]


def test_attention_output_weighs_each_value_by_its_alpha():
    """Fig. 17.4: the arrow from vʲ into Σ is as wide as αⁱⱼ, and the output is cⁱ."""
    row = random_alpha(6, seed=1)[3]
    root = parse(attention_output(row, i=4))
    weights = arrow_weights(root)
    assert sorted(weights) == [(j,) for j in range(1, 7)]
    np.testing.assert_allclose([weights[j,][1] for j in range(1, 7)], row, rtol=1e-3, atol=1e-4)
    assert weight_labels(root) == [f"{a:.2f}" for a in row]
    assert "c⁴" in texts(root) and "Σ" in texts(root)


def test_attention_weights_are_the_softmax_of_the_scores():
    """Fig. 17.3: the scores printed as given (true minus signs), the weights their softmax."""
    scores = np.array([0.5, -1.25, 2.0, 0.0])
    root = parse(attention_weights(scores, i=3))
    boxes = [b for b in groups(root, "box") if b.get("data-weight")]
    expected = np.exp(scores) / np.exp(scores).sum()
    np.testing.assert_allclose([float(b.get("data-weight")) for b in boxes], expected, atol=1e-6)
    labels = texts(root)
    assert {"0.50", "−1.25", "2.00", "0.00"} <= set(labels)
    assert labels.count("q³") == 4 and {"k¹", "k²", "k³", "k⁴"} <= set(labels)


@pytest.mark.parametrize("m", [1, 3, 12])
def test_inputs_and_outputs_are_numbered_from_1_with_superscripts(m):
    """Fig. 17.1: x¹, …, xᵐ in, c¹, …, cᵐ out: one box each and one layer between."""
    root = parse(sequence_mapping(m))
    labels = texts(root)
    sups = [diagrams.sup(j) for j in range(1, m + 1)]
    assert [t for t in labels if t.startswith("x") and len(t) > 1] == [f"x{s}" for s in sups]
    assert [t for t in labels if t.startswith("c") and len(t) > 1] == [f"c{s}" for s in sups]
    assert "x⁰" not in labels and len(groups(root, "box")) == 2 * m + 1


@pytest.mark.parametrize("m", [2, 6])
def test_every_input_gets_its_query_key_and_value(m):
    """Fig. 17.2: qⁱ, kⁱ, vⁱ above each xⁱ, one arrow each, coloured by the matrix that makes it."""
    root = parse(query_key_value(m, 3, 4, 2))
    labels = set(texts(root))
    for j in range(1, m + 1):
        assert {f"{s}{diagrams.sup(j)}" for s in "xqkv"} <= labels
    colours = [a.find("svg:line", NS).get("stroke") for a in groups(root, "arrow")]
    assert [colours.count(c) for c in (diagrams.QUERY, diagrams.KEY, diagrams.VALUE)] == [m, m, m]
    assert "qⁱ = Wq xⁱ ∈ ℝ⁴" in labels and "vⁱ = Wv xⁱ ∈ ℝ²" in labels  # W_q with q as a subscript


@pytest.mark.parametrize("m, l", [(2, 1), (5, 4), (3, 6)])
def test_multi_head_draws_l_heads_and_l_parts_of_every_output(m, l):
    """Fig. 17.6: l head boxes; each cⁱ is l parts cⁱ_h, one arrow from head h into each."""
    root = parse(multi_head(m, l, d_out=3))
    labels = texts(root)
    parts = {f"c{diagrams.sup(i)}{h}" for i in range(1, m + 1) for h in range(1, l + 1)}
    assert parts <= set(labels)
    assert [t for t in labels if t.startswith("head ")] == [f"head {h}" for h in range(1, l + 1)]
    assert len(groups(root, "box")) == m + l + m * l
    assert f"cⁱ ∈ ℝ{diagrams.sup(l * 3)}" in labels  # the output size l · d_out
    head_colours = {diagrams.HEADS[h] for h in range(l)}
    from_heads = [a for a in groups(root, "arrow") if a.find("svg:line", NS).get("stroke") in head_colours]
    assert len(from_heads) == m * l


def boxes_by_label(root: ET.Element) -> dict[str, list[tuple[float, float, float, float]]]:
    """Every box's (x, y, w, h), by its label."""
    found: dict[str, list] = {}
    for box in groups(root, "box"):
        rect = box.find("svg:rect", NS)
        found.setdefault("".join(box.itertext()), []).append(
            tuple(float(rect.get(k)) for k in ("x", "y", "width", "height")))
    return found


def sources_of(root: ET.Element, box: tuple[float, float, float, float]) -> list[tuple[float, float]]:
    """Where the arrows that end on the bottom edge of ``box`` start (an arrow ends at its head's tip)."""
    x, y, w, h = box
    starts = []
    for arrow in groups(root, "arrow"):
        head = arrow.find("svg:polygon", NS)
        if head is None:
            continue
        tip_x, tip_y = map(float, head.get("points").split()[0].split(","))
        if abs(tip_y - (y + h)) < 0.5 and x <= tip_x <= x + w:
            line = arrow.find("svg:line", NS)
            starts.append((float(line.get("x1")), float(line.get("y1"))))
    return starts


def inside(point: tuple[float, float], boxes: list) -> bool:
    return any(x <= point[0] <= x + w and abs(point[1] - y) < 0.5 for x, y, w, _ in boxes)


@pytest.mark.parametrize("m", [2, 3, 5])
def test_the_critics_share_phi_and_keep_one_head_per_agent(m):
    """Figs. 17.7 and 17.8: m copies of the shared φ, m own heads gⁱ (one outline colour each kind), m values v̂ⁱ."""
    for diagram in (concatenation_critic(m, 6 * m, 32), attention_critic(m, 6 * m, 32, 2, 16)):
        root = parse(diagram)
        boxes = boxes_by_label(root)
        names = [f"{s}{diagrams.sup(i)}" for s in ("g", "v̂") for i in range(1, m + 1)]
        assert len(boxes["φ"]) == m and all(len(boxes[name]) == 1 for name in names)
        outlines = {b.find("svg:rect", NS).get("stroke"): "".join(b.itertext())[0] for b in groups(root, "box")
                    if "".join(b.itertext())[0] in "φg"}
        assert outlines == {diagrams.SHARED: "φ", diagrams.OWN: "g"}


@pytest.mark.parametrize("m", [2, 3, 5])
def test_concatenation_critic_wires_every_slot_to_every_head(m):
    """Fig. 17.7: head gⁱ reads all of [x¹; …; xᵐ]: an arrow from each of the m slots (m² in all)."""
    root = parse(concatenation_critic(m, 6 * m, 32))
    boxes = boxes_by_label(root)
    slots = [boxes[f"x{diagrams.sup(j)}"][1] for j in range(1, m + 1)]  # [0] is xʲ itself, [1] its slot
    assert f"[x¹; …; xᵐ] ∈ ℝ{diagrams.sup(32 * m)}" in texts(root)
    for i in range(1, m + 1):
        starts = sources_of(root, boxes[f"g{diagrams.sup(i)}"][0])
        assert len(starts) == m and all(inside(s, [slot]) for s, slot in zip(sorted(starts), slots))


@pytest.mark.parametrize("m", [2, 3, 5])
def test_attention_critic_mixes_every_input_into_every_output(m):
    """Fig. 17.8: cⁱ gets an arrow from every xʲ (m² in all); the part xⁱ of [xⁱ; cⁱ] only from xⁱ."""
    root = parse(attention_critic(m, 6 * m, 32, 2, 16))
    boxes = boxes_by_label(root)
    xs = [boxes[f"x{diagrams.sup(j)}"] for j in range(1, m + 1)]  # each: the encoding, then its part of [xⁱ; cⁱ]
    for i in range(1, m + 1):
        starts = sources_of(root, boxes[f"c{diagrams.sup(i)}"][0])
        assert len(starts) == m and all(inside(s, [x[0] for x in xs]) for s in starts)
        assert {min(range(m), key=lambda j: abs(s[0] - xs[j][0][0])) for s in starts} == set(range(m))
        skip = sources_of(root, xs[i - 1][1])
        assert len(skip) == 1 and inside(skip[0], [xs[i - 1][0]])


@pytest.mark.parametrize("m", [2, 4])
def test_the_attention_q_network_reads_observation_action_pairs_and_gives_one_q_per_agent(m):
    """Fig. 17.9: φ reads the pair [oʲ; aʲ] (an arrow from the pair into each of the m shared φ), every
    cⁱ mixes every xʲ, and each agent's own head gives q̂ⁱ."""
    root = parse(attention_q_critic(m, 6 * m, 5, 32, 2, 16))
    boxes = boxes_by_label(root)
    for j in range(1, m + 1):
        assert len(boxes[f"o{diagrams.sup(j)}"]) == len(boxes[f"a{diagrams.sup(j)}"]) == 1
        assert len(boxes[f"q̂{diagrams.sup(j)}"]) == 1 and f"v̂{diagrams.sup(j)}" not in boxes
        assert len(sources_of(root, boxes[f"c{diagrams.sup(j)}"][0])) == m
    assert len(boxes["φ"]) == m
    assert f"[oⁱ; aⁱ] ∈ ℝ{diagrams.sup(6 * m + 5)}" in texts(root)


@pytest.mark.parametrize("m, i", [(2, 1), (4, 1), (4, 3), (6, 6)])
def test_maacs_critic_of_agent_i_attends_over_the_others_only(m, i):
    """MAAC's fig. 1 in the book's notation: agent i's query xⁱ_o comes from oⁱ alone (aⁱ is not drawn), the
    keys are xʲ = φ([oʲ; aʲ]) of the m − 1 other agents, and cⁱ reads exactly those keys and the query;
    agent i's own head gives one value per action. The drawing names MAAC's figure, not the source's."""
    sup = diagrams.sup
    root = parse(maac_critic(m, 5, 4, i=i))
    boxes = boxes_by_label(root)
    assert "after MAAC's fig. 1" in " ".join(texts(root)) and root.get("data-figure") == "1"
    assert f"x{sup(i)}" not in boxes and f"a{sup(i)}" not in boxes and len(boxes[f"o{sup(i)}"]) == 1
    others = [j for j in range(1, m + 1) if j != i]
    assert all(len(boxes[f"x{sup(j)}"]) == len(boxes[f"a{sup(j)}"]) == 1 for j in others)
    assert len(boxes["φ"]) == m - 1 and len(boxes["φo"]) == 1  # a subscript's tspan joins its base
    query, c_i = boxes[f"x{sup(i)}o"][0], boxes[f"c{sup(i)}"][0]
    starts = sources_of(root, c_i)
    assert len(starts) == m and sum(inside(s, [query]) for s in starts) == 1
    assert all(inside(s, [query] + [boxes[f"x{sup(j)}"][0] for j in others]) for s in starts)
    assert len(boxes[f"g{sup(i)}"]) == 1 and f"q̂{sup(i)}(1), …, q̂{sup(i)}(5)" in boxes


@pytest.mark.parametrize("make, message", [
    (lambda: maac_critic(1, 5, 4), "needs m >= 2 agents"),
    (lambda: maac_critic(3, 5, 4, i=4), "i = 4 is not one of the inputs 1, …, 3"),
    (lambda: attention_view([[0.5, 0.5], [0.7, 0.2]]), "row 2 of α sums to 0.9"),
    (lambda: attention_view([[1.2, -0.2], [0.5, 0.5]]), "negative weight"),
    (lambda: attention_view(np.full((2, 3), 1 / 3)), r"square matrix \(m, m\).*\(2, 3\)"),
    (lambda: attention_view([[np.nan, 1.0], [0.5, 0.5]]), "NaN"),
    (lambda: attention_view(random_alpha(3), i=0), "i = 0 is not one of the inputs 1, …, 3"),
    (lambda: attention_output([0.2, 0.2]), "αⁱ sums to 0.4"),
    (lambda: attention_output(random_alpha(3)), r"vector \(m,\)"),
    (lambda: attention_weights([[0.1, 0.2]]), r"vector \(m,\), one per key; got shape \(1, 2\)"),
    (lambda: attention_weights([0.1, np.inf]), "infinite"),
    (lambda: attention_weights([0.1, 0.3], i=3), "i = 3 is not one of the inputs 1, …, 2"),
    (lambda: sequence_mapping(-2), "m must be a whole number of inputs, at least 1; got -2"),
    (lambda: sequence_mapping(2.5), "m must be a whole number"),
    (lambda: multi_head(3, 0, 4), "l must be a whole number of heads"),
    (lambda: query_key_value(3, 3, 0, 3), "d_q must be"),
    (lambda: attention_critic(3, 18, 32, 2, True), "d_out must be"),
])
def test_bad_input_is_a_value_error_that_names_the_problem(make, message):
    with pytest.raises(ValueError, match=message):
        make()
