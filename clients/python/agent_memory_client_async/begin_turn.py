from pydantic import Field

from .base_model import BaseModel
from .fragments import TurnFields


class BeginTurn(BaseModel):
    begin_turn: "BeginTurnBeginTurn" = Field(validation_alias="beginTurn", serialization_alias="beginTurn")


class BeginTurnBeginTurn(BaseModel):
    turn: "BeginTurnBeginTurnTurn"
    execution: "BeginTurnBeginTurnExecution"
    pinned: list["BeginTurnBeginTurnPinned"]
    instructions: str


BeginTurnBeginTurnTurn = TurnFields


class BeginTurnBeginTurnExecution(BaseModel):
    id: str


class BeginTurnBeginTurnPinned(BaseModel):
    record_id: str = Field(validation_alias="recordId", serialization_alias="recordId")
    version_id: str = Field(validation_alias="versionId", serialization_alias="versionId")
    summary: str
    line: str


BeginTurn.model_rebuild()
BeginTurnBeginTurn.model_rebuild()
