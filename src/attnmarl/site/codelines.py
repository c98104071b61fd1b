"""The lines of the package that implement a step of an algorithm box, found in the source itself.

The book states each training algorithm as a numbered box (Algorithm 7.1, MAPPO; 9.1, MADDPG; 10.1,
MAAC) and shows, under each step, the code that does it. The book build reads those lines from the
package source with :func:`locate` (through the ``algocode`` directive of :mod:`attnmarl.site.sphinxext`), so
they cannot drift from the code that runs, and line numbers are the file's own.

A step names what to show by a **target**:

- a marker, the text of a comment ``# Algorithm 7.1, step 4`` in the module: the statement that carries
  it (or, for a comment on a line of its own, the statements that follow it), and the statements after
  it in the same block, up to the next marked statement, a blank line or the end of the block. A compound statement
  (a loop, say) that holds later markers is shown down to the first of them, so that each step shows its
  own lines and no other step's;
- a function, class or method by its qualified name (``gae``, ``MAPPOAgent.act``): its whole definition.
"""
from __future__ import annotations

import ast
import importlib.util
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

MARKER = re.compile(r"#\s*(Algorithm \d+\.\d+, step \d+)\b")
"""A step marker in a comment; group 1 is the target that names it."""


@dataclass(frozen=True)
class CodeLines:
    """Lines ``first`` to ``last`` (1-based, inclusive) of the module file ``path``."""

    path: Path
    first: int
    last: int

    @property
    def text(self) -> str:
        """The lines as they stand in the file, common indentation removed."""
        lines = _read(self.path)[self.first - 1: self.last]
        indent = min(len(line) - len(line.lstrip()) for line in lines if line.strip())
        return "\n".join(line[indent:] for line in lines)

    def label(self, root: Path | None = None) -> str:
        """``algos/mappo.py L592–L612`` (the path relative to ``root``, else to the ``attnmarl`` folder)."""
        base = root if root is not None else module_path("attnmarl").parent
        return f"{self.path.relative_to(base).as_posix()} L{self.first}–L{self.last}"


def module_path(module: str) -> Path:
    """The source file of an importable module (``attnmarl.algos.mappo``), without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or spec.origin is None or not spec.origin.endswith(".py"):
        raise ValueError(f"{module!r} is not a Python module whose source can be shown")
    return Path(spec.origin)


def locate(module: str, target: str) -> CodeLines:
    """The lines of ``module`` that ``target`` names (a step marker or a qualified name; see the module
    docstring). ``ValueError`` if the module has no such marker or definition, or has the marker twice."""
    path = module_path(module)
    tree = _parse(path)
    if MARKER.fullmatch("# " + target):
        return _marked(path, tree, target)
    return _definition(path, tree, target)


def _marked(path: Path, tree: ast.Module, target: str) -> CodeLines:
    marks = _markers(path)
    lines = [line for line, name in marks.items() if name == target]
    if len(lines) != 1:
        where = "no line" if not lines else f"lines {lines}"
        raise ValueError(f"{path.name}: '# {target}' marks {where}; a step must mark exactly one")
    line = lines[0]
    alone = _read(path)[line - 1].lstrip().startswith("#")  # a comment on a line of its own
    body, index = _anchor(tree, line, alone)
    first, last = (line if alone else body[index].lineno), line
    for k in range(index, len(body)):
        statement = body[k]
        if k > index and (any(body[k - 1].end_lineno < n <= statement.lineno for n in marks)
                          or not all(_read(path)[body[k - 1].end_lineno: statement.lineno - 1])):
            break  # the next step starts here, or a blank line ends this one
        inner = [n for n in marks if line < n <= statement.end_lineno]
        if inner:  # a later step inside this statement: show it down to that step
            last = max([statement.lineno] + [s.end_lineno for s in ast.walk(statement)
                                             if isinstance(s, ast.stmt) and s.end_lineno < min(inner)])
            break
        last = statement.end_lineno
    return CodeLines(path, first, last)


def _definition(path: Path, tree: ast.Module, target: str) -> CodeLines:
    scope: list[ast.stmt] = tree.body
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | None = None
    for name in target.split("."):
        node = next((n for n in scope if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                     and n.name == name), None)
        if node is None:
            raise ValueError(f"{path.name} defines no {target!r} (neither a step marker "
                             "'Algorithm C.K, step n' nor a function, class or method)")
        scope = node.body
    assert node is not None
    first = min([node.lineno] + [d.lineno for d in node.decorator_list])
    return CodeLines(path, first, node.end_lineno)


def _anchor(tree: ast.Module, line: int, alone: bool) -> tuple[list[ast.stmt], int]:
    """The statement a marker on ``line`` belongs to, as (its statement list, its index there): the
    outermost statement that starts on the line, or for a comment on a line of its own the next
    statement in the file."""
    found: list[tuple[int, int, list[ast.stmt], int]] = []
    for node in ast.walk(tree):
        for field in ("body", "orelse", "finalbody"):
            body = getattr(node, field, None)
            if isinstance(body, list):
                found += [(s.lineno, s.col_offset, body, k) for k, s in enumerate(body)
                          if isinstance(s, ast.stmt) and (s.lineno > line if alone else s.lineno == line)]
    if not found:
        raise ValueError(f"no statement {'after' if alone else 'starts on'} line {line}")
    _, _, body, index = min(found, key=lambda f: (f[0], f[1]))
    return body, index


@cache
def _read(path: Path) -> list[str]:
    return path.read_text().splitlines()


def _parse(path: Path) -> ast.Module:
    return ast.parse("\n".join(_read(path)) + "\n", filename=str(path))


def _markers(path: Path) -> dict[int, str]:
    """Line number → step named by the marker comment on it."""
    return {k: m.group(1) for k, line in enumerate(_read(path), start=1)
            if (m := MARKER.search(line))}
