"""Files that survive interruption.

:func:`check_writable_folder` and :func:`check_writable_file` fail before work whose results could not be
saved, :func:`save_files` and :func:`save_result` keep results whose files could not be written, and
:func:`write_atomically` writes each file to a temporary file in the same folder and renames it over the
old one only once it is complete, so a killed process leaves either the old file or the new one, never
half of one (a folder as a target, a missing folder or a file named twice is refused before anything is
written); :func:`write_json_atomically` does so for one JSON file.
"""
from __future__ import annotations

import base64
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

if TYPE_CHECKING:  # torch is imported only where a check needs it: attnmarl.envs stays free of it
    pass

from ..checks import check_bool
from ..interrupt import WRITTEN, HeldInterrupt

__all__ = ["MissingFileError", "FolderGivenError", "check_writable_folder", "check_new_files", "check_writable_file",
           "save_files", "save_result", "write_atomically", "write_json_atomically"]


class MissingFileError(FileNotFoundError, ValueError):
    """A file that is not there, named in the package's words: a ``FileNotFoundError`` for code that looks
    for one, and a ``ValueError`` (bad input: a path to nothing) for everything that catches those."""


class FolderGivenError(IsADirectoryError, ValueError):
    """A folder given where a file is to be written: an ``IsADirectoryError`` for code that handles failed writes
    (:func:`save_files` keeps the results elsewhere), and a ``ValueError`` (bad input) for everything else."""


def check_writable_folder(folder: str | Path, name: str = "out") -> Path:
    """Create ``folder`` if needed and make sure a file can be written in it — before hours of training
    whose results could not be saved. Raises ``ValueError`` naming ``name`` and the reason."""
    if not isinstance(folder, (str, os.PathLike)) or not str(folder).strip():
        raise ValueError(f"{name} must name a folder; got {folder!r}")
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{name} = {str(folder)!r} is a file, not a folder; give a folder to write in")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as error:
        raise ValueError(f"{name} = {str(folder)!r} is not a folder this process can write to: "
                         f"{error.strerror or error}") from None
    return folder


def check_new_files(paths: Iterable[str | Path], replace: bool, name: str = "--out",
                    option: str = "--replace") -> list[Path]:
    """The files among ``paths`` that exist already. Unless ``replace``, an existing one is refused with a
    ``ValueError`` naming it, so that a new result never silently replaces an older one (``option`` is
    how the caller replaces on purpose)."""
    existing = [Path(path) for path in paths if Path(path).exists()]
    if existing and not check_bool("replace", replace):
        listed = ", ".join(repr(str(path)) for path in existing)
        raise ValueError(f"{name} would replace {listed}, which exists already; choose another {name}, or "
                         f"pass {option} to replace it on purpose")
    return existing


def check_writable_file(path: str | Path, name: str = "--out", replace: bool = True) -> Path:
    """``path`` as a ``Path`` if a file can be written there: not empty, not a folder, in a folder this
    process can write to (created if needed), and — unless ``replace`` — not an existing file
    (:func:`check_new_files`). Check it before the work whose result the file will hold."""
    if not isinstance(path, (str, os.PathLike)) or not str(path).strip():
        raise ValueError(f"{name} is empty; give the path of the file to write")
    path = Path(path)
    if path.is_dir():
        raise ValueError(f"{name} = {str(path)!r} is a folder; give the path of a file to write, for example "
                         f"{str(path / 'result.json')!r}")
    check_writable_folder(path.parent, f"the folder of {name}")
    check_new_files([path], replace, name)
    return path


def save_files(files: Mapping[str | Path, bytes], name: str = "--out") -> None:
    """Write a set of files as one unit (:func:`write_atomically`, in the order given) and never lose
    them: if the write fails (a full disk, a folder removed meanwhile), the same files go to a new folder
    in the temporary folder instead — or, failing that too, to standard error (binary ones in base64) — and
    ``OSError`` says where, so that the work that computed them need not be done again."""
    try:
        write_atomically({path: (lambda handle, data=data: handle.write(data)) for path, data in files.items()})
        return
    except OSError as error:
        reason = error.strerror or str(error)
    targets = ", ".join(repr(str(path)) for path in files)
    kept = None
    try:
        kept = Path(tempfile.mkdtemp(prefix="attnmarl-kept-"))
        for path, data in files.items():
            (kept / Path(path).name).write_bytes(data)
        where = f"the results are kept in {kept}"
    except OSError:
        if kept is not None:  # a half-kept folder would look like the results
            shutil.rmtree(kept, ignore_errors=True)
        sys.stderr.write(_printable(files))
        where = ("the result was printed to standard error above" if len(files) == 1 and _text(files) else
                 "every file was printed to standard error above, each after a line '==> NAME <==' (binary files "
                 "as base64: decode them with `base64 -d`)")
    raise OSError(f"could not write {name} = {targets} ({reason}); {where}")


def _text(files: Mapping[str | Path, bytes]) -> bool:
    """True if every file is UTF-8 text."""
    try:
        for data in files.values():
            data.decode()
    except UnicodeDecodeError:
        return False
    return True


def _printable(files: Mapping[str | Path, bytes]) -> str:
    """The files as text for standard error, the last place left to keep them: one text file as it is; else
    each after a line naming it, a binary one (a checkpoint) in base64, so that none is lost or garbled."""
    if len(files) == 1 and _text(files):
        return next(iter(files.values())).decode()
    parts = []
    for path, data in files.items():
        if _text({path: data}):
            header, body = f"==> {Path(path).name} <==", data.decode()
        else:
            header, body = f"==> {Path(path).name} (base64) <==", base64.encodebytes(data).decode()
        parts.append(f"{header}\n{body}" + ("" if body.endswith("\n") else "\n"))
    return "".join(parts)


def save_result(path: str | Path, data: Any, name: str = "--out") -> None:
    """:func:`save_files` for the JSON result (indented by one space) of a long computation."""
    save_files({path: (json.dumps(data, indent=1) + "\n").encode()}, name)


def write_atomically(files: Mapping[str | Path, Callable[[BinaryIO], None]]) -> None:
    """Write several files so that an interruption never leaves half of one.

    Each ``write(handle)`` fills a temporary file in its target's folder (named ``.NAME.*.tmp``, so no
    ``*.pt`` or ``*.json`` pattern matches it), which is flushed to disk; only when every file is
    complete are they renamed over their targets (``os.replace``, atomic on one file system), in the
    order given. Ctrl-C (SIGINT) is held across the renames (:class:`HeldInterrupt`) and raised once they are
    done, so an interrupted write leaves either every old file or every new one, never a mixed set, and the
    files written are recorded in :data:`WRITTEN` (what :func:`run_command` reports). A process killed before
    the renames leaves the old files (and perhaps a ``.tmp`` file, which nothing reads); only a kill that
    cannot be caught (SIGKILL, a power cut) between two renames leaves the first files new and the rest
    old — put last the file that says the others are complete. A target named twice, a folder, or one in a
    folder that does not exist is refused before anything is written (:func:`_check_targets`).
    """
    _check_targets(list(files))
    staged: list[tuple[str, Path]] = []
    mode = 0o666 & ~_umask()  # what open() would have given the file (mkstemp's is 0o600)
    try:
        for target, write in files.items():
            target = Path(target)
            descriptor, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
            staged.append((temporary, target))
            with open(descriptor, "wb") as handle:
                write(handle)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
        with HeldInterrupt():
            for temporary, target in staged:
                os.replace(temporary, target)
                WRITTEN.append(target)
    finally:
        for temporary, _ in staged:
            if os.path.exists(temporary):
                os.remove(temporary)


def _check_targets(targets: list[str | Path]) -> None:
    """Refuse, before anything is written, a set of files that cannot be written as one: a target named twice
    (as ``"a/x"`` and ``Path("a/x")``, say: one would silently replace the other) is a ``ValueError``; a target
    that is a folder (:class:`FolderGivenError`), or whose folder does not exist (:class:`MissingFileError`), an
    ``OSError`` and a ``ValueError`` naming it (not the temporary file's name): :func:`save_files` answers the
    ``OSError`` by keeping the files elsewhere."""
    seen: dict[str, str | Path] = {}
    for target in targets:
        key = os.path.realpath(target)
        if key in seen:
            raise ValueError(f"the files to write name {str(target)!r} twice (also as {str(seen[key])!r}); each file "
                             "of a set is written once")
        seen[key] = target
        path = Path(target)
        if path.is_dir():
            raise FolderGivenError(f"cannot write {str(path)!r}: it is a folder; give the path of a file in it")
        if not path.parent.is_dir():
            raise MissingFileError(f"cannot write {str(path)!r}: its folder {str(path.parent)!r} does not exist "
                                    "(or is not a folder)")


def write_json_atomically(path: str | Path, data: Any) -> None:
    """``data`` as JSON (indented by one space, with a final newline), written by :func:`write_atomically`."""
    text = (json.dumps(data, indent=1) + "\n").encode()
    write_atomically({path: lambda handle: handle.write(text)})


def _umask() -> int:
    """The process's file-creation mask (reading it means setting it, so it is set back at once)."""
    umask = os.umask(0o022)
    os.umask(umask)
    return umask
