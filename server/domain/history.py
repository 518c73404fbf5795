"""Session history rules (R60-R64): what a turn keeps and as which text, the header
line a result opens with, how a query's words weigh, and who may search which parts.

Plain Python over plain values; :mod:`server.services.history_kept` and
:mod:`server.services.history_ranking` apply the rules to the database, and the
tests check the API against them.

- R60 what is kept (:func:`kept_role`): with ``messages``, the incoming user
  message and each agent reply (its text and the tool calls it made); with
  ``messages_and_tools``, also the results and errors of the agent's tools.
  Skill loads and the agent's own retrievals (``RETRIEVAL_TOOLS``, and
  ``retrieval`` events) are never kept.
- R62 parts: a long kept event is cut into parts that fit the embedding model
  (:mod:`server.domain.history_parts`).
- R62 the header line (:func:`header`): ``turn 12, user``, ``turn 12, agent``
  or ``turn 12, tool <name>``.
- R62 keywords: a part's keyword score is its BM25 (:mod:`server.domain.bm25`),
  the document frequencies counted over the session's parts. The keyword half of
  a search finds its candidates by the query's words except those that more than
  ``PRESET.seeking.common_share`` of the session's parts (and more than
  ``common_min``) contain, such as a speaker's name or a word every reply uses:
  they match nearly every part, so they only drown the words that tell parts
  apart (their small idf still counts in every score). The meaning half reads the
  whole query.
- R62 ranking in context: the candidates those two halves find are not ranked
  alone. Every part of their turns is ranked by
  :func:`server.domain.ranking.rank_in_context` under ``CONTEXT``: a blend of its
  cosine and its keyword weight (its BM25 score, common words included), each read
  with the parts before and after it and
  with its turn, a gain when it was kept in a period the query names
  (:func:`server.domain.dates.query_periods`), plus recency as in memory search;
  newer wins ties.
- R64 who sees a part (:func:`visible_part`): the same agent and session, a
  turn numbered before the reader's (a replay of turn N carries N), and a
  preview part only for a preview reader. An agent without sessions has no
  history.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from server.domain.config import DEFAULT_MIN_SCORE
from server.domain.ranking_presets import (
    HISTORY_CONTEXT_PRESET,
    HISTORY_FUSION_PRESET,
    ContextPreset,
    FusionPreset,
)

Role = Literal["user", "agent", "tool"]
HistoryIndex = Literal["messages", "messages_and_tools"]

# Ranking (R62): the history fusion preset (the memory search's, with half its candidate
# pool, and a session's common words finding no keyword candidates), and the memory
# search's default least cosine a part found by meaning alone needs (history has no
# search settings of its own).
PRESET: FusionPreset = HISTORY_FUSION_PRESET
MIN_SCORE = DEFAULT_MIN_SCORE

# Ranking in context (R62): the named preset of the shares a part's score takes from its
# cosine, its keyword weight, the part before it and its turn (see server.domain.ranking).
CONTEXT: ContextPreset = HISTORY_CONTEXT_PRESET

# Transcript event types: the runtime's (recordEvents) and the server's own.
USER_MESSAGE = "message.user"
AGENT_MESSAGE = "message.agent"
TOOL_RESULT = "tool.result"
TOOL_ERROR = "tool.error"
SKILL_LOAD = "skill.load"
RETRIEVAL = "retrieval"

# The agent's own retrievals: native tools whose output puts memory or history
# before the model. Their results and errors are never kept (R60).
RETRIEVAL_TOOLS = frozenset({"search_memory", "recall", "read_memory", "search_history"})


def header(turn_number: int, role: Role, tool_name: str | None = None) -> str:
    """The line a result opens with: who the event is from (R62)."""
    if role == "tool":
        return f"turn {turn_number}, tool {tool_name or 'unknown'}"
    return f"turn {turn_number}, {role}"


def kept_role(event_type: str, tool_name: str | None, *, index: HistoryIndex | None) -> Role | None:
    """The role an event is kept under, or ``None`` when it is never kept (R60).

    ``index`` ``None`` is history off: nothing is kept.
    """
    if index is None:
        return None
    if event_type == USER_MESSAGE:
        return "user"
    if event_type == AGENT_MESSAGE:
        return "agent"
    if event_type in (TOOL_RESULT, TOOL_ERROR):
        if index != "messages_and_tools" or tool_name in RETRIEVAL_TOOLS:
            return None
        return "tool"
    return None  # skill loads, retrievals, memory.pinned, usage, ...


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call of an agent reply."""

    id: str
    name: str
    arguments: Any

    def to_json(self) -> dict[str, Any]:
        return {"id": self.id, "name": self.name, "arguments": self.arguments}

    @classmethod
    def from_json(cls, value: Mapping[str, Any]) -> ToolCall:
        return cls(id=str(value["id"]), name=str(value["name"]), arguments=value.get("arguments"))


def compact_json(value: Any) -> str:
    """JSON on one line, keys sorted, as kept texts show arguments and outputs."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(", ", ": "))


def agent_message_text(text: str | None, calls: Sequence[ToolCall]) -> str:
    """An agent reply as kept: its text, then one line per tool call it made."""
    lines = [text] if text else []
    lines.extend(f"calls {c.name}({compact_json(c.arguments or {})})" for c in calls)
    return "\n".join(lines)


def native_result_text(output: Mapping[str, Any] | None, error: str | None) -> str:
    """A native tool's result as kept: its error, or one line per record it names."""
    if error is not None:
        return error
    lines = []
    for key in ("memories", "sources"):
        for item in (output or {}).get(key, []):
            kind = item.get("kind", "memory")
            lines.append(
                f"{str(item.get('status', '')).lower()} {kind} {item.get('id')}: "
                f"{item.get('summary', '')}"
            )
    return "\n".join(lines) if lines else compact_json(output or {})


SEARCH_FIRST = (
    "Earlier turns of this session are searchable with search_history: search them "
    "before guessing at, or asking again for, something an earlier turn established."
)
"""What a turn's instructions say when it has earlier history to search (the spec's last
paragraph): once, after the pinned lines."""


@dataclass(frozen=True, slots=True)
class HistoryReader:
    """A turn searching its session's history (R64)."""

    agent_id: uuid.UUID
    session_id: uuid.UUID | None
    turn_number: int
    preview: bool


@dataclass(frozen=True, slots=True)
class PartFacts:
    """What the rule needs to know of a kept part."""

    agent_id: uuid.UUID
    session_id: uuid.UUID
    turn_number: int
    preview: bool


def visible_part(reader: HistoryReader, part: PartFacts) -> bool:
    """The reference filter of R64; the SQL condition must agree with it."""
    return (
        reader.session_id is not None
        and part.agent_id == reader.agent_id
        and part.session_id == reader.session_id
        and part.turn_number < reader.turn_number
        and (reader.preview or not part.preview)
    )
