"""Grant evaluation along a policy chain (R70, R71): tables, golden cases, properties."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from server.domain.grants import (
    AGENT_SELF,
    PRIVILEGES,
    Chain,
    Decision,
    Grant,
    GrantSyntaxError,
    Link,
    LinkKind,
    Pattern,
    Policy,
    Privilege,
    Requirement,
    memory_delete_requirements,
    memory_read_requirements,
)
from server.errors import BadInputError

# -- patterns ----------------------------------------------------------------------------

VALID_PATTERNS = [
    ("financial.AgentMemory.document", ("financial", "AgentMemory", "document"), False),
    ("financial.AgentMemory.indexes.*", ("financial", "AgentMemory", "indexes"), True),
    ("financial.*", ("financial",), True),
    ("financial", ("financial",), False),
    ("*", (), True),
    ("risk-eu_2.AgentMemory.document", ("risk-eu_2", "AgentMemory", "document"), False),
    ("a.b.c.d.e.f", ("a", "b", "c", "d", "e", "f"), False),
]

INVALID_PATTERNS = [
    "",
    ".",
    "financial.",
    ".financial",
    "financial..AgentMemory",
    "financial.Agent*",
    "financial.*Memory",
    "*.AgentMemory",
    "financial.*.document",
    "financial.*.*",
    "financial.**",
    "financial .AgentMemory",
    "financial/AgentMemory",
    "finanzbücher.AgentMemory",
    "financial.AgentMemory.document\n",
    "**",
]


@pytest.mark.parametrize(("text", "segments", "wildcard"), VALID_PATTERNS)
def test_parse_valid_pattern(text: str, segments: tuple[str, ...], wildcard: bool) -> None:
    pattern = Pattern.parse(text)
    assert pattern == Pattern(segments, wildcard)
    assert str(pattern) == text


@pytest.mark.parametrize("text", INVALID_PATTERNS)
def test_parse_invalid_pattern(text: str) -> None:
    with pytest.raises(GrantSyntaxError) as caught:
        Pattern.parse(text)
    assert repr(text) in str(caught.value)
    assert caught.value.text == text


def test_syntax_error_is_a_bad_input_value_error() -> None:
    with pytest.raises(GrantSyntaxError) as caught:
        Pattern.parse("financial.Agent*")
    assert isinstance(caught.value, ValueError)
    assert isinstance(caught.value, BadInputError)
    assert caught.value.extensions() == {"code": "BAD_INPUT", "text": "financial.Agent*"}


@pytest.mark.parametrize(
    ("segments", "wildcard"),
    [((), False), (("",), False), (("Agent*",), False), (("*",), False), (("a.b",), True)],
)
def test_pattern_constructor_validates(segments: tuple[str, ...], wildcard: bool) -> None:
    with pytest.raises(GrantSyntaxError):
        Pattern(segments, wildcard)


@pytest.mark.parametrize("privilege", PRIVILEGES)
def test_parse_grant(privilege: Privilege) -> None:
    grant = Grant.parse(privilege, "financial.*")
    assert grant == Grant(privilege, Pattern(("financial",), True))
    assert str(grant) == f"{privilege} financial.*"


@pytest.mark.parametrize("privilege", ["select", "ALL", "", "USAGE", "SELECT "])
def test_parse_grant_rejects_unknown_privilege(privilege: str) -> None:
    with pytest.raises(GrantSyntaxError, match="invalid privilege"):
        Grant.parse(privilege, "financial.*")


def test_parse_grant_rejects_bad_pattern() -> None:
    with pytest.raises(GrantSyntaxError, match=re.escape("'financial.Agent*'")):
        Grant.parse("SELECT", "financial.Agent*")


# -- matching ----------------------------------------------------------------------------

MATCHES = [
    ("financial.AgentMemory.indexes.*", "financial.AgentMemory.indexes.x", True),
    ("financial.AgentMemory.indexes.*", "financial.AgentMemory.indexes.x.y", True),
    ("financial.AgentMemory.indexes.*", "financial.AgentMemory.indexes", False),
    ("financial.AgentMemory.indexes.*", "financial.AgentMemory", False),
    ("financial.AgentMemory.indexes.*", "financial.AgentMemory.document", False),
    ("financial.AgentMemory.indexes.*", "financial.AgentMemory.indexesX.x", False),
    ("financial.AgentMemory.document", "financial.AgentMemory.document", True),
    ("financial.AgentMemory.document", "financial.AgentMemory.document.x", False),
    ("financial.AgentMemory.document", "financial.AgentMemory", False),
    ("financial.AgentMemory", "financial.AgentMemory.document", False),
    ("financial.AgentMemory.document", "Financial.AgentMemory.document", False),
    ("financial.*", "financial.AgentMemory.document", True),
    ("financial.*", "financial", False),
    ("financial.*", "financial2.AgentMemory", False),
    ("financial.*", "marketing.AgentMemory.document", False),
    ("*", "financial", True),
    ("*", "marketing.AgentMemory.indexes.by_customer", True),
]


@pytest.mark.parametrize(("pattern", "resource", "expected"), MATCHES)
def test_matches(pattern: str, resource: str, expected: bool) -> None:
    assert Pattern.parse(pattern).matches(resource) is expected


@pytest.mark.parametrize("resource", ["", "financial.*", "financial..x", "financial.Agent*"])
def test_matches_rejects_malformed_resource(resource: str) -> None:
    with pytest.raises(GrantSyntaxError, match="invalid resource"):
        Pattern.parse("*").matches(resource)


# -- covers ------------------------------------------------------------------------------

COVERS = [
    ("financial.*", "financial.AgentMemory.indexes.*", True),
    ("financial.*", "financial.AgentMemory.document", True),
    ("financial.*", "financial.*", True),
    ("financial.*", "financial", False),
    ("financial.*", "*", False),
    ("financial.AgentMemory.*", "financial.AgentMemory.indexes.*", True),
    ("financial.AgentMemory.indexes.*", "financial.AgentMemory.indexes.*", True),
    ("financial.AgentMemory.indexes.*", "financial.AgentMemory.indexes.x.*", True),
    ("financial.AgentMemory.indexes.*", "financial.AgentMemory.indexes.x", True),
    ("financial.AgentMemory.indexes.*", "financial.AgentMemory.indexes", False),
    ("financial.AgentMemory.indexes.*", "financial.AgentMemory.*", False),
    ("financial.AgentMemory.indexes.x", "financial.AgentMemory.indexes.*", False),
    ("financial.AgentMemory.indexes.x", "financial.AgentMemory.indexes.x", True),
    ("financial.AgentMemory.document", "financial.AgentMemory.document", True),
    ("financial.AgentMemory.document", "financial.AgentMemory.indexes.x", False),
    ("financial.AgentMemory", "financial.AgentMemory.document", False),
    ("financial.AgentMemory", "financial.AgentMemory.*", False),
    ("marketing.*", "financial.AgentMemory.document", False),
    ("*", "*", True),
    ("*", "financial.AgentMemory.indexes.*", True),
    ("*", "financial", True),
]


@pytest.mark.parametrize(("grant", "required", "expected"), COVERS)
def test_covers(grant: str, required: str, expected: bool) -> None:
    assert Pattern.parse(grant).covers(Pattern.parse(required)) is expected


# -- links and chains --------------------------------------------------------------------


def _link(kind: LinkKind, name: str, *policies: tuple[str, list[tuple[str, str]]]) -> Link:
    return Link(kind, name, tuple(Policy.parse(n, grants) for n, grants in policies))


READ_ALL = [
    ("SELECT", "financial.AgentMemory.indexes.*"),
    ("SELECT", "financial.AgentMemory.document"),
]


def test_link_is_the_union_of_its_policies() -> None:
    link = _link(
        "client",
        "dashboard",
        ("indexes", [READ_ALL[0]]),
        ("document", [READ_ALL[1]]),
    )
    assert link.allows("SELECT", "financial.AgentMemory.indexes.*")
    assert link.allows("SELECT", Pattern.parse("financial.AgentMemory.document"))
    assert not link.allows("UPDATE", "financial.AgentMemory.document")
    assert link.label == "client:dashboard"


def test_link_without_policies_denies() -> None:
    assert not Link("execution", "exec-1", ()).allows("SELECT", "financial.AgentMemory.document")


def test_chain_is_the_intersection_of_its_links() -> None:
    client = _link("client", "dashboard", ("broad", [("SELECT", "financial.*")]))
    tool = _link("tool", "export", ("narrow", [READ_ALL[1]]))
    chain = Chain((client,)).extend(tool)
    assert chain.links == (client, tool)
    assert chain.allows("SELECT", "financial.AgentMemory.document")
    assert not chain.allows("SELECT", "financial.AgentMemory.indexes.*")
    assert Chain((client,)).allows("SELECT", "financial.AgentMemory.indexes.*")


def test_explain_names_the_first_denying_link() -> None:
    client = _link("client", "dashboard", ("narrow", [READ_ALL[1]]))
    execution = Link("execution", "exec-7", ())
    decision = Chain((client, execution)).explain("SELECT", "financial.AgentMemory.indexes.*")
    assert decision == Decision(
        False,
        "client:dashboard",
        "client:dashboard does not grant SELECT financial.AgentMemory.indexes.*",
    )


def test_explain_allowed() -> None:
    client = _link("client", "dashboard", ("broad", [("SELECT", "financial.*")]))
    tool = _link("tool", "export", ("all", READ_ALL))
    decision = Chain((client, tool)).explain_all(memory_read_requirements("financial"))
    assert decision.allowed
    assert decision.denied_by is None
    assert "client:dashboard -> tool:export" in decision.reason


def test_empty_chain_allows_nothing() -> None:
    chain = Chain(())
    assert not chain.allows("SELECT", "financial.AgentMemory.document")
    assert not chain.allows_all(memory_read_requirements("financial"))
    decision = chain.explain("SELECT", "*")
    assert decision.allowed is False
    assert decision.denied_by is None
    assert "empty chain" in decision.reason


def test_allows_all_needs_a_requirement() -> None:
    chain = Chain((_link("client", "root", ("all", [("SELECT", "*")])),))
    with pytest.raises(ValueError, match="at least one requirement"):
        chain.allows_all(())


def test_agent_self_decision() -> None:
    assert AGENT_SELF.allowed
    assert AGENT_SELF.denied_by is None
    assert "R70" in AGENT_SELF.reason


def test_memory_requirements() -> None:
    indexes = Pattern(("financial", "AgentMemory", "indexes"), True)
    document = Pattern(("financial", "AgentMemory", "document"), False)
    assert memory_read_requirements("financial") == (("SELECT", indexes), ("SELECT", document))
    assert memory_delete_requirements("financial") == (
        ("SELECT", indexes),
        ("SELECT", document),
        ("UPDATE", indexes),
        ("UPDATE", document),
    )


@pytest.mark.parametrize("namespace", ["", "fin*", "financial.*", "*", "a..b", "fin ance"])
def test_memory_requirements_reject_bad_namespace(namespace: str) -> None:
    with pytest.raises(GrantSyntaxError, match="invalid namespace"):
        memory_read_requirements(namespace)
    with pytest.raises(GrantSyntaxError, match="invalid namespace"):
        memory_delete_requirements(namespace)


# -- golden cases ------------------------------------------------------------------------

CASES_FILE = Path(__file__).with_name("grant_chain_cases.txt")
LINK_KINDS: tuple[LinkKind, ...] = ("client", "execution", "tool")


@dataclass(frozen=True)
class GoldenCase:
    title: str
    chain: Chain
    requirements: tuple[Requirement, ...]
    allowed: bool
    denied_by: str | None
    why: str


def _parse_policy(line: str) -> Policy:
    head, _, body = line.partition(":")
    kind, name = head.split()
    assert kind == "policy", line
    grants = [item.split() for item in body.split(",") if item.strip()]
    return Policy.parse(name, [(privilege, pattern) for privilege, pattern in grants])


def _parse_request(text: str) -> tuple[Requirement, ...]:
    verb, argument = text.split()
    if verb == "read":
        return memory_read_requirements(argument)
    if verb == "delete":
        return memory_delete_requirements(argument)
    grant = Grant.parse(verb, argument)
    return ((grant.privilege, grant.pattern),)


def _parse_block(block: str) -> GoldenCase:
    fields: dict[str, str] = {}
    links: list[Link] = []
    for line in filter(str.strip, block.splitlines()):
        if line.startswith(" "):
            link = links[-1]
            links[-1] = Link(link.kind, link.name, (*link.policies, _parse_policy(line.strip())))
        elif line.split()[0] in LINK_KINDS:
            kind, name = line.split()
            links.append(Link(next(k for k in LINK_KINDS if k == kind), name, ()))
        else:
            key, _, value = line.partition(":")
            assert key in {"case", "request", "expect", "why"} and key not in fields, line
            fields[key] = value.strip()
    assert fields.keys() == {"case", "request", "expect", "why"}, block
    verdict, _, blamed = fields["expect"].partition(" at ")
    assert verdict in {"allow", "deny"} and not (verdict == "allow" and blamed), block
    return GoldenCase(
        title=fields["case"],
        chain=Chain(tuple(links)),
        requirements=_parse_request(fields["request"]),
        allowed=verdict == "allow",
        denied_by=blamed or None,
        why=fields["why"],
    )


def load_cases(path: Path = CASES_FILE) -> list[GoldenCase]:
    text = "\n".join(line for line in path.read_text().splitlines() if not line.startswith("#"))
    return [_parse_block(block) for block in text.split("\n\n") if block.strip()]


GOLDEN = load_cases()


def test_golden_file_has_enough_distinct_cases() -> None:
    assert len(GOLDEN) >= 15
    assert len({case.title for case in GOLDEN}) == len(GOLDEN)
    assert all(case.why for case in GOLDEN)
    assert {case.allowed for case in GOLDEN} == {True, False}


@pytest.mark.parametrize("case", GOLDEN, ids=[case.title for case in GOLDEN])
def test_golden_case(case: GoldenCase) -> None:
    decision = case.chain.explain_all(case.requirements)
    assert (decision.allowed, decision.denied_by) == (case.allowed, case.denied_by), case.why
    assert case.chain.allows_all(case.requirements) is case.allowed
    every_link = all(link.allows(p, r) for link in case.chain.links for p, r in case.requirements)
    assert case.allowed is (bool(case.chain.links) and every_link)


# -- properties --------------------------------------------------------------------------

# A small alphabet makes matches and covers frequent enough to exercise both outcomes.
SEGMENTS = st.sampled_from(["a", "b", "c"])
FRESH = "zz"  # never drawn from SEGMENTS

privileges = st.sampled_from(PRIVILEGES)
resources = st.lists(SEGMENTS, min_size=1, max_size=5).map(".".join)


@st.composite
def patterns(draw: st.DrawFn) -> Pattern:
    wildcard = draw(st.booleans())
    segments = draw(st.lists(SEGMENTS, min_size=0 if wildcard else 1, max_size=4))
    return Pattern(tuple(segments), wildcard)


@st.composite
def generalisations(draw: st.DrawFn, pattern: Pattern) -> Pattern:
    """A pattern covering ``pattern`` by construction: itself, or a shorter prefix + ``*``."""
    longest = len(pattern.segments) - (0 if pattern.wildcard else 1)
    keep = draw(st.integers(min_value=-1, max_value=longest))
    return pattern if keep < 0 else Pattern(pattern.segments[:keep], True)


@st.composite
def matched_resources(draw: st.DrawFn, pattern: Pattern) -> str:
    """A resource ``pattern`` matches by construction."""
    tail = draw(st.lists(SEGMENTS, min_size=1, max_size=3)) if pattern.wildcard else []
    return ".".join((*pattern.segments, *tail))


grants = st.builds(Grant, privileges, patterns())
policies = st.builds(Policy, st.just("p"), st.frozensets(grants, max_size=4))
links = st.builds(
    Link, st.sampled_from(LINK_KINDS), st.just("l"), st.lists(policies, max_size=3).map(tuple)
)
chains = st.builds(Chain, st.lists(links, max_size=4).map(tuple))


@given(patterns())
def test_pattern_round_trips_through_text(pattern: Pattern) -> None:
    assert Pattern.parse(str(pattern)) == pattern


@given(chains, privileges, patterns() | resources)
def test_chain_access_is_within_each_link(
    chain: Chain, privilege: Privilege, required: Pattern | str
) -> None:
    allowed = chain.allows(privilege, required)
    for link in chain.links:
        assert not allowed or link.allows(privilege, required)
    every_link = all(link.allows(privilege, required) for link in chain.links)
    assert allowed is (bool(chain.links) and every_link)


@given(chains.filter(lambda chain: bool(chain.links)), links, privileges, patterns())
def test_extending_a_chain_never_widens(
    chain: Chain, link: Link, privilege: Privilege, required: Pattern
) -> None:
    # From a non-empty chain: the empty chain allows nothing, which is narrower than any link.
    if chain.extend(link).allows(privilege, required):
        assert chain.allows(privilege, required)


@given(patterns())
def test_covers_is_reflexive(pattern: Pattern) -> None:
    assert pattern.covers(pattern)


@given(patterns(), patterns(), patterns())
def test_covers_is_transitive(p: Pattern, q: Pattern, r: Pattern) -> None:
    if p.covers(q) and q.covers(r):
        assert p.covers(r)


@given(st.data(), patterns())
def test_covers_is_transitive_along_generalisations(data: st.DataObject, r: Pattern) -> None:
    q = data.draw(generalisations(r))
    p = data.draw(generalisations(q))
    assert q.covers(r)
    assert p.covers(q)
    assert p.covers(r)


@given(patterns(), patterns(), resources)
def test_covers_implies_matches_on_random_resources(p: Pattern, q: Pattern, resource: str) -> None:
    if p.covers(q) and q.matches(resource):
        assert p.matches(resource)


@given(st.data(), patterns(), patterns())
def test_covers_is_exact(data: st.DataObject, p: Pattern, q: Pattern) -> None:
    """Covering q means matching every resource q matches; failing to cover has a witness."""
    if p.covers(q):
        assert p.matches(data.draw(matched_resources(q)))
    else:
        # q's prefix plus a segment no pattern names: q matches it, p cannot.
        witness = ".".join((*q.segments, FRESH) if q.wildcard else q.segments)
        assert q.matches(witness)
        assert not p.matches(witness)
