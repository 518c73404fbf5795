from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import MemoryVersionFields


class CompareMemoryCandidates(BaseModel):
    compare_memory_candidates: "CompareMemoryCandidatesCompareMemoryCandidates" = Field(
        alias="compareMemoryCandidates"
    )


class CompareMemoryCandidatesCompareMemoryCandidates(BaseModel):
    candidates: list["CompareMemoryCandidatesCompareMemoryCandidatesCandidates"]
    text: str


class CompareMemoryCandidatesCompareMemoryCandidatesCandidates(BaseModel):
    candidate: int
    summary: str
    similar: list["CompareMemoryCandidatesCompareMemoryCandidatesCandidatesSimilar"]
    restates: Optional[
        "CompareMemoryCandidatesCompareMemoryCandidatesCandidatesRestates"
    ]


class CompareMemoryCandidatesCompareMemoryCandidatesCandidatesSimilar(BaseModel):
    similarity: float
    version: "CompareMemoryCandidatesCompareMemoryCandidatesCandidatesSimilarVersion"


CompareMemoryCandidatesCompareMemoryCandidatesCandidatesSimilarVersion = (
    MemoryVersionFields
)


class CompareMemoryCandidatesCompareMemoryCandidatesCandidatesRestates(BaseModel):
    similarity: float
    version: "CompareMemoryCandidatesCompareMemoryCandidatesCandidatesRestatesVersion"


CompareMemoryCandidatesCompareMemoryCandidatesCandidatesRestatesVersion = (
    MemoryVersionFields
)
CompareMemoryCandidates.model_rebuild()
CompareMemoryCandidatesCompareMemoryCandidates.model_rebuild()
CompareMemoryCandidatesCompareMemoryCandidatesCandidates.model_rebuild()
CompareMemoryCandidatesCompareMemoryCandidatesCandidatesSimilar.model_rebuild()
CompareMemoryCandidatesCompareMemoryCandidatesCandidatesRestates.model_rebuild()
