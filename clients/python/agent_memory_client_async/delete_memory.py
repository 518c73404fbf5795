from pydantic import Field

from .base_model import BaseModel
from .fragments import MemoryVersionFields


class DeleteMemory(BaseModel):
    delete_memory: "DeleteMemoryDeleteMemory" = Field(validation_alias="deleteMemory", serialization_alias="deleteMemory")


class DeleteMemoryDeleteMemory(BaseModel):
    execution: "DeleteMemoryDeleteMemoryExecution"
    memories: list["DeleteMemoryDeleteMemoryMemories"]


class DeleteMemoryDeleteMemoryExecution(BaseModel):
    id: str


DeleteMemoryDeleteMemoryMemories = MemoryVersionFields
DeleteMemory.model_rebuild()
DeleteMemoryDeleteMemory.model_rebuild()
