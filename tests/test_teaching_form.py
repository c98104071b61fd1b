"""Part II's teaching form (issues #22 and #35): a short main line per chapter, details on demand, and numbered
algorithm boxes that show under every step the lines of ``src/attnmarl/algos`` that implement it (for chapter 11's
message round, of ``src/attnmarl/nets/messages.py``).

A box is a MyST admonition titled ``Algorithm C.K: ...`` with the class ``algorithm``; its steps are a
numbered list, and under step n an ``algocode`` block names what to show: first the marker comment
``# Algorithm C.K, step n`` of the module, then any function the step calls. The book build reads those
lines from the package (:mod:`attnmarl.site.codelines`), so they cannot drift; the tests here check that every
step has its block, that each block resolves, and that the lines shown are lines a training run executes.
"""

from __future__ import annotations

import ast
import re
import sys
import tempfile
import textwrap
from pathlib import Path

import nbformat
import pytest

from attnmarl.algos import maac, maddpg, mappo, qmix
from attnmarl.algos.maac import MAACConfig
from attnmarl.algos.maddpg import MADDPGConfig
from attnmarl.algos.mappo import MAPPOConfig
from attnmarl.algos.qmix import QMIXConfig
from attnmarl.site.codelines import locate, module_path

ROOT = Path(__file__).resolve().parents[1]

BOXES = {"book/07-value-network": ("MAPPO",), "book/09-q-network": ("MADDPG",), "book/10-more-agents": ("MAAC",),
         "book/11-between-agents": ("QMIX", "messages"), "book/13-team-as-sequence": ("MAT",)}
"""The chapters that must carry algorithm boxes, and what their boxes state: each name in the title of one box."""

BOX_MODULES = ("attnmarl.algos.", "attnmarl.nets.messages")
"""Where the code under a step may come from: the algorithm files, and the module of chapter 11's message round
(Algorithm 11.2 states one pass of the communicating actor, which runs inside MAPPO's own steps)."""

MAIN_LINE_CHAPTERS = ["book/07-value-network", "book/08-policy-network", "book/09-q-network",
                      "book/10-more-agents", "book/11-between-agents"]
MAIN_LINE_WORDS = 3_300
"""About 3,000 words of main line (issue #22); per-seed tables and side studies go into collapsed blocks."""

PART_II = ["book/06-marl-mpe", *MAIN_LINE_CHAPTERS, "book/when-attention-helps"]
"""Part II's pages: its chapters, and the synthesis that closes it."""
NUMBERS_PER_100_WORDS = 6
"""Each result once (issue #43): at most 6 numbers per 100 words of main line; the rest in a table, a figure
or a collapsed block."""
BOX = re.compile(r"^(:{3,})\{admonition\} Algorithm (\d+)\.(\d+)[:.]? (.*?)\n(.*?)^\1\s*$", re.M | re.S)
STEP = re.compile(r"^(\d+)\. ", re.M)
ALGOCODE = re.compile(r"^\s*```\{algocode\} (\S+)\n(.*?)^\s*```\s*$", re.M | re.S)
COLLAPSED = re.compile(r"^(:{3,})\{admonition\}[^\n]*\n(?:[^\n]*\n)?:class: [^\n]*dropdown.*?^\1\s*$|"
                       r"^(:{3,})\{dropdown\}.*?^\2\s*$|"
                       r"^\s*(`{3,})\{algocode\}.*?^\s*\3\s*$", re.M | re.S)
"""Blocks a reader sees closed: dropdowns, and the code folds under the steps of an algorithm box."""


def markdown(page: str) -> list[str]:
    notebook = nbformat.read((ROOT / page).with_suffix(".ipynb"), as_version=4)
    return [c.source for c in notebook.cells if c.cell_type == "markdown"]


def boxes(page: str) -> list[re.Match]:
    return [m for source in markdown(page) for m in BOX.finditer(source)]


def main_line_words(page: str) -> int:
    """Words of prose a reader sees without opening anything: markdown outside collapsed blocks, without
    math and link targets."""
    words = 0
    for source in markdown(page):
        text = COLLAPSED.sub("", source)
        text = re.sub(r"\$\$.*?\$\$|\$[^$\n]*\$", " ", text, flags=re.S)
        text = re.sub(r"\]\([^)]*\)", "]", text)
        words += len(re.findall(r"[A-Za-z][A-Za-z'’-]*", text))
    return words


@pytest.mark.parametrize("page", list(BOXES))
def test_the_chapter_states_its_algorithm_in_a_numbered_box(page):
    found = boxes(page)
    assert found, f"{page} has no ':::{{admonition}} Algorithm C.K: ...' box"
    chapter = int(Path(page).name[:2])
    for box in found:
        assert int(box.group(2)) == chapter, f"{page}: box 'Algorithm {box.group(2)}.{box.group(3)}' is numbered " \
                                             f"for another chapter"
        assert ":class: algorithm" in box.group(5), f"{page}: algorithm box without ':class: algorithm'"
    for name in BOXES[page]:
        assert any(name in box.group(4) for box in found), f"{page}: no box states {name}"


def shown(page: str) -> list[tuple[str, int, str, list[str]]]:
    """Every step of every box of ``page``: (the box's label, n, the module its block shows, its targets)."""
    steps = []
    for box in boxes(page):
        label = f"Algorithm {box.group(2)}.{box.group(3)}"
        body = box.group(5)
        starts = list(STEP.finditer(body))
        assert len(starts) >= 3, f"{page}: {label} has {len(starts)} numbered steps"
        assert [int(s.group(1)) for s in starts] == list(range(1, len(starts) + 1)), f"{label}: steps not 1, 2, …"
        for k, start in enumerate(starts):
            step = body[start.start(): starts[k + 1].start() if k + 1 < len(starts) else len(body)]
            blocks = ALGOCODE.findall(step)
            assert len(blocks) == 1, f"{label}, step {k + 1} shows {len(blocks)} algocode blocks (one, please)"
            module, content = blocks[0]
            steps.append((label, k + 1, module, [t.strip() for t in content.splitlines() if t.strip()]))
    return steps


@pytest.mark.parametrize("page", list(BOXES))
def test_every_step_of_an_algorithm_box_shows_the_code_that_does_it(page):
    for label, n, module, targets in shown(page):
        assert module.startswith(BOX_MODULES), f"{label}, step {n} shows {module}, not an algorithm's code"
        assert targets[0] == f"{label}, step {n}", f"{label}, step {n} must show its marker first; got {targets}"
        for target in targets:
            lines = locate(module, target)  # ValueError if the marker or the function is not there
            assert lines.last - lines.first < 40, f"{label}, step {n}: {target} shows {lines.label()}, too long"


def executed_lines(module: str, run) -> set[int]:
    """The lines of ``module``'s file that ``run()`` executes."""
    path, hit = str(module_path(module)), set()

    def local(frame, event, arg):
        if event == "line":
            hit.add(frame.f_lineno)
        return local

    def tracer(frame, event, arg):
        return local if frame.f_code.co_filename == path else None

    sys.settrace(tracer)
    try:
        run()
    finally:
        sys.settrace(None)
    return hit


def statement_lines(lines) -> set[int]:
    """The first line of every statement within ``lines`` (a :class:`CodeLines`), less ``def`` lines, docstrings,
    ``raise`` statements and the input checks that end in one (an ``if`` whose body raises): the lines a run of
    the code must pass through."""
    tree = ast.parse(lines.path.read_text())
    checks = {n.lineno for node in ast.walk(tree) if isinstance(node, ast.If) and isinstance(node.body[-1], ast.Raise)
              for statement in node.body for n in ast.walk(statement) if isinstance(n, ast.stmt)}
    found = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.stmt) or not lines.first <= node.lineno <= lines.last:
            continue
        if isinstance(node, (ast.Raise, ast.FunctionDef, ast.ClassDef)) or \
                isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue  # a def or class line runs when the module is imported, its body when called
        if node.lineno not in checks:
            found.add(node.lineno)
    return found


TINY_RUNS = {
    "attnmarl.algos.mappo": lambda: mappo.train(MAPPOConfig("simple_spread", {"N": 3}, num_envs=8, rollout_steps=25,
                                                            total_steps=400, d_x=8, heads=2, d_q=4, d_out=4,
                                                            critic_hidden=8, actor_hidden=8)),
    "attnmarl.algos.maddpg": lambda: maddpg.train(MADDPGConfig("simple_spread", {"N": 3, "continuous_actions": True},
                                                               num_envs=8, total_steps=8 * 40, learning_starts=160,
                                                               d_x=8, d_q=4, d_out=4, critic_hidden=8, actor_hidden=8,
                                                               minibatch_size=32, buffer_size=1000)),
    "attnmarl.algos.maac": lambda: maac.train(MAACConfig("collect_treasure", {"num_collectors": 2, "num_deposits": 2,
                                                                               "num_treasures": 2},
                                                         num_envs=8, rollout_steps=5, total_steps=8 * 5 * 8,
                                                         learning_starts=120, d=8, heads=2, actor_hidden=8,
                                                         minibatch_size=32, buffer_size=1000)),
    "attnmarl.algos.qmix": lambda: qmix.train(QMIXConfig("simple_spread", {"N": 3}, num_envs=8, total_steps=8 * 40,
                                                         learning_starts=160, entity_d=8, entity_ff=8, qatten_heads=2,
                                                         qatten_d=4, qatten_d_u=8, hyper_hidden=8,
                                                         minibatch_size=32, buffer_size=1000)),
    "attnmarl.nets.messages": lambda: [mappo.train(MAPPOConfig("simple_spread", {"N": 3}, num_envs=8, rollout_steps=25,
                                                               total_steps=400, actor="comm", sight_radius=1.0,
                                                               messages=messages, message_rounds=2, entity_d=8,
                                                               entity_ff=8, message_d_k=4, d_x=8, heads=2, d_q=4,
                                                               d_out=4, critic_hidden=8, actor_hidden=8))
                                       for messages in ("attention", "mean", "none")],
}
"""A run of each algorithm of a box, a few seconds long, that passes through every line its box shows (for the
message round, one run of each kind of message: Algorithm 11.2 shows ``TargetedMessages.forward`` whole, with
the controls' branches)."""


@pytest.mark.parametrize("module", list(TINY_RUNS))
def test_the_code_shown_under_a_box_is_code_that_runs(module):
    """Each statement the book shows under a step (less docstrings and ``raise``) executes in a real run: a block
    that showed a stale copy, another function, or dead code would fail here."""
    steps = [(label, n, targets) for page in BOXES for label, n, shown_module, targets in shown(page)
             if shown_module == module]
    assert steps, f"no box shows {module}"
    hit = executed_lines(module, TINY_RUNS[module])
    for label, n, targets in steps:
        for target in targets:
            lines = locate(module, target)
            missed = sorted(statement_lines(lines) - hit)
            assert not missed, f"{label}, step {n}: {target} shows lines {missed} of {lines.label()} that a run " \
                               "does not execute"


def test_a_step_shows_its_marked_statements_and_stops_at_the_next_step():
    """The rules of :func:`attnmarl.site.codelines.locate` on a made-up module: a marked loop is shown down to the
    next marker inside it, a comment marker takes the statements under it, a blank line ends a step."""
    with tempfile.TemporaryDirectory() as folder:
        (Path(folder) / "made_up_algo.py").write_text(textwrap.dedent("""\
            def train(n):
                total = 0
                for k in range(n):  # Algorithm 1.1, step 1
                    x = k * 2
                    y = x + 1  # Algorithm 1.1, step 2
                    total += y
                # Algorithm 1.1, step 3
                total *= 2
                z = total

                return z
            """))
        sys.path.insert(0, folder)
        try:
            spans = {n: locate("made_up_algo", f"Algorithm 1.1, step {n}") for n in (1, 2, 3)}
            whole = locate("made_up_algo", "train")
            with pytest.raises(ValueError, match="marks no line"):
                locate("made_up_algo", "Algorithm 1.1, step 4")
            with pytest.raises(ValueError, match="defines no 'fit'"):
                locate("made_up_algo", "fit")
        finally:
            sys.path.remove(folder)
    assert [(s.first, s.last) for s in spans.values()] == [(3, 4), (5, 6), (7, 9)]
    assert (whole.first, whole.last) == (1, 11)
    assert spans[1].text.splitlines() == ["for k in range(n):  # Algorithm 1.1, step 1", "    x = k * 2"]


CODE = re.compile(r"```.*?```|`[^`\n]+`", re.S)
ROLE = re.compile(r"\{[a-z]+\}`[^`]*`")
LABEL = re.compile(r"^\s*(?:\d+\.\s+)?\([\w-]+\)=\s*$", re.M)
DISPLAY_MATH = re.compile(r"\$\$.*?\$\$", re.S)
INLINE_MATH = re.compile(r"\$((?:[^$\n]|\n(?!\n))+)\$")
SCRIPT = r"[_^](?:\{(?:[^{}]|\{[^{}]*\})*\}|\\?\w)"
OPERATOR = re.compile(r"\\(?:[,;:! ]|cdot|times|pm|mp|approx|leq?|geq?|to|[lc]?dots|quad|qquad|%)")
REFERENCE = re.compile(r"(?:\b(?:[Cc]hapters?|[Ss]ections?|[Ff]igs?\.|[Ff]igures?|[Aa]lgorithms?|[Ee]xercises?|"
                       r"[Ss]olutions?|[Ee]quations?|[Ss]teps?|[Pp]arts?|[Tt]ables?)|§)\s*\d+(?:\.\d+)?"
                       r"(?:\s*(?:,|and|or|to|–|-)\s*\d+(?:\.\d+)?)*")
ITEM_NUMBER = re.compile(r"^(\s*|#+\s+)\d+\.(?=\s)", re.M)
NUMERAL = re.compile(r"(?<![\w.,])\d+(?:,\d{3})*(?:\.\d+)?(?!\w|[.,]\d)")


def constant(math: str) -> str:
    """Inline math as the numbers it states: a constant ($-13.0$, $5^3 = 125$) reads as its numerals, less its
    exponents; a formula with a symbol in it ($m = 3$, $\\rho = 0.5$, $2m - 1$) is notation, and reads as nothing."""
    text = OPERATOR.sub(" ", re.sub(SCRIPT, " ", math))
    return " " if re.search(r"[A-Za-z\\]", text) else f" {text} "


def numbers_in_main_line(page: str) -> list[str]:
    """The numbers a reader meets in the main line of ``page`` (the prose :func:`main_line_words` counts).

    A number is a numeral: digits with thousands commas and a decimal point, so -27.8 is one number, 20,614 is
    one, a range "35 to 38" or "91–98%" is two, and a percentage is its numeral. Counted in running text and
    in inline math, since the book writes a signed result as ``$-13.0$``. Not counted, as notation or
    navigation rather than results:

    - references: "chapter 7", "section 2", "fig. 17.9", "Algorithm 9.1", "exercise 2", "step 6", "steps
      3–7", "§4" (and every {doc}, {ref}, {cite} or {term} role, so the years of citations too), labels,
      the numbers of headings and of list items;
    - code: inline code (``q-spread3-attention``, ``N=6``) and fenced blocks;
    - math that is notation: display math, inline math with a symbol in it ($m = 3$, $\\rho = 0.5$,
      $\\gamma = 0.95$, $2m - 1$, $o^1$), which names a setting, an index or a formula, and the exponents of
      a constant ($5^3$ counts the 5). A result is written as a plain number, never inside a formula;
    - numerals glued to a word (mpe2, 2m, simple_spread_v3);
    - numbers spelled out in words ("ten seeds").

    Collapsed blocks are not counted: a restatement there is on demand.
    """
    found = []
    for source in markdown(page):
        text = COLLAPSED.sub(" ", source)
        text = DISPLAY_MATH.sub(" ", CODE.sub(" ", text))
        text = LABEL.sub(" ", ROLE.sub(" ", text))
        text = INLINE_MATH.sub(lambda m: constant(m.group(1)), text)
        text = re.sub(r"\]\([^)]*\)", "]", text)
        text = REFERENCE.sub(" ", ITEM_NUMBER.sub(r"\1", text))
        found += NUMERAL.findall(text)
    return found


def numbers_per_100_words(page: str) -> float:
    """:func:`numbers_in_main_line` per 100 words of :func:`main_line_words` (which leaves math out, so a
    number written in math raises the density)."""
    return 100 * len(numbers_in_main_line(page)) / main_line_words(page)


@pytest.mark.parametrize("page", PART_II)
def test_a_part_ii_page_quotes_few_numbers_in_its_main_line(page):
    """Each result once, in a table or a figure with one sentence of reading (issue #43): the main line quotes
    at most 6 numbers per 100 words; restatements go into collapsed blocks or are cut."""
    density = numbers_per_100_words(page)
    assert density <= NUMBERS_PER_100_WORDS, f"{page}: {density:.1f} numbers per 100 words of main line " \
                                             f"(at most {NUMBERS_PER_100_WORDS}): state each result once"


def test_numbers_are_counted_in_prose_and_not_in_notation_or_references():
    text = ("See {doc}`chapter 7 <07-value-network>` and section 2 of Algorithm 9.1, step 6 {cite}`lowe2017multi`. "
            "At $m = 3$ and $\\rho = 0.5$ the critic ends at $-13.0$ (95% interval $-1.0$ to $+0.7$), "
            "20,614 parameters, $5^3 = 125$ joint actions of $x^1$ over $2m - 1$ tokens, "
            "in `q-spread3-attention`; ten seeds, not 3.\n\n:::{admonition} Details\n:class: dropdown\n"
            "hidden 1.5 and 2.5\n:::\n\n1. an item")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "page.ipynb"
        nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_markdown_cell(text)]), path)
        assert numbers_in_main_line(str(path.with_suffix(""))) == ["13.0", "95", "1.0", "0.7", "20,614",
                                                                   "5", "125", "3"]


@pytest.mark.parametrize("page", MAIN_LINE_CHAPTERS)
def test_the_main_line_of_a_part_ii_chapter_is_short(page):
    words = main_line_words(page)
    assert words <= MAIN_LINE_WORDS, f"{page}: {words} words of visible prose (at most {MAIN_LINE_WORDS}); " \
                                     f"move per-seed tables, config details and side studies into dropdowns"


def test_collapsed_blocks_are_not_counted_and_visible_prose_is():
    text = "One two three.\n\n:::{admonition} Results in detail\n:class: dropdown\nfour five six\n:::\n\nseven"
    assert len(re.findall(r"[A-Za-z]+", COLLAPSED.sub("", text))) == 4
    assert len(re.findall(r"[A-Za-z]+", COLLAPSED.sub("", "::::{dropdown} Title\nhidden words\n::::\nshown"))) == 1
    box_then_dropdown = (":::{admonition} Algorithm 7.1: seen\n:class: algorithm\n1. step one\n:::\n\n"
                         ":::{admonition} Details\n:class: dropdown\nhidden\n:::")
    assert re.findall(r"[A-Za-z]+", COLLAPSED.sub("", box_then_dropdown)) == ["admonition", "Algorithm", "seen",
                                                                            "class", "algorithm", "step", "one"]
