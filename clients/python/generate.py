"""Generates the typed Python clients from schema.graphql with ariadne-codegen.

    python clients/python/generate.py          # rewrite agent_memory_client{,_async}/
    python clients/python/generate.py --check  # exit 1 when they differ from a fresh run

Run from the checkout's root with the interpreter of the codegen tool environment
(`make client` and `make schema-check` do): ariadne-codegen needs graphql-core 3.2,
the server 3.3, so it lives in a venv of its own (.venv-codegen).
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import difflib
import filecmp
import io
import re
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

import toml
from ariadne_codegen.main import client

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
PACKAGES = {"agent_memory_client": False, "agent_memory_client_async": True}

# Both clients raise the same exceptions: the async package's module re-exports the sync
# package's classes, so `except GraphQLClientGraphQLMultiError` catches either's.
SHARED_EXCEPTIONS = '''"""The exceptions of both clients: agent_memory_client's classes,
re-exported, so that one except clause catches what either client raises."""

from agent_memory_client.exceptions import (
    GraphQLClientError,
    GraphQLClientGraphQLError,
    GraphQLClientGraphQLMultiError,
    GraphQLClientHttpError,
    GraphQLClientInvalidMessageFormat,
    GraphQLClientInvalidResponseError,
    Response,
)

__all__ = [
    "GraphQLClientError",
    "GraphQLClientGraphQLError",
    "GraphQLClientGraphQLMultiError",
    "GraphQLClientHttpError",
    "GraphQLClientInvalidMessageFormat",
    "GraphQLClientInvalidResponseError",
    "Response",
]
'''


# A field's GraphQL name is its alias; type checkers read a pydantic field's `alias` as
# the name its constructor takes (PEP 681), so `BeginTurnInput(session_id=...)` would not
# type-check. As validation and serialization aliases, the names stay the same on the
# wire and the constructors take the snake_case names (the models populate by name).
_ALIAS = re.compile(r'Field\(alias="(\w+)"')


def _finish(package: Path, is_async: bool) -> None:
    """What ariadne-codegen leaves out: the PEP 561 marker that tells type checkers the
    package is typed, constructors that take the fields' own names, and (async) the
    exceptions shared with the sync package."""
    (package / "py.typed").write_text("")
    for module in package.glob("*.py"):
        text = module.read_text()
        named = _ALIAS.sub(r'Field(validation_alias="\1", serialization_alias="\1"', text)
        if named != text:
            module.write_text(named)
    if is_async:
        (package / "exceptions.py").write_text(SHARED_EXCEPTIONS)


def _generate(into: Path) -> None:
    base = toml.load(HERE / "codegen.toml")
    for name, is_async in PACKAGES.items():
        config = copy.deepcopy(base)
        section: dict[str, Any] = config["tool"]["ariadne-codegen"]
        section.update(
            target_package_name=name,
            target_package_path=into.as_posix(),
            async_client=is_async,
        )
        log = io.StringIO()
        try:
            with contextlib.redirect_stdout(log):
                client(config)
        except BaseException:
            sys.stderr.write(log.getvalue())
            raise
        _finish(into / name, is_async)


def _differences(fresh: Path, kept: Path) -> list[str]:
    lines: list[str] = []
    for name in PACKAGES:
        new, old = fresh / name, kept / name
        new_files = {p.relative_to(new) for p in new.rglob("*") if p.is_file()}
        old_files = (
            {
                p.relative_to(old)
                for p in old.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts
            }
            if old.exists()
            else set()
        )
        for rel in sorted(new_files | old_files):
            a, b = old / rel, new / rel
            if a.exists() and b.exists() and filecmp.cmp(a, b, shallow=False):
                continue
            before = a.read_text().splitlines(keepends=True) if a.exists() else []
            after = b.read_text().splitlines(keepends=True) if b.exists() else []
            lines += difflib.unified_diff(before, after, f"{name}/{rel}", f"{name}/{rel} (fresh)")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="fail when the clients drift")
    args = parser.parse_args()
    if Path.cwd().resolve() != ROOT:
        parser.error(f"run from {ROOT}")
    with tempfile.TemporaryDirectory() as tmp:
        fresh = Path(tmp)
        _generate(fresh)
        if args.check:
            diff = _differences(fresh, HERE)
            if diff:
                sys.stdout.writelines(diff)
                print("the generated clients drifted from schema.graphql: run `make client`")
                return 1
            print("the generated clients match schema.graphql")
            return 0
        for name in PACKAGES:
            shutil.rmtree(HERE / name, ignore_errors=True)
            shutil.copytree(fresh / name, HERE / name)
            print(f"generated {(HERE / name).relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
