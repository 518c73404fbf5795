"""GraphiQL loads offline and runs a query, in a real headless Chromium (the dashboard:
test_dashboard.py)."""

from __future__ import annotations

from pathlib import Path

from playwright.sync_api import Browser, Page, Route, expect

from tests.e2e.live import Seeded


def _offline_page(browser: Browser, server: str) -> tuple[Page, list[str], list[str]]:
    """A page that can reach the server only: any other request fails and is noted."""
    page = browser.new_context().new_page()
    elsewhere: list[str] = []
    errors: list[str] = []

    def route(r: Route) -> None:
        if r.request.url.startswith(server + "/"):
            r.continue_()
        else:
            elsewhere.append(r.request.url)
            r.abort("internetdisconnected")

    page.route("**/*", route)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    return page, elsewhere, errors


def test_graphiql_loads_offline_and_runs_a_query(
    browser: Browser, server: str, admin_token: str, seeded: Seeded, shots: Path
) -> None:
    page, elsewhere, errors = _offline_page(browser, server)
    page.goto(f"{server}/graphql#token={admin_token}")
    expect(page.locator(".graphiql-container")).to_be_visible(timeout=20_000)
    page.locator(".graphiql-execute-button").click()
    result = page.locator(".result-window")
    expect(result).to_contain_text('"namespaces"', timeout=20_000)
    expect(result).to_contain_text(seeded.namespace)

    # a query of one's own, typed into the editor
    page.locator(".graphiql-query-editor .CodeMirror").click()
    page.keyboard.press("Control+A")
    query = '{ agents(namespace: "NS", first: 5) { edges { node { id name } } } }'
    page.keyboard.insert_text(query.replace("NS", seeded.namespace))
    page.locator(".graphiql-execute-button").click()
    expect(result).to_contain_text(str(seeded.agent_id), timeout=20_000)
    expect(result).to_contain_text(f'"name": "{seeded.agent_name}"')
    page.screenshot(path=shots / "graphiql.png")
    assert elsewhere == [], f"GraphiQL asked for more than this server: {elsewhere}"
    assert errors == []


def test_graphiql_without_the_link_sends_nothing_until_a_token_is_given(
    browser: Browser, server: str, admin_token: str
) -> None:
    """Opened without the printed link, GraphiQL asks for a token instead of sending its
    placeholder (which the server refuses, leaving "Error fetching schema"); once a token
    is typed under Headers the schema loads and queries run, with no re-fetch by hand."""
    page, elsewhere, errors = _offline_page(browser, server)
    sent: list[str | None] = []
    page.on(
        "request",
        lambda r: sent.append(r.headers.get("authorization")) if r.method == "POST" else None,
    )
    page.goto(f"{server}/graphql")
    result = page.locator(".result-window")
    expect(result).to_contain_text("Set your token under Headers", timeout=20_000)
    assert sent == []
    page.locator(".graphiql-editor-tools button", has_text="Headers").click()
    page.locator(".graphiql-editor-tool .CodeMirror").last.click()
    page.keyboard.press("Control+A")
    with page.expect_request(lambda r: r.method == "POST", timeout=20_000):
        page.keyboard.insert_text(f'{{"Authorization": "Bearer {admin_token}"}}')  # the schema
    page.locator(".graphiql-execute-button").click()
    expect(result).to_contain_text('"namespaces"', timeout=20_000)
    page.locator('[aria-label="Show Documentation Explorer"]').click()
    expect(page.locator(".graphiql-doc-explorer")).to_contain_text("Query")
    assert set(sent) == {f"Bearer {admin_token}"}
    assert elsewhere == [] and errors == []
