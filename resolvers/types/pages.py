"""Relay-style pages: the generic ``Connection`` with its edges and page info, and the
``first`` and ``after`` arguments every paged field takes."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Generic, TypeVar

import strawberry

from resolvers.context import Info
from server.services import reads

N = TypeVar("N")

# Descriptions shared by the paged fields.
FIRST = (
    "How many items the page holds at most, from 1 to the server's page size (100 unless "
    "configured otherwise); outside that range the field is BAD_INPUT."
)
AFTER = "The endCursor of the previous page; null or omitted: the first page."

# The arguments themselves, for a paged field's signature: `first: First, after: After = None`.
First = Annotated[int, strawberry.argument(description=FIRST)]
After = Annotated[str | None, strawberry.argument(description=AFTER)]


@strawberry.type(description="Where a page ends, and whether another follows.")
class PageInfo:
    has_next_page: bool = strawberry.field(description="True when a next page exists.")
    end_cursor: str | None = strawberry.field(
        description="The cursor of the page's last item: pass it as `after` for the next "
        "page; null when the page is empty."
    )
    has_previous_page: bool = strawberry.field(
        description="True when the page was read after a cursor: items come before it."
    )
    start_cursor: str | None = strawberry.field(
        description="The first item's cursor; null for an empty page."
    )


@strawberry.type(description="One item of a page, with its cursor.")
class Edge(Generic[N]):
    cursor: str = strawberry.field(
        description="An opaque position: pass it as `after` for the items after this one."
    )
    node: N = strawberry.field(description="The item.")


@strawberry.type(
    description="A page of items, in the order the field states, with where it ends and, "
    "when asked, how many items the whole list holds (totalCount)."
)
class Connection(Generic[N]):
    """A Relay-style page. Its total count is a COUNT under the page's own condition, run
    only when asked; the lists whose items are decided one by one (``agents``) are not
    counted, so a count reveals nothing a page hides."""

    edges: list[Edge[N]] = strawberry.field(description="The page's items, in order.")
    page_info: PageInfo = strawberry.field(description="Where the page ends.")
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


def paged(
    read: Callable[..., Awaitable[reads.Page[Any]]],
    wrap: Callable[[Any], Any],
    *,
    description: str,
    **keys: str,
) -> Any:
    """A paged field of the wrapped row: the page ``read`` gives for ``first`` and
    ``after`` (see :meth:`Connection.read`), each keyword of ``keys`` passed the row's
    attribute it names; its GraphQL type is the field's annotation."""

    async def resolve(root: Any, info: Info, first: First, after: After = None) -> Any:
        of_row = {name: getattr(root.row, attribute) for name, attribute in keys.items()}
        return await Connection.read(info, read, wrap, **of_row, first=first, after=after)

    return strawberry.field(resolver=resolve, description=description)
