from datetime import datetime
from typing import Any, Optional

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
    """The add_memory tool's arguments: a record to save."""

    turn_id: str = Field(validation_alias="turnId", serialization_alias="turnId")
    "The open turn the call belongs to."
    summary: str
    "One line the agent can act on, not blank."
    content: Optional[str] = None
    "The evidence and the specifics; null: none."
    kind: Optional[str] = None
    "One of the kinds the agent declares (harness.memory.kinds); null or omitted: the first declared."
    labels: Optional[list["LabelInput"]] = None
    "Values of labels the agent declares, each label named once; an undeclared label is NOT_ALLOWED. Null or omitted: none."
    scope: Optional[Scope] = None
    "AGENT only where the agent writes agent scope (harness.memory.scope.write); null or omitted: SESSION where it writes session scope, else AGENT."
    pinned: Optional[bool] = None
    "Pin the record: every later turn's instructions list its summary. Needs pinning enabled (harness.memory.pinned) and room in its token budget. Null or omitted: false."
    replaces: Optional[str] = None
    "A record the new one corrects: that record becomes SUPERSEDED, and its replacedBy names the new one; null: none."
    execution_id: Optional[str] = Field(validation_alias="executionId", serialization_alias="executionId", default=None)
    "The calling execution (a helper or program of the turn may call the tool); null or omitted: the turn's own."
    invocation_id: Optional[str] = Field(validation_alias="invocationId", serialization_alias="invocationId", default=None)
    "The model call that asked for the tool, if recorded; null or omitted: none."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class ApplyMemoryReviewInput(BaseModel):
    """Apply a review's decisions, all or none."""

    review_id: str = Field(validation_alias="reviewId", serialization_alias="reviewId")
    "The review, from beginMemoryReview."
    decisions: list["MemoryDecisionInput"]
    "One per candidate; an empty list keeps nothing and closes the review."
    invocation_id: Optional[str] = Field(validation_alias="invocationId", serialization_alias="invocationId", default=None)
    "The review's model call (purpose MEMORY) the decisions come from; default: the latest recorded on the review's execution."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class BeginMemoryReviewInput(BaseModel):
    """Start the review of an open turn's conversation."""

    turn_id: str = Field(validation_alias="turnId", serialization_alias="turnId")
    "The open turn that is ending."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class BeginTurnInput(BaseModel):
    """A turn to open."""

    session_id: Optional[str] = Field(validation_alias="sessionId", serialization_alias="sessionId", default=None)
    "The session the turn belongs to; give it, or agentId for an agent without sessions."
    agent_id: Optional[str] = Field(validation_alias="agentId", serialization_alias="agentId", default=None)
    "The agent, for an agent without sessions."
    agent_version_id: Optional[str] = Field(validation_alias="agentVersionId", serialization_alias="agentVersionId", default=None)
    "The version of the configuration to run; null or omitted: the latest."
    preview: Optional[bool] = None
    "Run the turn in preview mode: the records it writes are preview records, which live turns never recall, search, read or delete. Null or omitted: false."
    replay_of: Optional[str] = Field(validation_alias="replayOf", serialization_alias="replayOf", default=None)
    "An earlier turn of the session to replay: the new turn takes its number; null: a new turn."
    retry_of: Optional[str] = Field(validation_alias="retryOf", serialization_alias="retryOf", default=None)
    "A failed turn to retry: the new turn keeps its number, as its next attempt; null: a new turn."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class CommitTurnInput(BaseModel):
    """The turn to commit."""

    turn_id: str = Field(validation_alias="turnId", serialization_alias="turnId")
    "The open turn."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class CompareMemoryCandidatesInput(BaseModel):
    """Find the memories most like each candidate."""

    review_id: str = Field(validation_alias="reviewId", serialization_alias="reviewId")
    "The review, from beginMemoryReview."
    candidates: list["MemoryCandidateInput"]
    "The candidates."
    limit: Optional[int] = None
    "How many memories per candidate, 1 to 20; default 5."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class ConversationEventInput(BaseModel):
    """One event; which fields it takes depends on its type."""

    type_: ConversationEventType = Field(validation_alias="type", serialization_alias="type")
    "What the event is."
    text: Optional[str] = None
    "The message, reply, result or error text; a skill's or retrieval's content."
    name: Optional[str] = None
    "SKILL_LOAD: the skill; RETRIEVAL: where it came from."
    tool_calls: Optional[list["ToolCallInput"]] = Field(validation_alias="toolCalls", serialization_alias="toolCalls", default=None)
    "AGENT_MESSAGE: the tool calls the reply made."
    tool_call_id: Optional[str] = Field(validation_alias="toolCallId", serialization_alias="toolCallId", default=None)
    "TOOL_RESULT, TOOL_ERROR: the call answered."
    tool_execution_id: Optional[str] = Field(validation_alias="toolExecutionId", serialization_alias="toolExecutionId", default=None)
    "TOOL_RESULT, TOOL_ERROR of a native tool call: the execution the server recorded for it; its output is the result, so text is left out."


class CreateAgentInput(BaseModel):
    """A new agent."""

    namespace: str
    "The namespace it belongs to; grants are given per namespace."
    name: str
    "Its name, unique in the namespace."
    sessionless: Optional[bool] = None
    "An agent without sessions: its memory is agent scope only. Null or omitted: false."


class CreateSessionInput(BaseModel):
    """A new session of an agent."""

    agent_id: str = Field(validation_alias="agentId", serialization_alias="agentId")
    "The agent; it must have sessions."
    external_id: Optional[str] = Field(validation_alias="externalId", serialization_alias="externalId", default=None)
    "The caller's own id for the session (a chat thread's, a ticket's), up to 200 characters; unique per agent: a second session of the agent naming it is CONFLICT. Agent.session(externalId:) finds it. Null: none."


class DeleteAgentMemoryInput(BaseModel):
    """The memory record to delete."""

    id: str
    "The record's id."


class DeleteMemoryInput(BaseModel):
    """The delete_memory tool's arguments: the record to delete."""

    turn_id: str = Field(validation_alias="turnId", serialization_alias="turnId")
    "The open turn the call belongs to."
    id: str
    "The memory record's id."
    execution_id: Optional[str] = Field(validation_alias="executionId", serialization_alias="executionId", default=None)
    "The calling execution (a helper or program of the turn may call the tool); null or omitted: the turn's own."
    invocation_id: Optional[str] = Field(validation_alias="invocationId", serialization_alias="invocationId", default=None)
    "The model call that asked for the tool, if recorded; null or omitted: none."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class FailTurnInput(BaseModel):
    """The turn to end as failed."""

    turn_id: str = Field(validation_alias="turnId", serialization_alias="turnId")
    "The open turn."
    error: Optional[str] = None
    "What went wrong, shown as the turn's error; null: none."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class LabelInput(BaseModel):
    """One value of a label the agent declares (harness.memory.labels), by the label's name. The same shape gives labels to a record and filters records by them."""

    name: str
    "The label's name, as the agent declares it."
    value: str
    "The value; a record's label value is 1 to 200 characters."


class MemoryAsOf(BaseModel):
    """A moment of an agent's memory: a turn or a time, exactly one. The records that stood then, each as its version in force then (its status, text, kind and labels then), its versions up to that one."""

    turn_id: Optional[str] = Field(validation_alias="turnId", serialization_alias="turnId", default=None)
    "A turn of this agent: the memory as that turn could see it when it began (its session's records and the scopes its agent version reads, live or preview as the turn was), before anything it wrote. Needs SELECT on <namespace>.Session too; a turn of another agent is NOT_FOUND."
    time: Optional[datetime] = None
    "A time, with its UTC offset: the memory as this listing showed it then (every committed record of the agent)."


class MemoryCandidateInput(BaseModel):
    """A fact the review's model proposes to remember."""

    summary: str
    "One line, enough to act on."
    content: Optional[str] = None
    "The evidence and the specifics."
    kind: Optional[str] = None
    "A declared kind; default: the first declared."
    labels: Optional[list["LabelInput"]] = None
    "Values of declared labels; a label is named once."
    scope: Optional[Scope] = None
    "AGENT only where the agent writes agent scope; default: SESSION where it writes session scope."


class MemoryDecisionInput(BaseModel):
    """The decision for one candidate."""

    candidate: "MemoryCandidateInput"
    "The candidate decided on."
    action: MemoryDecisionAction
    "What to do with it."
    record_id: Optional[str] = Field(validation_alias="recordId", serialization_alias="recordId", default=None)
    "The memory a REPLACE or DELETE names; none otherwise."


class MemoryRecordFilter(BaseModel):
    """Which memory records to list; every field given must match, a null field matches every record."""

    status: Optional[MemoryStatus] = None
    "Only records in this status."
    kind: Optional[str] = None
    "Only records of this kind (their current version's)."
    scope: Optional[Scope] = None
    "Only records of this scope."
    session_id: Optional[str] = Field(validation_alias="sessionId", serialization_alias="sessionId", default=None)
    "Only records this session wrote."
    preview: Optional[bool] = None
    "True: only preview records; false: only live ones."
    labels: Optional[list["LabelInput"]] = None
    "Only records whose current version has every one of these label values."


class PublishAgentVersionInput(BaseModel):
    """A new version of an agent's configuration."""

    agent_id: str = Field(validation_alias="agentId", serialization_alias="agentId")
    "The agent."
    config: Any
    'The version\'s configuration: {"harness": {"memory": ..., "history": ...}}; validated, and INVALID_CONFIG naming the bad field when it is not valid.'
    label: Optional[str] = None
    "A label for people reading the versions; null: none."


class ReadMemoryInput(BaseModel):
    """The read_memory tool's arguments: the record to read."""

    turn_id: str = Field(validation_alias="turnId", serialization_alias="turnId")
    "The open turn the call belongs to."
    id: str
    "The memory record's id."
    execution_id: Optional[str] = Field(validation_alias="executionId", serialization_alias="executionId", default=None)
    "The calling execution (a helper or program of the turn may call the tool); null or omitted: the turn's own."
    invocation_id: Optional[str] = Field(validation_alias="invocationId", serialization_alias="invocationId", default=None)
    "The model call that asked for the tool, if recorded; null or omitted: none."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class RecallInput(BaseModel):
    """What to recall records for."""

    turn_id: str = Field(validation_alias="turnId", serialization_alias="turnId")
    "The open turn the call belongs to."
    query: str
    "The turn's current work: what to recall for, 1 to 2000 characters."
    execution_id: Optional[str] = Field(validation_alias="executionId", serialization_alias="executionId", default=None)
    "Whose conversation the records are for: a helper's execution; null or omitted: the agent's own run of the turn."
    invocation_id: Optional[str] = Field(validation_alias="invocationId", serialization_alias="invocationId", default=None)
    "The model call the recall is for, if recorded; null: none."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class RecordEventsInput(BaseModel):
    """Events of a turn's conversation to record."""

    turn_id: str = Field(validation_alias="turnId", serialization_alias="turnId")
    "The open turn."
    events: list["ConversationEventInput"]
    "The events, in the order they happened."
    execution_id: Optional[str] = Field(validation_alias="executionId", serialization_alias="executionId", default=None)
    "Whose conversation this is: a helper's execution; null or omitted: the turn's own."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class RecordInvocationInput(BaseModel):
    """A model call to record."""

    execution_id: str = Field(validation_alias="executionId", serialization_alias="executionId")
    "The execution of an open turn the call was made in."
    purpose: InvocationPurpose
    "What the call was for: TURN or MEMORY (EMBED is the server's own)."
    model: str
    "The model's name, not empty."
    input_tokens: Optional[int] = Field(validation_alias="inputTokens", serialization_alias="inputTokens", default=None)
    "Tokens the model read, 0 or more. Null or omitted: 0."
    output_tokens: Optional[int] = Field(validation_alias="outputTokens", serialization_alias="outputTokens", default=None)
    "Tokens the model wrote, 0 or more. Null or omitted: 0."
    latency_ms: Optional[int] = Field(validation_alias="latencyMs", serialization_alias="latencyMs", default=None)
    "How long the call took, in milliseconds, from the request to its last token: 0 to 86400000. Record the call when it ends. Null or omitted: not known."


class RollbackTurnInput(BaseModel):
    """The turn to roll back."""

    turn_id: str = Field(validation_alias="turnId", serialization_alias="turnId")
    "The open turn."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class SearchHistoryInput(BaseModel):
    """The search_history tool's arguments: a query, or ids."""

    turn_id: str = Field(validation_alias="turnId", serialization_alias="turnId")
    "The open turn the call belongs to."
    query: Optional[str] = None
    "The text to rank parts by; give it or ids."
    ids: Optional[list[str]] = None
    "Read these events whole instead of searching."
    limit: Optional[int] = None
    "At most this many results (default 5, at most 50)."
    execution_id: Optional[str] = Field(validation_alias="executionId", serialization_alias="executionId", default=None)
    "The calling execution (a helper or program of the turn may call the tool); null or omitted: the turn's own."
    invocation_id: Optional[str] = Field(validation_alias="invocationId", serialization_alias="invocationId", default=None)
    "The model call that asked for the tool, if recorded; null or omitted: none."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class SearchMemoryInput(BaseModel):
    """The search_memory tool's arguments."""

    turn_id: str = Field(validation_alias="turnId", serialization_alias="turnId")
    "The open turn the call belongs to."
    query: Optional[str] = None
    "The text to rank records by, 1 to 2000 characters; null or omitted: list records newest first."
    kind: Optional[str] = None
    "Only records of this kind."
    labels: Optional[list["LabelInput"]] = None
    "Only records with every one of these label values."
    ids: Optional[list[str]] = None
    "Only these records (read them by id)."
    limit: Optional[int] = None
    "How many results, 1 to 100; null or omitted: harness.memory.search.max_results (5 unless configured)."
    after: Optional[str] = None
    "Without a query: the nextCursor of the previous page."
    execution_id: Optional[str] = Field(validation_alias="executionId", serialization_alias="executionId", default=None)
    "The calling execution (a helper or program of the turn may call the tool); null or omitted: the turn's own."
    invocation_id: Optional[str] = Field(validation_alias="invocationId", serialization_alias="invocationId", default=None)
    "The model call that asked for the tool, if recorded; null or omitted: none."
    idempotency_key: Optional[str] = Field(validation_alias="idempotencyKey", serialization_alias="idempotencyKey", default=None)
    "A key of the caller's choosing, 1 to 200 characters: a second call with the same key and the same input returns the first call's answer without doing anything again; the same key with another input is CONFLICT. Null or omitted: no key."


class SessionFilter(BaseModel):
    """Which sessions to list; every field given must match, a null field matches every session."""

    started_after: Optional[datetime] = Field(validation_alias="startedAfter", serialization_alias="startedAfter", default=None)
    "Only sessions created at or after this time."
    started_before: Optional[datetime] = Field(validation_alias="startedBefore", serialization_alias="startedBefore", default=None)
    "Only sessions created before this time."
    has_failed_turns: Optional[bool] = Field(validation_alias="hasFailedTurns", serialization_alias="hasFailedTurns", default=None)
    "True: only sessions with a turn that failed or rolled back; false: only sessions without one."
    preview: Optional[bool] = None
    "True: only sessions with a turn in preview mode; false: only sessions without one."


class StartExecutionInput(BaseModel):
    """A helper or program to record inside a turn."""

    turn_id: str = Field(validation_alias="turnId", serialization_alias="turnId")
    "The open turn the call belongs to."
    kind: HelperKind
    "What it is."
    name: str
    "Its name, not blank."
    parent_execution_id: Optional[str] = Field(validation_alias="parentExecutionId", serialization_alias="parentExecutionId", default=None)
    "The execution of the turn that starts it (not a native tool call); null or omitted: the turn's own."


class ToolCallInput(BaseModel):
    """A tool call an agent reply made."""

    id: str
    "The call's id, unique in the turn."
    name: str
    "The tool's name."
    arguments: Optional[Any] = None
    "What the call was given, a JSON object; null: {}."


AddMemoryInput.model_rebuild()
ApplyMemoryReviewInput.model_rebuild()
CompareMemoryCandidatesInput.model_rebuild()
ConversationEventInput.model_rebuild()
MemoryCandidateInput.model_rebuild()
MemoryDecisionInput.model_rebuild()
MemoryRecordFilter.model_rebuild()
RecordEventsInput.model_rebuild()
SearchMemoryInput.model_rebuild()
