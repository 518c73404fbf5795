"""The review's three mutations (R50; types in :mod:`resolvers.review`)."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import strawberry

from resolvers.context import Info
from resolvers.idempotent import once_shown
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
    MemoryReviewType,
    ReviewedEventType,
    SimilarMemoryType,
    candidate_json,
    review_row,
    version_rows,
)
from resolvers.types.history import HistoryRole
from resolvers.types.memory import MemoryVersionType
from resolvers.types.turns import ExecutionType
from server import models
from server.domain import review as rules
from server.services import review
from server.services.lookup import get

# what each mutation shows as the call wrote it (a replayed key reloads it)
_Begun = tuple[models.MemoryReview | None, models.Execution | None]
_Applied = tuple[models.MemoryReview, models.Execution, list[models.MemoryVersion]]


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
        async def run() -> tuple[_Begun, dict[str, Any]]:
            begun = await review.begin_review(info.context.db, turn_id=input.turn_id)
            return (begun.review, begun.execution), {
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

        async def reload(result: dict[str, Any]) -> _Begun:
            if result["review"] is None:
                return None, None
            return await review_row(info, result["review"]), None

        (row, _), result = await once_shown(
            info, "beginMemoryReview", input, run, reload, request={"turn_id": input.turn_id}
        )
        entries = [
            rules.Entry(e["turn"], e["role"], e["tool"], e["text"]) for e in result["conversation"]
        ]
        return BeginMemoryReviewPayload(
            due=result["due"],
            reason=result["reason"],
            messages=result["messages"],
            review=None if row is None else MemoryReviewType(row=row),
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
            text=rules.render(entries) if result["review"] is not None else None,
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

        async def run() -> tuple[list[dict[str, models.MemoryVersion]], dict[str, Any]]:
            compared = await review.compare_candidates(
                info.context.db,
                info.context.embedder,
                review_id=input.review_id,
                candidates=candidates,
                limit=input.limit,
            )
            return [{str(s.version.id): s.version for s in c.similar} for c in compared], {
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

        async def reload(result: dict[str, Any]) -> list[dict[str, models.MemoryVersion]]:
            ids = [[s["version"] for s in c["similar"]] for c in result["candidates"]]
            rows = await version_rows(info, [i for each in ids for i in each])
            found = {str(v.id): v for v in rows}
            return [{i: found[i] for i in each if i in found} for each in ids]

        rows, result = await once_shown(
            info,
            "compareMemoryCandidates",
            input,
            run,
            reload,
            request={"review": input.review_id, "candidates": candidates, "limit": input.limit},
        )
        out: list[ComparedCandidateType] = []
        for c, versions in zip(result["candidates"], rows, strict=True):
            shown = [s for s in c["similar"] if s["version"] in versions]
            similar = [
                SimilarMemoryType(
                    version=MemoryVersionType(row=versions[s["version"]]),
                    similarity=s["similarity"],
                )
                for s in shown
            ]
            out.append(
                ComparedCandidateType(
                    candidate=c["candidate"],
                    summary=c["summary"],
                    similar=similar,
                    restates=next(
                        (
                            m
                            for m, s in zip(similar, shown, strict=True)
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

        async def run() -> tuple[_Applied, dict[str, Any]]:
            applied = await review.apply_review(
                info.context.db,
                info.context.embedder,
                review_id=input.review_id,
                decisions=decisions,
                invocation_id=input.invocation_id,
            )
            shown = (applied.review, applied.execution, applied.versions)
            return shown, {
                "review": str(applied.review.id),
                "execution": str(applied.execution.id),
                "versions": [str(v.id) for v in applied.versions],
                "decisions": applied.output["decisions"],
            }

        async def reload(result: dict[str, Any]) -> _Applied:
            db = info.context.db
            execution = await get(db, models.Execution, uuid.UUID(result["execution"]), fresh=True)
            versions = await version_rows(info, result["versions"])
            return await review_row(info, result["review"]), execution, versions

        (row, execution, versions), result = await once_shown(
            info,
            "applyMemoryReview",
            input,
            run,
            reload,
            request={
                "review": input.review_id,
                "decisions": decisions,
                "invocation": input.invocation_id,
            },
        )
        written = {str(v.id): MemoryVersionType(row=v) for v in versions}
        return ApplyMemoryReviewPayload(
            review=MemoryReviewType(row=row),
            execution=ExecutionType(row=execution),
            memories=list(written.values()),
            decisions=[
                MemoryDecisionOutcomeType(
                    candidate=d["candidate"],
                    summary=d["summary"],
                    action=MemoryDecisionAction(d["action"]),
                    applied=MemoryDecisionAction(d["applied"]),
                    record_id=None if d["recordId"] is None else uuid.UUID(d["recordId"]),
                    restates=None if d["restates"] is None else uuid.UUID(d["restates"]),
                    similarity=d["similarity"],
                    memories=[written[v] for v in d["memories"] if v in written],
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
