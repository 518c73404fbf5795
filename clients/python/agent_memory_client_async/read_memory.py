from pydantic import Field

from .base_model import BaseModel
from .fragments import MemoryVersionFields


class ReadMemory(BaseModel):
    read_memory: "ReadMemoryReadMemory" = Field(validation_alias="readMemory", serialization_alias="readMemory")


class ReadMemoryReadMemory(BaseModel):
    execution: "ReadMemoryReadMemoryExecution"
    sources: list["ReadMemoryReadMemorySources"]


class ReadMemoryReadMemoryExecution(BaseModel):
    id: str


ReadMemoryReadMemorySources = MemoryVersionFields
ReadMemory.model_rebuild()
ReadMemoryReadMemory.model_rebuild()
