"""The review's three mutations (R50; types in :mod:`resolvers.review`)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import strawberry

from resolvers.context import Info
from resolvers.idempotent import once
from resolvers.review import (
    ApplyMemoryReviewInput,
    ApplyMemoryReviewPayload,
    BeginMemoryReviewInput,
    BeginMemoryReviewPayload,
    ComparedCandidateType,
    CompareMemoryCandidatesInput,
    CompareMemoryCandidatesPayload,
    MemoryDecisionAction,
    MemoryDecisionOutcomeType,
    ReviewedEventType,
    SimilarMemoryType,
    candidate_json,
    review_type,
    versions_of,
)
from resolvers.types.history import HistoryRole
from resolvers.types.turns import ExecutionType
from server import models
from server.domain import review as rules
from server.services import review
from server.services.lookup import get


@strawberry.type
class ReviewMutation:
    @strawberry.mutation(
        description="At a turn's end: start its memory review when one is due "
        "(harness.memory.extraction.every), with the instructions and the conversation "
        "since the last review. A second call in the same turn returns the first review."
    )
    async def begin_memory_review(
        self,
        info: Info,
        input: Annotated[
            BeginMemoryReviewInput, strawberry.argument(description="The turn that is ending.")
        ],
    ) -> BeginMemoryReviewPayload:
        async def run() -> dict[str, Any]:
            begun = await review.begin_review(info.context.db, turn_id=input.turn_id)
            return {
                "due": begun.due.due,
                "reason": begun.due.reason,
                "messages": begun.messages,
                "review": None if begun.review is None else str(begun.review.id),
                "instructions": begun.instructions,
                "conversation": [
                    {"turn": e.turn, "role": e.role, "tool": e.tool_name, "text": e.text}
                    for e in begun.entries
                ],
            }

        result = await once(
            info,
            "beginMemoryReview",
            input,
            run,
            request={"turn_id": input.turn_id},
        )
        entries = [
            rules.Entry(e["turn"], e["role"], e["tool"], e["text"]) for e in result["conversation"]
        ]
        return BeginMemoryReviewPayload(
            due=result["due"],
            reason=result["reason"],
            messages=result["messages"],
            review=None if result["review"] is None else await review_type(info, result["review"]),
            instructions=result["instructions"],
            conversation=[
                ReviewedEventType(
                    turn=e.turn,
                    role=HistoryRole(e.role),
                    tool_name=e.tool_name,
                    header=e.header,
                    text=e.text,
                )
                for e in entries
            ],
            text=rules.render(entries),
        )

    @strawberry.mutation(
        description="For each candidate fact, the memories the review may change that "
        "are most like it, best first; a near-identical one is marked as restated."
    )
    async def compare_memory_candidates(
        self,
        info: Info,
        input: Annotated[
            CompareMemoryCandidatesInput,
            strawberry.argument(description="The review and its candidates."),
        ],
    ) -> CompareMemoryCandidatesPayload:
        candidates = [candidate_json(c) for c in input.candidates]

        async def run() -> dict[str, Any]:
            compared = await review.compare_candidates(
                info.context.db,
                info.context.embedder,
                review_id=input.review_id,
                candidates=candidates,
                limit=input.limit,
            )
            return {
                "candidates": [
                    {
                        "candidate": c.candidate.index,
                        "summary": c.candidate.fields.summary,
                        "similar": [
                            {"version": str(s.version.id), "similarity": s.similarity}
                            for s in c.similar
                        ],
                        "restates": None
                        if c.restatement is None
                        else str(c.restatement.version.id),
                    }
                    for c in compared
                ]
            }

        result = await once(
            info,
            "compareMemoryCandidates",
            input,
            run,
            request={"review": input.review_id, "candidates": candidates, "limit": input.limit},
        )
        out: list[ComparedCandidateType] = []
        for c in result["candidates"]:
            versions = await versions_of(info, [s["version"] for s in c["similar"]])
            similar = [
                SimilarMemoryType(version=v, similarity=s["similarity"])
                for v, s in zip(versions, c["similar"], strict=True)
            ]
            out.append(
                ComparedCandidateType(
                    candidate=c["candidate"],
                    summary=c["summary"],
                    similar=similar,
                    restates=next(
                        (
                            m
                            for m, s in zip(similar, c["similar"], strict=True)
                            if s["version"] == c["restates"]
                        ),
                        None,
                    ),
                )
            )
        return CompareMemoryCandidatesPayload(candidates=out, text=_compared_text(out))

    @strawberry.mutation(
        description="Apply a review's decisions, all or none, in its turn's transaction "
        "(visible at commit, gone at rollback), and end the review."
    )
    async def apply_memory_review(
        self,
        info: Info,
        input: Annotated[
            ApplyMemoryReviewInput, strawberry.argument(description="The review and its decisions.")
        ],
    ) -> ApplyMemoryReviewPayload:
        decisions = [
            {
                "candidate": candidate_json(d.candidate),
                "action": d.action.value,
                "record_id": d.record_id,
            }
            for d in input.decisions
        ]

        async def run() -> dict[str, Any]:
            applied = await review.apply_review(
                info.context.db,
                info.context.embedder,
                review_id=input.review_id,
                decisions=decisions,
                invocation_id=input.invocation_id,
            )
            return {
                "review": str(applied.review.id),
                "execution": str(applied.execution.id),
                "versions": [str(v) for v in applied.versions],
                "decisions": applied.output["decisions"],
            }

        result = await once(
            info,
            "applyMemoryReview",
            input,
            run,
            request={
                "review": input.review_id,
                "decisions": decisions,
                "invocation": input.invocation_id,
            },
        )
        execution = await get(
            info.context.db, models.Execution, uuid.UUID(result["execution"]), fresh=True
        )
        return ApplyMemoryReviewPayload(
            review=await review_type(info, result["review"]),
            execution=ExecutionType(row=execution),
            memories=await versions_of(info, result["versions"]),
            decisions=[
                MemoryDecisionOutcomeType(
                    candidate=d["candidate"],
                    summary=d["summary"],
                    action=MemoryDecisionAction(d["action"]),
                    applied=MemoryDecisionAction(d["applied"]),
                    record_id=None if d["record"] is None else uuid.UUID(d["record"]),
                    restates=None if d["restates"] is None else uuid.UUID(d["restates"]),
                    similarity=d["similarity"],
                    memories=await versions_of(info, d["memories"]),
                )
                for d in result["decisions"]
            ],
        )


def _compared_text(compared: list[ComparedCandidateType]) -> str:
    """Each candidate, then the memories like it with their ids, as the model reads them."""
    blocks = []
    for c in compared:
        lines = [f"candidate {c.candidate}: {c.summary}"]
        lines.extend(
            f"- id {s.version.row.record_id} ({s.version.row.kind}, similarity "
            f"{s.similarity:.2f}): {s.version.row.summary}"
            for s in c.similar
        )
        if not c.similar:
            lines.append("- no similar memory")
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)
