"""R64 as a property: whatever the sessions, turns, previews, failures and replays, a
search returns exactly the kept events the reference filter lets the reader see."""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.domain.history import HistoryReader, PartFacts, visible_part
from tests.api.history_scenario import HistoryScenario, history_config, user
from tests.conftest import Api

# Every kept text holds this word, so a search for it finds each event the reader may see.
WORD = "zebrafish"
KINDS = ("live", "preview", "failed", "rolled_back", "replay")


@dataclass(frozen=True)
class Kept:
    text: str
    facts: PartFacts


@dataclass(frozen=True)
class Committed:
    turn_id: str
    number: int
    preview: bool


steps = st.lists(
    st.tuples(st.integers(min_value=0, max_value=2), st.sampled_from(KINDS)),
    min_size=1,
    max_size=7,
)
readers = st.tuples(
    st.integers(min_value=0, max_value=2),
    st.sampled_from(("live", "preview", "replay")),
    st.integers(min_value=0, max_value=10),
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=steps, reader=readers)
async def test_r64_search_returns_exactly_what_the_reference_filter_allows(
    api: Api, steps: list[tuple[int, str]], reader: tuple[int, str, int]
) -> None:
    """R61, R64: sessions 0 and 1 belong to one agent, session 2 to another. Committed live
    and preview turns keep their event; failed, rolled-back and replayed turns keep none.
    A reader (live, preview, or a replay) finds exactly the events ``visible_part`` allows:
    its own session's, of earlier turns, preview ones only when it is a preview turn."""
    agents = [HistoryScenario(api), HistoryScenario(api)]
    for s in agents:
        await s.agent(history_config())
    sessions = [await agents[0].session(), await agents[0].session(), await agents[1].session()]
    owner = [agents[0], agents[0], agents[1]]
    kept: list[Kept] = []
    committed: dict[int, list[Committed]] = {0: [], 1: [], 2: []}
    for i, (where, kind) in enumerate(steps):
        s, session = owner[where], sessions[where]
        text = f"{WORD} step{i} {uuid.uuid4().hex}"
        options: dict[str, object] = {"preview": kind == "preview"}
        if kind == "replay":
            if not committed[where]:
                continue
            options["replayOf"] = committed[where][i % len(committed[where])].turn_id
        begun = await s.begin(session, **options)
        turn, number = begun["turn"]["id"], begun["turn"]["number"]
        await s.record(turn, user(text))
        if kind == "failed":
            await api.ok(
                "mutation($t: ID!) { failTurn(input: {turnId: $t}) { turn { id } } }", t=turn
            )
            continue
        if kind == "rolled_back":
            await s.rollback(turn)
            continue
        await s.commit(turn)
        if kind != "replay":
            committed[where].append(Committed(turn, number, kind == "preview"))
            kept.append(
                Kept(
                    text,
                    PartFacts(
                        agent_id=uuid.UUID(s.agent_id),
                        session_id=uuid.UUID(session),
                        turn_number=number,
                        preview=kind == "preview",
                    ),
                )
            )

    where, kind, pick = reader
    s, session = owner[where], sessions[where]
    options = {"preview": kind == "preview"}
    if kind == "replay" and committed[where]:
        original = committed[where][pick % len(committed[where])]
        options = {"replayOf": original.turn_id, "preview": original.preview}
    begun = await s.begin(session, **options)
    facts = HistoryReader(
        agent_id=uuid.UUID(s.agent_id),
        session_id=uuid.UUID(session),
        turn_number=begun["turn"]["number"],
        preview=begun["turn"]["preview"],
    )
    found = await s.results(begun["turn"]["id"], WORD, limit=50)
    expected = {k.text for k in kept if visible_part(facts, k.facts)}
    assert {r["text"].split("\n", 1)[1] for r in found} == expected
    assert len(found) == len(expected)
