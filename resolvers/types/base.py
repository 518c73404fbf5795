"""What every type module uses: fields that show a column or follow a key of the
wrapped row, the ``Node`` interface, and the pieces the runtime's inputs share. The
shared enums are in :mod:`resolvers.types.enums`, Relay-style pages in
:mod:`resolvers.types.pages`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import strawberry
from strawberry.types.lazy_type import LazyType

from resolvers.context import Info


def column(
    attribute: str | None = None,
    *,
    description: str | None = None,
    convert: Callable[[Any], Any] | None = None,
) -> Any:
    """A field that shows a column of the wrapped row (``attribute``, or the field's own
    Python name), as it is or through ``convert``; its GraphQL type is the field's
    annotation."""

    def resolve(root: Any, info: strawberry.Info) -> Any:
        value = getattr(root.row, attribute or info.python_name)
        return value if convert is None else convert(value)

    return strawberry.field(resolver=resolve, description=description)


def related(
    loader: str,
    attribute: str,
    wrap: Callable[[Any], Any],
    *,
    description: str | None = None,
) -> Any:
    """A field that follows the row's ``attribute`` (a key) through the request's
    dataloader ``loader`` and wraps the row found with ``wrap``; ``None`` where the key
    is (the field's annotation says whether it may be)."""

    async def resolve(root: Any, info: Info) -> Any:
        key = getattr(root.row, attribute)
        if key is None:
            return None
        row = await getattr(info.context.loaders, loader).load(key)
        return None if row is None else wrap(row)

    return strawberry.field(resolver=resolve, description=description)


def listed(
    loader: str,
    wrap: Callable[[Any], Any],
    *,
    description: str | None = None,
    deprecation_reason: str | None = None,
) -> Any:
    """A field that lists the rows the request's dataloader ``loader`` gives for the
    wrapped row's id, in the loader's order, each wrapped with ``wrap``. A list that has
    a paginated twin names it in ``deprecation_reason``."""

    async def resolve(root: Any, info: Info) -> Any:
        rows = await getattr(info.context.loaders, loader).load(root.row.id)
        return [wrap(r) for r in rows]

    return strawberry.field(
        resolver=resolve, description=description, deprecation_reason=deprecation_reason
    )


def paginated_instead(twin: str) -> str:
    """The deprecation reason of a list that can grow without bound and has ``twin``, a
    connection that pages it."""
    return (
        f"Unbounded: use {twin}, which pages the same items (first, after) and counts them "
        "(totalCount)."
    )


def later(module: str, name: str) -> Callable[..., Any]:
    """The constructor of the type ``name`` of a later type module (one that imports
    this caller's module), looked up when a resolver first builds one: by then every
    module is loaded. Its annotation is ``Annotated["Name", strawberry.lazy(module)]``."""
    lazy: LazyType[Any, Any] = LazyType(name, module)

    def build(**fields: Any) -> Any:
        return lazy.resolve_type()(**fields)

    return build


@strawberry.input(
    description="One value of a label the agent declares (harness.memory.labels), by the "
    "label's name. The same shape gives labels to a record and filters records by them."
)
class LabelInput:
    name: str = strawberry.field(description="The label's name, as the agent declares it.")
    value: str = strawberry.field(
        description="The value; a record's label value is 1 to 200 characters."
    )


# Descriptions shared by the inputs of the runtime's mutations.
IDEMPOTENCY_KEY = (
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key "
    "and the same input returns the first call's answer without doing anything again; the "
    "same key with another input is CONFLICT. Null or omitted: no key."
)
TURN_ID = "The open turn the call belongs to."
EXECUTION_ID = (
    "The calling execution (a helper or program of the turn may call the tool); null or "
    "omitted: the turn's own."
)
INVOCATION_ID = "The model call that asked for the tool, if recorded; null or omitted: none."


def idempotency_key() -> Any:
    """The ``idempotencyKey`` field of a runtime mutation's input: null by default."""
    return strawberry.field(default=None, description=IDEMPOTENCY_KEY)


@strawberry.interface(
    name="Node",
    description="An object with a global id: node and nodes read it back by that id.",
)
class Node:
    """Relay's object identification. The global id is the object's UUID as text: the
    same value every input that takes the object's UUID accepts (resolvers/nodes.py)."""

    id: strawberry.ID = strawberry.field(
        description="The object's global id: its UUID, as text; unique across all types."
    )


def node_id(description: str = "The object's id: its UUID, as text.") -> Any:
    """The ``id`` field of a :class:`Node`: the wrapped row's UUID as text."""
    return column("id", convert=str, description=description)


class MutationResult:
    """The payload of a mutation that answers the row it wrote (createAgent, commitTurn,
    ...): the access gate lets its fields through as it let the bare row through before
    the payload wrapped it; the row's own fields are checked as everywhere."""
