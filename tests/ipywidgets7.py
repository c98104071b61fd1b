"""Drive the live explorers with Colab's ipywidgets 7.7, which `make test` installs into
.venv/ipywidgets7 beside the venv's ipywidgets 8."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

IPYWIDGETS7 = Path(__file__).resolve().parents[1] / ".venv" / "ipywidgets7"


def run_with_ipywidgets7(script: str) -> None:
    """Run ``script`` in a fresh interpreter that imports ipywidgets 7.7; it must print "ok 7.7..."."""
    if not IPYWIDGETS7.exists():
        pytest.skip("ipywidgets 7.7 is installed into .venv/ipywidgets7 by `make test`")
    check = "import ipywidgets\nassert ipywidgets.__version__.startswith('7.7'), ipywidgets.__version__\n"
    env = {**os.environ, "PYTHONPATH": str(IPYWIDGETS7)}
    result = subprocess.run([sys.executable, "-c", check + script + "\nprint('ok', ipywidgets.__version__)"],
                            env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stdout.startswith("ok 7.7"), result.stderr[-2000:]
