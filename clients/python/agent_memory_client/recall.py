from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import SearchResultFields


class Recall(BaseModel):
    recall: "RecallRecall"


class RecallRecall(BaseModel):
    kind: str
    notice: str
    text: str
    recorded: bool
    results: list["RecallRecallResults"]
    execution: Optional["RecallRecallExecution"]
    repeat_of: Optional["RecallRecallRepeatOf"] = Field(validation_alias="repeatOf", serialization_alias="repeatOf")


RecallRecallResults = SearchResultFields


class RecallRecallExecution(BaseModel):
    id: str


class RecallRecallRepeatOf(BaseModel):
    id: str


Recall.model_rebuild()
RecallRecall.model_rebuild()
