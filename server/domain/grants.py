"""Grant evaluation along a policy chain (R70, R71).

A grant is a privilege on a resource pattern. A resource is a dot-separated
name such as ``financial.AgentMemory.document``; each segment matches
``[A-Za-z0-9_-]+``. A pattern is a resource name whose last segment may be
``*``, which stands for one or more trailing segments: ``ns.AgentMemory.indexes.*``
matches ``ns.AgentMemory.indexes.x`` and ``ns.AgentMemory.indexes.x.y`` but not
``ns.AgentMemory.indexes``. A lone ``*`` is the last segment of a pattern with no
prefix and matches every resource. There is no other wildcard and no prefix
match: without ``*`` a pattern matches only itself.

R71 asks for a privilege on a whole subtree (``SELECT on <ns>.AgentMemory.indexes.*``),
so a request is a pattern too, and a grant allows it when it *covers* it: every
resource the request matches, the grant matches.

A call arrives through a chain of links: the client's principal, then — when a
tool runs inside an agent's execution — that execution (the agent's policies),
then the tool. Each link's access is the union of its policies' grants; the
chain's access is the intersection of its links' (R70): a request is allowed
only if every link allows it, and extending a chain never widens it. An empty
chain allows nothing: it is no caller at all, so it does not get intersection's
neutral "everything" (which makes its first link the one exception to "never
widens"). A link allows a request when one of its grants covers it; with this
pattern language a union of grants covers a pattern only when one of them does
(a finite set of names never fills a ``*``), so this is exact.

The agent's own use of its memory needs no grant (R70): that is the caller's
short-circuit, made before any chain is built; ``AGENT_SELF`` is the decision to
report for it. Grants never let anyone but the agent write its memory (R23);
UPDATE here is what the API's delete needs (R71), checked by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from server.errors import BadInputError

Privilege: TypeAlias = Literal["SELECT", "INSERT", "UPDATE", "DELETE"]
PRIVILEGES: tuple[Privilege, ...] = ("SELECT", "INSERT", "UPDATE", "DELETE")
LinkKind: TypeAlias = Literal["client", "execution", "tool"]

_SEGMENT = re.compile(r"[A-Za-z0-9_-]+")
_WILDCARD = "*"


class GrantSyntaxError(BadInputError, ValueError):
    """A privilege, pattern, resource or namespace is malformed; the message names it."""

    def __init__(self, message: str, *, text: str) -> None:
        super().__init__(message, text=text)
        self.text = text


def _name_segments(text: str, what: str) -> tuple[str, ...]:
    """Split a resource or namespace name; every segment must be a plain name."""
    segments = tuple(text.split("."))
    if not all(_SEGMENT.fullmatch(s) for s in segments):
        raise GrantSyntaxError(
            f"invalid {what} {text!r}: segments are dot-separated [A-Za-z0-9_-]+", text=text
        )
    return segments


@dataclass(frozen=True, slots=True)
class Pattern:
    """A resource pattern: exact segments, or a prefix followed by ``*`` (one or more more)."""

    segments: tuple[str, ...]
    wildcard: bool

    def __post_init__(self) -> None:
        bad = not (self.segments or self.wildcard) or not all(
            isinstance(s, str) and _SEGMENT.fullmatch(s) for s in self.segments
        )
        if bad:
            raise GrantSyntaxError(f"invalid pattern {self!s}", text=str(self))

    @classmethod
    def parse(cls, text: str) -> Pattern:
        *prefix, last = text.split(".")
        wildcard = last == _WILDCARD
        segments = tuple(prefix) if wildcard else (*prefix, last)
        if not all(_SEGMENT.fullmatch(s) for s in segments) or (not segments and not wildcard):
            raise GrantSyntaxError(
                f"invalid pattern {text!r}: dot-separated [A-Za-z0-9_-]+ segments, "
                "and only the last may be '*'",
                text=text,
            )
        return cls(segments, wildcard)

    @classmethod
    def exact(cls, resource: str) -> Pattern:
        """The pattern matching exactly ``resource`` (``*`` is not allowed in it)."""
        return cls(_name_segments(resource, "resource"), False)

    def matches(self, resource: str) -> bool:
        """Whether this pattern matches the resource name (malformed names raise)."""
        return self.covers(Pattern.exact(resource))

    def covers(self, other: Pattern) -> bool:
        """Whether every resource ``other`` matches is matched by this pattern."""
        if not self.wildcard:
            return not other.wildcard and other.segments == self.segments
        n = len(self.segments)
        # other's shortest match has len(other.segments) (+1 with a wildcard) segments;
        # this pattern needs more than n of them, starting with its prefix.
        shortest = len(other.segments) + (1 if other.wildcard else 0)
        return shortest > n and other.segments[:n] == self.segments

    def __str__(self) -> str:
        return ".".join((*self.segments, _WILDCARD) if self.wildcard else self.segments)


Requirement: TypeAlias = tuple[Privilege, Pattern]


def _pattern(required: Pattern | str) -> Pattern:
    return required if isinstance(required, Pattern) else Pattern.parse(required)


def _privilege(text: str) -> Privilege:
    if text not in PRIVILEGES:
        raise GrantSyntaxError(
            f"invalid privilege {text!r}: one of {', '.join(PRIVILEGES)}", text=text
        )
    return text


@dataclass(frozen=True, slots=True)
class Grant:
    """One privilege on one resource pattern."""

    privilege: Privilege
    pattern: Pattern

    @classmethod
    def parse(cls, privilege: str, pattern: str) -> Grant:
        """Parse e.g. ``("SELECT", "ns.AgentMemory.indexes.*")``; privileges are upper case."""
        return cls(_privilege(privilege), Pattern.parse(pattern))

    def allows(self, privilege: Privilege, required: Pattern) -> bool:
        return self.privilege == privilege and self.pattern.covers(required)

    def __str__(self) -> str:
        return f"{self.privilege} {self.pattern}"


@dataclass(frozen=True, slots=True)
class Policy:
    """A named set of grants."""

    name: str
    grants: frozenset[Grant]

    @classmethod
    def parse(cls, name: str, grants: Iterable[tuple[str, str]]) -> Policy:
        """Build a policy from ``(privilege, pattern)`` text pairs."""
        return cls(name, frozenset(Grant.parse(p, r) for p, r in grants))


@dataclass(frozen=True, slots=True)
class Link:
    """One step of the chain; its access is the union of its policies' grants."""

    kind: LinkKind
    name: str
    policies: tuple[Policy, ...]

    @property
    def label(self) -> str:
        """How a decision names this link, e.g. ``tool:export``."""
        return f"{self.kind}:{self.name}"

    def allows(self, privilege: Privilege, required: Pattern | str) -> bool:
        """Whether some grant of this privilege, in any policy, covers ``required``."""
        pattern = _pattern(required)
        return any(g.allows(privilege, pattern) for p in self.policies for g in p.grants)


@dataclass(frozen=True, slots=True)
class Decision:
    """The outcome of a check: ``denied_by`` is the label of the first link that denies,
    ``None`` when allowed or when the chain is empty; ``reason`` says why in words."""

    allowed: bool
    denied_by: str | None
    reason: str


AGENT_SELF = Decision(True, None, "the agent's own memory needs no grant (R70)")


@dataclass(frozen=True, slots=True)
class Chain:
    """The links a call passed through, in order: client, [execution, tool]."""

    links: tuple[Link, ...]

    def allows(self, privilege: Privilege, required: Pattern | str) -> bool:
        return self.explain(privilege, required).allowed

    def allows_all(self, requirements: Iterable[tuple[Privilege, Pattern | str]]) -> bool:
        return self.explain_all(requirements).allowed

    def explain(self, privilege: Privilege, required: Pattern | str) -> Decision:
        return self.explain_all(((privilege, required),))

    def explain_all(self, requirements: Iterable[tuple[Privilege, Pattern | str]]) -> Decision:
        """Check every requirement against every link; name the first link (in chain
        order) that lacks one, and the first requirement it lacks."""
        needed = [(privilege, _pattern(r)) for privilege, r in requirements]
        if not needed:
            raise ValueError("explain_all needs at least one requirement")
        wanted = ", ".join(f"{p} {r}" for p, r in needed)
        if not self.links:
            return Decision(False, None, f"an empty chain grants nothing; {wanted} needed")
        for link in self.links:
            for privilege, pattern in needed:
                if not link.allows(privilege, pattern):
                    return Decision(
                        False, link.label, f"{link.label} does not grant {privilege} {pattern}"
                    )
        labels = " -> ".join(link.label for link in self.links)
        return Decision(True, None, f"every link ({labels}) grants {wanted}")

    def extend(self, link: Link) -> Chain:
        """This chain with one more link at the end; never wider than before."""
        return Chain((*self.links, link))


def _memory_patterns(namespace: str) -> tuple[Pattern, Pattern]:
    ns = _name_segments(namespace, "namespace")
    return (
        Pattern((*ns, "AgentMemory", "indexes"), True),
        Pattern((*ns, "AgentMemory", "document"), False),
    )


def memory_read_requirements(namespace: str) -> tuple[Requirement, ...]:
    """R71: listing and reading records needs SELECT on ``<ns>.AgentMemory.indexes.*``
    and on ``<ns>.AgentMemory.document``."""
    indexes, document = _memory_patterns(namespace)
    return (("SELECT", indexes), ("SELECT", document))


def memory_delete_requirements(namespace: str) -> tuple[Requirement, ...]:
    """R71: deleting needs SELECT and UPDATE — we read that as both privileges on both
    resources the read needs, since a delete first lists and reads what it removes."""
    indexes, document = _memory_patterns(namespace)
    return (*memory_read_requirements(namespace), ("UPDATE", indexes), ("UPDATE", document))


def agent_requirements(namespace: str, privilege: Privilege = "SELECT") -> tuple[Requirement, ...]:
    """Agents and their versions are the resource ``<ns>.Agent``: SELECT reads them,
    INSERT creates agents and publishes versions."""
    ns = _name_segments(namespace, "namespace")
    return ((privilege, Pattern((*ns, "Agent"), False)),)


def session_requirements(
    namespace: str, privilege: Privilege = "SELECT"
) -> tuple[Requirement, ...]:
    """What agents did is the resource ``<ns>.Session``: sessions, turns, executions,
    model calls, transcripts and kept history. SELECT reads them; INSERT opens sessions."""
    ns = _name_segments(namespace, "namespace")
    return ((privilege, Pattern((*ns, "Session"), False)),)
