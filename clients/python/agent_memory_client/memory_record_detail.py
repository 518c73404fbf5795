from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import (
    ExecutionKind,
    ExecutionStatus,
    InvocationPurpose,
    MemoryStatus,
    Scope,
    TurnStatus,
)
from .fragments import (
    MemoryVersionFields,
    MemoryVersionFieldsLabelList,  # noqa: F401
)


class MemoryRecordDetail(BaseModel):
    agent_memory: Optional["MemoryRecordDetailAgentMemory"] = Field(validation_alias="agentMemory", serialization_alias="agentMemory")


class MemoryRecordDetailAgentMemory(BaseModel):
    id: str
    scope: Scope
    status: MemoryStatus
    preview: bool
    pinned: bool
    created_at: datetime = Field(validation_alias="createdAt", serialization_alias="createdAt")
    replaces: Optional["MemoryRecordDetailAgentMemoryReplaces"]
    replaced_by: Optional["MemoryRecordDetailAgentMemoryReplacedBy"] = Field(
        alias="replacedBy"
    )
    versions_connection: "MemoryRecordDetailAgentMemoryVersionsConnection" = Field(
        alias="versionsConnection"
    )


class MemoryRecordDetailAgentMemoryReplaces(BaseModel):
    id: str


class MemoryRecordDetailAgentMemoryReplacedBy(BaseModel):
    id: str


class MemoryRecordDetailAgentMemoryVersionsConnection(BaseModel):
    total_count: Optional[int] = Field(validation_alias="totalCount", serialization_alias="totalCount")
    page_info: "MemoryRecordDetailAgentMemoryVersionsConnectionPageInfo" = Field(
        alias="pageInfo"
    )
    edges: list["MemoryRecordDetailAgentMemoryVersionsConnectionEdges"]


class MemoryRecordDetailAgentMemoryVersionsConnectionPageInfo(BaseModel):
    has_next_page: bool = Field(validation_alias="hasNextPage", serialization_alias="hasNextPage")
    end_cursor: Optional[str] = Field(validation_alias="endCursor", serialization_alias="endCursor")


class MemoryRecordDetailAgentMemoryVersionsConnectionEdges(BaseModel):
    node: "MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNode"


class MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNode(MemoryVersionFields):
    written_by: "MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenBy" = (
        Field(validation_alias="writtenBy", serialization_alias="writtenBy")
    )


class MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenBy(BaseModel):
    execution: Optional[
        "MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenByExecution"
    ]
    invocation: Optional[
        "MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenByInvocation"
    ]
    turn: Optional[
        "MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenByTurn"
    ]
    session: Optional[
        "MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenBySession"
    ]
    agent_version: Optional[
        "MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenByAgentVersion"
    ] = Field(validation_alias="agentVersion", serialization_alias="agentVersion")
    api_deletion: Optional[
        "MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenByApiDeletion"
    ] = Field(validation_alias="apiDeletion", serialization_alias="apiDeletion")


class MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenByExecution(
    BaseModel
):
    id: str
    kind: ExecutionKind
    name: str
    status: ExecutionStatus


class MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenByInvocation(
    BaseModel
):
    purpose: InvocationPurpose
    model: str


class MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenByTurn(BaseModel):
    id: str
    number: int
    attempt: int
    status: TurnStatus


class MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenBySession(
    BaseModel
):
    id: str
    external_id: Optional[str] = Field(validation_alias="externalId", serialization_alias="externalId")


class MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenByAgentVersion(
    BaseModel
):
    number: int
    label: Optional[str]


class MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenByApiDeletion(
    BaseModel
):
    caller: str
    created_at: datetime = Field(validation_alias="createdAt", serialization_alias="createdAt")


MemoryRecordDetail.model_rebuild()
MemoryRecordDetailAgentMemory.model_rebuild()
MemoryRecordDetailAgentMemoryVersionsConnection.model_rebuild()
MemoryRecordDetailAgentMemoryVersionsConnectionEdges.model_rebuild()
MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNode.model_rebuild()
MemoryRecordDetailAgentMemoryVersionsConnectionEdgesNodeWrittenBy.model_rebuild()
