"""The agent frameworks' own MCP clients against /mcp, as docs/mcp.md sets them up
(examples/mcp_langgraph.py, examples/mcp_openai_agents.py, run as they are), each
driven by a scripted model: it searches its memory, then saves a fact.

- LangGraph through langchain-mcp-adapters, bound: inside a turn its host opens and
  commits, after which the record is readable over GraphQL.
- The OpenAI Agents SDK's Streamable HTTP client, unbound: each call commits in a turn
  of its own, so the record is readable once the call returns.
"""

from __future__ import annotations

import importlib.util
import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from agents import Model, ModelResponse, Usage, set_tracing_disabled
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, ToolMessage
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputMessage,
    ResponseOutputText,
)

from server.domain.marking import MEMORY_NOTICE
from tests.api.scenario import Scenario, memory_config
from tests.auth_helpers import bearer, run_as
from tests.conftest import Api

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
SAVED = re.compile(r"Saved memory record ([0-9a-f-]{36})\.")
RECORD = """query($id: ID!) { agentMemory(id: $id) { status current { summary kind }
  writtenBy { turn { status } } } }"""
CONFIG = memory_config(
    read=["session", "agent"], write=["session", "agent"], tools=["add_memory"], kinds=["fact"]
)


def _example(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def _agent(api: Api) -> tuple[Scenario, str]:
    s = Scenario(api)
    agent = await s.agent(CONFIG)
    await s.committed("Ada lives in Lisbon", await s.session(), kind="fact", scope="AGENT")
    return s, await bearer(api, kind="runtime", agent_id=agent)


async def _record(api: Api, token: str, record: str) -> dict[str, Any]:
    result = await run_as(api, token, RECORD, id=record)
    assert not result.errors, result.errors
    return dict(result.data["agentMemory"])


class ScriptedChatModel(GenericFakeChatModel):
    """LangChain's fake chat model, which answers the messages it is given in turn; it
    takes tools as a tool-calling model does (its script already calls them)."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self


async def test_a_langgraph_agent_saves_in_the_turn_its_host_commits(live: str, api: Api) -> None:
    s, token = await _agent(api)
    session = await s.session()
    script = [
        AIMessage(
            "",
            tool_calls=[{"name": "search_memory", "args": {"query": "Ada's city"}, "id": "c1"}],
        ),
        AIMessage(
            "",
            tool_calls=[
                {
                    "name": "add_memory",
                    "args": {"summary": "Ada moved to Porto", "kind": "fact"},
                    "id": "c2",
                }
            ],
        ),
        AIMessage("Noted: Ada lives in Porto now."),
    ]
    model = ScriptedChatModel(messages=iter(script))
    messages = await _example("mcp_langgraph").run_turn(
        live, token, session, model, "Ada has moved to Porto."
    )
    found, saved = (m for m in messages if isinstance(m, ToolMessage))
    assert "Ada lives in Lisbon" in found.text  # an earlier session's, in agent scope
    assert saved.status == "success"
    match = SAVED.search(saved.text)
    assert match, saved.text
    record = await _record(api, token, match.group(1))
    assert record["current"] == {"summary": "Ada moved to Porto", "kind": "fact"}
    assert record["status"] == "ACTIVE" and record["writtenBy"]["turn"]["status"] == "COMMITTED"
    assert messages[-1].text == "Noted: Ada lives in Porto now."


async def test_a_langgraph_agent_sees_memory_marked_and_refusals_as_tool_errors(
    live: str, api: Api
) -> None:
    """What the model reads: recalled memory inside the marked block (R44), and a refused
    call as a tool error it can correct (R24), not a crashed run."""
    s, token = await _agent(api)
    session = await s.session()
    await s.committed("Bea prefers tea", session, kind="fact")
    script = [
        AIMessage("", tool_calls=[{"name": "search_memory", "args": {"query": "Bea"}, "id": "a"}]),
        AIMessage(
            "",
            tool_calls=[
                {"name": "add_memory", "args": {"summary": "x", "kind": "opinion"}, "id": "b"}
            ],
        ),
        AIMessage("Done."),
    ]
    messages = await _example("mcp_langgraph").run_turn(
        live, token, session, ScriptedChatModel(messages=iter(script)), "What does Bea drink?"
    )
    found, refused = (m for m in messages if isinstance(m, ToolMessage))
    assert found.text.startswith(f"<memory>\n{MEMORY_NOTICE}") and "Bea prefers tea" in found.text
    assert refused.status == "error" and "kind 'opinion' is not declared" in refused.text


class ScriptedModel(Model):
    """An Agents SDK model that answers each request with the next step of its script:
    tool calls, then a message."""

    def __init__(self, steps: list[list[tuple[str, dict[str, Any]]] | str]) -> None:
        self.steps: Iterator[list[tuple[str, dict[str, Any]]] | str] = iter(steps)
        self.seen: list[Any] = []

    async def get_response(self, *args: Any, **kwargs: Any) -> ModelResponse:
        self.seen.append(kwargs.get("input", args[1] if len(args) > 1 else None))
        step = next(self.steps)
        n = len(self.seen)
        output: list[Any]
        if isinstance(step, str):
            text = ResponseOutputText(type="output_text", text=step, annotations=[])
            output = [
                ResponseOutputMessage(
                    id="m", type="message", role="assistant", status="completed", content=[text]
                )
            ]
        else:
            output = [
                ResponseFunctionToolCall(
                    type="function_call", call_id=f"c{n}.{i}", name=name, arguments=json.dumps(args)
                )
                for i, (name, args) in enumerate(step)
            ]
        return ModelResponse(output=output, usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")


@pytest.fixture
def no_tracing() -> Iterator[None]:
    """The Agents SDK exports traces to its vendor unless told not to."""
    set_tracing_disabled(True)
    yield
    set_tracing_disabled(False)


# the Agents SDK opens its connection with the mcp SDK's older name for the same client
@pytest.mark.filterwarnings("ignore:Use `streamable_http_client` instead:DeprecationWarning")
async def test_an_openai_agent_saves_unbound(live: str, api: Api, no_tracing: None) -> None:
    _, token = await _agent(api)
    model = ScriptedModel(
        [
            [("search_memory", {"query": "Ada's city"})],
            [("add_memory", {"summary": "Ada moved to Porto", "kind": "fact"})],
            "Noted: Ada lives in Porto now.",
        ]
    )
    answer = await _example("mcp_openai_agents").ask(live, token, model, "Ada moved to Porto.")
    assert answer == "Noted: Ada lives in Porto now."
    outputs = [
        item["output"]
        for item in model.seen[-1]
        if isinstance(item, dict) and item.get("type") == "function_call_output"
    ]
    assert len(outputs) == 2
    assert "Ada lives in Lisbon" in str(outputs[0]) and MEMORY_NOTICE in str(outputs[0])
    match = SAVED.search(str(outputs[1]))
    assert match, outputs
    record = await _record(api, token, match.group(1))
    assert record["current"] == {"summary": "Ada moved to Porto", "kind": "fact"}
    assert record["writtenBy"]["turn"]["status"] == "COMMITTED"
