"""The generated clients (clients/python) drive a real server process over HTTP: the
sync one through a runtime's turns, the async one through a dashboard's reads."""

from __future__ import annotations

import os
import re
import subprocess
import sys

import agent_memory_client_async as aio
import pytest
from agent_memory_client import (
    AddMemoryInput,
    ApplyMemoryReviewInput,
    BeginMemoryReviewInput,
    BeginTurnInput,
    CommitTurnInput,
    CompareMemoryCandidatesInput,
    ConversationEventInput,
    ConversationEventType,
    GraphQLClientGraphQLMultiError,
    InvocationPurpose,
    MemoryCandidateInput,
    MemoryDecisionAction,
    MemoryDecisionInput,
    MemoryStatus,
    ReadMemoryInput,
    RecallInput,
    RecordEventsInput,
    RecordInvocationInput,
    RollbackTurnInput,
    Scope,
    SearchHistoryInput,
    SearchMemoryInput,
    TurnStatus,
)
from sqlalchemy.engine import URL

from tests.e2e.live import ROOT, Seeded, client, dashboard_token, seed
from tests.mcp.clients import connected


@pytest.fixture(scope="module")
def seeded(server: str, database_url: URL) -> Seeded:
    return seed(server, database_url)


@pytest.fixture(scope="module")
def client_token(database_url: URL, seeded: Seeded) -> str:
    """A dashboard's: SELECT on the namespace's agents, memory and sessions."""
    return dashboard_token(database_url, seeded.namespace)


def test_a_runtime_turn_with_the_sync_client(server: str, seeded: Seeded) -> None:
    with client(server, seeded.runtime_token) as api:
        begun = api.begin_turn(BeginTurnInput(session_id=seeded.session_id)).begin_turn
        turn = begun.turn.id
        assert begun.turn.number == 2 and begun.turn.status is TurnStatus.OPEN

        added = api.add_memory(
            AddMemoryInput(
                turn_id=turn,
                summary="Has a dog named Rex",
                kind="fact",
                scope=Scope.AGENT,
                pinned=True,
            )
        ).add_memory.memories[0]
        assert added.number == 1 and added.status is MemoryStatus.ACTIVE

        found = api.search_memory(
            SearchMemoryInput(turn_id=turn, query="phone calls")
        ).search_memory.results
        assert found[0].version.summary == "Prefers phone calls after 5pm"
        assert found[0].record.scope is Scope.SESSION and found[0].score is not None

        recalled = api.recall(RecallInput(turn_id=turn, query="Baixa branch")).recall
        assert "Banks at the Baixa branch" in recalled.text

        read = api.read_memory(ReadMemoryInput(turn_id=turn, id=seeded.replaced_id)).read_memory
        assert [v.status for v in read.sources] == [MemoryStatus.SUPERSEDED]

        events = api.record_events(
            RecordEventsInput(
                turn_id=turn,
                events=[
                    ConversationEventInput(
                        type=ConversationEventType.USER_MESSAGE, text="My dog Rex is ill."
                    ),
                    ConversationEventInput(
                        type=ConversationEventType.AGENT_MESSAGE, text="Sorry to hear about Rex."
                    ),
                ],
            )
        ).record_events.events
        assert [e.type_ for e in events] == ["USER_MESSAGE", "AGENT_MESSAGE"]

        review = api.begin_memory_review(BeginMemoryReviewInput(turn_id=turn)).begin_memory_review
        assert review.due and review.review is not None
        api.record_invocation(
            RecordInvocationInput(
                execution_id=review.review.execution.id,
                purpose=InvocationPurpose.MEMORY,
                model="scripted",
                input_tokens=100,
            )
        )
        candidates = [MemoryCandidateInput(summary="Has a dog named Rex", kind="fact")]
        compared = api.compare_memory_candidates(
            CompareMemoryCandidatesInput(review_id=review.review.id, candidates=candidates)
        ).compare_memory_candidates
        assert compared.candidates[0].restates is not None
        applied = api.apply_memory_review(
            ApplyMemoryReviewInput(
                review_id=review.review.id,
                decisions=[
                    MemoryDecisionInput(candidate=candidates[0], action=MemoryDecisionAction.ADD)
                ],
            )
        ).apply_memory_review
        assert applied.decisions[0].applied is MemoryDecisionAction.SKIP

        committed = api.commit_turn(CommitTurnInput(turn_id=turn)).commit_turn.turn
        assert committed.status is TurnStatus.COMMITTED and committed.ended_at is not None

        later = api.begin_turn(BeginTurnInput(session_id=seeded.session_id)).begin_turn
        assert any(p.summary == "Has a dog named Rex" for p in later.pinned)
        history = api.search_history(
            SearchHistoryInput(turn_id=later.turn.id, query="dog")
        ).search_history.results
        assert any("Rex" in h.text for h in history)
        api.add_memory(AddMemoryInput(turn_id=later.turn.id, summary="A wrong guess"))
        rolled = api.rollback_turn(RollbackTurnInput(turn_id=later.turn.id)).rollback_turn.turn
        assert rolled.status is TurnStatus.ROLLED_BACK and rolled.memories == []

        with pytest.raises(GraphQLClientGraphQLMultiError) as failed:
            api.commit_turn(CommitTurnInput(turn_id=later.turn.id))
        assert failed.value.errors[0].extensions


async def test_dashboard_reads_with_the_async_client(
    server: str, seeded: Seeded, client_token: str
) -> None:
    token = client_token
    async with aio.Client(
        url=f"{server}/graphql", headers={"authorization": f"Bearer {token}"}
    ) as api:
        assert seeded.namespace in (await api.namespaces()).namespaces
        agents = (await api.agents(seeded.namespace, 10)).agents.edges
        assert [a.node.name for a in agents] == [seeded.agent_name]

        agent = (await api.agent_memory_records(seeded.agent_id, 50)).agent
        assert agent is not None  # a lookup that fails is null, its error raised
        records = {e.node.id: e.node for e in agent.memory_records.edges}
        old = records[seeded.replaced_id]
        assert old.status is aio.MemoryStatus.SUPERSEDED
        assert old.replaced_by is not None and old.replaced_by.id == seeded.correction_id
        assert [(v.node.number, v.node.status) for v in old.versions_connection.edges] == [
            (1, aio.MemoryStatus.ACTIVE),
            (2, aio.MemoryStatus.SUPERSEDED),
        ]
        assert old.current.labels == {"customer_id": "C-42"}
        assert [(label.name, label.value) for label in old.current.label_list] == [
            ("customer_id", "C-42")
        ]
        deleted = records[seeded.deleted_id]
        assert deleted.versions_connection.edges[-1].node.status is aio.MemoryStatus.DELETED

        detail = (await api.memory_record_detail(seeded.replaced_id)).agent_memory
        assert detail is not None and detail.versions_connection.total_count == 2
        first = detail.versions_connection.edges[0].node
        assert first.written_by.turn is not None and first.written_by.session is not None
        assert first.written_by.session.external_id == "chat-1"
        corrected = (await api.memory_record_detail(seeded.correction_id)).agent_memory
        assert corrected is not None and corrected.replaces is not None
        assert corrected.replaces.id == seeded.replaced_id

        turns = (
            await api.session_turns(seeded.session_id, 10, order=aio.ListOrder.OLDEST_FIRST)
        ).session
        assert turns is not None
        first_turn = turns.turns.edges[0].node
        assert first_turn.number == 1 and first_turn.status == "COMMITTED"
        events = (await api.turn_transcript(first_turn.id, 50)).turn
        assert events is not None
        assert "add_memory" in {e.node.tool_name for e in events.transcript_connection.edges}

        # as it stood when the first turn began: nothing yet
        before = (
            await api.agent_memory_records(
                seeded.agent_id, 10, as_of=aio.MemoryAsOf(turn_id=first_turn.id)
            )
        ).agent
        assert before is not None and before.memory_records.total_count == 0

        hits = (await api.search_agent_memory(seeded.agent_id, "phone")).search_agent_memory
        assert hits is not None
        assert hits[0].version.summary == "Prefers phone calls after 5pm"
        assert hits[0].record.status is aio.MemoryStatus.ACTIVE
        why = hits[0].explanation
        assert why is not None and why.mode is aio.SearchMode.HYBRID
        assert why.meaning.term + why.keywords.term + why.recency == pytest.approx(hits[0].score)

    # one exception hierarchy: what the async client raises, the sync package's classes
    with pytest.raises(GraphQLClientGraphQLMultiError) as refused:
        async with aio.Client(
            url=f"{server}/graphql", headers={"authorization": f"Bearer {token}"}
        ) as api:
            await api.memory_record_detail("not-an-id")
    assert refused.value.errors[0].extensions == {"code": "BAD_INPUT", "field": "id"}
    assert aio.GraphQLClientGraphQLMultiError is GraphQLClientGraphQLMultiError


def _readme_examples(title: str = "Generated Python client") -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split(f"## {title}", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, re.S)


def test_the_readme_client_examples_run_as_written(
    server: str, seeded: Seeded, client_token: str
) -> None:
    runtime, dashboard = _readme_examples()
    [other] = _readme_examples("Other GraphQL clients")
    env = {
        **os.environ,
        "URL": f"{server}/graphql",
        "PYTHONPATH": str(ROOT / "clients" / "python"),
        "SESSION": str(seeded.session_id),
        "AGENT": str(seeded.agent_id),
    }

    def run(example: str, token: str) -> str:
        done = subprocess.run(
            [sys.executable, "-c", example],
            env={**env, "TOKEN": token},
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    printed = run(runtime, seeded.runtime_token)
    assert " Prefers email (record " in printed and printed.endswith("COMMITTED\n")
    printed = run(dashboard, client_token)
    assert "Prefers phone calls after 5pm: v1 ACTIVE\n" in printed
    assert "Prefers email: v1 ACTIVE, v2 SUPERSEDED\n" in printed
    # gql, given an id as a uuid.UUID
    assert run(other, client_token) == f"{seeded.agent_name}\n"


def test_the_readme_install_line_of_a_local_clone_works_with_this_pip() -> None:
    """pip 23 refuses `name @ git+file:///...` ("looks like a path"); the README's line
    for a local clone is one it takes."""
    readme = (ROOT / "README.md").read_text()
    [line] = re.findall(r'^pip install "(git\+file:///[^"]+)"', readme, re.M)
    pip = [sys.executable, "-m", "pip", "install", "--dry-run", "--no-deps", "-q"]
    done = subprocess.run(
        [*pip, "--no-build-isolation", line.replace("/path/to/agent-memory", str(ROOT))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr


async def test_the_served_process_answers_mcp_with_the_agents_tools(
    seeded: Seeded, server: str
) -> None:
    """`agent-memory serve` (what `make run` runs) serves /mcp beside /graphql, on the same
    port: the seeded agent's runtime token lists its tools and searches its memory."""
    async with connected(server, seeded.runtime_token) as mcp:
        tools = [t.name for t in (await mcp.list_tools()).tools]
        found = await mcp.call_tool("search_memory", {"query": "how to contact the customer"})
    assert tools == [
        "search_memory",
        "add_memory",
        "read_memory",
        "delete_memory",
        "search_history",
    ]
    assert not found.isError and found.structuredContent is not None
