"""Every string a client sends is checked once, at the GraphQL boundary
(resolvers/inputs.py): PostgreSQL text and jsonb hold no NUL and no lone surrogate,
so such an argument, anywhere, is BAD_INPUT naming it, before any SQL is sent.
Names are matched whole: a trailing newline is not a valid name."""

from __future__ import annotations

from typing import Any

import pytest

from tests.api.scenario import CREATE_AGENT, INVOKE, START_EXECUTION, Scenario, memory_config
from tests.conftest import Api

FAIL = """
mutation($turn: UUID!, $error: String) {
  failTurn(input: {turnId: $turn, error: $error}) { id status }
}"""
SESSION = """
mutation($agent: UUID!, $external: String) {
  createSession(input: {agentId: $agent, externalId: $external}) { id }
}"""
PUBLISH = """
mutation($agent: UUID!, $config: JSON!, $label: String) {
  publishAgentVersion(input: {agentId: $agent, config: $config, label: $label}) { id }
}"""


async def _world(api: Api) -> dict[str, str]:
    s = Scenario(api)
    agent = await s.agent(memory_config())
    session = await s.session()
    begun = await s.begin(session)
    return {"agent": agent, "turn": begun["turn"]["id"], "execution": begun["execution"]["id"]}


def _calls(w: dict[str, str]) -> list[tuple[str, dict[str, Any], str]]:
    config = memory_config()
    return [
        (FAIL, {"turn": w["turn"], "error": "bo\x00om"}, "error"),
        (START_EXECUTION, {"turn": w["turn"], "kind": "HELPER", "name": "he\x00lp"}, "name"),
        (INVOKE, {"execution": w["execution"], "purpose": "TURN", "model": "m\x00"}, "model"),
        (SESSION, {"agent": w["agent"], "external": "ext\x00"}, "externalId"),
        (PUBLISH, {"agent": w["agent"], "config": config, "label": "v\x001"}, "label"),
        (
            PUBLISH,
            {"agent": w["agent"], "config": memory_config(kinds=["fact", "no\x00te"])},
            "config.harness.memory.kinds[1]",
        ),
        (
            PUBLISH,
            {"agent": w["agent"], "config": {"harness": {"memory\x00": {}}}},
            "config.harness.memory\\u0000",
        ),
        (PUBLISH, {"agent": w["agent"], "config": config, "label": "v\ud8001"}, "label"),
        (
            'query($after: String) { agents(namespace: "x", first: 2, after: $after) '
            "{ edges { cursor } } }",
            {"after": "c\x00"},
            "after",
        ),
    ]


async def test_nul_or_lone_surrogate_in_any_string_argument_is_bad_input(api: Api) -> None:
    """The fields an outside tester found answering INTERNAL, JSON strings and keys, a
    lone surrogate, a query argument: BAD_INPUT naming the field, and no SQL sent."""
    world = await _world(api)
    for query, variables, field in _calls(world):
        with api.count_statements():
            message, ext = await api.error(query, **variables)
        assert ext == {"code": "BAD_INPUT", "field": field}, (message, field)
        assert api.statements == 0, field
    # nothing changed: the turn is still open and fails normally
    data = await api.ok(FAIL, turn=world["turn"], error="boom")
    assert data["failTurn"]["status"] == "failed"


async def test_nul_in_a_string_literal_is_bad_input(api: Api) -> None:
    """A document's own literal may spell NUL as an escape; it is checked as well."""
    world = await _world(api)
    query = 'mutation($turn: UUID!) { failTurn(input: {turnId: $turn, error: "a\\u0000b"}) { id } }'
    _, ext = await api.error(query, turn=world["turn"])
    assert ext == {"code": "BAD_INPUT", "field": "error"}


@pytest.mark.parametrize(
    ("ns", "name", "field"),
    [("ns-ok", "nl\n", "name"), ("bada\n", "agent", "namespace"), ("ns-ok", "a\nb", "name")],
)
async def test_names_ending_in_a_newline_are_refused(
    api: Api, ns: str, name: str, field: str
) -> None:
    """A name is matched whole: ``$`` would let a trailing newline through."""
    _, ext = await api.error(CREATE_AGENT, ns=ns, name=name, sessionless=False)
    assert (ext["code"], ext["field"]) == ("BAD_INPUT", field)
