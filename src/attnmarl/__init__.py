"""attnmarl: attention for multi-agent reinforcement learning, the package behind the book.

Three layers, one folder each:

- the library the chapters teach, at the root: :mod:`attnmarl.attention` (score functions, masked softmax,
  single- and multi-head self-attention), :mod:`attnmarl.envs`, :mod:`attnmarl.nets`, :mod:`attnmarl.algos`,
  :mod:`attnmarl.train`, :mod:`attnmarl.checkpoints`, :mod:`attnmarl.stats`, and the checks every module
  shares (:mod:`attnmarl.checks`, :mod:`attnmarl.costs`, :mod:`attnmarl.devices`, :mod:`attnmarl.interrupt`,
  :mod:`attnmarl.files`);
- :mod:`attnmarl.notebook` -- the glue that shows it in a chapter: figures, two-faced widgets, the explorers;
- :mod:`attnmarl.site` -- the tools that only build the HTML book.
"""
import os
import signal
import sys

__version__ = "0.1.0"


def _interrupted_while_starting(signum: int, frame: object) -> None:
    """Ctrl-C while a command line (``python -m attnmarl.X``) still imports torch and the rest: one line
    and status 130, not a traceback from inside an import. :func:`attnmarl.interrupt.run_command` hands
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
