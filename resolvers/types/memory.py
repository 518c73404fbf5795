"""Memory records and their versions, with who wrote each (R25)."""

from __future__ import annotations

import uuid
from datetime import datetime

import strawberry
from strawberry.scalars import JSON

from resolvers.context import Info
from resolvers.types.agents import AgentVersionType, SessionType
from resolvers.types.base import Node, column, node_id, paginated_instead, related
from resolvers.types.enums import MemoryStatus, PrincipalKind, Scope
from resolvers.types.pages import After, Connection, First
from resolvers.types.turns import ExecutionType, InvocationType, TurnType
from server import models
from server.domain import visibility
from server.models.rows import RecordRow, VersionRow
from server.services import reads


@strawberry.type(
    name="Label",
    description="One label value of a memory version, in the shape of LabelInput.",
)
class LabelType:
    name: str = strawberry.field(description="The label's name, as the agent declares it.")
    value: str = strawberry.field(description="The value.")


@strawberry.type(name="DeletingPrincipal", description="The principal that deleted a record.")
class DeletingPrincipalType:
    id: uuid.UUID = strawberry.field(description="The principal's id.")
    name: str = strawberry.field(description="The principal's name, as its token was issued.")
    kind: PrincipalKind = strawberry.field(description="What kind of principal it is.")


@strawberry.type(
    name="ApiDeletion",
    # R71
    description="A deletion through the API (deleteAgentMemory): who, and when.",
)
class ApiDeletionType:
    principal: DeletingPrincipalType | None = strawberry.field(
        description="The principal that made the call; null when none did (dev mode) or it "
        "was removed since."
    )
    caller: str = strawberry.field(description="The caller as the server named it.")
    created_at: datetime = strawberry.field(description="When the record was deleted.")


@strawberry.type(
    name="Provenance",
    # R25
    description="Who wrote a memory version: a tool call of a turn (execution, turn, "
    "agent version), or, for a deletion through the API, that deletion (apiDeletion).",
)
class ProvenanceType:
    row: strawberry.Private[models.MemoryVersion | VersionRow]

    execution: ExecutionType | None = related(
        "execution",
        "execution_id",
        lambda r: ExecutionType(row=r),
        description="The tool call (or review) that wrote it; null for a deletion through the API.",
    )

    invocation: InvocationType | None = related(
        "invocation",
        "invocation_id",
        lambda r: InvocationType(row=r),
        description="The model call that asked for it, when the caller named one.",
    )

    agent_version: AgentVersionType | None = related(
        "agent_version",
        "agent_version_id",
        lambda r: AgentVersionType(row=r),
        description="The version of the agent's configuration the turn ran.",
    )

    session: SessionType | None = related(
        "session",
        "session_id",
        lambda r: SessionType(row=r),
        description="The session of the turn; null for an agent without sessions.",
    )
    turn: TurnType | None = related(
        "turn",
        "turn_id",
        lambda r: TurnType(row=r),
        description="The turn that wrote it; null for a deletion through the API.",
    )

    @strawberry.field(description="The deletion through the API that wrote this version.")
    async def api_deletion(self, info: Info) -> ApiDeletionType | None:
        if self.row.deletion_id is None:
            return None
        loaders = info.context.loaders
        deletion = await loaders.deletion.load(self.row.deletion_id)
        if deletion is None:
            return None
        who = (
            None
            if deletion.principal_id is None
            else await loaders.principal.load(deletion.principal_id)
        )
        return ApiDeletionType(
            principal=None
            if who is None
            else DeletingPrincipalType(id=who.id, name=who.name, kind=PrincipalKind(who.kind)),
            caller=deletion.caller,
            created_at=deletion.created_at,
        )


@strawberry.type(
    name="MemoryVersion",
    description="One version of a memory record: its text as created, or as a change left "
    "it. Versions are never changed.",
)
class MemoryVersionType(Node):
    row: strawberry.Private[models.MemoryVersion | VersionRow]

    id: strawberry.ID = node_id("The version's id.")
    record_id: uuid.UUID = column(description="The record's id.")
    number: int = column(description="The version's number in its record, from 1.")
    status: MemoryStatus = column(
        convert=MemoryStatus, description="The record's status this version gave it."
    )
    summary: str = column(description="One line the agent can act on.")
    content: str | None = column(description="The evidence and the specifics; null: none.")
    kind: str = column(description="One of the kinds the agent declares.")
    labels: JSON = column(
        description="The values of declared labels, an object of name: value, e.g. "
        '{"customer_id": "C-42"}; {} when none. labelList gives the same as a list.'
    )

    @strawberry.field(
        description="The values of declared labels as a list in name order, each as a "
        "LabelInput takes it: pass the list back as an input's labels as it is."
    )
    def label_list(self) -> list[LabelType]:
        return [LabelType(name=k, value=str(v)) for k, v in sorted(self.row.labels.items())]

    created_at: datetime = column(description="When the version was written.")

    @strawberry.field(description="Who wrote the version.")
    def written_by(self) -> ProvenanceType:
        return ProvenanceType(row=self.row)

    record: MemoryRecordType = related(
        "record",
        "record_id",
        lambda r: MemoryRecordType(row=r),
        description="The record the version belongs to.",
    )


@strawberry.type(
    name="MemoryRecord",
    description="A fact an agent keeps, with every version of it; the current one is in force.",
)
class MemoryRecordType(Node):
    """A record as an API reader sees it: a change an open turn staged is not yet shown."""

    row: strawberry.Private[models.MemoryRecord | RecordRow]
    # listed as it stood at a moment (Agent.memoryRecords(asOf)): its version in force then
    as_of: strawberry.Private[models.MemoryVersion | None] = None

    @property
    def _staged(self) -> bool:
        """An open turn stages a change of the record, which no API reader sees yet (R12)."""
        return visibility.staged_by_other(self._reader, self.row)

    @property
    def _reader(self) -> visibility.Reader:
        return visibility.Reader.for_api(agent_id=self.row.agent_id)

    id: strawberry.ID = node_id("The record's id.")
    scope: Scope = column(convert=Scope, description="Who the record is for.")

    @strawberry.field(description="Where the record stands (listed with asOf: stood then).")
    def status(self) -> MemoryStatus:
        if self.as_of is not None:
            return MemoryStatus(self.as_of.status)
        return MemoryStatus(visibility.effective_status(self._reader, self.row))

    preview: bool = column(
        description="True for a record a turn in preview mode wrote: live turns never see it."
    )
    pinned: bool = column(description="True when every turn's instructions list it.")
    created_at: datetime = column(description="When the record was created.")

    session: SessionType | None = related(
        "session",
        "session_id",
        lambda r: SessionType(row=r),
        description="The session that wrote the record.",
    )

    @strawberry.field(description="The version in force (listed with asOf: in force then).")
    async def current(self, info: Info) -> MemoryVersionType:
        if self.as_of is not None:
            return MemoryVersionType(row=self.as_of)
        version_id = visibility.version_in_force(self._reader, self.row)
        assert version_id is not None
        row = await info.context.loaders.version.load(version_id)
        assert row is not None
        return MemoryVersionType(row=row)

    @strawberry.field(
        description="Every version, oldest first: creation, then each change.",
        deprecation_reason=paginated_instead("versionsConnection"),
    )
    async def versions(self, info: Info) -> list[MemoryVersionType]:
        rows = await info.context.loaders.versions_of_record.load(self.row.id)
        if self._staged:
            rows = [r for r in rows if r.turn_id != self.row.pending_turn_id]
        if self.as_of is not None:
            rows = [r for r in rows if r.number <= self.as_of.number]
        return [MemoryVersionType(row=r) for r in rows]

    @strawberry.field(
        description="Every version, oldest first, a page at a time: creation, then each "
        "change (listed with asOf: those in force by then)."
    )
    async def versions_connection(
        self, info: Info, first: First, after: After = None
    ) -> Connection[MemoryVersionType]:
        return await Connection.read(
            info,
            reads.list_versions,
            lambda r: MemoryVersionType(row=r),
            record_id=self.row.id,
            staged_by=self.row.pending_turn_id,
            through=None if self.as_of is None else self.as_of.number,
            first=first,
            after=after,
        )

    @strawberry.field(description="Who created the record (its first version's provenance).")
    async def written_by(self, info: Info) -> ProvenanceType:
        rows = await info.context.loaders.versions_of_record.load(self.row.id)
        return ProvenanceType(row=rows[0])

    replaces: MemoryRecordType | None = related(
        "record",
        "replaces_id",
        lambda r: MemoryRecordType(row=r),
        description="The record this one corrects.",
    )

    @strawberry.field(
        description="The record that superseded this one (listed with asOf: if it had by then)."
    )
    async def replaced_by(self, info: Info) -> MemoryRecordType | None:
        if self._staged or self.row.replaced_by_id is None:
            return None
        if self.as_of is not None and self.as_of.status != "SUPERSEDED":
            return None
        row = await info.context.loaders.record.load(self.row.replaced_by_id)
        return MemoryRecordType(row=row) if row else None
