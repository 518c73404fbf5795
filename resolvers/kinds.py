"""The kinds of object an id can name (R10, R70, R71): each kind's table, its GraphQL
type, what it is called in an error, and the grants that read it.

Every UUID an input takes and every global id ``node`` reads names one of these; which
owner each belongs to, and who may name it, is :mod:`resolvers.owners` and
:mod:`resolvers.ownership`.
"""

from __future__ import annotations

import uuid
from enum import Enum
from typing import Any

from resolvers.grants import Resource
from server import models
from server.models.rows import ExecutionRow, RecordRow, VersionRow

_SESSION = (Resource.SESSION,)
_MEMORY = (Resource.MEMORY,)


class Kind(Enum):
    """An id kind: (GraphQL type, table, label, resources a reader needs)."""

    AGENT = ("Agent", models.Agent, "agent", (Resource.AGENT,))
    AGENT_VERSION = ("AgentVersion", models.AgentVersion, "agent version", (Resource.AGENT,))
    SESSION = ("Session", models.Session, "session", _SESSION)
    TURN = ("Turn", models.Turn, "turn", _SESSION)
    EXECUTION = ("Execution", models.Execution, "execution", _SESSION)
    INVOCATION = ("Invocation", models.Invocation, "invocation", _SESSION)
    TRANSCRIPT_EVENT = ("TranscriptEvent", models.TranscriptEvent, "transcript event", _SESSION)
    MEMORY_RECORD = ("MemoryRecord", models.MemoryRecord, "memory record", _MEMORY)
    MEMORY_VERSION = ("MemoryVersion", models.MemoryVersion, "memory version", _MEMORY)
    # a review reads its session's conversation for memory, and its execution is the
    # session's: it needs both, as a memory output use does
    MEMORY_REVIEW = (
        "MemoryReview",
        models.MemoryReview,
        "memory review",
        (Resource.SESSION, Resource.MEMORY),
    )
    HISTORY_EVENT = ("HistoryEvent", models.HistoryEvent, "history event", _SESSION)
    HISTORY_PART = ("HistoryPart", models.HistoryPart, "history part", _SESSION)
    # an execution's output use is the session's; one that names a record version is
    # memory too (R43, R71): it needs both, as Execution.uses does
    OUTPUT_USE = ("OutputUse", models.OutputUse, "output use", _SESSION)

    def __init__(
        self, type_name: str, model: Any, label: str, resources: tuple[Resource, ...]
    ) -> None:
        self.type_name = type_name
        self.model = model
        self.label = label
        self._resources = resources

    def resources(self, *, memory: bool = False) -> tuple[Resource, ...]:
        """The grants a reader needs; ``memory``: an output use that names a record version."""
        return (*self._resources, Resource.MEMORY) if memory else self._resources


BY_MODEL: dict[Any, Kind] = {kind.model: kind for kind in Kind}
# the plain rows the hot path reads are of their table's kind (server/models/rows.py)
BY_MODEL.update({row: BY_MODEL[row.model] for row in (ExecutionRow, RecordRow, VersionRow)})
BY_TYPE: dict[str, Kind] = {kind.type_name: kind for kind in Kind}


def agent_of(row: Any) -> uuid.UUID | None:
    """The agent ``row`` belongs to; ``None`` for a row of no kind (or no row)."""
    kind = BY_MODEL.get(type(row))
    if kind is None:
        return None
    agent_id: uuid.UUID = row.id if kind is Kind.AGENT else row.agent_id
    return agent_id


def needs_of(row: Any) -> list[tuple[Resource, uuid.UUID]] | None:
    """What a reader needs to read ``row``: each resource of its kind, of its agent;
    ``None`` for a row of no kind (principals, policies, deletions, keys: admins only)."""
    agent_id = agent_of(row)
    if agent_id is None:
        return None
    memory = getattr(row, "memory_version_id", None) is not None
    return [(resource, agent_id) for resource in BY_MODEL[type(row)].resources(memory=memory)]
