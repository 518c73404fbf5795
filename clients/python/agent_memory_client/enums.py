from enum import Enum


class ConversationEventType(str, Enum):
    USER_MESSAGE = "USER_MESSAGE"
    AGENT_MESSAGE = "AGENT_MESSAGE"
    TOOL_RESULT = "TOOL_RESULT"
    TOOL_ERROR = "TOOL_ERROR"
    SKILL_LOAD = "SKILL_LOAD"
    RETRIEVAL = "RETRIEVAL"


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


class Scope(str, Enum):
    SESSION = "SESSION"
    AGENT = "AGENT"
