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
def sigint_as_found():
    """Every test starts with the SIGINT handler the process started with: a test that runs a command line's
    main in-process may leave its own handler (or SIG_IGN) behind, and the tests of Ctrl-C after it, on the
    same pytest worker, would then test that handler instead of Python's."""
    import signal

    before = signal.getsignal(signal.SIGINT)
    yield
    if signal.getsignal(signal.SIGINT) is not before:
        signal.signal(signal.SIGINT, before)
