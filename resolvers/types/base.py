"""What every type module uses: fields that show a column or follow a key of the
wrapped row, the shared enums, and Relay-style pages."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from enum import Enum
from typing import Any, Generic, TypeVar

import strawberry
from strawberry.types.lazy_type import LazyType

from resolvers.context import Info
from server.services import reads

N = TypeVar("N")

# the arguments of a connection's page
FIRST = "How many items, from 1 to the server's page size."
AFTER = "The endCursor of the previous page; none for the first page."


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


def later(module: str, name: str) -> Callable[..., Any]:
    """The constructor of the type ``name`` of a later type module (one that imports
    this caller's module), looked up when a resolver first builds one: by then every
    module is loaded. Its annotation is ``Annotated["Name", strawberry.lazy(module)]``."""
    lazy: LazyType[Any, Any] = LazyType(name, module)

    def build(**fields: Any) -> Any:
        return lazy.resolve_type()(**fields)

    return build


@strawberry.enum
class Scope(Enum):
    SESSION = "SESSION"
    AGENT = "AGENT"


@strawberry.enum
class MemoryStatus(Enum):
    ACTIVE = "ACTIVE"
    SUPERSEDED = "SUPERSEDED"
    DELETED = "DELETED"


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


def node_id() -> Any:
    """The ``id`` field of a :class:`Node`: the wrapped row's UUID as text."""
    return column("id", convert=str)


class MutationResult:
    """The payload of a mutation that answers the row it wrote (createAgent, commitTurn,
    ...): the access gate lets its fields through as it let the bare row through before
    the payload wrapped it; the row's own fields are checked as everywhere."""


@strawberry.type
class PageInfo:
    has_next_page: bool
    end_cursor: str | None
    has_previous_page: bool = strawberry.field(
        description="True when the page was read after a cursor: items come before it."
    )
    start_cursor: str | None = strawberry.field(
        description="The first item's cursor; null for an empty page."
    )


@strawberry.type
class Edge(Generic[N]):
    cursor: str
    node: N


@strawberry.type
class Connection(Generic[N]):
    """A Relay-style page. Its total count is a COUNT under the page's own condition, run
    only when asked; the lists whose items are decided one by one (``agents``) are not
    counted, so a count reveals nothing a page hides."""

    edges: list[Edge[N]]
    page_info: PageInfo
    total: strawberry.Private[Callable[[], Awaitable[int]] | None] = None

    @strawberry.field(
        description="How many items the whole list holds, every page together; null for a "
        "list that is not counted."
    )
    async def total_count(self) -> int | None:
        return None if self.total is None else await self.total()

    @classmethod
    def of(cls, page: reads.Page[Any], wrap: Callable[[Any], N]) -> Connection[N]:
        edges = [Edge(cursor=c, node=wrap(item)) for c, item in page.items]
        return cls(
            edges=edges,
            page_info=PageInfo(
                has_next_page=page.has_next,
                end_cursor=edges[-1].cursor if edges else None,
                has_previous_page=page.has_previous,
                start_cursor=edges[0].cursor if edges else None,
            ),
            total=page.total,
        )

    @classmethod
    async def read(
        cls,
        info: Info,
        read: Callable[..., Awaitable[reads.Page[Any]]],
        wrap: Callable[[Any], N],
        **arguments: Any,
    ) -> Connection[N]:
        """The page ``read`` (a ``reads.list_*`` function) gives on the request's session,
        of at most the configured page size."""
        page = await read(info.context.db, maximum=info.context.settings.max_page_size, **arguments)
        return cls.of(page, wrap)
