"""``python -m attnmarl.train --compile``: the training networks run through ``torch.compile``.

The same networks and the same numbers (to float rounding) after a one-off compile; the compiled code is
C++ that PyTorch's inductor builds, so it needs a C++ compiler. Whether it is faster depends on the
machine: on the book's 2-core CPU it was not (``make bench``, compile table, and the benchmarks
appendix), which is why it is off by default.
"""
from __future__ import annotations

from torch import nn

__all__ = ["check_compiler", "compile_in_place"]


def check_compiler() -> None:
    """Raise ``ValueError`` if ``torch.compile`` has no C++ compiler to build CPU code with."""
    try:
        from torch._inductor.cpp_builder import get_cpp_compiler

        get_cpp_compiler()
    except Exception as error:  # torch raises its own types here, which vary between versions
        raise ValueError(
            f"--compile needs a C++ compiler for torch.compile on the CPU, and none was found ({error}). "
            "Install one (g++ or clang++, e.g. `apt install g++`) or train without --compile."
        ) from None


def compile_in_place(*modules: nn.Module) -> None:
    """Compile each module's forward in place (``nn.Module.compile``): its parameters, ``state_dict``
    and so its checkpoints stay exactly as without compiling."""
    check_compiler()
    for module in modules:
        module.compile()
