"""A tiny Sphinx extension for the book build (listed in ``_config.yml``, ``sphinx.extra_extensions``).

1. It sets ``ATTNMARL_STATIC=1`` as soon as Sphinx loads it, before any notebook runs; the kernels
   that execute the notebooks inherit the variable, so :func:`attnmarl.widgets.static_mode` is
   true in them however the build was started, and every explorer renders its static face.
2. It serves MathJax 3 with its TeX fonts from the book itself (the copy shipped by
   ``sphinx-mathjax-offline``) instead of a CDN, so that the formulas render when the book is opened
   from disk, offline, in MathJax's own fonts; and only the parts of MathJax the book uses
   (:data:`MATHJAX_COMPONENTS`, :data:`TEX_PACKAGES`): about 0.75 MB a page instead of the 1.33 MB of the
   combined ``tex-chtml-full.js``. A formula that needs another TeX package shows an error in the page.
3. It turns off the search page's summaries when the book is read from disk: the search page fetches each
   result page to quote it, which a browser refuses for ``file://`` pages (an error per result). Served
   over http the summaries stay.
4. It drops what a page does not use: sphinx-design's stylesheet and script where the page has none of its
   elements; and repeated inline scripts from each page: sphinx-thebe 0.3 registers its settings
   script once per reading pass, and a page that declares ``const THEBE_JS_URL`` twice throws
   an error in the reader's browser.
5. It adds the ``algocode`` directive, which shows under a step of an algorithm box the lines of the
   package that do it, read from the source at build time (:mod:`attnmarl.codelines`)::

       ```{algocode} attnmarl.algos.mappo
       Algorithm 7.1, step 3
       gae
       ```

   Each line of the content is a target (a step marker or a function's name); the block renders as a
   collapsed ``<details>`` whose summary names the file and lines, with the code and its own line numbers.
"""
from __future__ import annotations

import html
import importlib.util
import os
import re
import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from .codelines import locate

MATHJAX = "mathjax/startup.js"
"""Where the book's MathJax 3 sits in ``_static``: its loader, which loads :data:`MATHJAX_COMPONENTS` (and
``core``, which they need) from the same folder."""

MATHJAX_COMPONENTS = ("input/tex-base", "[tex]/ams", "output/chtml", "a11y/assistive-mml")
"""The MathJax components a page loads: TeX input with the base macros and the AMS extension (the only ones the
book's formulas use: ``\\tfrac``, ``\\operatorname``, ``\\lVert``, ``aligned``), CommonHTML output, and the
hidden MathML copy of each formula that screen readers read. Not the menu (0.43 MB) nor the other extensions
of ``tex-chtml-full.js``."""

TEX_PACKAGES = ("base", "ams")

_MATHJAX_FILES = ("startup.js", "core.js", "input/tex-base.js", "input/tex/extensions/ams.js", "output/chtml.js",
                  "output/chtml/fonts/tex.js", "a11y/assistive-mml.js", "output/chtml/fonts/woff-v2")
"""What the page needs from the MathJax distribution: the loader, the components (with the TeX font's metrics,
``output/chtml/fonts/tex.js``), and the MathJax TeX fonts that CommonHTML output loads from
``[mathjax]/output/chtml/fonts/woff-v2`` (without them the browser falls back to other fonts, and inline
formulas no longer sit on the text's baseline)."""

OFFLINE_SEARCH = 'if (location.protocol === "file:") { DOCUMENTATION_OPTIONS.SHOW_SEARCH_SUMMARY = false; }'
"""Run after ``documentation_options.js``: from disk, the search page lists its results without fetching each
page for a summary (see the module docstring)."""


def mathjax_source() -> Path:
    """The MathJax 3 distribution shipped by the ``sphinx-mathjax-offline`` wheel (MathJax 3.2.2)."""
    spec = importlib.util.find_spec("sphinx-mathjax-offline")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the book serves MathJax from the sphinx-mathjax-offline package: pip install it "
                           "(requirements.txt pins it)")
    return Path(spec.submodule_search_locations[0]) / "static" / "mathjax"


def _local_mathjax(app: Any, config: Any) -> None:
    mathjax_source()  # fail early, before any notebook runs, if it is missing
    config.mathjax_path = MATHJAX
    config.mathjax2_config = None
    config.mathjax3_config = {"loader": {"load": list(MATHJAX_COMPONENTS)}, "tex": {"packages": list(TEX_PACKAGES)},
                              "options": {"processHtmlClass": "math|output_area", "ignoreHtmlClass": "tex2jax_ignore"},
                              "chtml": {"scale": 0.95}}


def _copy_mathjax(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    source, target = mathjax_source(), Path(app.outdir) / "_static" / "mathjax"
    for name in _MATHJAX_FILES:
        if (source / name).is_dir():
            shutil.copytree(source / name, target / name, dirs_exist_ok=True)
        else:
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / name, target / name)


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
        app.connect("build-finished", _copy_mathjax)
        app.connect("html-page-context", _unique_scripts, priority=900)
        app.connect("html-page-context", _without_unused_design, priority=900)
        app.add_directive("algocode", AlgoCode)
        app.add_js_file(None, body=OFFLINE_SEARCH, priority=250)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
