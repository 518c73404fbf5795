"""The response gate: one schema extension that checks every field. A root field's
arguments go through :mod:`resolvers.ownership` before it runs (and a mutation's
selection through :mod:`resolvers.selection`), as do the ids a nested field's arguments
name, anchored on the object the field is on; every object a field returns is checked
before it is sent; memory in it goes through :mod:`resolvers.redaction`."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from inspect import isawaitable
from typing import Any

from graphql import GraphQLResolveInfo
from strawberry.extensions import SchemaExtension

from resolvers.context import Context
from resolvers.grants import Resource, cached_decision, caller_of, require
from resolvers.kinds import BY_MODEL, agent_of, needs_of
from resolvers.ownership import check_arguments, check_on, takes_ids
from resolvers.redaction import (
    PAYLOAD_FIELDS,
    REDACTED,
    carries_memory,
    redacted,
    redacted_arguments,
)
from resolvers.selection import require_selection
from resolvers.types.base import MutationResult
from server.domain.redaction import is_memory_call
from server.errors import ForbiddenError


def _targets(value: Any) -> list[tuple[Resource, uuid.UUID] | None]:
    """What reading the objects of ``value`` needs: each resource of each row's agent
    (:mod:`resolvers.kinds`); ``None`` for a row of no kind (admins only)."""
    items = value if isinstance(value, list) else [value]
    found: list[tuple[Resource, uuid.UUID] | None] = []
    for item in items:
        row = getattr(item, "row", None)
        if row is not None and (hasattr(row, "__table__") or type(row) in BY_MODEL):
            needs = needs_of(row)
            found.extend([None] if needs is None else needs)
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


class AccessGate(SchemaExtension):
    """Checks every field: a root field's arguments before it runs (runtime-only
    mutations among them), a mutation's selection before it writes, and every object a
    field returns (queries and nested fields) before it is sent."""

    def resolve(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Any],
        *args: Any,
        **kwargs: Any,
    ) -> Any:
        field = info.parent_type.fields.get(info.field_name)  # None: __typename, __schema
        if field is not None:
            if info.path.prev is None:
                return self._root(_next, root, info, args, kwargs)
            if field.args and takes_ids(info.parent_type.name, info.field_name, field):
                return self._nested(_next, root, info, args, kwargs)
        return self._checked_result(_next(root, info, *args, **kwargs), root, info)

    def _checked_result(self, result: Any, root: Any, info: GraphQLResolveInfo[Any]) -> Any:
        context = info.context
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

    async def _nested(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Any],
        args: Any,
        kwargs: dict[str, Any],
    ) -> Any:
        """A nested field whose arguments take ids: each must be of the agent of the
        object the field is on, and readable (:func:`resolvers.ownership.check_on`)."""
        field = info.parent_type.fields[info.field_name]
        agent_id = agent_of(getattr(root, "row", None))
        await check_on(info.context, agent_id, info.parent_type.name, info.field_name, field, info)
        checked = self._checked_result(_next(root, info, *args, **kwargs), root, info)
        return await checked if isawaitable(checked) else checked

    async def _root(
        self,
        _next: Callable[..., Any],
        root: Any,
        info: GraphQLResolveInfo[Any],
        args: Any,
        kwargs: dict[str, Any],
    ) -> Any:
        acting = await check_arguments(info.context, info)
        if info.parent_type.name == "Mutation":
            # the turn this mutation acts in: its answer shows that turn's staged memory
            info.context.acting_turn = acting.turn_id if acting is not None else None
            namespace = getattr(kwargs.get("input"), "namespace", None)
            await require_selection(info.context, info, acting, namespace)
            result = _next(root, info, *args, **kwargs)
            return await result if isawaitable(result) else result
        checked = self._checked_result(_next(root, info, *args, **kwargs), root, info)
        return await checked if isawaitable(checked) else checked
