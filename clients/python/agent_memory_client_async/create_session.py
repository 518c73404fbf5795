from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class CreateSession(BaseModel):
    create_session: "CreateSessionCreateSession" = Field(alias="createSession")


class CreateSessionCreateSession(BaseModel):
    session: "CreateSessionCreateSessionSession"


class CreateSessionCreateSessionSession(BaseModel):
    id: str
    external_id: Optional[str] = Field(alias="externalId")
    created_at: datetime = Field(alias="createdAt")


CreateSession.model_rebuild()
CreateSessionCreateSession.model_rebuild()
