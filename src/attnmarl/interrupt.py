"""Interruption: a command line stopped by Ctrl-C ends in one line, and steps that belong together are
never cut in two.

:func:`run_command` ends a command line stopped by Ctrl-C or a refusal in one line, naming the files it had
written (:data:`WRITTEN`); :class:`HeldInterrupt` holds Ctrl-C across a block (the renames of
:func:`attnmarl.files.atomic.write_atomically`); :func:`restore_sigint` hands Ctrl-C back to Python once a
command line has started.
"""
from __future__ import annotations

import importlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported only where a check needs it: attnmarl.envs stays free of it
    pass


__all__ = ["restore_sigint", "run_command", "WRITTEN", "HeldInterrupt"]


def restore_sigint() -> None:
    """Hand Ctrl-C back to Python (``KeyboardInterrupt``) if ``attnmarl``'s start-up handler, which ends a
    command line interrupted during its imports in one line, still holds it."""
    import signal

    from . import _interrupted_while_starting

    if signal.getsignal(signal.SIGINT) is _interrupted_while_starting:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def run_command(prog: str, main: Callable[[], Any], interrupted: str, imports: tuple[str, ...] = ()) -> None:
    """Run a command line's ``main`` so that it ends in one line, not a traceback, when it is stopped:
    Ctrl-C (SIGINT) prints ``PROG: interrupted; <interrupted>`` — what was and was not written — and exits
    with status 130 (if ``main`` had already written files with :func:`write_atomically`, the line names them
    instead, each complete, since ``interrupted`` says what holds when nothing was written); a refusal or a
    failed write (``ValueError``, ``OSError``, which name the problem)
    prints ``PROG: error: <message>`` and exits with status 1. (Ctrl-C during the imports before it is
    caught by ``attnmarl``'s start-up handler, which this hands back to Python.)

    ``imports`` are modules that ``main`` would import late, imported first, while the start-up handler
    still holds Ctrl-C: torch's first optimizer imports ``torch._dynamo`` (4–5 s), and a KeyboardInterrupt
    raised inside it, in the ``exec`` that ``dataclasses`` runs, is remembered by CPython 3.11 as unhandled,
    so the process would end by SIGINT (status -2) even after the line above."""
    for module in imports:
        importlib.import_module(module)
    restore_sigint()
    already = len(WRITTEN)
    try:
        main()
    except KeyboardInterrupt:
        written = WRITTEN[already:]
        if written:
            listed = ", ".join(str(path) for path in written)
            interrupted = f"it had written {listed} (each file complete); nothing else was written"
        sys.stderr.write(f"\n{prog}: interrupted; {interrupted}\n")
        sys.exit(130)
    except (ValueError, OSError) as error:
        sys.stderr.write(f"{prog}: error: {error}\n")
        sys.exit(1)


WRITTEN: list[Path] = []
"""Every file this process has written with :func:`write_atomically`, in order: :func:`run_command` names those
written before an interrupt, so that its last line never says that nothing was written when something was."""


class HeldInterrupt:
    """A block during which Ctrl-C (SIGINT) is held: an interrupt that arrives is remembered, and delivered to
    the handler it was meant for (``KeyboardInterrupt``, usually) as soon as the block ends — so that a few
    steps that belong together (renaming a set of files into place) are never cut in two. Outside the main
    thread, where no Python signal handler can be set and no ``KeyboardInterrupt`` is raised, it holds
    nothing."""

    def __init__(self) -> None:
        self.pending, self.installed = False, False
        self.previous: Any = None

    def _hold(self, signum: int, frame: Any) -> None:
        self.pending = True

    def __enter__(self) -> HeldInterrupt:
        if threading.current_thread() is threading.main_thread():
            self.previous = signal.getsignal(signal.SIGINT)
            signal.signal(signal.SIGINT, self._hold)
            self.installed = True
        return self

    def __exit__(self, *exc_info: Any) -> None:
        if not self.installed:
            return
        previous = signal.SIG_DFL if self.previous is None else self.previous  # None: set outside Python
        signal.signal(signal.SIGINT, previous)
        if not self.pending:
            return
        if callable(previous):  # Python's default_int_handler raises KeyboardInterrupt
            previous(signal.SIGINT, None)
        elif previous == signal.SIG_DFL:  # the interrupt ends the process, as it would have
            os.kill(os.getpid(), signal.SIGINT)
