"""The dashboard in a real headless Chromium, with the server's default limits, on the
README walkthrough's data and on a session of 200 turns written by bench.trace: every
view opens with no console error and no GraphQL error; a refused view names the grant
it needs; a reload keeps the view. Each view's screenshot is left in SHOTS."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Browser, Page, Response, Route, expect

from tests.browser.conftest import Traced, Walked
from tests.e2e.live import am

TIMEOUT = 20_000


@dataclass
class Watched:
    """A page that may reach this server only, with what went wrong on it."""

    page: Page
    errors: list[str] = field(default_factory=list)  # console errors, page errors
    graphql: list[dict[str, object]] = field(default_factory=list)  # GraphQL errors
    elsewhere: list[str] = field(default_factory=list)

    def clean(self) -> None:
        assert self.elsewhere == [], f"asked for more than this server: {self.elsewhere}"
        assert self.errors == [], self.errors
        assert self.graphql == [], self.graphql


@pytest.fixture
def watched(browser: Browser, server: str) -> Iterator[Watched]:
    context = browser.new_context(viewport={"width": 1440, "height": 900})
    page = context.new_page()
    seen = Watched(page)

    def route(r: Route) -> None:
        if r.request.url.startswith(server + "/"):
            r.continue_()
        else:
            seen.elsewhere.append(r.request.url)
            r.abort("internetdisconnected")

    def answered(response: Response) -> None:
        if response.url.endswith("/graphql") and response.request.method == "POST":
            seen.graphql.extend(json.loads(response.text()).get("errors") or [])

    page.route("**/*", route)
    page.on("response", answered)
    page.on("pageerror", lambda e: seen.errors.append(str(e)))
    page.on("console", lambda m: seen.errors.append(m.text) if m.type == "error" else None)
    yield seen
    context.close()


def _shot(page: Page, path: Path, *, full: bool = False) -> None:
    """A screenshot once the view has loaded (the status line is empty again)."""
    expect(page.locator("#status")).to_have_text("", timeout=TIMEOUT)
    page.screenshot(path=path, full_page=full)


def _open(w: Watched, server: str, fragment: str) -> None:
    w.page.goto(f"{server}/dashboard#{fragment}")
    expect(w.page.locator("#status")).to_have_text("", timeout=TIMEOUT)


def test_the_walkthroughs_data_in_every_view(
    watched: Watched, server: str, walked: Walked, shots: Path
) -> None:
    """The link make run prints (token in the fragment) opens the dashboard; the
    walkthrough's agent, session, memory, search and configuration read as a person
    reads them, linked to one another."""
    page = watched.page
    base = f"ns=financial&agent={walked.agent}"
    page.goto(f"{server}/dashboard#token={walked.token}")
    expect(page.locator("#connected")).to_be_visible(timeout=TIMEOUT)
    assert "token=" not in page.url  # the token left the address at once
    expect(page.locator('#namespaces a[data-ns="financial"]')).to_be_visible(timeout=TIMEOUT)
    _shot(page, shots / "dashboard-namespaces.png")

    _open(watched, server, f"view=agent&{base}")
    expect(page.locator("main h1")).to_contain_text("advisor-")
    expect(page.locator("main")).to_contain_text("Always confirm identity before account changes")
    # usage and the last 30 days, drawn by the bundled chart library
    expect(page.locator("#usage")).to_contain_text("900 in / 80 out")
    expect(page.locator('#by-model tr[data-model="your-model"]')).to_contain_text("900")
    # priced by the server's table: 900 tokens in at 2, 80 out at 10 per million
    expect(page.locator("#usage")).to_contain_text("0.0026")
    expect(page.locator("#activity-chart canvas")).to_be_visible()
    # the preview turn's deletion reads as one, not as the record gone
    expect(page.locator("#recent-memory")).to_contain_text("preview deletion")
    _shot(page, shots / "dashboard-agent.png")

    _open(watched, server, f"view=sessions&{base}")
    row = page.locator(f'#sessions tr[data-session="{walked.session}"]')
    expect(row).to_contain_text("rolled back")  # its last turn
    expect(row).to_contain_text("980")  # tokens
    row.locator("a").click()

    # the session as a trace, newest turn first: turn 1's conversation, executions, what
    # it wrote, what its tools were given, the review's decisions
    turns = page.locator("#turns li[data-turn]")
    expect(turns).to_have_count(3, timeout=TIMEOUT)
    expect(turns.nth(0)).to_contain_text("rolled back")
    expect(turns.nth(0)).to_have_class("selected")  # the latest, opened first
    expect(turns.nth(1)).to_contain_text("preview")
    turns.nth(2).locator("a").click()
    expect(page.locator(".turn-head h2")).to_contain_text("Turn 1", timeout=TIMEOUT)
    conversation = page.locator("#conversation")
    expect(conversation.locator('[data-type="USER_MESSAGE"]')).to_contain_text(
        "Call me after 5pm, please.", timeout=TIMEOUT
    )
    expect(conversation.locator('[data-type="AGENT_MESSAGE"]')).to_contain_text("Noted")
    expect(conversation).to_contain_text("Result of add_memory")
    executions = page.locator("#executions")
    expect(executions).to_contain_text("memory_review")
    expect(executions).to_contain_text("your-model")
    expect(executions).to_contain_text("900 in / 80 out")
    expect(executions.locator("[data-invocation] .bar")).to_be_visible()  # on the time axis
    wrote = page.locator("#wrote")
    expect(wrote).to_contain_text("Banks at the Baixa branch")
    expect(page.locator("#retrieved")).to_contain_text("Nothing recalled")
    calls = page.locator("#tool-calls")
    expect(calls).to_contain_text("Prefers phone calls after 5pm")  # add_memory's arguments
    expect(calls).to_contain_text("customer id")
    review = page.locator("#review")
    expect(review.locator('[data-applied="SKIP"]')).to_contain_text("restates")
    expect(review.locator('[data-applied="ADD"]')).to_contain_text("Banks at the Baixa branch")
    expect(page.locator(".turn-head")).to_contain_text("900 in / 80 out")
    _shot(page, shots / "dashboard-session.png", full=True)

    # the rolled-back turn wrote nothing; a reload keeps the turn chosen
    turns.nth(0).locator("a").click()
    expect(page.locator("#wrote")).to_contain_text("a turn that does not commit leaves no memory")
    page.reload()
    expect(page.locator("#turns li.selected")).to_contain_text("#3", timeout=TIMEOUT)

    # the preview turn's deletion; from a turn to the memory as it stood when it began
    turns.nth(1).locator("a").click()
    expect(page.locator(".turn-head h2")).to_contain_text("Turn 2", timeout=TIMEOUT)
    expect(page.locator("#wrote")).to_contain_text("preview deletion")
    expect(page.locator("#conversation .pinned-lines")).to_contain_text(
        "Always confirm identity before account changes", timeout=TIMEOUT
    )
    page.locator(".as-of-link").click()
    expect(page.locator("#moment")).to_contain_text("As it stood when turn 2", timeout=TIMEOUT)
    records = page.locator("#records tbody tr")
    expect(records.first).to_be_visible(timeout=TIMEOUT)
    standing = page.locator("#records")
    expect(standing).to_contain_text("Prefers phone calls after 5pm")
    expect(standing).not_to_contain_text("deleted preview")  # the preview turn's own deletion
    _shot(page, shots / "dashboard-memory-as-of.png", full=True)

    # memory with filters; a record's versions, who wrote each, and its replacement
    _open(watched, server, f"view=memory&{base}&status=SUPERSEDED")
    expect(records).to_have_count(1, timeout=TIMEOUT)
    expect(records.first).to_contain_text("Prefers email")
    expect(records.first).to_contain_text("customer_id=C-42")
    _shot(page, shots / "dashboard-memory.png", full=True)
    records.first.locator("a").first.click()
    versions = page.locator("#versions .version")
    expect(versions).to_have_count(2, timeout=TIMEOUT)
    expect(versions.nth(0)).to_contain_text("v1 active")
    expect(versions.nth(1)).to_contain_text("v2 superseded")
    expect(versions.nth(0)).to_contain_text("tool add_memory")
    expect(versions.nth(0).locator("dd a", has_text="turn 1")).to_be_visible()
    _shot(page, shots / "dashboard-record.png", full=True)
    page.reload()
    expect(page.locator("#versions .version")).to_have_count(2, timeout=TIMEOUT)
    page.locator("#record .record-link", has_text="Prefers phone calls after 5pm").click()
    expect(page.locator("#record h1")).to_have_text(
        "Prefers phone calls after 5pm", timeout=TIMEOUT
    )
    expect(page.locator("#record")).to_contain_text("replaces")

    # search, with why each result ranked
    _open(watched, server, f"view=search&{base}&q=phone%20calls")
    hit = page.locator("#results .hit").first
    expect(hit).to_contain_text("Prefers phone calls after 5pm", timeout=TIMEOUT)
    for term in ("meaning", "keywords", "recency"):
        expect(hit.locator(".term-name", has_text=term)).to_be_visible()
    expect(hit).to_contain_text("#1 by keywords")
    _shot(page, shots / "dashboard-search.png", full=True)

    # the configuration and its effective memory settings
    _open(watched, server, f"view=config&{base}")
    expect(page.locator("#side-by-side")).to_contain_text("customer_id")
    expect(page.locator("#side-by-side")).to_contain_text("up to 2000 tokens")
    _shot(page, shots / "dashboard-config.png", full=True)
    watched.clean()


BEGIN = "mutation($s: ID!) { beginTurn(input: {sessionId: $s}) { turn { id } } }"
COMMIT = "mutation($t: ID!) { commitTurn(input: {turnId: $t}) { turn { id } } }"


def _as_runtime(server: str, traced: Traced, query: str, **variables: str) -> dict[str, Any]:
    answer = httpx.post(
        f"{server}/graphql",
        json={"query": query, "variables": variables},
        headers={"authorization": f"Bearer {traced.runtime}"},
    ).json()
    assert not answer.get("errors"), answer
    return dict(answer["data"])


def _turn_id(server: str, traced: Traced, number: int) -> str:
    query = """query($s: ID!) { session(id: $s) {
      turns(first: 10, order: OLDEST_FIRST) { edges { node { id number } } } } }"""
    answer = httpx.post(
        f"{server}/graphql",
        json={"query": query, "variables": {"s": traced.session}},
        headers={"authorization": f"Bearer {traced.token}"},
    ).json()
    edges = answer["data"]["session"]["turns"]["edges"]
    return next(str(e["node"]["id"]) for e in edges if e["node"]["number"] == number)


def test_a_session_of_200_turns_pages_and_every_turn_opens(
    watched: Watched, server: str, traced: Traced, shots: Path
) -> None:
    """Turns, transcripts and lists come a page at a time, never tripping the server's
    limits; a deep link to a late turn opens it; a retried attempt and a preview turn
    read as such; the memory as it stood at that turn lists what it could see."""
    page = watched.page
    base = f"ns={traced.namespace}&agent={traced.agent}"
    session = f"view=session&{base}&session={traced.session}"
    # a deep link to an early turn: the list pages back to it and selects it
    page.goto(f"{server}/dashboard#token={traced.token}&{session}")
    turns = page.locator("#turns li[data-turn]")
    expect(turns).to_have_count(25, timeout=TIMEOUT)
    expect(turns.first).to_contain_text(f"#{traced.turns}")  # newest first
    expect(turns.first).to_have_class("selected")
    # live: a turn the runtime begins appears on top and opens, and so does its commit
    expect(page.locator("#live")).to_have_text("● live")
    begun = _as_runtime(server, traced, BEGIN, s=traced.session)["beginTurn"]["turn"]["id"]
    newest = page.locator(f'#turns li[data-turn="{begun}"]')
    expect(newest).to_contain_text("open", timeout=TIMEOUT)
    expect(turns.first).to_have_attribute("data-turn", begun)
    expect(page.locator(".turn-head h2")).to_contain_text(f"Turn {traced.turns + 1}")
    _as_runtime(server, traced, COMMIT, t=begun)
    expect(newest).to_contain_text("committed", timeout=TIMEOUT)
    expect(page.locator(".turn-head h2")).to_contain_text("committed", timeout=TIMEOUT)
    _shot(page, shots / "dashboard-live.png")
    page.reload()
    expect(turns).to_have_count(25, timeout=TIMEOUT)
    assert page.locator('#turns li[data-number="5"]').count() == 0  # not on the first page
    expect(page.locator("main .page-head .facts")).to_contain_text(
        str(traced.turns + 2)
    )  # one retried, one begun live
    for shown in (50, 75, 100, 125):
        page.locator("main button.more").first.click()
        expect(turns).to_have_count(shown, timeout=TIMEOUT)
    retried = page.locator('#turns li[data-number="100"]')
    expect(retried).to_have_count(2)
    expect(retried.nth(0)).to_contain_text("try 2")  # newest first
    expect(retried.nth(1)).to_contain_text("failed")
    retried.nth(1).locator("a").click()
    expect(page.locator("#turn")).to_contain_text("failed: the model timed out", timeout=TIMEOUT)
    _shot(page, shots / "dashboard-trace-200.png")

    late = page.locator('#turns li[data-number="99"] a')
    late.click()
    expect(page.locator(".turn-head h2")).to_contain_text("Turn 99", timeout=TIMEOUT)
    conversation = page.locator("#conversation")
    expect(conversation.locator('[data-type="USER_MESSAGE"]')).to_contain_text("Remember this")
    expect(conversation.locator(".tool-call")).to_contain_text("calendar")
    # the instructions as given: the pinned lines, then the note to search history first
    expect(conversation.locator(".instruction-note")).to_contain_text("search_history")
    expect(page.locator("#executions")).to_contain_text("bench-model")
    expect(page.locator("#retrieved")).to_contain_text("search_memory")
    expect(page.locator("#tool-calls .payload-records li").first).to_be_visible()
    expect(page.locator("main")).not_to_contain_text("undefined")  # a found record has no status
    expect(page.locator("#executions [data-invocation]").first).to_contain_text("ms")  # latency
    turn99 = page.url
    page.goto("about:blank")
    page.goto(turn99)
    expect(page.locator(".turn-head h2")).to_contain_text("Turn 99", timeout=TIMEOUT)
    expect(page.locator("#turns li.selected")).to_contain_text("#99", timeout=TIMEOUT)
    fifth = _turn_id(server, traced, 5)
    page.goto("about:blank")
    page.goto(f"{server}/dashboard#{session}&turn={fifth}")
    expect(page.locator("#turns li.selected")).to_contain_text("#5", timeout=TIMEOUT)
    expect(page.locator(".turn-head h2")).to_contain_text("Turn 5")
    page.goto(turn99)
    expect(page.locator(".turn-head h2")).to_contain_text("Turn 99", timeout=TIMEOUT)
    # history search's hits: their text, and a link to their turn
    page.locator('#turns li[data-number="95"] a').click()
    expect(page.locator(".turn-head h2")).to_contain_text("Turn 95", timeout=TIMEOUT)
    searched = page.locator("#retrieved [data-execution]", has_text="search_history").first
    expect(searched.locator(".history-hit .text").first).to_contain_text("Remember this")
    expect(page.locator("#conversation")).not_to_contain_text("0000")  # no raw float scores
    searched.locator("a.hit-turn").first.click()
    expect(page.locator(".turn-head h2")).not_to_contain_text("Turn 95", timeout=TIMEOUT)
    page.goto(turn99)
    expect(page.locator(".turn-head h2")).to_contain_text("Turn 99", timeout=TIMEOUT)

    page.locator(".as-of-link").click()
    expect(page.locator("#moment")).to_contain_text("turn 99", timeout=TIMEOUT)
    expect(page.locator("#records tbody tr")).to_have_count(25, timeout=TIMEOUT)
    page.locator("main button.more").click()
    expect(page.locator("#records tbody tr")).not_to_have_count(25, timeout=TIMEOUT)

    _open(watched, server, f"view=sessions&{base}")
    expect(page.locator("#sessions")).to_contain_text(str(traced.turns + 2))
    # found by the runtime's own id, by how its turns went, by what was said in it
    page.locator("#find-session input").fill("trace-200")
    page.locator("#find-session button").click()
    expect(page.locator(".page-head h1")).to_contain_text("trace-200", timeout=TIMEOUT)
    _open(watched, server, f"view=sessions&{base}&failed=yes&pv=yes")
    expect(page.locator(f'#sessions tr[data-session="{traced.session}"]')).to_be_visible()
    _open(watched, server, f"view=sessions&{base}&failed=no")
    expect(page.locator("main")).to_contain_text("No session matches these filters.")
    _open(watched, server, f"view=sessions&{base}&all=1&hq=Remember%20this")
    hits = page.locator("#history-hits .hit")
    expect(hits.first).to_contain_text("Remember this", timeout=TIMEOUT)
    expect(page.locator("#history-search")).to_contain_text("1 session searched")
    _shot(page, shots / "dashboard-sessions-search.png", full=True)
    number = hits.first.get_attribute("data-turn")
    hits.first.locator("a.hit-turn").click()
    expect(page.locator("#turns li.selected")).to_have_attribute("data-turn", str(number))
    expect(page.locator("#conversation")).to_contain_text("Remember this", timeout=TIMEOUT)
    _shot(page, shots / "dashboard-timeline.png")
    _open(watched, server, f"view=memory&{base}&label=topic%3Dt1")
    expect(page.locator("#records tbody tr").first).to_contain_text("topic=t1", timeout=TIMEOUT)
    watched.clean()


def test_a_refused_view_says_which_grant_is_missing(
    watched: Watched, server: str, walked: Walked, database_url: object, shots: Path
) -> None:
    """A token that may read the agents but neither sessions nor memory: the sessions
    and memory views name the grants to ask for, instead of an empty table."""
    policy = "agents-only"
    *_, token = am(
        database_url,  # type: ignore[arg-type]
        ["policy", "create", "financial", policy],
        ["policy", "grant", "financial", policy, "SELECT", "financial.Agent"],
        ["token", "create", "--kind", "client", "--name", policy, "--quiet"],
    )
    am(database_url, ["policy", "bind", "financial", policy, "--principal", token[:12]])  # type: ignore[arg-type]
    page = watched.page
    base = f"ns=financial&agent={walked.agent}"
    page.goto(f"{server}/dashboard#token={token}&view=sessions&{base}")
    refusal = page.locator('[data-refused="session"]')
    expect(refusal).to_contain_text("SELECT financial.Session", timeout=TIMEOUT)
    expect(refusal).to_contain_text("agent-memory policy grant financial")
    _open(watched, server, f"view=memory&{base}")
    refusal = page.locator('[data-refused="memory"]')
    expect(refusal).to_contain_text("SELECT financial.AgentMemory.indexes.*", timeout=TIMEOUT)
    expect(refusal).to_contain_text("SELECT financial.AgentMemory.document")
    _shot(page, shots / "dashboard-refused.png")
    _open(watched, server, f"view=agent&{base}")
    expect(page.locator('#recent-sessions [data-refused="session"]')).to_be_visible()
    expect(page.locator('#activity [data-refused="session"]')).to_be_visible()
    expect(page.locator('#recent-memory [data-refused="memory"]')).to_be_visible()

    # the sessions but not the memory: the trace reads, its memory parts are refused or
    # hidden (R71)
    policy = "sessions-only"
    *_, token = am(
        database_url,  # type: ignore[arg-type]
        ["policy", "create", "financial", policy],
        ["policy", "grant", "financial", policy, "SELECT", "financial.Agent"],
        ["policy", "grant", "financial", policy, "SELECT", "financial.Session"],
        ["token", "create", "--kind", "client", "--name", policy, "--quiet"],
    )
    am(database_url, ["policy", "bind", "financial", policy, "--principal", token[:12]])  # type: ignore[arg-type]
    page.goto(f"{server}/dashboard#token={token}&view=session&{base}&session={walked.session}")
    page.locator('#turns li[data-number="1"] a').click()
    expect(page.locator("#conversation")).to_contain_text("Call me after 5pm", timeout=TIMEOUT)
    expect(page.locator("#tool-calls .redacted").first).to_contain_text("hidden")
    expect(page.locator("#conversation .redacted").first).to_contain_text("hidden")
    expect(page.locator('#wrote [data-refused="memory"]')).to_be_visible()
    assert watched.errors == []
    assert {e["extensions"]["code"] for e in watched.graphql} == {"FORBIDDEN"}  # type: ignore[index]


def test_an_address_the_page_cannot_serve_says_so(
    watched: Watched, server: str, walked: Walked
) -> None:
    """An unknown view names itself and links home; a label filter without `=` says what
    a filter is instead of being dropped; the page asks for no API address, since it may
    only reach the server it comes from (its Content-Security-Policy: connect-src 'self')."""
    page = watched.page
    page.goto(f"{server}/dashboard")
    expect(page.locator("#connect")).to_be_visible(timeout=TIMEOUT)
    assert page.locator("#connect input").count() == 1  # the token, and no API address
    expect(page.locator("main")).to_contain_text("reads the server it is served from")
    page.goto(f"{server}/dashboard#token={walked.token}&view=nosuchview")
    expect(page.locator("#unknown-view")).to_contain_text(
        'no view named "nosuchview"', timeout=TIMEOUT
    )
    page.locator("#unknown-view a").click()
    expect(page.locator('#namespaces a[data-ns="financial"]')).to_be_visible(timeout=TIMEOUT)

    _open(watched, server, f"view=memory&ns=financial&agent={walked.agent}&label=customer_id")
    expect(page.locator("#label-problem")).to_contain_text("name=value")
    expect(page.locator("#records")).to_have_count(0)
    watched.clean()
