"""The formulas typeset at build time (attnmarl.site.mathsvg): MathJax's SVG, in order, with every glyph defined."""
import re

import pytest

from attnmarl.site.mathsvg import FORMULA, formulas, slim, typeset, typeset_book, typeset_page

PAGE = """<html><head><title>t</title></head><body class="x">
<p>Inline <span class="math notranslate nohighlight">\\(x^i\\)</span> and
<span class="math notranslate nohighlight">\\(a &lt; b\\)</span>.</p>
<div class="math notranslate nohighlight">
\\[\\begin{aligned} \\hat v^i &amp;= \\sum_j \\alpha^{ij} v^j \\end{aligned}\\]</div></body></html>"""


def test_formulas_are_read_in_order_with_their_html_unescaped():
    assert formulas(PAGE) == [("x^i", False), ("a < b", False),
                              ("\\begin{aligned} \\hat v^i &= \\sum_j \\alpha^{ij} v^j \\end{aligned}", True)]


def test_each_formula_becomes_svg_with_its_mathml_and_every_glyph_it_draws_is_defined_once():
    style, [(math, defs)] = typeset([formulas(PAGE)])
    assert len(math) == 3 and 'display="true"' in math[2] and 'display="true"' not in math[0]
    page = typeset_page(PAGE, math, defs, style)
    assert not FORMULA.search(page) and "\\(" not in page and "\\[" not in page
    assert page.count("<mjx-container") == 3 and page.count("<math") == 3
    assert "<mi>x</mi>" in page and "<mo>&lt;</mo>" in page and "<mo>∑</mo>" in page  # the MathML copies
    used = set(re.findall(r'<use[^>]* href="#([^"]+)"', page))
    defined = re.findall(r'<path id="([^"]+)"', page)
    assert used and used == set(defined) and len(defined) == len(set(defined))
    assert page.index("MJX-SVG-global-cache") < page.index("<mjx-container")  # the paths come first in the body
    assert page.count("mjx-container[jax=\"SVG\"]") >= 1 and page.index("<style") < page.index("</head>")


def test_pages_do_not_share_glyph_paths():
    _, pages = typeset([[("x", False)], [("y", False)]])
    assert "1D465" in pages[0][1] and "1D466" not in pages[0][1] and "1D466" in pages[1][1]


def test_slim_keeps_the_drawing_and_drops_what_a_static_page_does_not_read():
    markup = ('<svg xmlns="http://www.w3.org/2000/svg" role="img" focusable="false" aria-hidden="true" '
              'xmlns:xlink="http://www.w3.org/1999/xlink"><g stroke="currentColor" fill="currentColor" '
              'stroke-width="0" transform="scale(1,-1)"><g data-mml-node="mi"><use data-c="1D465" '
              'xlink:href="#MJX-TEX-I-1D465"></use></g></g></svg>')
    assert slim(markup) == ('<svg aria-hidden="true"><g transform="scale(1,-1)"><g><use href="#MJX-TEX-I-1D465">'
                            '</use></g></g></svg>')


def test_a_formula_mathjax_cannot_typeset_fails_the_build_with_its_tex():
    with pytest.raises(RuntimeError, match=r"\\notamacro"):
        typeset([[("x + \\notamacro", False)]])


def test_a_built_book_is_typeset_once(tmp_path):
    (tmp_path / "book").mkdir()
    (tmp_path / "book" / "a.html").write_text(PAGE, encoding="utf-8")
    (tmp_path / "index.html").write_text("<html><head></head><body>no math</body></html>", encoding="utf-8")
    assert typeset_book(tmp_path) == 3
    done = (tmp_path / "book" / "a.html").read_text(encoding="utf-8")
    assert typeset_book(tmp_path) == 0  # nothing left to typeset; the page is not touched again
    assert (tmp_path / "book" / "a.html").read_text(encoding="utf-8") == done
    assert (tmp_path / "index.html").read_text(encoding="utf-8") == "<html><head></head><body>no math</body></html>"
