"""Every downgrade step, on a database holding every kind of row (docs/operations.md,
"Downgrades"): going down one step and up again gives back every row of every table, or
the step refuses unless forced, its message naming what it destroys, counted, and the
forced round trip changes nothing else.

The database is made through the API: records active, superseded, deleted by a tool
and through the API, pinned, of a preview turn (a preview deletion among them); a
review applied; kept history and its BM25 postings; output uses and a recall's digest;
a rolled-back, a failed and an open turn with what it staged; idempotency keys; tokens,
policies, grants and bindings. Each step is taken from the rows as the steps above it
left them, so that a round trip from any revision to head is lossless when each step's
is, and loses exactly what the steps' messages name when not.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL

from resolvers.schema import build_schema
from server import migrate
from server.database import Database
from server.embedding import Embedder
from server.settings import Settings
from tests.api.history_scenario import agent, result, user
from tests.api.review_scenario import ReviewScenario, decide
from tests.api.scenario import ADD, DELETE, READ, memory_config
from tests.auth_helpers import bearer
from tests.conftest import Api

_API_DELETE = "mutation($id: ID!) { deleteAgentMemory(input: {id: $id}) { record { id } } }"
_RECALL = """mutation($turn: ID!, $q: String!) {
  recall(input: {turnId: $turn, query: $q}) { execution { id } } }"""
_SEARCH = """mutation($turn: ID!, $q: String!, $key: String) {
  searchMemory(input: {turnId: $turn, query: $q, idempotencyKey: $key}) { execution { id } } }"""
# what each lossy step destroys, as its message names it, and the tables a forced round
# trip through it may change (migrations/versions/*, note_losses)
LOSSES = {
    "0008": (r"(\d+) memory reviews", {"memory_reviews", "sessions"}),
    "0004": (
        r"(\d+) API deletions",
        {"memory_deletions", "memory_versions", "memory_records", "memory_postings"},
    ),
}


# what a step makes again on the way up, differently by design: the grants' change
# counter restarts from the clock, so that no caller a server kept before matches it
RENEWED = {"0010": {"grants_version"}}


def _dsn(url: URL) -> str:
    return url.set(drivername="postgresql").render_as_string(hide_password=False)


@pytest.fixture
def fresh_url(database_url: URL) -> Iterator[URL]:
    name = f"agent_memory_trip_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(_dsn(database_url), autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    yield database_url.set(database=name)
    with psycopg.connect(_dsn(database_url), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


async def _every_kind_of_row(api: Api) -> dict[str, int]:
    """The rows; what the lossy steps will find of them."""
    config = memory_config(pinned=200)
    config["harness"]["history"] = {"index": "messages_and_tools"}
    s = ReviewScenario(api)
    await s.agent(config)
    session = await s.session()
    kept = await s.committed("The customer prefers email", session, pinned=True)
    old = await s.committed("The customer lives in Lisbon", session)
    by_api = await s.committed("The vault code is 4711", session)
    turn = await s.turn(session)
    await s.record(turn, user("I moved to Porto, and forget the fax number"))
    await api.ok(ADD, turn=turn, summary="The customer lives in Porto", replaces=old)
    fax = await s.add_id(turn, "The fax number is 555")
    await api.ok(DELETE, turn=turn, id=fax)
    await api.ok(READ, turn=turn, id=kept)
    await api.ok(_SEARCH, turn=turn, q="where does the customer live", key="k1")
    await api.ok(_RECALL, turn=turn, q="customer email")
    await s.record(turn, agent("Noted.", ("c1", "weather", {"city": "Porto"})), result("c1", "sun"))
    await s.reviewed(turn, decide("ADD", "The user moved in spring"))
    await s.commit(turn)
    await api.ok(_API_DELETE, id=by_api)
    preview = await s.turn(session, preview=True)
    await s.add_id(preview, "A preview fact")
    await api.ok(DELETE, turn=preview, id=kept)
    await s.commit(preview)
    for end in ("rollback", "fail"):
        ended = await s.turn(session)
        await s.add_id(ended, f"Discarded by {end}")
        await (s.rollback(ended) if end == "rollback" else api.ok(_FAIL, turn=ended))
    staged = await s.turn(session)
    await s.add_id(staged, "Staged by an open turn")
    await bearer(api, kind="client", grants=(("SELECT", "*"),))
    await bearer(api, kind="runtime", agent_id=s.agent_id)
    return {"0008": 1, "0004": 1}


_FAIL = """mutation($turn: ID!) { failTurn(input: {turnId: $turn, error: "x"}) { turn { id } } }"""


# a term's statistics row that counts no document says what no row says: the ones the
# writes leave behind are not rebuilt, and not compared
_MEANING = {"memory_term_stats": "docs <> 0", "history_term_stats": "docs <> 0"}


def _snapshot(url: URL) -> dict[str, str]:
    """Every table's rows (but Alembic's own), as a count and one digest."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            tables = conn.scalars(
                text(
                    "SELECT table_name FROM information_schema.tables WHERE table_schema ="
                    " 'public' AND table_type = 'BASE TABLE' AND table_name <> 'alembic_version'"
                )
            ).all()
            parts = [
                f"SELECT '{t}' AS name, count(*) AS n, coalesce(md5(string_agg(md5(x::text),"
                f" '' ORDER BY md5(x::text))), '') AS d FROM {t} x"
                f" WHERE {_MEANING.get(t, 'true')}"
                for t in tables
            ]
            rows = conn.execute(text(" UNION ALL ".join(parts))).all() if parts else []
    finally:
        engine.dispose()
    return {row.name: f"{row.n}:{row.d}" for row in rows}


def _incoherent(url: URL) -> int:
    """Records whose status and version in force disagree (a DELETED record must read
    DELETED wherever its version in force is read)."""
    engine = create_engine(url)
    try:
        with engine.connect() as conn:
            return int(
                conn.scalar(
                    text(
                        "SELECT count(*) FROM memory_records r JOIN memory_versions v"
                        " ON v.id = r.current_version_id WHERE r.status <> v.status"
                    )
                )
                or 0
            )
    finally:
        engine.dispose()


def _steps() -> list[tuple[str, str]]:
    """Each step down, from head: (its revision, the one below it)."""
    script = ScriptDirectory.from_config(migrate.alembic_config("postgresql://unused/x"))
    return [(r.revision, str(r.down_revision or "base")) for r in script.walk_revisions()]


async def test_every_step_down_and_up_gives_back_every_row_or_refuses_naming_its_losses(
    fresh_url: URL, settings: Settings, embedder: Embedder
) -> None:
    migrate.upgrade(fresh_url)
    own = settings.model_copy(
        update={"database_url": fresh_url.render_as_string(hide_password=False)}
    )
    database = Database(own)
    await database.connect()
    try:
        api = Api(schema=build_schema(), database=database, embedder=embedder, settings=own)
        found = await _every_kind_of_row(api)
    finally:
        await database.dispose()
    steps = _steps()
    assert steps[0][0] == "0014" and steps[-1] == ("0001", "base")
    for revision, below in steps[:-1]:  # the last, to base, drops every table
        before = _snapshot(fresh_url)
        forced = False
        try:
            migrate.downgrade(fresh_url, below)
        except migrate.DataLossError as refused:
            assert revision in LOSSES, f"{revision} refuses: {refused.message}"
            named, _ = LOSSES[revision]
            counted = re.search(named, refused.message)
            assert counted is not None, refused.message
            assert int(counted.group(1)) == found[revision], refused.message
            assert f"({revision})" in refused.message and "--force" in refused.message
            assert _snapshot(fresh_url) == before  # refused: nothing changed
            migrate.downgrade(fresh_url, below, force=True)
            forced = True
        migrate.upgrade(fresh_url, revision)
        after = _snapshot(fresh_url)
        changed = {t for t in before.keys() | after.keys() if before.get(t) != after.get(t)}
        if forced:
            assert changed and changed <= LOSSES[revision][1], (revision, changed)
            # what the loss leaves reads alike everywhere once up at head (below 0007 an
            # API deletion has no version by design); then back to where the walk was
            migrate.upgrade(fresh_url)
            assert _incoherent(fresh_url) == 0, revision
            migrate.downgrade(fresh_url, revision)
        else:
            assert revision not in LOSSES, f"{revision} lost nothing yet says it would"
            assert changed == RENEWED.get(revision, set()), (revision, changed)
        migrate.downgrade(fresh_url, below, force=forced)
