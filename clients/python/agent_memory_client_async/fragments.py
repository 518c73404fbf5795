from datetime import datetime
from typing import Any, Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import MemoryStatus, Scope, TurnStatus


class MemoryVersionFields(BaseModel):
    id: str
    record_id: str = Field(validation_alias="recordId", serialization_alias="recordId")
    number: int
    status: MemoryStatus
    summary: str
    content: Optional[str]
    kind: str
    labels: Any
    label_list: list["MemoryVersionFieldsLabelList"] = Field(validation_alias="labelList", serialization_alias="labelList")
    created_at: datetime = Field(validation_alias="createdAt", serialization_alias="createdAt")


class MemoryVersionFieldsLabelList(BaseModel):
    name: str
    value: str


class SearchResultFields(BaseModel):
    score: Optional[float]
    cosine: Optional[float]
    lexical: Optional[float]
    version: "SearchResultFieldsVersion"
    record: "SearchResultFieldsRecord"


class SearchResultFieldsVersion(MemoryVersionFields):
    pass


class SearchResultFieldsRecord(BaseModel):
    id: str
    scope: Scope
    status: MemoryStatus
    pinned: bool
    preview: bool


class TurnFields(BaseModel):
    id: str
    number: int
    attempt: int
    status: TurnStatus
    preview: bool
    error: Optional[str]
    created_at: datetime = Field(validation_alias="createdAt", serialization_alias="createdAt")
    ended_at: Optional[datetime] = Field(validation_alias="endedAt", serialization_alias="endedAt")


MemoryVersionFields.model_rebuild()
SearchResultFields.model_rebuild()
TurnFields.model_rebuild()
