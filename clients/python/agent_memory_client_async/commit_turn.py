from pydantic import Field

from .base_model import BaseModel
from .fragments import TurnFields


class CommitTurn(BaseModel):
    commit_turn: "CommitTurnCommitTurn" = Field(validation_alias="commitTurn", serialization_alias="commitTurn")


class CommitTurnCommitTurn(BaseModel):
    turn: "CommitTurnCommitTurnTurn"


CommitTurnCommitTurnTurn = TurnFields
CommitTurn.model_rebuild()
CommitTurnCommitTurn.model_rebuild()
