"""payloads name and spell what the schema names and spells

The JSON a client reads (transcript payloads, execution outputs, and the results kept
for idempotency keys) now reads as the GraphQL types do: a usage event's purpose is
EMBED (the InvocationPurpose value, not the stored "embed") and its invocation is
invocationId; a memory.pinned event names recordId and versionId (as PinnedMemory
does); a memory review's decisions name recordId (as MemoryDecisionOutcome does), and
its input afterTurn and throughTurn (as MemoryReview does); a history search's hits
eventId, partId and part (the part's number), as HistoryResult does.
Rows written before are rewritten; downgrade writes them back.

Revision ID: 0009
Revises: 0008
"""

from collections.abc import Sequence

from alembic import op

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def _renamed(value: str, old: str, new: str) -> str:
    """SQL: the JSON object ``value`` with its key ``old`` renamed ``new`` (if held)."""
    value = f"({value})"
    return (
        f"CASE WHEN {value} ? '{old}' "
        f"THEN ({value} - '{old}') || jsonb_build_object('{new}', {value} -> '{old}') "
        f"ELSE {value} END"
    )


def _each_renamed(array: str, old: str, new: str) -> str:
    """SQL: the JSON array ``array`` with each object's key ``old`` renamed ``new``."""
    return (
        f"(SELECT coalesce(jsonb_agg({_renamed('e', old, new)} ORDER BY n), '[]'::jsonb) "
        f"FROM jsonb_array_elements({array}) WITH ORDINALITY AS a(e, n))"
    )


def _rewrite(*, purpose: str, names: tuple[str, str], pins: tuple[str, str]) -> None:
    """Rewrite the stored payloads: usage events' purpose as ``purpose`` with ``names``
    (old, new) for the invocation's key, pinned entries' and review decisions' keys
    ``pins`` (old record key, new record key; the version key follows)."""
    old_inv, new_inv = names
    old_record, new_record = pins
    old_version = "version" if old_record == "record" else "versionId"
    new_version = "versionId" if new_record == "recordId" else "version"
    op.execute(
        "UPDATE transcript_events SET payload = "
        + _renamed(f"payload || jsonb_build_object('purpose', '{purpose}')", old_inv, new_inv)
        + " WHERE type = 'usage' AND payload ? 'purpose'"
    )
    for key in ("versions", "omitted"):
        entries = _each_renamed(f"payload -> '{key}'", old_record, new_record)
        entries = _each_renamed(entries, old_version, new_version)
        op.execute(
            f"UPDATE transcript_events SET payload = jsonb_set(payload, '{{{key}}}', {entries}) "
            f"WHERE type = 'memory.pinned' AND jsonb_typeof(payload -> '{key}') = 'array'"
        )
    decisions = _each_renamed("output -> 'decisions'", old_record, new_record)
    op.execute(
        f"UPDATE executions SET output = jsonb_set(output, '{{decisions}}', {decisions}) "
        "WHERE name = 'memory_review' AND jsonb_typeof(output -> 'decisions') = 'array'"
    )
    turns = (("after_turn", "afterTurn"), ("through_turn", "throughTurn"))
    for old, new in turns if new_record == "recordId" else [(b, a) for a, b in turns]:
        op.execute(
            f"UPDATE executions SET input = {_renamed('input', old, new)} "
            "WHERE name = 'memory_review' AND jsonb_typeof(input) = 'object'"
        )
    kept = _each_renamed("result -> 'decisions'", old_record, new_record)
    op.execute(
        f"UPDATE idempotency_keys SET result = jsonb_set(result, '{{decisions}}', {kept}) "
        "WHERE operation = 'applyMemoryReview' AND jsonb_typeof(result -> 'decisions') = 'array'"
    )


# a history search's hits, as HistoryResult names them: in order, so that "part" (the
# part's id before) is free for the part's number
_HITS = (("event", "eventId"), ("part", "partId"), ("partNumber", "part"))
_HIT_ARRAYS = (
    ("executions", "output", "events", "name = 'search_history'"),
    ("transcript_events", "payload", "events", "tool_name = 'search_history'"),
    ("idempotency_keys", "result", "hits", "operation = 'searchHistory'"),
)


def _rename_hits(renames: Sequence[tuple[str, str]]) -> None:
    for table, column, key, where in _HIT_ARRAYS:
        hits = f"{column} -> '{key}'"
        for old, new in renames:
            hits = _each_renamed(hits, old, new)
        op.execute(
            f"UPDATE {table} SET {column} = jsonb_set({column}, '{{{key}}}', {hits}) "
            f"WHERE {where} AND jsonb_typeof({column} -> '{key}') = 'array'"
        )


def upgrade() -> None:
    _rewrite(purpose="EMBED", names=("invocation", "invocationId"), pins=("record", "recordId"))
    _rename_hits(_HITS)


def downgrade() -> None:
    _rewrite(purpose="embed", names=("invocationId", "invocation"), pins=("recordId", "record"))
    _rename_hits([(new, old) for old, new in reversed(_HITS)])
