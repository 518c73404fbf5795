"""Principals and their bearer tokens (DESIGN.md §1: Principal).

A principal is who calls the API: an operator (``admin``), a dashboard or API
``client``, or an agent ``runtime`` bound to one agent or to a namespace. The
runtime token is what makes a call "the agent itself" (R70); what anyone else
may read is decided by the policies bound to the principal (see
:mod:`server.services.policies` and :mod:`server.services.chain`).

A token is 32 random bytes from :mod:`secrets`. It is shown once, when it is
issued; the database keeps its SHA-256 and a short prefix to recognise it in
listings. Tokens can expire and can be revoked; neither can be undone.
"""

from __future__ import annotations

import hashlib
import re
import secrets
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, TypeAlias

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.errors import BadInputError, ConflictError, NotFoundError, UnauthenticatedError
from server.models import Agent, Principal

PrincipalKind: TypeAlias = Literal["admin", "client", "runtime"]
KINDS: tuple[PrincipalKind, ...] = ("admin", "client", "runtime")
TOKEN_MARK = "amk_"
PREFIX_LENGTH = len(TOKEN_MARK) + 8
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 _.@-]{0,99}")


@dataclass(frozen=True, slots=True)
class IssuedToken:
    """A new principal and its token: the only time the token is ever seen."""

    principal: Principal
    token: str


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def new_token() -> str:
    return TOKEN_MARK + secrets.token_urlsafe(32)


def _now() -> datetime:
    return datetime.now(UTC)


async def create_principal(
    db: AsyncSession,
    *,
    kind: str,
    name: str,
    namespace: str | None = None,
    agent_id: uuid.UUID | None = None,
    expires_at: datetime | None = None,
) -> IssuedToken:
    """Issue a token. A runtime is bound to exactly one agent or one namespace; a
    client may name the namespace it serves; an admin is bound to nothing."""
    if kind not in KINDS:
        raise BadInputError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}", field="kind")
    if not _NAME.fullmatch(name):
        raise BadInputError(
            "name must be 1 to 100 letters, digits, spaces or ._@- characters", field="name"
        )
    if kind == "admin" and (namespace or agent_id):
        raise BadInputError("an admin token is bound to no namespace or agent", field="kind")
    if kind == "client" and agent_id:
        raise BadInputError("a client token is not bound to an agent", field="agent")
    if agent_id is not None:
        if kind != "runtime":
            raise BadInputError("only a runtime token is bound to an agent", field="agent")
        agent = await db.get(Agent, agent_id)
        if agent is None:
            raise NotFoundError(f"no agent with id {agent_id}", field="agent")
        if namespace not in (None, agent.namespace):
            raise BadInputError(
                f"agent {agent_id} is in namespace {agent.namespace}, not {namespace}",
                field="namespace",
            )
        namespace = agent.namespace
    elif kind == "runtime" and not namespace:
        raise BadInputError("a runtime token is bound to an agent or a namespace", field="agent")
    if expires_at is not None:
        if expires_at.tzinfo is None:
            expires_at = expires_at.replace(tzinfo=UTC)
        if expires_at <= _now():
            raise BadInputError("expires_at is in the past", field="expiresAt")
    token = new_token()
    principal = Principal(
        kind=kind,
        name=name,
        namespace=namespace,
        agent_id=agent_id,
        token_hash=hash_token(token),
        token_prefix=token[:PREFIX_LENGTH],
        expires_at=expires_at,
    )
    db.add(principal)
    await db.flush()
    await db.refresh(principal)
    return IssuedToken(principal=principal, token=token)


async def authenticate(db: AsyncSession, *, token: str, now: datetime | None = None) -> Principal:
    """The principal a bearer token names; UNAUTHENTICATED if it is unknown, revoked or
    expired."""
    if not token.startswith(TOKEN_MARK):
        raise UnauthenticatedError("invalid token")
    principal: Principal | None = await db.scalar(
        select(Principal).where(col(Principal.token_hash) == hash_token(token))
    )
    return usable(principal, now=now)


def usable(principal: Principal | None, *, now: datetime | None = None) -> Principal:
    """The principal a token found, if it may call: UNAUTHENTICATED if there is none, or
    it is revoked or expired."""
    if principal is None:
        raise UnauthenticatedError("invalid token")
    if principal.revoked_at is not None:
        raise UnauthenticatedError("token revoked")
    if principal.expires_at is not None and principal.expires_at <= (now or _now()):
        raise UnauthenticatedError("token expired")
    return principal


async def list_principals(db: AsyncSession, *, include_revoked: bool = False) -> list[Principal]:
    stmt = select(Principal).order_by(col(Principal.created_at))
    if not include_revoked:
        stmt = stmt.where(col(Principal.revoked_at).is_(None))
    return list((await db.scalars(stmt)).all())


async def find_principal(db: AsyncSession, *, ref: str) -> Principal:
    """A principal by id or by the token prefix that listings show."""
    try:
        principal = await db.get(Principal, uuid.UUID(ref))
    except ValueError:
        rows = (
            await db.scalars(select(Principal).where(col(Principal.token_prefix) == ref).limit(2))
        ).all()
        if len(rows) > 1:
            raise ConflictError(f"several tokens start with {ref}; use the id") from None
        principal = rows[0] if rows else None
    if principal is None:
        raise NotFoundError(f"no token {ref}", field="principal")
    return principal


async def revoke_principal(db: AsyncSession, *, ref: str) -> Principal:
    """Revoke a token for good; its next request is UNAUTHENTICATED."""
    principal = await find_principal(db, ref=ref)
    if principal.revoked_at is not None:
        raise ConflictError(f"token {principal.token_prefix} is already revoked")
    principal.revoked_at = _now()
    await db.flush()
    return principal


async def ensure_admin(db: AsyncSession, *, name: str = "first admin") -> IssuedToken | None:
    """Issue an admin token when no usable admin exists (the first start in dev mode)."""
    usable = await db.scalar(
        select(func.count())
        .select_from(Principal)
        .where(
            col(Principal.kind) == "admin",
            col(Principal.revoked_at).is_(None),
            (col(Principal.expires_at).is_(None)) | (col(Principal.expires_at) > _now()),
        )
    )
    if usable:
        return None
    return await create_principal(db, kind="admin", name=name)
