"""Running a statement on its generic plan (R41): planned once a connection, not once a call.

The memory ranking statement (:mod:`server.services.memory_ranking`) costs about as
much to plan for each call's values as to run at a small agent, and PostgreSQL's own
choice (``plan_cache_mode = auto``) never takes its generic plan, which it costs for
an average agent. Its plan does not depend on the values (the vector path is chosen
before it, the index path's settings are in it: :mod:`server.storage.nearest`), so it
runs on the generic plan: :data:`GENERIC_PLAN` is run in the statement's transaction
before it, and the statement sets the mode back itself (:func:`restored`, a one-time
filter), so that the transaction's next statements are planned as usual with no round
trip spent restoring it. Prepared by the driver, the statement is then planned once a
connection (docs/scaling.md, "The ranking statement").
"""

from __future__ import annotations

from sqlalchemy import ColumnElement, Text, cast, func, literal_column, null, select, text, true

GENERIC_PLAN = text("SET LOCAL plan_cache_mode = force_generic_plan")


def restored() -> ColumnElement[bool]:
    """True, once the statement has set ``plan_cache_mode`` back to the session's value
    for the rest of the transaction (``set_config`` with NULL resets a setting)."""
    reset = func.set_config(literal_column("'plan_cache_mode'"), cast(null(), Text), true())
    return select(reset).scalar_subquery().is_not(None)


__all__ = ["GENERIC_PLAN", "restored"]
