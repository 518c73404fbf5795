"""Agents, their immutable versions (R1-R8 validated at publish time) and sessions."""

from __future__ import annotations

import uuid
from typing import Any

from sqlalchemy import bindparam, select, true
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased
from sqlmodel import col

from server.domain.config import HarnessConfig, parse_config
from server.domain.config_versions import validate_new_version
from server.domain.text import check_name, check_text
from server.errors import BadInputError, NotAllowedError, NotFoundError
from server.models import Agent, AgentVersion, Session
from server.services.lookup import get
from server.storage.built import built_once
from server.storage.owners import Kept, agent_of, remember
from server.storage.rows import insert_unique


async def create_agent(
    db: AsyncSession, *, namespace: str, name: str, sessionless: bool = False
) -> Agent:
    agent = Agent(
        namespace=check_name(namespace, "namespace"),
        name=check_name(name, "name"),
        sessionless=sessionless,
    )
    await insert_unique(db, agent, f"agent {namespace}.{name} already exists")
    return agent


# (version id, sessionless) -> its configuration, parsed
_parsed: Kept[tuple[uuid.UUID, bool], HarnessConfig] = Kept(4096)


def config_of(version: AgentVersion, agent: Agent) -> HarnessConfig:
    """The configuration of ``version``, parsed once a process: a version never changes."""
    key = (version.id, agent.sessionless)
    config = _parsed.get(key)
    if config is None:
        config = parse_config(version.config, sessionless=agent.sessionless)
        _parsed.put(key, config)
    return config


async def publish_version(
    db: AsyncSession, *, agent_id: uuid.UUID, config: object, label: str | None = None
) -> AgentVersion:
    """Publish an immutable version; R4 is checked against every earlier version."""
    agent = await get(db, Agent, agent_id, lock=True)
    if not isinstance(config, dict):
        raise BadInputError("config must be a JSON object", field="config")
    earlier = (
        await db.scalars(
            select(AgentVersion)
            .where(col(AgentVersion.agent_id) == agent_id)
            .order_by(col(AgentVersion.number))
        )
    ).all()
    validate_new_version(
        config,
        sessionless=agent.sessionless,
        previous=[config_of(v, agent) for v in earlier],
    )
    version = AgentVersion(
        agent_id=agent_id,
        number=(earlier[-1].number + 1) if earlier else 1,
        label=label,
        config=config,
    )
    db.add(version)
    await db.flush()
    return version


# each turn and tool call runs one of these
@built_once
def _version_and_agent() -> Any:
    return (
        select(Agent, AgentVersion)
        .join(AgentVersion, col(AgentVersion.agent_id) == col(Agent.id))
        .where(
            col(AgentVersion.id) == bindparam("version"),
            col(AgentVersion.agent_id) == bindparam("agent"),
        )
    )


@built_once
def _session_to_begin() -> Any:
    newest = (
        select(AgentVersion)
        .where(col(AgentVersion.agent_id) == bindparam("agent"))
        .order_by(col(AgentVersion.number).desc())
        .limit(1)
        .lateral("newest")
    )
    latest = aliased(AgentVersion, newest)
    return (
        select(Session, Agent, latest)
        .join(Agent, col(Agent.id) == col(Session.agent_id))
        .outerjoin(latest, true())
        .where(col(Session.id) == bindparam("session"), col(Session.agent_id) == bindparam("agent"))
        .with_for_update(of=Session)
    )


async def version_and_agent(
    db: AsyncSession, version_id: uuid.UUID, *, agent_id: uuid.UUID
) -> tuple[AgentVersion, Agent]:
    """An agent's version and the agent, in one statement (a turn names its version)."""
    agent, version = (
        await db.execute(_version_and_agent(), {"version": version_id, "agent": agent_id})
    ).one()
    return version, agent


async def session_to_begin(
    db: AsyncSession, session_id: uuid.UUID
) -> tuple[Session, Agent, AgentVersion | None]:
    """A session, locked (its turns are numbered one at a time), with its agent and the
    agent's latest version (``None`` before the first is published), in one statement."""
    agent_id = await agent_of(db, Session, session_id)
    row = (
        await db.execute(_session_to_begin(), {"session": session_id, "agent": agent_id})
    ).first()
    if row is None:
        raise NotFoundError(f"no session with id {session_id}")
    session, agent, version = row
    return session, agent, version


async def latest_version(db: AsyncSession, *, agent_id: uuid.UUID) -> AgentVersion:
    version: AgentVersion | None = await db.scalar(
        select(AgentVersion)
        .where(col(AgentVersion.agent_id) == agent_id)
        .order_by(col(AgentVersion.number).desc())
        .limit(1)
    )
    if version is None:
        raise NotFoundError("the agent has no published version; publish one first")
    return version


async def create_session(
    db: AsyncSession, *, agent_id: uuid.UUID, external_id: str | None = None
) -> Session:
    agent = await get(db, Agent, agent_id)
    if agent.sessionless:
        raise NotAllowedError("this agent runs without sessions; begin turns on the agent")
    if external_id is not None:
        check_text(external_id, field="externalId", maximum=200)
    session = Session(agent_id=agent_id, external_id=external_id)
    await insert_unique(db, session, f"a session with externalId {external_id!r} exists")
    remember(db, session.id, agent_id)
    return session
