from typing import Any, Optional
from uuid import UUID

from pydantic import Field

from .base_model import BaseModel
from .enums import (
    ConversationEventType,
    HelperKind,
    InvocationPurpose,
    MemoryDecisionAction,
    MemoryStatus,
    Scope,
)


class AddMemoryInput(BaseModel):
    turn_id: UUID = Field(alias="turnId")
    summary: str
    content: Optional[str] = None
    kind: Optional[str] = None
    labels: Optional[Any] = None
    scope: Optional[Scope] = None
    pinned: bool = False
    replaces: Optional[UUID] = None
    execution_id: Optional[UUID] = Field(alias="executionId", default=None)
    "The calling execution; default: the turn's own."
    invocation_id: Optional[UUID] = Field(alias="invocationId", default=None)
    "The model call that asked for the tool."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class ApplyMemoryReviewInput(BaseModel):
    """Apply a review's decisions, all or none."""

    review_id: UUID = Field(alias="reviewId")
    "The review, from beginMemoryReview."
    decisions: list["MemoryDecisionInput"]
    "One per candidate; an empty list keeps nothing and closes the review."
    invocation_id: Optional[UUID] = Field(alias="invocationId", default=None)
    "The review's model call (purpose MEMORY) the decisions come from; default: the latest recorded on the review's execution."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)
    "The same key returns the first answer."


class BeginMemoryReviewInput(BaseModel):
    """Start the review of an open turn's conversation."""

    turn_id: UUID = Field(alias="turnId")
    "The open turn that is ending."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)
    "The same key returns the first answer."


class BeginTurnInput(BaseModel):
    session_id: Optional[UUID] = Field(alias="sessionId", default=None)
    agent_id: Optional[UUID] = Field(alias="agentId", default=None)
    "For agents without sessions."
    agent_version_id: Optional[UUID] = Field(alias="agentVersionId", default=None)
    "Default: the latest version."
    preview: bool = False
    replay_of: Optional[UUID] = Field(alias="replayOf", default=None)
    retry_of: Optional[UUID] = Field(alias="retryOf", default=None)
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class CommitTurnInput(BaseModel):
    """The turn to commit."""

    turn_id: UUID = Field(alias="turnId")
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class CompareMemoryCandidatesInput(BaseModel):
    """Find the memories most like each candidate."""

    review_id: UUID = Field(alias="reviewId")
    "The review, from beginMemoryReview."
    candidates: list["MemoryCandidateInput"]
    "The candidates."
    limit: Optional[int] = None
    "How many memories per candidate, 1 to 20; default 5."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)
    "The same key returns the first answer."


class ConversationEventInput(BaseModel):
    """One event; which fields it takes depends on its type."""

    type_: ConversationEventType = Field(alias="type")
    text: Optional[str] = None
    "The message, reply, result or error text; a skill's or retrieval's content."
    name: Optional[str] = None
    "SKILL_LOAD: the skill; RETRIEVAL: where it came from."
    tool_calls: Optional[list["ToolCallInput"]] = Field(alias="toolCalls", default=None)
    "AGENT_MESSAGE: the tool calls the reply made."
    tool_call_id: Optional[str] = Field(alias="toolCallId", default=None)
    "TOOL_RESULT, TOOL_ERROR: the call answered."
    tool_execution_id: Optional[UUID] = Field(alias="toolExecutionId", default=None)
    "TOOL_RESULT, TOOL_ERROR of a native tool call: the execution the server recorded for it; its output is the result, so text is left out."


class CreateAgentInput(BaseModel):
    namespace: str
    name: str
    sessionless: bool = False
    "An agent without sessions: its memory is agent scope only."


class CreateSessionInput(BaseModel):
    agent_id: UUID = Field(alias="agentId")
    external_id: Optional[str] = Field(alias="externalId", default=None)


class DeleteAgentMemoryInput(BaseModel):
    """The memory record to delete."""

    id: UUID
    "The record's id."


class DeleteMemoryInput(BaseModel):
    """The record the native delete_memory tool deletes."""

    turn_id: UUID = Field(alias="turnId")
    id: UUID
    execution_id: Optional[UUID] = Field(alias="executionId", default=None)
    invocation_id: Optional[UUID] = Field(alias="invocationId", default=None)
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class FailTurnInput(BaseModel):
    turn_id: UUID = Field(alias="turnId")
    error: Optional[str] = None
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class LabelFilter(BaseModel):
    name: str
    value: str


class MemoryCandidateInput(BaseModel):
    """A fact the review's model proposes to remember."""

    summary: str
    "One line, enough to act on."
    content: Optional[str] = None
    "The evidence and the specifics."
    kind: Optional[str] = None
    "A declared kind; default: the first declared."
    labels: Optional[Any] = None
    "Values of declared labels, by name."
    scope: Optional[Scope] = None
    "AGENT only where the agent writes agent scope; default: SESSION where it writes session scope."


class MemoryDecisionInput(BaseModel):
    """The decision for one candidate."""

    candidate: "MemoryCandidateInput"
    "The candidate decided on."
    action: MemoryDecisionAction
    "What to do with it."
    record_id: Optional[UUID] = Field(alias="recordId", default=None)
    "The memory a REPLACE or DELETE names; none otherwise."


class MemoryRecordFilter(BaseModel):
    status: Optional[MemoryStatus] = None
    kind: Optional[str] = None
    scope: Optional[Scope] = None
    session_id: Optional[UUID] = Field(alias="sessionId", default=None)
    preview: Optional[bool] = None
    labels: Optional[list["LabelFilter"]] = None


class PublishAgentVersionInput(BaseModel):
    agent_id: UUID = Field(alias="agentId")
    config: Any
    'The version\'s configuration: {"harness": ...}.'
    label: Optional[str] = None


class ReadMemoryInput(BaseModel):
    """The record the native read_memory tool reads."""

    turn_id: UUID = Field(alias="turnId")
    id: UUID
    execution_id: Optional[UUID] = Field(alias="executionId", default=None)
    invocation_id: Optional[UUID] = Field(alias="invocationId", default=None)
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class RecallInput(BaseModel):
    turn_id: UUID = Field(alias="turnId")
    query: str
    "The turn's current work: what to recall for."
    execution_id: Optional[UUID] = Field(alias="executionId", default=None)
    "Whose conversation the records are for (the agent's run of the turn by default, or a helper's)."
    invocation_id: Optional[UUID] = Field(alias="invocationId", default=None)
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class RecordEventsInput(BaseModel):
    turn_id: UUID = Field(alias="turnId")
    events: list["ConversationEventInput"]
    execution_id: Optional[UUID] = Field(alias="executionId", default=None)
    "Whose conversation this is; default: the turn's own."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class RecordInvocationInput(BaseModel):
    execution_id: UUID = Field(alias="executionId")
    purpose: InvocationPurpose
    model: str
    input_tokens: int = Field(alias="inputTokens", default=0)
    output_tokens: int = Field(alias="outputTokens", default=0)


class RollbackTurnInput(BaseModel):
    """The turn to roll back."""

    turn_id: UUID = Field(alias="turnId")
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class SearchHistoryInput(BaseModel):
    turn_id: UUID = Field(alias="turnId")
    query: Optional[str] = None
    "What to rank parts by."
    ids: Optional[list[UUID]] = None
    "Read these events whole instead of searching."
    limit: Optional[int] = None
    "At most this many results (default 5, at most 50)."
    execution_id: Optional[UUID] = Field(alias="executionId", default=None)
    "The calling execution; default: the turn's own."
    invocation_id: Optional[UUID] = Field(alias="invocationId", default=None)
    "The model call that asked for the tool."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class SearchMemoryInput(BaseModel):
    turn_id: UUID = Field(alias="turnId")
    query: Optional[str] = None
    "Rank by it (R41); without it, list newest first."
    kind: Optional[str] = None
    "Only records of this kind."
    labels: Optional[Any] = None
    "Only records with exactly these values of declared labels."
    ids: Optional[list[UUID]] = None
    "Only these records (read them by id)."
    limit: Optional[int] = None
    "How many; default harness.memory.search.max_results."
    after: Optional[str] = None
    "Without a query: the nextCursor of the previous page."
    execution_id: Optional[UUID] = Field(alias="executionId", default=None)
    "The calling execution (a helper or program may search); default: the turn's own."
    invocation_id: Optional[UUID] = Field(alias="invocationId", default=None)
    "The model call that asked for the tool."
    idempotency_key: Optional[str] = Field(alias="idempotencyKey", default=None)


class StartExecutionInput(BaseModel):
    turn_id: UUID = Field(alias="turnId")
    kind: HelperKind
    name: str
    parent_execution_id: Optional[UUID] = Field(alias="parentExecutionId", default=None)


class ToolCallInput(BaseModel):
    id: str
    "The call's id, unique in the turn."
    name: str
    arguments: Optional[Any] = None


ApplyMemoryReviewInput.model_rebuild()
CompareMemoryCandidatesInput.model_rebuild()
ConversationEventInput.model_rebuild()
MemoryDecisionInput.model_rebuild()
MemoryRecordFilter.model_rebuild()
RecordEventsInput.model_rebuild()
