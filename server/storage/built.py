"""Statements built once and run many times with parameters.

A statement's builder that runs on a hot path (every turn, tool call or search)
is decorated with :data:`built_once`: the statement object is built on first use
and run again with its values as bound parameters. Building a statement and
computing its SQLAlchemy cache key is paid once; a statement object run again
reuses both (measured in docs/scaling.md, "Statements built once"). Nothing is
built at import.
"""

from __future__ import annotations

import functools

# keyed by the builder's arguments (a shape: which filters, which reader); bounded, as
# the shapes of a ranking statement are many
built_once = functools.lru_cache(maxsize=512)
