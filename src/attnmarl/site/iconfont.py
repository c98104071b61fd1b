"""The theme's icons, cut down to the ones the book shows.

The pydata theme draws its icons (search, menu, light/dark, download, …) with Font Awesome 6: its stylesheet
carries a rule for each of Font Awesome's ~1,900 icon names (``.fa-bars:before{content:"\\f0c9"}``, 0.1 MB of
the 0.4 MB stylesheet) and every page loads the 156 KB solid font with all of their glyphs. The book shows about
twenty. :func:`trim_icons` keeps the rules of the icon names that the built pages and their scripts use, and cuts
the fonts down to the glyphs that the remaining stylesheets still name: the same icons, 0.25 MB less a page.
"""
from __future__ import annotations

import re
from pathlib import Path

from fontTools import subset
from fontTools.ttLib import TTFont

__all__ = ["ICON_RULE", "ICON_NAME", "ESCAPE", "PRIVATE_USE", "THEME_CSS", "FONTS", "used_icons", "trim_icon_rules",
           "named_glyphs", "subset_font", "trim_icons"]

ICON_RULE = re.compile(r'((?:\.fa-[a-z0-9-]+:before,?)+)\{content:"[^"]*"\}')
"""A Font Awesome icon rule as the theme's stylesheet writes it: one or more ``.fa-NAME:before`` selectors and the
glyph they draw."""

ICON_NAME = re.compile(r"\bfa-[a-z0-9-]+")

ESCAPE = re.compile(r'["\']\\([0-9a-fA-F]{2,6})["\']')
"""A CSS string that is one escaped character (how stylesheets name an icon's glyph)."""

PRIVATE_USE = re.compile("[\ue000-\uf8ff]")

THEME_CSS = "styles/pydata-sphinx-theme.css"
"""The stylesheet with the icon rules, under ``_static``."""

FONTS = ("vendor/fontawesome/webfonts/fa-solid-900", "vendor/fontawesome/webfonts/fa-regular-400")
"""The icon fonts the theme's stylesheet loads (``.woff2``, with ``.ttf`` as the fallback), under ``_static``."""


def used_icons(html_dir: Path) -> set[str]:
    """Every ``fa-…`` name written in the built pages and in the scripts under ``_static`` (which add some icons
    when the page runs)."""
    names: set[str] = set()
    for path in [*html_dir.rglob("*.html"), *(html_dir / "_static").rglob("*.js")]:
        names.update(ICON_NAME.findall(path.read_text(encoding="utf-8", errors="replace")))
    return names


def trim_icon_rules(css: str, used: set[str]) -> str:
    """``css`` without the icon rules none of whose names is in ``used``."""
    def keep(rule: re.Match) -> str:
        names = {s.removeprefix(".").removesuffix(":before") for s in rule.group(1).split(",") if s}
        return rule.group(0) if names & used else ""
    return ICON_RULE.sub(keep, css)


def named_glyphs(css_texts: list[str]) -> set[int]:
    """The icon characters that the stylesheets name: by escape (``content:"\\f0c9"``) or written out, as the
    theme's own variables do (``--pst-icon-angle-right:"\\uf105"``; Font Awesome's glyphs sit in Unicode's
    private use area)."""
    escaped = {int(code, 16) for css in css_texts for code in ESCAPE.findall(css)}
    return escaped | {ord(c) for css in css_texts for c in PRIVATE_USE.findall(css)}


def subset_font(path: Path, codepoints: set[int]) -> None:
    """Rewrite the font at ``path`` (``.woff2`` or ``.ttf``) with only the glyphs of ``codepoints``."""
    font = TTFont(path)
    options = subset.Options()
    options.flavor = "woff2" if path.suffix == ".woff2" else None
    options.layout_features = ["*"]
    subsetter = subset.Subsetter(options)
    subsetter.populate(unicodes=sorted(codepoints & set(font.getBestCmap())))
    subsetter.subset(font)
    font.flavor = options.flavor
    font.save(path)


def trim_icons(html_dir: str | Path) -> tuple[int, int]:
    """Trim the built book's icon rules and fonts (see the module docstring); returns how many icon rules and
    glyphs it kept. Idempotent: a second run keeps the same."""
    html_dir = Path(html_dir)
    static = html_dir / "_static"
    theme = static / THEME_CSS
    used = used_icons(html_dir)
    css = theme.read_text(encoding="utf-8")
    trimmed = trim_icon_rules(css, used)
    if trimmed != css:
        theme.write_text(trimmed, encoding="utf-8")
    codepoints = named_glyphs([p.read_text(encoding="utf-8", errors="replace") for p in static.rglob("*.css")])
    for font in FONTS:
        for suffix in (".woff2", ".ttf"):
            if (static / (font + suffix)).exists():
                subset_font(static / (font + suffix), codepoints)
    return len(ICON_RULE.findall(trimmed)), len(codepoints)
