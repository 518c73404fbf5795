from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .enums import TranscriptEventKind


class RecordEvents(BaseModel):
    record_events: "RecordEventsRecordEvents" = Field(validation_alias="recordEvents", serialization_alias="recordEvents")


class RecordEventsRecordEvents(BaseModel):
    events: list["RecordEventsRecordEventsEvents"]


class RecordEventsRecordEventsEvents(BaseModel):
    id: str
    sequence: int
    type_: TranscriptEventKind = Field(validation_alias="type", serialization_alias="type")
    tool_name: Optional[str] = Field(validation_alias="toolName", serialization_alias="toolName")
    tool_call_id: Optional[str] = Field(validation_alias="toolCallId", serialization_alias="toolCallId")


RecordEvents.model_rebuild()
RecordEventsRecordEvents.model_rebuild()
