from datetime import datetime
from typing import Optional
from uuid import UUID

from pydantic import Field

from .base_model import BaseModel


class AgentSessions(BaseModel):
    agent: "AgentSessionsAgent"


class AgentSessionsAgent(BaseModel):
    id: UUID
    sessions: "AgentSessionsAgentSessions"


class AgentSessionsAgentSessions(BaseModel):
    edges: list["AgentSessionsAgentSessionsEdges"]
    page_info: "AgentSessionsAgentSessionsPageInfo" = Field(alias="pageInfo")


class AgentSessionsAgentSessionsEdges(BaseModel):
    node: "AgentSessionsAgentSessionsEdgesNode"


class AgentSessionsAgentSessionsEdgesNode(BaseModel):
    id: UUID
    external_id: Optional[str] = Field(alias="externalId")
    created_at: datetime = Field(alias="createdAt")


class AgentSessionsAgentSessionsPageInfo(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    end_cursor: Optional[str] = Field(alias="endCursor")


AgentSessions.model_rebuild()
AgentSessionsAgent.model_rebuild()
AgentSessionsAgentSessions.model_rebuild()
AgentSessionsAgentSessionsEdges.model_rebuild()
