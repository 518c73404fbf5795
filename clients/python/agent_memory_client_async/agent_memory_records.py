from datetime import datetime
from typing import Optional
from uuid import UUID

from pydantic import Field

from .base_model import BaseModel
from .enums import MemoryStatus, Scope
from .fragments import MemoryVersionFields


class AgentMemoryRecords(BaseModel):
    agent: "AgentMemoryRecordsAgent"


class AgentMemoryRecordsAgent(BaseModel):
    id: UUID
    namespace: str
    name: str
    memory_records: "AgentMemoryRecordsAgentMemoryRecords" = Field(
        alias="memoryRecords"
    )


class AgentMemoryRecordsAgentMemoryRecords(BaseModel):
    edges: list["AgentMemoryRecordsAgentMemoryRecordsEdges"]
    page_info: "AgentMemoryRecordsAgentMemoryRecordsPageInfo" = Field(alias="pageInfo")


class AgentMemoryRecordsAgentMemoryRecordsEdges(BaseModel):
    node: "AgentMemoryRecordsAgentMemoryRecordsEdgesNode"


class AgentMemoryRecordsAgentMemoryRecordsEdgesNode(BaseModel):
    id: UUID
    scope: Scope
    status: MemoryStatus
    preview: bool
    pinned: bool
    created_at: datetime = Field(alias="createdAt")
    current: "AgentMemoryRecordsAgentMemoryRecordsEdgesNodeCurrent"
    versions: list["AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersions"]
    replaces: Optional["AgentMemoryRecordsAgentMemoryRecordsEdgesNodeReplaces"]
    replaced_by: Optional["AgentMemoryRecordsAgentMemoryRecordsEdgesNodeReplacedBy"] = (
        Field(alias="replacedBy")
    )


AgentMemoryRecordsAgentMemoryRecordsEdgesNodeCurrent = MemoryVersionFields


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersions(MemoryVersionFields):
    written_by: "AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsWrittenBy" = (
        Field(alias="writtenBy")
    )


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsWrittenBy(BaseModel):
    execution: Optional[
        "AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsWrittenByExecution"
    ]
    turn: Optional["AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsWrittenByTurn"]
    api_deletion: Optional[
        "AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsWrittenByApiDeletion"
    ] = Field(alias="apiDeletion")


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsWrittenByExecution(
    BaseModel
):
    id: UUID
    kind: str
    name: str


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsWrittenByTurn(BaseModel):
    id: UUID
    number: int


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsWrittenByApiDeletion(
    BaseModel
):
    caller: str


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeReplaces(BaseModel):
    id: UUID


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeReplacedBy(BaseModel):
    id: UUID


class AgentMemoryRecordsAgentMemoryRecordsPageInfo(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    end_cursor: Optional[str] = Field(alias="endCursor")


AgentMemoryRecords.model_rebuild()
AgentMemoryRecordsAgent.model_rebuild()
AgentMemoryRecordsAgentMemoryRecords.model_rebuild()
AgentMemoryRecordsAgentMemoryRecordsEdges.model_rebuild()
AgentMemoryRecordsAgentMemoryRecordsEdgesNode.model_rebuild()
AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersions.model_rebuild()
AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsWrittenBy.model_rebuild()
