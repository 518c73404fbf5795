from typing import Any, Optional

from pydantic import Field

from .base_model import BaseModel


class PublishAgentVersion(BaseModel):
    publish_agent_version: "PublishAgentVersionPublishAgentVersion" = Field(
        alias="publishAgentVersion"
    )


class PublishAgentVersionPublishAgentVersion(BaseModel):
    agent_version: "PublishAgentVersionPublishAgentVersionAgentVersion" = Field(
        alias="agentVersion"
    )


class PublishAgentVersionPublishAgentVersionAgentVersion(BaseModel):
    id: str
    number: int
    label: Optional[str]
    config: Any
    effective_memory_config: Any = Field(validation_alias="effectiveMemoryConfig", serialization_alias="effectiveMemoryConfig")


PublishAgentVersion.model_rebuild()
PublishAgentVersionPublishAgentVersion.model_rebuild()
