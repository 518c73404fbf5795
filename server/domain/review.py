"""The turn-end memory review's rules (R8, R50): when a review is due, what the model
is told, and which decisions a review may apply. Plain Python over plain values;
:mod:`server.services.review` applies them to the database.

- When (R8): ``extraction.every`` ``"turn"`` makes a review due at every turn that
  ends; ``{"messages": N}`` only once at least N messages (user messages and agent
  replies) were added since the last applied review (:func:`due`).
- What the model reads: the default instructions for what to keep, written from the
  agent's kinds, labels and write scopes, or ``extraction.prompt`` in their place,
  then the fixed part that explains the decisions and their format
  (:func:`instructions`); and the conversation since the last review, one block per
  event under the header history results use (``turn 3, user``).
- Decisions (R50): ``ADD``, ``REPLACE <id>``, ``DELETE <id>`` or ``SKIP``, one per
  candidate (:func:`check_decision`). A candidate restates a record it may change
  when it says the same in the same or lightly edited words (:func:`restates`): an
  ADD of it is applied as SKIP, so restated facts do not pile up.
"""

from __future__ import annotations

import difflib
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from server.domain.config import Label, MemoryConfig
from server.domain.history import Role, header

Action = Literal["ADD", "REPLACE", "DELETE", "SKIP"]
ACTIONS: tuple[Action, ...] = ("ADD", "REPLACE", "DELETE", "SKIP")

# When a candidate restates a record it may change (:func:`restates`): its cosine with
# the record (summary and content, as records are embedded) reaches
# RESTATEMENT_MIN_COSINE, or reaches EDITED_MIN_COSINE while the two texts share at
# least EDITED_MIN_WORDS of their words in order. Chosen from `bench review`'s
# measurement on LoCoMo's session events: docs/review.md, "The restatement threshold".
RESTATEMENT_MIN_COSINE = 0.92
EDITED_MIN_COSINE = 0.80
EDITED_MIN_WORDS = 0.75

# How many similar records each candidate is compared with, by default and at most.
DEFAULT_SIMILAR = 5
MAX_SIMILAR = 20
# The most candidates one call takes.
MAX_CANDIDATES = 100

KIND_DESCRIPTIONS: Mapping[str, str] = {
    "guidance": "how to work: a preference, an instruction or a rule the user gave",
    "fact": "something true about the user, their accounts or their world",
    "event": "something that happened, with its date when the conversation gives one",
    "reference": "where to find something: a document, a link, an identifier",
}


@dataclass(frozen=True, slots=True)
class Due:
    due: bool
    reason: str


def due(every_messages: int | None, messages: int) -> Due:
    """Whether a review is due after ``messages`` messages since the last one (R8)."""
    if every_messages is None:
        return Due(True, "extraction.every is turn: every turn that ends is reviewed")
    if messages >= every_messages:
        return Due(True, f"{messages} of {every_messages} messages since the last review")
    return Due(False, f"{messages} of {every_messages} messages since the last review")


@dataclass(frozen=True, slots=True)
class Entry:
    """One event of the conversation a review reads."""

    turn: int
    role: Role
    tool_name: str | None
    text: str

    @property
    def header(self) -> str:
        return header(self.turn, self.role, self.tool_name)


def count_messages(entries: Iterable[Entry]) -> int:
    """Messages are what the user said and what the agent replied; tool results are not."""
    return sum(1 for e in entries if e.role != "tool")


def render(entries: Sequence[Entry]) -> str:
    """The conversation as the model reads it: each event under its header line."""
    return "\n\n".join(f"{e.header}\n{e.text}" for e in entries)


def default_instructions(memory: MemoryConfig) -> str:
    """What to keep: written from the agent's kinds, labels and write scopes (R3, R4, R20)."""
    kinds = "\n".join(
        f"- {kind}: {KIND_DESCRIPTIONS[kind]}" if kind in KIND_DESCRIPTIONS else f"- {kind}"
        for kind in memory.kinds
    )
    lines = [
        "Review the conversation below for what is worth remembering in later turns.",
        "Keep what stays true and useful beyond this conversation: facts about the user "
        "and their world, preferences and instructions, decisions, commitments, and "
        "events with their dates. Leave out greetings, small talk, what the agent only "
        "guessed, and what is already settled by a later message.",
        "Write one candidate per fact. Its summary is one line that is enough to act on "
        "without reading further; its content holds the evidence: who said it, in which "
        "turn, and the specifics (names, numbers, dates) in the conversation's words.",
        f"Each candidate has a kind, one of:\n{kinds}",
    ]
    if memory.labels:
        lines.append("Label a candidate with the values it is about:\n" + _labels(memory.labels))
    if "agent" in memory.write_scopes:
        session = "session" in memory.write_scopes
        lines.append(
            "A candidate's scope is AGENT when it informs every conversation of this agent"
            + (
                ", and SESSION (the default) when it is about this conversation's subject"
                if session
                else ""
            )
            + "."
        )
    else:
        lines.append("Candidates are kept for this conversation only (session scope).")
    return "\n\n".join(lines)


def _labels(labels: Mapping[str, Label]) -> str:
    ordered = sorted(labels.items(), key=lambda item: item[1].number)
    return "\n".join(f"- {name}: {label.description}" for name, label in ordered)


DECISIONS_PART = """\
Answer in two steps.

1. Candidates: reply with a JSON object {"candidates": [...]}, each candidate \
{"summary": "...", "content": "...", "kind": "...", \
"labels": [{"name": "...", "value": "..."}], "scope": "SESSION"}; content, labels and \
scope may be left out. An empty list is a fine answer.

2. Decisions: you are then shown, for each candidate, the memories already kept that \
are most like it, with their ids. Reply with {"decisions": [...]}, one per candidate in \
order, each {"candidate": <its number, from 0>, "action": ..., "id": ...}:
- "ADD": a new fact; keep it.
- "REPLACE" with the id of a memory the candidate corrects or brings up to date; that \
memory is kept as superseded by the candidate.
- "DELETE" with the id of a memory the conversation shows is wrong or no longer true.
- "SKIP": nothing new; the memory that says it already is enough.
A candidate that restates a kept memory is skipped even when you add it."""


def instructions(memory: MemoryConfig) -> str:
    """The effective instructions: ``extraction.prompt`` or the defaults, then the
    decisions part (R8)."""
    keep = memory.extraction.prompt or default_instructions(memory)
    return f"{keep}\n\n{DECISIONS_PART}"


def check_decision(index: int, action: Action, record_id: uuid.UUID | None) -> str | None:
    """What is wrong with decision ``index`` on its own, or ``None`` (R50)."""
    if action in ("REPLACE", "DELETE") and record_id is None:
        return f"decision {index}: {action} names the record it {_verb(action)} in recordId"
    if action in ("ADD", "SKIP") and record_id is not None:
        return f"decision {index}: {action} names no record; leave recordId out"
    return None


def _verb(action: Action) -> str:
    return "replaces" if action == "REPLACE" else "deletes"


def restates(similarity: float, candidate: str, record: str) -> bool:
    """Whether a candidate restates a record it may change (R50): the two mean the same
    (cosine ``similarity`` at least :data:`RESTATEMENT_MIN_COSINE`), or say it in lightly
    edited words (case, punctuation, a word or two: at least :data:`EDITED_MIN_WORDS` of
    the words shared in order, and a cosine of at least :data:`EDITED_MIN_COSINE`).
    A candidate that changes a number never restates: it corrects, for REPLACE."""
    if similarity < EDITED_MIN_COSINE:
        return False
    a, b = _words(candidate), _words(record)
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    changed = [
        w
        for op, i1, i2, j1, j2 in matcher.get_opcodes()
        if op != "equal"
        for w in (*a[i1:i2], *b[j1:j2])
    ]
    if any(_NUMBER.search(w) for w in changed):
        return False
    return similarity >= RESTATEMENT_MIN_COSINE or matcher.ratio() >= EDITED_MIN_WORDS


_WORD = re.compile(r"\w+")
_NUMBER = re.compile(r"\d")


def _words(text: str) -> list[str]:
    return _WORD.findall(text.casefold())
