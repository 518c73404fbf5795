"""The checked-in ``schema.graphql`` is what the code builds (generated artifacts are tested)."""

from __future__ import annotations

import difflib
from pathlib import Path

import pytest

from resolvers.schema import printed_schema

SCHEMA_FILE = Path(__file__).resolve().parent.parent / "schema.graphql"


def test_schema_graphql_matches_the_printed_schema() -> None:
    """Client generators read schema.graphql; it must not drift from the resolvers."""
    checked_in = SCHEMA_FILE.read_text()
    built = printed_schema()
    diff = "".join(
        difflib.unified_diff(
            checked_in.splitlines(keepends=True),
            built.splitlines(keepends=True),
            fromfile="schema.graphql",
            tofile="printed_schema()",
            n=1,
        )
    )
    if checked_in != built:
        pytest.fail(
            f"schema.graphql is out of date: run `make schema` and commit the result\n"
            f"{diff[:4000]}",
            pytrace=False,
        )
