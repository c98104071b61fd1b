"""The device a command line, a loader or a network works on (DESIGN §6: every module runs wherever its
input lives).

:func:`check_device` for the device a command line or a loader is asked to use, :func:`module_device` for the
one device a network's weights share, and :func:`check_values` for tensors on the ``meta`` device, which have
no values to save, load or act with.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # torch is imported only where a check needs it: attnmarl.envs stays free of it
    import torch

from .checks import has_values, nested_tensors

__all__ = ["DEVICES", "check_device", "check_values", "module_device"]


DEVICES = ("cpu", "cuda", "auto")
"""The devices a command line trains or plays on: ``auto`` is cuda where torch sees a GPU, else cpu."""


def check_device(device: Any, name: str = "device") -> torch.device:
    """The ``torch.device`` that ``device`` names: one of :data:`DEVICES`, ``"cuda:N"`` or a ``torch.device``
    of type cpu or cuda. ``ValueError`` naming ``name`` for anything else — an int (which torch reads as a GPU's
    number only where it sees one), bytes, ``"meta"``, ``"CPU"``, ``"cpu:1"`` (torch has one CPU device and
    ignores the index) — and for a GPU that torch does not see here (a machine without one, or an index beyond
    the GPUs it has), saying so in one line. ``"cpu:0"`` is ``cpu``."""
    import torch

    if not isinstance(device, (str, torch.device)):
        raise ValueError(f"{name} must be one of {list(DEVICES)}, 'cuda:N' or a torch.device of type cpu or cuda; "
                         f"got {device!r} of type {type(device).__name__}")
    if device == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        resolved = torch.device(device)
    except (RuntimeError, TypeError):
        resolved = None
    if resolved is None or resolved.type not in ("cpu", "cuda"):
        meant = device.strip().lower() if isinstance(device, str) else ""
        hint = (f" (did you mean {meant!r}?)" if meant in DEVICES else
                " (the meta device holds shapes without values: nothing can be trained or played there)"
                if resolved is not None and resolved.type == "meta" else "")
        raise ValueError(f"{name} must be one of {list(DEVICES)}, 'cuda:N' or a torch.device of type cpu or cuda; "
                         f"got {device!r}{hint}")
    if resolved.type == "cpu":
        if resolved.index not in (None, 0):
            raise ValueError(f"{name} {resolved}: torch has one CPU device, and would silently ignore the index "
                             f"{resolved.index}; use cpu")
        return torch.device("cpu")
    if not torch.cuda.is_available():
        raise ValueError(f"{name} {resolved}: torch sees no GPU on this machine (torch.cuda.is_available() is False); "
                         "use cpu, or auto to take a GPU only where there is one")
    count = torch.cuda.device_count()
    if (resolved.index or 0) >= count:
        which = "cuda:0" if count == 1 else f"one of cuda:0 … cuda:{count - 1}"
        raise ValueError(f"{name} {resolved}: torch sees {count} GPU(s) here, numbered from 0; use {which} (or cuda, "
                         "the current one), or cpu")
    return resolved


def check_values(name: str, data: Any, remedy: str) -> None:
    """Raise ``ValueError`` naming the first tensor in ``data`` (a tensor, or nested dicts, lists and tuples of
    them) that has no values: one on torch's ``meta`` device (:func:`has_values`) has a shape, a dtype and a
    device but no entries, so it can be neither saved, hashed, loaded as weights nor read back as numbers (torch
    would fail with "Cannot copy out of meta tensor"). The message starts with ``name`` and ends with ``remedy``."""
    for where, tensor in nested_tensors(data, ""):
        if not has_values(tensor):
            raise ValueError(f"{name}: {where or 'its tensor'} (shape {tuple(tensor.shape)}) is on torch's meta "
                             f"device, which holds shapes but no values; {remedy}")


def module_device(name: str, module: Any) -> torch.device:
    """The one device on which every parameter and buffer of the ``torch.nn.Module`` ``module`` lives (cpu for one
    without any); ``ValueError`` naming ``name`` if they are spread over several devices (torch would fail where one
    meets another, deep inside a layer) or lie on the ``meta`` device (:func:`check_values`: no values to compute
    numbers from)."""
    import torch

    tensors = {**dict(module.named_parameters()), **dict(module.named_buffers())}
    check_values(name, tensors, "load its weights onto cpu or cuda (for example attnmarl.checkpoints.load_agent("
                                "path, device='cpu')) first")
    devices: dict[torch.device, str] = {}
    for where, tensor in tensors.items():
        devices.setdefault(tensor.device, where)
    if len(devices) > 1:
        listed = ", ".join(f"{where} on {device}" for device, where in devices.items())
        raise ValueError(f"{name} is spread over {len(devices)} devices ({listed}): its layers could not meet; move "
                         "all of it to one with .to(device)")
    return next(iter(devices), torch.device("cpu"))
