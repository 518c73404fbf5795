"""The closed sets of stored values the types and inputs share, as GraphQL enums."""

from __future__ import annotations

from enum import Enum

import strawberry

# Closed sets of stored values. A member's value is the value as stored (the CHECK
# constraints of server.models); GraphQL shows its name.


@strawberry.enum(description="The order of a list by time.")
class ListOrder(Enum):
    NEWEST_FIRST = strawberry.enum_value("newest", description="The newest first.")
    OLDEST_FIRST = strawberry.enum_value("oldest", description="The oldest first.")


@strawberry.enum(description="Who a memory record is for.")
class Scope(Enum):
    _value_: str  # the stored value

    SESSION = strawberry.enum_value(
        "SESSION", description="The session that wrote it: recalled and searched only there."
    )
    AGENT = strawberry.enum_value(
        "AGENT", description="The agent: recalled and searched in every session of the agent."
    )


@strawberry.enum(description="Where a memory record or version stands.")
class MemoryStatus(Enum):
    _value_: str  # the stored value

    ACTIVE = strawberry.enum_value("ACTIVE", description="In force: recalled and searched.")
    SUPERSEDED = strawberry.enum_value(
        "SUPERSEDED", description="Replaced by a newer record that corrects it."
    )
    DELETED = strawberry.enum_value(
        "DELETED", description="Deleted: still readable by id, never recalled or searched."
    )


@strawberry.enum(description="Where a turn stands.")
class TurnStatus(Enum):
    _value_: str  # the stored value

    OPEN = strawberry.enum_value("open", description="Begun and not yet ended.")
    COMMITTED = strawberry.enum_value(
        "committed", description="Ended by commitTurn: its memory is published."
    )
    ROLLED_BACK = strawberry.enum_value(
        "rolled_back", description="Ended by rollbackTurn: its memory is discarded."
    )
    FAILED = strawberry.enum_value(
        "failed", description="Ended by failTurn: its memory is discarded; it may be retried."
    )


@strawberry.enum(description="What an execution records.")
class ExecutionKind(Enum):
    _value_: str  # the stored value

    TURN = strawberry.enum_value("turn", description="The agent's own run of a turn.")
    TOOL = strawberry.enum_value("tool", description="A call of a native tool.")
    HELPER = strawberry.enum_value("helper", description="A helper (subagent) the turn ran.")
    PROGRAM = strawberry.enum_value("program", description="A program the turn ran.")


@strawberry.enum(description="Where an execution stands.")
class ExecutionStatus(Enum):
    _value_: str  # the stored value

    RUNNING = strawberry.enum_value("running", description="Started and not yet ended.")
    SUCCEEDED = strawberry.enum_value("succeeded", description="Ended without an error.")
    FAILED = strawberry.enum_value("failed", description="Ended with an error (see error).")


@strawberry.enum(description="What a model call was for.")
class InvocationPurpose(Enum):
    _value_: str  # the stored value

    TURN = strawberry.enum_value("turn", description="The turn's own work.")
    MEMORY = strawberry.enum_value("memory", description="A memory review at a turn's end.")
    EMBED = strawberry.enum_value(
        "embed",
        description="The embedding of a memory or history search, recorded by the server "
        "itself; no usage limit counts it, and recordInvocation refuses it.",
    )


@strawberry.enum(description="What a transcript event records.")
class TranscriptEventKind(Enum):
    _value_: str  # the stored value

    USER_MESSAGE = strawberry.enum_value(
        "message.user", description="The incoming message, as the agent received it."
    )
    AGENT_MESSAGE = strawberry.enum_value(
        "message.agent", description="A reply of the agent, with the tool calls it made."
    )
    TOOL_RESULT = strawberry.enum_value("tool.result", description="A tool call's result.")
    TOOL_ERROR = strawberry.enum_value("tool.error", description="A tool call's error.")
    SKILL_LOAD = strawberry.enum_value("skill.load", description="A skill the agent loaded.")
    RETRIEVAL = strawberry.enum_value(
        "retrieval", description="Content the runtime retrieved and put before the model."
    )
    MEMORY_PINNED = strawberry.enum_value(
        "memory.pinned",
        description="The turn's instructions as given: the pinned record versions they "
        "list (lines, versions, omitted) and the lines that follow them (notes).",
    )
    USAGE = strawberry.enum_value(
        "usage", description="A model call the server made, such as a search's embedding."
    )


@strawberry.enum(description="What kind of principal a credential belongs to.")
class PrincipalKind(Enum):
    _value_: str  # the stored value

    ADMIN = strawberry.enum_value("admin", description="An administrator: may do everything.")
    CLIENT = strawberry.enum_value("client", description="A dashboard or another application.")
    RUNTIME = strawberry.enum_value(
        "runtime", description="The runtime of one agent, acting for it."
    )
