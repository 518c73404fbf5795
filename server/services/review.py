"""The turn-end memory review (R8, R50): when one is due, what it reads, and applying
its decisions in the turn's transaction.

The runtime owns the model; the server owns the rest. :func:`begin_review` decides
whether a review is due and, when it is, records it as an execution of the native
``memory_review`` tool under the turn, with the conversation since the watermark;
:func:`compare_candidates` finds the records most like each candidate; and
:func:`apply_review` applies the model's decisions, all or none, as add_memory and
delete_memory write (:mod:`server.services.memory`), then ends the execution.

The watermark of a place (a session, or an agent without sessions) is the last turn a
review applied in a committed turn covered (:mod:`server.models.review`): a review of a
turn that rolls back or fails moves nothing, and its retry reads the same conversation.
A preview turn's review counts only for preview turns, a replay's for nobody.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import review as rules
from server.domain.history import HistoryIndex
from server.embedding import Embedder
from server.errors import BadInputError, ConflictError, DomainError, NotFoundError
from server.models import Execution, Invocation, MemoryReview, Turn
from server.services.history_kept import conversation
from server.services.review_memory import (
    Candidate,
    Similar,
    apply_decisions,
    naming,
    similar,
    vectors,
)
from server.services.transcript import end_execution, start_execution
from server.services.turns import TurnScope, ensure_memory_enabled, open_scope

REVIEW_TOOL = "memory_review"


@dataclass(frozen=True, slots=True)
class Begun:
    """A review started (or this turn's review, started earlier), or why none is due."""

    due: rules.Due
    messages: int
    review: MemoryReview | None
    execution: Execution | None
    instructions: str | None
    entries: list[rules.Entry]


@dataclass(frozen=True, slots=True)
class Compared:
    candidate: Candidate
    similar: list[Similar]

    @property
    def restatement(self) -> Similar | None:
        """The most similar record the candidate restates, if any (R50)."""
        text = self.candidate.fields.text
        return next((s for s in self.similar if s.restated_by(text)), None)


async def begin_review(db: AsyncSession, *, turn_id: uuid.UUID) -> Begun:
    """Start the turn's review when one is due (R8, R50); a second call in the same
    turn returns the first review."""
    scope = await open_scope(db, turn_id=turn_id)
    ensure_memory_enabled(scope)
    turn = scope.turn
    place = turn.session_id or turn.agent_id
    # reviews of one place take turns: the check and the insert below are one step
    await db.execute(select(func.pg_advisory_xact_lock(_lock_key(place))))
    existing = await db.scalar(select(MemoryReview).where(col(MemoryReview.turn_id) == turn.id))
    if existing is not None:
        entries = await _conversation(db, scope, after=existing.after_number)
        execution = await db.get(Execution, existing.execution_id)
        return Begun(
            rules.Due(True, "this turn's review, started earlier"),
            existing.messages,
            existing,
            execution,
            rules.instructions(scope.config.memory),
            entries,
        )
    await _refuse_concurrent(db, scope)
    after = await _watermark(db, scope)
    entries = await _conversation(db, scope, after=after)
    messages = rules.count_messages(entries)
    due = rules.due(scope.config.memory.extraction.every_messages, messages)
    if not due.due:
        return Begun(due, messages, None, None, None, entries=[])
    execution = await _start(db, scope, after=after, messages=messages)
    review = MemoryReview(
        agent_id=turn.agent_id,
        session_id=turn.session_id,
        turn_id=turn.id,
        execution_id=execution.id,
        after_number=after,
        through_number=turn.number,
        messages=messages,
        preview=turn.preview,
        replay=turn.replay_of_id is not None,
    )
    db.add(review)
    await db.flush()
    return Begun(due, messages, review, execution, rules.instructions(scope.config.memory), entries)


async def compare_candidates(
    db: AsyncSession,
    embedder: Embedder,
    *,
    review_id: uuid.UUID,
    candidates: Sequence[dict[str, Any]],
    limit: int | None = None,
) -> list[Compared]:
    """For each candidate, the ``limit`` records most like it that the review may change:
    active, visible to the turn, within its write scopes; best first (R50)."""
    k = rules.DEFAULT_SIMILAR if limit is None else limit
    if not 1 <= k <= rules.MAX_SIMILAR:
        raise BadInputError(f"limit must be 1 to {rules.MAX_SIMILAR}", field="limit")
    _, scope = await _open_review(db, review_id)
    checked = _candidates(scope, candidates)
    found = await vectors(embedder, [c.fields.text for c in checked])
    return [
        Compared(c, await similar(db, scope.reader, v, k))
        for c, v in zip(checked, found, strict=True)
    ]


@dataclass(frozen=True, slots=True)
class Applied:
    review: MemoryReview
    execution: Execution
    output: dict[str, Any]
    versions: list[uuid.UUID]


async def apply_review(
    db: AsyncSession,
    embedder: Embedder,
    *,
    review_id: uuid.UUID,
    decisions: Sequence[dict[str, Any]],
    invocation_id: uuid.UUID | None = None,
) -> Applied:
    """Apply the decisions, all or none, in the turn's transaction, and end the review's
    execution (R50). Each decision is ``{"candidate": {...}, "action": ..., "record_id":
    ...}``; one that cannot be applied refuses the whole set, naming it."""
    review, scope = await _open_review(db, review_id, lock=True)
    execution = await db.get(Execution, review.execution_id)
    assert execution is not None
    invocation = await _invocation(db, review, invocation_id)
    for i, d in enumerate(decisions):
        problem = rules.check_decision(i, d["action"], d.get("record_id"))
        if problem is not None:
            raise BadInputError(problem, field="decisions", decision=i)
    checked = _candidates(scope, [d["candidate"] for d in decisions], what="decision")
    outcomes, items = await apply_decisions(
        db,
        embedder,
        scope,
        execution,
        invocation.id,
        [(c, d["action"], d.get("record_id")) for c, d in zip(checked, decisions, strict=True)],
    )
    output = {"memories": [item.to_json() for item in items], "decisions": outcomes}
    ended = await end_execution(db, execution, output=output)
    review.status = "applied"
    review.applied_at = func.clock_timestamp()  # type: ignore[assignment]  # DB clock
    await db.flush()
    await db.refresh(review)
    return Applied(review, ended, output, [item.version.id for item in items])


def _candidates(
    scope: TurnScope, raw: Sequence[dict[str, Any]], *, what: str = "candidate"
) -> list[Candidate]:
    if len(raw) > rules.MAX_CANDIDATES:
        raise BadInputError(f"at most {rules.MAX_CANDIDATES} {what}s a call", field=f"{what}s")
    out = []
    for i, c in enumerate(raw):
        try:
            out.append(Candidate.check(scope, i, c))
        except DomainError as exc:
            raise naming(f"{what} {i}", exc) from None
    return out


async def _open_review(
    db: AsyncSession, review_id: uuid.UUID, *, lock: bool = False
) -> tuple[MemoryReview, TurnScope]:
    stmt = select(MemoryReview).where(col(MemoryReview.id) == review_id)
    review = await db.scalar(stmt.with_for_update() if lock else stmt)
    if review is None:
        raise NotFoundError(f"no memory review {review_id}", field="reviewId")
    scope = await open_scope(db, turn_id=review.turn_id)
    if review.status != "open":
        raise ConflictError(
            f"memory review {review_id} was already applied; a review applies once",
            field="reviewId",
        )
    return review, scope


async def _invocation(
    db: AsyncSession, review: MemoryReview, invocation_id: uuid.UUID | None
) -> Invocation:
    """The model call the decisions come from: named, or the review's latest (R25)."""
    stmt = select(Invocation).where(
        col(Invocation.execution_id) == review.execution_id, col(Invocation.purpose) == "memory"
    )
    if invocation_id is not None:
        found = await db.scalar(stmt.where(col(Invocation.id) == invocation_id))
        if found is None:
            raise NotFoundError(
                f"no model call {invocation_id} of purpose memory in this review",
                field="invocationId",
            )
        return found
    latest = await db.scalar(stmt.order_by(col(Invocation.created_at).desc()).limit(1))
    if latest is None:
        raise BadInputError(
            "record the review's model call first (recordInvocation with purpose MEMORY "
            "on the review's execution): the records it writes name it",
            field="invocationId",
        )
    return latest


async def _refuse_concurrent(db: AsyncSession, scope: TurnScope) -> None:
    """One review of a place at a time: another open turn's review wins."""
    turn = scope.turn
    other = await db.scalar(
        select(col(MemoryReview.turn_id))
        .join(Turn, col(Turn.id) == col(MemoryReview.turn_id))
        .where(*_same_place(scope), col(Turn.status) == "open", col(Turn.id) != turn.id)
        .limit(1)
    )
    if other is not None:
        raise ConflictError(
            f"turn {other} of this {'session' if turn.session_id else 'agent'} is reviewing "
            "its memory; review after it ends"
        )


def _same_place(scope: TurnScope) -> list[Any]:
    turn = scope.turn
    if turn.session_id is not None:
        return [col(MemoryReview.session_id) == turn.session_id]
    return [col(MemoryReview.agent_id) == turn.agent_id, col(MemoryReview.session_id).is_(None)]


async def _watermark(db: AsyncSession, scope: TurnScope) -> int:
    """The last turn number an applied review of a committed turn before this one
    covered; 0 when none did. Preview reviews count for preview turns only; a replay's
    never counts."""
    turn = scope.turn
    conds = [
        *_same_place(scope),
        col(MemoryReview.status) == "applied",
        col(MemoryReview.replay).is_(False),
        col(MemoryReview.through_number) < turn.number,
        col(Turn.status) == "committed",
    ]
    if not turn.preview:
        conds.append(col(MemoryReview.preview).is_(False))
    found = await db.scalar(
        select(func.max(col(MemoryReview.through_number)))
        .join(Turn, col(Turn.id) == col(MemoryReview.turn_id))
        .where(*conds)
    )
    return int(found or 0)


async def _conversation(db: AsyncSession, scope: TurnScope, *, after: int) -> list[rules.Entry]:
    """The committed turns after ``after`` and before this one, then this turn: what the
    review reads. A live turn never reads a preview turn's conversation (R64)."""
    turn = scope.turn
    place = (
        col(Turn.session_id) == turn.session_id
        if turn.session_id is not None
        else col(Turn.agent_id) == turn.agent_id
    )
    conds = [
        place,
        col(Turn.status) == "committed",
        col(Turn.replay_of_id).is_(None),
        col(Turn.number) > after,
        col(Turn.number) < turn.number,
    ]
    if not turn.preview:
        conds.append(col(Turn.preview).is_(False))
    earlier = (
        await db.execute(
            select(col(Turn.id), col(Turn.number)).where(*conds).order_by(col(Turn.number))
        )
    ).all()
    history = scope.config.history
    index: HistoryIndex = history.index if history is not None else "messages"
    entries: list[rules.Entry] = []
    for turn_id, number in [*earlier, (turn.id, turn.number)]:
        entries.extend(
            rules.Entry(number, role, tool, text)
            for role, tool, text in await conversation(db, turn_id, index)
        )
    return entries


async def _start(db: AsyncSession, scope: TurnScope, *, after: int, messages: int) -> Execution:
    return await start_execution(
        db,
        turn=scope.turn,
        kind="tool",
        name=REVIEW_TOOL,
        parent_id=scope.caller.id,
        input={"after_turn": after, "through_turn": scope.turn.number, "messages": messages},
    )


def _lock_key(place: uuid.UUID) -> int:
    """The place's advisory lock key for reviews (a signed 64-bit number)."""
    return int.from_bytes(place.bytes[8:], "big", signed=True)
