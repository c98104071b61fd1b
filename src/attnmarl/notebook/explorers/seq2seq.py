"""The explorers of "Attention in seq2seq": what a trained date translator reads at each step.

- :func:`alignment_frame` translates one input with one model and draws the alignment alpha
  (rows = output characters y_t', columns = input characters x_t) next to the translation; a
  model without attention has no alpha, and the frame says so;
- :func:`alignment_explorer` steps through a dozen held-out inputs of increasing length
  (:func:`showcase_examples`) for either model; its static face embeds all of them;
- :func:`date_box` is the live-only companion: type any date and see its translation and
  alignment (bad input shows the ValueError instead of a picture).
"""
from __future__ import annotations

import functools
import textwrap
from dataclasses import dataclass
from typing import Any

import numpy as np

from attnmarl import seq2seq as s2s
from attnmarl.checks import check_index, check_int
from attnmarl.notebook.viz import Frame, Heatmap, Text
from attnmarl.notebook.widgets import Dropdown, Explorer, Slider

__all__ = ["MODEL_NAMES", "SPACE", "char_labels", "pretrained_models", "showcase_examples",
           "alignment_frame", "alignment_explorer", "DateBox",
           "date_box"]

MODEL_NAMES = {"attention": True, "no attention": False}
"""The explorers' names of the two models -> the ``attention`` flag of :class:`attnmarl.seq2seq.Seq2Seq`."""

SPACE = "␣"
"""How a space is labelled on a heatmap axis (a blank label could not be told from a gap)."""


def char_labels(tokens: list[str]) -> list[str]:
    """Axis labels of characters: each character as itself, a space as ␣, tokens such as <eos> as is."""
    return [SPACE if token == " " else token for token in tokens]


@functools.cache
def _pretrained(attention: bool) -> s2s.Seq2Seq:
    return s2s.load_pretrained(attention)


def pretrained_models() -> dict[str, s2s.Seq2Seq]:
    """The two shipped checkpoints (:func:`attnmarl.seq2seq.load_pretrained`), by explorer name."""
    return {name: _pretrained(attention) for name, attention in MODEL_NAMES.items()}


def showcase_examples(n: int = 12, seed: int = s2s.SEED, pool: int = 2000) -> list[tuple[str, str]]:
    """``n`` held-out (text, ISO) pairs of increasing input length, from the shortest to the longest.

    They are drawn from the first ``pool`` test examples (:func:`attnmarl.seq2seq.make_examples` on
    the test dates of the split ``seed``): for n lengths evenly spaced between the shortest and the
    longest input, the first example whose length is nearest and not yet taken.
    """
    check_int("pool", pool)
    check_int("n", n, minimum=2)
    if n > pool:
        raise ValueError(f"a showcase of n = {n} examples needs a pool of at least n examples; got pool = {pool}")
    _, test_dates = s2s.split_dates(seed)
    examples = s2s.make_examples(test_dates, pool, seed)
    lengths = np.array([len(text) for text, _ in examples])
    chosen: list[int] = []
    for target in np.linspace(lengths.min(), lengths.max(), n):
        order = np.argsort(np.abs(lengths - target), kind="stable")
        chosen.append(next(int(i) for i in order if int(i) not in chosen))
    chosen.sort(key=lambda i: (lengths[i], i))
    return [examples[i] for i in chosen]


def _wrap(text: str, width: int = 64, indent: str = "  ") -> str:
    """Wrap each line of ``text`` to ``width`` characters, continuation lines indented."""
    return "\n".join(textwrap.fill(line, width, subsequent_indent=indent) for line in text.split("\n"))


def _error_marks(output: str, target: str) -> str:
    """A ^ under every position where ``output`` and ``target`` differ (or one of them is missing)."""
    return "".join(" " if i < min(len(output), len(target)) and output[i] == target[i] else "^"
                   for i in range(max(len(output), len(target))))


def alignment_frame(text: str, model: s2s.Seq2Seq, target: str | None = None) -> Frame:
    """Translate ``text`` with ``model`` and show what it read.

    With attention: a heatmap of alpha (T_out, T_in) from :func:`attnmarl.seq2seq.translate`,
    rows = the output tokens (the last is <eos>), columns = the input characters, and a text
    panel with the translation (and the ``target``, if given). Without attention: the text
    panel and a note that there is no alpha. Raises ValueError for an input the model cannot
    read (empty, or a character outside the source vocabulary).
    """
    if target is not None and not isinstance(target, str):
        raise ValueError(f"target must be the expected translation, a string (or None); got {target!r:.60}")
    output, alpha, src_tokens, out_tokens = s2s.translate(model, text)
    lines = [f"input:  {text}", f"output: {output}"]
    if target is not None:
        lines.append(f"target: {target}   {'right' if output == target else 'WRONG'}")
        if output != target:
            lines.append(" " * 8 + _error_marks(output, target) + "  (^ = wrong character)")
    result = Text(_wrap("\n".join(lines)), title="translation")
    if alpha is None:
        note = Text(_wrap("This model has no α. Its decoder reads one vector, the encoder's final "
                          "state C = [→h_T ; ←h_1], at every output step: everything it writes "
                          f"must pass through those {2 * model.cfg.n_hidden} numbers.", indent=""),
                    title="no attention")
        return Frame([result, note], caption=f"{len(src_tokens)} input characters, no alignment")
    heatmap = Heatmap(alpha.numpy(), char_labels(out_tokens), char_labels(src_tokens),
                      title="α (additive attention)", xlabel="input character (position t)",
                      ylabel="output character (step t′)", annotate=False)
    peaks = alpha.max(dim=1).values
    return Frame([heatmap, result],
                 caption=f"{len(out_tokens)} output tokens × {len(src_tokens)} input characters; "
                         f"largest weight per row: median {peaks.median().item():.2f}, "
                         f"smallest {peaks.min().item():.2f}")


def _checked(models: dict[str, s2s.Seq2Seq]) -> dict[str, s2s.Seq2Seq]:
    """``models`` if it holds exactly the two models of :data:`MODEL_NAMES`, each of its kind."""
    if set(models) != set(MODEL_NAMES):
        raise ValueError(f"models must be named {sorted(MODEL_NAMES)}; got {sorted(models)}")
    for name, attention in MODEL_NAMES.items():
        if models[name].cfg.attention != attention:
            raise ValueError(f"models[{name!r}] is a model {'without' if attention else 'with'} attention")
    return models


def alignment_explorer(models: dict[str, s2s.Seq2Seq] | None = None,
                       examples: list[tuple[str, str]] | None = None) -> Explorer:
    """Step through held-out inputs (default: :func:`showcase_examples`) with either model
    (default: :func:`pretrained_models`): the alignment heatmap and the translation. ``examples`` that a model
    cannot translate (:func:`attnmarl.seq2seq.check_examples`) are refused here, not when their frame is drawn."""
    models = _checked(pretrained_models() if models is None else models)
    examples = showcase_examples() if examples is None else s2s.check_examples(examples)  # each one translatable

    def frame(example: int = 0, model: str = "attention") -> Frame:
        text, target = examples[check_index("example", example, len(examples), "example index")]
        return alignment_frame(text, models[model], target)

    return Explorer(frame, [
        Slider("example", list(range(len(examples))), default=0,
               label=f"held-out example (0 = shortest, {len(examples) - 1} = longest)"),
        Dropdown("model", list(MODEL_NAMES), default="attention"),
    ], title="Alignment explorer: what each output character reads")


@dataclass
class DateBox:
    """The live "type a date" box: a text field above an explorer with a model dropdown."""

    text: Any
    """The ``ipywidgets.Text`` field; setting its ``value`` translates the new input."""
    explorer: Explorer
    widget: Any
    """The ``ipywidgets.VBox`` to display."""


def date_box(models: dict[str, s2s.Seq2Seq] | None = None,
             text: str = "Saturday, the twenty-first of November, 2026") -> DateBox:
    """A text field wired to :func:`alignment_frame` (live face only: it needs a kernel).

    An input the model cannot read shows the ValueError's message in place of the heatmap.
    """
    import ipywidgets as W

    models = _checked(pretrained_models() if models is None else models)
    field = W.Text(value=text, description="a date:", continuous_update=False,
                   layout=W.Layout(width="36em"))

    def frame(model: str = "attention") -> Frame:
        try:
            return alignment_frame(field.value, models[model])
        except ValueError as error:
            return Frame([Text(_wrap(f"ValueError: {error}", 80, ""), title="cannot translate this input")])

    explorer = Explorer(frame, [Dropdown("model", list(MODEL_NAMES), default="attention")],
                            title="Type a date (press Enter)")
    face = explorer.live()
    field.observe(lambda change: explorer.update(), names="value")
    return DateBox(text=field, explorer=explorer, widget=W.VBox([field, face]))
