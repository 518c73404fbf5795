"""the search_scope triggers read and write the row's own agent (R10, R41; Citus)

The triggers of migration 0005 keep ``memory_versions.search_scope``: after a
record changes they update its versions, and before a version is written they read
its record. They found those rows by id alone. Now they also name the row's agent
(``agent_id = NEW.agent_id``): the same rows (an id names one agent's row), found by
the same indexes, and on Citus (docs/scaling.md, "Distributing by agent") a
statement that names the agent runs on that agent's shard, which sits beside the
row's own shard on the same node, where a trigger on a shard may read and write it.
The record trigger passes the record to ``memory_search_scope`` as a
``memory_records`` value: on a shard the trigger's row has the shard's own type.

Revision ID: 0013
Revises: 0012
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0013"
down_revision: str | None = "0012"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_RECORD_TRIGGER = """
CREATE OR REPLACE FUNCTION memory_records_search_scope() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r memory_records := NEW;
BEGIN
    UPDATE memory_versions v
       SET search_scope = memory_search_scope(r, v.id, v.session_id)
     WHERE v.agent_id = r.agent_id AND v.record_id = r.id
       AND v.search_scope IS DISTINCT FROM memory_search_scope(r, v.id, v.session_id);
    RETURN NULL;
END
$$
"""

_VERSION_TRIGGER = """
CREATE OR REPLACE FUNCTION memory_versions_search_scope() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r memory_records;
BEGIN
    SELECT * INTO r FROM memory_records WHERE agent_id = NEW.agent_id AND id = NEW.record_id;
    NEW.search_scope := memory_search_scope(r, NEW.id, NEW.session_id);
    RETURN NEW;
END
$$
"""

# migration 0005's bodies
_RECORD_TRIGGER_0005 = """
CREATE OR REPLACE FUNCTION memory_records_search_scope() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE memory_versions v
       SET search_scope = memory_search_scope(NEW, v.id, v.session_id)
     WHERE v.record_id = NEW.id
       AND v.search_scope IS DISTINCT FROM memory_search_scope(NEW, v.id, v.session_id);
    RETURN NULL;
END
$$
"""

_VERSION_TRIGGER_0005 = """
CREATE OR REPLACE FUNCTION memory_versions_search_scope() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    r memory_records;
BEGIN
    SELECT * INTO r FROM memory_records WHERE id = NEW.record_id;
    NEW.search_scope := memory_search_scope(r, NEW.id, NEW.session_id);
    RETURN NEW;
END
$$
"""


def upgrade() -> None:
    op.execute(_RECORD_TRIGGER)
    op.execute(_VERSION_TRIGGER)


def downgrade() -> None:
    op.execute(_RECORD_TRIGGER_0005)
    op.execute(_VERSION_TRIGGER_0005)
