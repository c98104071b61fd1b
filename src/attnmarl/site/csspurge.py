"""The theme's stylesheets, cut down to the rules that can match something in the book.

The pydata theme ships Bootstrap 5 whole: every page loads 0.31 MB of CSS for carousels, toasts, offcanvas menus,
spinners, a grid of hundreds of utility classes, and the book uses a small part of it. :func:`purge_stylesheets`
keeps a rule when one of its selectors can match: every class and id the selector names is written somewhere in
the built pages or in the scripts under ``_static`` (which add classes when a page runs, some of them by prefix,
as Bootstrap's ``"bs-tooltip-" + placement``). Everything else of a stylesheet stays as it was: ``@font-face``,
``@keyframes``, custom properties, and the rules inside ``@media`` and ``@supports`` blocks by the same test. A
selector that names nothing (``html``, ``a:hover``, ``:root``) always stays, and names inside ``:not(…)`` or an
attribute selector do not count, since they can match where the name is absent.
"""
from __future__ import annotations

import re
from pathlib import Path

__all__ = ["STYLESHEETS", "WORD", "NAME", "used_words", "rules", "selectors", "selector_can_match", "purge",
           "purge_stylesheets"]

STYLESHEETS = ("styles/pydata-sphinx-theme.css", "styles/sphinx-book-theme.css", "mystnb.*.css")
"""The stylesheets under ``_static`` (glob patterns) that :func:`purge_stylesheets` cuts: the two themes'
(Bootstrap and the theme's own rules) and MyST-NB's (43 kB, most of it the colours of terminal output the book
does not print). The others are small and each written for what the book uses."""

WORD = re.compile(r"[A-Za-z0-9_-]+")
"""A class or id name as the pages and scripts write it (a word that ends in ``-`` is a prefix to which a
script adds the rest)."""

NAME = re.compile(r"[.#](-?[A-Za-z_][A-Za-z0-9_-]*)")
"""A class (``.name``) or id (``#name``) in a selector."""

_NOT_COUNTED = re.compile(r"\[[^\]]*\]|:not\((?:[^()]|\([^()]*\))*\)")
"""Parts of a selector whose names do not have to be present for it to match: attribute selectors and
``:not(…)``."""

_GROUPS = ("@media", "@supports", "@container", "@layer", "@document")
"""At-rules that hold ordinary rules, each of which is tested on its own."""


def used_words(html_dir: Path) -> set[str]:
    """Every word (:data:`WORD`) written in the built pages and in the scripts under ``_static``."""
    words: set[str] = set()
    for path in [*html_dir.rglob("*.html"), *(html_dir / "_static").rglob("*.js")]:
        words.update(WORD.findall(path.read_text(encoding="utf-8", errors="replace")))
    return words


def _skip(css: str, i: int) -> int:
    """The index after the string or comment that starts at ``css[i]``, or ``i + 1``."""
    if css.startswith("/*", i):
        end = css.find("*/", i + 2)
        return len(css) if end < 0 else end + 2
    if css[i] in "\"'":
        quote, j = css[i], i + 1
        while j < len(css) and css[j] != quote:
            j += 2 if css[j] == "\\" else 1
        return j + 1
    return i + 1


def rules(css: str) -> list[tuple[str, str]]:
    """The top-level rules of ``css`` as (prelude, body) pairs: ``("a:hover", "color:red")``,
    ``("@media (min-width:960px)", "…")``; statements without a body (``@import …;``) have the body ``None``.
    Strings and comments are skipped whole, so a brace inside them does not count; a comment between rules
    is dropped. ``ValueError`` if the braces do not balance."""
    out: list[tuple[str, str]] = []
    i, start, n = 0, 0, len(css)
    while i < n:
        c = css[i]
        if css.startswith("/*", i):
            if not css[start:i].strip():
                start = _skip(css, i)
            i = _skip(css, i)
        elif c in "\"'":
            i = _skip(css, i)
        elif c == ";" and css[start:i].lstrip().startswith("@"):
            out.append((css[start:i].strip(), None))
            i = start = i + 1
        elif c == "{":
            depth, j = 1, i + 1
            while j < n and depth:
                if css.startswith("/*", j) or css[j] in "\"'":
                    j = _skip(css, j)
                    continue
                depth += {"{": 1, "}": -1}.get(css[j], 0)
                j += 1
            if depth:
                raise ValueError(f"unbalanced braces in the stylesheet after {css[start:i].strip()[:60]!r}")
            out.append((css[start:i].strip(), css[i + 1:j - 1]))
            i = start = j
        elif c == "}":
            raise ValueError(f"a closing brace without an opening one at character {i}")
        else:
            i += 1
    return out


def _is_used(name: str, words: set[str], prefixes: tuple[str, ...]) -> bool:
    return name in words or name.startswith(prefixes)


def selectors(selector_list: str) -> list[str]:
    """The selectors of a comma-separated list, split only at the commas outside parentheses and brackets
    (``a:not(.b,.c), d`` is two selectors)."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(selector_list):
        depth += {"(": 1, "[": 1, ")": -1, "]": -1}.get(c, 0)
        if c == "," and depth == 0:
            parts.append(selector_list[start:i])
            start = i + 1
    return [*parts, selector_list[start:]]


def selector_can_match(selector_list: str, words: set[str], prefixes: tuple[str, ...] = ()) -> bool:
    """Whether one of the selectors in ``selector_list`` names only classes and ids in ``words`` (or starting
    with one of ``prefixes``), not counting the names inside attribute selectors and ``:not(…)``."""
    return any(all(_is_used(name, words, prefixes) for name in NAME.findall(_NOT_COUNTED.sub("", part)))
               for part in selectors(selector_list))


def purge(css: str, words: set[str]) -> str:
    """``css`` without the rules whose selectors cannot match (:func:`selector_can_match`), also inside
    :data:`_GROUPS` blocks (a block left empty goes too); other at-rules stay whole."""
    prefixes = tuple(sorted(w for w in words if w.endswith("-") and len(w) > 2))

    def cut(text: str) -> str:
        kept = []
        for prelude, body in rules(text):
            if body is None:
                kept.append(prelude + ";")
            elif prelude.startswith(_GROUPS):
                inner = cut(body)
                if inner:
                    kept.append(f"{prelude}{{{inner}}}")
            elif prelude.startswith("@") or selector_can_match(prelude, words, prefixes):
                kept.append(f"{prelude}{{{body}}}")
        return "".join(kept)

    return cut(css)


def purge_stylesheets(html_dir: str | Path) -> dict[str, tuple[int, int]]:
    """Cut each of :data:`STYLESHEETS` in the built book at ``html_dir`` to the rules that can match its pages
    (run after :func:`attnmarl.site.iconfont.trim_icons`, which removes the icon rules first). Returns each
    stylesheet's size before and after, in bytes."""
    html_dir = Path(html_dir)
    words = used_words(html_dir)
    sizes = {}
    for pattern in STYLESHEETS:
        for path in sorted((html_dir / "_static").glob(pattern)):
            css = path.read_text(encoding="utf-8")
            cut = purge(css, words)
            path.write_text(cut, encoding="utf-8")
            sizes[path.relative_to(html_dir / "_static").as_posix()] = (len(css.encode()), len(cut.encode()))
    return sizes
