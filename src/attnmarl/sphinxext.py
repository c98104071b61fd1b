"""A tiny Sphinx extension that makes every explorer render its static face during a book build.

Listed in ``_config.yml`` (``sphinx.extra_extensions``), it sets ``ATTNMARL_STATIC=1`` as soon as
Sphinx loads it, before any notebook runs; the kernels that execute the notebooks inherit the
variable, so :func:`attnmarl.widgets.static_mode` is true in them however the build was started.
"""
from __future__ import annotations

import os
from typing import Any


def setup(app: Any) -> dict[str, Any]:
    os.environ["ATTNMARL_STATIC"] = "1"
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
