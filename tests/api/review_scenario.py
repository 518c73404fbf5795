"""GraphQL documents and helpers for the turn-end memory review tests (R8, R50)."""

from __future__ import annotations

from typing import Any

from tests.api.history_scenario import HistoryScenario
from tests.api.scenario import INVOKE

BEGIN_REVIEW = """
mutation($turn: ID!, $key: String) {
  beginMemoryReview(input: {turnId: $turn, idempotencyKey: $key}) {
    due reason messages instructions text
    conversation { turn role toolName header text }
    review { id status afterTurn throughTurn messages preview
             execution { id kind name status parent { id } } }
  }
}"""
COMPARE = """
mutation($review: ID!, $candidates: [MemoryCandidateInput!]!, $limit: Int, $key: String) {
  compareMemoryCandidates(input: {reviewId: $review, candidates: $candidates, limit: $limit,
                                  idempotencyKey: $key}) {
    text
    candidates { candidate summary
                 similar { similarity version { id recordId summary kind labels } }
                 restates { similarity version { recordId summary } } }
  }
}"""
APPLY = """
mutation($review: ID!, $decisions: [MemoryDecisionInput!]!, $invocation: ID,
         $key: String) {
  applyMemoryReview(input: {reviewId: $review, decisions: $decisions,
                            invocationId: $invocation, idempotencyKey: $key}) {
    review { id status appliedAt }
    execution { id name status output endedAt }
    memories { id recordId status summary }
    decisions { candidate summary action applied recordId restates similarity
                memories { id recordId status } }
  }
}"""


def fact(summary: str, **kw: Any) -> dict[str, Any]:
    return {"summary": summary, **kw}


def decide(action: str, summary: str, record: str | None = None, **kw: Any) -> dict[str, Any]:
    decision: dict[str, Any] = {"candidate": fact(summary, **kw), "action": action}
    if record is not None:
        decision["recordId"] = record
    return decision


class ReviewScenario(HistoryScenario):
    """A HistoryScenario that reviews its turns."""

    async def begin_review(self, turn: str, **kw: Any) -> dict[str, Any]:
        data = await self.api.ok(BEGIN_REVIEW, turn=turn, **kw)
        return dict(data["beginMemoryReview"])

    async def invoke(self, review: dict[str, Any]) -> str:
        execution = review["review"]["execution"]["id"]
        data = await self.api.ok(INVOKE, execution=execution, purpose="MEMORY")
        return str(data["recordInvocation"]["invocation"]["id"])

    async def compare(self, review: str, *candidates: dict[str, Any], **kw: Any) -> Any:
        data = await self.api.ok(COMPARE, review=review, candidates=list(candidates), **kw)
        return data["compareMemoryCandidates"]

    async def apply(self, review: str, *decisions: dict[str, Any], **kw: Any) -> dict[str, Any]:
        data = await self.api.ok(APPLY, review=review, decisions=list(decisions), **kw)
        return dict(data["applyMemoryReview"])

    async def apply_error(
        self, review: str, *decisions: dict[str, Any], **kw: Any
    ) -> tuple[str, dict[str, Any]]:
        return await self.api.error(APPLY, review=review, decisions=list(decisions), **kw)

    async def reviewed(self, turn: str, *decisions: dict[str, Any]) -> dict[str, Any]:
        """Review the turn (it must be due) with a recorded model call, apply the decisions."""
        begun = await self.begin_review(turn)
        assert begun["due"], begun["reason"]
        await self.invoke(begun)
        return await self.apply(begun["review"]["id"], *decisions)
