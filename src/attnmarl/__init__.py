"""attnmarl: attention for multi-agent reinforcement learning, the package behind the book.

One module per idea:

- :mod:`attnmarl.attention` -- score functions, masked softmax, single- and multi-head self-attention
- :mod:`attnmarl.vision`, :mod:`attnmarl.relational` -- soft spatial attention in a CNN, and a relational agent
  that attends over entities (chapter 5)
- :mod:`attnmarl.widgets` -- two-faced explorers (live ipywidgets / static, kernel-free HTML)
- :mod:`attnmarl.viz` -- heatmaps and other figures shared by the chapters
- :mod:`attnmarl.diagrams` -- the source's figures (17.1-17.8) as block-and-arrow SVG diagrams
"""
import os
import signal
import sys

__version__ = "0.1.0"


def _interrupted_while_starting(signum: int, frame: object) -> None:
    """Ctrl-C while a command line (``python -m attnmarl.X``) still imports torch and the rest: one line
    and status 130, not a traceback from inside an import. :func:`attnmarl.guards.run_command` hands
    SIGINT back to Python (``KeyboardInterrupt``) once the command starts."""
    sys.stderr.write("\nattnmarl: interrupted while starting; nothing was written\n")
    os._exit(130)


# python -m attnmarl.X: sys.argv[0] is "-m" while the module is being imported (a SIGINT that the parent
# process ignores stays ignored)
if sys.argv[:1] == ["-m"] and signal.getsignal(signal.SIGINT) is signal.default_int_handler:
    signal.signal(signal.SIGINT, _interrupted_while_starting)

QUICK: bool = os.environ.get("ATTNMARL_QUICK", "") == "1"
"""Quick mode (``ATTNMARL_QUICK=1``, used by the tests): fewer steps, same code path."""


def __getattr__(name: str):
    """``attnmarl.load_policy`` (:func:`attnmarl.checkpoints.load_policy`), imported on first use so that
    ``import attnmarl`` stays light (the Sphinx extension imports it during every book build)."""
    if name == "load_policy":
        from .checkpoints import load_policy

        return load_policy
    raise AttributeError(f"module 'attnmarl' has no attribute {name!r}")
