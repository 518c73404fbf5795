"""The keyword ranking a user sees (R41, R62): BM25 through ``searchMemory`` and
``searchHistory`` in lexical mode. A rare word outranks a common one, a record is
found by any word it shares with the query, and of two equal matches the newer one
comes first."""

from __future__ import annotations

from typing import Any

from tests.api.history_scenario import HistoryScenario, history_config, user
from tests.api.scenario import Scenario, memory_config
from tests.api.test_search import SEARCH
from tests.conftest import Api


def _lexical(**memory: Any) -> dict[str, Any]:
    config = memory_config(read=["session", "agent"], write=["session", "agent"], **memory)
    config["harness"]["memory"]["search"] = {"mode": "lexical", "max_results": 10}
    return config


async def _search(api: Api, turn: str, query: str, limit: int = 10) -> list[dict[str, Any]]:
    data = await api.ok(SEARCH, turn=turn, q=query, limit=limit)
    return list(data["searchMemory"]["results"])


async def _memory(api: Api, summaries: list[str]) -> tuple[Scenario, str]:
    """An agent whose records are ``summaries``, committed in this order (one turn each,
    so each is newer than the one before); a turn of its to search from."""
    s = Scenario(api)
    await s.agent(_lexical())
    session = await s.session()
    for summary in summaries:
        await s.committed(summary, session, scope="AGENT")
    return s, await s.turn(session)


async def test_r41_rare_words_outrank_common_ones(api: Api) -> None:
    """R41: the name is in every record but one, "flowerpot" in two (all of five words):
    for "Dana flowerpot", the record holding both comes first, then the other flowerpot,
    then the name alone, far behind: a word nearly every record holds weighs little."""
    chatter = [f"Dana said hello again, note {i}" for i in range(12)]
    _, turn = await _memory(
        api,
        [
            "Someone cracked the blue flowerpot on the balcony",
            *chatter[:6],
            "Dana hid the spare key under the flowerpot",
            *chatter[6:],
        ],
    )
    found = await _search(api, turn, "Dana flowerpot")
    texts = [r["version"]["summary"] for r in found]
    assert texts[:2] == [
        "Dana hid the spare key under the flowerpot",
        "Someone cracked the blue flowerpot on the balcony",
    ]
    assert set(texts[2:]) <= set(chatter) and len(texts) == 10
    assert found[1]["lexical"] > 2 * found[2]["lexical"]
    assert all(r["score"] == r["lexical"] for r in found)


async def test_r41_a_record_is_found_by_a_word_it_shares_with_the_query(api: Api) -> None:
    """R41: any one word shared (after stemming) finds a record; words it does not hold
    only fail to add to its score."""
    _, turn = await _memory(
        api,
        [
            "The tomato plants in the back garden need watering",
            "Alice prefers window seats on long flights",
        ],
    )
    found = await _search(api, turn, "when should the tomatoes be planted out?")
    assert [r["version"]["summary"] for r in found] == [
        "The tomato plants in the back garden need watering"
    ]
    assert await _search(api, turn, "the and of") == []  # stop words: no keyword at all


async def test_r41_of_equal_matches_the_newer_comes_first(api: Api) -> None:
    """R41: two records of the same words score the same; the newer one ranks first."""
    _, turn = await _memory(
        api,
        ["The ferry leaves at nine", "Lunch is at noon", "The ferry leaves at nine"],
    )
    found = await _search(api, turn, "ferry")
    assert len(found) == 2 and found[0]["lexical"] == found[1]["lexical"]
    first, second = (r["record"]["id"] for r in found)
    records = await api.ok(
        "query($a: ID!, $b: ID!) { a: agentMemory(id: $a) { current { createdAt } }"
        " b: agentMemory(id: $b) { current { createdAt } } }",
        a=first,
        b=second,
    )
    assert records["a"]["current"]["createdAt"] > records["b"]["current"]["createdAt"]


async def test_r62_history_ranks_rare_words_first_too(api: Api) -> None:
    """R62: history's keyword leg is the same BM25: over one session's parts the message
    holding the rare word is found first, by lexical ranking alone."""
    from uuid import UUID

    from server.domain.history import HistoryReader
    from server.models import HistoryPart
    from server.services.history_ranking import rank_parts

    s = HistoryScenario(api)
    await s.agent(history_config("messages"))
    session = await s.session()
    chatter = [user(f"Sam: the weather is fine today, remark {i}") for i in range(8)]
    await s.committed_turn(session, *chatter, user("Sam: the weather ruined the regatta"))
    reader = HistoryReader(UUID(s.agent_id), UUID(session), turn_number=2, preview=False)
    async with api.database.session() as db:
        hits = await rank_parts(
            db, reader=reader, query="weather regatta", vector=None, limit=3, mode="lexical"
        )
        top = await db.get(HistoryPart, hits[0].key)
    assert top is not None and top.text == "Sam: the weather ruined the regatta"
    assert len(hits) == 3 and hits[1].score < hits[0].score / 3
