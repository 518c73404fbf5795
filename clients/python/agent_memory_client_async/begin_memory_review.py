from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import HistoryRole, MemoryReviewStatus


class BeginMemoryReview(BaseModel):
    begin_memory_review: "BeginMemoryReviewBeginMemoryReview" = Field(
        alias="beginMemoryReview"
    )


class BeginMemoryReviewBeginMemoryReview(BaseModel):
    due: bool
    reason: str
    messages: int
    review: Optional["BeginMemoryReviewBeginMemoryReviewReview"]
    instructions: Optional[str]
    conversation: list["BeginMemoryReviewBeginMemoryReviewConversation"]
    text: Optional[str]


class BeginMemoryReviewBeginMemoryReviewReview(BaseModel):
    id: str
    status: MemoryReviewStatus
    after_turn: int = Field(validation_alias="afterTurn", serialization_alias="afterTurn")
    through_turn: int = Field(validation_alias="throughTurn", serialization_alias="throughTurn")
    execution: "BeginMemoryReviewBeginMemoryReviewReviewExecution"


class BeginMemoryReviewBeginMemoryReviewReviewExecution(BaseModel):
    id: str


class BeginMemoryReviewBeginMemoryReviewConversation(BaseModel):
    turn: int
    role: HistoryRole
    tool_name: Optional[str] = Field(validation_alias="toolName", serialization_alias="toolName")
    header: str
    text: str


BeginMemoryReview.model_rebuild()
BeginMemoryReviewBeginMemoryReview.model_rebuild()
BeginMemoryReviewBeginMemoryReviewReview.model_rebuild()
