"""The dashboard's memory search and namespace list: ``searchAgentMemory`` ranks an
agent's records by text under the reader's grants (R41, R71) and records nothing;
``namespaces`` lists what the reader may browse."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import pytest
from sqlalchemy import text

from tests.api.scenario import DELETE, Scenario, memory_config
from tests.auth_helpers import bearer, codes, run_as, statements
from tests.conftest import Api

LABELS = {"customer_id": {"number": 5, "description": "The customer the memory is about."}}
SEARCH = """
query($agent: ID!, $q: String!, $limit: Int, $kind: String, $labels: [LabelInput!]) {
  searchAgentMemory(agentId: $agent, query: $q, limit: $limit, kind: $kind, labels: $labels) {
    score cosine lexical
    version { summary kind status }
    record { id scope status }
  }
}"""
NAMESPACES = "{ namespaces }"
RECORDED = ("executions", "invocations", "transcript_events", "output_uses", "memory_versions")


@dataclass
class Memory:
    ns: str
    agent: str
    invoices: str
    office: str
    agent_scope: str
    deleted: str
    replaced: str
    other_ns: str
    other_agent: str


@pytest.fixture(scope="module")
async def memory(api: Api) -> Memory:
    ns = f"dsa{uuid.uuid4().hex[:8]}"
    s = Scenario(api)
    agent = await s.agent(
        memory_config(read=["session", "agent"], write=["session", "agent"], labels=LABELS),
        namespace=ns,
    )
    session = await s.session()
    turn = await s.turn(session)
    invoices = await s.add_id(
        turn,
        "The customer wants invoices sent by email",
        kind="fact",
        labels={"customer_id": "c1"},
    )
    office = await s.add_id(turn, "The office opens at nine in the morning", kind="event")
    agent_scope = await s.add_id(
        turn, "Invoices are due within thirty days", kind="guidance", scope="AGENT"
    )
    deleted = await s.add_id(turn, "Invoices go to the old postal address", kind="fact")
    replaced = await s.add_id(turn, "Send invoices as paper letters", kind="fact")
    await s.commit(turn)
    turn = await s.turn(session)
    await api.ok(DELETE, turn=turn, id=deleted)
    await s.add_id(turn, "Send invoices as PDF attachments", kind="fact", replaces=replaced)
    await s.commit(turn)
    other = Scenario(api)
    other_ns = f"dsb{uuid.uuid4().hex[:8]}"
    other_agent = await other.agent(memory_config(), namespace=other_ns)
    await other.committed("Invoices of the other agent", await other.session())
    return Memory(
        ns, agent, invoices, office, agent_scope, deleted, replaced, other_ns, other_agent
    )


async def _counts(api: Api) -> dict[str, int]:
    async with api.database.session() as db:
        return {
            t: int((await db.execute(text(f"select count(*) from {t}"))).scalar_one())
            for t in RECORDED
        }


async def test_search_ranks_the_agents_active_records_by_text(api: Api, memory: Memory) -> None:
    """R41, R14: the best match first, both scopes, ACTIVE only, this agent's only."""
    found = (await api.ok(SEARCH, agent=memory.agent, q="invoices by email"))["searchAgentMemory"]
    assert found[0]["record"]["id"] == memory.invoices
    assert found[0]["version"]["summary"] == "The customer wants invoices sent by email"
    scores = [f["score"] for f in found]
    assert scores == sorted(scores, reverse=True)
    ids = {f["record"]["id"] for f in found}
    assert memory.agent_scope in ids  # AGENT scope, as well as SESSION
    assert {f["record"]["status"] for f in found} == {"ACTIVE"}
    assert not ids & {memory.deleted, memory.replaced}
    assert "other agent" not in str(found)


async def test_search_limit_kind_and_labels(api: Api, memory: Memory) -> None:
    one = await api.ok(SEARCH, agent=memory.agent, q="invoices", limit=1)
    assert len(one["searchAgentMemory"]) == 1
    facts = (await api.ok(SEARCH, agent=memory.agent, q="invoices", kind="fact"))[
        "searchAgentMemory"
    ]
    assert facts and {f["version"]["kind"] for f in facts} == {"fact"}
    c1 = [{"name": "customer_id", "value": "c1"}]
    labelled = await api.ok(SEARCH, agent=memory.agent, q="invoices", labels=c1)
    assert [f["record"]["id"] for f in labelled["searchAgentMemory"]] == [memory.invoices]


async def test_search_records_nothing(api: Api, memory: Memory) -> None:
    """Unlike the search_memory tool, a dashboard search is no execution of any turn: no
    execution, usage, transcript event or output use is written."""
    before = await _counts(api)
    await api.ok(SEARCH, agent=memory.agent, q="when does the office open")
    assert await _counts(api) == before


async def test_r71_search_needs_the_memory_read_grants(api: Api, memory: Memory) -> None:
    """Without both read grants: refused, null, and no memory is read; FORBIDDEN for a
    caller that reads the agent, else as an agent that does not exist (NOT_FOUND)."""
    ns = memory.ns
    read = (("SELECT", f"{ns}.AgentMemory.indexes.*"), ("SELECT", f"{ns}.AgentMemory.document"))
    agent = (("SELECT", f"{ns}.Agent"),)
    for grants in ((), agent, read[:1], read[1:], agent + read[:1]):
        token = await bearer(api, kind="client", grants=grants)
        with statements(api.database) as sent:
            result = await run_as(api, token, SEARCH, agent=memory.agent, q="invoices")
        assert codes(result) == ["FORBIDDEN" if agent[0] in grants else "NOT_FOUND"]
        assert result.data == {"searchAgentMemory": None}
        assert not [s for s in sent if "memory_versions" in s]
    token = await bearer(api, kind="client", grants=read)
    allowed = await run_as(api, token, SEARCH, agent=memory.agent, q="invoices by email")
    assert allowed.errors is None
    assert allowed.data["searchAgentMemory"][0]["record"]["id"] == memory.invoices
    elsewhere = await run_as(api, token, SEARCH, agent=memory.other_agent, q="invoices")
    assert codes(elsewhere) == ["NOT_FOUND"]  # another namespace's agent: as none


async def test_r70_the_agent_itself_searches_its_memory(api: Api, memory: Memory) -> None:
    token = await bearer(api, kind="runtime", agent_id=memory.agent)
    result = await run_as(api, token, SEARCH, agent=memory.agent, q="office hours")
    assert result.errors is None
    assert result.data["searchAgentMemory"][0]["record"]["id"] == memory.office


@pytest.mark.parametrize(
    ("variables", "field"),
    [
        ({"q": ""}, "query"),
        ({"q": "   "}, "query"),
        ({"q": "x" * 2001}, "query"),
        ({"q": "a\x00b"}, "query"),
        ({"q": "invoices", "limit": 0}, "limit"),
        ({"q": "invoices", "limit": 101}, "limit"),
    ],
)
async def test_bad_search_input_is_bad_input(
    api: Api, memory: Memory, variables: dict[str, Any], field: str
) -> None:
    before = await _counts(api)
    message, ext = await api.error(SEARCH, agent=memory.agent, **variables)
    assert ext == {"code": "BAD_INPUT", "field": field}, message
    assert await _counts(api) == before


async def test_search_of_an_unknown_agent_is_not_found(api: Api) -> None:
    _, ext = await api.error(SEARCH, agent=str(uuid.uuid4()), q="invoices")
    assert ext["code"] == "NOT_FOUND"


async def test_namespaces_lists_what_the_reader_may_browse(api: Api, memory: Memory) -> None:
    everything = (await api.ok(NAMESPACES))["namespaces"]
    assert {memory.ns, memory.other_ns} <= set(everything)
    assert everything == sorted(everything)
    assert len(everything) == len(set(everything))
    nothing = await bearer(api, kind="client")
    assert (await run_as(api, nothing, NAMESPACES)).data == {"namespaces": []}
    for grant in ("Agent", "Session", "AgentMemory.*"):
        token = await bearer(api, kind="client", grants=(("SELECT", f"{memory.ns}.{grant}"),))
        assert (await run_as(api, token, NAMESPACES)).data == {"namespaces": [memory.ns]}, grant
    runtime = await bearer(api, kind="runtime", agent_id=memory.other_agent)
    assert (await run_as(api, runtime, NAMESPACES)).data == {"namespaces": [memory.other_ns]}
    by_namespace = await bearer(api, kind="runtime", namespace=memory.ns)
    assert (await run_as(api, by_namespace, NAMESPACES)).data == {"namespaces": [memory.ns]}


EXPLAINED = """
query($agent: ID!, $q: String!, $limit: Int) {
  searchAgentMemory(agentId: $agent, query: $q, limit: $limit) {
    score cosine lexical
    version { summary }
    explanation {
      mode preset recency ageDays halfLifeDays
      meaning { rank term } keywords { rank term }
    }
  }
}"""


async def test_each_result_says_why_it_ranked(api: Api, memory: Memory) -> None:
    """R41: a hybrid result's score is its meaning, keyword and recency terms (the default
    preset adds nothing for age); a record sharing no word with the query has no keyword
    term."""
    found = (await api.ok(EXPLAINED, agent=memory.agent, q="office morning", limit=5))[
        "searchAgentMemory"
    ]
    assert found[0]["version"]["summary"] == "The office opens at nine in the morning"
    for hit in found:
        e = hit["explanation"]
        assert (e["mode"], e["preset"], e["halfLifeDays"]) == ("HYBRID", "default", 30.0)
        total = e["meaning"]["term"] + e["keywords"]["term"] + e["recency"]
        assert total == pytest.approx(hit["score"], rel=1e-12)
        assert e["recency"] == 0.0
        assert e["ageDays"] >= 0
        if hit["lexical"] is None:  # no word in common: found by meaning alone
            assert e["keywords"] == {"rank": None, "term": 0.0}
    top = found[0]["explanation"]
    assert top["keywords"]["rank"] == 1 and top["meaning"]["rank"] == 1
    # the best keyword match gains the keywords' whole share (half of the blend)
    assert top["keywords"]["term"] == 0.5
    ranks = [h["explanation"]["meaning"]["rank"] for h in found]
    cosines = [h["cosine"] for h in found]
    by_cosine = sorted(range(len(found)), key=lambda i: -cosines[i])
    assert [ranks[i] for i in by_cosine] == sorted(r for r in ranks if r is not None)
    meaning = [found[i]["explanation"]["meaning"]["term"] for i in by_cosine]
    assert meaning == sorted(meaning, reverse=True)


async def test_search_memory_results_have_no_explanation(api: Api) -> None:
    """Only the dashboard's search explains; the agent's own results do not."""
    s = Scenario(api)
    await s.agent(memory_config())
    session = await s.session()
    await s.committed("The office opens at nine", session)
    turn = await s.turn(session)
    query = """mutation($t: ID!) { searchMemory(input: {turnId: $t, query: "office"}) {
      results { score explanation { mode } } } }"""
    [hit] = (await api.ok(query, t=turn))["searchMemory"]["results"]
    assert hit["score"] > 0 and hit["explanation"] is None
