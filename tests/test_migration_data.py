"""Downgrades and the data in the database (item 7 of issue 22; docs/operations.md,
"Downgrades"): a step that would destroy data refuses, naming it, with nothing
changed, unless forced; a step that can carry its data carries it, so that a round trip
gives back what an API reader saw."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import psycopg
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL

from resolvers.schema import build_schema
from server import migrate
from server.cli import main
from server.database import Database
from server.embedding import Embedder
from server.settings import Settings
from tests.api.history_scenario import user
from tests.api.review_scenario import ReviewScenario, decide
from tests.api.scenario import memory_config
from tests.conftest import Api

_DELETE = "mutation($id: ID!) { deleteAgentMemory(input: {id: $id}) { record { id } } }"
# what an API reader sees of a record and its history
_SEEN = """query($id: ID!) { agentMemory(id: $id) {
  status current { id number status summary }
  versions { id number status summary content kind labels createdAt
    writtenBy { execution { id } turn { id }
      apiDeletion { principal { id } caller createdAt } } } } }"""


def _dsn(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
def fresh_url(database_url: URL) -> Iterator[URL]:
    name = f"agent_memory_down_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_dsn(database_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield database_url.set(database=name)
    with psycopg.connect(_dsn(database_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
async def api_on(fresh_url: URL, settings: Settings, embedder: Embedder) -> AsyncIterator[Api]:
    migrate.upgrade(fresh_url)
    own = settings.model_copy(
        update={"database_url": fresh_url.render_as_string(hide_password=False)}
    )
    database = Database(own)
    await database.connect()
    yield Api(schema=build_schema(), database=database, embedder=embedder, settings=own)
    await database.dispose()


async def _life(api: Api, *, review: bool) -> dict[str, str]:
    """A record deleted through the API, another kept, and (``review``) a review applied."""
    config = memory_config()
    config["harness"]["history"] = {"index": "messages"}
    s = ReviewScenario(api)
    await s.agent(config)
    session = await s.session()
    deleted = await s.committed("The vault code is 4711", session)
    kept = await s.committed("The customer prefers email", session)
    await api.ok(_DELETE, id=deleted)
    if review:
        turn = await s.turn(session)
        await s.record(turn, user("I moved to Porto"))
        await s.reviewed(turn, decide("ADD", "The user lives in Porto"))
        await s.commit(turn)
    return {"deleted": deleted, "kept": kept}


def _count(url: URL, sql: str) -> int:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(conn.scalar(text(sql)) or 0)
    finally:
        engine.dispose()


def _revision(url: URL) -> str:
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return str(conn.scalar(text("SELECT version_num FROM alembic_version")))
    finally:
        engine.dispose()


async def _seen(api: Api, ids: dict[str, str]) -> dict[str, Any]:
    await api.database.engine.dispose()  # type: ignore[union-attr]  # the schema changed
    return {name: (await api.ok(_SEEN, id=id_))["agentMemory"] for name, id_ in ids.items()}


async def test_a_downgrade_that_destroys_reviews_refuses_unless_forced(
    api_on: Api, fresh_url: URL
) -> None:
    """Going below 0008 drops every review (and so each session's review watermark):
    refused, naming them, and nothing changed; ``force`` goes down, and the way back up
    brings back every API deletion as it was."""
    ids = await _life(api_on, review=True)
    before = await _seen(api_on, ids)
    head = _revision(fresh_url)
    with pytest.raises(migrate.DataLossError) as refused:
        migrate.downgrade(fresh_url, "0004")
    assert "would destroy 1 memory reviews" in refused.value.message
    assert "(0008)" in refused.value.message and "--force" in refused.value.message
    assert _revision(fresh_url) == head
    assert _count(fresh_url, "SELECT count(*) FROM memory_reviews") == 1
    migrate.downgrade(fresh_url, "0004", force=True)
    assert _revision(fresh_url) == "0004"
    migrate.upgrade(fresh_url)
    assert _count(fresh_url, "SELECT count(*) FROM memory_reviews") == 0
    assert await _seen(api_on, ids) == before


async def test_api_deletions_survive_the_round_trip_through_0006(
    api_on: Api, fresh_url: URL
) -> None:
    """0007 carries what it removes: down to 0006 is not refused, and back at head the
    deleted record reads exactly as before: its DELETED version, id, number, time,
    deleting principal and caller (it read as it was before its deletion)."""
    ids = await _life(api_on, review=False)
    before = await _seen(api_on, ids)
    assert before["deleted"]["current"]["status"] == "DELETED"
    migrate.downgrade(fresh_url, "0006")
    assert _count(fresh_url, "SELECT count(*) FROM memory_versions WHERE status = 'DELETED'") == 0
    migrate.upgrade(fresh_url)
    assert await _seen(api_on, ids) == before


async def test_going_below_0004_refuses_naming_the_deletions_and_the_rows(
    api_on: Api, fresh_url: URL, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """Down to base, through the CLI: one line naming what would be lost (who deleted
    what, and every table's rows), exit 1, nothing changed; with --force it goes."""
    await _life(api_on, review=False)
    await api_on.database.dispose()
    head = _revision(fresh_url)
    monkeypatch.setenv("DATABASE_URL", fresh_url.render_as_string(hide_password=False))
    assert main(["migrate", "base", "--down"]) == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("error (DATA_LOSS): downgrading to base would destroy ")
    assert "1 API deletions" in line and "(0004)" in line and "rows of agents (0001)" in line
    assert _revision(fresh_url) == head
    assert main(["migrate", "base", "--down", "--force"]) == 0
    assert _count(fresh_url, "SELECT count(*) FROM alembic_version") == 0


async def test_a_forced_downgrade_below_0004_leaves_deleted_records_reading_deleted(
    api_on: Api, fresh_url: URL, capsys: pytest.CaptureFixture[str], monkeypatch: Any
) -> None:
    """Down to 0001 and up again, forced: who deleted a record through the API, and when,
    are lost, as the refusal said; the record stays DELETED, and so does every reader of
    its version in force (its deletion is then an unknown caller's)."""
    ids = await _life(api_on, review=False)
    await api_on.database.dispose()
    monkeypatch.setenv("DATABASE_URL", fresh_url.render_as_string(hide_password=False))
    assert main(["migrate", "0001", "--down"]) == 1
    line = capsys.readouterr().err
    assert "1 API deletions: who deleted which record and when (the records stay DELETED;" in line
    assert "upgrading again gives each a deletion by an unknown caller" in line
    assert main(["migrate", "0001", "--down", "--force"]) == 0
    assert main(["migrate"]) == 0
    await api_on.database.connect()
    seen = await _seen(api_on, ids)
    deleted = seen["deleted"]
    assert deleted["status"] == deleted["current"]["status"] == "DELETED"
    deletion = deleted["versions"][-1]["writtenBy"]["apiDeletion"]
    assert deletion["principal"] is None and deletion["caller"].startswith("unknown")
    assert seen["kept"]["current"]["status"] == "ACTIVE"
