"""The theme's icons cut down to the ones the book shows (attnmarl.site.iconfont), on the theme's own files."""
import re
import shutil
from pathlib import Path

import pydata_sphinx_theme
from fontTools.ttLib import TTFont

from attnmarl.site.iconfont import FONTS, ICON_RULE, THEME_CSS, named_glyphs, trim_icon_rules, trim_icons

THEME_STATIC = Path(pydata_sphinx_theme.__file__).parent / "theme" / "pydata_sphinx_theme" / "static"


def glyph_of(css: str, name: str) -> int:
    """The character the theme's stylesheet draws for the icon ``name``."""
    rule = next(r for r in ICON_RULE.finditer(css) if f".{name}:before" in r.group(1).split(","))
    return int(re.search(r'content:"\\([0-9a-f]+)"', rule.group(0)).group(1), 16)


def built_book(tmp_path: Path, page: str, script: str = "") -> Path:
    for name in (THEME_CSS, *(f + s for f in FONTS for s in (".woff2", ".ttf"))):
        (tmp_path / "_static" / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(THEME_STATIC / name, tmp_path / "_static" / name)
    (tmp_path / "_static" / "scripts").mkdir(exist_ok=True)
    (tmp_path / "_static" / "scripts" / "page.js").write_text(script, encoding="utf-8")
    (tmp_path / "index.html").write_text(page, encoding="utf-8")
    return tmp_path


def test_an_icon_rule_stays_when_any_of_its_names_is_used():
    css = '.fa-bars:before,.fa-navicon:before{content:"\\f0c9"}.fa-moon:before{content:"\\f186"}a{color:red}'
    assert trim_icon_rules(css, {"fa-navicon"}) == '.fa-bars:before,.fa-navicon:before{content:"\\f0c9"}a{color:red}'
    assert trim_icon_rules(css, set()) == "a{color:red}"
    assert named_glyphs([css, "x{--pst-icon-angle:'\\f105'}", 'y{--pst-icon-check:"\uf058"}']) == {
        0xF0C9, 0xF186, 0xF105, 0xF058}


def test_the_icons_the_pages_and_scripts_use_keep_their_rules_and_glyphs_and_the_rest_go(tmp_path):
    book = built_book(tmp_path, '<i class="fa-solid fa-moon"></i><i class="fa-regular fa-file"></i>',
                      script='button.className = "fa-solid fa-xmark";')
    original = (book / "_static" / THEME_CSS).read_text(encoding="utf-8")
    solid = TTFont(book / "_static" / (FONTS[0] + ".woff2"))
    assert len(solid.getBestCmap()) > 1000
    kept_rules, kept_glyphs = trim_icons(book)
    css = (book / "_static" / THEME_CSS).read_text(encoding="utf-8")
    assert len(css) < len(original) - 50_000 and kept_rules < 10
    for name in ("fa-moon", "fa-file", "fa-xmark"):
        assert glyph_of(css, name) == glyph_of(original, name)
    assert not [r for r in ICON_RULE.finditer(css) if ".fa-sun:before" in r.group(1)]  # not used: gone
    used = {glyph_of(original, n) for n in ("fa-moon", "fa-file", "fa-xmark")}
    theme_own = named_glyphs([css]) - used  # glyphs the theme's own rules name (admonitions, toc arrows, ...)
    assert theme_own and kept_glyphs == len(named_glyphs([css]))
    for font in FONTS:
        for suffix in (".woff2", ".ttf"):
            cmap = set(TTFont(book / "_static" / (font + suffix)).getBestCmap())
            original_cmap = set(TTFont(THEME_STATIC / (font + suffix)).getBestCmap())
            assert cmap == named_glyphs([css]) & original_cmap, (font, suffix)
    assert (book / "_static" / (FONTS[0] + ".woff2")).stat().st_size < 20_000
    assert trim_icons(book) == (kept_rules, kept_glyphs)  # a second build changes nothing
