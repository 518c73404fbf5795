from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import ExecutionKind, MemoryStatus, Scope
from .fragments import MemoryVersionFields


class AgentMemoryRecords(BaseModel):
    agent: Optional["AgentMemoryRecordsAgent"]


class AgentMemoryRecordsAgent(BaseModel):
    id: str
    namespace: str
    name: str
    memory_records: "AgentMemoryRecordsAgentMemoryRecords" = Field(
        alias="memoryRecords"
    )


class AgentMemoryRecordsAgentMemoryRecords(BaseModel):
    edges: list["AgentMemoryRecordsAgentMemoryRecordsEdges"]
    page_info: "AgentMemoryRecordsAgentMemoryRecordsPageInfo" = Field(alias="pageInfo")
    total_count: Optional[int] = Field(alias="totalCount")


class AgentMemoryRecordsAgentMemoryRecordsEdges(BaseModel):
    node: "AgentMemoryRecordsAgentMemoryRecordsEdgesNode"


class AgentMemoryRecordsAgentMemoryRecordsEdgesNode(BaseModel):
    id: str
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
    id: str
    kind: ExecutionKind
    name: str


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsWrittenByTurn(BaseModel):
    id: str
    number: int


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsWrittenByApiDeletion(
    BaseModel
):
    caller: str


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeReplaces(BaseModel):
    id: str


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeReplacedBy(BaseModel):
    id: str


class AgentMemoryRecordsAgentMemoryRecordsPageInfo(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    has_previous_page: bool = Field(alias="hasPreviousPage")
    start_cursor: Optional[str] = Field(alias="startCursor")
    end_cursor: Optional[str] = Field(alias="endCursor")


AgentMemoryRecords.model_rebuild()
AgentMemoryRecordsAgent.model_rebuild()
AgentMemoryRecordsAgentMemoryRecords.model_rebuild()
AgentMemoryRecordsAgentMemoryRecordsEdges.model_rebuild()
AgentMemoryRecordsAgentMemoryRecordsEdgesNode.model_rebuild()
AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersions.model_rebuild()
AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsWrittenBy.model_rebuild()
