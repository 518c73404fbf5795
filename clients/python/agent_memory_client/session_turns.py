from datetime import datetime
from typing import Any, Optional
from uuid import UUID

from pydantic import Field

from .base_model import BaseModel
from .fragments import TurnFields


class SessionTurns(BaseModel):
    session: "SessionTurnsSession"


class SessionTurnsSession(BaseModel):
    id: UUID
    external_id: Optional[str] = Field(alias="externalId")
    created_at: datetime = Field(alias="createdAt")
    turns: "SessionTurnsSessionTurns"


class SessionTurnsSessionTurns(BaseModel):
    edges: list["SessionTurnsSessionTurnsEdges"]
    page_info: "SessionTurnsSessionTurnsPageInfo" = Field(alias="pageInfo")


class SessionTurnsSessionTurnsEdges(BaseModel):
    node: "SessionTurnsSessionTurnsEdgesNode"


class SessionTurnsSessionTurnsEdgesNode(TurnFields):
    transcript: list["SessionTurnsSessionTurnsEdgesNodeTranscript"]


class SessionTurnsSessionTurnsEdgesNodeTranscript(BaseModel):
    id: UUID
    sequence: int
    type_: str = Field(alias="type")
    tool_name: Optional[str] = Field(alias="toolName")
    tool_call_id: Optional[str] = Field(alias="toolCallId")
    payload: Any


class SessionTurnsSessionTurnsPageInfo(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    end_cursor: Optional[str] = Field(alias="endCursor")


SessionTurns.model_rebuild()
SessionTurnsSession.model_rebuild()
SessionTurnsSessionTurns.model_rebuild()
SessionTurnsSessionTurnsEdges.model_rebuild()
SessionTurnsSessionTurnsEdgesNode.model_rebuild()
