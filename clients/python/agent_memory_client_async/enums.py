from enum import Enum


class ConversationEventType(str, Enum):
    USER_MESSAGE = "USER_MESSAGE"
    AGENT_MESSAGE = "AGENT_MESSAGE"
    TOOL_RESULT = "TOOL_RESULT"
    TOOL_ERROR = "TOOL_ERROR"
    SKILL_LOAD = "SKILL_LOAD"
    RETRIEVAL = "RETRIEVAL"


class ExecutionKind(str, Enum):
    TURN = "TURN"
    TOOL = "TOOL"
    HELPER = "HELPER"
    PROGRAM = "PROGRAM"


class ExecutionStatus(str, Enum):
    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


class HelperKind(str, Enum):
    HELPER = "HELPER"
    PROGRAM = "PROGRAM"


class HistoryRole(str, Enum):
    USER = "USER"
    AGENT = "AGENT"
    TOOL = "TOOL"


class InvocationPurpose(str, Enum):
    TURN = "TURN"
    MEMORY = "MEMORY"
    EMBED = "EMBED"


class ListOrder(str, Enum):
    NEWEST_FIRST = "NEWEST_FIRST"
    OLDEST_FIRST = "OLDEST_FIRST"


class MemoryDecisionAction(str, Enum):
    ADD = "ADD"
    REPLACE = "REPLACE"
    DELETE = "DELETE"
    SKIP = "SKIP"


class MemoryReviewStatus(str, Enum):
    OPEN = "OPEN"
    APPLIED = "APPLIED"


class MemoryStatus(str, Enum):
    ACTIVE = "ACTIVE"
    SUPERSEDED = "SUPERSEDED"
    DELETED = "DELETED"


class OutputUseKind(str, Enum):
    RETRIEVED = "RETRIEVED"


class PrincipalKind(str, Enum):
    ADMIN = "ADMIN"
    CLIENT = "CLIENT"
    RUNTIME = "RUNTIME"


class Scope(str, Enum):
    SESSION = "SESSION"
    AGENT = "AGENT"


class SearchMode(str, Enum):
    HYBRID = "HYBRID"
    LEXICAL = "LEXICAL"
    VECTOR = "VECTOR"


class TranscriptEventKind(str, Enum):
    USER_MESSAGE = "USER_MESSAGE"
    AGENT_MESSAGE = "AGENT_MESSAGE"
    TOOL_RESULT = "TOOL_RESULT"
    TOOL_ERROR = "TOOL_ERROR"
    SKILL_LOAD = "SKILL_LOAD"
    RETRIEVAL = "RETRIEVAL"
    MEMORY_PINNED = "MEMORY_PINNED"
    USAGE = "USAGE"


class TurnStatus(str, Enum):
    OPEN = "OPEN"
    COMMITTED = "COMMITTED"
    ROLLED_BACK = "ROLLED_BACK"
    FAILED = "FAILED"
