"""A LangGraph agent whose memory is agent-memory's MCP tools, inside a turn its host
opens and commits (docs/mcp.md, "LangGraph").

The host (this program) opens a turn over GraphQL, connects to /mcp naming that turn
(the Agent-Memory-Turn header), runs the agent, then commits the turn, or rolls it
back if the run failed: what the agent saved reaches later turns only once committed.
Any LangChain chat model that calls tools works (ChatAnthropic, ChatOpenAI, ...).
"""

from __future__ import annotations

from typing import Any

import httpx
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AnyMessage, HumanMessage, SystemMessage
from langchain_core.tools import BaseTool
from langchain_mcp_adapters.client import MultiServerMCPClient
from langchain_mcp_adapters.tools import load_mcp_tools
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition

BEGIN = "mutation($s: ID!) { beginTurn(input: {sessionId: $s}) { turn { id } instructions } }"
COMMIT = "mutation($t: ID!) { commitTurn(input: {turnId: $t}) { turn { status } } }"
ROLLBACK = "mutation($t: ID!) { rollbackTurn(input: {turnId: $t}) { turn { status } } }"


async def graphql(http: httpx.AsyncClient, query: str, **variables: Any) -> dict[str, Any]:
    body: dict[str, Any] = (
        await http.post("/graphql", json={"query": query, "variables": variables})
    ).json()
    if body.get("errors"):
        raise RuntimeError(body["errors"][0]["message"])
    return dict(body["data"])


def agent_graph(
    model: BaseChatModel, tools: list[BaseTool]
) -> CompiledStateGraph[Any, Any, Any, Any]:
    """A tool-calling loop: the model, then the tools it called, until it answers."""
    llm = model.bind_tools(tools)

    async def think(state: MessagesState) -> dict[str, list[AnyMessage]]:
        return {"messages": [await llm.ainvoke(state["messages"])]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", think)
    graph.add_node("tools", ToolNode(tools))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    return graph.compile()


async def run_turn(
    url: str, token: str, session_id: str, model: BaseChatModel, message: str
) -> list[AnyMessage]:
    """One turn of the session: the conversation it ran, once committed."""
    auth = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=url, headers=auth) as http:
        begun = (await graphql(http, BEGIN, s=session_id))["beginTurn"]
        turn = begun["turn"]["id"]
        memory = MultiServerMCPClient(
            {
                "memory": {
                    "transport": "streamable_http",
                    "url": f"{url}/mcp",
                    "headers": {**auth, "Agent-Memory-Turn": turn},
                }
            }
        )
        try:
            async with memory.session("memory") as session:
                agent = agent_graph(model, await load_mcp_tools(session))
                # the turn's instructions: its pinned memory, and when to search history
                opening: list[AnyMessage] = (
                    [SystemMessage(begun["instructions"])] if begun["instructions"] else []
                )
                state = await agent.ainvoke({"messages": [*opening, HumanMessage(message)]})
        except BaseException:
            await graphql(http, ROLLBACK, t=turn)
            raise
        await graphql(http, COMMIT, t=turn)
    return list(state["messages"])
