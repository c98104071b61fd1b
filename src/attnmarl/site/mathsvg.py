"""The book's formulas, typeset once at build time instead of in every reader's browser.

Sphinx writes each formula as its TeX source in ``<span class="math notranslate nohighlight">\\(...\\)</span>``
(inline) or ``<div class="math notranslate nohighlight">\\[...\\]</div>`` (display), for MathJax to typeset when
the page loads: 0.75 MB of scripts and 0.1 MB of fonts on every page. :func:`typeset_book` runs MathJax 3 once,
under Node.js (``typeset-math.js`` beside it, with the MathJax distribution that ``sphinx-mathjax-offline`` ships),
over every page of a built book and writes each formula into the page as SVG: the same glyphs and layout as
MathJax in the browser, with the hidden MathML copy that screen readers read, and each glyph's path once per
page. A page then loads no MathJax and no math font, and reads the same from disk, offline.
"""
from __future__ import annotations

import html
import importlib.util
import json
import re
import shutil
import subprocess
from pathlib import Path

__all__ = ["FORMULA", "NODE_HINT", "mathjax_source", "formulas", "typeset", "slim", "typeset_page", "typeset_book"]

FORMULA = re.compile(r'(<(span|div) class="math notranslate nohighlight">)\s*\\([(\[])(.*?)\\[)\]]\s*(</\2>)', re.S)
"""A formula as Sphinx writes it: the opening tag, the tag's name, the delimiter (``(`` inline, ``[`` display),
the TeX (HTML-escaped) and the closing tag."""

NODE_HINT = "install Node.js (Debian: apt-get install nodejs), which the book build runs MathJax with"

_UNUSED = re.compile(r' (?:data-mml-node|data-c|data-mjx-texclass|xmlns(?::xlink)?|focusable|unselectable|role)="[^"]*"'
                     r'| stroke="currentColor" fill="currentColor" stroke-width="0"')
"""What MathJax writes that a static page does not use: the MathML node names and character codes its menu and
explorer read, namespaces the HTML parser supplies, and the glyphs' paint, which :data:`_STYLE` sets once."""

_STYLE = ('mjx-container[jax="SVG"] { font-size: 91%; }\n'
          'mjx-container[jax="SVG"] > svg > g { stroke: currentColor; fill: currentColor; stroke-width: 0; }')
"""The glyphs' paint, and the size the book's formulas had in MathJax's CommonHTML output (its ``scale``, 0.95 of
the text's x-height)."""

_SCRIPT = Path(__file__).parent / "typeset-math.js"
_STYLE_ID = "attnmarl-math-style"


def mathjax_source() -> Path:
    """The MathJax 3 distribution shipped by the ``sphinx-mathjax-offline`` wheel (MathJax 3.2.2)."""
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the book typesets its formulas with the MathJax of the sphinx-mathjax-offline package: "
                           "pip install it (requirements.txt pins it)")
    return Path(spec.submodule_search_locations[0]) / "static" / "mathjax"


def formulas(page: str) -> list[tuple[str, bool]]:
    """The formulas Sphinx left in ``page``'s HTML, in order: (TeX, display?)."""
    return [(html.unescape(m.group(4)).strip(), m.group(3) == "[") for m in FORMULA.finditer(page)]


def typeset(pages: list[list[tuple[str, bool]]]) -> tuple[str, list[tuple[list[str], str]]]:
    """Typeset the formulas of several pages in one run of MathJax: the stylesheet every page needs, and for
    each page its formulas as ``<mjx-container>`` markup and the ``<svg>`` of glyph paths they share.

    Raises ``RuntimeError`` if Node.js is missing or MathJax cannot typeset a formula (naming its TeX)."""
    node = shutil.which("node") or shutil.which("nodejs")
    if node is None:
        raise RuntimeError(f"the book's formulas are typeset at build time: {NODE_HINT}")
    request = {"mathjax": str(mathjax_source()), "pages": [[[tex, display] for tex, display in p] for p in pages]}
    run = subprocess.run([node, str(_SCRIPT)], input=json.dumps(request), capture_output=True, text=True,
                         encoding="utf-8", check=False)
    if run.returncode != 0:
        raise RuntimeError(f"typesetting the book's formulas failed: {run.stderr.strip()}")
    answer = json.loads(run.stdout)
    return answer["style"], [(p["math"], p["defs"]) for p in answer["pages"]]


def slim(markup: str) -> str:
    """MathJax's SVG markup without what a static page does not use (:data:`_UNUSED`; ``xlink:href`` is SVG 2's
    ``href``): a third of its bytes."""
    return _UNUSED.sub("", markup).replace("xlink:href=", "href=")


def typeset_page(page: str, math: list[str], defs: str, style: str) -> str:
    """``page`` with its formulas (in :func:`formulas`' order) replaced by their SVG ``math``, the glyph paths
    ``defs`` at the start of the body and the ``style`` in the head."""
    found = iter(math)
    page = FORMULA.sub(lambda m: m.group(1) + slim(next(found)) + m.group(5), page)
    page = page.replace("</head>", f'<style id="{_STYLE_ID}">{style}{_STYLE}</style>\n</head>', 1)
    return re.sub(r"(<body[^>]*>)", lambda m: m.group(1) + slim(defs), page, count=1)


def typeset_book(html_dir: str | Path) -> int:
    """Typeset the formulas of every page under ``html_dir`` that still has TeX in it (Sphinx rewrites only
    the pages whose sources changed); returns how many formulas it typeset."""
    paths = [p for p in sorted(Path(html_dir).rglob("*.html")) if FORMULA.search(p.read_text(encoding="utf-8"))]
    texts = [p.read_text(encoding="utf-8") for p in paths]
    found = [formulas(t) for t in texts]
    if not paths:
        return 0
    style, typeset_pages = typeset(found)
    for path, text, (math, defs) in zip(paths, texts, typeset_pages):
        path.write_text(typeset_page(text, math, defs, style), encoding="utf-8")
    return sum(len(f) for f in found)
