from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import HistoryRole


class SearchHistory(BaseModel):
    search_history: "SearchHistorySearchHistory" = Field(validation_alias="searchHistory", serialization_alias="searchHistory")


class SearchHistorySearchHistory(BaseModel):
    execution: "SearchHistorySearchHistoryExecution"
    results: list["SearchHistorySearchHistoryResults"]


class SearchHistorySearchHistoryExecution(BaseModel):
    id: str


class SearchHistorySearchHistoryResults(BaseModel):
    event_id: str = Field(validation_alias="eventId", serialization_alias="eventId")
    turn: int
    role: HistoryRole
    tool_name: Optional[str] = Field(validation_alias="toolName", serialization_alias="toolName")
    is_error: bool = Field(validation_alias="isError", serialization_alias="isError")
    header: str
    text: str
    part: Optional[int]
    parts: int
    sequence: int
    score: Optional[float]


SearchHistory.model_rebuild()
SearchHistorySearchHistory.model_rebuild()
