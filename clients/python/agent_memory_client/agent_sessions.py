from datetime import datetime
from typing import Optional

from pydantic import Field

from .base_model import BaseModel


class AgentSessions(BaseModel):
    agent: Optional["AgentSessionsAgent"]


class AgentSessionsAgent(BaseModel):
    id: str
    sessions: "AgentSessionsAgentSessions"


class AgentSessionsAgentSessions(BaseModel):
    edges: list["AgentSessionsAgentSessionsEdges"]
    page_info: "AgentSessionsAgentSessionsPageInfo" = Field(validation_alias="pageInfo", serialization_alias="pageInfo")
    total_count: Optional[int] = Field(validation_alias="totalCount", serialization_alias="totalCount")


class AgentSessionsAgentSessionsEdges(BaseModel):
    node: "AgentSessionsAgentSessionsEdgesNode"


class AgentSessionsAgentSessionsEdgesNode(BaseModel):
    id: str
    external_id: Optional[str] = Field(validation_alias="externalId", serialization_alias="externalId")
    created_at: datetime = Field(validation_alias="createdAt", serialization_alias="createdAt")


class AgentSessionsAgentSessionsPageInfo(BaseModel):
    has_next_page: bool = Field(validation_alias="hasNextPage", serialization_alias="hasNextPage")
    has_previous_page: bool = Field(validation_alias="hasPreviousPage", serialization_alias="hasPreviousPage")
    start_cursor: Optional[str] = Field(validation_alias="startCursor", serialization_alias="startCursor")
    end_cursor: Optional[str] = Field(validation_alias="endCursor", serialization_alias="endCursor")


AgentSessions.model_rebuild()
AgentSessionsAgent.model_rebuild()
AgentSessionsAgentSessions.model_rebuild()
AgentSessionsAgentSessionsEdges.model_rebuild()
