"""The SQL terms every ranking statement shares (R41, R62): the full-text query of a
text, the cosine of a row's embedding to the query vector, and a preset's constants
as named ``float8`` parameters.

The full-text query: words match if a row shares *any* of them (stop words
dropped, words stemmed: ``plainto_tsquery('english', text)`` with ``&`` turned
into ``|``); the matches are ranked by BM25 (:mod:`server.storage.bm25`). A
query that uses web-search syntax (a ``"quoted phrase"``, an ``OR`` between
words, or a ``-word``) is read with ``websearch_to_tsquery('english', text)``
instead, so a caller can ask for exact phrases and exclusions.

The query text is the parameter ``text`` and the query vector the parameter
``q`` wherever they appear, so that a statement built once runs with new values
by name (:func:`server.storage.hybrid.search_parameters`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from sqlalchemy import ColumnElement, bindparam, cast, func, literal_column
from sqlalchemy.dialects.postgresql import DOUBLE_PRECISION, TSQUERY
from sqlalchemy.types import Text

F8: DOUBLE_PRECISION[float] = DOUBLE_PRECISION()
"""``float8``: every score is computed in it, as the reference computes in Python floats."""

# Quotes, a leading "-" or an upper-case OR; a plain "or" in a question is a word.
_WEB_SYNTAX = re.compile(r'"|(^|\s)-\w|\sOR\s')


def uses_web_syntax(query: str) -> bool:
    """True when ``query`` asks for phrases, alternatives or exclusions."""
    return _WEB_SYNTAX.search(query) is not None


def tsquery(query: str) -> ColumnElement[Any]:
    """The full-text query of ``query``: any of its words, or web-search syntax as written."""
    if uses_web_syntax(query):
        return func.websearch_to_tsquery(literal_column("'english'"), bindparam("text", query))
    words = cast(func.plainto_tsquery(literal_column("'english'"), bindparam("text", query)), Text)
    return cast(func.replace(words, literal_column("'&'"), literal_column("'|'")), TSQUERY)


def query_vector(embedding: ColumnElement[Any], vector: Sequence[float]) -> Any:
    """The parameter ``:q``, the query vector, of the type of ``embedding``."""
    return bindparam("q", list(vector), type_=embedding.type)


def distance(embedding: ColumnElement[Any], vector: Sequence[float]) -> ColumnElement[Any]:
    """``embedding <=> :q``, the cosine distance of a row to the query vector."""
    return embedding.op("<=>", return_type=F8)(query_vector(embedding, vector))


def cosine(embedding: ColumnElement[Any], vector: Sequence[float]) -> ColumnElement[Any]:
    """``1 - (embedding <=> :q)``: the cosine of a row to the query vector (the vectors
    are normalised)."""
    return literal_column("1") - distance(embedding, vector)


def float_param(name: str, value: float) -> ColumnElement[Any]:
    """A named float8 parameter (a preset's constant in generated SQL)."""
    return cast(bindparam(name, float(value)), F8)


__all__ = [
    "F8",
    "cosine",
    "distance",
    "float_param",
    "query_vector",
    "tsquery",
    "uses_web_syntax",
]
