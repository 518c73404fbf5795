"""Principals and bearer tokens: stored hashed, shown once, revocable, expiring, and
bound as the issue says (runtime → one agent or one namespace; R70 "the agent itself")."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import select, text
from sqlalchemy.ext.asyncio import AsyncSession

from server.database import Database
from server.errors import BadInputError, ConflictError, NotFoundError, UnauthenticatedError
from server.models import Agent, Principal
from server.services import auth


@pytest.fixture
async def db(database: Database) -> AsyncIterator[AsyncSession]:
    async with database.session() as session:
        yield session
        await session.rollback()


async def _agent(db: AsyncSession) -> Agent:
    agent = Agent(namespace=f"ns{uuid.uuid4().hex[:8]}", name="agent")
    db.add(agent)
    await db.flush()
    return agent


async def test_token_is_stored_as_sha256_with_a_short_prefix(db: AsyncSession) -> None:
    issued = await auth.create_principal(db, kind="client", name="dashboard")
    assert issued.token.startswith(auth.TOKEN_MARK)
    assert len(issued.token) >= 40
    row = await db.get(Principal, issued.principal.id)
    assert row is not None
    assert row.token_hash == hashlib.sha256(issued.token.encode()).hexdigest()
    assert row.token_prefix == issued.token[: auth.PREFIX_LENGTH]
    # the token itself is in no column of the table
    dump = await db.scalar(
        text("SELECT row_to_json(p)::text FROM principals p WHERE id = :id"),
        {"id": row.id},
    )
    assert issued.token not in dump


async def test_two_tokens_differ(db: AsyncSession) -> None:
    first = await auth.create_principal(db, kind="client", name="a")
    second = await auth.create_principal(db, kind="client", name="a")
    assert first.token != second.token
    assert first.principal.token_hash != second.principal.token_hash


async def test_authenticate_returns_the_principal_of_a_valid_token(db: AsyncSession) -> None:
    issued = await auth.create_principal(db, kind="admin", name="ops")
    principal = await auth.authenticate(db, token=issued.token)
    assert principal.id == issued.principal.id


@pytest.mark.parametrize(
    "token", ["", "Bearer x", "amk_", "amk_notatoken", "not-our-format", "amk_" + "A" * 43]
)
async def test_unknown_tokens_are_unauthenticated(db: AsyncSession, token: str) -> None:
    with pytest.raises(UnauthenticatedError) as caught:
        await auth.authenticate(db, token=token)
    assert caught.value.code == "UNAUTHENTICATED"


async def test_revoked_token_is_unauthenticated_and_revoking_twice_conflicts(
    db: AsyncSession,
) -> None:
    issued = await auth.create_principal(db, kind="client", name="old dashboard")
    revoked = await auth.revoke_principal(db, ref=issued.principal.token_prefix)
    assert revoked.revoked_at is not None
    with pytest.raises(UnauthenticatedError, match="revoked"):
        await auth.authenticate(db, token=issued.token)
    with pytest.raises(ConflictError):
        await auth.revoke_principal(db, ref=str(issued.principal.id))


async def test_token_expires_at_its_expiry(db: AsyncSession) -> None:
    expiry = datetime.now(UTC) + timedelta(hours=1)
    issued = await auth.create_principal(db, kind="client", name="temp", expires_at=expiry)
    before = await auth.authenticate(db, token=issued.token, now=expiry - timedelta(seconds=1))
    assert before.id == issued.principal.id
    with pytest.raises(UnauthenticatedError, match="expired"):
        await auth.authenticate(db, token=issued.token, now=expiry)


async def test_expiry_in_the_past_is_refused(db: AsyncSession) -> None:
    with pytest.raises(BadInputError):
        await auth.create_principal(
            db, kind="client", name="x", expires_at=datetime.now(UTC) - timedelta(seconds=1)
        )


async def test_runtime_token_is_bound_to_an_agent_or_a_namespace(db: AsyncSession) -> None:
    agent = await _agent(db)
    by_agent = await auth.create_principal(db, kind="runtime", name="rt", agent_id=agent.id)
    assert by_agent.principal.agent_id == agent.id
    assert by_agent.principal.namespace == agent.namespace
    by_ns = await auth.create_principal(db, kind="runtime", name="rt", namespace="financial")
    assert by_ns.principal.agent_id is None
    assert by_ns.principal.namespace == "financial"
    with pytest.raises(BadInputError):
        await auth.create_principal(db, kind="runtime", name="unbound")
    with pytest.raises(BadInputError):
        await auth.create_principal(
            db, kind="runtime", name="rt", agent_id=agent.id, namespace="elsewhere"
        )
    with pytest.raises(NotFoundError):
        await auth.create_principal(db, kind="runtime", name="rt", agent_id=uuid.uuid4())


@pytest.mark.parametrize(
    ("kind", "namespace", "agent"),
    [
        ("admin", "financial", False),
        ("admin", None, True),
        ("client", None, True),
        ("operator", None, False),
    ],
)
async def test_kinds_and_bindings_that_make_no_sense_are_refused(
    db: AsyncSession, kind: str, namespace: str | None, agent: bool
) -> None:
    agent_id = (await _agent(db)).id if agent else None
    with pytest.raises(BadInputError):
        await auth.create_principal(db, kind=kind, name="x", namespace=namespace, agent_id=agent_id)
    assert (await db.scalar(select(Principal).where(Principal.name == "x"))) is None  # type: ignore[arg-type]


async def test_list_hides_revoked_tokens_unless_asked(db: AsyncSession) -> None:
    kept = await auth.create_principal(db, kind="client", name="kept")
    gone = await auth.create_principal(db, kind="client", name="gone")
    await auth.revoke_principal(db, ref=str(gone.principal.id))
    active = {p.id for p in await auth.list_principals(db)}
    every = {p.id for p in await auth.list_principals(db, include_revoked=True)}
    assert kept.principal.id in active and gone.principal.id not in active
    assert {kept.principal.id, gone.principal.id} <= every


async def test_find_principal_by_unknown_reference_is_not_found(db: AsyncSession) -> None:
    with pytest.raises(NotFoundError):
        await auth.find_principal(db, ref="amk_nothing")
    with pytest.raises(NotFoundError):
        await auth.find_principal(db, ref=str(uuid.uuid4()))


async def test_ensure_admin_issues_one_admin_only_when_none_is_usable(db: AsyncSession) -> None:
    # hide every admin other tests made, inside this rolled-back transaction
    await db.execute(text("UPDATE principals SET revoked_at = now() WHERE kind = 'admin'"))
    first = await auth.ensure_admin(db)
    assert first is not None and first.principal.kind == "admin"
    assert await auth.ensure_admin(db) is None
    await auth.revoke_principal(db, ref=str(first.principal.id))
    again = await auth.ensure_admin(db)
    assert again is not None and again.token != first.token
