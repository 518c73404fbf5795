"""Every part of the printed schema is described for its reader: a person in GraphiQL or
the docs of a generated client, who has neither the rules nor the repository's files."""

from __future__ import annotations

import re

import pytest
from graphql import (
    GraphQLEnumType,
    GraphQLInputObjectType,
    GraphQLInterfaceType,
    GraphQLObjectType,
    build_schema,
)

from resolvers.schema import printed_schema

BUILT_IN = {"String", "Int", "Float", "Boolean", "ID"}
# A rule number (R12), a source file or a document of the repository.
INTERNAL = re.compile(r"\bR\d+\b|\.py\b|docs/|DESIGN")


def _described() -> list[tuple[str, str | None]]:
    """Every type, field, argument, input field and enum value, with its description."""
    schema = build_schema(printed_schema())
    found: list[tuple[str, str | None]] = []
    for name, type_ in schema.type_map.items():
        if name.startswith("__") or name in BUILT_IN:
            continue
        found.append((name, type_.description))
        if isinstance(type_, GraphQLObjectType | GraphQLInterfaceType | GraphQLInputObjectType):
            for field_name, field in type_.fields.items():
                found.append((f"{name}.{field_name}", field.description))
                for arg_name, arg in getattr(field, "args", {}).items():
                    found.append((f"{name}.{field_name}({arg_name})", arg.description))
        if isinstance(type_, GraphQLEnumType):
            for value_name, value in type_.values.items():
                found.append((f"{name}.{value_name}", value.description))
    return found


def test_everything_is_described() -> None:
    missing = [where for where, text in _described() if not (text and text.strip())]
    assert missing == [], f"without a description: {', '.join(missing)}"


def test_no_description_names_a_rule_or_a_file() -> None:
    internal = [
        f"{where}: {match.group()}"
        for where, text in _described()
        if text and (match := INTERNAL.search(text))
    ]
    assert internal == [], f"rule numbers or file references: {', '.join(internal)}"


@pytest.mark.parametrize(
    "text", ["See R12.", "in resolvers/gate.py", "docs/history.md", "DESIGN.md says"]
)
def test_the_check_catches_internal_references(text: str) -> None:
    assert INTERNAL.search(text)
