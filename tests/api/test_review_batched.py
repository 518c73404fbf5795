"""The review's similarity lookups in one statement per call (R50; docs/review.md).

compareMemoryCandidates ranks the records like every candidate in one statement, and
applyMemoryReview reads the records like each ADD once, before applying anything,
then keeps that reading current as its decisions write: an ADD is compared with the
records earlier decisions of the same call wrote, and no more with the records they
replaced or deleted, exactly as a lookup after each write would.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event

from tests.api.history_scenario import agent, history_config, user
from tests.api.review_scenario import ReviewScenario, decide, fact
from tests.api.scenario import records
from tests.conftest import Api

FACTS = [
    "The user lives in Lisbon",
    "The user has a cat named Miso",
    "The user's sister is a nurse",
    "The user plays tennis on Sundays",
    "The user is allergic to peanuts",
    "The user works at a bakery",
    "The user drives a red van",
    "The user's son studies physics",
    "The user grows tomatoes",
    "The user collects stamps",
    "The user speaks Japanese",
    "The user flies to Boston in May",
]


@contextmanager
def _similarity_statements(api: Api) -> Iterator[list[str]]:
    """The statements that rank by cosine distance, sent while the block runs."""
    assert api.database.engine is not None
    engine = api.database.engine.sync_engine
    sent: list[str] = []

    def count(_c: Any, _cur: Any, statement: str, *_: Any) -> None:
        if "<=>" in statement:
            sent.append(statement)

    event.listen(engine, "before_cursor_execute", count)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", count)


async def _reviewing(api: Api, *known: str) -> tuple[ReviewScenario, str, dict[str, Any]]:
    """An agent whose memory holds ``known`` (committed), and a later turn under review:
    (its scenario, the turn, the review begun)."""
    s = ReviewScenario(api)
    await s.agent(history_config("messages", tools=[]))
    session = await s.session()
    if known:
        first = await s.turn(session)
        await s.record(first, user("Some facts about me"), agent("Noted."))
        await s.reviewed(first, *(decide("ADD", f) for f in known))
        await s.commit(first)
    turn = await s.turn(session)
    await s.record(turn, user("More about me"), agent("Noted."))
    begun = await s.begin_review(turn)
    await s.invoke(begun)
    return s, turn, begun


async def test_r50_compare_ranks_every_candidate_in_one_statement(api: Api) -> None:
    """Three candidates or twelve: one similarity statement, and each candidate's
    nearest record is its own fact."""
    s, _, begun = await _reviewing(api, *FACTS)
    for n in (3, 12):
        edited = [fact(f.lower() + ".") for f in FACTS[:n]]
        with _similarity_statements(api) as sent:
            compared = await s.compare(begun["review"]["id"], *edited)
        assert len(sent) == 1
        for candidate, known in zip(compared["candidates"], FACTS, strict=False):
            assert candidate["similar"][0]["version"]["summary"] == known
            assert candidate["restates"]["version"]["summary"] == known


async def test_r50_an_add_restating_what_the_same_call_wrote_is_skipped(api: Api) -> None:
    """Within one apply, an ADD that restates a record an earlier ADD (or REPLACE) of the
    same call wrote is applied as SKIP, naming that new record; the lookups of all the
    ADDs take at most two statements."""
    s, _, begun = await _reviewing(api, "The user drives a red van")
    van = (await records(api, s.agent_id, status="ACTIVE"))[0]["id"]
    decisions = [
        decide("ADD", "The user lives in Lisbon"),
        decide("REPLACE", "The user drives a blue van", van),
        *(decide("ADD", f) for f in FACTS[2:6] + FACTS[7:9]),
        decide("ADD", "the user lives in Lisbon."),
        decide("ADD", "the user drives a blue van!"),
    ]
    with _similarity_statements(api) as sent:
        applied = await s.apply(begun["review"]["id"], *decisions)
    assert len(sent) <= 2
    outcomes = applied["decisions"]
    lisbon = outcomes[0]["memories"][0]["recordId"]
    blue = outcomes[1]["memories"][0]["recordId"]
    assert [d["applied"] for d in outcomes] == ["ADD", "REPLACE", *["ADD"] * 6, "SKIP", "SKIP"]
    assert (outcomes[-2]["restates"], outcomes[-1]["restates"]) == (lisbon, blue)


async def test_r50_an_add_like_a_record_the_same_call_deleted_is_applied(api: Api) -> None:
    """A record an earlier decision of the call deleted or replaced is no longer one an ADD
    can restate: the ADD is applied, as a lookup after the deletion would decide."""
    s, turn, begun = await _reviewing(api, "The user has a cat named Miso", FACTS[4])
    known = {r["current"]["summary"]: r["id"] for r in await records(api, s.agent_id)}
    applied = await s.apply(
        begun["review"]["id"],
        decide("DELETE", "The cat ran away", known["The user has a cat named Miso"]),
        decide("REPLACE", "The user is allergic to shellfish", known[FACTS[4]]),
        decide("ADD", "the user has a cat named Miso."),
        decide("ADD", "the user is allergic to peanuts."),
    )
    assert [(d["applied"], d["restates"]) for d in applied["decisions"]] == [
        ("DELETE", None),
        ("REPLACE", None),
        ("ADD", None),
        ("ADD", None),
    ]
    await s.commit(turn)
    active = sorted(
        r["current"]["summary"] for r in await records(api, s.agent_id, status="ACTIVE")
    )
    assert active == [
        "The user is allergic to shellfish",
        "the user has a cat named Miso.",
        "the user is allergic to peanuts.",
    ]
