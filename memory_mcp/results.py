"""What an MCP call answers: the mutation's answer read back as a tool result.

Each tool's mutation is asked for what the model needs (:data:`SELECTIONS`). The
result's ``structuredContent`` is that answer as GraphQL gave it; its text is what the
model reads: memory text always inside the ``<memory>`` block that says it is data,
never instructions (R44, :func:`server.domain.marking.memory_block`), with the same
``kind`` and ``notice`` as ``recall``'s answer. A refusal is a result with ``isError``
whose text is the GraphQL error's message, its code and field beside it (R24).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Any

from mcp import types

from server.domain.marking import MEMORY_KIND, MEMORY_NOTICE, Remembered, memory_block

_VERSION = "id recordId status summary content kind labels createdAt"
SELECTIONS: dict[str, str] = {
    "search_memory": f"execution {{ id }} nextCursor results {{ score version {{ {_VERSION} }} }}",
    "read_memory": f"execution {{ id }} sources {{ {_VERSION} }}",
    "add_memory": f"execution {{ id }} memories {{ {_VERSION} }}",
    "delete_memory": f"execution {{ id }} memories {{ {_VERSION} }}",
    "search_history": "execution { id } results { eventId turn role toolName isError header "
    "text part parts score }",
}
RECALL_SELECTION = f"kind notice text recorded results {{ score version {{ {_VERSION} }} }}"


def _remembered(version: dict[str, Any]) -> Remembered:
    return Remembered(
        record_id=uuid.UUID(version["recordId"]),
        kind=version["kind"],
        saved=datetime.fromisoformat(version["createdAt"]).date(),
        summary=version["summary"],
        content=version["content"],
        status=version["status"],
    )


def _marked(answer: dict[str, Any]) -> dict[str, Any]:
    return {"kind": MEMORY_KIND, "notice": MEMORY_NOTICE, **answer}


def _search_memory(answer: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    found = [_remembered(r["version"]) for r in answer["results"]]
    text = memory_block(found) or "No memory records matched."
    if answer["nextCursor"] is not None:
        text += f'\nMore records: call search_memory again with after="{answer["nextCursor"]}".'
    return text, _marked(answer)


def _read_memory(answer: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return memory_block([_remembered(v) for v in answer["sources"]]), _marked(answer)


def _written(answer: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """What add_memory or delete_memory wrote: the new record, and each record whose
    status it changed (SUPERSEDED, DELETED)."""
    lines = [
        f"Saved memory record {v['recordId']}."
        if v["status"] == "ACTIVE"
        else f"Memory record {v['recordId']} is now {v['status']}."
        for v in answer["memories"]
    ]
    return " ".join(lines), answer


def _search_history(answer: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    blocks = []
    for hit in answer["results"]:
        where = f"event {hit['eventId']}"
        if hit["part"] is not None:
            where += f", part {hit['part']} of {hit['parts']}"
        blocks.append(f"[{where}]\n{hit['text']}")
    return "\n\n".join(blocks) or "No earlier turn of this session matched.", answer


RENDER: dict[str, Callable[[dict[str, Any]], tuple[str, dict[str, Any]]]] = {
    "search_memory": _search_memory,
    "read_memory": _read_memory,
    "add_memory": _written,
    "delete_memory": _written,
    "search_history": _search_history,
}


def answered(tool: str, answer: dict[str, Any]) -> types.CallToolResult:
    text, structured = RENDER[tool](answer)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structuredContent=structured
    )


def refused(message: str, extensions: dict[str, Any]) -> types.CallToolResult:
    """A refused call, as the model reads it: the GraphQL path's message (R24)."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)],
        structuredContent={"error": {"message": message, **extensions}},
        isError=True,
    )
