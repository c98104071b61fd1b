"""Part II's teaching form (issue #22): a short main line per chapter, details on demand, and numbered
algorithm boxes whose every step links to the lines of ``src/attnmarl/algos`` that implement it.

A box is a MyST admonition titled ``Algorithm C.K: ...`` with the class ``algorithm``; its steps are a
numbered list, and step n links to a line range of the package on the book's repository. The linked lines
must carry the comment ``# Algorithm C.K, step n`` so that a link that drifts from its code fails here.
"""

from __future__ import annotations

import re
from pathlib import Path

import nbformat
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]
REPOSITORY = yaml.safe_load((ROOT / "_config.yml").read_text())["repository"]["url"]

BOXES = {"book/07-value-network": "MAPPO", "book/09-q-network": "MADDPG"}
"""The chapters that must carry an algorithm box, and the algorithm each box states."""

MAIN_LINE_CHAPTERS = ["book/07-value-network", "book/08-policy-network", "book/09-q-network",
                      "book/10-more-agents"]
MAIN_LINE_WORDS = 3_300
"""About 3,000 words of main line (issue #22); per-seed tables and side studies go into collapsed blocks."""

BOX = re.compile(r"^(:{3,})\{admonition\} Algorithm (\d+)\.(\d+)[:.]? (.*?)\n(.*?)^\1\s*$", re.M | re.S)
STEP = re.compile(r"^(\d+)\. ", re.M)
CODE_LINK = re.compile(re.escape(REPOSITORY) + r"/blob/main/(src/attnmarl/[\w/]+\.py)#L(\d+)-L(\d+)")
COLLAPSED = re.compile(r"^(:{3,})\{admonition\}[^\n]*\n(?:[^\n]*\n)?:class: [^\n]*dropdown.*?^\1\s*$|"
                       r"^(:{3,})\{dropdown\}.*?^\2\s*$", re.M | re.S)


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
    assert any(BOXES[page] in box.group(4) for box in found), f"{page}: no box states {BOXES[page]}"


@pytest.mark.parametrize("page", list(BOXES))
def test_every_step_of_an_algorithm_box_links_to_the_code_that_does_it(page):
    for box in boxes(page):
        label = f"Algorithm {box.group(2)}.{box.group(3)}"
        body = box.group(5)
        starts = list(STEP.finditer(body))
        assert len(starts) >= 3, f"{page}: {label} has {len(starts)} numbered steps"
        assert [int(s.group(1)) for s in starts] == list(range(1, len(starts) + 1)), f"{label}: steps not 1, 2, …"
        for k, start in enumerate(starts):
            step = body[start.start(): starts[k + 1].start() if k + 1 < len(starts) else len(body)]
            links = CODE_LINK.findall(step)
            assert links, f"{label}, step {k + 1} links to no lines of src/attnmarl"
            for path, first, last in links:
                lines = (ROOT / path).read_text().splitlines()
                first, last = int(first), int(last)
                assert 1 <= first <= last <= len(lines), f"{label}, step {k + 1}: {path}#L{first}-L{last} " \
                                                         f"is outside the file ({len(lines)} lines)"
                marker = f"# {label}, step {k + 1}"
                assert any(line.strip().endswith(marker) or marker + " " in line or line.strip() == marker
                           for line in lines[first - 1: last]), \
                    f"{label}, step {k + 1}: {path} lines {first}–{last} do not carry '{marker}'"


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
