"""The turn-end memory review's mutations (R8, R50): beginMemoryReview,
compareMemoryCandidates and applyMemoryReview. Each maps its input to one call of
:mod:`server.services.review` inside one transaction, under an optional idempotency
key; the result is kept as JSON, so a repeated key returns exactly the first answer.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from enum import Enum
from typing import Any

import strawberry

from resolvers.context import Info, labels_of
from resolvers.types.base import LabelInput, Node, column, idempotency_key
from resolvers.types.enums import Scope
from resolvers.types.history import HistoryRole
from resolvers.types.memory import MemoryVersionType
from resolvers.types.turns import ExecutionType
from server import models
from server.domain import review as rules
from server.services.lookup import get
from server.storage.owners import by_agent


@strawberry.enum(description="What a review does with one candidate fact.")
class MemoryDecisionAction(Enum):
    ADD = strawberry.enum_value("ADD", description="Keep the candidate as a new memory.")
    REPLACE = strawberry.enum_value(
        "REPLACE",
        description="Keep it in place of the memory named by recordId, which it corrects.",
    )
    DELETE = strawberry.enum_value(
        "DELETE", description="Delete the memory named by recordId: the candidate shows it wrong."
    )
    SKIP = strawberry.enum_value("SKIP", description="Keep nothing: it is already known.")


@strawberry.enum(description="Where a review stands.")
class MemoryReviewStatus(Enum):
    OPEN = strawberry.enum_value("open", description="Started; its decisions are not applied.")
    APPLIED = strawberry.enum_value(
        "applied", description="Its decisions are applied in its turn's transaction."
    )


@strawberry.input(description="Start the review of an open turn's conversation.")
class BeginMemoryReviewInput:
    turn_id: uuid.UUID = strawberry.field(description="The open turn that is ending.")
    idempotency_key: str | None = idempotency_key()


@strawberry.input(description="A fact the review's model proposes to remember.")
class MemoryCandidateInput:
    summary: str = strawberry.field(description="One line, enough to act on.")
    content: str | None = strawberry.field(
        default=None, description="The evidence and the specifics."
    )
    kind: str | None = strawberry.field(
        default=None, description="A declared kind; default: the first declared."
    )
    labels: list[LabelInput] | None = strawberry.field(
        default=None, description="Values of declared labels; a label is named once."
    )
    scope: Scope | None = strawberry.field(
        default=None,
        description="AGENT only where the agent writes agent scope; default: SESSION "
        "where it writes session scope.",
    )


@strawberry.input(description="Find the memories most like each candidate.")
class CompareMemoryCandidatesInput:
    review_id: uuid.UUID = strawberry.field(description="The review, from beginMemoryReview.")
    candidates: list[MemoryCandidateInput] = strawberry.field(description="The candidates.")
    limit: int | None = strawberry.field(
        default=None,
        description=f"How many memories per candidate, 1 to {rules.MAX_SIMILAR}; "
        f"default {rules.DEFAULT_SIMILAR}.",
    )
    idempotency_key: str | None = idempotency_key()


@strawberry.input(description="The decision for one candidate.")
class MemoryDecisionInput:
    candidate: MemoryCandidateInput = strawberry.field(description="The candidate decided on.")
    action: MemoryDecisionAction = strawberry.field(description="What to do with it.")
    record_id: uuid.UUID | None = strawberry.field(
        default=None, description="The memory a REPLACE or DELETE names; none otherwise."
    )


@strawberry.input(description="Apply a review's decisions, all or none.")
class ApplyMemoryReviewInput:
    review_id: uuid.UUID = strawberry.field(description="The review, from beginMemoryReview.")
    decisions: list[MemoryDecisionInput] = strawberry.field(
        description="One per candidate; an empty list keeps nothing and closes the review."
    )
    invocation_id: uuid.UUID | None = strawberry.field(
        default=None,
        description="The review's model call (purpose MEMORY) the decisions come from; "
        "default: the latest recorded on the review's execution.",
    )
    idempotency_key: str | None = idempotency_key()


@strawberry.type(name="MemoryReview", description="A turn-end review of the conversation.")
class MemoryReviewType(Node):
    row: strawberry.Private[models.MemoryReview]

    id: strawberry.ID = column("id", convert=str, description="The review's id.")

    @strawberry.field(description="Open, or applied.")
    def status(self) -> MemoryReviewStatus:
        return MemoryReviewStatus(self.row.status)

    @strawberry.field(description="The last turn an earlier review covered (0: none).")
    def after_turn(self) -> int:
        return self.row.after_number

    @strawberry.field(description="The turn it reviews through: its own.")
    def through_turn(self) -> int:
        return self.row.through_number

    @strawberry.field(description="Messages in the reviewed conversation.")
    def messages(self) -> int:
        return self.row.messages

    @strawberry.field(description="Reviewed by a turn in preview mode.")
    def preview(self) -> bool:
        return self.row.preview

    @strawberry.field(description="When it was started.")
    def created_at(self) -> datetime:
        return self.row.created_at

    @strawberry.field(description="When its decisions were applied.")
    def applied_at(self) -> datetime | None:
        return self.row.applied_at

    @strawberry.field(
        description="The execution of the native memory_review tool; record the "
        "review's model calls on it."
    )
    async def execution(self, info: Info) -> ExecutionType:
        return ExecutionType(
            row=await get(info.context.db, models.Execution, self.row.execution_id)
        )


@strawberry.type(name="ReviewedEvent", description="One event of the reviewed conversation.")
class ReviewedEventType:
    turn: int = strawberry.field(description="Its turn's number.")
    role: HistoryRole = strawberry.field(description="Who it is from.")
    tool_name: str | None = strawberry.field(description="For a tool result: the tool.")
    header: str = strawberry.field(description="Who it is from, as a line: turn 3, user.")
    text: str = strawberry.field(description="What was said.")


@strawberry.type(description="A review, or why none is due.")
class BeginMemoryReviewPayload:
    due: bool = strawberry.field(description="Whether a review is due now.")
    reason: str = strawberry.field(description="Why, e.g. 3 of 6 messages since the last review.")
    messages: int = strawberry.field(description="Messages since the last review.")
    review: MemoryReviewType | None = strawberry.field(description="Null when not due.")
    instructions: str | None = strawberry.field(
        description="The model's instructions: what to keep, then the decisions and their "
        "format. Null when not due."
    )
    conversation: list[ReviewedEventType] = strawberry.field(
        description="The conversation since the last review, in order; empty when not due."
    )
    text: str | None = strawberry.field(
        description="The conversation as the model reads it. Null when not due."
    )


@strawberry.type(name="SimilarMemory", description="A memory like a candidate.")
class SimilarMemoryType:
    version: MemoryVersionType = strawberry.field(description="Its current version.")
    similarity: float = strawberry.field(description="Cosine similarity, -1..1.")


@strawberry.type(name="ComparedCandidate", description="A candidate and the memories like it.")
class ComparedCandidateType:
    candidate: int = strawberry.field(description="The candidate's number, from 0.")
    summary: str = strawberry.field(description="Its summary.")
    similar: list[SimilarMemoryType] = strawberry.field(
        description="The memories it may change most like it, best first."
    )
    restates: SimilarMemoryType | None = strawberry.field(
        description="The memory it restates, if any: an ADD of it is applied as SKIP."
    )


@strawberry.type(description="The candidates compared.")
class CompareMemoryCandidatesPayload:
    candidates: list[ComparedCandidateType] = strawberry.field(description="In input order.")
    text: str = strawberry.field(description="The comparison as the model reads it.")


@strawberry.type(name="MemoryDecisionOutcome", description="What one decision did.")
class MemoryDecisionOutcomeType:
    candidate: int = strawberry.field(description="The candidate's number, from 0.")
    summary: str = strawberry.field(description="Its summary.")
    action: MemoryDecisionAction = strawberry.field(description="What was asked.")
    applied: MemoryDecisionAction = strawberry.field(
        description="What was done: SKIP for an ADD that restates a memory."
    )
    record_id: uuid.UUID | None = strawberry.field(description="The memory it named.")
    restates: uuid.UUID | None = strawberry.field(description="The memory an ADD restated.")
    similarity: float | None = strawberry.field(description="Its similarity to that memory.")
    memories: list[MemoryVersionType] = strawberry.field(
        description="The versions it wrote: the new memory, and the replaced or deleted one."
    )


@strawberry.type(description="The decisions applied.")
class ApplyMemoryReviewPayload:
    review: MemoryReviewType = strawberry.field(description="The review, now applied.")
    execution: ExecutionType = strawberry.field(description="The review's execution, ended.")
    memories: list[MemoryVersionType] = strawberry.field(
        description="Every version written: records added, replaced and deleted."
    )
    decisions: list[MemoryDecisionOutcomeType] = strawberry.field(description="In input order.")


def candidate_json(c: MemoryCandidateInput) -> dict[str, Any]:
    return {
        "summary": c.summary,
        "content": c.content,
        "kind": c.kind,
        "labels": labels_of(c.labels),
        "scope": c.scope.value if c.scope else None,
    }


async def version_rows(info: Info, ids: list[str]) -> list[models.MemoryVersion]:
    """The versions a stored result names, reloaded in one statement, in its order."""
    rows = await info.context.loaders.version.load_many([uuid.UUID(i) for i in ids])
    return [r for r in rows if r is not None]


async def review_row(info: Info, review_id: str) -> models.MemoryReview:
    """A review a stored result names, read again (the call may have changed it)."""
    db, row_id = info.context.db, uuid.UUID(review_id)
    row = await db.get(
        models.MemoryReview,
        row_id,
        populate_existing=True,
        options=await by_agent(db, models.MemoryReview, row_id),
    )
    assert row is not None
    return row
