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
