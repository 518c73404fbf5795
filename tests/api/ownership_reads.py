"""The read cases of tests/api/test_ownership.py: every Node type, read by runtimes and by
clients of several grants, through ``node``, ``nodes`` and its typed lookup, and what
each must answer (this module's oracle, from docs/security.md "Resources and
privileges" and "Ownership", R12, R70, R71)."""

from __future__ import annotations

from dataclasses import dataclass

from resolvers.kinds import Kind
from tests.api.ownership_cases import CALLERS, FOREIGN, RUNTIMES, client
from tests.api.ownership_world import (
    OTHER_AGENT,
    OTHER_NAMESPACE,
    OTHER_SESSION,
    OTHER_TURN,
    OWN,
    PREVIEW,
    STAGED,
    World,
    distances,
)

READERS = {
    **CALLERS,
    "client reading sessions": client(
        "client-sessions", "SELECT {ns}.Agent", "SELECT {ns}.Session"
    ),
    "client reading memory": client(
        "client-memory",
        "SELECT {ns}.Agent",
        "SELECT {ns}.AgentMemory.indexes.*",
        "SELECT {ns}.AgentMemory.document",
    ),
}
# the grants each reader holds on NS1 (a runtime: the agent itself, for its agents)
_GRANTED = {
    "client of NS1": {"agent", "session", "memory"},
    "client reading sessions": {"agent", "session"},
    "client reading memory": {"agent", "memory"},
}
_SESSION, _MEMORY = {"session"}, {"memory"}
# what reading each kind needs (docs/security.md, "Resources and privileges"); an output
# use is the session's, and memory too when it names a record version (R43, R71)
READ_NEEDS: dict[str, tuple[Kind, set[str]]] = {
    "Agent": (Kind.AGENT, {"agent"}),
    "AgentVersion": (Kind.AGENT_VERSION, {"agent"}),
    "Session": (Kind.SESSION, _SESSION),
    "Turn": (Kind.TURN, _SESSION),
    "Execution": (Kind.EXECUTION, _SESSION),
    "Invocation": (Kind.INVOCATION, _SESSION),
    "TranscriptEvent": (Kind.TRANSCRIPT_EVENT, _SESSION),
    "HistoryEvent": (Kind.HISTORY_EVENT, _SESSION),
    "HistoryPart": (Kind.HISTORY_PART, _SESSION),
    "MemoryRecord": (Kind.MEMORY_RECORD, _MEMORY),
    "MemoryVersion": (Kind.MEMORY_VERSION, _MEMORY),
    "MemoryReview": (Kind.MEMORY_REVIEW, _SESSION | _MEMORY),
    "OutputUse": (Kind.OUTPUT_USE, _SESSION | _MEMORY),
    "OutputUse of history": (Kind.OUTPUT_USE, _SESSION),
}
# the typed lookup of a Node type, where it has one
LOOKUPS = {
    "Agent": "agent",
    "AgentVersion": "agentVersion",
    "Session": "session",
    "Turn": "turn",
    "Execution": "execution",
    "MemoryRecord": "agentMemory",
    "HistoryEvent": "historyEvent",
}


def read_expected(reader: str, needs: set[str], distance: str) -> str:
    """OK, or NOT_FOUND as for an unknown id: what reading an object at ``distance``
    answers. An object the reader may not read is answered as one that does not exist
    (docs/security.md, "Refusals look like absence")."""
    if distance == STAGED:
        return "NOT_FOUND"  # R12: no reader sees what an open turn staged
    if reader in RUNTIMES:
        return "NOT_FOUND" if distance in FOREIGN[reader] else "OK"
    if distance == OTHER_NAMESPACE or not needs <= _GRANTED[reader]:
        return "NOT_FOUND"
    return "OK"


@dataclass(frozen=True)
class NodeCase:
    type_name: str
    reader: str
    distance: str

    @property
    def id(self) -> str:
        return f"{self.type_name}:{self.reader}:{self.distance}"


def node_cases() -> list[NodeCase]:
    out = []
    for type_name, (kind, _) in READ_NEEDS.items():
        for distance in sorted(distances(kind) - {OTHER_SESSION, OTHER_TURN, PREVIEW}):
            if type_name == "OutputUse of history" and distance == STAGED:
                continue
            out.extend(NodeCase(type_name, reader, distance) for reader in READERS)
    return out


NODE_CASES = node_cases()


def node_object(world: World, case: NodeCase) -> str:
    kind = READ_NEEDS[case.type_name][0]
    if case.type_name == "OutputUse of history":
        name = {OWN: "A", OTHER_AGENT: "A2", OTHER_NAMESPACE: "B"}[case.distance]
        return world.extra[f"{name}.history_use"]
    return world.at[kind][case.distance]
