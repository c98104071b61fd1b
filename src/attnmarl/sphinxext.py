"""A tiny Sphinx extension for the book build (listed in ``_config.yml``, ``sphinx.extra_extensions``).

1. It sets ``ATTNMARL_STATIC=1`` as soon as Sphinx loads it, before any notebook runs; the kernels
   that execute the notebooks inherit the variable, so :func:`attnmarl.widgets.static_mode` is
   true in them however the build was started, and every explorer renders its static face.
2. It serves MathJax from the book itself (the copy shipped by ``jupyter-server-mathjax``)
   instead of a CDN, so that the formulas render when the book is opened from disk, offline.
3. It drops repeated inline scripts from each page: sphinx-thebe 0.3 registers its settings
   script once per reading pass, and a page that declares ``const THEBE_JS_URL`` twice throws
   an error in the reader's browser.
"""
from __future__ import annotations

import os
from importlib import resources
from typing import Any


def _local_mathjax(app: Any, config: Any) -> None:
    static = resources.files("jupyter_server_mathjax").joinpath("static")
    config.html_static_path = [*config.html_static_path, str(static)]  # copied into _static/
    config.mathjax_path = "MathJax.js?config=TeX-AMS-MML_HTMLorMML-full"  # the one combined config shipped
    config.mathjax3_config = None
    config.mathjax2_config = {
        "tex2jax": {"inlineMath": [["\\(", "\\)"]], "displayMath": [["\\[", "\\]"]],
                    "processClass": "math|output_area", "ignoreClass": "tex2jax_ignore"},
        "HTML-CSS": {"availableFonts": [], "preferredFont": None, "webFont": "STIX-Web", "imageFont": None,
                     "scale": 92},
        "showMathMenu": False,
        "messageStyle": "none",
    }


def _unique_scripts(app: Any, pagename: str, templatename: str, context: dict, doctree: Any) -> None:
    seen, unique = set(), []
    for script in context.get("script_files", []):
        key = (str(getattr(script, "filename", script) or ""), tuple(sorted(getattr(script, "attributes", {}).items())))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app: Any) -> dict[str, Any]:
    os.environ["ATTNMARL_STATIC"] = "1"
    if app is not None:
        app.connect("config-inited", _local_mathjax, priority=900)
        app.connect("html-page-context", _unique_scripts, priority=900)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
