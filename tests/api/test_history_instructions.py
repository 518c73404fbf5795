"""The agent is told to search its history first (the spec's last paragraph, R64).

With ``harness.history`` on and earlier kept turns the turn can search, beginTurn's
instructions end with one line telling the agent to search them with search_history
before guessing at, or asking again for, something an earlier turn established. Not
when history is off, nor when there is nothing earlier the turn can search.
"""

from __future__ import annotations

from server.domain.history import SEARCH_FIRST
from tests.api.history_scenario import HistoryScenario, history_config, user
from tests.api.scenario import memory_config
from tests.api.test_rules_pinned import pinned_event
from tests.conftest import Api


async def _agent(api: Api, config: dict[str, object]) -> tuple[HistoryScenario, str]:
    s = HistoryScenario(api)
    await s.agent(config)
    return s, await s.session()


async def test_history_on_with_an_earlier_turn_says_to_search_it_once(api: Api) -> None:
    """With history and an earlier committed turn, the note follows the pinned lines, once."""
    s, session = await _agent(api, history_config(pinned=500))
    first = await s.begin(session)
    assert SEARCH_FIRST not in first["instructions"]  # nothing earlier yet
    turn = first["turn"]["id"]
    await s.add(turn, "Always answer in French", pinned=True)
    await s.record(turn, user("My order number is 4471"))
    await s.commit(turn)
    begun = await s.begin(session)
    lines = begun["instructions"].split("\n")
    assert lines == [begun["pinned"][0]["line"], SEARCH_FIRST]
    assert "search_history" in SEARCH_FIRST and "asking again" in SEARCH_FIRST
    event = await pinned_event(api, begun["turn"]["id"])
    assert [*event["lines"], *event["notes"]] == lines  # the transcript keeps them as given


async def test_no_note_without_history_or_without_an_earlier_committed_turn(api: Api) -> None:
    """History off: no note however many turns came before; history on: a rolled-back
    turn leaves nothing to search, so no note either."""
    s, session = await _agent(api, memory_config())
    await s.committed_turn(session, user("My order number is 4471"))
    assert (await s.begin(session))["instructions"] == ""

    s, session = await _agent(api, history_config())
    turn = await s.turn(session)
    await s.record(turn, user("My order number is 4471"))
    await s.rollback(turn)
    assert (await s.begin(session))["instructions"] == ""


async def test_preview_history_is_earlier_only_for_preview_turns(api: Api) -> None:
    """R64: what a preview turn kept is searched by preview turns only, so only they are
    told to search it."""
    s, session = await _agent(api, history_config())
    await s.committed_turn(session, user("My order number is 4471"), preview=True)
    assert (await s.begin(session))["instructions"] == ""
    assert (await s.begin(session, preview=True))["instructions"] == SEARCH_FIRST


async def test_a_replay_is_told_only_when_turns_came_before_its_original(api: Api) -> None:
    """R64: a replay of turn N searches the turns before N."""
    s, session = await _agent(api, history_config())
    one = await s.committed_turn(session, user("My order number is 4471"))
    two = await s.committed_turn(session, user("Ship it to Lyon"))
    assert (await s.begin(session, replayOf=one))["instructions"] == ""
    assert (await s.begin(session, replayOf=two))["instructions"] == SEARCH_FIRST
