from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import TranscriptEventKind


class RecordEvents(BaseModel):
    record_events: "RecordEventsRecordEvents" = Field(alias="recordEvents")


class RecordEventsRecordEvents(BaseModel):
    events: list["RecordEventsRecordEventsEvents"]


class RecordEventsRecordEventsEvents(BaseModel):
    id: str
    sequence: int
    type_: TranscriptEventKind = Field(alias="type")
    tool_name: Optional[str] = Field(alias="toolName")
    tool_call_id: Optional[str] = Field(alias="toolCallId")


RecordEvents.model_rebuild()
RecordEventsRecordEvents.model_rebuild()
