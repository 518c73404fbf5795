from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import MemoryStatus, Scope
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
    page_info: "AgentMemoryRecordsAgentMemoryRecordsPageInfo" = Field(validation_alias="pageInfo", serialization_alias="pageInfo")
    total_count: Optional[int] = Field(validation_alias="totalCount", serialization_alias="totalCount")


class AgentMemoryRecordsAgentMemoryRecordsEdges(BaseModel):
    node: "AgentMemoryRecordsAgentMemoryRecordsEdgesNode"


class AgentMemoryRecordsAgentMemoryRecordsEdgesNode(BaseModel):
    id: str
    scope: Scope
    status: MemoryStatus
    preview: bool
    pinned: bool
    created_at: datetime = Field(validation_alias="createdAt", serialization_alias="createdAt")
    current: "AgentMemoryRecordsAgentMemoryRecordsEdgesNodeCurrent"
    versions_connection: "AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsConnection" = Field(
        alias="versionsConnection"
    )
    replaces: Optional["AgentMemoryRecordsAgentMemoryRecordsEdgesNodeReplaces"]
    replaced_by: Optional["AgentMemoryRecordsAgentMemoryRecordsEdgesNodeReplacedBy"] = (
        Field(validation_alias="replacedBy", serialization_alias="replacedBy")
    )


AgentMemoryRecordsAgentMemoryRecordsEdgesNodeCurrent = MemoryVersionFields


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsConnection(BaseModel):
    total_count: Optional[int] = Field(validation_alias="totalCount", serialization_alias="totalCount")
    edges: list["AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsConnectionEdges"]


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsConnectionEdges(BaseModel):
    node: "AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsConnectionEdgesNode"


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsConnectionEdgesNode(
    BaseModel
):
    number: int
    status: MemoryStatus


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeReplaces(BaseModel):
    id: str


class AgentMemoryRecordsAgentMemoryRecordsEdgesNodeReplacedBy(BaseModel):
    id: str


class AgentMemoryRecordsAgentMemoryRecordsPageInfo(BaseModel):
    has_next_page: bool = Field(validation_alias="hasNextPage", serialization_alias="hasNextPage")
    has_previous_page: bool = Field(validation_alias="hasPreviousPage", serialization_alias="hasPreviousPage")
    start_cursor: Optional[str] = Field(validation_alias="startCursor", serialization_alias="startCursor")
    end_cursor: Optional[str] = Field(validation_alias="endCursor", serialization_alias="endCursor")


AgentMemoryRecords.model_rebuild()
AgentMemoryRecordsAgent.model_rebuild()
AgentMemoryRecordsAgentMemoryRecords.model_rebuild()
AgentMemoryRecordsAgentMemoryRecordsEdges.model_rebuild()
AgentMemoryRecordsAgentMemoryRecordsEdgesNode.model_rebuild()
AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsConnection.model_rebuild()
AgentMemoryRecordsAgentMemoryRecordsEdgesNodeVersionsConnectionEdges.model_rebuild()
