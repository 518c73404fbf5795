from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import MemoryDecisionAction, MemoryReviewStatus
from .fragments import MemoryVersionFields


class ApplyMemoryReview(BaseModel):
    apply_memory_review: "ApplyMemoryReviewApplyMemoryReview" = Field(
        alias="applyMemoryReview"
    )


class ApplyMemoryReviewApplyMemoryReview(BaseModel):
    review: "ApplyMemoryReviewApplyMemoryReviewReview"
    memories: list["ApplyMemoryReviewApplyMemoryReviewMemories"]
    decisions: list["ApplyMemoryReviewApplyMemoryReviewDecisions"]


class ApplyMemoryReviewApplyMemoryReviewReview(BaseModel):
    id: str
    status: MemoryReviewStatus
    applied_at: Optional[datetime] = Field(validation_alias="appliedAt", serialization_alias="appliedAt")


ApplyMemoryReviewApplyMemoryReviewMemories = MemoryVersionFields


class ApplyMemoryReviewApplyMemoryReviewDecisions(BaseModel):
    candidate: int
    summary: str
    action: MemoryDecisionAction
    applied: MemoryDecisionAction
    record_id: Optional[str] = Field(validation_alias="recordId", serialization_alias="recordId")
    restates: Optional[str]
    similarity: Optional[float]


ApplyMemoryReview.model_rebuild()
ApplyMemoryReviewApplyMemoryReview.model_rebuild()
