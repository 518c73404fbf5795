"""searchHistory reads the dates a query names against the turns' own (R62): "last
week", a month, a day; and finds a question through the answer after it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from tests.api.history_scenario import HistoryScenario, agent, dated, history_config, user
from tests.conftest import Api


async def _cooking(api: Api) -> tuple[HistoryScenario, str]:
    """Three dinners among other talk: the oldest a month before last week, one last
    week, the newest yesterday."""
    s = HistoryScenario(api)
    await s.agent(history_config("messages"))
    session = await s.session()
    now = datetime.now(UTC)
    monday = datetime(now.year, now.month, now.day, tzinfo=UTC) - timedelta(days=now.weekday())
    turns = (
        ("For dinner I cooked a mushroom risotto", monday - timedelta(days=35)),
        ("The train to the office was late again this morning", None),
        ("My sister is moving to Lisbon in the autumn", None),
        ("For dinner I cooked a lentil curry", monday - timedelta(days=5)),
        ("Remind me to renew the car insurance before it lapses", None),
        ("The printer on the third floor is out of toner", None),
        ("For dinner I cooked a tomato pasta", now - timedelta(days=1)),
    )
    for number, (text, at) in enumerate(turns, start=1):
        await s.committed_turn(session, user(text), agent("Noted."))
        if at is not None:
            await dated(api, session, number, at)
    return s, session


async def test_r62_what_did_i_cook_last_week_finds_the_turn_kept_that_week(api: Api) -> None:
    s, session = await _cooking(api)
    reader = await s.turn(session)
    (first, *_) = await s.results(reader, "What did I cook for dinner last week?")
    assert "lentil curry" in first["text"] and first["turn"] == 4
    # with no time named, the newest of the equally close dinners comes first
    (plain, *_) = await s.results(reader, "What did I cook for dinner?")
    assert plain["turn"] != 4


async def test_r62_a_month_or_a_day_in_the_query_finds_the_turn_kept_then(api: Api) -> None:
    s, session = await _cooking(api)
    reader = await s.turn(session)
    risotto_at = datetime.now(UTC) - timedelta(days=datetime.now(UTC).weekday() + 35)
    month = risotto_at.strftime("%B %Y")
    (first, *_) = await s.results(reader, f"What did I cook for dinner in {month}?")
    assert "risotto" in first["text"]
    day = f"{risotto_at.day} {risotto_at.strftime('%B %Y')}"
    (first, *_) = await s.results(reader, f"What did I cook for dinner on {day}?")
    assert "risotto" in first["text"]


async def test_r62_a_question_is_found_through_the_answer_after_it(api: Api) -> None:
    """The user's question names nothing the search asks for; the reply after it does:
    the question comes before another turn's words that are closer on their own (without
    next_share it would come after them)."""
    s = HistoryScenario(api)
    await s.agent(history_config("messages"))
    session = await s.session()
    for said, reply in (
        (
            "Which food should we buy for Rex now?",
            "The vet recommended the grain-free salmon kibble.",
        ),
        ("We bought a new kibble bowl at the vet", "Nice."),
        ("The vet recommended a walk every day", "Good idea."),
    ):
        await s.committed_turn(session, user(said), agent(reply))
    reader = await s.turn(session)
    texts = [
        r["text"] for r in await s.results(reader, "What kibble did the vet recommend?", limit=4)
    ]
    assert texts[0] == "turn 1, agent\nThe vet recommended the grain-free salmon kibble."
    question = texts.index("turn 1, user\nWhich food should we buy for Rex now?")
    assert question < texts.index("turn 3, user\nThe vet recommended a walk every day")
