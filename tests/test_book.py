"""The book: every chapter runs in quick mode, and the built HTML works offline in Chromium.

One session fixture copies the book to a temporary folder, executes every chapter of the table of
contents with nbclient (quick mode, static explorers, as the book build would select them), then
builds that copy with Jupyter Book without executing again. The tests read the results.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import textwrap
import time
from dataclasses import dataclass, field
from html import unescape as html_unescape
from pathlib import Path

import nbformat
import pytest
import yaml
from browser import hold_playground, offline_page
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError

ROOT = Path(__file__).resolve().parents[1]
CONFIG = yaml.safe_load((ROOT / "_config.yml").read_text())
REPOSITORY = CONFIG["repository"]["url"]


def toc_files() -> list[str]:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    files = [toc["root"]]
    for part in toc.get("parts", []):
        files += [chapter["file"] for chapter in part["chapters"]]
    return files


NOTEBOOKS = [f for f in toc_files() if (ROOT / f).with_suffix(".ipynb").exists()]
CHAPTERS = [f for f in NOTEBOOKS if Path(f).name[:2].isdigit()]
"""The numbered chapters. The other notebooks (the playground appendix) keep the rules of every notebook
(executed, stored without outputs, code that fits its column, the setup cell), not a chapter's shape."""
PLAYGROUNDS = ["book/playground", "book/08-policy-network", "book/10-more-agents", "book/13-team-as-sequence"]
"""The pages that embed the in-page playground (attnmarl.notebook.playground)."""
PAGES = toc_files()


@dataclass
class QuickBook:
    html: Path
    seconds: dict[str, float] = field(default_factory=dict)
    errors: dict[str, str] = field(default_factory=dict)
    build: subprocess.CompletedProcess | None = None


@pytest.fixture(scope="session")
def quick_book(tmp_path_factory) -> QuickBook:
    work = tmp_path_factory.mktemp("book")
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, work / name)
    for folder in ("book", "_static"):
        shutil.copytree(ROOT / folder, work / folder)
    result = QuickBook(html=work / "_build" / "html")
    saved = {k: os.environ.get(k) for k in ("ATTNMARL_QUICK", "ATTNMARL_STATIC", "OMP_NUM_THREADS")}
    os.environ.update(ATTNMARL_QUICK="1", ATTNMARL_STATIC="1")  # inherited by the kernels
    if "PYTEST_XDIST_WORKER" in os.environ:  # other workers use the other cores: one thread per kernel
        os.environ["OMP_NUM_THREADS"] = "1"
    try:
        for chapter in NOTEBOOKS:
            path = (work / chapter).with_suffix(".ipynb")
            notebook = nbformat.read(path, as_version=4)
            start = time.perf_counter()
            try:
                NotebookClient(notebook, timeout=300, kernel_name="python3",
                               resources={"metadata": {"path": str(path.parent)}}).execute()
            except CellExecutionError as error:
                result.errors[chapter] = str(error)[-3000:]
            result.seconds[chapter] = time.perf_counter() - start
            nbformat.write(notebook, path)
    finally:
        for key, value in saved.items():
            os.environ.pop(key, None) if value is None else os.environ.__setitem__(key, value)
    config = yaml.safe_load((work / "_config.yml").read_text())
    config["execute"]["execute_notebooks"] = "off"  # already executed above, in quick mode
    (work / "_config.yml").write_text(yaml.safe_dump(config))
    result.build = subprocess.run(
        [str(Path(sys.executable).parent / "jupyter-book"), "build", str(work), "--warningiserror", "--keep-going"],
        capture_output=True, text=True, timeout=600)
    print("quick-mode chapter times (s):", json.dumps({k: round(v, 1) for k, v in result.seconds.items()}))
    return result


# ---- the sources ----------------------------------------------------------------------------------

def test_every_chapter_and_page_is_in_the_toc():
    """only_build_toc_files: a page missing from _toc.yml would silently not be built."""
    listed = {str(Path(f).with_suffix("")) for f in PAGES}
    on_disk = {str(p.relative_to(ROOT).with_suffix(""))
               for p in (ROOT / "book").glob("*") if p.suffix in (".ipynb", ".md")}
    assert on_disk == listed


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_the_title_carries_the_chapter_number_of_the_file_name(chapter):
    """The sidebar shows each page's title: "10. More agents" for book/10-more-agents, so that "chapter 10"
    in the prose is the tenth entry a reader finds (the numbers skip the chapters still being written)."""
    title = nbformat.read(ROOT / f"{chapter}.ipynb", as_version=4).cells[0].source.splitlines()[0]
    assert title.startswith(f"# {int(Path(chapter).name[:2])}. "), title


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_exercise_has_a_hint(chapter):
    """Each numbered exercise under "## Exercises" carries a *Hint:* (solutions sit in a dropdown after the list)."""
    text = prose(chapter)
    exercises = text[text.index("## Exercises"):].split(":::{admonition} Solutions")[0]
    items = re.split(r"\n(?=\d+\. )", exercises)[1:]
    assert len(items) >= 2, "a chapter ends with 2-4 exercises"
    missing = [item.split("\n")[0][:60] for item in items if "*Hint:*" not in item]
    assert not missing, f"exercises without a hint: {missing}"


def prose(page: str) -> str:
    """The text a reader reads on a page: a notebook's markdown cells, or a markdown page."""
    path = ROOT / page
    if path.with_suffix(".ipynb").exists():
        notebook = nbformat.read(path.with_suffix(".ipynb"), as_version=4)
        return "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    return path.with_suffix(".md").read_text()


CHAPTER_REFERENCE = re.compile(r"\b[Cc]hapters? (\d+)((?:(?:, | and | or |–|-)\d+)*)")


@pytest.mark.parametrize("page", PAGES)
def test_every_chapter_number_in_the_prose_is_a_chapter_of_the_book(page):
    """"Chapter 7" must be chapter 7 of the table of contents (the notebook book/07-*.ipynb), also in lists
    and ranges ("chapters 3–4", "chapters 7 and 8")."""
    numbers = {int(f.split("/")[-1][:2]) for f in CHAPTERS if f.split("/")[-1][:2].isdigit()}
    cited = set()
    for first, rest in CHAPTER_REFERENCE.findall(prose(page)):
        found = [int(first)] + [int(n) for n in re.findall(r"\d+", rest)]
        if "–" in rest or "-" in rest:
            found = list(range(found[0], found[-1] + 1))
        cited.update(found)
    assert cited <= numbers, f"{page} refers to chapters {sorted(cited - numbers)}, which the book does not have"


# Math in the prose: display math, and inline math, which may run over a line break but not a paragraph's end.
MATH = re.compile(r"\$\$.*?\$\$|\$(?:[^$\n]|\n(?!\n))+\$", re.S)

# Spans of prose that are not running text: code, math, roles and links (already links), labels, headings.
NOT_RUNNING_TEXT = re.compile(r"```.*?```|" + MATH.pattern + r"|\{[a-z]+\}`[^`]*`|`[^`]+`"
                              r"|\[[^\]\n]*\]\([^)\n]*\)|^(?:\d+\. )?\([^\n]*\)=$|^#+ [^\n]*$|<[^>\n]+>", re.S | re.M)
BARE_REFERENCE = re.compile(r"\b(?:[Cc]hapters?|[Ss]ections?|[Ee]xercises?|[Ss]olutions?)\s+\d+|\b[Ff]igs?\.\s+17\.\d")
LABEL = re.compile(r"^(?:\d+\. )?\(([\w-]+)\)=$", re.M)
ROLE = re.compile(r"\{(doc|ref|term)\}`(?:[^`<]*<)?([^`>]+)>?`")


def glossary_entries() -> dict[str, str]:
    """The terms of book/glossary.md's {glossary} blocks, lower-cased as Sphinx matches them, each with its
    definition (an entry may have several terms, one per line, before its indented definition)."""
    entries, terms = {}, []
    for block in re.findall(r"```\{glossary\}\n(.*?)```", (ROOT / "book" / "glossary.md").read_text(), re.S):
        for line in block.splitlines():
            if line and not line.startswith(" "):
                terms.append(line.strip().lower())
            elif line.strip():
                entries.update({term: line.strip() for term in terms})
                terms = []
    return entries


@pytest.mark.parametrize("page", PAGES)
def test_every_cross_reference_in_the_prose_is_a_link(page):
    """"chapter 7", "section 5", "exercise 3", "fig. 17.8" in running text are written as {doc}/{ref} links
    (chapters by file, sections and exercises by their labels chN-secM, chN-exM, the source's figures by
    fig-17-N at the book's drawing of them), so that a reader can follow every one."""
    bare = [m.group(0) for m in BARE_REFERENCE.finditer(NOT_RUNNING_TEXT.sub(" ", prose(page)))]
    assert not bare, f"{page}: bare references {bare}"


def test_every_link_target_of_the_prose_exists():
    """Each {doc} names a page of the table of contents and each {ref} a label defined once in the book,
    and every numbered section and exercise carries its label."""
    labels = [label for page in PAGES for label in LABEL.findall(prose(page))]
    terms = set(glossary_entries())
    assert len(labels) == len(set(labels)), "a label is defined twice"
    pages = {Path(p).name for p in PAGES}
    for page in PAGES:
        text = prose(page)
        for kind, target in ROLE.findall(text):
            known = {"doc": pages, "ref": labels, "term": terms}[kind]
            assert (target.lower() if kind == "term" else target) in known, f"{page}: {{{kind}}} {target}"
        if page in CHAPTERS:
            n = int(Path(page).name[:2])
            sections = re.findall(r"^## (\d+)\. ", text, re.M)
            assert sections and all(f"ch{n}-sec{s}" in labels for s in sections), page
            exercises = text[text.index("## Exercises"):].split(":::{admonition} Solutions")[0]
            numbers = re.findall(r"^(\d+)\. ", exercises, re.M)
            assert numbers and all(f"ch{n}-ex{e}" in labels for e in numbers), page


# Symbols that had a second meaning and were renamed (notation.md lists the survivors): each pattern is an
# old use, which must not come back.
RETIRED_SYMBOLS = {
    r"\\tau_n\b": "an entity token is x_n (tau is a temperature)",
    r"\\tau w \+": "the soft-update rate is eta (tau is a temperature)",
    r"\\sum_\{l\b|\bs_l\b|\bz_l\b|\bp_l\b|\bl_p\b": "l is the number of heads: index j' or the landmark index xi",
    r"\\ell|ℓ": "a landmark is indexed by xi (ell looked like l, the number of heads); the loss of a read is L_j",
    r"\bu_[1-5]\b|\bu\^[ij] \\in \[-1|\|u\^j\|": "u is the return: action components are a_k, the force F^i",
    r"\\big\[\\,v\^i": "a velocity is p-dot (v is a value)",
    r"(?<!\\hat )\bf\^[ijkm1]\b": "an encoded observation is x^i = phi(o^i)",
    r"\bQ\^i\b": "an action value is q-hat^i",
    r"\by\^i = r\^i": "a TD target is G^i (y^i are logits)",
    r"\bz\^j = \[o\^j": "the token of a pair is [o^j; a^j]",
    r"\bz_n\b|\bz_\{\\text\{self": "a layer-normalised token embedding is e-bar_n (z^i is the FC layer's output)",
}


@pytest.mark.parametrize("page", PAGES)
def test_retired_symbols_do_not_come_back(page):
    """One symbol, one meaning: the renamed uses of u, tau, l and others stay renamed in the prose's formulas."""
    formulas = " ".join(MATH.findall(prose(page)))
    found = {why: re.findall(pattern, formulas) for pattern, why in RETIRED_SYMBOLS.items()}
    assert not any(found.values()), f"{page}: {[(why, hits[:3]) for why, hits in found.items() if hits]}"


def test_the_notation_page_lists_each_symbol_once_with_its_first_chapter():
    """book/notation.md: in the book-wide tables every symbol has one row, and every row names the chapter
    where the symbol first appears as a link to that chapter."""
    text = (ROOT / "book" / "notation.md").read_text()
    book_wide = text.split("## Symbols of one chapter")[0]
    rows = [line for line in book_wide.splitlines() if line.startswith("| ") and not line.startswith("| symbol")]
    assert len(rows) >= 40
    symbols = [row.split(" | ")[0].lstrip("| ") for row in rows]
    assert len(symbols) == len(set(symbols)), "a symbol has two rows"
    for row in rows:
        assert re.search(r"\| \{doc\}`\d+ <\d\d-[\w-]+>` \|$", row), f"no first chapter: {row[:60]}"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_every_solution_is_run_in_the_chapter_or_marked_as_not_run(chapter):
    """A solution that reports what a cell computes has that cell ("# Solution N" after the dropdown); one that
    was not run says so; none claims a measured result it does not compute."""
    cells = nbformat.read(ROOT / f"{chapter}.ipynb", as_version=4).cells
    at = next(i for i, c in enumerate(cells) if c.cell_type == "markdown" and "{admonition} Solutions" in c.source)
    solutions = dict(re.findall(r"\*\*(\d+)\.\*\*(.*?)(?=\n\*\*\d+\.\*\*|\n:::)", cells[at].source, re.S))
    run = {n for c in cells[at + 1:] if c.cell_type == "code" for n in re.findall(r"^# Solution (\d+)", c.source)}
    not_run = re.compile(r"[Nn]ot run in the book|[Mm]ethod only|has not (?:run|measured|tallied)")
    exercises = prose(chapter)[prose(chapter).index("## Exercises"):].split(":::{admonition} Solutions")[0]
    numbers = re.findall(r"^(\d+)\. ", exercises, re.M)
    assert set(solutions) == set(numbers), f"exercises without a solution: {sorted(set(numbers) - set(solutions))}"
    for n, text in solutions.items():
        if "cell below" in text or "cells below" in text:
            assert n in run, f"solution {n} reports a cell that the chapter does not have"
        if n in run:
            assert not not_run.search(text), f"solution {n} is run but says it is not"


def test_each_source_figure_link_lands_on_the_books_drawing_of_it():
    """"fig. 17.N" links to the label fig-17-N, which sits on the markdown cell right above the code cell that
    draws the figure, once in the book, for every figure the prose cites."""
    cited = {n for page in PAGES for n in re.findall(r"<fig-17-(\d)>", prose(page))}
    placed = {}
    for chapter in CHAPTERS:
        cells = nbformat.read(ROOT / f"{chapter}.ipynb", as_version=4).cells
        for i, cell in enumerate(cells):
            for n in re.findall(r"^\(fig-17-(\d)\)=$", cell.source, re.M) if cell.cell_type == "markdown" else []:
                assert n not in placed, f"fig-17-{n} placed twice"
                assert i + 1 < len(cells) and cells[i + 1].cell_type == "code", f"fig-17-{n} is not above a drawing"
                placed[n] = chapter
    assert cited and cited <= set(placed), f"cited but not drawn: {sorted(cited - set(placed))}"


def test_every_glossary_entry_gives_its_chinese_term_and_where_it_comes_from():
    """Each entry opens with its Chinese term marked *(the source)*, *(the survey)*, *(d2l)* or *(ours…)*, and
    the terms a new reader meets early are there (the chapters link them with {term} at first use)."""
    entries = glossary_entries()
    unmarked = [t for t, d in entries.items() if not re.match(r"\S.*? \*\((the source|the survey|d2l|ours)", d)]
    assert not unmarked, f"entries without a marked Chinese term: {unmarked}"
    for term in ("temperature", "entropy", "alignment", "teacher forcing", "reinforce", "baseline", "gae", "softmax"):
        assert term in entries, term


SOURCE_FIRST = re.compile(r"\b[Tt]he source\b")
SOURCE_IN_FULL = re.compile(r"Deep\s+Reinforcement\s+Learning\*?,?\s+which\s+this\s+book\s+follows")
"""The parenthesis that says what the source is ("the attention chapter of Wang, Li and Zhang's *Deep Reinforcement
Learning*, which this book follows")."""


def part_of(page: str) -> str:
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text())
    return next((part["caption"] for part in toc.get("parts", []) if page in [c["file"] for c in part["chapters"]]),
                "")


def names_the_source_in_full(page: str) -> bool:
    """Whether ``page`` is the one of its part where the reader, reading in order, first meets "the source" (the
    first page of a numbered part that mentions it): that page says what the source is, the others link to it."""
    part = part_of(page)
    if not any(Path(f).name[:2].isdigit() for f in PAGES if part_of(f) == part and part):
        return False
    first = next(f for f in PAGES if part_of(f) == part and SOURCE_FIRST.search(prose(f)))
    return page == first


@pytest.mark.parametrize("page", PAGES)
def test_the_first_mention_of_the_source_says_what_it_is(page):
    """A reader may open any page first: where a page first says "the source", it names the book it means (the
    attention chapter of *Deep Reinforcement Learning*) or links to the preface's paragraph about it. It names
    the book once per part, where a reader of that part first meets the source (Part I and Part II each);
    every other page links to the preface instead of repeating the parenthesis."""
    text = prose(page)
    first = SOURCE_FIRST.search(text)
    if first is None:
        return
    if page == "book/intro":
        assert "(the-source)=" in text
        return
    near = text[max(0, first.start() - 300):first.end() + 300]
    if names_the_source_in_full(page):
        assert SOURCE_IN_FULL.search(near) and "<the-source>" in near, f"{page}: {near[:300]!r}"
    else:
        assert "<the-source>" in near, f"{page}: {near[:300]!r}"
        assert not SOURCE_IN_FULL.search(text), f"{page} repeats the parenthesis that {part_of(page)} says once"


def test_the_source_is_named_in_full_once_in_each_part_that_has_chapters():
    parts = {part_of(f) for f in CHAPTERS}
    named = {part: [f for f in PAGES if part_of(f) == part and SOURCE_IN_FULL.search(prose(f))] for part in parts}
    assert all(len(pages) == 1 for pages in named.values()), named


@pytest.mark.parametrize("chapter", NOTEBOOKS)
def test_notebook_is_stored_without_outputs(chapter):
    notebook = nbformat.read((ROOT / chapter).with_suffix(".ipynb"), as_version=4)
    for cell in notebook.cells:
        if cell.cell_type == "code":
            assert not cell.outputs and cell.execution_count is None


CODE_COLUMN = 96  # characters of code that fit a chapter's code column (_static/custom.css) at 1280 px


def code_lines(cell) -> list[str]:
    """The lines of code a cell shows: a code cell's source, or the fenced code blocks of a markdown cell."""
    lines = cell.source.split("\n")
    if cell.cell_type == "code":
        return lines
    fences = [k for k, line in enumerate(lines) if line.lstrip().startswith("```")]
    return [line for start, end in zip(fences[::2], fences[1::2]) for line in lines[start + 1:end]]


@pytest.mark.parametrize("chapter", NOTEBOOKS)
def test_code_lines_fit_the_page_column(chapter):
    """A longer code line makes its code block scroll sideways in the built book."""
    notebook = nbformat.read((ROOT / chapter).with_suffix(".ipynb"), as_version=4)
    too_long = [(cell.id, len(line)) for cell in notebook.cells for line in code_lines(cell) if len(line) > CODE_COLUMN]
    assert not too_long, f"code lines over {CODE_COLUMN} characters in {chapter} (cell id, length): {too_long}"


LBF_NAMES = ("make_lbf_reference", "explorers.lbf")
"""What a chapter that plays the reference Level-Based Foraging calls: its setup installs the package's extra "lbf"
(``lbforaging``), which Colab does not have."""


@pytest.mark.parametrize("chapter", NOTEBOOKS)
def test_setup_cell_installs_from_the_configured_repository(chapter):
    notebook = nbformat.read((ROOT / chapter).with_suffix(".ipynb"), as_version=4)
    setup = next(cell.source for cell in notebook.cells if cell.cell_type == "code")
    assert 'if "google.colab" in sys.modules:' in setup
    extras = "[lbf]" if any(name in json.dumps(notebook) for name in LBF_NAMES) else ""
    assert f'%pip install --quiet "attnmarl{extras} @ git+{REPOSITORY}"' in setup, \
        f"{chapter} must install attnmarl{extras or ' without extras'} on Colab"
    urls = set(re.findall(r"https://github\.com/[\w.-]+/[\w.-]+", json.dumps(notebook)))
    assert urls <= {REPOSITORY}, f"other repository addresses in {chapter}: {urls - {REPOSITORY}}"


COLOUR_LITERAL = re.compile(r"""["'](tab:[a-z]+|#[0-9a-fA-F]{6}|#[0-9a-fA-F]{3}|C[0-9])["']""")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_figures_take_their_colours_from_the_palette(chapter):
    """A design (flat, concatenation, self-attention, entity) has one colour in the whole book, defined once in
    attnmarl.notebook.viz (DESIGN_COLOURS, RUN_COLOURS, BASELINE_STYLES, HIGHLIGHT): no chapter writes a colour of
    matplotlib's cycle or a hex colour of its own (greys and colour maps are free)."""
    notebook = nbformat.read((ROOT / chapter).with_suffix(".ipynb"), as_version=4)
    found = [(cell.id, m.group(1)) for cell in notebook.cells if cell.cell_type == "code"
             for m in COLOUR_LITERAL.finditer(cell.source)]
    assert not found, f"colours written in {chapter} (cell id, colour); use attnmarl.notebook.viz's palette: {found}"


FONT_SIZE = re.compile(r"""fontsize\s*=\s*(?:(\d+(?:\.\d+)?)|["']([a-z-]+)["'])""")


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_figure_text_is_not_set_below_the_book_minimum(chapter):
    """attnmarl.notebook.viz's style sets every text of a figure to at least MIN_FONT_PT (11 px at the page's 100 dpi);
    a chapter may make text larger, never smaller."""
    from attnmarl.notebook.viz import MIN_FONT_PT

    notebook = nbformat.read((ROOT / chapter).with_suffix(".ipynb"), as_version=4)
    small = [(cell.id, size or name) for cell in notebook.cells if cell.cell_type == "code"
             for size, name in FONT_SIZE.findall(cell.source)
             if (size and float(size) < MIN_FONT_PT) or name in ("xx-small", "x-small", "smaller")]
    assert not small, f"text smaller than {MIN_FONT_PT} pt in {chapter} (cell id, size): {small}"


def test_prose_uses_the_configured_repository():
    for path in [ROOT / "README.md", *(ROOT / "book").glob("*.md")]:
        for url in re.findall(r"https://github\.com/[\w.-]+/[\w.-]+", path.read_text()):
            if "attnmarl" in url:
                assert url == REPOSITORY, f"{path.name} names {url}, _config.yml says {REPOSITORY}"


# ---- execution in quick mode ----------------------------------------------------------------------

@pytest.mark.parametrize("chapter", NOTEBOOKS)
def test_chapter_runs_top_to_bottom_in_quick_mode(quick_book, chapter):
    assert chapter not in quick_book.errors, quick_book.errors.get(chapter)


def test_book_builds_without_warnings(quick_book):
    build = quick_book.build
    assert build.returncode == 0, (build.stdout + build.stderr)[-4000:]
    assert (quick_book.html / "index.html").exists()


def test_every_internal_link_of_the_built_book_resolves(quick_book):
    """Every relative href of every built page points to a file of the build and, with a #fragment, to an
    element with that id in it (Sphinx resolves {doc}/{ref}; this also catches raw HTML and markdown links)."""
    html = quick_book.html
    ids: dict[Path, set[str]] = {}
    broken = []
    for page in (p for p in html.rglob("*.html") if "_static" not in p.relative_to(html).parts):
        markup = re.sub(r"<script\b.*?</script>", "", page.read_text(errors="replace"), flags=re.S)  # JS templates
        for href in re.findall(r'href="([^"]+)"', markup):
            if re.match(r"[a-z]+:|//", href) or href.startswith("_sources") or "/_sources/" in href:
                continue
            file, _, fragment = html_unescape(href).partition("#")
            file = file.partition("?")[0]
            target = (page.parent / file).resolve() if file else page
            if not target.exists():
                broken.append(f"{page.relative_to(html)} -> {href}")
            elif fragment and target.suffix == ".html":
                if target not in ids:
                    ids[target] = set(re.findall(r'\bid="([^"]+)"', target.read_text(errors="replace")))
                if fragment not in ids[target]:
                    broken.append(f"{page.relative_to(html)} -> {href}")
    assert not broken, broken[:20]


FOLD = re.compile(r'<details class="algocode"><summary>Code: ([^<]*)</summary>(.*?)</details>', re.S)
FOLDS = {"book/07-value-network": 7, "book/09-q-network": 7, "book/10-more-agents": 6, "book/11-between-agents": 11}
"""The chapters with algorithm boxes, and their steps: one fold of code under each."""


@pytest.mark.parametrize("chapter", list(FOLDS))
def test_the_code_under_each_algorithm_step_is_the_packages_own(quick_book, chapter):
    """Each fold under a step of an algorithm box shows the lines of ``src/attnmarl`` that its summary names,
    character for character, numbered as in the file: the build read them from the package, so no stale copy
    can appear (tests/test_teaching_form.py checks that they are lines a training run executes)."""
    markup = (quick_book.html / chapter).with_suffix(".html").read_text()
    folds = FOLD.findall(markup)
    assert len(folds) == FOLDS[chapter], f"{chapter}: {len(folds)} code folds, one per step expected"
    for summary, body in folds:
        path = ROOT / "src" / "attnmarl" / summary.split(" ", 1)[0]
        spans = [(int(a), int(b)) for a, b in re.findall(r"L(\d+)–L(\d+)", summary)]
        blocks = re.findall(r"<pre>(.*?)</pre>", body, re.S)
        assert len(blocks) == len(spans) >= 1, summary
        for (first, last), block in zip(spans, blocks):
            numbers = [int(n) for n in re.findall(r'<span class="linenos">\s*(\d+)</span>', block)]
            assert numbers == list(range(first, last + 1)), f"{summary}: numbered {numbers[:3]}…"
            shown = html_unescape(re.sub(r"<[^>]+>", "", re.sub(r'<span class="linenos">[^<]*</span>', "", block)))
            source = textwrap.dedent("\n".join(path.read_text().splitlines()[first - 1: last]))
            assert shown.rstrip("\n") == source, f"{summary}: the fold does not show the file's lines {first}–{last}"


# ---- the built pages, offline ---------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser_page():
    with offline_page() as page:
        page.shown = None
        page.loaded = []  # the URL of every request the page has finished since it was last loaded
        page.on("requestfinished", lambda request: page.loaded.append(request.url))
        yield page


BROWSER_TEST_ORDER = (
    "test_page_renders_offline_without_errors", "test_page_renders_without_loading_more_than_it_needs",
    "test_every_theme_rule_that_matches_the_page_survives_the_purge",
    "test_inline_math_is_typeset_at_build_time_and_sits_on_the_line",
    "test_code_blocks_do_not_scroll_sideways_in_a_1280_px_window", "test_chapter_figures_and_math_are_present",
    "test_page_renders_figure_text_at_9_px_or_more_in_a_1280_px_window",
    "test_page_renders_a_description_as_the_alt_text_of_each_figure",
    "test_static_explorers_in_the_book_respond_offline", "test_playgrounds_in_the_book_play_offline",
    "test_no_page_scrolls_sideways_on_a_390_px_phone",
    "test_page_renders_figure_text_at_8_px_or_more_on_a_390_px_phone",
)
"""The browser tests, in the order they run on each page: the one that needs a fresh load, the read-only checks
(which share that load, and the record of what it loaded), then those that change the page."""


WINDOW = {"width": 1280, "height": 720}
PHONE = {"width": 390, "height": 844}
"""The two windows the browser tests lay pages out in: a laptop's, and a phone's 390 px."""


def show(page, path: Path, fresh: bool = False, window: dict[str, int] = WINDOW) -> None:
    """Load the built page ``path`` in the module's browser page, laid out in ``window``, unless it already
    shows it so, as loaded (or ``fresh`` asks for a new load). The browser tests run page by page
    (``BROWSER_TEST_ORDER``, applied in tests/conftest.py), so the read-only checks of one page in one window
    share one load (the two phone checks too: a page laid out at 1280 px first and then narrowed is not what a
    phone shows, so a new window means a new load); a test that changes what it loaded (moves a slider, opens a
    dropdown) calls ``changed`` and the next test loads the page afresh."""
    url = path.as_uri()
    if fresh or page.shown != (url, window["width"]):
        page.shown = None  # until the new load has come, in case it fails
        if page.viewport_size != window:
            page.set_viewport_size(window)
        page.loaded.clear()
        page.goto(url)
        page.shown = (url, window["width"])


def changed(page) -> None:
    page.shown = None


@pytest.mark.parametrize("page_file", PAGES)
def test_page_renders_offline_without_errors(quick_book, browser_page, page_file):
    page = browser_page
    path = quick_book.html / Path(page_file).with_suffix(".html")
    assert path.exists(), f"{path} was not built"
    page.blocked.clear()
    page.errors.clear()
    page.missing.clear()
    page.console_errors.clear()
    page.evaluate("() => { try { localStorage.clear(); } catch (e) {} }")  # a first visit: no stored light/dark mode
    show(page, path, fresh=True)
    page.wait_for_load_state("load")
    assert not page.errors, page.errors
    assert not page.console_errors, page.console_errors  # e.g. the theme's "invalid theme mode" on a first visit
    assert "Traceback" not in page.inner_text("article")
    assert page.locator(".output.error, .output.traceback, .output.stderr").count() == 0
    broken = page.evaluate("[...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src)")
    assert not broken, broken
    assert not [u for u in page.blocked if not u.startswith("https://unpkg.com/thebe")], page.blocked
    assert not page.missing, page.missing


def test_the_theme_switch_and_the_search_page_work_offline(quick_book, browser_page):
    """The light/dark switch cycles the mode without an error, and the search page lists its results from disk
    without fetching each page for a summary (a browser refuses that for file:// pages: an error per result)."""
    page = browser_page
    page.errors.clear()
    page.console_errors.clear()
    page.missing.clear()
    show(page, quick_book.html / "book" / "intro.html", fresh=True)
    changed(page)
    page.wait_for_load_state("load")
    modes = []
    for _ in range(3):
        page.locator("button.theme-switch-button").first.click()
        modes.append(page.evaluate("() => document.documentElement.dataset.mode"))
    assert sorted(modes) == ["auto", "dark", "light"], modes
    page.goto((quick_book.html / "search.html").as_uri() + "?q=attention")
    page.wait_for_selector("#search-results ul.search li", timeout=20_000)
    page.wait_for_timeout(500)
    assert page.locator("#search-results ul.search li").count() >= 5
    assert not page.errors and not page.console_errors and not page.missing, (page.errors, page.console_errors,
                                                                             page.missing)


INLINE_LETTERS = r"""
() => {
  // every inline formula that is one letter without a descender, with how far the bottom of its drawing (the
  // SVG) sits from the line's baseline (found with a zero-size inline-block probe placed right after it)
  const found = [];
  for (const c of document.querySelectorAll('article p mjx-container:not([display="true"])')) {
    const math = c.querySelector('mjx-assistive-mml math');
    if (!math || math.children.length !== 1 || !/^[aceimnrsuvwxzαπ]$/.test(math.textContent)) continue;
    const probe = document.createElement('span');
    probe.style.cssText = 'display:inline-block;width:0;height:0;vertical-align:baseline';
    c.after(probe);
    found.push(c.querySelector('svg').getBoundingClientRect().bottom - probe.getBoundingClientRect().bottom);
    probe.remove();
  }
  const formulas = [...document.querySelectorAll('.math')];
  const glyphs = [...document.querySelectorAll('.math svg use')].map(u => u.getAttribute('href'));
  return {
    offsets: found,
    formulas: formulas.length,
    typeset: formulas.filter(f => f.querySelector('mjx-container > svg')
                                  && f.querySelector('mjx-assistive-mml math')).length,
    tex: formulas.filter(f => /\\[(\[]/.test(f.textContent)).length,
    glyphs: glyphs.length,
    undrawn: [...new Set(glyphs.filter(h => !h.startsWith('#') || !document.getElementById(h.slice(1))))],
    empty: [...document.querySelectorAll('.math mjx-container > svg')]
      .filter(s => s.getClientRects().length && s.getBoundingClientRect().width === 0).length,  // shown, yet empty
    mathjax: typeof window.MathJax !== 'undefined' || !!document.querySelector('script[src*="mathjax"]'),
  };
}
"""


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_inline_math_is_typeset_at_build_time_and_sits_on_the_line(quick_book, browser_page, chapter):
    """Every formula of the page was typeset by MathJax at build time (attnmarl.site.mathsvg): SVG with its hidden
    MathML, no TeX left, every glyph it draws defined in the page, no MathJax script loaded; and a one-letter
    inline formula such as $m$ sits on the baseline of the words around it: its box ends within 2.5 px of the
    baseline, the same for every such formula of the page."""
    page = browser_page
    show(page, quick_book.html / Path(chapter).with_suffix(".html"))
    page.evaluate("() => document.fonts.ready.then(() => true)")
    measured = page.evaluate(INLINE_LETTERS)
    assert measured["formulas"] >= 20 and measured["typeset"] == measured["formulas"], measured
    assert measured["tex"] == 0 and not measured["mathjax"], measured
    assert measured["glyphs"] > measured["formulas"] and not measured["undrawn"] and not measured["empty"], measured
    offsets = measured["offsets"]
    assert len(offsets) >= 5, "too few one-letter inline formulas found to measure"
    assert max(abs(o) for o in offsets) < 2.5 and max(offsets) - min(offsets) < 0.5, sorted(set(offsets))


WIDE_CODE = """
() => [...document.querySelectorAll('div.cell_input pre, article div.highlight-bash pre')]
  .filter(e => e.scrollWidth > e.clientWidth + 1)
  .map(e => e.textContent.split('\\n').reduce((a, l) => (l.length > a.length ? l : a), ''))
"""


@pytest.mark.parametrize("chapter", NOTEBOOKS)
def test_code_blocks_do_not_scroll_sideways_in_a_1280_px_window(quick_book, browser_page, chapter):
    """The CSS (_static/custom.css) and the line limit CODE_COLUMN together: every code block of a chapter
    fits its column in a 1280 px window (Playwright's default), so no code hides behind a scroll bar."""
    page = browser_page
    show(page, quick_book.html / Path(chapter).with_suffix(".html"))
    assert page.viewport_size == WINDOW
    page.evaluate("() => document.fonts.ready.then(() => true)")
    assert not page.evaluate(WIDE_CODE), "the longest line of each code block that scrolls sideways"


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_chapter_figures_and_math_are_present(quick_book, browser_page, chapter):
    page = browser_page
    show(page, quick_book.html / Path(chapter).with_suffix(".html"))
    assert page.locator("article .math mjx-container").count() >= 5  # typeset at build time (attnmarl.site.mathsvg)
    assert page.locator("article img").count() >= 2
    assert page.locator("h1").first.inner_text().strip()
    assert page.locator("#summary, section[id^=summary]").count() == 1
    assert page.locator("#exercises, section[id^=exercises]").count() == 1


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_static_explorers_in_the_book_respond_offline(quick_book, browser_page, chapter):
    page = browser_page
    show(page, quick_book.html / Path(chapter).with_suffix(".html"))
    explorers = page.locator(".attnmarl-explorer")
    page.wait_for_selector(".attnmarl-explorer .ax-panels svg", timeout=20_000)
    assert explorers.count() >= 1
    for index in range(explorers.count()):
        explorer = explorers.nth(index)
        panels = explorer.locator(".ax-panels")
        before = panels.inner_html()
        slider = explorer.locator("input[type=range]").first
        slider.focus()
        at_end = slider.evaluate("s => s.value === s.max")  # a default may sit at the last value
        changed(page)
        page.keyboard.press("ArrowLeft" if at_end else "ArrowRight")
        assert panels.inner_html() != before, f"explorer {index} of {chapter} did not redraw"
    assert not page.errors


@pytest.mark.parametrize("page_file", PLAYGROUNDS)
def test_playgrounds_in_the_book_play_offline(quick_book, browser_page, page_file):
    """The built page's playground runs from disk with the network off: a step moves the team and the
    drawing (tests/test_playground.py holds the widget itself to the Python reference)."""
    page = browser_page
    show(page, quick_book.html / Path(page_file).with_suffix(".html"))
    changed(page)  # it plays
    root = page.locator(".attnmarl-playground")
    page.wait_for_selector(".attnmarl-playground .pg-arena circle", timeout=20_000)
    assert root.count() == 1
    root.scroll_into_view_if_needed()
    hold_playground(page)
    # a new episode first: late in one, a settled team may not move visibly in a step (it has played since
    # it scrolled into view). Two steps: mpe2 moves positions by the velocity before the step's forces act,
    # so from rest the first step changes velocities only.
    root.locator('[data-act="reset"]').click()
    before = root.locator(".pg-arena").inner_html()
    assert int(root.get_attribute("data-t")) == 0
    root.locator('[data-act="step"]').click()
    root.locator('[data-act="step"]').click()
    assert int(root.get_attribute("data-t")) == 2
    assert root.locator(".pg-arena").inner_html() != before
    assert not page.errors


FIGURE_TEXT = """
() => {
  // every figure of the article: its smallest text in screen pixels at this window's width (the drawn width:
  // clientWidth leaves out a CSS zoom, which _static/custom.css applies on phones)
  const out = [];
  for (const img of document.querySelectorAll('article img')) {
    if (!img.naturalWidth) continue;
    out.push({src: img.src, alt: img.alt, scale: img.getBoundingClientRect().width / img.naturalWidth});
  }
  const svgText = [];
  for (const t of document.querySelectorAll('article svg text, article svg tspan')) {
    if (!t.textContent.trim() || !t.getScreenCTM()) continue;
    const m = t.getScreenCTM();
    svgText.push([parseFloat(getComputedStyle(t).fontSize) * Math.hypot(m.a, m.b), t.textContent.slice(0, 30)]);
  }
  return {images: out, svgText};
}
"""


def png_dpi(src: str) -> float:
    """The pixels per inch a figure's image was drawn at (attnmarl.notebook.viz.figure_png writes it into the PNG:
    FIGURE_DPI times PIXEL_DENSITY; attnmarl.site.webp carries it into the WebP the build makes of it); FIGURE_DPI for
    an image without it (an animation's frame)."""
    from PIL import Image

    from attnmarl.notebook.viz import FIGURE_DPI
    from attnmarl.site.webp import webp_dpi

    if not src.startswith("file://") or not src.endswith((".png", ".webp")):
        return FIGURE_DPI
    path = Path(src.removeprefix("file://"))
    if path.suffix == ".webp":
        return webp_dpi(path) or FIGURE_DPI
    with Image.open(path) as image:
        return float(image.info.get("dpi", (FIGURE_DPI,))[0])


def svg_min_font(path: Path) -> float:
    """The smallest font-size (px) written in an SVG file (attnmarl.notebook.diagrams writes them all explicitly)."""
    return min(float(v) for v in re.findall(r'font-size="([0-9.]+)"', path.read_text()))


def small_figure_text(measured: dict, least: float) -> list[tuple[str, float]]:
    """The figures and texts of a ``FIGURE_TEXT`` measurement drawn under ``least`` px, with their size: a
    figure (an image) by its alt text, at its smallest text (:func:`svg_min_font` for a diagram's SVG file,
    MIN_FONT_PT at the image's :func:`png_dpi` for a matplotlib figure) times the scale it is shown at."""
    from attnmarl.notebook.viz import MIN_FONT_PT

    small = []
    for image in measured["images"]:
        path = Path(image["src"].removeprefix("file://"))
        smallest = svg_min_font(path) if path.suffix == ".svg" else MIN_FONT_PT * png_dpi(image["src"]) / 72
        if smallest * image["scale"] < least:
            small.append((image["alt"][:50], round(smallest * image["scale"], 1)))
    return small + [(text, round(px, 1)) for px, text in measured["svgText"] if px < least]


@pytest.mark.parametrize("chapter", CHAPTERS)
def test_page_renders_figure_text_at_9_px_or_more_in_a_1280_px_window(quick_book, browser_page, chapter):
    """Matplotlib figures: their text is at least MIN_FONT_PT at FIGURE_DPI (the package style and the check on
    the chapters' font sizes; a PNG drawn at PIXEL_DENSITY times that is shown at its 1x size), so a figure
    shrunk to fit the column keeps 9 px if it is not shrunk below 9 / (MIN_FONT_PT * FIGURE_DPI / 72). Diagrams
    (SVG files) and explorers (inline SVG): every text is 9 px or more on screen."""
    page = browser_page
    show(page, quick_book.html / Path(chapter).with_suffix(".html"))
    assert page.viewport_size == WINDOW
    page.wait_for_load_state("load")
    small = small_figure_text(page.evaluate(FIGURE_TEXT), 9)
    assert not small, f"text under 9 px in {chapter} (figure or text, px): {small}"


@pytest.mark.parametrize("chapter", NOTEBOOKS)
def test_page_renders_a_description_as_the_alt_text_of_each_figure(quick_book, browser_page, chapter):
    """A figure's alt text describes it (the cell's mystnb.image.alt metadata); without one, the build writes the
    image's file path, which tells a reader who cannot see it nothing. Each figure has its own: the metadata is
    the cell's, so a cell that draws two figures gives both the same alt text, and one of them is not described
    (one figure a cell)."""
    page = browser_page
    show(page, quick_book.html / Path(chapter).with_suffix(".html"))
    alts = page.evaluate("() => [...document.querySelectorAll('article img')].map(i => [i.alt, i.src.slice(-60)])")
    assert alts
    bad = [(alt, src) for alt, src in alts
           if len(alt.split()) < 4 or "_images/" in alt or re.search(r"\.(png|svg|jpe?g|gif)$", alt)]
    assert not bad, f"figures of {chapter} whose alt text is no description (alt, image): {bad}"
    shared = sorted({(alt, src) for alt, src in alts if [a for a, s in alts if a == alt and s != src]})
    assert not shared, f"figures of {chapter} that share their alt text with another figure (alt, image): {shared}"


@pytest.mark.parametrize("page_file", PAGES)
def test_no_page_scrolls_sideways_on_a_390_px_phone(quick_book, browser_page, page_file):
    """At a phone's 390 px nothing pushes the page wider than the window: long inline code wraps
    (_static/custom.css); code blocks, tables and explorer panels scroll inside their own boxes."""
    page = browser_page
    show(page, quick_book.html / Path(page_file).with_suffix(".html"), window=PHONE)
    page.wait_for_load_state("load")
    page.evaluate("() => document.fonts.ready.then(() => true)")
    widths = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    assert widths[0] <= widths[1], f"{page_file} is {widths[0]} px wide in a {widths[1]} px window"


@pytest.mark.parametrize("page_file", PAGES)
def test_page_renders_figure_text_at_8_px_or_more_on_a_390_px_phone(quick_book, browser_page, page_file):
    """On a phone no figure is shrunk until its labels cannot be read: every text of every figure of every page
    (matplotlib figures, diagrams, the explorers' α panels and heatmaps, the playground, the synthesis' forest
    plots, also those in a closed dropdown, opened for the measure) is drawn at 8 px or more at 390 px. A wider
    figure scrolls sideways in its own box (_static/custom.css, the explorers' and the playground's CSS); the
    test above holds the page itself to the window's width."""
    page = browser_page
    show(page, quick_book.html / Path(page_file).with_suffix(".html"), window=PHONE)
    try:
        page.wait_for_load_state("load")
        if page.locator(".attnmarl-playground").count():  # it draws once its weights are decoded
            page.wait_for_selector(".attnmarl-playground .pg-arena circle", timeout=20_000)
        page.evaluate("() => document.querySelectorAll('article details').forEach(d => { d.open = true; })")
        small = small_figure_text(page.evaluate(FIGURE_TEXT), 8)
    finally:
        changed(page)  # dropdowns open
    assert not small, f"text under 8 px on {page_file} at 390 px (figure or text, px): {small}"


THEME_STYLESHEETS = {
    "pydata-sphinx-theme.css": "pydata_sphinx_theme/theme/pydata_sphinx_theme/static/styles/pydata-sphinx-theme.css",
    "sphinx-book-theme.css": "sphinx_book_theme/theme/sphinx_book_theme/static/styles/sphinx-book-theme.css",
    "mystnb.*.css": "myst_nb/static/mystnb.css"}
"""The stylesheets attnmarl.site.csspurge cuts, by file name (a pattern), and where the installed packages keep them
whole."""

UNKEPT_MATCHING_RULES = """([original, purged]) => {
  const styleRules = (list, out) => {
    for (const rule of list) {
      if (rule instanceof CSSStyleRule) out.push(rule.selectorText);
      else if (rule.cssRules) styleRules(rule.cssRules, out);
    }
    return out;
  };
  const sheet = text => { const s = new CSSStyleSheet(); s.replaceSync(text); return s; };
  const matching = styleRules(sheet(original).cssRules, []).filter(selector => {
    try { return document.querySelector(selector) !== null; } catch (error) { return false; }
  });
  const kept = new Set(styleRules(sheet(purged).cssRules, []));
  return [matching.length, matching.filter(selector => !kept.has(selector))];
}"""


@pytest.mark.parametrize("page_file", PAGES)
def test_every_theme_rule_that_matches_the_page_survives_the_purge(quick_book, browser_page, page_file):
    """attnmarl.site.csspurge cut the themes' stylesheets to the rules whose classes and ids the book writes somewhere:
    every rule of the whole stylesheet (as the installed theme ships it) that matches an element of the loaded
    page is still in the built book's stylesheet (read from disk: a file:// page may not read a sheet's rules)."""
    page = browser_page
    show(page, quick_book.html / Path(page_file).with_suffix(".html"))
    page.wait_for_load_state("load")
    site = Path(sysconfig.get_paths()["purelib"])
    for name, installed in THEME_STYLESHEETS.items():
        built = next(quick_book.html.joinpath("_static").rglob(name)).read_text()
        matching, lost = page.evaluate(UNKEPT_MATCHING_RULES, [(site / installed).read_text(), built])
        assert matching > 3, f"{page_file}: only {matching} rules of {name} match; is it the stylesheet?"
        assert not lost, f"{page_file}: rules of {name} that match the page were cut: {lost[:10]}"


PAGE_BUDGET = 2_000_000
"""Bytes a page may load (its HTML and every local file it asks for, uncompressed; over http with gzip about a
third of it). Every page loads about 0.4 MB: the theme's CSS (0.12 MB, cut to the rules that can match the book,
attnmarl.site.csspurge) and scripts. Left out: MathJax and its fonts (0.85 MB; the formulas are typeset at build time,
attnmarl.site.mathsvg), the theme's 1.5 MB icon script, which only redraws icons its CSS already draws
(_static/templates/layout.html), the glyphs of the 1,900 icons the book does not show (0.15 MB), the search index
on pages other than the search page (0.15 MB), the Font Awesome brands font for the one GitHub icon (0.12 MB,
_static/custom.css), sphinx-design's CSS on pages that do not use it, and Bootstrap's and MyST-NB's unused rules
(0.23 MB). A chapter adds its figures (lossless WebP, attnmarl.site.webp) and explorers: 0.74-1.99 MB in all."""


@pytest.mark.parametrize("page_file", PAGES)
def test_page_renders_without_loading_more_than_it_needs(quick_book, browser_page, page_file):
    page = browser_page
    show(page, quick_book.html / Path(page_file).with_suffix(".html"))
    page.wait_for_load_state("load")
    page.wait_for_timeout(500)
    files = {Path(url.removeprefix("file://").split("?")[0].split("#")[0]) for url in page.loaded
             if url.startswith("file://")}
    assert not [f for f in files if f.name == "fontawesome.js"], "the theme's icon script is loaded"
    sizes = sorted((f.stat().st_size, f.name) for f in files if f.is_file())
    assert not [f for f in files if f.name in ("searchindex.js", "tex-chtml-full.js")], "a file the page does not use"
    assert sum(size for size, _ in sizes) <= PAGE_BUDGET, f"{page_file} loads too much; the largest: {sizes[-5:]}"
