"""An OpenAI Agents SDK agent whose memory is agent-memory's MCP tools (docs/mcp.md,
"OpenAI Agents SDK").

Unbound: the agent's runtime token is all it needs. Each tool call runs in a turn of
its own, committed when the call succeeds, in one session kept for the MCP connection.
Any model the SDK runs works ("gpt-5", a LiteLLM model, ...).
"""

from __future__ import annotations

from agents import Agent, Model, Runner
from agents.mcp import MCPServerStreamableHttp


async def ask(url: str, token: str, model: str | Model, message: str) -> str:
    """The agent's answer to ``message``, its memory tools served by ``url``."""
    async with MCPServerStreamableHttp(
        name="agent-memory",
        params={"url": f"{url}/mcp", "headers": {"Authorization": f"Bearer {token}"}},
        cache_tools_list=True,
    ) as memory:
        agent = Agent(
            name="assistant",
            instructions="Search your memory before answering; save what is worth keeping.",
            model=model,
            mcp_servers=[memory],
        )
        result = await Runner.run(agent, message)
        return str(result.final_output)
