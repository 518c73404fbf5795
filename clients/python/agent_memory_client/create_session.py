from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class CreateSession(BaseModel):
    create_session: "CreateSessionCreateSession" = Field(validation_alias="createSession", serialization_alias="createSession")


class CreateSessionCreateSession(BaseModel):
    session: "CreateSessionCreateSessionSession"


class CreateSessionCreateSessionSession(BaseModel):
    id: str
    external_id: Optional[str] = Field(validation_alias="externalId", serialization_alias="externalId")
    created_at: datetime = Field(validation_alias="createdAt", serialization_alias="createdAt")


CreateSession.model_rebuild()
CreateSessionCreateSession.model_rebuild()
