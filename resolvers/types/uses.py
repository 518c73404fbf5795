"""What an execution's output put before the model (R43, R63): its RETRIEVED output
uses, each naming a memory record version or a part of a kept history event. Reading
them takes the grants that read what they name (R70, R71): memory uses are memory,
history uses are the session's (resolvers/grants.py)."""

from __future__ import annotations

from datetime import datetime
from enum import Enum

import strawberry

from resolvers.context import Info
from resolvers.types.base import Node, column, node_id, related
from resolvers.types.history import HistoryEventType, HistoryPartType
from resolvers.types.memory import MemoryVersionType
from server import models


@strawberry.enum(description="How an execution's output used what it names.")
class OutputUseKind(Enum):
    RETRIEVED = strawberry.enum_value(
        "RETRIEVED", description="Put before the model by a search or a recall."
    )


@strawberry.type(
    name="OutputUse",
    # R43, R63
    description="A record version or a kept history part an execution's output put "
    "before the model.",
)
class OutputUseType(Node):
    row: strawberry.Private[models.OutputUse]

    id: strawberry.ID = node_id("The use's id.")
    kind: OutputUseKind = column(convert=OutputUseKind, description="How it was used.")
    rank: int = column(
        description="The result's position in the output, from 1; the parts of a history "
        "event read whole share its rank."
    )
    created_at: datetime = column(description="When it was recorded.")

    memory_version: MemoryVersionType | None = related(
        "version",
        "memory_version_id",
        lambda r: MemoryVersionType(row=r),
        description="For search_memory and recall: the version retrieved (its record "
        "through `record`).",
    )

    history_part: HistoryPartType | None = related(
        "history_part",
        "history_part_id",
        lambda r: HistoryPartType(row=r),
        description="For search_history: the part of a kept event retrieved.",
    )

    @strawberry.field(description="For search_history: the kept event the part belongs to.")
    async def history_event(self, info: Info) -> HistoryEventType | None:
        if self.row.history_part_id is None:
            return None
        loaders = info.context.loaders
        part = await loaders.history_part.load(self.row.history_part_id)
        found = None if part is None else await loaders.history_event.load(part.event_id)
        return HistoryEventType.loaded(found)
