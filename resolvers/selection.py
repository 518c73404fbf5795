"""A mutation's answer is authorized whole before the mutation writes (R70, R71;
docs/security.md, "Ownership"): the grants every object its selection may show needs are
decided first, so no mutation commits while its answer reports FORBIDDEN on a field the
caller asked for.

What a selection may show is read from the schema, not from the data: each object type
that wraps a row needs the grants of the row's kind (:mod:`resolvers.kinds`; a row of no
kind, such as a principal, an admin), and a field with a permission class of a resource
(``Agent.sessions``, ``Agent.memoryRecords``) that resource. The objects a payload that
answers its mutation's own row (:class:`resolvers.types.base.MutationResult`) names are
let through, as the access gate lets them through; what they lead to is not. All of it
belongs to the one agent the mutation acts on (nothing links across agents, R10), so
the ids a nested field of the answer names (``agent { memoryRecords(asOf: {turnId}) }``)
are checked against that agent here too, before the write, as the access gate checks
them when the field runs (:func:`resolvers.ownership.check_on`).
"""

from __future__ import annotations

import types
import typing
from collections.abc import Iterator
from typing import Any

from graphql import (
    FieldNode,
    FragmentDefinitionNode,
    FragmentSpreadNode,
    GraphQLObjectType,
    GraphQLResolveInfo,
    GraphQLSchema,
    InlineFragmentNode,
    SelectionSetNode,
    is_abstract_type,
)

from resolvers.context import Context
from resolvers.grants import Resource, caller_of, decide, decide_in
from resolvers.id_fields import arguments_at
from resolvers.kinds import BY_MODEL, Kind
from resolvers.ownership import Acting, check_on, takes_ids
from resolvers.types.base import MutationResult
from server.errors import ForbiddenError

ADMIN = "admin"  # a row of no kind: admins only (resolvers/gate.py)
Need = Resource | str

_TYPES: dict[str, tuple[Need, ...]] = {}


def _origin(type_: GraphQLObjectType) -> Any:
    definition = (type_.extensions or {}).get("strawberry-definition")
    return getattr(definition, "origin", None)


def type_needs(type_: GraphQLObjectType) -> tuple[Need, ...]:
    """What reading an object of ``type_`` needs: from the row it wraps."""
    if type_.name not in _TYPES:
        origin = _origin(type_)
        hint = None
        if origin is not None and any(
            "row" in vars(k).get("__annotations__", {}) for k in origin.__mro__
        ):
            hint = typing.get_type_hints(origin, include_extras=True).get("row")
        model = typing.get_args(hint)[0] if typing.get_origin(hint) is typing.Annotated else hint
        # a type may wrap a model's row or its plain row (server/models/rows.py): one kind
        rows = typing.get_args(model) if isinstance(model, types.UnionType) else (model,)
        kind = next((BY_MODEL[row] for row in rows if row in BY_MODEL), None)
        if kind is not None:
            needs: tuple[Need, ...] = kind.resources(memory=kind is Kind.OUTPUT_USE)
        elif any(hasattr(row, "__table__") for row in rows):
            needs = (ADMIN,)
        else:
            needs = ()
        _TYPES[type_.name] = needs
    return _TYPES[type_.name]


def _field_needs(type_: Any, name: str) -> Iterator[Need]:
    definition = type_.fields[name].extensions.get("strawberry-definition")
    for permission in getattr(definition, "permission_classes", None) or ():
        resource = getattr(permission, "resource", None)
        if isinstance(resource, Resource):
            yield resource


def _named(type_: Any) -> Any:
    while hasattr(type_, "of_type"):
        type_ = type_.of_type
    return type_


IdField = tuple[GraphQLObjectType, FieldNode]  # a field of the selection that takes ids


def _walk(
    schema: GraphQLSchema,
    parent: Any,
    selections: SelectionSetNode,
    fragments: dict[str, FragmentDefinitionNode],
    out: set[Need],
    ids: list[IdField],
) -> None:
    origin = _origin(parent) if isinstance(parent, GraphQLObjectType) else None
    let_through = isinstance(origin, type) and issubclass(origin, MutationResult)
    for selection in selections.selections:
        if isinstance(selection, FieldNode):
            name = selection.name.value
            if name.startswith("__"):
                continue
            out.update(_field_needs(parent, name))
            field = parent.fields[name]
            if field.args and takes_ids(parent.name, name, field):
                ids.append((parent, selection))
            named = _named(parent.fields[name].type)
            types = schema.get_possible_types(named) if is_abstract_type(named) else [named]
            for type_ in types:
                if isinstance(type_, GraphQLObjectType):
                    if not let_through:
                        out.update(type_needs(type_))
                    if selection.selection_set is not None:
                        _walk(schema, type_, selection.selection_set, fragments, out, ids)
        else:
            fragment: Any = (
                fragments.get(selection.name.value)
                if isinstance(selection, FragmentSpreadNode)
                else selection
            )
            if not isinstance(fragment, InlineFragmentNode | FragmentDefinitionNode):
                continue
            condition = fragment.type_condition
            narrowed = schema.get_type(condition.name.value) if condition is not None else None
            _walk(schema, narrowed or parent, fragment.selection_set, fragments, out, ids)


def selection_needs(info: GraphQLResolveInfo[Any]) -> tuple[set[Need], list[IdField]]:
    """Every grant the field's selection may need, read from the schema, and the fields
    in it that take ids."""
    out: set[Need] = set()
    ids: list[IdField] = []
    named = _named(info.return_type)
    for node in info.field_nodes:
        if node.selection_set is not None:
            _walk(info.schema, named, node.selection_set, info.fragments, out, ids)
    return out, ids


async def require_selection(
    context: Context, info: GraphQLResolveInfo[Any], acting: Acting | None, namespace: str | None
) -> None:
    """FORBIDDEN, before the mutation runs, when its answer would show what the caller
    may not read. ``acting``: the agent the mutation acts on; else ``namespace``, where
    it creates one."""
    needs, ids = selection_needs(info)
    for parent, node in ids:
        field = parent.fields[node.name.value]
        values = arguments_at(field, node, info.variable_values)
        agent_id = acting.agent_id if acting is not None else None
        await check_on(context, agent_id, parent.name, node.name.value, field, values)
    if not needs:
        return
    caller = caller_of(context)
    if acting is not None and caller.is_agent(agent_id=acting.agent_id, namespace=acting.namespace):
        return  # the agent itself reads everything of its own (R70)
    if ADMIN in needs and not caller.admin:
        raise ForbiddenError("not allowed: this answer shows what only admins read")
    for need in sorted((n for n in needs if isinstance(n, Resource)), key=lambda r: r.value):
        if acting is not None:
            decision = await decide(context, need, acting.agent_id, acting.namespace)
        elif namespace is not None:
            decision = decide_in(context, need, namespace)
        else:
            return  # names no agent: the mutation refuses it before writing (NOT_FOUND)
        if not decision.allowed:
            raise ForbiddenError(
                f"not allowed: {decision.reason}, which the answer asks for; nothing was done"
            )
