"""The callers of requests, built once per token and chain and checked on every request
(R70; docs/security.md, "Tokens checked on every request").

Building a caller reads the token's principal, then the policies of each link of its
chain with their grants (one statement a link), and parses every grant: a few
milliseconds a request, the same for every request of a runtime. :class:`Callers`
keeps the callers it built, by the token's hash and the chain headers, and answers a
later request with the one it kept after a single indexed lookup: the token's
principal row and the grants' version (``grants_version``, which a trigger on
policies, grants and policy bindings counts up in the transaction that changes them,
migration 0009). The kept caller is used only while that row and that number are the
ones it was built from; otherwise it is built again.

So the bound on revocation is none: a token revoked or expired, a policy, grant or
binding added, changed or removed, is honoured by every request whose lookup runs
after the change committed, as if nothing were kept.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncSession
from sqlmodel import col

from server.errors import UnauthenticatedError
from server.models import GrantsVersion, Principal, table
from server.services.auth import TOKEN_MARK, hash_token, usable
from server.services.chain import Caller, load_caller
from server.storage.built import built_once

KEPT = 1024
"""How many callers a server keeps (token, execution, tool), the least recently used
dropped first."""


@dataclass(frozen=True, slots=True)
class _Kept:
    principal: tuple[Any, ...]  # the principal's row the caller was built from
    version: int  # the grants' version it was built under
    caller: Caller


@built_once
def _lookup() -> Any:
    """The principal of a token's hash (parameter ``token``), as a row of its columns,
    and the grants' version, in one statement."""
    version = select(col(GrantsVersion.version)).where(col(GrantsVersion.id) == 1).scalar_subquery()
    return select(*table(Principal).c, version).where(
        col(Principal.token_hash) == bindparam("token")
    )


class Callers:
    """The callers a server built, reused while their principal and grants stand."""

    def __init__(self, size: int = KEPT) -> None:
        self.size = size
        self._kept: OrderedDict[tuple[str, uuid.UUID | None, str | None], _Kept] = OrderedDict()

    async def caller(
        self,
        db: AsyncSession,
        *,
        token: str,
        execution_id: uuid.UUID | None = None,
        tool: str | None = None,
        now: datetime | None = None,
    ) -> Caller:
        """The caller of a request with ``token`` and the chain headers; UNAUTHENTICATED
        for a token unknown, revoked or expired."""
        if not token.startswith(TOKEN_MARK):
            raise UnauthenticatedError("invalid token")
        digest = hash_token(token)
        row = (await db.execute(_lookup(), {"token": digest})).first()
        if row is None:
            raise UnauthenticatedError("invalid token")
        *columns, version = row
        names = [c.name for c in table(Principal).c]
        principal = usable(Principal(**dict(zip(names, columns, strict=True))), now=now)
        key = (digest, execution_id, tool)
        kept = self._kept.get(key)
        if kept is not None and kept.principal == tuple(columns) and kept.version == version:
            self._kept.move_to_end(key)
            return kept.caller
        caller = await load_caller(db, principal=principal, execution_id=execution_id, tool=tool)
        if self.size > 0:
            self._kept[key] = _Kept(tuple(columns), version, caller)
            self._kept.move_to_end(key)
            while len(self._kept) > self.size:
                self._kept.popitem(last=False)
        return caller
