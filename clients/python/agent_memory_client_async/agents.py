from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class Agents(BaseModel):
    agents: "AgentsAgents"


class AgentsAgents(BaseModel):
    edges: list["AgentsAgentsEdges"]
    page_info: "AgentsAgentsPageInfo" = Field(validation_alias="pageInfo", serialization_alias="pageInfo")


class AgentsAgentsEdges(BaseModel):
    node: "AgentsAgentsEdgesNode"


class AgentsAgentsEdgesNode(BaseModel):
    id: str
    namespace: str
    name: str
    sessionless: bool
    created_at: datetime = Field(validation_alias="createdAt", serialization_alias="createdAt")


class AgentsAgentsPageInfo(BaseModel):
    has_next_page: bool = Field(validation_alias="hasNextPage", serialization_alias="hasNextPage")
    end_cursor: Optional[str] = Field(validation_alias="endCursor", serialization_alias="endCursor")


Agents.model_rebuild()
AgentsAgents.model_rebuild()
AgentsAgentsEdges.model_rebuild()
