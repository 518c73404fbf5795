"""Who sees which memory record: the one visibility gate (R10-R14, R21).

This module is the reference: plain Python over plain values, and what code
holding a record's row asks (:func:`effective_status`, :func:`version_in_force`).
The storage layer (``server.storage.gate``) turns the same rules into one SQL
condition for queries, and the tests check that the API returns exactly what
:func:`visible_records` allows.

A reader is either an agent acting in a turn (``Reader.for_turn``) or an API
reader such as a dashboard (``Reader.for_api``).

- R10 a reader sees only records of its own agent.
- R11 SESSION records need ``session`` in ``scope.read`` and the record's own
  session; AGENT records need ``agent`` in ``scope.read``.
- R12 records written by an open turn are visible to that turn only; a status
  change staged by an open turn is seen by that turn only (others see the
  prior status until commit).
- R13 live turns never see preview records; preview turns see everything but
  the records that a preview record names in ``replaces``. The naming record
  hides what it names from every preview reader for whom it exists (R10, R12:
  committed, or written by the reader's own turn), whatever its scope or
  session, as a live replacement supersedes its target for every reader.
- R14 recall and search see ACTIVE records only; ``read_memory`` any status.
- R21 a record can be replaced or deleted only within the scopes the agent writes.

API readers see every committed record of the agent, preview or live, in any
status: history stays readable (R25, R71); grants decide whether they may ask.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Protocol


class Purpose(Enum):
    SEARCH = "search"  # recall, search_memory, pinned list: ACTIVE only (R14)
    READ = "read"  # read_memory: any status
    CHANGE = "change"  # replace / delete target: written scopes only (R21)


SCOPE_OF = {"SESSION": "session", "AGENT": "agent"}


@dataclass(frozen=True, slots=True)
class Reader:
    agent_id: uuid.UUID
    session_id: uuid.UUID | None = None
    turn_id: uuid.UUID | None = None
    preview: bool = False
    read_scopes: frozenset[str] = frozenset()
    write_scopes: frozenset[str] = frozenset()
    api: bool = False

    @classmethod
    def for_turn(
        cls,
        *,
        agent_id: uuid.UUID,
        session_id: uuid.UUID | None,
        turn_id: uuid.UUID,
        preview: bool,
        read_scopes: Iterable[str],
        write_scopes: Iterable[str],
    ) -> Reader:
        return cls(
            agent_id=agent_id,
            session_id=session_id,
            turn_id=turn_id,
            preview=preview,
            read_scopes=frozenset(read_scopes),
            write_scopes=frozenset(write_scopes),
        )

    @classmethod
    def for_api(cls, *, agent_id: uuid.UUID) -> Reader:
        return cls(agent_id=agent_id, api=True)


@dataclass(frozen=True, slots=True)
class RecordFacts:
    """What the gate needs to know of a record."""

    id: uuid.UUID
    agent_id: uuid.UUID
    scope: str  # "SESSION" | "AGENT"
    session_id: uuid.UUID | None
    status: str  # "ACTIVE" | "SUPERSEDED" | "DELETED"
    preview: bool
    committed: bool
    turn_id: uuid.UUID
    replaces_id: uuid.UUID | None = None
    pending_turn_id: uuid.UUID | None = None
    prior_status: str | None = None
    current_version_id: uuid.UUID | None = None
    prior_version_id: uuid.UUID | None = None


class Staged(Protocol):
    """What R12 reads of a record (a :class:`RecordFacts`, or a stored record's row)."""

    @property
    def status(self) -> str: ...
    @property
    def pending_turn_id(self) -> uuid.UUID | None: ...
    @property
    def prior_status(self) -> str | None: ...
    @property
    def current_version_id(self) -> uuid.UUID | None: ...
    @property
    def prior_version_id(self) -> uuid.UUID | None: ...


def staged_by_other(reader: Reader, record: Staged) -> bool:
    """R12: the record carries a change staged by an open turn other than the reader's."""
    return record.pending_turn_id is not None and record.pending_turn_id != reader.turn_id


def effective_status(reader: Reader, record: Staged) -> str:
    """The status this reader sees: a change staged by another open turn is not yet seen."""
    if staged_by_other(reader, record):
        return record.prior_status or record.status
    return record.status


def version_in_force(reader: Reader, record: Staged) -> uuid.UUID | None:
    """The version this reader sees (R12): the prior one while another turn stages a change,
    whose new version a rollback removes."""
    if staged_by_other(reader, record):
        return record.prior_version_id or record.current_version_id
    return record.current_version_id


def exists_for(reader: Reader, record: RecordFacts) -> bool:
    """R10 and R12: a record of the reader's agent, committed or written by the reader's turn."""
    if record.agent_id != reader.agent_id:
        return False
    return record.committed or (not reader.api and record.turn_id == reader.turn_id)


def base_visible(reader: Reader, record: RecordFacts) -> bool:
    """R10, R11, R12 and the live half of R13: independent of other records."""
    if not exists_for(reader, record):
        return False
    if reader.api:
        return True
    if record.preview and not reader.preview:
        return False
    scope = SCOPE_OF[record.scope]
    if scope not in reader.read_scopes:
        return False
    return not (
        scope == "session" and (reader.session_id is None or record.session_id != reader.session_id)
    )


def hidden_by_preview(reader: Reader, records: Iterable[RecordFacts]) -> frozenset[uuid.UUID]:
    """Ids that a preview record existing for the reader names in ``replaces`` (R13)."""
    if not reader.preview or reader.api:
        return frozenset()
    return frozenset(
        r.replaces_id
        for r in records
        if r.preview and r.replaces_id is not None and exists_for(reader, r)
    )


def visible(
    reader: Reader, record: RecordFacts, *, hidden: frozenset[uuid.UUID], purpose: Purpose
) -> bool:
    if not base_visible(reader, record):
        return False
    if record.id in hidden:
        return False
    if purpose is Purpose.SEARCH and effective_status(reader, record) != "ACTIVE":
        return False
    return not (
        purpose is Purpose.CHANGE
        and not reader.api
        and SCOPE_OF[record.scope] not in reader.write_scopes
    )


def visible_records(
    reader: Reader, records: Sequence[RecordFacts], *, purpose: Purpose
) -> list[RecordFacts]:
    """The reference filter: the records of ``records`` this reader may see."""
    hidden = hidden_by_preview(reader, records)
    return [r for r in records if visible(reader, r, hidden=hidden, purpose=purpose)]
