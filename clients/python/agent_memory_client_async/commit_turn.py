from pydantic import Field

from .base_model import BaseModel
from .fragments import TurnFields


class CommitTurn(BaseModel):
    commit_turn: "CommitTurnCommitTurn" = Field(alias="commitTurn")


CommitTurnCommitTurn = TurnFields
CommitTurn.model_rebuild()
