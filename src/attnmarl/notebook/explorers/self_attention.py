"""The explorers of the self-attention chapters: frame functions for :class:`attnmarl.notebook.widgets.Explorer`.

Each ``*_frame`` function builds the real layer from :mod:`attnmarl.attention` for the given
settings and returns what to draw; ``*_explorer`` pairs it with its controls. Both explorers also run in the
page of the built book (:class:`attnmarl.notebook.widgets.PageModel`): ``*_page_data`` exports the layers' weights and
the inputs for every seed and size the controls offer, and ``static/live.js`` computes the frames from them.
"""
from __future__ import annotations

import math

import numpy as np
import torch

from attnmarl.attention import MultiHeadSelfAttention, SelfAttention
from attnmarl.checks import check_int, check_real, check_seed, derived_seed, is_int
from attnmarl.notebook.viz import Frame, Heatmap, Points, sup
from attnmarl.notebook.widgets import Explorer, PageModel, Range, Slider, Toggle

__all__ = ["example_inputs", "random_layer", "alpha_entropy", "alpha_frame", "alpha_explorer", "alpha_page_data",
           "heads_frame", "heads_explorer", "heads_page_data"]

SEEDS = list(range(10))
"""The weight seeds both explorers offer."""

ALPHA_D_Q, HEADS_D_Q, HEADS = [1, 2, 4, 8, 16], [1, 2, 4, 8], [1, 2, 3, 4]
"""The sizes the explorers offer: d_q of the single-head layer; d_q and l of the multi-head one."""


def example_inputs(m: int, d_in: int, seed: int, spread: float = 1.2, bound: float = 2.5) -> torch.Tensor:
    """m example inputs x^1..x^m in R^{d_in}, drawn N(0, spread^2) from ``seed`` and clipped to
    [-bound, bound] (so that in the plane they stay inside the drawn square).

    The first m of a fixed list of 16, so changing m adds or removes inputs without moving the others.
    """
    if not is_int(m) or not 1 <= m <= 16:
        raise ValueError(f"the examples hold between 1 and 16 inputs; got m = {m!r}")
    check_seed(seed)
    spread, bound = check_real("spread", spread, 0.0, low_open=True), check_real("bound", bound, 0.0, low_open=True)
    generator = torch.Generator().manual_seed(derived_seed(seed, 10_000))
    return (spread * torch.randn(16, d_in, generator=generator)[:m]).clamp(-bound, bound)


MAX_HEADS = 16
"""The most heads an explorer draws (one heatmap each; more would not fit a page, and a million would not end)."""


def random_layer(seed: int, d_in: int, d_q: int, d_out: int, heads: int | None = None,
                 scale: bool = False) -> MultiHeadSelfAttention | SelfAttention:
    """The layer an explorer shows, with weights drawn N(0, 1/d_in) from ``seed`` (LeCun's
    initialisation: wider than PyTorch's default, so that alpha is visibly peaked rather than
    nearly uniform). ``heads=None`` gives a :class:`SelfAttention`, an integer a
    :class:`MultiHeadSelfAttention` (at most :data:`MAX_HEADS` heads: an explorer draws one panel each)."""
    check_seed(seed)
    if heads is not None:
        check_int("heads", heads, maximum=MAX_HEADS)
    torch.manual_seed(seed)
    layer = (SelfAttention(d_in, d_q, d_out, scale=scale) if heads is None
             else MultiHeadSelfAttention(d_in, d_q, d_out, heads=heads, scale=scale))
    with torch.no_grad():
        for weight in layer.parameters():
            weight.normal_(0.0, 1.0 / math.sqrt(d_in))
    return layer


def alpha_entropy(alpha: np.ndarray) -> np.ndarray:
    """H(alpha) = -sum_j alpha_j log alpha_j over the last axis (keys), in nats; 0 log 0 = 0."""
    return -(alpha * np.log(np.clip(alpha, 1e-12, None))).sum(-1)


def _ordinal(n: int) -> str:
    """1 → '1st', 2 → '2nd', 11 → '11th': coordinates counted from 1, as chapter 2's explorer labels them."""
    suffix = "th" if 10 <= n % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(n % 10, "th")
    return f"{n}{suffix}"


def alpha_frame(m: int = 4, d_q: int = 2, scale: bool = False, seed: int = 0,
                x1_0: float = 1.5, x1_1: float = 0.0, d_out: int = 2) -> Frame:
    """Single-head self-attention on m points of the plane (d_in = 2), x^1 placed at (x1_0, x1_1).

    Panels: the inputs, alpha (rows = queries, columns = keys) and the outputs c^i.
    """
    layer = random_layer(seed, 2, d_q, d_out, scale=scale)
    x = example_inputs(m, 2, seed)
    x[0] = torch.tensor([x1_0, x1_1])
    with torch.no_grad():
        c, alpha = layer(x)
    alpha, c = alpha.numpy(), c.numpy()
    names = [sup(i + 1) for i in range(m)]
    entropy = alpha_entropy(alpha).mean()
    return Frame(
        [
            Points(x.numpy(), [f"x{n}" for n in names], title="inputs xⁱ (x¹ ringed)", highlight=[0]),
            Heatmap(alpha, [f"q{n}" for n in names], [f"k{n}" for n in names],
                    title=f"α{' (scaled by 1/√d_q)' if scale else ''}", xlabel="key kʲ", ylabel="query qⁱ"),
            Heatmap(c, [f"c{n}" for n in names], [_ordinal(k + 1) for k in range(d_out)], title="outputs cⁱ",
                    xlabel="coordinate", ylabel="output", vmin=-2.0, vmax=2.0, cmap="RdBu_r"),
        ],
        caption=f"mean row entropy of α: {entropy:.2f} nats (uniform: ln m = {math.log(m):.2f}); "
                f"largest weight: {alpha.max():.3f}",
    )


def _weights(layer: torch.nn.Module) -> dict[str, list]:
    """A layer's W_q, W_k, W_v as nested lists, to 8 decimals (far below the 1e-5 the page is held to)."""
    return {name: np.round(getattr(layer, name).detach().double().numpy(), 8).tolist()
            for name in ("W_q", "W_k", "W_v")}


def alpha_page_data() -> dict:
    """What the page computes :func:`alpha_frame` from: each seed's 16 example inputs and the layer of every
    (seed, d_q) the explorer offers (d_in = d_out = 2)."""
    return {"inputs": {seed: np.round(example_inputs(16, 2, seed).double().numpy(), 8).tolist() for seed in SEEDS},
            "layers": {f"{seed},{d_q}": _weights(random_layer(seed, 2, d_q, 2)) for seed in SEEDS for d_q in ALPHA_D_Q}}


def heads_page_data() -> dict:
    """What the page computes :func:`heads_frame` from: each seed's 16 example inputs in R^4 and the multi-head
    layer of every (seed, l, d_q) the explorer offers (d_in = 4, d_out = 2)."""
    return {"inputs": {seed: np.round(example_inputs(16, 4, seed).double().numpy(), 8).tolist() for seed in SEEDS},
            "layers": {f"{seed},{heads},{d_q}": _weights(random_layer(seed, 4, d_q, 2, heads=heads))
                       for seed in SEEDS for heads in HEADS for d_q in HEADS_D_Q}}


def alpha_explorer() -> Explorer:
    """The α explorer of "Self-attention, step by step": m, d_q, scaling, weight seed and x^1 (anywhere in the
    square, in the page and in a notebook)."""
    coarse = [-2.5, -1.5, 0.0, 1.5, 2.5]
    return Explorer(alpha_frame, [
        Slider("m", list(range(2, 9)), default=4, label="m (inputs)", static=[2, 3, 4, 6, 8]),
        Slider("d_q", ALPHA_D_Q, default=4),
        Toggle("scale", default=False, label="scale by 1/√d_q"),
        Slider("seed", SEEDS, default=0, label="seed (weights, inputs)", static=[0, 1, 2]),
        Range("x1_0", -2.5, 2.5, 0.01, default=1.5, label="x¹, 1st coordinate", static=coarse),
        Range("x1_1", -2.5, 2.5, 0.01, default=0.0, label="x¹, 2nd coordinate", static=coarse),
    ], title="α explorer: single-head self-attention on points of the plane",
        page=PageModel("alpha", alpha_page_data, "the layer runs here, in JavaScript, on weights exported from "
                       "attnmarl (held to PyTorch within 1e-5 by the book's tests); drag x¹ anywhere, or move it "
                       "with the arrow keys."))


def heads_frame(heads: int = 2, m: int = 5, d_q: int = 2, scale: bool = False, seed: int = 0,
                d_in: int = 4, d_out: int = 2, x1_0: float = 1.5, x1_1: float = 0.0) -> Frame:
    """Multi-head self-attention on m inputs in R^{d_in}, the first two coordinates of x^1 set to (x1_0, x1_1):
    the inputs' first two coordinates (where x^1 can be moved), then one alpha heatmap per head, side by side."""
    layer = random_layer(seed, d_in, d_q, d_out, heads=heads, scale=scale)
    x = example_inputs(m, d_in, seed)
    x[0, :2] = torch.tensor([x1_0, x1_1])
    with torch.no_grad():
        c, alpha = layer(x)
    names = [sup(i + 1) for i in range(m)]
    inputs = Points(x[:, :2].numpy(), [f"x{n}" for n in names], title=f"inputs xⁱ, 1st and 2nd of {d_in} coordinates",
                    highlight=[0])
    panels = [inputs] + [Heatmap(alpha[h].numpy(), [f"q{n}" for n in names], [f"k{n}" for n in names],
                                 title=f"head {h + 1}", xlabel="key kʲ", ylabel="query qⁱ") for h in range(heads)]
    return Frame(panels, caption=f"l = {heads} head(s), d_out = {d_out}: each cⁱ concatenates l × d_out = "
                                 f"{heads} × {d_out} = {tuple(c.shape)[-1]} numbers; parameters: "
                                 f"{sum(p.numel() for p in layer.parameters())}")


def heads_explorer() -> Explorer:
    """The per-head α explorer of "Multi-head self-attention": l, m, d_q, scaling, seed, and x^1's first two
    coordinates (anywhere in the square: drag x¹ in the page)."""
    return Explorer(heads_frame, [
        Slider("heads", HEADS, default=4, label="l (heads)"),
        Slider("m", list(range(2, 9)), default=5, label="m (inputs)", static=[3, 5, 8]),
        Slider("d_q", HEADS_D_Q, default=2),
        Toggle("scale", default=False, label="scale by 1/√d_q"),
        Slider("seed", SEEDS, default=0, label="seed (weights, inputs)", static=[0, 1, 2]),
        Range("x1_0", -2.5, 2.5, 0.01, default=1.5, label="x¹, 1st coordinate"),
        Range("x1_1", -2.5, 2.5, 0.01, default=0.0, label="x¹, 2nd coordinate"),
    ], title="Per-head α explorer",
        page=PageModel("heads", heads_page_data, "the layer runs here, in JavaScript, on weights exported from "
                       "attnmarl (held to PyTorch within 1e-5 by the book's tests); every setting, not a grid: "
                       "drag x¹, or move it with the arrow keys."))
