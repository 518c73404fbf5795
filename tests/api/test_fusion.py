"""How a hybrid memory search blends meaning and keywords (R41), through ``searchMemory``
with the real model: each signal is scaled over the candidates and blended, so the
best match by one signal is not pushed down by records that are only a little better
by the other, and newer wins a tie."""

from __future__ import annotations

from typing import Any

from tests.api.scenario import Scenario, memory_config
from tests.api.test_search import SEARCH
from tests.conftest import Api


async def _memory(api: Api, summaries: list[str]) -> str:
    """An agent searching in hybrid mode, finding by meaning down to a cosine of 0.1,
    whose records are ``summaries``, committed in this order (one turn each, so each is
    newer than the one before); a turn of its."""
    s = Scenario(api)
    config = memory_config(read=["session", "agent"], write=["session", "agent"])
    config["harness"]["memory"]["search"] = {"mode": "hybrid", "min_score": 0.1}
    await s.agent(config)
    session = await s.session()
    for summary in summaries:
        await s.committed(summary, session, scope="AGENT")
    return await s.turn(session)


async def _search(api: Api, turn: str, query: str, limit: int = 10) -> list[dict[str, Any]]:
    data = await api.ok(SEARCH, turn=turn, q=query, limit=limit)
    return list(data["searchMemory"]["results"])


def _summaries(found: list[dict[str, Any]]) -> list[str]:
    return [r["version"]["summary"] for r in found]


async def test_r41_a_strong_keyword_hit_survives_a_weak_meaning_signal(api: Api) -> None:
    """R41: the one record naming "Zanzibar" and "invoice" is a list whose meaning is far
    from the question; six records are closer by meaning and hold "number", a word of the
    question every record but the list holds, the closest kept last. The list still comes
    first: a word that common adds little, and being a little closer adds no more than
    the best match's words do. (Fused by rank, the closest ones holding "number" came
    first: each stood high in both lists, the list high in one.)"""
    target = "Packing list: eggs, milk, rope, Zanzibar invoice copy, tent pegs, sunscreen"
    turn = await _memory(
        api,
        [
            target,
            "Her phone number changed last month",
            "The billing reference number is printed at the top of every receipt",
            "The number on the shipping bill was hard to read",
            "The reference number on the bill from the spice island supplier",
            "The account number for the freight payment to Dar es Salaam",
            "Which number was on the statement from the East African exporter?",
            "The tracking number for the parcel from Tanzania starts with ZX",
        ],
    )
    found = await _search(api, turn, "What was the Zanzibar invoice number?")
    assert _summaries(found)[0] == target
    closer = [r for r in found if r["cosine"] > found[0]["cosine"]]
    assert len(closer) >= 3 and all(0 < r["lexical"] < found[0]["lexical"] / 10 for r in closer)
    assert _summaries(await _search(api, turn, "What was the Zanzibar invoice number?", 1)) == [
        target
    ]


async def test_r41_a_strong_meaning_hit_survives_a_zero_keyword_score(api: Api) -> None:
    """R41: the record about watering the plants while away shares no word with the
    question, and is the closest to it by meaning; seven records share its word "keep"
    (one "travelling" too) and are far from it, the closest kept last. Only the record
    holding the question's rarer word passes it: "keep", in nearly every record, adds
    little. (Fused by rank, the records holding "keep" came first.)"""
    target = "Ask the neighbour to water the ferns and orchids when we are away on holiday"
    turn = await _memory(
        api,
        [
            target,
            "Keep receipts while travelling for expenses",
            "The kids keep asking for a puppy",
            "Keep your voice down in the library",
            "I keep forgetting my umbrella",
            "Keep the car keys in the bowl",
            "Keep the back door locked at night",
            "We keep the spare chairs in the garage",
        ],
    )
    found = await _search(api, turn, "how do I keep my houseplants alive while travelling")
    assert _summaries(found)[:2] == ["Keep receipts while travelling for expenses", target]
    assert found[1]["lexical"] is None
    assert found[1]["cosine"] == max(r["cosine"] for r in found)
    assert len(found) == 8 and all(r["lexical"] > 0 for r in found[2:])


async def test_r41_of_two_equal_records_the_newer_comes_first(api: Api) -> None:
    """R41: two records of the same text are as close and hold the same words: their
    scores are equal, and the newer one ranks first, whichever was kept under the lower
    key."""
    turn = await _memory(
        api,
        ["The ferry leaves at nine", "Lunch is at noon", "The ferry leaves at nine"],
    )
    found = await _search(api, turn, "when does the ferry leave?")
    assert _summaries(found)[:2] == ["The ferry leaves at nine"] * 2
    assert found[0]["score"] == found[1]["score"]
    first, second = (r["record"]["id"] for r in found[:2])
    created = await api.ok(
        "query($a: ID!, $b: ID!) { a: agentMemory(id: $a) { current { createdAt } }"
        " b: agentMemory(id: $b) { current { createdAt } } }",
        a=first,
        b=second,
    )
    assert created["a"]["current"]["createdAt"] > created["b"]["current"]["createdAt"]
