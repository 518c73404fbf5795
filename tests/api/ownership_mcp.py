"""The MCP cases of tests/api/test_ownership.py, generated like the GraphQL ones: every
id place of every MCP tool's arguments (from the tools' JSON Schemas, as the world's
configuration offers them) and of what a call's binding names (memory_mcp/turns.py:
the turn, the calling execution and the model call of a bound call; the session or the
agent of an unbound call's own turn), each with the GraphQL input field it becomes,
whose ownership rule (resolvers/id_fields.py) decides what it must be refused for."""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any

from memory_mcp import tools
from memory_mcp.endpoint import META
from memory_mcp.turns import BOUND_FIELDS, UNBOUND_FIELDS
from resolvers.id_fields import FIELDS, Need
from resolvers.kinds import Kind
from server.domain.config import parse_config
from tests.api.ownership_cases import DISTANCES, GRAPHQL, RUNTIMES, expected
from tests.api.ownership_world import CONFIG, OWN, World, distances


@dataclass(frozen=True)
class McpPlace:
    tool: str
    key: str  # the argument, or the binding's key (turn, execution, ...)
    bound: bool  # a key of the binding's, given in _meta
    many: bool  # a list of ids
    owner: str  # the GraphQL input type and field it becomes: FIELDS' key
    name: str

    @property
    def rule(self) -> tuple[Kind, Need]:
        kind, need = FIELDS[(self.owner, self.name)]
        assert kind is not None
        return kind, need


def _places() -> list[McpPlace]:
    config = parse_config(CONFIG, sessionless=False)
    out = []
    for tool in tools.definitions(GRAPHQL, config):
        spec = tools.SPECS[tool.name]
        for arg, prop in tool.inputSchema["properties"].items():
            many = prop["type"] == "array"
            if (prop["items"] if many else prop).get("format") == "uuid":
                out.append(McpPlace(tool.name, arg, False, many, spec.input_type, arg))
        for key, field in BOUND_FIELDS.items():
            out.append(McpPlace(tool.name, key, True, False, spec.input_type, field))
    for key, field in UNBOUND_FIELDS.items():
        out.append(McpPlace("search_memory", key, True, False, "BeginTurnInput", field))
    return out


MCP_PLACES = _places()
# (place, caller): each is refused at every distance the oracle refuses
MCP_CASES = [
    (place, caller)
    for place in MCP_PLACES
    for caller in RUNTIMES
    if any(
        expected(place.rule[1], place.rule[0], caller, d) is not None
        for d in set(DISTANCES) & distances(place.rule[0])
    )
]


def refused_at(place: McpPlace, caller: str) -> list[tuple[str, str]]:
    """The distances ``place`` is refused at for ``caller``, with the code."""
    kind, need = place.rule
    out = []
    for distance in DISTANCES:
        if distance in distances(kind):
            code = expected(need, kind, caller, distance)
            if code is not None:
                out.append((distance, code))
    return out


def base_call(world: World, tool: str) -> tuple[dict[str, Any], dict[str, str]]:
    """A call of ``tool`` naming agent A's own objects: its arguments, and the _meta of
    its binding to A's open turn T."""
    a = world.lives["A"]
    record, event = world.at[Kind.MEMORY_RECORD][OWN], world.at[Kind.HISTORY_EVENT][OWN]
    arguments: dict[str, dict[str, Any]] = {
        "search_memory": {"query": "tea", "ids": [record]},
        "add_memory": {"summary": "new", "replaces": record},
        "read_memory": {"id": record},
        "delete_memory": {"id": record},
        "search_history": {"ids": [event]},
    }
    bound = {"turn": a.turn, "execution": a.execution, "invocation": a.invocation}
    return arguments[tool], {f"{META}{k}": v for k, v in bound.items()}


def substituted(
    world: World, place: McpPlace, foreign: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """The base call of ``place``'s tool with ``foreign`` in ``place``: an unbound call's
    binding names only its session or agent."""
    arguments, meta = copy.deepcopy(base_call(world, place.tool))
    if place.key in UNBOUND_FIELDS:
        return arguments, {f"{META}{place.key}": foreign}
    if place.bound:
        meta[f"{META}{place.key}"] = foreign
    else:
        arguments[place.key] = [foreign] if place.many else foreign
    return arguments, meta
