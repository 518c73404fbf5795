"""Domain errors: a small hierarchy of values with codes.

Every expected failure (R24 refusals, grants, not found, conflicts, bad input)
is raised as one of these. ``resolvers.errors`` maps them, in one place, to
GraphQL errors carrying ``extensions.code``; anything else is masked.
"""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """Base of every error a client may see. ``code`` becomes ``extensions.code``."""

    code = "INTERNAL"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def extensions(self) -> dict[str, Any]:
        return {"code": self.code, **self.details}


class NotFoundError(DomainError):
    """The named object does not exist, or the caller may not know that it does."""

    code = "NOT_FOUND"


class BadInputError(DomainError):
    """An argument is malformed or out of range."""

    code = "BAD_INPUT"


class InvalidConfigError(DomainError):
    """An agent version's configuration breaks R1–R8; ``field`` names the offending path."""

    code = "INVALID_CONFIG"

    def __init__(self, message: str, *, field: str) -> None:
        super().__init__(message, field=field)
        self.field = field


class NotAllowedError(DomainError):
    """The configuration, the caller's role (R23) or a grant does not allow the call (R24)."""

    code = "NOT_ALLOWED"


class ConflictError(DomainError):
    """The object changed under the call: a record no longer ACTIVE, a turn not open,
    an idempotency key reused with other input."""

    code = "CONFLICT"


class UnauthenticatedError(DomainError):
    """No valid credentials were presented."""

    code = "UNAUTHENTICATED"


class ForbiddenError(DomainError):
    """Credentials are valid but the policy chain does not grant the privilege (R70, R71)."""

    code = "FORBIDDEN"


class OutcomeUnknownError(DomainError):
    """A COMMIT was sent and its answer lost (the connection dropped): the call's effect
    may or may not be kept. A retry with the same idempotency key tells which."""

    code = "OUTCOME_UNKNOWN"


class UnavailableError(DomainError):
    """The database cannot be reached (down, restarting, refusing connections): a
    retryable outage, answered with HTTP 503, never a bug's INTERNAL."""

    code = "UNAVAILABLE"
