"""The response gate: one schema extension that checks every field, runtime-only
mutations before they run and every object a field returns before it is sent; memory
in it goes through :mod:`resolvers.redaction`."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from inspect import isawaitable
from typing import Any

from graphql import GraphQLResolveInfo
from strawberry.extensions import SchemaExtension

from resolvers.context import Context
from resolvers.grants import Resource, cached_decision, caller_of, require, resource_of
from resolvers.redaction import (
    PAYLOAD_FIELDS,
    REDACTED,
    carries_memory,
    redacted,
    redacted_arguments,
)
from resolvers.runtime import require_agent_itself
from resolvers.types.base import MutationResult
from server.domain.redaction import is_memory_call
from server.errors import ForbiddenError


def _declares_permissions(info: GraphQLResolveInfo[Any]) -> bool:
    definition = info.parent_type.fields[info.field_name].extensions.get("strawberry-definition")
    return bool(getattr(definition, "permission_classes", None))


def _targets(value: Any) -> list[tuple[Resource, uuid.UUID] | None]:
    items = value if isinstance(value, list) else [value]
    found: list[tuple[Resource, uuid.UUID] | None] = []
    for item in items:
        row = getattr(item, "row", None)
        if row is not None and hasattr(row, "__table__"):
            found.append(resource_of(row))
    return found


async def _checked(context: Context, value: Any, targets: list[Any]) -> Any:
    caller = caller_of(context)
    for target in targets:
        if target is None:
            if not caller.admin:
                raise ForbiddenError("not allowed: admins only")
            continue
        await require(context, *target)
    return value


async def checked(context: Context, value: Any) -> Any:
    """``value`` (an object a field returns) if the caller may read it, else FORBIDDEN:
    the gate's check, for a resolver that returns objects it checks one by one
    (``nodes``)."""
    return await _checked(context, value, _targets(value))


class AccessGate(SchemaExtension):
    """Checks every field: runtime-only mutations before they run, and every object a
    field returns (queries and nested fields) before it is sent."""

    def resolve(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Any],
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        context = info.context
        if info.parent_type.name == "Mutation":
            if _declares_permissions(info):
                return _next(root, info, *args, **kwargs)
            return self._runtime_then(_next, root, info, args, kwargs)
        result = _next(root, info, *args, **kwargs)
        if isinstance(root, MutationResult):  # the mutation's own permission checked it
            return result
        if info.field_name == "arguments" and is_memory_call(getattr(root, "name", None)):
            agent_id = getattr(root, "agent_id", None)
            if agent_id is None:  # a call whose agent is unknown is nobody's to read
                return {"redacted": REDACTED.format(ns="?")}
            return self._after(result, lambda value: redacted_arguments(context, agent_id, value))
        row = getattr(root, "row", None)
        if info.field_name in PAYLOAD_FIELDS and row is not None:
            if carries_memory(row, info.field_name) is False:
                return result
            field = info.field_name
            return self._after(result, lambda value: redacted(context, row, field, value))
        targets = _targets(result) if not isawaitable(result) else None
        if targets == []:
            return result
        if targets is not None and all(
            t is not None and (d := cached_decision(context, *t)) is not None and d.allowed
            for t in targets
        ):
            return result
        return self._after(result, lambda value: _checked(context, value, _targets(value)))

    @staticmethod
    async def _after(result: Any, then: Callable[[Any], Awaitable[Any]]) -> Any:
        value = await result if isawaitable(result) else result
        return await then(value)

    @staticmethod
    async def _runtime_then(
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Any],
        args: Any,
        kwargs: dict[str, Any],
    ) -> Any:
        await require_agent_itself(info.context, info.field_name, kwargs.get("input"))
        result = _next(root, info, *args, **kwargs)
        return await result if isawaitable(result) else result
