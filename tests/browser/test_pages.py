"""GraphiQL loads offline and runs a query; the dashboard shows an agent's records, a
record's version history and a search result, all in a real headless Chromium."""

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


def test_dashboard_shows_records_versions_and_search(
    browser: Browser, server: str, client_token: str, seeded: Seeded, shots: Path
) -> None:
    page, elsewhere, errors = _offline_page(browser, server)
    page.goto(f"{server}/dashboard")
    page.fill("#token", client_token)
    page.click("#connect")
    expect(page.locator("#namespace")).to_be_enabled(timeout=20_000)
    page.select_option("#namespace", seeded.namespace)
    expect(page.locator("#agent option", has_text=seeded.agent_name)).to_have_count(1)
    page.select_option("#agent", str(seeded.agent_id))

    rows = page.locator("#records tbody tr")
    expect(rows).to_have_count(4, timeout=20_000)
    expect(page.locator("#records")).to_contain_text("Prefers phone calls after 5pm")
    old = page.locator(f'#records tr[data-id="{seeded.replaced_id}"]')
    expect(old).to_contain_text("Prefers email")
    expect(old).to_contain_text("SUPERSEDED")
    expect(old).to_contain_text("customer_id=C-42")

    old.click()
    record = page.locator(f'#record[data-id="{seeded.replaced_id}"]')
    expect(record).to_contain_text("2 version(s), oldest first", timeout=20_000)
    expect(record).to_contain_text("replaced by " + str(seeded.correction_id))
    versions = record.locator(".version strong")
    expect(versions).to_have_text(["v1 ACTIVE · fact", "v2 SUPERSEDED · fact"])
    expect(record.locator(".writer").first).to_contain_text("session chat-1")
    page.screenshot(path=shots / "dashboard-record.png", full_page=True)

    page.click('#tabs button[data-tab="search"]')
    page.fill("#search-query", "phone calls")
    page.click("#search-go")
    hits = page.locator("#search-results li")
    expect(hits.first).to_contain_text("Prefers phone calls after 5pm", timeout=20_000)
    expect(hits.first).to_contain_text("score ")
    expect(page.locator("#status")).to_have_text("Search: done")
    page.screenshot(path=shots / "dashboard-search.png", full_page=True)
    assert elsewhere == [], f"the dashboard asked for more than this server: {elsewhere}"
    assert errors == []
