"""docs/architecture.md names where each rule lives and a request's path through the
modules: every module and function it names exists, so the map cannot drift from the
code it describes."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "architecture.md"
SECTIONS = ("## Where each rule lives", "## A request's path")


def _section(text: str, title: str) -> str:
    start = text.index(title)
    end = text.find("\n## ", start + len(title))
    return text[start : end if end >= 0 else len(text)]


def _module(name: str) -> Path | None:
    """A path as the doc writes it: from the root, or below server/."""
    for base in (ROOT, ROOT / "server"):
        if (base / name).is_file():
            return base / name
    return None


@cache
def _names(path: Path) -> frozenset[str]:
    """Top-level names of a module, and its classes' members, alone and as
    ``Class.member``."""
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
            if isinstance(node, ast.ClassDef):
                for member in node.body:
                    if isinstance(member, ast.FunctionDef | ast.AsyncFunctionDef):
                        # a resolver is a method: the doc names it alone, or with its class
                        out.update((member.name, f"{node.name}.{member.name}"))
                    elif isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name):
                        out.add(f"{node.name}.{member.target.id}")
        elif isinstance(node, ast.Assign):
            out.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, ast.ImportFrom):
            out.update(a.asname or a.name for a in node.names)
    return frozenset(out)


def _text() -> str:
    text = DOC.read_text()
    return "\n".join(_section(text, title) for title in SECTIONS)


# `path.py` (`a`, `b`, ...) in the table; `path.py` `a` or `path.a` in the paths.
_PATH = re.compile(
    r"`((?:server/|resolvers/|services/|storage/|domain/|memory_search/)?[\w/]+\.py)`"
)
_LISTED = re.compile(r"`([\w/]+\.py)` \(([^)]*)\)")
_CALLED = re.compile(r"`([\w/]+\.py)` `([\w.]+)`")
_DOTTED = re.compile(r"`((?:services|storage|domain|resolvers|memory_search)/\w+)\.(?!py`)(\w+)`")


def test_every_module_the_map_names_exists() -> None:
    missing = sorted({p for p in _PATH.findall(_text()) if _module(p) is None})
    assert not missing, f"docs/architecture.md names modules that do not exist: {missing}"


def _claims() -> list[tuple[str, str]]:
    text = _text()
    claims: list[tuple[str, str]] = []
    for path, names in _LISTED.findall(text):
        claims += [(path, n) for n in re.findall(r"`([\w.]+)`", names)]
    claims += _CALLED.findall(text)
    claims += [(f"{m}.py", n) for m, n in _DOTTED.findall(text)]
    return sorted(set(claims))


@pytest.mark.parametrize(("path", "name"), _claims())
def test_every_function_the_map_names_is_in_its_module(path: str, name: str) -> None:
    module = _module(path)
    assert module is not None, f"{path} does not exist"
    assert name in _names(module), f"docs/architecture.md: {path} has no {name}"


def test_the_map_names_enough_to_check() -> None:
    # the patterns above still read the doc: a rewrite of its layout fails here
    assert len(_claims()) >= 20
