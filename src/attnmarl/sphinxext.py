"""A tiny Sphinx extension for the book build (listed in ``_config.yml``, ``sphinx.extra_extensions``).

1. It sets ``ATTNMARL_STATIC=1`` as soon as Sphinx loads it, before any notebook runs; the kernels
   that execute the notebooks inherit the variable, so :func:`attnmarl.widgets.static_mode` is
   true in them however the build was started, and every explorer renders its static face.
2. It serves MathJax 3 with its TeX fonts from the book itself (the copy shipped by
   ``sphinx-mathjax-offline``) instead of a CDN, so that the formulas render when the book is opened
   from disk, offline, in MathJax's own fonts.
3. It drops repeated inline scripts from each page: sphinx-thebe 0.3 registers its settings
   script once per reading pass, and a page that declares ``const THEBE_JS_URL`` twice throws
   an error in the reader's browser.
4. It adds the ``algocode`` directive, which shows under a step of an algorithm box the lines of the
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
import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.util.docutils import SphinxDirective

from .codelines import locate

MATHJAX = "mathjax/tex-chtml-full.js"
"""Where the book's MathJax 3 sits in ``_static``: the combined TeX input + CommonHTML output component,
with every TeX extension (``amsmath``, ``boldsymbol``, ...), so that nothing is fetched later."""

_MATHJAX_FILES = ("tex-chtml-full.js", "output/chtml/fonts/woff-v2")
"""What the page needs from the MathJax distribution: the component, and the MathJax TeX fonts that
CommonHTML output loads from ``[mathjax]/output/chtml/fonts/woff-v2`` (without them the browser falls
back to other fonts, and inline formulas no longer sit on the text's baseline)."""


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
    config.mathjax3_config = {"options": {"processHtmlClass": "math|output_area", "ignoreHtmlClass": "tex2jax_ignore"},
                              "chtml": {"scale": 0.95}}


def _copy_mathjax(app: Any, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    source, target = mathjax_source(), Path(app.outdir) / "_static" / "mathjax"
    for name in _MATHJAX_FILES:
        if (source / name).is_dir():
            shutil.copytree(source / name, target / name, dirs_exist_ok=True)
        else:
            target.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / name, target / name)


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
        app.add_directive("algocode", AlgoCode)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
