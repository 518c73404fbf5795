from typing import Optional

from pydantic import Field

from .base_model import BaseModel
from .fragments import SearchResultFields


class SearchAgentMemory(BaseModel):
    search_agent_memory: Optional[list["SearchAgentMemorySearchAgentMemory"]] = Field(
        alias="searchAgentMemory"
    )


SearchAgentMemorySearchAgentMemory = SearchResultFields
SearchAgentMemory.model_rebuild()
