"""Ids of one type, in and out: every id the schema takes or gives is an ``ID``, the
object's UUID as text (``Node.id``).

Resolvers and inputs keep their ``uuid.UUID`` annotations; the schema maps those, and
``strawberry.ID``, to GraphQL's own ``ID`` (a name graphql-core reserves, so its text is
read here rather than by a scalar of ours). :class:`IdArguments` reads every ``ID`` a
field's arguments hold, at any depth of its input objects and lists, as a UUID before
the field resolves: a malformed one is ``BAD_INPUT`` naming where it was, and the field
(a mutation included) does not run, so nothing changes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

from graphql import (
    GraphQLID,
    GraphQLInputObjectType,
    GraphQLInputType,
    GraphQLList,
    GraphQLNonNull,
    GraphQLResolveInfo,
)
from strawberry.extensions import SchemaExtension
from strawberry.types.scalar import ScalarDefinition

from server.errors import BadInputError

ID_DEFINITION = ScalarDefinition(
    name="ID",
    description=None,
    specified_by_url=None,
    serialize=str,
    parse_value=None,
    parse_literal=None,
    implementation=GraphQLID,
)


def parse_id(value: Any, where: str) -> uuid.UUID:
    """The UUID an id names; BAD_INPUT naming ``where`` for anything else."""
    if isinstance(value, uuid.UUID):
        return value
    if isinstance(value, str):
        try:
            return uuid.UUID(value)
        except ValueError:
            pass
    raise BadInputError(
        f"{where} is not an id: {value!r}; an id is an object's UUID as text, "
        "e.g. 1b4e28ba-2fa1-11d2-883f-0016d3cca427",
        field=where,
    )


def _holds_id(type_: GraphQLInputType, seen: set[str]) -> bool:
    while isinstance(type_, GraphQLNonNull | GraphQLList):
        type_ = type_.of_type
    if type_ is GraphQLID:
        return True
    if isinstance(type_, GraphQLInputObjectType) and type_.name not in seen:
        seen.add(type_.name)
        return any(_holds_id(f.type, seen) for f in type_.fields.values())
    return False


def _read(value: Any, type_: GraphQLInputType, where: str) -> Any:
    """``value`` with every ID under ``type_`` read as a UUID."""
    if value is None:
        return None
    if isinstance(type_, GraphQLNonNull):
        return _read(value, type_.of_type, where)
    if isinstance(type_, GraphQLList):
        items = value if isinstance(value, list) else [value]
        return [_read(v, type_.of_type, f"{where}[{i}]") for i, v in enumerate(items)]
    if type_ is GraphQLID:
        return parse_id(value, where)
    if isinstance(type_, GraphQLInputObjectType) and isinstance(value, dict):
        fields = type_.fields
        return {
            k: _read(v, fields[k].type, f"{where}.{k}" if where else k) if k in fields else v
            for k, v in value.items()
        }
    return value


class IdArguments(SchemaExtension):
    """Reads the ids of every field's arguments as UUIDs before the field resolves."""

    _plans: dict[tuple[str, str], tuple[str, ...]] = {}

    def _plan(self, info: GraphQLResolveInfo[Any]) -> tuple[str, ...]:
        """The arguments of the field that hold an id (cached per field). An
        introspection field (``__type``) is none of the type's fields: it holds none."""
        key = (info.parent_type.name, info.field_name)
        plan = self._plans.get(key)
        if plan is None:
            field = info.parent_type.fields.get(info.field_name)
            arguments = field.args if field is not None else {}
            plan = tuple(n for n, a in arguments.items() if _holds_id(a.type, set()))
            self._plans[key] = plan
        return plan

    def resolve(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Any],
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        plan = self._plan(info) if kwargs else ()
        if plan:
            arguments = info.parent_type.fields[info.field_name].args
            for name in plan:
                if name in kwargs:
                    # a mutation's one input object stands for its arguments: its fields
                    # are named from it (turnId, events[0].toolExecutionId)
                    kwargs[name] = _read(
                        kwargs[name], arguments[name].type, "" if name == "input" else name
                    )
        return _next(root, info, *args, **kwargs)
