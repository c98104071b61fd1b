import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import pytest
import torch


@pytest.fixture
def one_thread():
    """Small models run fastest on one torch thread (and do not fight other processes for the cores)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


def pytest_collection_modifyitems(items):
    """A module's browser tests listed in its ``BROWSER_TEST_ORDER`` (tests/test_book.py) run page by page, in
    that order on each page, so that the read-only checks of a page share one load of it; every other test
    keeps its place."""
    def ordered(item) -> bool:
        return item.originalname in getattr(getattr(item, "module", None), "BROWSER_TEST_ORDER", ())

    def key(item) -> tuple[str, int]:
        params = item.callspec.params
        page = next(params[name] for name in ("chapter", "page_file", "page") if name in params)
        return page, item.module.BROWSER_TEST_ORDER.index(item.originalname)

    slots = [i for i, item in enumerate(items) if ordered(item)]
    for i, item in zip(slots, sorted((items[i] for i in slots), key=key)):
        items[i] = item


@pytest.fixture(autouse=True)
def python_sigint():
    """Every test runs with Python's own Ctrl-C handler (``KeyboardInterrupt``), as under a terminal or CI, and
    leaves it so. A test suite started in the background by a non-interactive shell (``make test &``) inherits
    SIGINT *ignored*; Python then installs no handler, and neither do the commands the tests start (an ignored
    signal stays ignored across exec), so the tests of Ctrl-C would test nothing. A test that runs a command
    line's main in-process may also leave that command's handler behind for the next test on its worker."""
    import signal

    signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, signal.default_int_handler)
