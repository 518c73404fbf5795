"""A deletion through the API is a version of the record: every reader says DELETED,
and its history says who deleted it (R21, R25, R71)."""

from __future__ import annotations

import uuid

from sqlalchemy import select

from server.models import Principal
from tests.api.scenario import READ, Scenario, memory_config, records
from tests.auth_helpers import bearer, run_as
from tests.conftest import Api

DELETE_API = "mutation($id: ID!) { deleteAgentMemory(input: {id: $id}) { record { id status } } }"
HISTORY = """
query($id: ID!) { agentMemory(id: $id) {
  status current { number status summary }
  versions { number status summary
    writtenBy { execution { id } turn { id } agentVersion { id } session { id }
      apiDeletion { principal { id name kind } caller createdAt } } } } }"""
WHO_DELETED = """
query($id: ID!) { agentMemory(id: $id) {
  versions { writtenBy { apiDeletion { principal { name kind } } } } } }"""


async def test_r71_an_api_deletion_is_a_deleted_version_every_reader_sees(api: Api) -> None:
    """R71, R25: after deleteAgentMemory, readMemory's sources, the record listing and
    agentMemory all say DELETED; the history holds a DELETED version whose provenance is
    the deleting principal (no execution, turn or agent version), and the first version
    is unchanged."""
    s = Scenario(api)
    ns = f"del{uuid.uuid4().hex[:8]}"
    await s.agent(memory_config(), namespace=ns)
    session = await s.session()
    record = await s.committed("Maria is allergic to peanuts", session)
    name = f"ops-dashboard-{uuid.uuid4().hex[:6]}"
    token = await bearer(
        api,
        kind="client",
        name=name,
        grants=(("SELECT", f"{ns}.AgentMemory.*"), ("UPDATE", f"{ns}.AgentMemory.*")),
    )
    deleted = await run_as(api, token, DELETE_API, id=record)
    assert deleted.errors is None, deleted.errors

    turn = await s.turn(session)
    read = (await api.ok(READ, turn=turn, id=record))["readMemory"]
    assert [(v["recordId"], v["status"]) for v in read["sources"]] == [(record, "DELETED")]
    assert read["execution"]["output"]["sources"][0]["status"] == "DELETED"

    (listed,) = await records(api, s.agent_id)
    assert (listed["status"], listed["current"]["status"]) == ("DELETED", "DELETED")

    kept = (await api.ok(HISTORY, id=record))["agentMemory"]
    assert kept["status"] == "DELETED"
    assert kept["current"] == {
        "number": 2,
        "status": "DELETED",
        "summary": "Maria is allergic to peanuts",
    }
    first, second = kept["versions"]
    assert (first["number"], first["status"]) == (1, "ACTIVE")
    assert first["writtenBy"]["execution"] is not None
    assert first["writtenBy"]["apiDeletion"] is None
    assert (second["number"], second["status"]) == (2, "DELETED")
    by = second["writtenBy"]
    assert (by["execution"], by["turn"], by["agentVersion"], by["session"]) == (None,) * 4
    async with api.database.session() as db:
        principal = await db.scalar(select(Principal).where(Principal.name == name))  # type: ignore[arg-type]
    assert principal is not None
    assert by["apiDeletion"]["principal"] == {
        "id": str(principal.id),
        "name": name,
        "kind": "CLIENT",
    }
    assert by["apiDeletion"]["caller"] and by["apiDeletion"]["createdAt"]

    # readable under the grants that read the version, as the rest of the history is
    reader = await bearer(api, kind="client", grants=(("SELECT", f"{ns}.AgentMemory.*"),))
    seen = await run_as(api, reader, WHO_DELETED, id=record)
    assert seen.errors is None, seen.errors
    assert [v["writtenBy"]["apiDeletion"] for v in seen.data["agentMemory"]["versions"]] == [
        None,
        {"principal": {"name": name, "kind": "CLIENT"}},
    ]
