from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class SearchSessionHistory(BaseModel):
    search_session_history: Optional["SearchSessionHistorySearchSessionHistory"] = (
        Field(validation_alias="searchSessionHistory", serialization_alias="searchSessionHistory")
    )


class SearchSessionHistorySearchSessionHistory(BaseModel):
    sessions_searched: int = Field(validation_alias="sessionsSearched", serialization_alias="sessionsSearched")
    more_sessions: bool = Field(validation_alias="moreSessions", serialization_alias="moreSessions")
    hits: list["SearchSessionHistorySearchSessionHistoryHits"]


class SearchSessionHistorySearchSessionHistoryHits(BaseModel):
    score: float
    header: str
    text: str
    part: int
    parts: int
    preview: bool
    session: "SearchSessionHistorySearchSessionHistoryHitsSession"
    turn: "SearchSessionHistorySearchSessionHistoryHitsTurn"


class SearchSessionHistorySearchSessionHistoryHitsSession(BaseModel):
    id: str
    external_id: Optional[str] = Field(validation_alias="externalId", serialization_alias="externalId")


class SearchSessionHistorySearchSessionHistoryHitsTurn(BaseModel):
    id: str
    number: int


SearchSessionHistory.model_rebuild()
SearchSessionHistorySearchSessionHistory.model_rebuild()
SearchSessionHistorySearchSessionHistoryHits.model_rebuild()
