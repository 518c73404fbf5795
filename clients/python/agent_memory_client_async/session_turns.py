from datetime import datetime
from typing import Any, Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import TranscriptEventKind
from .fragments import TurnFields


class SessionTurns(BaseModel):
    session: Optional["SessionTurnsSession"]


class SessionTurnsSession(BaseModel):
    id: str
    external_id: Optional[str] = Field(alias="externalId")
    created_at: datetime = Field(alias="createdAt")
    turns: "SessionTurnsSessionTurns"


class SessionTurnsSessionTurns(BaseModel):
    edges: list["SessionTurnsSessionTurnsEdges"]
    page_info: "SessionTurnsSessionTurnsPageInfo" = Field(alias="pageInfo")
    total_count: Optional[int] = Field(alias="totalCount")


class SessionTurnsSessionTurnsEdges(BaseModel):
    node: "SessionTurnsSessionTurnsEdgesNode"


class SessionTurnsSessionTurnsEdgesNode(TurnFields):
    transcript: list["SessionTurnsSessionTurnsEdgesNodeTranscript"]


class SessionTurnsSessionTurnsEdgesNodeTranscript(BaseModel):
    id: str
    sequence: int
    type_: TranscriptEventKind = Field(alias="type")
    tool_name: Optional[str] = Field(alias="toolName")
    tool_call_id: Optional[str] = Field(alias="toolCallId")
    payload: Any


class SessionTurnsSessionTurnsPageInfo(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    has_previous_page: bool = Field(alias="hasPreviousPage")
    start_cursor: Optional[str] = Field(alias="startCursor")
    end_cursor: Optional[str] = Field(alias="endCursor")


SessionTurns.model_rebuild()
SessionTurnsSession.model_rebuild()
SessionTurnsSessionTurns.model_rebuild()
SessionTurnsSessionTurnsEdges.model_rebuild()
SessionTurnsSessionTurnsEdgesNode.model_rebuild()
