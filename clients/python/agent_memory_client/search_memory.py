from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import SearchResultFields


class SearchMemory(BaseModel):
    search_memory: "SearchMemorySearchMemory" = Field(validation_alias="searchMemory", serialization_alias="searchMemory")


class SearchMemorySearchMemory(BaseModel):
    execution: "SearchMemorySearchMemoryExecution"
    results: list["SearchMemorySearchMemoryResults"]
    next_cursor: Optional[str] = Field(validation_alias="nextCursor", serialization_alias="nextCursor")


class SearchMemorySearchMemoryExecution(BaseModel):
    id: str


SearchMemorySearchMemoryResults = SearchResultFields
SearchMemory.model_rebuild()
SearchMemorySearchMemory.model_rebuild()
