from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import TurnFields


class SessionTurns(BaseModel):
    session: Optional["SessionTurnsSession"]


class SessionTurnsSession(BaseModel):
    id: str
    external_id: Optional[str] = Field(validation_alias="externalId", serialization_alias="externalId")
    created_at: datetime = Field(validation_alias="createdAt", serialization_alias="createdAt")
    turns: "SessionTurnsSessionTurns"


class SessionTurnsSessionTurns(BaseModel):
    edges: list["SessionTurnsSessionTurnsEdges"]
    page_info: "SessionTurnsSessionTurnsPageInfo" = Field(validation_alias="pageInfo", serialization_alias="pageInfo")
    total_count: Optional[int] = Field(validation_alias="totalCount", serialization_alias="totalCount")


class SessionTurnsSessionTurnsEdges(BaseModel):
    node: "SessionTurnsSessionTurnsEdgesNode"


SessionTurnsSessionTurnsEdgesNode = TurnFields


class SessionTurnsSessionTurnsPageInfo(BaseModel):
    has_next_page: bool = Field(validation_alias="hasNextPage", serialization_alias="hasNextPage")
    has_previous_page: bool = Field(validation_alias="hasPreviousPage", serialization_alias="hasPreviousPage")
    start_cursor: Optional[str] = Field(validation_alias="startCursor", serialization_alias="startCursor")
    end_cursor: Optional[str] = Field(validation_alias="endCursor", serialization_alias="endCursor")


SessionTurns.model_rebuild()
SessionTurnsSession.model_rebuild()
SessionTurnsSessionTurns.model_rebuild()
SessionTurnsSessionTurnsEdges.model_rebuild()
