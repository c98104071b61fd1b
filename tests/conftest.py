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
