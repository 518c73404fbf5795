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


# Closed sets of stored values. A member's value is the value as stored (the CHECK
# constraints of server.models); GraphQL shows its name.


@strawberry.enum(description="Who a memory record is for.")
class Scope(Enum):
    _value_: str  # the stored value

    SESSION = strawberry.enum_value(
        "SESSION", description="The session that wrote it: recalled and searched only there."
    )
    AGENT = strawberry.enum_value(
        "AGENT", description="The agent: recalled and searched in every session of the agent."
    )


@strawberry.enum(description="Where a memory record or version stands.")
class MemoryStatus(Enum):
    _value_: str  # the stored value

    ACTIVE = strawberry.enum_value("ACTIVE", description="In force: recalled and searched.")
    SUPERSEDED = strawberry.enum_value(
        "SUPERSEDED", description="Replaced by a newer record that corrects it."
    )
    DELETED = strawberry.enum_value(
        "DELETED", description="Deleted: still readable by id, never recalled or searched."
    )


@strawberry.enum(description="Where a turn stands.")
class TurnStatus(Enum):
    _value_: str  # the stored value

    OPEN = strawberry.enum_value("open", description="Begun and not yet ended.")
    COMMITTED = strawberry.enum_value(
        "committed", description="Ended by commitTurn: its memory is published."
    )
    ROLLED_BACK = strawberry.enum_value(
        "rolled_back", description="Ended by rollbackTurn: its memory is discarded."
    )
    FAILED = strawberry.enum_value(
        "failed", description="Ended by failTurn: its memory is discarded; it may be retried."
    )


@strawberry.enum(description="What an execution records.")
class ExecutionKind(Enum):
    _value_: str  # the stored value

    TURN = strawberry.enum_value("turn", description="The agent's own run of a turn.")
    TOOL = strawberry.enum_value("tool", description="A call of a native tool.")
    HELPER = strawberry.enum_value("helper", description="A helper (subagent) the turn ran.")
    PROGRAM = strawberry.enum_value("program", description="A program the turn ran.")


@strawberry.enum(description="Where an execution stands.")
class ExecutionStatus(Enum):
    _value_: str  # the stored value

    RUNNING = strawberry.enum_value("running", description="Started and not yet ended.")
    SUCCEEDED = strawberry.enum_value("succeeded", description="Ended without an error.")
    FAILED = strawberry.enum_value("failed", description="Ended with an error (see error).")


@strawberry.enum(description="What a model call was for.")
class InvocationPurpose(Enum):
    _value_: str  # the stored value

    TURN = strawberry.enum_value("turn", description="The turn's own work.")
    MEMORY = strawberry.enum_value("memory", description="A memory review at a turn's end.")
    EMBED = strawberry.enum_value(
        "embed",
        description="The embedding of a memory or history search, recorded by the server "
        "itself; no usage limit counts it, and recordInvocation refuses it.",
    )


@strawberry.enum(description="What a transcript event records.")
class TranscriptEventKind(Enum):
    _value_: str  # the stored value

    USER_MESSAGE = strawberry.enum_value(
        "message.user", description="The incoming message, as the agent received it."
    )
    AGENT_MESSAGE = strawberry.enum_value(
        "message.agent", description="A reply of the agent, with the tool calls it made."
    )
    TOOL_RESULT = strawberry.enum_value("tool.result", description="A tool call's result.")
    TOOL_ERROR = strawberry.enum_value("tool.error", description="A tool call's error.")
    SKILL_LOAD = strawberry.enum_value("skill.load", description="A skill the agent loaded.")
    RETRIEVAL = strawberry.enum_value(
        "retrieval", description="Content the runtime retrieved and put before the model."
    )
    MEMORY_PINNED = strawberry.enum_value(
        "memory.pinned", description="The pinned record versions the turn's instructions list."
    )
    USAGE = strawberry.enum_value(
        "usage", description="A model call the server made, such as a search's embedding."
    )


@strawberry.enum(description="What kind of principal a credential belongs to.")
class PrincipalKind(Enum):
    _value_: str  # the stored value

    ADMIN = strawberry.enum_value("admin", description="An administrator: may do everything.")
    CLIENT = strawberry.enum_value("client", description="A dashboard or another application.")
    RUNTIME = strawberry.enum_value(
        "runtime", description="The runtime of one agent, acting for it."
    )


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


# Descriptions shared by the paged fields.
FIRST = (
    "How many items the page holds at most, from 1 to the server's page size (100 unless "
    "configured otherwise); outside that range the field is BAD_INPUT."
)
AFTER = "The endCursor of the previous page; null or omitted: the first page."


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
    description="A page of items, in the order the field states; no total count is given."
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
