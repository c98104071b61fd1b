"""Sealed files: what the book reads from disk is trusted only once it is checked whole.

:func:`load_trusted` reads a checkpoint with ``torch.load(weights_only=True)`` and says plainly when a
file is not one this book trusts; :func:`check_finite_weights` refuses NaN or infinite weights, and
:func:`check_plain` a config or metadata that such a load would refuse once the file is written;
:func:`seal` stamps a checkpoint's data with a SHA-256 checksum of everything in it (tensors, config,
metadata) and :func:`check_seal` refuses a file whose contents no longer match it (a flipped byte
inside a tensor loads without complaint from torch); :func:`check_stored` and :func:`check_shapes` check
what a file declares before it is used; :func:`check_run_file` finds the checkpoint of a named run.
The checkpoint format that uses them is :mod:`attnmarl.files.checkpoint`.
"""
from __future__ import annotations

import hashlib
import os
import pickle
import re
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:  # torch is imported only where a check needs it: attnmarl.envs stays free of it
    from torch import Tensor

from ..checks import check_finite, nested_tensors
from ..devices import check_values
from .atomic import MissingFileError

__all__ = ["load_trusted", "check_archive", "check_finite_weights", "check_plain", "HASH_CHUNK_BYTES", "seal",
           "check_stored", "check_shapes", "check_seal", "check_run_file"]


def load_trusted(path: str | Path, what: str) -> Any:
    """``torch.load(path, weights_only=True)`` on the CPU, with errors that say what is wrong with the file.

    A missing file raises :class:`MissingFileError` (a ``FileNotFoundError`` and a ``ValueError``), a
    folder or a file this process may not read ``ValueError``, each naming the path. A file that
    ``weights_only`` refuses to unpickle — it holds Python objects other than tensors, numbers, strings
    and containers, the kind that can run code when loaded, or it is not a torch file at all — and a
    damaged or truncated file raise ``ValueError`` saying
    that this is not a loadable ``what``.
    """
    import torch

    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ValueError(f"the path of the {what} must be a file name; got {path!r}")
    try:
        check_archive(path, what)
        return torch.load(path, weights_only=True, map_location="cpu")
    except FileNotFoundError:
        raise MissingFileError(f"{path} does not exist: there is no {what} there") from None
    except IsADirectoryError:
        raise ValueError(f"{path} is a folder; give the path of the {what} (a file) in it") from None
    except PermissionError:
        raise ValueError(f"{path} cannot be read by this process (permission denied); no {what} was loaded") from None
    except pickle.UnpicklingError:
        raise ValueError(f"{path} is not a loadable {what}: it is not a checkpoint this book trusts. Only files "
                         "of plain tensors, numbers, strings and containers are read, and this one holds "
                         "something else (objects that could run code when loaded) or is not a torch file at all, "
                         "so it was not loaded") from None
    except Exception as error:  # a damaged zip archive, an empty or truncated file
        reason = str(error).split(". ")[0] or type(error).__name__
        raise ValueError(f"{path} is not a loadable {what}: the file is empty, truncated or damaged "
                         f"({reason})") from None


def check_archive(path: str | Path, what: str) -> None:
    """Refuse, before a byte of it is decompressed or read into a tensor, an archive that ``torch.save`` did not
    write: ``torch.save`` stores every entry of its zip file as it is (``ZIP_STORED``), so an entry compressed
    with deflate or another method was made by hand — and a few megabytes of deflated zeros would ask
    ``torch.load`` for gigabytes (a compression bomb) — and no stored entry can hold more bytes than the whole
    file. Reads the zip's central directory only. A file that is not a zip archive at all is left to
    ``torch.load``, which refuses it as no checkpoint (:func:`load_trusted`)."""
    try:
        archive = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        return
    with archive:
        entries = archive.infolist()
    size = os.path.getsize(path)
    for entry in entries:
        if entry.compress_type != zipfile.ZIP_STORED:
            raise ValueError(f"{path} is not a loadable {what}: its entry {entry.filename!r} is compressed "
                             f"(zip method {entry.compress_type}), which torch.save never does, so the file was made "
                             "or changed by hand; it is refused before anything in it is decompressed")
        if entry.file_size > size:
            raise ValueError(f"{path} is not a loadable {what}: its entry {entry.filename!r} declares "
                             f"{entry.file_size:,} bytes in a file of {size:,}, so the file is damaged or was "
                             "made by hand; it is refused before anything in it is read")


def check_finite_weights(path: str | Path, state: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` if a checkpoint's state dict holds a non-tensor, a tensor that is not float32 (the
    dtype of every network here: torch's ``load_state_dict`` would silently convert integer or half-precision
    weights) or a NaN or infinite weight (a diverged run must not load and play as if it were trained)."""
    import torch

    for key, tensor in state.items():
        if not isinstance(tensor, torch.Tensor):
            raise ValueError(f"{path}: state_dict entry {key!r} is a {type(tensor).__name__}, not a tensor")
        if tensor.dtype != torch.float32:
            raise ValueError(f"{path}: state_dict entry {key!r} has dtype {tensor.dtype}; the networks' weights are "
                             "torch.float32, and loading would convert them silently")
        try:
            check_finite(key, tensor)
        except ValueError as error:
            raise ValueError(f"{path} holds non-finite weights: {error}") from None


_PLAIN = (str, int, float, bool, type(None))
"""The scalars a checkpoint's config and metadata may hold, exactly (numpy's ``np.float64`` is a ``float`` to
Python, but ``torch.load(weights_only=True)`` refuses to unpickle it)."""


def check_plain(name: str, value: Any) -> None:
    """Raise ``ValueError`` naming the entry unless ``value`` is plain data that ``torch.load(weights_only=True)``
    reads back: str, int, float, bool and None (of exactly those types), tensors, and lists, tuples and dicts of
    them. Checked before a checkpoint is written: a numpy number or any other object in its metadata would be
    saved without complaint and then refused by every load, the run's weights with it."""
    import torch

    if isinstance(value, torch.Tensor):
        check_values(name, value, "a checkpoint of it would hold no numbers, and every load would refuse it; give "
                                  "a tensor with values (on cpu or cuda)")
        return
    if type(value) in _PLAIN:
        return
    if isinstance(value, (list, tuple)):
        for i, item in enumerate(value):
            check_plain(f"{name}[{i}]", item)
    elif type(value) is dict:
        for key, item in value.items():
            if type(key) not in _PLAIN:
                raise ValueError(f"{name} has the key {key!r} of type {type(key).__name__}; a checkpoint holds plain "
                                 "data only, with strings or numbers as keys")
            check_plain(f"{name}[{key!r}]", item)
    else:
        hint = " (convert it with float() or int())" if isinstance(value, (np.generic, np.ndarray)) else ""
        raise ValueError(f"{name} is {value!r:.60} of type {type(value).__name__}{hint}; a checkpoint holds plain data "
                         "only (str, int, float, bool, None, tensors, lists and dicts of them), else torch.load("
                         "weights_only=True) would refuse the file once written")


HASH_CHUNK_BYTES = 2**24
"""The most bytes of a tensor that :func:`seal` and :func:`check_seal` copy at once to hash it (16 MB): a tensor
whose entries are not laid out in order is hashed piece by piece, never copied whole."""


def _tensor_bytes(tensor: Tensor) -> Iterable[Any]:
    """The bytes of ``tensor``'s entries in C order, as numpy views of at most :data:`HASH_CHUNK_BYTES` each: a
    contiguous tensor is read in place; any other is copied a piece of rows at a time."""
    import torch

    if tensor.is_contiguous() or tensor.dim() == 0 or tensor.numel() * tensor.element_size() <= HASH_CHUNK_BYTES:
        flat = tensor.contiguous().reshape(-1).view(torch.uint8).numpy()
        for start in range(0, flat.size, HASH_CHUNK_BYTES):
            yield flat[start:start + HASH_CHUNK_BYTES]
        return
    rows = max(1, HASH_CHUNK_BYTES // max(1, tensor[0].numel() * tensor.element_size()))
    for piece in tensor.split(rows):
        yield from _tensor_bytes(piece[0] if piece.shape[0] == 1 else piece)


def _feed(hasher: Any, value: Any) -> None:
    """Feed ``value`` to ``hasher`` in a canonical form: dicts by sorted key, tensors by dtype, shape and
    bytes (:func:`_tensor_bytes`, in bounded pieces), anything else by type and ``repr`` (exact for the str, int,
    float, bool and None a checkpoint holds)."""
    import torch

    if isinstance(value, torch.Tensor):
        tensor = value.detach().cpu()
        hasher.update(f"T{tensor.dtype}{tuple(value.shape)}:".encode())
        for chunk in _tensor_bytes(tensor):
            hasher.update(chunk)
    elif isinstance(value, Mapping):
        hasher.update(b"{")
        for key in sorted(value, key=repr):
            _feed(hasher, key)
            _feed(hasher, value[key])
        hasher.update(b"}")
    elif isinstance(value, (list, tuple)):
        hasher.update(b"[")
        for item in value:
            _feed(hasher, item)
        hasher.update(b"]")
    else:
        hasher.update(f"{type(value).__name__}:{value!r};".encode())


def _checksum(data: Mapping[str, Any]) -> str:
    hasher = hashlib.sha256()
    _feed(hasher, {key: value for key, value in data.items() if key != "checksum"})
    return "sha256:" + hasher.hexdigest()


def seal(data: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` (a checkpoint's plain data) with a ``"checksum"``: the SHA-256 of all the rest, tensors
    included, which :func:`check_seal` recomputes when the file is read back. ``ValueError`` for a tensor on the
    ``meta`` device (:func:`check_values`): it has no bytes to hash."""
    check_values("the data to seal", data, "it has no bytes to hash; seal tensors with values (on cpu or cuda)")
    return {**data, "checksum": _checksum(data)}


def check_stored(path: str | Path, data: Any, what: str) -> None:
    """Raise ``ValueError`` if a tensor read from ``path`` declares more entries than its file stores: a view
    whose entries overlap (stride 0: one stored number read as a billion) is what no saved weight is, and
    hashing, checking or loading it would allocate gigabytes for a file of a few kilobytes. Checked before
    anything reads the entries (:func:`check_seal` calls it first), so such a file is refused at once. A tensor on
    the ``meta`` device (saved from a network there) stores no entries at all, and is refused first
    (:func:`check_values`)."""
    check_values(f"{path} is not a loadable {what}", data, "the file was saved from a network on the meta "
                 "device, so it holds no weights; load a file saved from weights on cpu or cuda")
    total, storages = 0, {}
    for name, tensor in nested_tensors(data, ""):
        declared = tensor.numel() * tensor.element_size()
        storage = tensor.untyped_storage()
        stored = storage.nbytes() - tensor.storage_offset() * tensor.element_size()
        total += declared
        storages[storage.data_ptr(), storage.nbytes()] = storage.nbytes()
        if declared > stored:
            raise ValueError(f"{path} is not a loadable {what}: {name or 'its tensor'} declares {tensor.numel():,} "
                             f"numbers (shape {tuple(tensor.shape)}, strides {tensor.stride()}) but the file stores "
                             f"{max(stored, 0) // tensor.element_size():,} for it, so its entries overlap (a stride-0 "
                             "view); a saved weight stores every entry, so the file was made or changed by hand and "
                             "is refused before its checksum is computed")
    if total > sum(storages.values()):  # each tensor fits its storage, but many tensors read the same numbers
        raise ValueError(f"{path} is not a loadable {what}: its tensors declare {total:,} bytes of entries over "
                         f"{sum(storages.values()):,} bytes stored, so several of them read the same stored numbers; "
                         "a saved checkpoint stores each weight on its own, so the file was made or changed by hand "
                         "and is refused before its checksum is computed")


def check_shapes(path: str | Path, state: Mapping[str, Any], expected: Mapping[str, tuple[int, ...]]) -> None:
    """Raise ``ValueError`` unless the state dict ``state`` read from ``path`` holds exactly the weights ``expected``
    (names and shapes: those of the agent its own config builds), naming the first few that differ."""
    given = {name: tuple(tensor.shape) if hasattr(tensor, "shape") else type(tensor).__name__
             for name, tensor in state.items()}
    if given != dict(expected):
        differ = sorted(name for name in given.keys() | expected.keys() if given.get(name) != expected.get(name))
        listed = "; ".join(f"{name}: file {given.get(name, 'none')}, config {expected.get(name, 'none')}"
                           for name in differ[:4]) + (f"; and {len(differ) - 4} more" if len(differ) > 4 else "")
        raise ValueError(f"{path}: the weights do not fit the architecture of its own config — {len(differ)} "
                         f"differ in name or shape: {listed}")


def check_seal(path: str | Path, data: Mapping[str, Any], what: str) -> None:
    """Raise ``ValueError`` unless ``data``, as read from ``path``, carries the checksum of its contents:
    a file changed after it was saved (a flipped byte in a weight, say) is refused, not played. A tensor that
    declares more entries than the file stores is refused first (:func:`check_stored`), and the tensors are
    hashed in bounded pieces (:data:`HASH_CHUNK_BYTES`), so refusing a hostile file stays cheap."""
    check_stored(path, data, what)
    stored = data.get("checksum")
    if not isinstance(stored, str):
        raise ValueError(f"{path} is a {what} without a checksum (saved before attnmarl's checkpoints carried "
                         "one), so damage to its weights could not be detected and it is not loaded; if you "
                         "trust the file, attnmarl.checkpoints.seal_checkpoint(path) adds one")
    if _checksum(data) != stored:
        raise ValueError(f"{path} is a damaged {what}: its contents no longer match the checksum stored when it "
                         "was saved (a changed byte in a weight or setting), so it is not loaded; restore the "
                         "file or train it again")


def check_run_file(path: str | Path, run: str, seed: int) -> Path:
    """``path``, the checkpoint of ``--run run --seeds seed``, if it exists; else ``ValueError`` naming both
    options and listing the runs and seeds that the folder does hold (the first 30)."""
    path = Path(path)
    if path.is_file():
        return path
    held = sorted(p.name.removesuffix(".pt") for p in path.parent.glob("*-seed*.pt")) if path.parent.is_dir() else []
    listed = (", ".join(held[:30]) + (f" and {len(held) - 30} more" if len(held) > 30 else "")) if held else "none"
    hint = "; give --run without its '-seedS.pt' (--seeds adds it)" if re.search(r"-seed\d+(\.pt)?$", run) else ""
    raise ValueError(f"--run {run} with --seeds {seed}: there is no {path}; the runs (NAME-seedS) in "
                     f"{path.parent} are: {listed}{hint}")
