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
from .fragments import MemoryVersionFields


class MemoryRecordDetail(BaseModel):
    agent_memory: Optional["MemoryRecordDetailAgentMemory"] = Field(alias="agentMemory")


class MemoryRecordDetailAgentMemory(BaseModel):
    id: str
    scope: Scope
    status: MemoryStatus
    preview: bool
    pinned: bool
    created_at: datetime = Field(alias="createdAt")
    replaces: Optional["MemoryRecordDetailAgentMemoryReplaces"]
    replaced_by: Optional["MemoryRecordDetailAgentMemoryReplacedBy"] = Field(
        alias="replacedBy"
    )
    versions: list["MemoryRecordDetailAgentMemoryVersions"]


class MemoryRecordDetailAgentMemoryReplaces(BaseModel):
    id: str


class MemoryRecordDetailAgentMemoryReplacedBy(BaseModel):
    id: str


class MemoryRecordDetailAgentMemoryVersions(MemoryVersionFields):
    written_by: "MemoryRecordDetailAgentMemoryVersionsWrittenBy" = Field(
        alias="writtenBy"
    )


class MemoryRecordDetailAgentMemoryVersionsWrittenBy(BaseModel):
    execution: Optional["MemoryRecordDetailAgentMemoryVersionsWrittenByExecution"]
    invocation: Optional["MemoryRecordDetailAgentMemoryVersionsWrittenByInvocation"]
    turn: Optional["MemoryRecordDetailAgentMemoryVersionsWrittenByTurn"]
    session: Optional["MemoryRecordDetailAgentMemoryVersionsWrittenBySession"]
    agent_version: Optional[
        "MemoryRecordDetailAgentMemoryVersionsWrittenByAgentVersion"
    ] = Field(alias="agentVersion")


class MemoryRecordDetailAgentMemoryVersionsWrittenByExecution(BaseModel):
    id: str
    kind: ExecutionKind
    name: str
    status: ExecutionStatus


class MemoryRecordDetailAgentMemoryVersionsWrittenByInvocation(BaseModel):
    purpose: InvocationPurpose
    model: str


class MemoryRecordDetailAgentMemoryVersionsWrittenByTurn(BaseModel):
    id: str
    number: int
    attempt: int
    status: TurnStatus


class MemoryRecordDetailAgentMemoryVersionsWrittenBySession(BaseModel):
    id: str
    external_id: Optional[str] = Field(alias="externalId")


class MemoryRecordDetailAgentMemoryVersionsWrittenByAgentVersion(BaseModel):
    number: int
    label: Optional[str]


MemoryRecordDetail.model_rebuild()
MemoryRecordDetailAgentMemory.model_rebuild()
MemoryRecordDetailAgentMemoryVersions.model_rebuild()
MemoryRecordDetailAgentMemoryVersionsWrittenBy.model_rebuild()
