"""A tiny Sphinx extension for the book build (listed in ``_config.yml``, ``sphinx.extra_extensions``).

1. It sets ``ATTNMARL_STATIC=1`` as soon as Sphinx loads it, before any notebook runs; the kernels
   that execute the notebooks inherit the variable, so :func:`attnmarl.notebook.widgets.static_mode` is
   true in them however the build was started, and every explorer renders its static face.
2. It typesets every formula at build time (:mod:`attnmarl.site.mathsvg`: MathJax 3 under Node.js, SVG output
   with a hidden MathML copy for screen readers) and drops the MathJax scripts Sphinx would have every page
   load: a page loads no MathJax (0.75 MB) and no math font (0.1 MB), and reads the same from disk,
   offline. A formula that MathJax cannot typeset (a TeX package the book does not use) fails the build.
3. It turns off the search page's summaries when the book is read from disk: the search page fetches each
   result page to quote it, which a browser refuses for ``file://`` pages (an error per result). Served
   over http the summaries stay.
4. It drops what a page does not use: sphinx-design's stylesheet and script where the page has none of its
   elements; the rules and glyphs of the icons the book never shows (:mod:`attnmarl.site.iconfont`); the themes'
   rules that can match nothing in the book (:mod:`attnmarl.site.csspurge`: 0.19 MB of Bootstrap); the bytes PNG
   spends over lossless WebP on the figures (:mod:`attnmarl.site.webp`: the same pixels, two fifths less); the
   second and later copies of an explorer's renderer on a page (:func:`drop_repeated_blocks`); and repeated
   inline scripts from each page: sphinx-thebe 0.3 registers its settings script once per reading pass, and
   a page that declares ``const THEBE_JS_URL`` twice throws an error in the reader's browser.
5. It adds the ``algocode`` directive, which shows under a step of an algorithm box the lines of the
   package that do it, read from the source at build time (:mod:`attnmarl.site.codelines`)::

       ```{algocode} attnmarl.algos.mappo
       Algorithm 7.1, step 3
       gae
       ```

   Each line of the content is a target (a step marker or a function's name); the block renders as a
   collapsed ``<details>`` whose summary names the file and lines, with the code and its own line numbers.
6. It says what each of the source's figures shows wherever a page refers to one it does not show
   (:func:`describe_figure_links`).
"""
from __future__ import annotations

import html
import os
import re
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from .codelines import locate
from .csspurge import purge_stylesheets
from .iconfont import trim_icons
from .mathsvg import mathjax_source, typeset_book
from .webp import figures_to_webp

MATHJAX = "mathjax/startup.js"
"""The MathJax that Sphinx's math extension would load, from the book itself rather than a CDN; the pages go
without it (their formulas are typeset at build time), and a page that still asked for it would show a missing
file in the tests."""

OFFLINE_SEARCH = 'if (location.protocol === "file:") { DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false; }'
"""Run after ``documentation_options.js``: from disk, the search page lists its results without fetching each
page for a summary (see the module docstring)."""


SOURCE_FIGURES = {
    "17.1": "a layer that maps m inputs to m outputs",
    "17.2": "query, key and value of every input, by three shared matrices",
    "17.3": "one query scored against every key, then a softmax: the weights α",
    "17.4": "the output, the values averaged with the weights α",
    "17.5": "every output reads every input, with weight α",
    "17.6": "multi-head self-attention, the heads' outputs concatenated",
    "17.7": "the concatenation critic: every head reads all m features",
    "17.8": "the self-attention critic: agents meet only in the attention layer",
    "17.9": "the self-attention Q network: each token an observation and an action",
}
"""What each of the source's figures shows, in one line: the book draws them (:mod:`attnmarl.notebook.diagrams`, in
chapters 3, 4, 7 and 9), and a reference to one from elsewhere says what it is (:func:`describe_figure_links`)."""

FIGURE_TARGET = re.compile(r"#fig-(17)-(\d+)$")


def describe_figure_links(doctree: nodes.document) -> None:
    """Give every link to one of the source's figures (``fig. 17.N``) its one-line description
    (:data:`SOURCE_FIGURES`) as a title (shown on hover, read by screen readers), and write it into the text after
    the first link to each figure on a page that does not show that figure (a link within the page has a
    ``refid``, not a ``refuri``), so that a reader who does not follow the link knows what it shows:
    ``fig. 17.8 (the self-attention critic: ...)``, or ``(fig. 17.8, the self-attention critic: ...)`` where the
    link closes a parenthesis."""
    described: set[str] = set()
    for link in list(doctree.findall(nodes.reference)):
        uri = link.get("refuri") or "#" + link.get("refid", "")  # a link within its page has a refid only
        match = FIGURE_TARGET.search(uri)
        if not match:
            continue
        number = f"{match.group(1)}.{match.group(2)}"
        description = SOURCE_FIGURES[number]
        link["reftitle"] = f"Fig. {number}: {description}"
        if uri.startswith("#") or number in described:
            continue
        described.add(number)
        parent, after = link.parent, link.next_node(descend=False, siblings=True)
        closes = isinstance(after, nodes.Text) and after.astext().startswith(")")
        note = nodes.inline("", f", {description}" if closes else f" ({description})", classes=["figure-note"])
        parent.insert(parent.index(link) + 1, note)


def _figure_links(app: Any, doctree: nodes.document, docname: str) -> None:
    describe_figure_links(doctree)


def _local_mathjax(app: Any, config: Any) -> None:
    mathjax_source()  # fail early, before any notebook runs, if it is missing
    config.mathjax_path = MATHJAX
    config.mathjax2_config = None
    config.mathjax3_config = None


def _without_mathjax(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """The page goes without the MathJax script that Sphinx's math extension adds to a page with formulas:
    :func:`_typeset_formulas` writes them into the page instead."""
    context["script_files"] = [s for s in context.get("script_files", [])
                               if not str(getattr(s, "filename", s) or "").endswith(MATHJAX)]


INLINE_BLOCK = re.compile(r"<(script|style)>(.*?)</\1>", re.S)
"""An inline script or stylesheet without attributes, as the explorers and the playground write theirs."""


def drop_repeated_blocks(page: str, shortest: int = 200) -> str:
    """``page`` without the second and later copies of each inline script or stylesheet (:data:`INLINE_BLOCK`) of
    ``shortest`` characters or more. Each explorer's output carries its renderer's code (so that it also works
    alone in Jupyter), a page of several explorers the same code several times; the code guards itself, so the
    first copy defines it for all (the call that starts each explorer is a block of its own)."""
    seen: set[str] = set()

    def once(block: re.Match) -> str:
        if len(block.group(2)) < shortest:
            return block.group(0)
        if block.group(0) in seen:
            return ""
        seen.add(block.group(0))
        return block.group(0)

    return INLINE_BLOCK.sub(once, page)


HIGHLIGHT_RULE = re.compile(r'html\[data-theme="(\w+)"\] \.highlight (?:\.(\w+) )?\{([^}]*)\}')
"""A rule of Pygments' stylesheet for one theme: the code box (no class) or one token class, and its body."""


def plain_token_classes(pygments_css: str) -> set[str]:
    """The token classes of ``pygments_css`` that look like no class at all: in every theme their only property is
    the code box's own text colour (``.n``, ``.p`` and ``.w`` in the book's themes: names, punctuation, spaces)."""
    box: dict[str, str] = {}
    rules: dict[str, dict[str, str]] = {}
    for theme, token, body in HIGHLIGHT_RULE.findall(pygments_css):
        properties = dict(part.split(":", 1) for part in body.split(";") if ":" in part)
        properties = {key.strip(): value.strip().lower() for key, value in properties.items()}
        if not token:
            box[theme] = properties.get("color", "")
        else:
            rules.setdefault(token, {})[theme] = "" if set(properties) != {"color"} else properties["color"]
    return {token for token, colours in rules.items()
            if set(colours) == set(box) and all(colours[theme] and colours[theme] == box[theme] for theme in box)}


def unwrap_plain_tokens(page: str, classes: set[str]) -> str:
    """``page`` with every ``<span class="C">text</span>`` of a class in ``classes`` replaced by its text: the same
    pixels (:func:`plain_token_classes`) and the same text to copy, a fifth less code markup to load (130 kB on
    chapter 10's page)."""
    if not classes:
        return page
    pattern = re.compile(r'<span class="(?:' + "|".join(map(re.escape, sorted(classes))) + r')">([^<]*)</span>')
    return pattern.sub(r"\1", page)


def _slim_book(app: Any, exception: Exception | None) -> None:
    """After a successful HTML build: formulas typeset, icons, stylesheet rules, figures, repeated inline code and
    code markup that changes nothing on screen cut to what the pages use (items 2 and 4 of the module docstring)."""
    if exception is None and app.builder.format == "html":
        typeset_book(app.outdir)
        trim_icons(app.outdir)
        purge_stylesheets(app.outdir)
        figures_to_webp(app.outdir)
        pygments = Path(app.outdir) / "_static" / "pygments.css"
        plain = plain_token_classes(pygments.read_text(encoding="utf-8")) if pygments.exists() else set()
        for path in Path(app.outdir).rglob("*.html"):
            text = path.read_text(encoding="utf-8")
            slim = unwrap_plain_tokens(drop_repeated_blocks(text), plain)
            if slim != text:
                path.write_text(slim, encoding="utf-8")


def _without_unused_design(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    """sphinx-design (which Jupyter Book loads on every page) adds 62 KB of CSS and a script; a page with no
    sphinx-design element (its classes start with ``sd-``) goes without them."""
    if re.search(r'class="[^"]*\bsd-', context.get("body", "")):
        return
    context["css_files"] = [c for c in context.get("css_files", [])
                            if "sphinx-design" not in str(getattr(c, "filename", c))]
    context["script_files"] = [s for s in context.get("script_files", [])
                               if "design-tabs" not in str(getattr(s, "filename", s) or "")]


def _unique_scripts(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    seen, unique = set(), []
    for script in context.get("script_files", []):
        key = (str(getattr(script, "filename", script) or ""), tuple(sorted(getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


class AlgoCode(SphinxDirective):
    """The ``algocode`` directive (see the module docstring): the code of one step of an algorithm box."""

    required_arguments = 1
    has_content = True

    def run(self) -> list[nodes.Node]:
        module, targets = self.arguments[0], [line.strip() for line in self.content if line.strip()]
        if not targets:
            raise self.error(f"algocode {module}: name at least one step marker or function to show")
        try:
            parts = [locate(module, target) for target in targets]
        except ValueError as error:
            raise self.error(f"algocode {module}: {error}") from None
        summary = "Code: " + "; ".join(part.label() if k == 0 else f"{target}, L{part.first}–L{part.last}"
                                      for k, (target, part) in enumerate(zip(targets, parts)))
        shown: list[nodes.Node] = [nodes.raw("", f'<details class="algocode"><summary>{html.escape(summary)}'
                                                 "</summary>", format="html")]
        for part in parts:
            self.env.note_dependency(str(part.path))
            block = nodes.literal_block(part.text, part.text, language="python", linenos=True)
            block["highlight_args"] = {"linenostart": part.first}
            block["classes"].append("algocode")
            shown.append(block)
        return [*shown, nodes.raw("", "</details>", format="html")]


def setup(app: Any) -> dict[str, Any]:
    os.environ["ATTNMARL_STATIC"] = "1"
    if app is not None:
        app.connect("config-inited", _local_mathjax, priority=900)
        app.connect("build-finished", _slim_book, priority=900)  # after the theme rewrites pygments.css
        app.connect("html-page-context", _without_mathjax, priority=900)
        app.connect("html-page-context", _unique_scripts, priority=900)
        app.connect("html-page-context", _without_unused_design, priority=900)
        app.connect("doctree-resolved", _figure_links)
        app.add_directive("algocode", AlgoCode)
        app.add_js_file(None, body=OFFLINE_SEARCH, priority=250)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
