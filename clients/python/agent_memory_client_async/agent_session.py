from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class AgentSession(BaseModel):
    agent: Optional["AgentSessionAgent"]


class AgentSessionAgent(BaseModel):
    id: str
    session: Optional["AgentSessionAgentSession"]


class AgentSessionAgentSession(BaseModel):
    id: str
    external_id: Optional[str] = Field(validation_alias="externalId", serialization_alias="externalId")
    created_at: datetime = Field(validation_alias="createdAt", serialization_alias="createdAt")


AgentSession.model_rebuild()
AgentSessionAgent.model_rebuild()
