"""The dashboard's own documents (server/web/static/dashboard/queries.js) against the
schema and the server's default limits: each is one valid operation that no variable it
takes can push past the cost, depth, alias or token limits (docs/security.md), so the
page never trips them. And the page's files hold nothing the Content-Security-Policy
of the HTML would refuse: no inline script or style, no eval, no HTML parsed from text."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from graphql import OperationDefinitionNode, build_schema, parse, validate

from bench.trace import dashboard_documents
from resolvers.cost import document_cost
from server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "server" / "web" / "static" / "dashboard"
DOCUMENTS = dashboard_documents()


def test_the_page_sends_the_documents_queries_js_holds() -> None:
    used = "\n".join(p.read_text() for p in PAGE.glob("*.js") if p.name != "queries.js")
    exported = re.findall(r"export const (\w+) = `", (PAGE / "queries.js").read_text())
    assert len(exported) == len(DOCUMENTS) >= 15
    unused = [name for name in exported if not re.search(rf"\b{name}\b", used)]
    assert unused == [], f"queries.js holds documents the page never sends: {unused}"


@pytest.mark.parametrize("name", sorted(DOCUMENTS))
def test_each_document_is_valid_and_within_the_default_limits(name: str) -> None:
    settings = Settings()
    schema = build_schema((ROOT / "schema.graphql").read_text())
    document = parse(DOCUMENTS[name])
    assert validate(schema, document) == [], name
    [operation] = document.definitions
    assert isinstance(operation, OperationDefinitionNode) and operation.name is not None
    assert operation.name.value == name
    # every paged argument is a literal (a variable could ask for more): the cost is known
    assert not re.search(r"first: \$", DOCUMENTS[name]), name
    cost = document_cost(
        document,
        {},
        maximum=settings.max_query_cost,
        max_page_size=settings.max_page_size,
    )
    assert cost <= settings.max_query_cost, (name, cost)
    tokens = len(re.findall(r"[\w$]+|[^\s\w]", DOCUMENTS[name]))
    assert tokens < settings.max_tokens, (name, tokens)


def test_every_file_the_page_names_exists() -> None:
    """A comment that sends a reader to a test or a module names one that is there."""
    path = r"\b((?:tests|server|resolvers|docs)/[\w/.-]+\.(?:py|md))"
    for script in PAGE.glob("*.js"):
        for named in re.findall(path, script.read_text()):
            assert (ROOT / named).exists(), (script.name, named)


def _depth(text: str) -> int:
    depth = deepest = 0
    for ch in text:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        deepest = max(deepest, depth)
    return deepest


def test_no_document_nests_past_the_depth_limit() -> None:
    limit = Settings().max_query_depth
    for name, text in DOCUMENTS.items():
        # braces count the operation's own selection set too; variables hold none here
        assert _depth(text) - 1 <= limit, name


def test_the_page_holds_nothing_a_strict_content_security_policy_refuses() -> None:
    html = (PAGE / "index.html").read_text()
    assert "<style" not in html and " style=" not in html
    scripts = re.findall(r"<script\b[^>]*>(.*?)</script>", html, re.S)
    assert scripts and all(body.strip() == "" for body in scripts)
    assert all(re.search(r'src="/static/', tag) for tag in re.findall(r"<script\b[^>]*>", html))
    for script in PAGE.glob("*.js"):
        text = script.read_text()
        for forbidden in (
            ".style",
            "innerHTML",
            "outerHTML",
            "insertAdjacentHTML",
            "eval(",
            "new Function",
            'setAttribute("style"',
            "document.write",
        ):
            assert forbidden not in text, (script.name, forbidden)
