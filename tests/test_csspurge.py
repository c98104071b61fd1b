"""attnmarl.site.csspurge: the themes' stylesheets cut to the rules that can match the book (the browser test that
every rule matching a built page survives is in tests/test_book.py)."""
from __future__ import annotations

import pytest

from attnmarl.site.csspurge import purge, purge_stylesheets, rules, selector_can_match, selectors


def test_rules_skip_strings_and_comments_and_keep_at_rule_blocks_whole():
    css = '/*! license */a{content:"}{"}@media (min-width:1px){.x{color:red}}/* c */@import "y.css";.z{}'
    assert rules(css) == [("a", 'content:"}{"'), ("@media (min-width:1px)", ".x{color:red}"),
                          ('@import "y.css"', None), (".z", "")]
    with pytest.raises(ValueError, match="unbalanced"):
        rules("a{color:red")
    with pytest.raises(ValueError, match="closing brace"):
        rules("a{}}")


def test_selectors_split_only_at_top_level_commas():
    assert selectors("a:not(.b,.c),[data-x='1,2'] d,e") == ["a:not(.b,.c)", "[data-x='1,2'] d", "e"]


@pytest.mark.parametrize("selector, kept", [
    (".used .also-used > a:hover", True),
    (".used, .unused", True),           # one selector of the list can match
    (".unused", False),
    ("#used-id", True),
    ("#unused-id .used", False),
    ("html[data-theme=dark] .used img:not(.unused,.other)", True),  # names in :not and [..] do not count
    ("a[class*=unused]", True),
    (".bs-tooltip-top", True),          # a script writes "bs-tooltip-" + placement
    (".bs-popover-top", False),
    ("html", True), (":root", True), ("a:hover", True),
])
def test_a_selector_can_match_when_every_name_it_needs_is_written_somewhere(selector, kept):
    words = {"used", "also-used", "used-id", "bs-tooltip-", "other"}
    assert selector_can_match(selector, words, ("bs-tooltip-",)) is kept


def test_purge_cuts_unused_rules_inside_media_and_keeps_other_at_rules():
    css = ('@charset "UTF-8";:root{--c:1}.used{a:1}.unused{b:2}@media (min-width:9px){.unused{c:3}.used{d:4}}'
           '@media print{.unused{e:5}}@font-face{font-family:x}@keyframes spin{from{f:6}to{g:7}}'
           '@supports (display:grid){@media screen{.used{h:8}.unused{i:9}}}')
    assert purge(css, {"used"}) == ('@charset "UTF-8";:root{--c:1}.used{a:1}@media (min-width:9px){.used{d:4}}'
                                    '@font-face{font-family:x}@keyframes spin{from{f:6}to{g:7}}'
                                    '@supports (display:grid){@media screen{.used{h:8}}}')


def test_purge_stylesheets_reads_pages_and_scripts_and_rewrites_the_theme_css(tmp_path):
    (tmp_path / "_static" / "styles").mkdir(parents=True)
    (tmp_path / "page.html").write_text('<div class="card" id="main"></div>')
    (tmp_path / "_static" / "app.js").write_text('el.classList.add("show"); x = "bs-tooltip-" + where;')
    sheet = tmp_path / "_static" / "styles" / "pydata-sphinx-theme.css"
    sheet.write_text(".card{a:1}.carousel{b:2}#main .show{c:3}.bs-tooltip-end{d:4}.toast{e:5}")
    nb_sheet = tmp_path / "_static" / "mystnb.0123abcd.css"
    nb_sheet.write_text(".card{x:1}.ansi-red-fg{y:2}")
    other = tmp_path / "_static" / "custom.css"
    other.write_text(".unused{z:1}")
    sizes = purge_stylesheets(tmp_path)
    assert sheet.read_text() == ".card{a:1}#main .show{c:3}.bs-tooltip-end{d:4}"
    assert nb_sheet.read_text() == ".card{x:1}" and other.read_text() == ".unused{z:1}"  # not one of STYLESHEETS
    assert sizes == {"styles/pydata-sphinx-theme.css": (71, 46), "mystnb.0123abcd.css": (27, 10)}
