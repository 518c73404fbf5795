"""Pinned records (R30, R31): the lines every turn's instructions carry, and their budget."""

from __future__ import annotations

import asyncio
import math
from typing import Any

from tests.api.scenario import (
    ADD,
    COMMIT,
    DELETE,
    Scenario,
    memory_config,
    memory_record,
    records,
    turn_view,
)
from tests.conftest import Api

BOTH = ["session", "agent"]


def tokens(lines: list[str]) -> int:
    """The spec's count: about four characters a token over the listed lines."""
    return math.ceil(sum(len(line) + 1 for line in lines) / 4)


def pins(begun: dict[str, Any]) -> list[str]:
    return [p["recordId"] for p in begun["pinned"]]


async def pinned_event(api: Api, turn: str) -> dict[str, Any]:
    """The turn's memory.pinned event, read once the turn commits (R12: the memory events
    of an open turn read as staged to every query)."""
    await api.ok(COMMIT, turn=turn)
    events = [e for e in (await turn_view(api, turn))["transcript"] if e["type"] == "MEMORY_PINNED"]
    assert len(events) == 1, events
    return dict(events[0]["payload"])


# R30 — the pinned lines of a turn


async def test_r30_begin_turn_lists_each_pinned_record_on_one_line(api: Api) -> None:
    """R30: beginTurn returns one line per pinned record, oldest pin first, holding the
    summary and the record id; instructions are those lines."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=1000))
    session = await s.session()
    first = await s.committed("Always answer in French", session, pinned=True)
    await s.committed("Not pinned", session)
    second = await s.committed("Customer is on the gold plan", session, pinned=True)
    begun = await s.begin(session)
    assert pins(begun) == [first, second]
    for pin, summary in zip(
        begun["pinned"], ["Always answer in French", "Customer is on the gold plan"], strict=True
    ):
        assert pin["summary"] == summary
        assert summary in pin["line"] and pin["recordId"] in pin["line"]
        assert "\n" not in pin["line"]
    assert begun["instructions"] == "\n".join(p["line"] for p in begun["pinned"])


async def test_r30_transcript_names_the_record_versions_listed(api: Api) -> None:
    """R30: the turn's transcript holds one memory.pinned event naming exactly the record
    versions its instructions listed, and their lines."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=1000))
    session = await s.session()
    old = await s.committed("Version one of the rule", session, pinned=True)
    fix = await s.turn(session)
    new = await s.add_id(fix, "Version two of the rule", pinned=True, replaces=old)
    await s.commit(fix)
    begun = await s.begin(session)
    payload = await pinned_event(api, begun["turn"]["id"])
    current = (await memory_record(api, new))["current"]["id"]
    assert payload["versions"] == [{"recordId": new, "versionId": current}]
    assert [(p["recordId"], p["versionId"]) for p in begun["pinned"]] == [(new, current)]
    assert payload["lines"] == [p["line"] for p in begun["pinned"]]


async def test_r30_turn_without_pins_records_an_empty_list(api: Api) -> None:
    """R30: a turn with nothing pinned still records what it listed: nothing."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=100))
    begun = await s.begin(await s.session())
    assert begun["pinned"] == [] and begun["instructions"] == ""
    assert (await pinned_event(api, begun["turn"]["id"]))["versions"] == []


async def test_r30_lists_only_pins_the_turn_can_read(api: Api) -> None:
    """R30 with R10-R12: another session's SESSION pins, another agent's pins and pins of
    an open turn are not listed; AGENT pins reach every session."""
    s, other = Scenario(api), Scenario(api)
    await s.agent(memory_config(read=BOTH, write=BOTH, pinned=1000))
    await other.agent(memory_config(read=BOTH, write=BOTH, pinned=1000))
    await other.committed("Other agent's pin", await other.session(), pinned=True, scope="AGENT")
    mine, elsewhere = await s.session(), await s.session()
    shared = await s.committed("Shared pin", elsewhere, pinned=True, scope="AGENT")
    await s.committed("Pin of another session", elsewhere, pinned=True)
    own = await s.committed("Pin of this session", mine, pinned=True)
    open_turn = await s.turn(mine)
    await s.add(open_turn, "Pin not yet committed", pinned=True, scope="AGENT")
    assert pins(await s.begin(mine)) == [shared, own]


async def test_r30_preview_pins_reach_preview_turns_only(api: Api) -> None:
    """R30 with R13: a preview pin is listed for preview turns, never for live ones, and a
    pinned live record a preview record replaced is not listed for preview turns."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=1000))
    session = await s.session()
    live = await s.committed("Live pin", session, pinned=True)
    preview = await s.turn(session, preview=True)
    draft = await s.add_id(preview, "Preview pin", pinned=True, replaces=live)
    await s.commit(preview)
    assert pins(await s.begin(session)) == [live]
    assert pins(await s.begin(session, preview=True)) == [draft]


async def test_r30_pin_changed_by_an_open_turn_is_listed_as_in_force(api: Api) -> None:
    """R30 with R12: while another open turn has staged the deletion of a pinned record,
    other turns still list it and name the version in force, not the staged one; once the
    deletion commits, the pin is gone."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=1000))
    session = await s.session()
    turn = await s.turn(session)
    written = (await s.add(turn, "Always answer in French", pinned=True))["memories"][0]
    await s.commit(turn)
    staging = await s.turn(session)
    await api.ok(DELETE, turn=staging, id=written["recordId"])
    begun = await s.begin(session)
    assert [(p["recordId"], p["versionId"]) for p in begun["pinned"]] == [
        (written["recordId"], written["id"])
    ]
    assert (await pinned_event(api, begun["turn"]["id"]))["versions"] == [
        {"recordId": written["recordId"], "versionId": written["id"]}
    ]
    await s.commit(staging)
    assert (await s.begin(session))["pinned"] == []


async def test_r30_sessionless_agent_gets_its_pins(api: Api) -> None:
    """R30: an agent without sessions lists its (agent scope) pins on every turn."""
    s = Scenario(api)
    await s.agent(memory_config(read=["agent"], write=["agent"], pinned=500), sessionless=True)
    record = await s.committed("Global rule", pinned=True)
    begun = await s.begin()
    assert pins(begun) == [record]
    assert (await pinned_event(api, begun["turn"]["id"]))["versions"][0]["recordId"] == record


async def test_r30_version_without_memory_or_pinned_lists_nothing(api: Api) -> None:
    """R1, R7, R30: a version with memory disabled, or without a pinned budget, lists no
    pinned line even though earlier versions pinned records."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=500))
    session = await s.session()
    record = await s.committed("Pinned under version 1", session, pinned=True)
    await s.publish(memory_config(enabled=False))
    assert (await s.begin(session))["pinned"] == []
    await s.publish(memory_config())
    assert (await s.begin(session))["pinned"] == []
    await s.publish(memory_config(pinned=500))
    assert pins(await s.begin(session)) == [record]


# R31 — the budget


async def test_r31_pin_over_budget_is_refused_asking_to_consolidate(api: Api) -> None:
    """R31: a pin that would take the list over max_tokens is NOT_ALLOWED, with a message
    telling the agent to replace several pins with one; the list is unchanged."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=60))
    session = await s.session()
    first = await s.committed("Pin one about the customer's plan", session, pinned=True)
    second = await s.committed("Pin two about the shipping rule", session, pinned=True)
    begun = await s.begin(session)
    turn = begun["turn"]["id"]
    summary = "Pin three, which would take the list over"
    line = begun["pinned"][0]["line"].replace(begun["pinned"][0]["summary"], summary)
    lines = [p["line"] for p in begun["pinned"]]
    assert tokens(lines) <= 60 < tokens([*lines, line])
    message, ext = await api.error(ADD, turn=turn, summary=summary, pinned=True)
    assert ext["code"] == "NOT_ALLOWED" and ext["field"] == "pinned"
    assert "consolidate" in message and "replace several" in message
    assert "60" in message
    await s.commit(turn)
    assert pins(await s.begin(session)) == [first, second]


async def test_r31_pins_fit_the_budget_exactly(api: Api) -> None:
    """R31: a pin that brings the list exactly to max_tokens is accepted; one character
    more is refused."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=30))
    session = await s.session()
    first = await s.committed("x", session, pinned=True)
    line = (await s.begin(session))["pinned"][0]["line"]
    # Every line has the same shape, so a summary of n characters costs len(line) - 1 + n
    # characters plus its newline; the two lines must fit 30 tokens of 4 characters.
    fits = 30 * 4 - (len(line) + 1) - len(line)
    assert fits > 0
    turn = await s.turn(session)
    refused = await api.execute(ADD, turn=turn, summary="y" * (fits + 1), pinned=True)
    assert refused.errors and refused.errors[0].extensions["code"] == "NOT_ALLOWED"
    added = await s.add_id(turn, "y" * fits, pinned=True)
    await s.commit(turn)
    listed = await s.begin(session)
    assert pins(listed) == [first, added]
    assert tokens([p["line"] for p in listed["pinned"]]) == 30


async def test_r31_replacing_a_pin_frees_its_line(api: Api) -> None:
    """R31: consolidating — replacing a pin by one pinned record — counts the new line
    instead of the old one, so it fits where an extra pin does not."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=35))
    session = await s.session()
    old = await s.committed("Old rule about refunds, long form", session, pinned=True)
    turn = await s.turn(session)
    _, ext = await api.error(ADD, turn=turn, summary="Extra rule of similar length", pinned=True)
    assert ext["code"] == "NOT_ALLOWED"
    new = await s.add_id(turn, "Refunds: 30 days, store credit", pinned=True, replaces=old)
    await s.commit(turn)
    assert pins(await s.begin(session)) == [new]


async def test_r31_consolidating_several_pins_into_one(api: Api) -> None:
    """R31: after deleting pins in a turn, that turn may pin the one that replaces them."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=40))
    session = await s.session()
    a = await s.committed("Refunds within 30 days", session, pinned=True)
    b = await s.committed("Refunds as store credit", session, pinned=True)
    turn = await s.turn(session)
    merged = "Refunds: within 30 days, as store credit only"
    _, ext = await api.error(ADD, turn=turn, summary=merged, pinned=True, replaces=a)
    assert ext["code"] == "NOT_ALLOWED"
    await api.ok(DELETE, turn=turn, id=b)
    new = await s.add_id(turn, merged, pinned=True, replaces=a)
    await s.commit(turn)
    begun = await s.begin(session)
    assert pins(begun) == [new]
    assert tokens([p["line"] for p in begun["pinned"]]) <= 40
    assert {r["id"]: r["status"] for r in await records(api, s.agent_id)} == {
        a: "SUPERSEDED",
        b: "DELETED",
        new: "ACTIVE",
    }


async def test_r31_budget_counts_the_pins_the_turn_reads(api: Api) -> None:
    """R31 with R11: the budget is over the lines this turn would list, so another
    session's SESSION pins do not use it up."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=25))
    full, empty = await s.session(), await s.session()
    await s.committed("Pin that fills session one", full, pinned=True)
    turn = await s.turn(full)
    _, ext = await api.error(ADD, turn=turn, summary="Second pin", pinned=True)
    assert ext["code"] == "NOT_ALLOWED"
    await s.rollback(turn)
    other = await s.committed("Pin that fills session two", empty, pinned=True)
    assert pins(await s.begin(empty)) == [other]


async def test_r31_unpinned_records_do_not_count(api: Api) -> None:
    """R31: only pinned lines count; an unpinned record may be added over the budget."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=20))
    session = await s.session()
    turn = await s.turn(session)
    record = await s.add_id(turn, "A long unpinned fact " * 10)
    await s.commit(turn)
    assert [r["id"] for r in await records(api, s.agent_id)] == [record]
    assert (await s.begin(session))["pinned"] == []


async def test_r31_a_pin_another_open_turn_staged_holds_its_share_of_the_budget(api: Api) -> None:
    """R31 with R12: two open turns of one session cannot together pin past the budget.
    The first turn's staged pin counts against the second until the first turn ends; once
    it rolls back, the room is free again."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=25))
    session = await s.session()
    first, second = await s.turn(session), await s.turn(session)
    await s.add_id(first, "Pin of the first turn", pinned=True)
    _, ext = await api.error(ADD, turn=second, summary="Pin of the second", pinned=True)
    assert ext["code"] == "NOT_ALLOWED" and ext["field"] == "pinned"
    await s.rollback(first)
    added = await s.add_id(second, "Pin of the second", pinned=True)
    await s.commit(second)
    assert pins(await s.begin(session)) == [added]


async def test_r31_turns_pinning_at_once_never_overfill_the_list(api: Api) -> None:
    """R31 under concurrency: several turns pin at the same moment where the budget holds
    one more pin; exactly one is accepted, and after every turn commits the list fits."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=25))
    session = await s.session()
    turns = [await s.turn(session) for _ in range(4)]
    results = await asyncio.gather(
        *(
            api.execute(ADD, turn=t, summary=f"Concurrent pin {i}", pinned=True)
            for i, t in enumerate(turns)
        )
    )
    codes = sorted("ok" if r.errors is None else r.errors[0].extensions["code"] for r in results)
    assert codes == ["NOT_ALLOWED", "NOT_ALLOWED", "NOT_ALLOWED", "ok"]
    for t in turns:
        await s.commit(t)
    listed = await s.begin(session)
    assert len(listed["pinned"]) == 1
    assert tokens([p["line"] for p in listed["pinned"]]) <= 25


async def test_r31_another_sessions_staged_session_pin_reserves_nothing_here(api: Api) -> None:
    """R31 with R11: a SESSION pin another session's open turn staged would never be
    listed in this session, so it takes none of this session's budget."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=25))
    here, there = await s.session(), await s.session()
    elsewhere = await s.turn(there)
    await s.add_id(elsewhere, "Pin of session two", pinned=True)
    turn = await s.turn(here)
    added = await s.add_id(turn, "Pin of session one", pinned=True)
    await s.commit(turn)
    await s.commit(elsewhere)
    assert pins(await s.begin(here)) == [added]


async def test_r31_a_live_pin_counts_the_pins_preview_turns_would_list_with_it(
    api: Api,
) -> None:
    """R31 with R13: preview turns list live and preview pins, so a live pin must fit
    beside the committed preview pins too; a later preview turn's list stays in budget."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=25))
    session = await s.session()
    drafting = await s.turn(session, preview=True)
    draft = await s.add_id(drafting, "Preview pin that fills it", pinned=True)
    await s.commit(drafting)
    live = await s.turn(session)
    _, ext = await api.error(ADD, turn=live, summary="Live pin of the same size", pinned=True)
    assert ext["code"] == "NOT_ALLOWED" and ext["field"] == "pinned"
    await s.commit(live)
    assert pins(await s.begin(session)) == []
    listed = await s.begin(session, preview=True)
    assert pins(listed) == [draft]
    assert tokens([p["line"] for p in listed["pinned"]]) <= 25


async def test_r31_a_preview_pin_counts_the_live_pins_it_is_listed_with(api: Api) -> None:
    """R31 with R13: a preview turn's pin is checked against the live pins preview turns
    list with it."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=25))
    session = await s.session()
    live = await s.committed("Live pin that fills it", session, pinned=True)
    preview = await s.turn(session, preview=True)
    _, ext = await api.error(ADD, turn=preview, summary="Preview pin, same size", pinned=True)
    assert ext["code"] == "NOT_ALLOWED" and ext["field"] == "pinned"
    await s.commit(preview)
    assert pins(await s.begin(session, preview=True)) == [live]


async def test_r31_pins_over_a_smaller_budget_list_the_newest_that_fit(api: Api) -> None:
    """R31: pins made under a larger budget are never listed over a later, smaller one:
    the newest pins that fit are listed, oldest first; the instructions say how many
    older ones are not, and the memory.pinned event names them."""
    s = Scenario(api)
    await s.agent(memory_config(pinned=1000))
    session = await s.session()
    made = [await s.committed(f"Pin number {i} of three", session, pinned=True) for i in range(3)]
    before = await s.begin(session)
    lines = [p["line"] for p in before["pinned"]]
    budget = tokens(lines[1:])  # room for the two newest only
    assert budget < tokens(lines)
    await s.publish(memory_config(pinned=budget))
    begun = await s.begin(session)
    assert pins(begun) == made[1:]
    listed = [p["line"] for p in begun["pinned"]]
    assert tokens(listed) <= budget
    note = begun["instructions"].split("\n")[-1]
    assert begun["instructions"].split("\n")[:-1] == listed
    assert note.startswith("1 older pinned record(s) are not listed") and "consolidate" in note
    event = await pinned_event(api, begun["turn"]["id"])
    assert event["lines"] == listed
    assert [v["recordId"] for v in event["omitted"]] == made[:1]
    # the transcript keeps the instructions as given, the note included
    assert "\n".join([*event["lines"], *event["notes"]]) == begun["instructions"]
