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
    page_info: "AgentSessionsAgentSessionsPageInfo" = Field(alias="pageInfo")
    total_count: Optional[int] = Field(alias="totalCount")


class AgentSessionsAgentSessionsEdges(BaseModel):
    node: "AgentSessionsAgentSessionsEdgesNode"


class AgentSessionsAgentSessionsEdgesNode(BaseModel):
    id: str
    external_id: Optional[str] = Field(alias="externalId")
    created_at: datetime = Field(alias="createdAt")


class AgentSessionsAgentSessionsPageInfo(BaseModel):
    has_next_page: bool = Field(alias="hasNextPage")
    has_previous_page: bool = Field(alias="hasPreviousPage")
    start_cursor: Optional[str] = Field(alias="startCursor")
    end_cursor: Optional[str] = Field(alias="endCursor")


AgentSessions.model_rebuild()
AgentSessionsAgent.model_rebuild()
AgentSessionsAgentSessions.model_rebuild()
AgentSessionsAgentSessionsEdges.model_rebuild()
