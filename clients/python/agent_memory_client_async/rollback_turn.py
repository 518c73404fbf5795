from pydantic import Field

from .base_model import BaseModel
from .fragments import TurnFields


class RollbackTurn(BaseModel):
    rollback_turn: "RollbackTurnRollbackTurn" = Field(validation_alias="rollbackTurn", serialization_alias="rollbackTurn")


class RollbackTurnRollbackTurn(BaseModel):
    turn: "RollbackTurnRollbackTurnTurn"


class RollbackTurnRollbackTurnTurn(TurnFields):
    memories: list["RollbackTurnRollbackTurnTurnMemories"]


class RollbackTurnRollbackTurnTurnMemories(BaseModel):
    id: str


RollbackTurn.model_rebuild()
RollbackTurnRollbackTurn.model_rebuild()
RollbackTurnRollbackTurnTurn.model_rebuild()
