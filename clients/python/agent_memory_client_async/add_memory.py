from pydantic import Field

from .base_model import BaseModel
from .fragments import MemoryVersionFields


class AddMemory(BaseModel):
    add_memory: "AddMemoryAddMemory" = Field(validation_alias="addMemory", serialization_alias="addMemory")


class AddMemoryAddMemory(BaseModel):
    execution: "AddMemoryAddMemoryExecution"
    memories: list["AddMemoryAddMemoryMemories"]


class AddMemoryAddMemoryExecution(BaseModel):
    id: str


AddMemoryAddMemoryMemories = MemoryVersionFields
AddMemory.model_rebuild()
AddMemoryAddMemory.model_rebuild()
