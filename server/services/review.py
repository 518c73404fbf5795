"""The turn-end memory review (R8, R50): when one is due, what it reads, and applying
its decisions in the turn's transaction.

The runtime owns the model; the server owns the rest. :func:`begin_review` decides
whether a review is due and, when it is, records it as an execution of the native
``memory_review`` tool under the turn, with the conversation since the watermark;
:func:`compare_candidates` finds the records most like each candidate; and
:func:`apply_review` applies the model's decisions, all or none, as add_memory and
delete_memory write (:mod:`server.services.memory_write`), then ends the execution;
what it reads is :mod:`server.services.review_window`'s.

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

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.domain import review as rules
from server.embedding import Embedder
from server.errors import BadInputError, ConflictError, DomainError, NotFoundError
from server.models import Execution, Invocation, MemoryReview, MemoryVersion
from server.models._columns import CHANGED_AT
from server.services.review_memory import (
    Candidate,
    Similar,
    apply_decisions,
    naming,
    similar_each,
    vectors,
)
from server.services.review_window import (
    conversation_since,
    lock_place,
    refuse_concurrent,
    watermark,
)
from server.services.transcript import end_execution, start_execution
from server.services.turn_scope import TurnScope, ensure_memory_enabled, open_scope
from server.storage.owners import agent_of, of_agent, remember

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
    # reviews of one place take turns: the check and the insert below are one step
    await lock_place(db, scope)
    existing = await db.scalar(
        select(MemoryReview).where(
            col(MemoryReview.agent_id) == turn.agent_id, col(MemoryReview.turn_id) == turn.id
        )
    )
    if existing is not None:
        entries = await conversation_since(db, scope, after=existing.after_number)
        execution = await db.get(
            Execution, existing.execution_id, options=of_agent(Execution, turn.agent_id)
        )
        return Begun(
            rules.Due(True, "this turn's review, started earlier"),
            existing.messages,
            existing,
            execution,
            rules.instructions(scope.config.memory),
            entries,
        )
    await refuse_concurrent(db, scope)
    after = await watermark(db, scope)
    entries = await conversation_since(db, scope, after=after)
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
    remember(db, review.id, review.agent_id)
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
    near = await similar_each(db, scope.reader, found, k)
    return [Compared(c, s) for c, s in zip(checked, near, strict=True)]


@dataclass(frozen=True, slots=True)
class Applied:
    review: MemoryReview
    execution: Execution
    output: dict[str, Any]
    versions: list[MemoryVersion]  # every version written, in order


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
    execution = await db.get(
        Execution, review.execution_id, options=of_agent(Execution, review.agent_id)
    )
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
    applied = await db.scalar(
        update(MemoryReview)
        .where(col(MemoryReview.id) == review.id, col(MemoryReview.agent_id) == review.agent_id)
        .values(status="applied", applied_at=CHANGED_AT)  # the database's clock
        .returning(MemoryReview)
        .execution_options(populate_existing=True, synchronize_session=False)
    )
    assert applied is not None
    return Applied(applied, ended, output, [item.version for item in items])


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
    agent_id = await agent_of(db, MemoryReview, review_id)
    stmt = select(MemoryReview).where(
        col(MemoryReview.id) == review_id, col(MemoryReview.agent_id) == agent_id
    )
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
        col(Invocation.agent_id) == review.agent_id,
        col(Invocation.execution_id) == review.execution_id,
        col(Invocation.purpose) == "memory",
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


async def _start(db: AsyncSession, scope: TurnScope, *, after: int, messages: int) -> Execution:
    return await start_execution(
        db,
        turn=scope.turn,
        kind="tool",
        name=REVIEW_TOOL,
        parent_id=scope.caller.id,
        # named as the MemoryReview type names them
        input={"afterTurn": after, "throughTurn": scope.turn.number, "messages": messages},
    )
