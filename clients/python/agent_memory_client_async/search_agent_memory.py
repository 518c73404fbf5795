from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import SearchMode
from .fragments import (  # noqa: F401
    SearchResultFields,
    SearchResultFieldsRecord,
    SearchResultFieldsVersion,
)


class SearchAgentMemory(BaseModel):
    search_agent_memory: Optional[list["SearchAgentMemorySearchAgentMemory"]] = Field(
        alias="searchAgentMemory"
    )


class SearchAgentMemorySearchAgentMemory(SearchResultFields):
    explanation: Optional["SearchAgentMemorySearchAgentMemoryExplanation"]


class SearchAgentMemorySearchAgentMemoryExplanation(BaseModel):
    mode: SearchMode
    preset: str
    meaning: "SearchAgentMemorySearchAgentMemoryExplanationMeaning"
    keywords: "SearchAgentMemorySearchAgentMemoryExplanationKeywords"
    recency: float
    age_days: float = Field(validation_alias="ageDays", serialization_alias="ageDays")
    half_life_days: float = Field(validation_alias="halfLifeDays", serialization_alias="halfLifeDays")


class SearchAgentMemorySearchAgentMemoryExplanationMeaning(BaseModel):
    rank: Optional[int]
    term: float


class SearchAgentMemorySearchAgentMemoryExplanationKeywords(BaseModel):
    rank: Optional[int]
    term: float


SearchAgentMemory.model_rebuild()
SearchAgentMemorySearchAgentMemory.model_rebuild()
SearchAgentMemorySearchAgentMemoryExplanation.model_rebuild()
