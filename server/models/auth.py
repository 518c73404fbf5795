"""Principals (API callers), policies and their grants, API deletions of memory, and
idempotency keys."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, CheckConstraint, Column, UniqueConstraint
from sqlmodel import Field, SQLModel

from server.models._columns import (
    created_at_field,
    fk,
    id_field,
    json_field,
    one_of,
    optional_time_field,
)


class Principal(SQLModel, table=True):
    """Who calls the API: an operator (admin), a dashboard/API client, or an agent
    runtime bound to one agent or namespace. Tokens are stored hashed."""

    __tablename__ = "principals"
    __table_args__ = (one_of("kind", ("admin", "client", "runtime"), name="principal_kind"),)

    id: uuid.UUID = id_field()
    kind: str
    name: str
    namespace: str | None = Field(default=None, index=True)
    agent_id: uuid.UUID | None = fk("agents.id", nullable=True)
    token_hash: str = Field(unique=True)
    token_prefix: str
    created_at: datetime = created_at_field()
    expires_at: datetime | None = optional_time_field()
    revoked_at: datetime | None = optional_time_field()


class Policy(SQLModel, table=True):
    __tablename__ = "policies"
    __table_args__ = (UniqueConstraint("namespace", "name"),)

    id: uuid.UUID = id_field()
    namespace: str
    name: str
    created_at: datetime = created_at_field()


class Grant(SQLModel, table=True):
    """A privilege on a resource pattern such as ``financial.AgentMemory.indexes.*``."""

    __tablename__ = "grants"
    __table_args__ = (
        UniqueConstraint("policy_id", "privilege", "pattern"),
        one_of("privilege", ("SELECT", "INSERT", "UPDATE", "DELETE"), name="grant_privilege"),
    )

    id: uuid.UUID = id_field()
    policy_id: uuid.UUID = fk("policies.id")
    privilege: str
    pattern: str
    created_at: datetime = created_at_field()


class PolicyBinding(SQLModel, table=True):
    """Attaches a policy to a link of a chain: a principal, an agent, or a tool."""

    __tablename__ = "policy_bindings"
    __table_args__ = (
        UniqueConstraint("policy_id", "subject_type", "subject"),
        one_of("subject_type", ("principal", "agent", "tool"), name="binding_subject_type"),
    )

    id: uuid.UUID = id_field()
    policy_id: uuid.UUID = fk("policies.id")
    subject_type: str
    subject: str = Field(index=True)
    created_at: datetime = created_at_field()


class MemoryDeletion(SQLModel, table=True):
    """A record deleted through the API (R71): who deleted it and when. The record's
    status becomes DELETED; it and its versions stay readable (R25)."""

    __tablename__ = "memory_deletions"

    id: uuid.UUID = id_field()
    agent_id: uuid.UUID = fk("agents.id")
    record_id: uuid.UUID = fk("memory_records.id")
    principal_id: uuid.UUID | None = fk("principals.id", nullable=True, ondelete="SET NULL")
    caller: str
    created_at: datetime = created_at_field()


class IdempotencyKey(SQLModel, table=True):
    """The first result of a runtime mutation sent with an idempotency key."""

    __tablename__ = "idempotency_keys"
    __table_args__ = (UniqueConstraint("caller", "operation", "key"),)

    id: uuid.UUID = id_field()
    caller: str
    operation: str
    key: str
    request_hash: str
    result: dict[str, Any] = json_field(nullable=False)
    created_at: datetime = created_at_field()


class GrantsVersion(SQLModel, table=True):
    """One row counting the changes of policies, grants and bindings
    (``server/services/policies.py``, migration 0009). A caller built from them stays good
    while this number and its principal's row are unchanged
    (:class:`server.services.callers.Callers`)."""

    __tablename__ = "grants_version"
    __table_args__ = (CheckConstraint("id = 1", name="grants_version_one_row"),)

    id: int = Field(default=1, primary_key=True, sa_column_kwargs={"autoincrement": False})
    version: int = Field(
        default=0, sa_column=Column(BigInteger, nullable=False, server_default="0")
    )
