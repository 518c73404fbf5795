"""The dashboard in a real headless Chromium, with the server's default limits, on the
README walkthrough's data and on a session of 200 turns written by bench.trace: every
view opens with no console error and no GraphQL error; a refused view names the grant
it needs; a reload keeps the view. Each view's screenshot is left in SHOTS."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

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
    _shot(page, shots / "dashboard-agent.png")

    _open(watched, server, f"view=sessions&{base}")
    row = page.locator(f'#sessions tr[data-session="{walked.session}"]')
    expect(row).to_contain_text("rolled back")  # its last turn
    row.locator("a").click()

    # the session as a trace: turn 1's conversation, executions, what it wrote
    turns = page.locator("#turns li[data-turn]")
    expect(turns).to_have_count(3, timeout=TIMEOUT)
    expect(turns.nth(1)).to_contain_text("preview")
    expect(turns.nth(2)).to_contain_text("rolled back")
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
    wrote = page.locator("#wrote")
    expect(wrote).to_contain_text("Banks at the Baixa branch")
    expect(page.locator("#retrieved")).to_contain_text("Nothing recalled")
    _shot(page, shots / "dashboard-session.png", full=True)

    # the rolled-back turn wrote nothing; a reload keeps the turn chosen
    turns.nth(2).locator("a").click()
    expect(page.locator("#wrote")).to_contain_text("a turn that does not commit leaves no memory")
    page.reload()
    expect(page.locator("#turns li.selected")).to_contain_text("#3", timeout=TIMEOUT)

    # from a turn to the memory as it stood when the turn began
    turns.nth(1).locator("a").click()
    expect(page.locator(".turn-head h2")).to_contain_text("Turn 2", timeout=TIMEOUT)
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


def test_a_session_of_200_turns_pages_and_every_turn_opens(
    watched: Watched, server: str, traced: Traced, shots: Path
) -> None:
    """Turns, transcripts and lists come a page at a time, never tripping the server's
    limits; a deep link to a late turn opens it; a retried attempt and a preview turn
    read as such; the memory as it stood at that turn lists what it could see."""
    page = watched.page
    base = f"ns={traced.namespace}&agent={traced.agent}"
    page.goto(
        f"{server}/dashboard#token={traced.token}&view=session&{base}&session={traced.session}"
    )
    turns = page.locator("#turns li[data-turn]")
    expect(turns).to_have_count(25, timeout=TIMEOUT)
    expect(page.locator("main .page-head .facts")).to_contain_text(
        str(traced.turns + 1)
    )  # one retried
    for shown in (50, 75, 100, 125):
        page.locator("main button.more").first.click()
        expect(turns).to_have_count(shown, timeout=TIMEOUT)
    retried = page.locator('#turns li[data-number="100"]')
    expect(retried).to_have_count(2)
    expect(retried.nth(0)).to_contain_text("failed")
    expect(retried.nth(1)).to_contain_text("try 2")
    retried.nth(0).locator("a").click()
    expect(page.locator("#turn")).to_contain_text("failed: the model timed out", timeout=TIMEOUT)
    _shot(page, shots / "dashboard-trace-200.png")

    late = page.locator('#turns li[data-number="99"] a')
    late.click()
    expect(page.locator(".turn-head h2")).to_contain_text("Turn 99", timeout=TIMEOUT)
    conversation = page.locator("#conversation")
    expect(conversation.locator('[data-type="USER_MESSAGE"]')).to_contain_text("Remember this")
    expect(conversation.locator(".tool-call")).to_contain_text("calendar")
    expect(page.locator("#executions")).to_contain_text("bench-model")
    expect(page.locator("#retrieved")).to_contain_text("search_memory")
    turn99 = page.url
    page.goto("about:blank")
    page.goto(turn99)
    expect(page.locator(".turn-head h2")).to_contain_text("Turn 99", timeout=TIMEOUT)

    page.locator(".as-of-link").click()
    expect(page.locator("#moment")).to_contain_text("turn 99", timeout=TIMEOUT)
    expect(page.locator("#records tbody tr")).to_have_count(25, timeout=TIMEOUT)
    page.locator("main button.more").click()
    expect(page.locator("#records tbody tr")).not_to_have_count(25, timeout=TIMEOUT)

    _open(watched, server, f"view=sessions&{base}")
    expect(page.locator("#sessions")).to_contain_text(str(traced.turns + 1))
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
    expect(page.locator('[data-refused="session"]')).to_be_visible()
    expect(page.locator('[data-refused="memory"]')).to_be_visible()

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
    expect(page.locator("#conversation")).to_contain_text("Call me after 5pm", timeout=TIMEOUT)
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
