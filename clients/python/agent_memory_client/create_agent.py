from datetime import datetime

from pydantic import Field

from .base_model import BaseModel


class CreateAgent(BaseModel):
    create_agent: "CreateAgentCreateAgent" = Field(validation_alias="createAgent", serialization_alias="createAgent")


class CreateAgentCreateAgent(BaseModel):
    agent: "CreateAgentCreateAgentAgent"


class CreateAgentCreateAgentAgent(BaseModel):
    id: str
    namespace: str
    name: str
    sessionless: bool
    created_at: datetime = Field(validation_alias="createdAt", serialization_alias="createdAt")


CreateAgent.model_rebuild()
CreateAgentCreateAgent.model_rebuild()
