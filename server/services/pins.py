"""Pinned records: the list each turn's instructions carry, and the budget a new pin
must fit (R30, R31; the counting rules are :mod:`server.domain.pinned`).

Both read the records through the visibility gate (:mod:`server.storage.gate`): the
list shows, of each pinned record the reader may see, the version in force for it;
the check adds the pins other open turns have staged that the reader would see once
they commit (:func:`server.storage.gate.in_reach`).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, replace

from sqlalchemy import and_, func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain.pinned import (
    estimate_tokens,
    newest_that_fit,
    omitted_note,
    over_budget_message,
    pinned_line,
)
from server.domain.visibility import Purpose, Reader
from server.errors import NotAllowedError
from server.models import MemoryRecord, MemoryVersion
from server.storage.gate import in_reach, record_condition, version_in_force


@dataclass(frozen=True, slots=True)
class PinnedEntry:
    record_id: uuid.UUID
    version_id: uuid.UUID
    summary: str
    line: str


@dataclass(frozen=True, slots=True)
class PinnedList:
    """What a turn's instructions list: the newest pins that fit, and those left out."""

    shown: list[PinnedEntry]
    omitted: list[PinnedEntry]
    note: str | None  # says how many are left out, if any


async def pinned_entries(db: AsyncSession, *, reader: Reader) -> list[PinnedEntry]:
    """The pinned records the reader can see, oldest pin first, each with the version in
    force for this reader: another open turn's staged change is not yet seen (R12, R30)."""
    rows = (
        await db.execute(
            select(col(MemoryRecord.id), col(MemoryVersion.id), col(MemoryVersion.summary))
            .join(
                MemoryVersion,
                and_(
                    col(MemoryVersion.id) == version_in_force(reader),
                    col(MemoryVersion.agent_id) == col(MemoryRecord.agent_id),
                ),
            )
            .where(
                col(MemoryRecord.pinned).is_(True),
                record_condition(reader, purpose=Purpose.SEARCH),
            )
            .order_by(col(MemoryRecord.seq))
        )
    ).all()
    return [
        PinnedEntry(record_id=rid, version_id=vid, summary=s, line=pinned_line(s, rid))
        for rid, vid, s in rows
    ]


async def pinned_list(db: AsyncSession, *, reader: Reader, max_tokens: int | None) -> PinnedList:
    """R30, R31: the reader's pins within ``max_tokens`` (None: nothing is pinned, so
    nothing is listed), the newest that fit."""
    if max_tokens is None:
        return PinnedList(shown=[], omitted=[], note=None)
    pinned = await pinned_entries(db, reader=reader)
    shown = newest_that_fit([p.line for p in pinned], max_tokens)
    omitted, kept = pinned[: len(pinned) - shown], pinned[len(pinned) - shown :]
    note = omitted_note(omitted=len(omitted), max_tokens=max_tokens) if omitted else None
    return PinnedList(shown=kept, omitted=omitted, note=note)


async def check_pin_budget(
    db: AsyncSession,
    *,
    reader: Reader,
    max_tokens: int | None,
    summary: str,
    record_id: uuid.UUID,
    dropping: uuid.UUID | None,
) -> None:
    """R31 under concurrency: the pinned list of every reader of this turn's session who
    will see the new pin must fit. A preview turn's pin is seen by preview turns; a live
    turn's by live turns and by preview turns too, which also list the preview pins (R13):
    both lists are checked. The pins other open turns have staged count as if they commit
    (each holds its share of the budget until its turn ends). Checks of one agent take
    turns (an advisory lock held to the end of this transaction), so two turns pinning at
    once cannot both take the last room. ``dropping``: a pin the new one replaces."""
    if max_tokens is None:
        raise NotAllowedError(
            "pinning is not enabled for this agent (harness.memory.pinned)", field="pinned"
        )
    await db.execute(select(func.pg_advisory_xact_lock(_pin_lock_key(reader.agent_id))))
    readers = [reader]
    if not reader.preview:
        readers.append(replace(reader, preview=True))
    new_line = pinned_line(summary, record_id)
    for each in readers:
        lines = [e.line for e in await pinned_entries(db, reader=each) if e.record_id != dropping]
        lines.extend(await _reserved_pins(db, each))
        needed = estimate_tokens([*lines, new_line])
        if needed > max_tokens:
            raise NotAllowedError(
                over_budget_message(needed=needed, max_tokens=max_tokens), field="pinned"
            )


def _pin_lock_key(agent_id: uuid.UUID) -> int:
    """The agent's advisory lock key for pin checks (a signed 64-bit number)."""
    return int.from_bytes(agent_id.bytes[:8], "big", signed=True)


async def _reserved_pins(db: AsyncSession, reader: Reader) -> list[str]:
    """Lines of the pinned records other open turns have written and not yet committed
    that the reader (of the checking turn's session) would list once they commit. A pin
    another turn is replacing still counts: the reservation errs on the full side."""
    r = MemoryRecord
    rows = await db.execute(
        select(col(r.id), col(MemoryVersion.summary))
        .join(
            MemoryVersion,
            and_(
                col(MemoryVersion.id) == col(r.current_version_id),
                col(MemoryVersion.agent_id) == col(r.agent_id),
            ),
        )
        .where(
            col(r.agent_id) == reader.agent_id,
            col(r.committed).is_(False),
            col(r.pinned).is_(True),
            col(r.turn_id) != reader.turn_id,
            in_reach(reader),
        )
        .order_by(col(r.seq))
    )
    return [pinned_line(summary, record_id) for record_id, summary in rows.all()]
