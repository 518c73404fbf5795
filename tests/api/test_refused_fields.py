"""A refused field never poisons the request's other fields (docs/security.md, "Errors at
the HTTP boundary"): every field answers on its own, with its own code, and a refusal is
never INTERNAL.

GraphQL resolves sibling fields concurrently and, when one of them fails where null is
not allowed, cancels the others. A statement cut short that way would leave the
operation's one database session unusable, and every later field INTERNAL; the session
lets each statement run to its end instead (server/session.py).
"""

from __future__ import annotations

import uuid

from tests.api.scenario import Scenario, memory_config
from tests.auth_helpers import bearer, run_as
from tests.conftest import Api


async def test_ten_refused_fields_and_one_allowed_field_give_exactly_one_datum(api: Api) -> None:
    """A client that may read a namespace's agents but not their memory asks, ten times,
    for an agent's versions beside its memory (refused: the agent is null) and once for
    the namespaces it may read: ten FORBIDDEN, one datum."""
    ns = f"rf{uuid.uuid4().hex[:8]}"
    s = Scenario(api)
    agent = await s.agent(memory_config(), namespace=ns)
    token = await bearer(api, kind="client", grants=(("SELECT", f"{ns}.Agent"),))
    refused = " ".join(
        f"a{i}: agent(id: $agent) {{ versions {{ id }} memoryRecords(first: 1) {{ totalCount }} }}"
        for i in range(10)
    )
    result = await run_as(api, token, f"query($agent: ID!) {{ {refused} namespaces }}", agent=agent)
    assert result.data == {**{f"a{i}": None for i in range(10)}, "namespaces": [ns]}
    assert sorted({str(e.path[0]) for e in result.errors}) == sorted(f"a{i}" for i in range(10))
    assert {(e.extensions or {}).get("code") for e in result.errors} == {"FORBIDDEN"}


async def test_a_refused_list_beside_another_field_is_forbidden_not_internal(api: Api) -> None:
    """A client with no policy asks for the namespaces it may read and a namespace's agents
    in one document: the list is refused (FORBIDDEN, and the whole answer null, as the
    schema makes the list non-null), never INTERNAL."""
    token = await bearer(api, kind="client")
    result = await run_as(
        api,
        token,
        '{ namespaces agents(namespace: "financial", first: 1) { edges { node { id } } } }',
    )
    assert result.data is None
    assert [(e.extensions or {}).get("code") for e in result.errors] == ["FORBIDDEN"]


async def test_introspection_of_a_type_answers_in_dev_mode(api: Api) -> None:
    """In development mode introspection is on: ``__type`` answers the type (the id check
    of every field's arguments lets introspection fields through)."""
    token = await bearer(api, kind="client")
    result = await run_as(api, token, '{ __type(name: "Query") { name fields { name } } }')
    assert result.errors is None, result.errors
    assert result.data["__type"]["name"] == "Query"
    assert {"agent", "node"} <= {f["name"] for f in result.data["__type"]["fields"]}
