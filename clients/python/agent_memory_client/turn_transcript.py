from datetime import datetime
from typing import Any, Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import TranscriptEventKind


class TurnTranscript(BaseModel):
    turn: Optional["TurnTranscriptTurn"]


class TurnTranscriptTurn(BaseModel):
    id: str
    transcript_connection: "TurnTranscriptTurnTranscriptConnection" = Field(
        alias="transcriptConnection"
    )


class TurnTranscriptTurnTranscriptConnection(BaseModel):
    edges: list["TurnTranscriptTurnTranscriptConnectionEdges"]
    page_info: "TurnTranscriptTurnTranscriptConnectionPageInfo" = Field(
        alias="pageInfo"
    )
    total_count: Optional[int] = Field(validation_alias="totalCount", serialization_alias="totalCount")


class TurnTranscriptTurnTranscriptConnectionEdges(BaseModel):
    node: "TurnTranscriptTurnTranscriptConnectionEdgesNode"


class TurnTranscriptTurnTranscriptConnectionEdgesNode(BaseModel):
    id: str
    sequence: int
    type_: TranscriptEventKind = Field(validation_alias="type", serialization_alias="type")
    tool_name: Optional[str] = Field(validation_alias="toolName", serialization_alias="toolName")
    tool_call_id: Optional[str] = Field(validation_alias="toolCallId", serialization_alias="toolCallId")
    payload: Any
    created_at: datetime = Field(validation_alias="createdAt", serialization_alias="createdAt")


class TurnTranscriptTurnTranscriptConnectionPageInfo(BaseModel):
    has_next_page: bool = Field(validation_alias="hasNextPage", serialization_alias="hasNextPage")
    end_cursor: Optional[str] = Field(validation_alias="endCursor", serialization_alias="endCursor")


TurnTranscript.model_rebuild()
TurnTranscriptTurn.model_rebuild()
TurnTranscriptTurnTranscriptConnection.model_rebuild()
TurnTranscriptTurnTranscriptConnectionEdges.model_rebuild()
